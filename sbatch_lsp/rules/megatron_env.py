"""SB607: the environment gotchas of training jobs (the Megatron/NeMo seeds' two-phase pattern):
a package installer that every task of a multi-task srun step runs at once.

Facts behind it:

- pip takes no lock on the environment it installs into (pypa/pip#2361, open; pypa/pip#2746):
  concurrent ``pip install`` runs into one site-packages race on the same files and can leave a
  ``*.dist-info`` without its ``RECORD`` (``uninstall-no-record-file`` afterwards), and concurrent
  builds of one sdist race in the wheel cache (pypa/pip#9034: ``EOFError``, ``BadZipFile``).
- uv documents that "it's safe to run multiple uv commands concurrently, even against the same
  virtual environment": its cache is append-only and it takes a file lock on the target
  environment (uv docs, Concepts › Caching › Cache safety). Every task still resolves and waits
  for that lock in turn, so the cost is time, not a broken environment: information.
- ``uv run`` locks and syncs the project environment before it runs the command ("when
  ``uv run`` is used, the project is locked and synced before invoking the requested command";
  ``--locked`` and ``--frozen`` still sync, only ``--no-sync`` does not: uv docs, Concepts ›
  Projects › Locking and syncing, ``docs/concepts/projects/sync.md``, uv 0.8); ``UV_NO_SYNC``
  is ``--no-sync`` as an environment variable, and ``--no-project`` runs without the project
  (uv docs, Reference › Commands › ``uv run``, and Reference › Environment variables). So
  ``uv run`` in every task is ``uv sync`` in every task: the same serialised resolution.
- pyxis starts one container per node for a step (its tasks on that node share it), so with one
  task per node each installs into its own container's file system.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from ..diagnostics import Diagnostic
from ..facts.containers import container_of, under
from ..facts.control import job_control
from ..facts.framework import framework_runs, megatron_core_release
from ..facts.steps import StepFacts, facts_of
from ..facts.wrappers import unwrap, unwrap_all
from ..shell.model import Assignment, Command, Word
from . import Related, Severity, finding, rule

PIP = re.compile(r"^pip(\d+(\.\d+)?)?$")
PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")


#: a word every command line :func:`installer` answers for holds: ``pip install``, ``python
#: -m pip install``, ``uv sync``, ``uv pip install|sync``, and ``uv run`` (a wrapper named by
#: its ``uv`` and ``run`` words)
INSTALLER_WORDS = frozenset({"install", "sync", "run"})


def installer(cmd: Command) -> tuple[str, list[Word]] | None:
    """What ``cmd`` runs when it is a package install, seen through its wrappers (``timeout``,
    ``env``, ``nohup``, … : facts/wrappers.py): (``"pip install"``, ``"uv sync"``, ``"uv pip
    install"`` or ``"uv pip sync"``; the words that name it), else None. Only literal words
    count; the program's directory is ignored (``.venv/bin/pip``)."""
    if INSTALLER_WORDS.isdisjoint([w.value for w in cmd.words]):
        return None  # (most commands: SB607 asks for every task command of every step)
    words = unwrap(cmd.words)
    argv = [w.value for w in words]
    if not argv or argv[0] is None:
        return None
    prog = argv[0].rsplit("/", 1)[-1]
    if PIP.match(prog) and argv[1:2] == ["install"]:
        return "pip install", words[:2]
    if PYTHON.match(prog) and argv[1:4] == ["-m", "pip", "install"]:
        return "pip install", words[:4]
    if prog == "uv":
        if argv[1:2] == ["sync"]:
            return "uv sync", words[:2]
        if argv[1:2] == ["pip"] and argv[2:3] in (["install"], ["sync"]):
            return f"uv pip {argv[2]}", words[:3]
    return uv_run(cmd)


#: ``uv run`` options after which it does not sync the project environment
NO_SYNC = {"--no-sync", "--no-project"}


def uv_run(cmd: Command) -> tuple[str, list[Word]] | None:
    """(``"uv run"``, the ``uv run`` words) when ``cmd`` runs through ``uv run`` and nothing on
    its own line stops the sync: ``--no-sync``/``--no-project`` among uv's options, a word
    whose value is not known there (it may be one), or ``UV_NO_SYNC=…`` before it (``env
    UV_NO_SYNC=1 uv run …``, ``UV_NO_SYNC=1 uv run …``). None otherwise."""
    if any(a.name == "UV_NO_SYNC" for a in cmd.assignments):
        return None
    words = cmd.words
    met = unwrap_all(words)
    if not met.wrappers:
        return None  # (most commands: no wrapper, no `uv run`)
    end = next((i for i, w in enumerate(words) if met.argv and w is met.argv[0]), len(words))
    for wrapper, name in met.wrappers:
        if (wrapper.name, wrapper.sub) != ("uv", "run"):
            continue
        i = next(k for k, w in enumerate(words) if w is name)
        before = [w.value for w in words[:i]]
        options = [w.value for w in words[i + 2:end]]
        if None in options or NO_SYNC & set(options) or \
                any(v is not None and v.startswith("UV_NO_SYNC=") for v in before):
            return None
        return "uv run", words[i:i + 2]
    return None


@rule("SB607", "installer-on-every-task", Severity.WARNING,
      "pip install, uv sync or uv run (which syncs first) in every task of a multi-task srun "
      "step: concurrent installs into one environment")
def installer_on_every_task(job) -> Iterator[Diagnostic]:
    """An unguarded ``pip install``/``uv sync``/``uv pip install``/``uv run`` (which syncs the
    project unless told not to: :func:`uv_run`) that srun runs in each of a step's tasks. Warning for pip when one node runs several of them (they share that node's
    environment); info for pip with one task per node outside a container (shared only when the
    environment sits on a shared file system), and for uv (safe by uv's docs, but serialised).
    Not reported for one task, an unknown task count, or a task-id guard around the command."""
    ctl = job_control(job)
    synced = False  # a one-task step before has synced the project environment
    for sf in facts_of(job).steps:
        tasks = sf.layout.tasks
        if tasks == 1 and not sf.step.hidden and any(
                (installer(c) or ("",))[0] == "uv sync" for c in sf.step.task_commands):
            synced = True
        if tasks is None or tasks <= 1 or sf.step.hidden:
            continue
        for cmd in sf.step.task_commands:
            found = installer(cmd)
            if found is None or ctl.tasks(cmd).guarded or ctl.tasks(cmd).opaque:
                continue
            no_sync = sf.env.get("UV_NO_SYNC")
            if found[0] == "uv run" and (synced or no_sync and no_sync.exported or any(
                    a.name == "UV_NO_SYNC" for sc in sf.step.task_scripts
                    for a in sc.assignments)):
                continue  # synced once already, or told not to sync
            yield from _judge(sf, *found)


def _judge(sf: StepFacts, what: str, named: list[Word]) -> Iterator[Diagnostic]:
    tasks = sf.layout.tasks
    per_node = sf.layout.max_per_node
    start, end = named[0].start, named[-1].end
    related = [Related(sf.step.srun.start, sf.step.srun.end,
                       f"this step starts {tasks} tasks ({sf.layout.note})")]
    fix = (f"run it once before the step, in a step of one task (`srun --ntasks=1 --nodes=1 "
           f"{what} …`), then start the training step")
    shared_node = per_node is not None and per_node > 1
    if not shared_node and sf.container:
        return  # one task per node, each in its node's own container
    if what == "pip install":
        if shared_node:
            yield finding(
                "SB607", start, end,
                f"every one of the {tasks} tasks runs `pip install`, {per_node} of them on one "
                "node into the same environment at once: pip takes no lock on the environment "
                "(pypa/pip#2361), so concurrent installs race on the same files and can leave a "
                "package without its RECORD (`uninstall-no-record-file` from then on); " + fix,
                related=related)
        else:
            yield finding(
                "SB607", start, end,
                f"each of the {tasks} tasks (one per node) runs `pip install`; if the "
                "environment is on a shared file system they install into it at once and pip "
                "takes no lock on it (pypa/pip#2361); " + fix,
                severity=Severity.INFO, related=related)
        return
    if what == "uv run":
        yield finding(
            "SB607", start, end,
            f"every one of the {tasks} tasks runs `uv run`, which locks and syncs the project "
            "environment before it starts the command (unless --no-sync or UV_NO_SYNC): uv "
            "locks the environment, so this is safe, but each task resolves and waits for the "
            "lock in turn (and against a cold cache each may download the same wheels); run "
            "`uv sync` once in a step of one task (`srun --ntasks=1 --nodes=1 uv sync`), then "
            "start the training step with `uv run --no-sync`",
            severity=Severity.INFO, related=related)
        return
    yield finding(
        "SB607", start, end,
        f"every one of the {tasks} tasks runs `{what}`: uv locks the environment, so this is "
        "safe, but each task resolves and waits for the lock in turn (and against a cold cache "
        "each may download the same wheels); " + fix,
        severity=Severity.INFO, related=related)


# ---- container images: what they ship ------------------------------------------------------
#: images whose build installs uv: NVIDIA/NeMo-RL ``docker/Dockerfile`` and NVIDIA-NeMo/
#: Megatron-Bridge ``docker/Dockerfile.ci`` (the ``megatron-bridge`` image) run uv's installer;
#: astral-sh's own images are uv
UV_IMAGES = re.compile(r"(^|[/#])(nemo-rl|megatron-bridge)(:|$)|astral-sh/uv", re.IGNORECASE)
#: NeMo Framework containers from 26.04 are built from Megatron-Bridge's ``docker/
#: Dockerfile.fw_base`` (added by NVIDIA-NeMo/Megatron-Bridge PR #2722, first in its 26.04
#: tags), which installs uv into /usr/local/bin
NEMO_TAG = re.compile(r"(?:^|[/#])nemo:(\d\d)\.(\d\d)", re.IGNORECASE)


def ships_uv(image: str) -> bool:
    """Whether ``image`` is one whose build is known to install uv."""
    m = NEMO_TAG.search(image)
    return bool(UV_IMAGES.search(image)) or m is not None and \
        (int(m.group(1)), int(m.group(2))) >= (26, 4)
#: images that ship a megatron-core: the NeMo Framework containers (their "Software Component
#: Versions" list Megatron Core), NeMo-RL (its release notes list Megatron-Core) and the
#: Megatron-Bridge image (its uv project depends on megatron-core)
MCORE_IMAGES = re.compile(r"(^|[/#])(nemo|nemo-rl|megatron-bridge)(:|$)", re.IGNORECASE)
#: a uv installer run anywhere in the script (uv's standalone installer from astral.sh,
#: ``pip install uv``): uv is then there, or its absence is not this rule's concern
INSTALLS_UV = re.compile(r"astral\.sh/uv|^uv([<>=!~]=?.*)?$")
CHECKOUT = re.compile(r"(^|/)megatron-lm(/|$)", re.IGNORECASE)


def step_image(job, sf: StepFacts) -> tuple[str, Word] | None:
    """The step's pyxis image as (text, the word that names it): a literal
    ``--container-image``, or a ``$NAME`` the batch script assigns a literal before the step.
    None when the step runs no image or its name is not known."""
    w = sf.step.options.get("container-image")
    if w is None:
        return None
    if w.early:
        return None  # a batch-shell value spliced into a command string: not a literal here
    if w.value is not None:
        return (w.value, w) if w.value.strip() else None
    m = re.fullmatch(r'"?\$\{?([A-Za-z_]\w*)\}?"?', w.text)
    a = job.script.value_at(m.group(1), w.start) if m else None
    if a is None or a.value is None or a.value.value is None or not a.value.value.strip():
        return None
    return a.value.value, w


def shown_image(image: str) -> str:
    """``image`` as a message may print it: without the user part pyxis accepts
    (``[USER@][REGISTRY#]IMAGE[:TAG]``, ``docker://user:password@host/…``), which may hold a
    credential."""
    return re.sub(r"^([a-z]+://)?[^@/#\s]*@", r"\1", image)


def _uv_word(cmd: Command) -> Word | None:
    """The ``uv`` word of a command that runs uv (seen through wrappers), else None."""
    met = unwrap_all(cmd.words)
    for wrapper, name in met.wrappers:
        if wrapper.name == "uv":
            return name
    argv = met.argv
    return argv[0] if argv and (argv[0].value or "").rsplit("/", 1)[-1] == "uv" else None


def _commands(job) -> Iterator[Command]:
    """Every command of the batch script and of the steps' tasks."""
    yield from job.script.walk()
    for step in job.steps:
        yield from step.task_commands


def _installs_uv(job) -> bool:
    """Whether the script runs uv's installer or pip-installs uv."""
    for cmd in _commands(job):
        vals = [w.value or w.text for w in cmd.words]
        if any("astral.sh/uv" in v for v in vals):
            return True
        if installer(cmd) is not None and any(INSTALLS_UV.match(v) for v in vals[2:]):
            return True
    return False


#: image builders and the option (or position) that names what they write
BUILDERS = {("enroot", "import"): ("-o", "--output"), ("docker", "build"): ("-t", "--tag"),
            ("podman", "build"): ("-t", "--tag"), ("apptainer", "build"): (),
            ("singularity", "build"): ()}


def built_images(job) -> set[str]:
    """The images the script builds or imports itself (``enroot import -o X.sqsh``, ``docker
    build -t NAME``, ``apptainer build X.sif``), by the name it gives them: what they hold is
    the script's own recipe."""
    out: set[str] = set()
    for cmd in _commands(job):
        argv = [w.value for w in unwrap(cmd.words)]
        if len(argv) < 3 or argv[0] is None or argv[1] is None:
            continue
        opts = BUILDERS.get((argv[0].rsplit("/", 1)[-1], argv[1]))
        if opts is None:
            continue
        if not opts:  # apptainer/singularity build [options] TARGET SOURCE
            target = next((v for v in argv[2:] if v is not None and not v.startswith("-")), None)
        else:
            target = next((argv[i + 1] for i, v in enumerate(argv[:-1]) if v in opts), None) or \
                next((v.split("=", 1)[1] for v in argv if v and v.startswith(
                    tuple(o + "=" for o in opts if o.startswith("--")))), None)
        if target:
            out.add(target.rsplit("/", 1)[-1])
    return out


@rule("SB610", "uv-in-image-without-uv", Severity.INFO,
      "uv run inside a container image that may not ship uv")
def uv_in_image(job) -> Iterator[Diagnostic]:
    """A ``uv`` command in the tasks of a pyxis step whose image is named and is not one whose
    build installs uv (NeMo-RL, Megatron-Bridge, astral-sh's uv images). Information: the
    script cannot show what an image holds; Megatron-Bridge's own troubleshooting table lists
    "`uv: command not found` inside container | Container doesn't have `uv` pre-installed"
    (skills/nemo-mbridge-multi-node-slurm/SKILL.md). Silent when the script installs uv or
    builds the image itself (``enroot import -o``, ``docker build -t``, ``apptainer build``)."""
    # the steps that run uv in an image not known to ship it, first: most scripts have none,
    # and the whole-script scans below are then not needed
    found = []
    for sf in facts_of(job).steps:
        image = step_image(job, sf)
        if image is None or ships_uv(image[0]):
            continue
        uv = next((u for u in map(_uv_word, sf.step.task_commands) if u is not None), None)
        if uv is not None:
            found.append((image, uv))
    if not found or _installs_uv(job):
        return
    built = built_images(job)
    for image, uv in found:
        if image[0].rsplit("/", 1)[-1].rsplit("#", 1)[-1] in built:
            continue  # the script builds that image itself: its recipe decides
        yield finding(
            "SB610", uv.start, uv.end,
            f"`uv` runs inside the image {shown_image(image[0])}, which is not one known to ship uv "
            "(the NeMo-RL and Megatron-Bridge images install it): if it does not, every "
            "task stops with `uv: command not found` after the queue wait and the image "
            "pull; use an image that has uv, or install it first (`pip install uv` in a "
            "one-task step, or uv's standalone installer script)",
            related=[Related(image[1].start, image[1].end, "the step's image")])


@rule("SB609", "megatron-checkout-over-image", Severity.INFO,
      "a Megatron-LM checkout imported instead of the megatron-core the container image ships")
def megatron_checkout_over_image(job) -> Iterator[Diagnostic]:
    """A Megatron-style run in a pyxis step whose image ships megatron-core (NeMo, NeMo-RL,
    Megatron-Bridge images) while the script points Python at a Megatron-LM checkout: a
    Megatron-LM ``pretrain_*.py`` entry point (its directory, first on ``sys.path``, holds the
    checkout's ``megatron/``) or a ``PYTHONPATH`` entry in a ``Megatron-LM`` directory (before
    site-packages). Python then imports the checkout's ``megatron.core``, not the image's
    (Python docs, "The initialization of the sys.path module search path"); the image's other
    packages were built against its own copy. Information: which copy is newer, the script
    does not say. Silent when the script installs the checkout (``pip install -e …``)."""
    runs = framework_runs(job)
    if not runs or _installs_checkout(job):
        return
    release = megatron_core_release(job)
    for run in runs:
        sf = step_of(job, run)
        if sf is None:
            continue
        image = step_image(job, sf)
        if image is None or not MCORE_IMAGES.search(image[0]):
            continue
        path = _pythonpath_checkout(job, sf, run.anchor.start)
        entry = run.anchor.value or run.anchor.text
        if _images_own(job, sf, path[0] if path is not None else entry):
            continue  # the image's own copy (/opt/megatron-lm in the NeMo images), not a checkout
        if path is not None:
            where, start, end = f"PYTHONPATH holds the checkout {path[0]}", path[1], path[2]
            how = "PYTHONPATH entries come before site-packages"
        elif run.kind == "megatron-lm":
            where = f"{entry} runs from a Megatron-LM checkout"
            start, end = run.anchor.start, run.anchor.end
            how = "the script's directory, which holds the checkout's megatron/, comes first"
        else:
            continue
        note = (f"; the release checks here assume the image's ({release.basis})"
                if release is not None and release.span is not None else "")
        yield finding(
            "SB609", start, end,
            f"{where}, inside the image {shown_image(image[0])}, which ships its own megatron-core: {how} "
            "on sys.path, so Python imports the checkout's megatron.core, not the image's, and "
            "the image's other packages were built against its own (a mismatch shows as "
            "`ModuleNotFoundError: No module named 'megatron.core.…'` or an ImportError at "
            "start-up)" + note + "; use the image's copy, or install the checkout into the "
            "image's environment in a one-task step (`pip install -e 3rdparty/Megatron-LM "
            "--no-deps --no-build-isolation`)",
            related=[Related(image[1].start, image[1].end, "the step's image")])


def step_of(job, run) -> StepFacts | None:
    """The facts of the srun step that starts ``run`` (a FrameworkRun), or None."""
    return facts_of(job).of(run.step)


def _images_own(job, sf: StepFacts, path: str) -> bool:
    """Whether ``path`` is the image's own copy: under ``/opt`` (where the NeMo images keep
    Megatron-LM, ``/opt/megatron-lm``, and Megatron-Bridge its ``3rdparty``) and under no
    ``--container-mounts`` target (or the mounts are not known)."""
    if not path.startswith("/opt/"):
        return False
    c = container_of(job, sf.step)
    mounts = c.mounts if c is not None else None
    return mounts is None or not any(under(path, m.target or m.source) for m in mounts)


def _installs_checkout(job) -> bool:
    """Whether the script pip-installs a Megatron-LM checkout (``pip install -e …Megatron-LM``)."""
    for cmd in _commands(job):
        if installer(cmd) is not None and any(
                CHECKOUT.search((w.value or w.text).rstrip("/")) for w in cmd.words):
            return True
    return False


def _pythonpath_checkout(job, sf: StepFacts, before: int) -> tuple[str, int, int] | None:
    """The ``PYTHONPATH`` entry in a Megatron-LM checkout that reaches the step's tasks (an
    exported batch-shell assignment, or one in the task's own command string): (the entry,
    the assignment's span), else None."""
    cands: list[Assignment] = [a for a in job.script.assignments
                               if a.name == "PYTHONPATH" and a.end <= before]
    cands += [a for sc in sf.step.task_scripts for a in sc.assignments if a.name == "PYTHONPATH"]
    cands += [a for c in sf.step.task_commands for a in c.assignments if a.name == "PYTHONPATH"]
    for a in reversed(cands):
        if a.value is None:
            continue
        text = a.value.value if a.value.value is not None else a.value.text.strip("\"'")
        if a in job.script.assignments and not (a.exported or job.exported("PYTHONPATH")):
            continue
        for entry in text.split(":"):
            if CHECKOUT.search(entry.rstrip("/")):
                return entry, a.start, a.end
    return None


# ---- SB611: resuming from whatever the working directory holds -----------------------------
NEMO1_ENTRY = re.compile(r"megatron_\w+_(pretraining|finetuning|sft)\.py$")
#: overrides that choose where the run keeps (and looks for) its checkpoints, or stop the resume
NEMO1_CHOSEN = re.compile(r"^\+{0,2}(exp_manager\.(exp_dir|explicit_log_dir|resume_if_exists|"
                          r"checkpoint_callback_params\.dirpath|resume_from_checkpoint)|"
                          r"model\.resume_from_checkpoint)=")
BRIDGE_CHOSEN = re.compile(r"^\+{0,2}checkpoint\.(load|save)=|^--?(checkpoint[-_](dir|load|save)|"
                           r"(output|log|save|exp)[-_]?dir|dir)(=|$)", re.IGNORECASE)
#: Hydra options that replace the example's config: its exp_manager settings are then the
#: user's file's, which the script does not show
NEMO1_CONFIG = re.compile(r"^(--config-(path|name)|-cp|-cn)(=|$)")
#: Megatron-Bridge entry points that train (data preparation, conversion, inference do not)
BRIDGE_TRAIN = re.compile(r"(^|/)(run_recipe|pretrain\w*|finetune\w*|train\w*|sft\w*|peft\w*)"
                          r"\.py$")
PLACEHOLDER = re.compile(r"^_[A-Za-z0-9_]+_$")
#: a working directory of its own per job or task
UNIQUE_DIR = re.compile(r"SLURM_(ARRAY_)?JOB_?ID|SLURM_ARRAY_TASK_ID|mktemp|TMPDIR|%[jAa]")


def _own_workdir(job) -> bool:
    """Whether the job runs in a directory of its own (a ``cd``, ``--chdir`` or
    ``--container-workdir`` into a path naming the job or task id, or a temporary one)."""
    uses = [u.value or "" for u in job.directives.options if u.name == "chdir"]
    uses += [w.text for s in job.steps for n, w in s.options.items()
             if n in ("chdir", "container-workdir")]
    for cmd in _commands(job):
        if cmd.words and cmd.words[0].value in ("cd", "pushd"):
            uses += [w.text for w in cmd.words[1:2]]
    return any(UNIQUE_DIR.search(u) for u in uses)


@rule("SB611", "stale-experiment-resume", Severity.INFO,
      "a NeMo or Megatron-Bridge run that resumes from whatever checkpoint its default "
      "experiment directory in the working directory holds")
def stale_experiment_resume(job) -> Iterator[Diagnostic]:
    """NeMo 1's ``megatron_*_pretraining.py`` (its config: ``exp_manager.resume_if_exists:
    True``, ``exp_dir: null`` = ``./nemo_experiments``, a fixed ``name``) and Megatron-Bridge
    recipes (``recipes/common.py``: ``checkpoint.save`` = ``checkpoint.load`` =
    ``$CWD/nemo_experiments/default/checkpoints``, loaded when a checkpoint exists there:
    ``training/setup.py``) resume from the working directory's experiment folder. Info, as
    what the folder holds is not in the script; a warning for an array job, whose tasks share
    the folder at once. Silent when an override chooses the directory or stops the resume,
    the job works in a directory of its own, or a pyxis step starts in the image's WORKDIR
    (no ``--container-workdir``, ``--container-name`` or ``cd``: a fresh container file
    system each step, so nothing is left from an earlier run)."""
    runs = framework_runs(job)
    if not runs or _own_workdir(job):
        return
    array = job.directives.get("array")
    for run in runs:
        vals = [w.value or w.text for w in run.words]
        if _opaque(run.words):
            continue  # words the script does not show may choose the directory
        sf = step_of(job, run)
        if sf is not None and sf.step.container and not _kept_workdir(job, sf):
            continue  # a directory of the container's own file system: fresh each step
        if run.kind == "nemo" and any(NEMO1_ENTRY.search(v) for v in vals[:4]):
            if any(NEMO1_CHOSEN.match(v) or NEMO1_CONFIG.match(v) for v in vals):
                continue  # a chosen folder, or a config of the user's own (its exp_manager)
            folder = "./nemo_experiments/<exp_manager.name>/checkpoints"
            who = ("NeMo's exp_manager defaults (examples/nlp/language_modeling/conf/"
                   "megatron_gpt_config.yaml: resume_if_exists: True, exp_dir: null)")
            fix = ("give the run its own exp_manager.exp_dir=… (with $SLURM_JOB_ID for a "
                   "fresh start), or exp_manager.resume_if_exists=false")
            end_note = (" (and a finished one stops the job: `Found … indicating that the last "
                        "training run has already completed.`)")
        elif run.kind == "bridge" and any(BRIDGE_TRAIN.search(v) for v in vals[:4]):
            if any(BRIDGE_CHOSEN.match(v) for v in vals):
                continue
            folder = "./nemo_experiments/default/checkpoints"
            who = ("Megatron-Bridge's recipe defaults (recipes/common.py: checkpoint.save = "
                   "checkpoint.load = $CWD/nemo_experiments/default/checkpoints)")
            fix = "pass checkpoint.save=… and checkpoint.load=… with a directory of the run's own"
            end_note = ""
        else:
            continue
        sev = Severity.WARNING if array is not None else Severity.INFO
        why = (f"; this is an array job (--array={array.value}): its tasks share that folder at "
               "once, each saving into it and resuming from the others'" if array is not None
               else "")
        related = [Related(array.start, array.end, "the job is an array")] if array else []
        yield finding(
            "SB611", run.anchor.start, run.anchor.end,
            f"this run keeps its checkpoints in {folder} under the working directory and "
            f"resumes from whatever checkpoint it finds there, by {who}: a run started again "
            "in the same directory continues an earlier experiment instead of starting fresh"
            + end_note + why + f"; {fix}", severity=sev, related=related)


def _kept_workdir(job, sf: StepFacts) -> bool:
    """Whether a pyxis step works in a directory that outlives it: a ``--container-name``
    (the container is kept), or a ``--container-workdir``/``cd`` target under one of its
    ``--container-mounts`` targets. Without them the step starts in the image's WORKDIR, in
    the container's own file system, fresh for each step (pyxis README)."""
    if "container-name" in sf.step.options:
        return True
    c = container_of(job, sf.step)
    if c is None or c.mounts is None:
        return False  # the mounts are not known: nothing to rest on
    dirs = [w.value for n, w in sf.step.options.items() if n == "container-workdir"]
    dirs += [c2.words[1].value for c2 in sf.step.task_commands
             if len(c2.words) > 1 and c2.words[0].value in ("cd", "pushd")]
    return any(d is not None and any(under(d, m.target or m.source) for m in c.mounts)
               for d in dirs)


def _opaque(words: list[Word]) -> bool:
    """Whether the command line holds words whose text is not known and that are not an
    option's value: a bare ``$ARGS``, a command substitution, or the batch shell's unknown
    value spliced into a command string (``_NAME_``) standing on its own."""
    for i, w in enumerate(words):
        v = w.value
        unknown = v is None and (w.text.lstrip('"').startswith("$") or "$(" in w.text or
                                 "`" in w.text)
        spliced = v is not None and bool(w.early) and PLACEHOLDER.match(v) is not None
        if (unknown or spliced) and not (i and (words[i - 1].value or "").startswith("-")):
            return True
    return False
