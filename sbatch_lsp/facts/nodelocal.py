"""What the batch shell prepares on node-local storage, and the steps on other nodes that need it.

Slurm runs the batch script once, on the first node of the allocation (sbatch(1), DESCRIPTION:
"Slurm runs a single copy of the batch script on the first node in the set of allocated
nodes"); the other nodes run only what a job step puts there. So a directory the batch shell
fills under a node-local path (``$SLURM_TMPDIR``, ``$TMPDIR``, ``/tmp``, ``/dev/shm``,
``/local…``, ``/raid…``: :func:`facts.caches.node_local_root`) exists on node 0 only: a
virtualenv (``virtualenv P``, ``python -m venv P``, ``uv venv P``, ``uv sync`` into
``$UV_PROJECT_ENVIRONMENT``), a conda environment (``conda create -p P``, ``conda env create
-p P``), data copied or unpacked there (``cp``/``mv``/``rsync`` into P, ``tar -x -C P``,
``unzip -d P``) or a directory made there (``mkdir P``). A step on several nodes that names P
(its words, with the values the batch shell gives them), or that runs a program by a bare name
after the batch shell put ``P/bin`` first on ``PATH`` (``source P/bin/activate``, ``conda
activate P``, ``PATH=P/bin:$PATH``: an exported ``PATH`` reaches every step, srun(1)
``--export``), finds nothing there on the other nodes: ``execve(): accelerate: No such file or
directory`` (huggingface/accelerate#2192). A step that prepares P itself, or an earlier step
that does on every node of this one (``srun --ntasks=$SLURM_NNODES --ntasks-per-node=1 …``),
leaves nothing missing.

The tools' own synopses give the destinations: coreutils ``cp(1)``/``mv(1)`` (last operand, or
``-t DIR``), ``mkdir(1)``, ``rsync(1)`` (last operand; a source ending in ``/`` copies its
contents), GNU ``tar(1)`` (``-x``/``--extract``/``--get`` with ``-C``/``--directory``; the old
form ``tar xf …`` bundles the letters without a dash), Info-ZIP ``unzip(1)`` (``-d exdir``),
virtualenv's and venv's ``DEST_DIR``, uv's ``uv venv [PATH]`` and ``UV_PROJECT_ENVIRONMENT``
(uv docs, Reference › Environment variables), conda's ``-p/--prefix``.
"""
from __future__ import annotations

import enum
import re
from operator import attrgetter
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ..job import Job, Step
from ..launchers import PYTHON
from ..shell import parse as shell_parse
from ..shell.model import Command, Script, Word
from .argv import literal_start, walk
from .caches import node_local_root
from .containers import VARIABLE, container_of, spelled_of, under
from .control import job_control
from .reach import opaque_command
from .steps import StepFacts, facts_of, passes_variable
from .wrappers import WRAPPER_NAMES, base, unwrap


class Made(enum.IntEnum):
    """What a preparation leaves at its path, ordered by how surely a step that names the path
    needs it: an empty directory (the program may create it itself), files whose names the
    script does not give (unpacked into a node-local root), named data, a software
    environment."""

    DIRECTORY = 1
    UNNAMED = 2
    DATA = 3
    ENVIRONMENT = 4


@dataclass(frozen=True)
class Prepared:
    """Something a command puts on node-local storage: ``path`` as the script spells it
    (normalised: ``$SLURM_TMPDIR/env``; a bare node-local root such as ``$SLURM_TMPDIR`` when
    the names of what lands there are not known), what it is, the ``command`` and its ``tool``
    (``virtualenv``, ``tar``), and the ``word`` naming the path."""

    path: str
    made: Made
    command: Command
    tool: str
    word: Word

    def holds(self, other: str) -> bool:
        """Whether ``other`` (a normalised path) is this preparation's path or inside it; inside a
        bare root only strictly (the root itself exists on every node)."""
        if node_local_root(self.path) == self.path:
            return other != self.path and under(other, self.path)
        return under(other, self.path)


@dataclass(frozen=True)
class Activation:
    """A batch-shell command that puts ``bin`` (normalised: ``$SLURM_TMPDIR/env/bin``) first on
    ``PATH``: ``source P/bin/activate``, ``conda activate P``, ``PATH=P/bin:$PATH``."""

    bin: str
    command: Command
    word: Word


@dataclass(frozen=True)
class NodeLocalUse:
    """A step that needs what the batch shell prepared on node 0: the preparation, the step,
    the word of the step that needs it (a word naming the path, or the program that the
    activation makes ``PATH`` find there) and the path it needs (normalised, as
    :class:`Prepared`; the ``bin`` directory for a program), the activation (None when a word
    names the path), the step's node count (None when the script does not say), and
    ``unread``: an earlier step on those nodes runs commands not read here (they may prepare
    the path on each node)."""

    prepared: Prepared
    step: StepFacts
    word: Word
    path: str
    activation: Activation | None
    nodes: int | None
    unread: Command | None


def node_local_uses(job: Job) -> list[NodeLocalUse]:
    """Every step that may run on more than one node and needs a path the batch shell
    prepared on node-local storage (one per path: the first such step), in script order;
    computed once per job."""
    result: list[NodeLocalUse] = job.derived(_uses)
    return result


# ---- where the script says a path is -----------------------------------------------------------
def path_of(job: Job, word: Word, script: Script, at: int) -> str | None:
    """The path ``word`` (read in ``script``) names as the script spells it, normalised
    (``${X}`` -> ``$X``, no quotes, no trailing ``/``): assignments substituted as
    :func:`containers.spelled_of` spells them (``$ENV/bin`` after ``ENV=$SLURM_TMPDIR/env``), a
    batch-shell value spliced into a command string spelled back as ``$NAME``, and in a command
    string a step runs, the batch shell's values exported at offset ``at`` (its tasks inherit
    them). None when nothing is known of it."""
    if not word.early and "$" not in word.text:
        return _literal_path(word.text, word.value)  # (most words: nothing to substitute)
    return _path_of(job, word, script, at)


@lru_cache(maxsize=8192)
def _literal_path(text: str, value: str | None) -> str | None:
    """:func:`path_of` of a word with this text and value and neither a ``$`` nor a batch-shell
    value in it: no variable to look up, so a function of the two alone."""
    return _path_of(None, Word(text, 0, len(text), value), Script(), 0)


def _path_of(job: Job | None, word: Word, script: Script, at: int) -> str | None:
    """:func:`path_of`; ``job`` may be None for a word without ``$`` (nothing is read in it)."""
    if word.early:
        text = word.value if word.value is not None else word.text
        for e in word.early:
            if e.name and e.kind == "var":
                text = text.replace(f"_{e.name}_", f"${e.name}")
    else:
        spelled = spelled_of(word, script)
        if spelled is None:
            return None
        text = spelled.value

    def value(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        a, where = script.value_at(name, word.start), script
        assert job is not None  # (a `$` is in the word)
        if a is None and script is not job.script and job.exported(name, at):
            a, where = job.script.value_at(name, at), job.script
        if a is None or a.value is None or a.append:
            return m.group(0)
        inner = spelled_of(a.value, where)
        return inner.value if inner is not None else m.group(0)
    return _normal(VARIABLE.sub(value, text))


def _normal(text: str) -> str | None:
    text = re.sub(r"\$\{(\w+)\}", r"$\1", text.replace('"', "").replace("'", ""))
    text = re.sub(r"/+", "/", text)
    return text.rstrip("/") or None if text != "/" else text


def _paths_in(word_path: str) -> list[str]:
    """The paths one word may hold: its value, the value of ``--opt=VALUE`` or ``NAME=VALUE``,
    and each item of a ``:``/``,`` list (``--container-mounts=SRC:DST``, ``PATH=A:B``)."""
    value = word_path.split("=", 1)[1] if "=" in word_path else word_path
    return [p.rstrip("/") for p in re.split(r"[:,]", value) if p.startswith(("/", "$"))]


# ---- preparations --------------------------------------------------------------------------------
#: options that take the next word, per tool (the tools' own synopses; unlisted options are flags)
TAKES = {
    "virtualenv": frozenset({"-p", "--python", "--prompt", "--app-data", "--creator", "--seeder",
                             "--activators", "--pip", "--setuptools", "--wheel",
                             "--extra-search-dir"}),
    "venv": frozenset({"--prompt"}),
    "uv venv": frozenset({"-p", "--python", "--prompt", "--cache-dir", "--directory", "--project",
                          "--index", "--index-url", "--extra-index-url", "--link-mode",
                          "--python-preference", "--exclude-newer", "--config-file"}),
    "conda": frozenset({"-n", "--name", "-p", "--prefix", "-c", "--channel", "-f", "--file"}),
    "cp": frozenset({"-t", "--target-directory", "-S", "--suffix"}),
    "rsync": frozenset({"-e", "--rsh", "--exclude", "--include", "--exclude-from",
                        "--include-from", "--files-from", "-f", "--filter", "--rsync-path",
                        "--log-file", "--partial-dir", "-T", "--temp-dir", "--compare-dest",
                        "--copy-dest", "--link-dest", "--chmod", "--chown", "--timeout",
                        "--bwlimit", "--max-size", "--min-size", "--port", "--password-file",
                        "--out-format", "--suffix", "--backup-dir", "-B", "--block-size",
                        "--info", "--debug", "-M", "--remote-option", "--skip-compress",
                        "--compress-level", "--max-delete", "--modify-window"}),
    "tar": frozenset({"-f", "--file", "-C", "--directory", "-T", "--files-from", "-X",
                      "--exclude-from", "-I", "--use-compress-program", "-b",
                      "--blocking-factor", "-H", "--format", "-g", "--listed-incremental",
                      "-K", "-N", "-V", "--label"}),
    "unzip": frozenset({"-d", "-P"}),
    "mkdir": frozenset({"-m", "--mode", "--context"}),
}
CONDA = frozenset({"conda", "mamba", "micromamba"})
#: the commands :func:`_targets` reads, by basename (and ``python…``: ``python -m venv``)
TOOLS = CONDA | {"virtualenv", "uv", "cp", "mv", "rsync", "tar", "unzip", "mkdir"}


def _operands(words: list[Word], start: int,
              takes: frozenset[str]) -> tuple[dict[str, Word], list[Word]]:
    """Options and operands of ``words[start:]`` as GNU ``getopt_long`` reads them with
    permutation (options may follow operands, ``--`` ends them): the options' values by name
    without dashes (:func:`argv.walk`), and the operands in order."""
    for w in words[start:]:  # (a loop, not any() over a generator: asked per task command)
        if literal_start(w).startswith("-"):
            break
    else:
        return {}, words[start:]  # no option, nor `--` (most commands: found without walk)

    def lookup(name: str, long: bool) -> tuple[str, bool | None]:
        return name, ("--" if long else "-") + name in takes

    values: dict[str, Word] = {}
    operands: list[Word] = []
    i = start
    while i < len(words):
        o = walk(words, i, lookup, "getopt")
        values.update(o.values)
        if o.end > i and literal_start(words[o.end - 1]) == "--" and \
                words[o.end - 1] not in o.values.values():
            operands.extend(words[o.end:])
            break
        if o.end >= len(words):
            break
        operands.append(words[o.end])
        i = o.end + 1
    return values, operands


def _letters(words: list[Word], takes: frozenset[str]) -> set[str]:
    """The short flags of the one-dash clusters among ``words`` (``-xzf`` gives x and z, and f,
    which takes the next word and ends the cluster): :func:`argv.walk` keeps only the option
    whose value is pending."""
    out: set[str] = set()
    for w in words:
        v = w.value or ""
        if v.startswith("-") and not v.startswith("--"):
            for letter in v[1:]:
                out.add(letter)
                if f"-{letter}" in takes:
                    break
    return out


def preparations(job: Job, cmd: Command, at: int | None = None) -> list[Prepared]:
    """What ``cmd`` puts on node-local storage (seen through its wrappers: ``timeout``, ``env``,
    …): the paths its words name, spelled by :func:`path_of` (``at``: where the batch shell's
    values are read, for a command a step runs)."""
    argv = unwrap(cmd.words)
    if not argv or not _tool(argv[0]):
        return []
    script = cmd.script or job.script
    where = cmd.start if at is None else at
    out = []
    for made, tool, word, extra in _targets(job, cmd, argv):
        path = path_of(job, word, script, where)
        if path is None or node_local_root(path) is None:
            continue
        root = node_local_root(path) == path
        if root and made is Made.DIRECTORY:
            continue  # the root exists on every node
        if root and extra is not None:
            # one item copied into the root: what lands there is ROOT/NAME (rsync copies the
            # contents of a source written with a trailing slash)
            source = path_of(job, extra, script, where)
            name = source.rsplit("/", 1)[-1] if source else ""
            if name and "$" not in name and not re.search(r"[*?\[]", name) and \
                    not extra.text.strip("\"'").endswith("/"):
                path = f"{path}/{name}"
                root = False
        out.append(Prepared(path, Made.UNNAMED if root and made is not Made.ENVIRONMENT
                            else made, cmd, tool, word))
    return out


def _tool(word: Word) -> bool:
    """Whether a command whose first word (past its wrappers) is ``word`` may be one
    :func:`_targets` reads (:data:`TOOLS`, or a ``python…`` that :data:`PYTHON` may match)."""
    name = base(word)
    return name in TOOLS or name.startswith("python")


def _may_prepare(cmd: Command) -> bool:
    """Whether :func:`preparations` may find something in ``cmd``: False for a command whose
    first word names neither a wrapper (:func:`wrappers.wrapped`) nor one of :func:`_tool`'s
    (most commands: found without unwrapping), and for one whose words' texts and values say
    it prepares nothing in any job (:func:`_prepares_nothing`, asked only with the fragment
    memo on, as the language server lints; a word holding a batch-shell value, ``Word.early``,
    is not read that way)."""
    words = cmd.words
    if not words:
        return False
    name = base(words[0])
    if not (name in TOOL_OR_WRAPPER or name.startswith("python")):
        return False
    if not shell_parse.USE_FRAGMENTS:
        return True  # (a one-off lint: each command is read once, the shortcut would add one)
    for w in words:
        if w.early:
            return True
    return not _prepares_nothing(tuple([w.text for w in words]),
                                 tuple([w.value for w in words]))


#: commands' words (texts, values) whose :func:`_prepares_nothing` the memo keeps (least
#: recently used go first): the tool commands of some 50 open documents; a few hundred bytes
#: each
PREPARES_NOTHING_CACHE_SIZE = 2048


@lru_cache(maxsize=PREPARES_NOTHING_CACHE_SIZE)
def _prepares_nothing(texts: tuple[str, ...], values: tuple[str | None, ...]) -> bool:
    """Whether :func:`preparations` gives nothing, in any job, for a command whose words have
    these ``texts`` and literal ``values`` and hold no batch-shell value (``Word.early``):
    True when every destination it names is a literal path (no ``$``: :func:`path_of` reads no
    variable in it) off node-local storage, which no job changes. False when it may give
    something (``uv sync`` reads a variable's assignment; a destination holds a ``$`` or is
    node-local). The reading of the words (wrappers, options, destinations) looks at their
    texts and values alone, so the answer is a function of the two: memoised, so the language
    server's lint of an edit does not read every ``cp`` of the script again."""
    words = [Word(t, 0, len(t), v) for t, v in zip(texts, values, strict=True)]
    argv = unwrap(words)
    if not argv or not _tool(argv[0]):
        return True
    if _syncs_uv(argv):
        return False
    for _made, _name, word, _extra in _word_targets(argv):
        if "$" in word.text:
            return False
        path = _literal_path(word.text, word.value)
        if path is not None and node_local_root(path) is not None:
            return False
    return True


#: the first words of a command that :func:`_may_prepare` lets through (besides ``python…``),
#: one set for the one lookup it makes per command of the script
TOOL_OR_WRAPPER = TOOLS | WRAPPER_NAMES


def _targets(job: Job, cmd: Command,
             argv: list[Word]) -> list[tuple[Made, str, Word, Word | None]]:
    """(what, tool, the destination word, the source word when one item is copied into it)."""
    if _syncs_uv(argv):
        a = job.script.value_at("UV_PROJECT_ENVIRONMENT", cmd.start)
        for p in cmd.assignments:
            if p.name == "UV_PROJECT_ENVIRONMENT":
                a = p
        if a is None or a.value is None:
            return []
        return [(Made.ENVIRONMENT, "uv sync", a.value, None)]
    return _word_targets(argv)


def _syncs_uv(argv: list[Word]) -> bool:
    """``uv sync``: its environment is where ``UV_PROJECT_ENVIRONMENT`` says (an assignment,
    not a word of the command)."""
    return base(argv[0]) == "uv" and len(argv) > 1 and argv[1].value == "sync"


def _word_targets(argv: list[Word]) -> list[tuple[Made, str, Word, Word | None]]:
    """:func:`_targets` of a command other than ``uv sync``: read from its words alone."""
    name = base(argv[0])
    args = [w.value for w in argv[1:4]]
    if name == "virtualenv" or (PYTHON.match(name) and args[:1] == ["-m"] and
                                args[1:2] in (["venv"], ["virtualenv"])):
        tool = "virtualenv" if name == "virtualenv" or args[1] == "virtualenv" else "venv"
        _, ops = _operands(argv, 1 if name == "virtualenv" else 3, TAKES[tool])
        return [(Made.ENVIRONMENT, tool, ops[-1], None)] if ops else []
    if name == "uv" and args[:1] == ["venv"]:
        _, ops = _operands(argv, 2, TAKES["uv venv"])
        return [(Made.ENVIRONMENT, "uv venv", ops[-1], None)] if ops else []
    if name in CONDA and (args[:1] == ["create"] or args[:2] == ["env", "create"]):
        values, _ = _operands(argv, 2 if args[0] == "create" else 3, TAKES["conda"])
        prefix = values.get("p") or values.get("prefix")
        return [(Made.ENVIRONMENT, f"{name} create", prefix, None)] if prefix else []
    if name in ("cp", "mv", "rsync"):
        values, ops = _operands(argv, 1, TAKES["rsync" if name == "rsync" else "cp"])
        target = values.get("t") if name != "rsync" else None
        target = target or values.get("target-directory")
        if target is None:
            if len(ops) < 2:
                return []
            target, ops = ops[-1], ops[:-1]
        source = ops[0] if len(ops) == 1 else None
        return [(Made.DATA, name, target, source)]
    if name == "tar":
        words = argv
        first = argv[1].value if len(argv) > 1 else None
        if first and re.fullmatch(r"[A-Za-z]+", first):  # `tar xzf F`: bundled, no dash
            words = [argv[0], Word("-" + first, argv[1].start, argv[1].end, "-" + first),
                     *argv[2:]]
        values, _ = _operands(words, 1, TAKES["tar"])
        if not ({"extract", "get"} & set(values) or "x" in _letters(words, TAKES["tar"])):
            return []
        target = values.get("C") or values.get("directory")
        return [(Made.DATA, "tar", target, None)] if target is not None else []
    if name == "unzip":
        values, _ = _operands(argv, 1, TAKES["unzip"])
        target = values.get("d")
        return [(Made.DATA, "unzip", target, None)] if target is not None else []
    if name == "mkdir":
        _, ops = _operands(argv, 1, TAKES["mkdir"])
        return [(Made.DIRECTORY, "mkdir", w, None) for w in ops]
    return []


def activation(job: Job, cmd: Command) -> Activation | None:
    """The ``bin`` directory ``cmd`` puts first on ``PATH`` when it is on node-local storage:
    ``source P/bin/activate`` (or ``.``), ``conda|mamba|micromamba activate P`` and ``source
    activate P`` for a prefix path (a named environment lives in conda's own folder), or an
    assignment ``PATH=P/bin:…`` (bare, or through ``export``/``declare``: ``PATH`` comes from
    the environment, so it is exported either way)."""
    script = cmd.script or job.script
    for a in [*cmd.assignments, *(a for a in script.assignments if a.command is cmd)]:
        if a.name != "PATH" or a.value is None or (cmd.words and a in cmd.assignments):
            continue  # `PATH=x cmd` sets it for that command only
        path = path_of(job, a.value, script, cmd.start)
        first = path.split(":", 1)[0].rstrip("/") if path else None
        if first and node_local_root(first) is not None:
            return Activation(first, cmd, a.value)
    argv = cmd.words
    if len(argv) < 2:
        return None
    name, sub = base(argv[0]), argv[1].value
    if name in ("source", ".") and len(argv) == 2:
        path = path_of(job, argv[1], script, cmd.start)
        if path and path.endswith("/bin/activate") and node_local_root(path) is not None:
            return Activation(path[:-len("/activate")], cmd, argv[1])
    if sub == "activate" and name in CONDA | {"source", "."}:
        target = next((w for w in argv[2:] if not literal_start(w).startswith("-")), None)
        if target is None:
            return None
        path = path_of(job, target, script, cmd.start)
        if path and "/" in path and node_local_root(path) is not None:
            return Activation(f"{path}/bin", cmd, target)
    return None


def _deactivates(cmd: Command) -> bool:
    """``deactivate``, ``conda deactivate``: ``PATH`` loses the environment again."""
    argv = [w.value for w in cmd.words[:2]]
    return argv[:1] == ["deactivate"] or (len(argv) == 2 and argv[0] in CONDA and
                                           argv[1] == "deactivate")


# ---- the batch shell, the steps ---------------------------------------------------------------
def _shell_commands(job: Job, keep: Callable[[Command], bool] | None = None) -> list[Command]:
    """The commands of the batch script outside the steps and the command substitutions, in
    script order: those the batch shell runs itself unless a task-id guard it fails is around
    them (``job_control(job).tasks(cmd).in_batch_shell()`` tells). Only those ``keep`` keeps
    when it is given (asked first: it is cheaper than the test of a command's ancestors)."""
    in_step: set[int] | None = None  # (made for the first command kept: often none is)
    #: id of a script -> whether a step runs it: a command's ancestors are those of its
    #: script (Command.ancestors), so one test per script, not per command
    run_by_step: dict[int, bool] = {}
    out = []
    for cmd in job.script.walk():
        if keep is not None and not keep(cmd):
            continue
        if in_step is None:
            in_step = {id(s.command) for s in job.steps}
        if not cmd.words and not cmd.assignments or cmd.in_substitution or \
                cmd.calls is not None or id(cmd) in in_step:
            continue
        script = id(cmd.script)
        inside = run_by_step.get(script)
        if inside is None:
            inside = run_by_step[script] = any(id(a) in in_step for a in cmd.ancestors())
        if inside:
            continue
        out.append(cmd)
    return sorted(out, key=attrgetter("start"))  # (a C key: no call per command)


def _step_preparations(job: Job, sf: StepFacts) -> list[Prepared]:
    at = sf.step.command.start
    return [p for c in sf.step.task_commands for p in preparations(job, c, at)]


#: srun options whose paths each node of the step opens itself (srun(1): the working directory
#: of every task, pyxis's image file and mount sources, variables given to the tasks); not
#: ``--output``/``--error``/``--input``, which srun opens on its own node unless the pattern
#: holds a per-node or per-task field
NODE_OPENS = ("chdir", "container-image", "container-mounts", "export")


def _words(job: Job, sf: StepFacts) -> list[tuple[Word, Script | None]]:
    """The words of a step that may name a path, with the script they are read in: srun's own
    option values that each node opens (:data:`NODE_OPENS`), and (outside a container, whose
    paths are its own) every word of what its tasks run."""
    step = sf.step
    out: list[tuple[Word, Script | None]] = [(step.options[k], None) for k in NODE_OPENS
                                             if k in step.options]
    if container_of(job, step) is None:
        out += [(w, c.script) for c in step.task_commands for w in c.all_words()]
    return out


def _programs(job: Job, step: Step) -> list[Word]:
    """The programs the step's tasks start by a bare name that a Python environment provides:
    each launcher's first word (``python``, ``torchrun``, ``accelerate``, ``deepspeed``; not
    an MPI launcher, which comes from the system)."""
    out = []
    for site in job.launches:
        if site.step is not step or site.launch.kind == "mpirun" or not site.launch.words:
            continue
        w = site.launch.words[0]
        if w.value and "/" not in w.value:
            out.append(w)
    return out


def _span(job: Job, sf: StepFacts) -> tuple[int | None, bool]:
    """(the step's node count, whether it may be more than one): a known count, or an unknown
    one where the script asks for a count it does not give literally, or for several tasks
    without a node count (Slurm may spread them over nodes)."""
    nodes = sf.layout.nodes
    if nodes is not None:
        return nodes, nodes > 1
    if sf.layout.tasks == 1:
        return 1, False
    step = sf.step
    asked = job.nodes.use is not None or "nodes" in step.options or "ntasks" in step.options \
        or (job.ntasks.use is not None and job.ntasks.value != 1)
    return None, asked


def _uses(job: Job) -> list[NodeLocalUse]:
    control = job_control(job)
    # the batch shell's own commands that may prepare something; the control-flow test only
    # where one does (most scripts prepare nothing on node-local storage: no test at all)
    prepared = [p for c in _shell_commands(job, _may_prepare) for ps in [preparations(job, c)]
                if ps and control.tasks(c).in_batch_shell() for p in ps]
    if not prepared:
        return []
    batch = [c for c in _shell_commands(job) if control.tasks(c).in_batch_shell()]
    activations = [(c, act) for c in batch for act in [activation(job, c)] if act is not None]
    out: list[NodeLocalUse] = []
    done: set[str] = set()
    earlier: list[tuple[StepFacts, list[Prepared]]] = []
    for sf in facts_of(job).steps:
        own = _step_preparations(job, sf)
        nodes, several = _span(job, sf)
        at = sf.step.command.top().start
        if several:
            before = [p for p in prepared if p.command.start < at and p.path not in done]
            covered = own + [p for e, preps in earlier
                             if _covers(e, nodes) for p in preps]
            unread = next((c for e, _ in earlier if _covers(e, nodes)
                           for c in e.step.task_commands if opaque_command(c.words)), None)
            use = _need(job, sf, before, covered, activations, at)
            if use is not None:
                p, word, path, act = use
                done.add(p.path)
                out.append(NodeLocalUse(p, sf, word, path, act, nodes, unread))
        earlier.append((sf, own))
    return out


def _covers(sf: StepFacts, nodes: int | None) -> bool:
    """Whether an earlier step ran on every node of a later one with ``nodes`` nodes (an
    unknown count on either side is taken to cover: the finding would rest on it)."""
    return sf.layout.nodes is None or nodes is None or sf.layout.nodes >= nodes


def _need(job: Job, sf: StepFacts, before: list[Prepared], covered: list[Prepared],
          activations: list[tuple[Command, Activation]],
          at: int) -> tuple[Prepared, Word, str, Activation | None] | None:
    """The batch shell's preparation the step needs most surely, with the word that shows it,
    the path it needs and the activation it goes through (None: a word names it)."""
    found: list[tuple[Prepared, Word, str, Activation | None]] = []
    for w, script in _words(job, sf):
        path = path_of(job, w, script or job.script, at)
        for one in _paths_in(path or ""):
            if not any(c.holds(one) for c in covered):
                found += [(p, w, one, None) for p in before if p.holds(one)]
    live = _active(job, activations, at)
    if live is not None and passes_variable(job, sf.step, "PATH") and \
            not any(c.holds(live.bin) for c in covered):
        for p in before:
            if p.holds(live.bin):
                found += [(p, w, live.bin, live) for w in _programs(job, sf.step)]
    if not found:
        return None
    return max(found, key=lambda f: (f[0].made, f[3] is None, -f[1].start))


def _active(job: Job, activations: list[tuple[Command, Activation]],
            at: int) -> Activation | None:
    """The activation in force at offset ``at``: the last one before it, unless a
    ``deactivate`` of the batch shell follows it."""
    live = None
    for c, act in activations:
        if c.start < at:
            live = act
    if live is None:
        return None
    if any(_deactivates(c) for c in job.script.commands
           if live.command.start < c.start < at):
        return None
    return live
