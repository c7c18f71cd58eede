"""The job model: resources the directives request, srun steps with their effective layout,
launchers, and the environment, all with the source locations rules point at.

Slurm facts encoded here (slurm-facts.md §14, verified on 22.05.8): inside a batch job srun
reads SLURM_NTASKS, SLURM_NTASKS_PER_NODE and SLURM_JOB_NUM_NODES as its defaults, so a step
inherits the allocation's task count and a lone ``srun --ntasks-per-node=1`` is ignored; with no
task count anywhere srun starts one task per node; ``--export=NONE`` reaches every step through
SLURM_EXPORT_ENV.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from operator import attrgetter
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import TYPE_CHECKING, NamedTuple

from . import options as opts
from .directives import DirectiveBlock, OptionUse
from .facts import argv
from .facts.exports import Exports
from .facts.layout import count_of, gpu_count, parse_count
from .facts.provenance import Provenance, is_completed_elsewhere, provenance_of
from .facts.values import expand_arrays
from .facts.wrappers import MAX_WRAPPERS, WRAPPER_NAMES, base, skip_wrapper, wrapper_at
from .launchers import LAUNCHER_NAMES, Launch, find_launch, may_launch
from .shell.model import Command, Script, Word
from .shell import parse as shell_parse
from .shell.parse import shell_string_index
from .source import Source
from .values import host_count

if TYPE_CHECKING:  # the profile is data the Job carries; the configuration layer imports the rules
    from .config import Profile

PYXIS_IMAGE = frozenset({"container-image", "container-name"})
#: the first words a command that runs srun can start with (srun itself, or a wrapper)
SRUN_OR_WRAPPER = WRAPPER_NAMES | {"srun"}
#: the first words with which a command may be an srun step or start a launcher
STEP_OR_LAUNCH = SRUN_OR_WRAPPER | LAUNCHER_NAMES


def may_step_or_launch(first: Word) -> bool:
    """Whether a command whose first word is ``first`` may be an srun step (``Job.step_for``)
    or start a launcher (:func:`launchers.may_launch`): False only when both answer no, from
    one basename (most commands), where asking both reads it twice and calls two functions.
    A python launcher's name (``PYTHON``) starts with ``python``."""
    name = base(first)
    return name in STEP_OR_LAUNCH or name.startswith("python") or "[@]" in first.text


@dataclass
class Count:
    """A resource count with where it came from; ``value`` None when not statically known."""

    value: int | None
    use: OptionUse | None = None
    text: str | None = None

    @property
    def known(self) -> bool:
        return self.value is not None


@dataclass(eq=False)
class Step:
    """An srun step: the srun command, its options, what runs in each task, and its layout.

    ``task`` holds the commands every task runs: the nested command string's commands for
    ``srun bash -c STR``, or a view of the srun argv after its options.
    ``tasks_per_node`` is the effective count (None when unknown) and ``layout_note`` says why.
    """

    command: Command
    srun: Word  # the `srun` word itself
    options: dict[str, Word]
    option_words: dict[str, Word]
    argv: list[Word]
    #: words in srun's option position that are bare expansions (``srun $ARGS cmd``): they may
    #: hold options the linter cannot see
    hidden: list[Word] = field(default_factory=list)
    task_commands: list[Command] = field(default_factory=list)
    task_scripts: list[Script] = field(default_factory=list)
    tasks_per_node: int | None = None
    layout_note: str = ""
    layout_evidence: list[OptionUse] = field(default_factory=list)
    nodes: int | None = None

    @property
    def container(self) -> bool:
        """Whether the step's options start a pyxis container (an image or a name)."""
        return not PYXIS_IMAGE.isdisjoint(self.options)  # (one C call: asked per step)

    def opt(self, name: str) -> str | None:
        w = self.options.get(name)
        return w.value if w is not None else None

    def exports(self) -> tuple[str | None, dict[str, str | None]]:
        """The step's ``--export``: (mode, variables it sets or names). Mode is None without
        the option, ``"ALL"`` when it contains ALL, ``"NONE"``, or ``"LIST"`` (only the named
        variables and Slurm's own reach the task; srun(1) --export). The dict maps each named
        variable to its ``NAME=value`` text, or None for a bare name."""
        w = self.options.get("export")
        if w is None:
            return None, {}
        value = w.value if w.value is not None else w.text.strip("\"'")
        items = [x.strip() for x in value.split(",") if x.strip()]
        upper = {x.upper() for x in items}
        named = {x.split("=", 1)[0]: (x.split("=", 1)[1] if "=" in x else None)
                 for x in items if x.upper() not in ("ALL", "NONE", "NIL")}
        mode = "ALL" if "ALL" in upper else "NONE" if upper & {"NONE", "NIL"} else "LIST"
        return mode, named


@dataclass(eq=False)
class LaunchSite:
    """A launcher and where it runs: in a step's tasks (``step``) or in the batch shell."""

    launch: Launch
    command: Command
    step: Step | None


class Job:
    """Everything rules read about one job script."""

    def __init__(self, source: Source, directives: DirectiveBlock, script: Script,
                 profile: Profile):
        self.source = source
        self.directives = directives
        self.script = script
        self.profile = profile
        d = directives
        self.nodes = self._count("nodes")
        self.ntasks = self._count("ntasks")
        hosts = host_count(d.value("nodelist") or "")
        if hosts and self.nodes.value is not None and self.nodes.value < hosts:
            # a host list raises the minimum node count to its length (src/sbatch/opt.c
            # _opt_verify; with a --nodes maximum below it sbatch refuses: SB106)
            self.nodes = Count(hosts, self.nodes.use, self.nodes.text)
        if self.nodes.value and self.ntasks.value and self.ntasks.value < self.nodes.value:
            # sbatch lowers the node count to the task count before submitting ("Warning: can't
            # run 2 processes on 3 nodes, setting nnodes to 2": src/sbatch/opt.c _opt_verify)
            self.nodes = Count(self.ntasks.value, self.nodes.use, self.nodes.text)
        self.ntasks_per_node = self._count("ntasks-per-node")
        self.cpus_per_task = self._count("cpus-per-task")
        self.gpus_per_node = self._gpus_per_node()
        self.export_mode = (d.value("export") or "ALL").split(",")[0].upper()
        #: what :meth:`_layout` reads of the job: its node, task and tasks-per-node counts and
        #: whether the directives give the latter two (a part of a :data:`_SHAPES` key)
        self._layout_inputs = (self.nodes.value, self.ntasks.value, self.ntasks.use is not None,
                               self.ntasks_per_node.value, self.ntasks_per_node.use is not None)
        self.steps: list[Step] = []
        self.launches: list[LaunchSite] = []
        self._derived: dict = {}
        self._steps()

    @property
    def provenance(self) -> Provenance | None:
        """Where the job's resources may come from besides this file (facts/provenance.py),
        computed once per job."""
        return self.derived(_provenance)

    @property
    def templated(self) -> bool:
        """Whether the file is a template or a generator's input (facts/provenance.py)."""
        return is_completed_elsewhere(self.provenance)

    def ordered_steps(self) -> list[Step]:
        """``steps`` in the order of their ``srun`` words in the text (computed once per job;
        several facts read it, none changes it)."""
        result: list[Step] = self.derived(_ordered_steps)
        return result

    def derived(self, compute):
        """``compute(job)``, computed once per job: for facts that several rules and the output
        layer read (the secret spans)."""
        if compute not in self._derived:
            self._derived[compute] = compute(self)
        return self._derived[compute]

    # ---- resources --------------------------------------------------------------------
    def _count(self, name: str) -> Count:
        use = self.directives.get(name)
        if use is None:
            return Count(None)
        return Count(parse_count(use.value), use, use.value)

    def _gpus_per_node(self) -> Count:
        d = self.directives
        use = d.get("gpus-per-node")
        if use:
            return Count(gpu_count(use.value), use, use.value)
        use = d.get("gres")
        if use and "gpu" in (use.value or ""):
            return Count(gpu_count(use.value), use, use.value)
        use = d.get("gpus-per-task")
        if use:
            per_task = gpu_count(use.value)
            tpn = self.tasks_per_node_default()
            if per_task is not None and tpn is not None:
                return Count(per_task * tpn, use, use.value)
            return Count(None, use, use.value)
        use = d.get("gpus")
        if use:
            total = gpu_count(use.value)
            if total is not None and self.nodes.value == 1:
                return Count(total, use, use.value)
            return Count(None, use, use.value)
        return Count(None)

    def gpu_requested(self) -> OptionUse | None:
        """The directive that requests GPUs, if any (every GPU option form)."""
        d = self.directives
        for name in ("gpus-per-node", "gpus", "gpus-per-task", "gpus-per-socket", "tres-per-task"):
            if d.get(name):
                if name == "tres-per-task" and "gpu" not in (d.value(name) or ""):
                    continue
                return d.get(name)
        use = d.get("gres")
        if use and "gpu" in (use.value or ""):
            return use
        return None

    def tasks_per_node_default(self) -> int | None:
        """Tasks per node of a plain ``srun CMD`` in this allocation."""
        if self.ntasks_per_node.known:
            return self.ntasks_per_node.value
        if self.ntasks.value is not None:
            if self.nodes.value:
                return math.ceil(self.ntasks.value / self.nodes.value)
            if self.ntasks.value == 1:
                return 1
            return None
        if self.ntasks.use is not None or self.ntasks_per_node.use is not None:
            return None
        return 1

    def multi_node(self) -> bool | None:
        """True when the job asks for more than one node, False for one, None if unknown."""
        if self.nodes.value is not None:
            return self.nodes.value > 1
        return None

    # ---- steps ------------------------------------------------------------------------
    def _steps(self) -> None:
        """The script's steps and launches, in one walk: a command string's commands come after
        the command that runs it, so its step (``by_task``, ``by_srun``) is known when they are
        read."""
        by_task: dict[int, Step] = {}
        by_srun: dict[int, Step] = {}
        for cmd in self.script.walk():
            if not cmd.words or cmd.in_substitution or not may_step_or_launch(cmd.words[0]):
                continue  # (most commands: neither a step nor a launch, told by the first word)
            step = self.step_for(cmd)
            if step is not None:
                self.steps.append(step)
                by_srun[id(cmd)] = step
                for c in step.task_commands:
                    by_task[id(c)] = step
            if cmd.calls is not None:
                continue  # (a call whose words a function's body now holds is read there)
            if step is not None:
                if step.task_scripts:
                    continue  # the nested commands are visited on their own
                words = step.argv
            else:
                words = cmd.words
            if not words or not may_launch(words[0]):
                continue  # (most commands)
            launch = find_launch(expand_arrays(words, cmd.script or self.script))
            if launch is None:
                continue
            if step is None:
                step = by_task.get(id(cmd))
                if step is None and any(id(a) in by_srun for a in cmd.ancestors()):
                    continue  # inside a step, but not what its tasks run (a wrapper's string)
            self.launches.append(LaunchSite(launch, cmd, step))

    def step_for(self, cmd: Command) -> Step | None:
        """The srun step that ``cmd`` starts, with its effective layout, or None when ``cmd``
        is not an srun command. ``Job.steps`` holds those of the script's commands outside
        command substitutions; this also reads one inside ``$(srun …)``."""
        # srun options in a literal array (`srun "${SRUN_ARGS[@]}" …`) are the array's words
        words = cmd.words
        if not words or base(words[0]) not in SRUN_OR_WRAPPER and "[@]" not in words[0].text:
            return None  # (most commands: _find_srun's answer, without expanding the arrays)
        script = cmd.script
        words = expand_arrays(words, script or self.script)
        # (the batch script's own commands only: a nested script's words may hold values the
        # batch shell expanded into them; the values are in the key all the same)
        key = (*[w.text for w in words], *[w.value for w in words], *self._layout_inputs) \
            if shell_parse.USE_FRAGMENTS and script is self.script else None
        shape = _SHAPES.get(key) if key is not None else None
        if shape is not None:
            return self._reshaped(cmd, words, shape)
        k = _find_srun(words) if words else None
        if k is None:
            return None
        options, option_words, hidden, i = _read_srun_options(words, k + 1,
                                                              self._may_hold_options)
        step = Step(cmd, words[k], options, option_words, words[i:], hidden)
        self._task(step, cmd, i)
        self._layout(step)
        if key is not None:
            _remember(key, _shape_of(step, words, k, i))
        return step

    def _reshaped(self, cmd: Command, words: list[Word], shape: _Shape) -> Step:
        """The step ``cmd`` starts, from the :class:`_Shape` of an srun command with the same
        words' texts in a job with the same :attr:`_layout_inputs`: what :meth:`step_for`
        makes, without reading the options or working out the layout again."""
        options = {name: words[j] if cut < 0 else words[j].tail(cut, value)
                   for name, j, cut, value in shape.options}
        option_words = {name: words[j] for name, j in shape.option_words}
        i = shape.end
        step = Step(cmd, words[shape.srun], options, option_words, words[i:])
        self._task(step, cmd, i)
        step.tasks_per_node, step.layout_note, step.nodes = shape.layout
        if shape.evidence:
            step.layout_evidence = [u for u in (self.ntasks_per_node.use, self.ntasks.use) if u]
        return step

    def _may_hold_options(self, w: Word) -> bool:
        """Whether a bare ``$X`` before srun's command may stand for srun options: its value is
        unknown, or it starts with ``-`` (``SRUN_ARGS="--wait=60"``); a known value naming a
        command (``LAUNCHER="torchrun …"``) is the command itself."""
        name = next((e.name for e in w.expansions if e.name), None)
        a = self.script.value_at(name, w.start) if name else None
        if a is None or a.value is None:  # value_at() finds only assignments with a value
            return True
        return (a.value.value or a.value.text).lstrip("\"'( \t\n\\").startswith("-")

    def _task(self, step: Step, cmd: Command, i: int) -> None:
        """What each task of the step runs."""
        argv = step.argv  # after srun's options, arrays of them expanded
        nested = cmd.nested
        if nested and (shell_string_index(argv) is not None or
                       any(s.kind in ("split", "file") for s in nested)):
            for s in nested:
                step.task_scripts.append(s)
                step.task_commands.extend(s.walk())
            return
        view = Command(argv, [], argv[0].start if argv else cmd.end, cmd.end, script=cmd.script)
        step.task_commands.append(view)

    def step_value(self, step: Step, name: str) -> int | None:
        """A step option's integer value; ``$SLURM_JOB_NUM_NODES`` and friends resolve to the
        job's own counts."""
        w = step.options.get(name)
        if w is None:
            return None
        value, symbol = count_of(w, self.script)
        if value is not None:
            return value
        if symbol == "nodes":
            return self.nodes.value
        if symbol == "tasks":
            return self._job_ntasks()
        return None

    def _ntasks_is_node_count(self, step: Step) -> bool:
        """Whether the step's ``--ntasks`` names its node count even when that count is not
        known: ``$SLURM_JOB_NUM_NODES``/``$SLURM_NNODES`` or a variable holding one (with no
        other ``--nodes``), or the same value as the step's ``--nodes``."""
        n, nodes = step.options.get("ntasks"), step.options.get("nodes")
        if n is None:
            return False
        _, tasks_symbol = count_of(n, self.script)
        if nodes is None:
            return tasks_symbol == "nodes"
        if n.text.strip('"') == nodes.text.strip('"'):
            return True
        _, nodes_symbol = count_of(nodes, self.script)
        return tasks_symbol is not None and tasks_symbol == nodes_symbol

    def _job_ntasks(self) -> int | None:
        if self.ntasks.known:
            return self.ntasks.value
        if self.ntasks_per_node.value is not None and self.nodes.value is not None:
            return self.ntasks_per_node.value * self.nodes.value
        return None

    def _layout(self, step: Step) -> None:
        """Effective tasks per node of ``step`` (slurm-facts.md §14)."""
        s_ntasks = self.step_value(step, "ntasks")
        s_nodes = self.step_value(step, "nodes")
        s_tpn = self.step_value(step, "ntasks-per-node")
        job_nodes = self.nodes.value
        nodes = s_nodes or job_nodes
        step.nodes = nodes
        has = step.options.__contains__
        if has("ntasks"):
            if s_ntasks is None:
                if self._ntasks_is_node_count(step):
                    # as many tasks as nodes: Slurm places one on each (slurm-facts.md §14)
                    step.tasks_per_node = 1
                    step.layout_note = "the step asks for one task per node"
                else:
                    step.layout_note = "the step's --ntasks is not a literal"
                return
            nodes = s_nodes or (min(job_nodes, s_ntasks) if job_nodes else None)
            step.nodes = nodes
            if s_tpn and nodes and s_tpn * nodes == s_ntasks:
                step.tasks_per_node = s_tpn
            elif nodes:
                step.tasks_per_node = math.ceil(s_ntasks / nodes)
            elif s_ntasks == 1:
                step.tasks_per_node = 1
            step.layout_note = f"the step asks for {s_ntasks} task(s)"
            return
        inherited = self._job_ntasks()
        if self.ntasks.use or self.ntasks_per_node.use:
            if self.ntasks.use and not self.ntasks.known or \
                    self.ntasks_per_node.use and not self.ntasks_per_node.known:
                step.layout_note = "the job's task count is not a literal"
                return
            ev = [u for u in (self.ntasks_per_node.use, self.ntasks.use) if u]
            step.layout_evidence = ev
            if has("ntasks-per-node") and s_tpn is not None and inherited is not None and \
                    nodes and s_tpn * nodes == inherited:
                step.tasks_per_node = s_tpn
                return
            if self.ntasks_per_node.known and (not has("nodes") or s_nodes == job_nodes):
                step.tasks_per_node = self.ntasks_per_node.value
            elif inherited is not None and nodes:
                step.tasks_per_node = math.ceil(inherited / nodes)
            elif self.ntasks.known and self.ntasks.value == 1:
                step.tasks_per_node = 1
            if has("ntasks-per-node"):
                step.layout_note = ("srun inherits the job's task count (SLURM_NTASKS) and "
                                    "ignores a lone --ntasks-per-node")
            else:
                step.layout_note = "srun inherits the job's task layout"
            return
        if has("ntasks-per-node"):
            step.tasks_per_node = s_tpn
            step.layout_note = "the step's --ntasks-per-node"
            return
        step.tasks_per_node = 1
        step.layout_note = "srun starts one task per node by default"

    # ---- environment ------------------------------------------------------------------
    def batch_assignments(self, name: str) -> list:
        """Assignments to ``name`` made by the batch shell (the script itself, not a task)."""
        return [a for a in self.script.assignments if a.name == name]

    @property
    def exports(self) -> Exports:
        """Where the batch shell exports each variable (facts/exports.py), computed once per
        job."""
        return self.derived(_exports)

    def exported(self, name: str, before: int | None = None) -> bool:
        """Whether the batch shell exports ``name`` just before offset ``before`` (at any point
        when None): ``export``/``declare -x``, ``set -a`` … ``set +a``, ``export -n``,
        ``unset`` (facts/exports.py has the bash facts)."""
        return self.derived(_exports).exported(name, before)  # (:attr:`exports`, one call less)


def _provenance(job: Job) -> Provenance | None:
    return provenance_of(job.source.text, job.source.path)


def _exports(job: Job) -> Exports:
    return Exports(job.script)


def _ordered_steps(job: Job) -> list[Step]:
    return sorted(job.steps, key=_SRUN_START)


#: a step's sort key in text order (a C getter: a lambda costs a call per step)
_SRUN_START = attrgetter("srun.start")


class _Shape(NamedTuple):
    """What :meth:`Job.step_for` read from one srun command, by position in its words (with
    arrays expanded) so that it holds no word and no script: the index of the ``srun`` word,
    each option's value (``(name, word index, cut, value)``: the word itself when ``cut`` is
    -1, else its :meth:`Word.tail` at ``cut`` with literal ``value``), each option's word
    (``(name, word index)``), the index of the command, and the layout
    ``(tasks_per_node, layout_note, nodes)`` with whether it cites the job's directives.
    (A NamedTuple: one is made for every step read afresh, in a cold lint too.)"""

    srun: int
    options: tuple[tuple[str, int, int, str | None], ...]
    option_words: tuple[tuple[str, int], ...]
    end: int
    layout: tuple[int | None, str, int | None]
    evidence: bool


#: srun commands of batch scripts read before, keyed by their words' texts, then their
#: values, then the job's :attr:`Job._layout_inputs`; a command whose reading asked the script
#: anything (a bare expansion in option position, an option count that is not a literal) is
#: not kept. Used while the fragment memo is on (``shell.parse.use_fragments``: the language
#: server, which lints every version of a document, and an edit leaves all steps but one as
#: they were); a cold lint reads most steps once, and keeping them costs it ~0.3%. Bounded:
#: emptied when it reaches :data:`_SHAPES_MAX` entries. Holds strings and ints only.
_SHAPES: dict[tuple, _Shape] = {}
_SHAPES_MAX = 512
#: the step options :meth:`Job._layout` reads with :func:`count_of`
_COUNTED = ("nodes", "ntasks", "ntasks-per-node")


def _remember(key: tuple, shape: _Shape | None) -> None:
    """Keep ``shape`` (None: not to be kept) in :data:`_SHAPES`, emptying it when full."""
    if shape is None:
        return
    if len(_SHAPES) >= _SHAPES_MAX:
        _SHAPES.clear()
    _SHAPES[key] = shape


def _shape_of(step: Step, words: list[Word], k: int, i: int) -> _Shape | None:
    """The :class:`_Shape` of ``step`` (read from ``words``, its ``srun`` at ``k`` and its
    command at ``i``), or None when its reading depended on more than the words' texts and the
    job's counts: a bare expansion before the command (:meth:`Job._may_hold_options` asks the
    script) or a counted option whose value is not literal (:func:`count_of` asks it)."""
    if any(w.bare_expansion for w in words[k + 1:i + 1]):
        return None
    if any(step.options[n].value is None for n in _COUNTED if n in step.options):
        return None
    where = {id(w): j for j, w in enumerate(words)}
    options: list[tuple[str, int, int, str | None]] = []
    for name, w in step.options.items():
        j = where.get(id(w))
        if j is not None:
            options.append((name, j, -1, None))
        else:  # an inline value: a tail of the option's own word
            whole = step.option_words[name]
            options.append((name, where[id(whole)], w.start - whole.start, w.value))
    return _Shape(k, tuple(options),
                  tuple((name, where[id(w)]) for name, w in step.option_words.items()), i,
                  (step.tasks_per_node, step.layout_note, step.nodes),
                  bool(step.layout_evidence))


def _find_srun(words: list[Word]) -> int | None:
    """Index of the ``srun`` word when ``words`` runs srun, directly or through wrappers
    (``timeout 2h srun …``, ``nohup srun …``); None otherwise."""
    i = 0
    for _ in range(MAX_WRAPPERS + 1):
        if i >= len(words):
            return None
        name = base(words[i])
        if name == "srun":
            return i
        if name not in WRAPPER_NAMES:
            return None  # (most commands: no wrapper to look through)
        w = wrapper_at(words, i)
        if w is None:
            return None
        i = skip_wrapper(words, i, w)
    return None


def _read_srun_options(words: list[Word], start: int, may_hold_options: Callable[[Word], bool]
                       ) -> tuple[dict[str, Word], dict[str, Word], list[Word], int]:
    """srun's getopt_long (``+`` mode, src/srun/opt.c): options until the first non-option word.

    Returns (canonical name -> value word, canonical name -> option word, the bare expansions
    met in option position, index of the command). Long names are resolved by unique prefix
    like getopt_long; the walk itself is :func:`facts.argv.walk`.
    """
    o = argv.walk(words, start, _srun_lookup, "getopt", may_hold_options)
    return o.values, o.words, o.hidden, o.end


@lru_cache(maxsize=4096)  # (option names as typed: bounded)
def _srun_lookup(name: str, long: bool) -> tuple[str, bool | None]:
    """srun's option ``name``: its canonical long name and whether it takes a required argument
    (None: srun does not know it; srun refuses it, the walk guesses). Memoised: a function of
    the option tables alone, asked for every option of every step."""
    table = opts.srun_options()
    if long:
        res = opts.resolve_long(name, table)
        return res.canonical or name, (res.option.arg == "required" if res.option else None)
    long_name = _srun_shorts().get(name, name)
    return opts.ALIASES.get(long_name, long_name), opts.SRUN_SHORT.get(name)


@cache
def _srun_shorts() -> dict[str, str]:
    return {o.short: o.long for o in opts.srun_options().values() if o.short}
