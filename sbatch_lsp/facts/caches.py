"""Data and compile caches: which cache a step's tasks use (evidence of use), where it lives for
them (the batch shell's value of its variable, or the library's default under ``$HOME``), and
what storage that is on the step's nodes (node-local, shared, container-local, the home
directory).

Library facts (defaults when the variable is unset): huggingface_hub ``constants.py`` and
``datasets/config.py`` put ``HF_HOME`` at ``$XDG_CACHE_HOME/huggingface``, i.e.
``~/.cache/huggingface`` (huggingface_hub v0.20 and later, datasets 2.x); NeMo's
``NEMO_HOME`` defaults to ``~/.cache/nemo`` (NVIDIA-NeMo/NeMo ``nemo/constants.py``,
``NEMO_ENV_CACHE_DIR``; Megatron-Bridge reads the same variable); uv's cache is
``$XDG_CACHE_HOME/uv`` = ``~/.cache/uv`` (astral-sh/uv ``crates/uv-cache``, "Cache directory").

pyxis facts (NVIDIA/pyxis v0.9.0 through v0.24.0, see :mod:`facts.containers`): a path inside a
container is the host's only where ``--container-mounts`` maps it; ``--no-container-mount-home``
leaves ``$HOME`` inside the container in the container's own file system; without either home
option, enroot's ``ENROOT_MOUNT_HOME`` (a site setting) decides. So a default cache under
``$HOME`` is the host's home directory without a container, container-local under
``--no-container-mount-home``, and the site's choice otherwise. Whether the host's home is
shared by the nodes is a site fact: the profile's ``shared-prefixes`` say so, and so does a
script whose tasks run code or environments from the home directory on every node (without
a shared home that job could not start on the other nodes).
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from functools import lru_cache

from ..directives import OptionUse
from ..job import Job, Step
from ..shell.model import Assignment, Command, Word
from .containers import Container, container_of, spelled_of, under
from .provenance import Told, told_to_set
from .wrappers import unwrap_all

#: paths on the node's own disks or memory (or a per-job scratch directory Slurm makes per node)
NODE_LOCAL = re.compile(r"^(/tmp|/dev/shm|/var/tmp|/run|/local|/scratch/local|/raid|/root|"
                        r"\$\{?TMPDIR\}?|\$\{?SLURM_TMPDIR\}?)(/|$)")
#: well-known roots of cluster file systems, used when the profile has no ``shared-prefixes``
KNOWN_SHARED = re.compile(r"^(/lustre|/gpfs|/fsx|/nfs|/project|/projects|/shared|/mnt/lustre|"
                          r"/mnt/shared|/p/|/pscratch|/scratch)(/|$)")
#: a path in the user's home directory as a script spells it (``~/x``, ``$HOME/x``, ``${HOME}``)
HOME_PATH = re.compile(r"^(~|\$\{?HOME\}?)(/|$)")
#: a path that names a home directory outright (``/home/alice/code``), or through ``$HOME``
HOME_DIR = re.compile(r"^[\"']?(~|\$\{?HOME\}?|/home/[^/\s\"']+)(/|[\"']?$)")
#: Hugging Face downloads: its libraries and their flags, not any word "dataset" (one word)
HF = re.compile(r"qlora|\blora\b|peft|transformers|huggingface|hf_hub|from_pretrained|"
                r"model_name_or_path|--hf[-_]|--dataset_name|load_dataset|\btrl[ .](sft|dpo|grpo|"
                r"scripts)|(import|from) datasets",
                re.IGNORECASE)
#: a text of each HF form, case-folded: a text HF matches holds one once case-folded (each
#: character ``(?i)`` matches to a letter folds to it, but ``ı``, which stands for ``i``)
HF_TEXTS = ("lora", "peft", "transformers", "huggingface", "hf_hub", "from_pretrained",
            "model_name_or_path", "--hf", "--dataset_name", "load_dataset", "trl", "datasets")


def may_name_hf(text: str) -> bool:
    """Whether HF may match in ``text`` (words joined by newlines: no HF form spans one, and a
    newline is no word character); False only when it cannot, found without the regex."""
    folded = text.casefold().replace("ı", "i")
    return any(k in folded for k in HF_TEXTS) and HF.search(text) is not None


#: a word naming NeMo or Megatron-Bridge, and a word there or after it naming the data
#: preparation they cache (SFT/PEFT packing, checkpoint import, datasets)
NEMO = re.compile(r"run_recipe\.py|megatron[-_.]bridge|\bnemo\b", re.IGNORECASE)
#: a text of each NEMO form, lowercased: an ASCII text NEMO matches holds one once lowercased
NEMO_TEXTS = ("run_recipe.py", "megatron", "nemo")
NEMO_DATA = re.compile(r"sft|finetun|packed|peft|lora|import|dataset", re.IGNORECASE)
#: a value that names a local file, not a Hugging Face Hub repository id (``org/name``)
LOCAL_PATH = re.compile(r"^[\"']?(/|\./|\.\./|~)")
#: compile caches every rank writes (Triton, TorchInductor, torch C++ extensions, CUDA JIT)
JIT = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "CUDA_CACHE_PATH")
#: text the shell still transforms: a mount target spelled so covers an unknown path
OPAQUE = re.compile(r"[\"'`<>{}$]")


@dataclass(frozen=True)
class CacheKind:
    """A data cache: its variables (the first is the one to set), the default under the home
    directory, whether sharing it is about correctness (data one node prepares for the others)
    or only speed, and the short name used in fixes (``export HF_HOME=BASE/huggingface``)."""

    variables: tuple[str, ...]
    default: str
    correctness: bool
    short: str


HF_CACHE = CacheKind(("HF_HOME", "HF_DATASETS_CACHE", "HF_HUB_CACHE", "TRANSFORMERS_CACHE"),
                     ".cache/huggingface", True, "huggingface")
NEMO_CACHE = CacheKind(("NEMO_HOME",), ".cache/nemo", True, "nemo")
UV_CACHE = CacheKind(("UV_CACHE_DIR",), ".cache/uv", False, "uv")
CACHES = (HF_CACHE, NEMO_CACHE, UV_CACHE)
#: every variable SB401/SB402 judge
CACHE_VARIABLES = frozenset({v for c in CACHES for v in c.variables} | set(JIT))


class Storage(enum.Enum):
    """What storage a cache path is for a step's tasks."""

    NODE_LOCAL = "node-local"
    SHARED = "shared"
    #: a shared path the step's container does not mount: container-local on each node
    UNMOUNTED = "not mounted"
    #: under ``$HOME`` inside a container that does not mount home: container-local
    HOME_HIDDEN = "home not mounted"
    #: the host's home directory (no container, or a container that mounts it)
    HOME = "home"
    UNKNOWN = "unknown"


class HomeView(enum.Enum):
    """How a step's tasks see ``$HOME``: the host's (no container, or ``--container-mount-home``),
    hidden by the step's own ``--no-container-mount-home``, maybe hidden by the ``#SBATCH`` form
    (whether it reaches later steps depends on the pyxis version and site), left to the site's
    enroot (``ENROOT_MOUNT_HOME``), or unknown (srun options hidden in a variable)."""

    HOST = "host"
    HIDDEN = "hidden"
    MAYBE_HIDDEN = "maybe hidden"
    SITE = "site"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Setting:
    """A batch-shell value of a cache variable: the name, the path as spelled (variables with a
    literal assignment substituted, others kept as ``$X``; None for ``export NAME`` with no
    value in the script: the submitting environment's, which sbatch passes on with its default
    ``--export=ALL``) and the span of the assignment that holds the value (offsets into the
    script)."""

    name: str
    path: str | None
    start: int
    end: int


@dataclass
class CacheUse:
    """A step whose tasks use a data cache: the cache, the word showing the use (the ``srun``
    word when no single word does), the step's node count, the batch-shell setting that reaches
    the tasks (None: unset, so the default applies), whether a task sets it itself, the
    container (None without one), the container's mount targets (None: not literal), how the
    tasks see ``$HOME`` with the option that decides it, the storage the cache is on, and the
    comment telling the user to set one of the cache's variables before submitting (None when
    none does: :func:`facts.provenance.told_to_set`)."""

    kind: CacheKind
    step: Step
    evidence: Word
    nodes: int | None
    setting: Setting | None
    set_in_task: bool
    container: Container | None
    mounts: list[str] | None
    home: HomeView
    home_evidence: Word | OptionUse | None
    storage: Storage = Storage.UNKNOWN
    notes: list[str] = field(default_factory=list)
    told: Told | None = None


def cache_uses(job: Job) -> list[CacheUse]:
    """Every (step, data cache) where the step's tasks use the cache, in script order (computed
    once per job)."""
    return job.derived(_cache_uses)


def _cache_uses(job: Job) -> list[CacheUse]:
    out = []
    for step in job.ordered_steps():
        # (most steps name no cache's library: no kind to read)
        for kind in _kinds_named("\n".join([w.value or w.text for c in step.task_commands
                                            for w in c.words])):
            ev = _evidence(kind, step)
            if ev is not None:
                out.append(_use(job, step, kind, ev))
    return out


@lru_cache(maxsize=4096)
def _kinds_named(text: str) -> tuple[CacheKind, ...]:
    """The caches (in :data:`CACHES` order) whose use the words of a step's task commands may
    show, ``text`` being their values (their texts when they have none) joined by newlines:
    :func:`_evidence` finds none of the others. Hugging Face: :func:`may_name_hf`; NeMo:
    :data:`NEMO` may match (:data:`NEMO_TEXTS`); uv: a word is ``uv`` or ends so
    (:func:`_uv_filling` reads a ``uv`` word by its basename)."""
    return tuple(kind for kind, named in (
        (HF_CACHE, may_name_hf(text)),
        (NEMO_CACHE, not text.isascii() or any(k in text.lower() for k in NEMO_TEXTS)),
        (UV_CACHE, "uv" in text)) if named)


def _evidence(kind: CacheKind, step: Step) -> Word | None:
    """The word of the step's task commands that shows its tasks use ``kind`` (the ``srun``
    word when the use shows but no word names the cache's library), or None."""
    if kind is HF_CACHE:
        return _hub_evidence(step)
    if kind is NEMO_CACHE:
        # the task commands' words in order: a NeMo word, then (there or later) a data word
        words = [(w, w.value or w.text) for c in step.task_commands for w in c.words]
        first = next((k for k, (_, t) in enumerate(words) if NEMO.search(t)), None)
        if first is not None and any(NEMO_DATA.search(t) for _, t in words[first:]):
            return words[first][0]
        return None
    for c in step.task_commands:
        w = _uv_filling(c.words) if kind is UV_CACHE else None
        if w is not None:
            return w
    return None


def _uv_filling(words: list[Word]) -> Word | None:
    """The ``uv`` word when the command (through wrappers: ``timeout 3h uv sync``) is a uv
    command that fills uv's cache: ``uv sync``, ``uv pip install``, or ``uv run`` without
    ``--no-sync`` (which syncs the project first: astral-sh/uv docs, "uv run")."""
    seen = unwrap_all(words)
    end = seen.argv[0].start if seen.argv else words[-1].end + 1 if words else 0
    for wrapper, word in seen.wrappers:  # `uv run` is a wrapper of the one table
        if wrapper.name == "uv" and "--no-sync" not in (
                w.value for w in words if word.start < w.start < end):
            return word
    argv = [w.value for w in seen.argv[:3]]
    if argv[:2] == ["uv", "sync"] or argv == ["uv", "pip", "install"]:
        return seen.argv[0]
    return None


def _hub_evidence(step: Step) -> Word | None:
    """The word showing that the step's tasks load something from the Hugging Face Hub (or
    through its ``datasets`` cache): a word naming its libraries or flags. Model and dataset
    flags whose values are local paths are not: when the data is a local file too
    (``--dataset_name=/demo/train.json`` next to ``--model_path=/demo/…``), nothing says the
    Hub or its cache is used. A local model alone still leaves the data to the framework."""
    local_data = False
    first: Word | None = None
    for c in step.task_commands:
        words = c.words
        for k, w in enumerate(words):
            text = w.value or w.text
            if not HF.search(text):
                continue
            first = first or w
            if text.startswith("--"):
                value = text.split("=", 1)[1] if "=" in text else (
                    (words[k + 1].value or words[k + 1].text) if k + 1 < len(words) else "")
                if value and LOCAL_PATH.match(value):
                    local_data = local_data or "data" in text.lower()
                    continue
            return w
    return first if first is not None and not local_data else None


def _use(job: Job, step: Step, kind: CacheKind, ev: Word) -> CacheUse:
    container = container_of(job, step)
    mounts: list[str] | None = []
    if container is not None:
        mounts = None if container.mounts is None or any(
            OPAQUE.search(m.target) for m in container.mounts) else \
            [m.target for m in container.mounts]
    home, home_ev = _home_view(job, step, container)
    inner = any(a.name in kind.variables for s in step.task_scripts for a in s.assignments)
    use = CacheUse(kind, step, ev, step.nodes or job.nodes.value, setting(job, step, kind),
                   inner, container, mounts, home, home_ev)
    use.storage = _storage(job, use)
    told = told_to_set(job.source.text)
    use.told = next((told[v] for v in kind.variables if v in told), None)
    return use


def setting(job: Job, step: Step, kind: CacheKind) -> Setting | None:
    """The batch shell's value of ``kind``'s variables at ``step`` (a prefix ``NAME=v srun``
    first, then the last assignment before the step that gives a value; ``export NAME`` alone
    gives none, bash(1)), or None when the script sets none of them."""
    found: list[Setting] = []
    at = step.command.start
    for name in kind.variables:
        a = next((p for p in step.command.assignments if p.name == name), None) or \
            job.script.value_at(name, at)
        if a is None:
            # `[ -n "$HF_HOME" ] && export HF_HOME`: the value is the submitting environment's
            bare = [b for b in job.script.assignments if b.name == name and b.value is None and
                    b.start < at and job.exported(name, at)]
            if bare:
                found.append(Setting(name, None, bare[-1].start, bare[-1].end))
            guard = _required(job, name, at)
            if guard is not None:
                found.append(guard)
            continue
        if a.value is None or _prefix_of_other(a, step):
            continue
        spelled = spelled_of(a.value, job.script)
        path = spelled.value if spelled is not None else a.value.text.strip("\"'")
        found.append(Setting(name, path, a.start, a.end))
    return max(found, key=lambda s: s.start) if found else None


#: ``${NAME:?message}`` / ``${NAME?message}``: bash stops the script when NAME is unset
REQUIRED = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?\?")


def _required(job: Job, name: str, before: int) -> Setting | None:
    """A ``${name:?…}`` (or ``${name?…}``) the batch shell expands before offset ``before``:
    bash(1) "Parameter Expansion" stops the script there when ``name`` is unset (or empty), so
    past it the value is the submitting environment's (a Setting without a path)."""
    for c in job.script.commands:
        if c.start >= before:
            break
        for w in c.all_words():
            for e in w.expansions:
                if e.name == name and e.quoting in ("unquoted", "double") and \
                        REQUIRED.match(e.text):
                    return Setting(name, None, e.start, e.end)
    return None


def _prefix_of_other(a: Assignment, step: Step) -> bool:
    """Whether ``a`` is a prefix assignment of another command (``HF_HOME=x cmd`` sets it for
    that command only, bash(1) "SIMPLE COMMAND EXPANSION")."""
    return a.command is not None and bool(a.command.words) and a.command is not step.command \
        and (a.command.words[0].value or "") not in ("export", "declare", "typeset")


def _home_view(job: Job, step: Step,
               container: Container | None) -> tuple[HomeView, Word | OptionUse | None]:
    on_step = step.option_words.get("no-container-mount-home")
    if container is None:
        if step.hidden:
            return HomeView.UNKNOWN, step.hidden[0]
        return HomeView.HOST, None
    if container.mount_home is True:
        return HomeView.HOST, step.option_words.get("container-mount-home")
    if container.mount_home is False:
        return HomeView.HIDDEN, on_step
    directive = next((u for u in job.directives.options
                      if u.typed == "--no-container-mount-home"), None)
    if directive is not None:
        return HomeView.MAYBE_HIDDEN, directive
    return HomeView.SITE, None


def _storage(job: Job, use: CacheUse) -> Storage:
    """The storage of the cache's path for the step's tasks (DESIGN.md "Facts": a data cache
    must be shared by the nodes that read it)."""
    if use.setting is None:
        if use.home is HomeView.HIDDEN or use.home is HomeView.MAYBE_HIDDEN:
            return Storage.HOME_HIDDEN
        if use.home is HomeView.HOST:
            return Storage.NODE_LOCAL if job.profile.home_shared is False else Storage.HOME
        return Storage.UNKNOWN
    path = use.setting.path
    if path is None:
        return Storage.UNKNOWN  # the submitting environment's value
    if node_local_root(path) is not None:
        return Storage.NODE_LOCAL
    if HOME_PATH.match(path) and use.home is HomeView.HOST and job.profile.home_shared is False:
        return Storage.NODE_LOCAL  # the profile says each node has its own home
    mounted = use.mounts is not None and any(_under(path, m) for m in use.mounts)
    if use.container is not None and use.mounts is not None and not mounted:
        if shared_path(job, path):
            return Storage.UNMOUNTED
        if HOME_PATH.match(path) and use.home in (HomeView.HIDDEN, HomeView.MAYBE_HIDDEN):
            return Storage.HOME_HIDDEN
    if HOME_PATH.match(path):
        return Storage.HOME if use.home is HomeView.HOST else Storage.UNKNOWN
    return Storage.SHARED if shared_path(job, path) else Storage.UNKNOWN


def node_local_root(path: str) -> str | None:
    """The node-local root ``path`` lies under as spelled (``$SLURM_TMPDIR`` for
    ``$SLURM_TMPDIR/env``, ``/tmp`` for ``/tmp/x``: :data:`NODE_LOCAL`), or None when it is not
    on the node's own storage."""
    m = NODE_LOCAL.match(path)
    return m.group(1) if m else None


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def shared_path(job: Job, path: str) -> bool | None:
    """Whether ``path`` is on storage every node shares: under the profile's
    ``shared-prefixes`` when it has them (False otherwise), else True under a well-known
    cluster file system root (/lustre, /gpfs, /fsx, …) and None when nothing says."""
    prefixes = job.profile.shared_prefixes
    if prefixes:
        return any(_under(path, p) for p in prefixes)
    return True if KNOWN_SHARED.match(path) else None


def home_shared(job: Job, step: Step) -> Word | str | None:
    """Why the host's home directory is shared by the step's nodes, or None when nothing says
    or the profile says it is not (``home-shared = false``): the profile's ``home-shared =
    true`` or ``shared-prefixes`` covering ``/home`` (the reason as text), or the tasks run
    code or environments from the home directory on every node (the word that shows it): a
    home path in the step's task commands or its ``--chdir``, or a ``cd``/``source``/``.`` of
    one in the batch shell before the step (srun's tasks start in the batch shell's working
    directory with its environment, srun(1) ``--chdir``)."""
    if job.profile.home_shared is not None:
        return "the profile says home directories are shared (home-shared = true)" \
            if job.profile.home_shared else None
    prefixes = job.profile.shared_prefixes
    if prefixes and any(under("/home/user", p) for p in prefixes if p.startswith("/")):
        return "the profile's shared-prefixes cover /home"
    chdir = step.options.get("chdir")
    if chdir is not None and HOME_DIR.match(chdir.text):
        return chdir
    for c in step.task_commands:
        for w in c.words:
            if HOME_DIR.match(w.text):
                return w
    for cmd in job.script.commands:
        if cmd.start >= step.command.top().start:
            continue
        changed = _home_change(cmd)
        if changed is not None:
            return changed
    return None


def _home_change(cmd: Command) -> Word | None:
    """The home path a batch-shell ``cd``/``source``/``.`` command names, or None."""
    if cmd.in_substitution or len(cmd.words) < 2 or cmd.words[0].value not in ("cd", "source",
                                                                                 "."):
        return None
    w = cmd.words[1]
    return w if HOME_DIR.match(w.text) else None


def jit_settings(job: Job) -> list[Setting]:
    """Every batch-shell assignment of a compile cache variable (:data:`JIT`) with a value, the
    path spelled as :func:`setting` spells it."""
    out = []
    for a in job.script.assignments:
        if a.name not in JIT or a.value is None:
            continue
        spelled = spelled_of(a.value, job.script)
        path = spelled.value if spelled is not None else a.value.text.strip("\"'")
        out.append(Setting(a.name, path, a.start, a.end))
    return out
