"""The process tree per srun step: its layout, GPUs, container, launcher with world size and
ranks per node, and the variables of the batch shell with whether they reach its tasks.

Slurm facts: srun takes ``SLURM_GPUS_PER_NODE``/``SLURM_GPUS_PER_TASK`` from the batch
environment as defaults (``src/srun/opt.c`` ``env_vars[]``), so a step without its own GPU
request gets the job's; ``--export`` (srun(1)): ``ALL`` (the default) passes srun's whole
environment, ``NONE`` none of it, a list only the named variables (and ``NAME=value`` items);
``#SBATCH --export=NONE`` reaches every step as ``SLURM_EXPORT_ENV=NONE`` unless the script
exports ``SLURM_EXPORT_ENV`` itself (sbatch(1); verified on 22.05.8). A batch-shell variable
reaches srun's environment only when exported (bash(1) ``export``, ``set -a``) or given as a
prefix assignment of the srun command. torchrun's world is ``nnodes × nproc_per_node``
(torch/distributed/run.py), ``accelerate launch --num_processes`` is the total
(accelerate/commands/launch.py), ``deepspeed --num_nodes × --num_gpus``
(deepspeed/launcher/runner.py), ``mpirun -np`` the total and ``-npernode`` per node (Open MPI
mpirun(1)).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from ..backref import Owner
from ..job import Job, LaunchSite, Step
from ..launchers import Launch
from ..options import version_key
from ..shell.model import Assignment, Script
from .control import agents_per_node
from .layout import (
    Component,
    Layout,
    Request,
    StepRequest,
    components,
    count_of,
    gpu_count,
    parse_count,
    step_layout,
)
from .values import Evaluator, Place, Scope

#: launch kinds (launchers.Launch flavour) as ``show`` names them
LAUNCHER_NAMES = {"torchrun": "torchrun", "launch": "torchrun", "accelerate": "accelerate",
                  "colossalai": "colossalai", "deepspeed": "deepspeed", "mpirun": "mpirun",
                  "mpiexec": "mpirun", "orterun": "mpirun"}


@dataclass
class EnvVar:
    """A batch-shell variable as a step's tasks see it: its scope, whether it reaches their
    environment, its literal value when known, and the span of the assignment that sets it."""

    name: str
    scope: Scope
    exported: bool
    value: str | None
    start: int
    end: int


@dataclass
class StepFacts:
    """One srun step: the Job's Step, its effective layout, GPUs, container image, launcher
    (``torchrun|accelerate|deepspeed|mpirun|colossalai|srun`` or None), the launch's world size
    and ranks per node, the variables reaching its tasks (by name) and the CPUs each task gets
    (None when not known: not a literal, or from an exported ``SRUN_CPUS_PER_TASK``)."""

    step: Step
    line: int
    layout: Layout
    gpus_per_node: int | None
    gpus_per_task: int | None
    container: str | None
    launcher: str | None
    launch: Launch | None
    world_size: int | None
    ranks_per_node: int | None
    env: Mapping[str, EnvVar] = field(default_factory=dict)
    cpus_per_task: int | None = None


@dataclass
class Facts:
    """Everything ``show`` prints and rules read about one job: its components and steps.
    The job caches its facts (:meth:`Job.derived`): nothing here holds the job but weakly
    (``LazyEnv``), so a dropped lint forms no reference cycle (sbatch_lsp/backref.py)."""

    components: list[Component]
    steps: list[StepFacts]
    evaluator: Evaluator
    _by_step: dict[int, StepFacts] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_step = {id(sf.step): sf for sf in self.steps}

    def of(self, step: Step | None) -> StepFacts | None:
        """The facts of ``step`` (a step of this job's ``Job.steps``), or None for None or a
        step that is not one of them: a dictionary lookup, where searching ``steps`` for each
        step of a script costs the square of their number."""
        return self._by_step.get(id(step)) if step is not None else None


def facts_of(job: Job) -> Facts:
    """The job's facts, computed once per Job."""
    return job.derived(_build)


def _build(job: Job) -> Facts:
    comps = components(job.directives)
    ev = Evaluator(job.script, job.exports.exported)  # (no closure over the job: see Facts)
    sites: dict[int, list[LaunchSite]] = {}
    for site in job.launches:
        if site.step is not None:
            sites.setdefault(id(site.step), []).append(site)
    layouts: dict[tuple, Layout] = {}  # (steps often ask alike: one layout each)
    # (most scripts never export SRUN_CPUS_PER_TASK: then no step asks where it is exported)
    cpus_exported = job.exported("SRUN_CPUS_PER_TASK")
    steps = [_step(job, comps, ev, s, sites.get(id(s), []), layouts, cpus_exported)
             for s in job.ordered_steps()]
    return Facts(comps, steps, ev)


#: an option the step does not give
_NOT_GIVEN = Request()


def _request(job: Job, step: Step, name: str) -> tuple[Request, str | None]:
    w = step.options.get(name)
    if w is None:
        return _NOT_GIVEN, None
    value, symbol = count_of(w, job.script)
    return Request(True, value), symbol


def _het_group(step: Step) -> int | None:
    w = step.options.get("het-group")
    if w is None:
        return 0
    return parse_count(w.value) if w.value is not None and w.value.isdigit() else None


def _step(job: Job, comps: list[Component], ev: Evaluator, step: Step,
          sites: list[LaunchSite], layouts: dict[tuple, Layout],
          cpus_exported: bool) -> StepFacts:
    """The facts of ``step``; ``layouts`` holds the layout of each request met so far, keyed
    by :func:`_layout_key` (a request names its component: :func:`step_layout` is a function
    of it); ``cpus_exported``: whether the batch shell ever exports ``SRUN_CPUS_PER_TASK``."""
    group = _het_group(step)
    comp = comps[group] if group is not None and group < len(comps) else None
    nodes, nodes_symbol = _request(job, step, "nodes")
    ntasks, tasks_symbol = _request(job, step, "ntasks")
    tpn, _ = _request(job, step, "ntasks-per-node")
    if comp is not None:
        if nodes_symbol == "nodes" and nodes.value is None:
            nodes = Request(True, comp.nodes.value)
        if tasks_symbol == "nodes" and ntasks.value is None:
            ntasks = Request(True, (nodes.value if nodes.given else comp.nodes.value))
        if tasks_symbol == "tasks" and ntasks.value is None:
            ntasks = Request(True, comp.tasks)
    same_nodes = tasks_symbol is not None and (tasks_symbol == nodes_symbol or (
        tasks_symbol == "nodes" and not nodes.given))
    dist = step.options.get("distribution")
    request = StepRequest(nodes, ntasks, tpn, dist.value if dist is not None else None,
                          same_nodes or (step.options.get("ntasks") is not None and
                                         step.options.get("nodes") is not None and
                                         step.options["ntasks"].text.strip('"') ==
                                         step.options["nodes"].text.strip('"')), group,
                          _step_cpus(job, step, comp, cpus_exported),
                          "overcommit" in step.options)
    if comp is None:
        layout = Layout(None, None, None, None, "the step's --het-group is not one component",
                        None)
    else:
        key = _layout_key(request)
        found = layouts.get(key)
        layout = found if found is not None else layouts.setdefault(key,
                                                                     step_layout(comp, request))
    gpn, gpt = _gpus(step, comp, layout)
    image = step.options.get("container-image") or step.options.get("container-name")
    site = None
    for s in sites:  # (the first launch not a python one; a loop: asked per step)
        if s.launch.kind != "python":
            site = s
            break
    launcher = LAUNCHER_NAMES.get(site.launch.flavour) if site is not None else None
    if site is None and sites:  # (every launch of the step a python one)
        launcher = "srun"
    script = site.command.script if site is not None and site.command.script else job.script
    even = layout.tasks_per_node if isinstance(layout.tasks_per_node, int) else None
    agents = agents_per_node(job, site.command, even, layout.nodes) \
        if site is not None and even is not None else even
    world, per_node = _world(site.launch if site else None, launcher, layout, agents, gpn, script)
    facts = StepFacts(step, job.source.line_of(step.srun.start) + 1, layout, gpn, gpt,
                      (image.value or image.text) if image is not None else None,
                      launcher, site.launch if site else None, world, per_node)
    facts.env = LazyEnv(job, ev, step)
    facts.cpus_per_task = request.cpus_per_task
    return facts


def _layout_key(r: StepRequest) -> tuple:
    """Every field of ``r`` in one flat tuple of ints, strings, bools and None: the layouts
    memo's key (a StepRequest's dataclass hash and equality call one Python method per nested
    Request; a flat tuple hashes and compares in C)."""
    return (r.nodes.given, r.nodes.value, r.ntasks.given, r.ntasks.value,
            r.ntasks_per_node.given, r.ntasks_per_node.value, r.distribution,
            r.node_count_tasks, r.het_group, r.cpus_per_task, r.overcommit)


def _step_cpus(job: Job, step: Step, comp: Component | None,
               cpus_exported: bool) -> int | None:
    """CPUs per task of a step: its ``--cpus-per-task``; else, from 22.05 through 23.02, one
    (srun does not read ``SLURM_CPUS_PER_TASK``: RELEASE_NOTES at slurm-22-05-0-1 and
    slurm-23-11-0-1), on other releases the job's; None when not a literal or when an exported
    ``SRUN_CPUS_PER_TASK`` sets it. ``cpus_exported`` False: the batch shell never exports
    that variable (``job.exported`` with no offset), so no step need ask where."""
    w = step.options.get("cpus-per-task")
    if w is not None:
        return parse_count(w.value)
    prefixes = step.command.assignments  # (most srun lines: none, and no generator made)
    if cpus_exported and job.exported("SRUN_CPUS_PER_TASK", step.command.start) or \
            prefixes and any(a.name == "SRUN_CPUS_PER_TASK" for a in prefixes):
        return None
    if (22, 5) <= version_key(job.profile.slurm_version) < (23, 11):
        return 1
    return comp.cpus_per_task if comp is not None else None


def _gpus(step: Step, comp: Component | None,
          layout: Layout) -> tuple[int | None, int | None]:
    """GPUs per node and per task of a step: its own request, else the component's."""
    per_task: int | None = (gpu_count(step.opt("gpus-per-task")) if "gpus-per-task" in step.options
                            else None)
    if "gpus-per-node" in step.options:
        return gpu_count(step.opt("gpus-per-node")), per_task
    if "gres" in step.options and "gpu" in (step.opt("gres") or ""):
        return gpu_count(step.opt("gres")), per_task
    if per_task is not None:
        tpn = layout.tasks_per_node
        return (per_task * tpn if isinstance(tpn, int) else None), per_task
    if "gpus" in step.options:
        return (gpu_count(step.opt("gpus")) if layout.nodes == 1 else None), per_task
    if comp is None:
        return None, None
    if comp.gpus_per_task is not None and isinstance(layout.tasks_per_node, int):
        return comp.gpus_per_task * layout.tasks_per_node, comp.gpus_per_task
    return comp.gpus_per_node, comp.gpus_per_task


def _world(la: Launch | None, launcher: str | None, layout: Layout, agents: int | None,
           gpn: int | None, script: Script) -> tuple[int | None, int | None]:
    """(world size, ranks per node) of a step's launch; None where a count is unknown (also the
    world size of a launcher started several times per node, which forms no world). ``agents``
    is how many tasks of one node run the launch (None when unknown). A count given through a
    variable is followed to its literal assignment in the script that expands it
    (``--nproc_per_node $GPUS_PER_NODE`` after ``GPUS_PER_NODE=8``)."""
    if launcher == "srun":
        return layout.tasks, agents
    if la is None or la.hidden:
        return None, None
    if launcher == "mpirun":
        return _mpirun(la)
    nnodes = _nnodes(la, layout, script)
    if launcher == "accelerate":
        total = _literal(la, "num-processes", script)
        per = total // nnodes if total is not None and nnodes and total % nnodes == 0 else None
        return total, per
    nproc_text = la.arg("nproc-per-node")
    if nproc_text == "gpu" or (nproc_text is None and launcher == "deepspeed" and
                               "nproc-per-node" not in la.args):
        nproc = gpn
    else:
        nproc = _literal(la, "nproc-per-node", script) if "nproc-per-node" in la.args else 1
    if nproc is None or nnodes is None:
        return None, None
    if agents is not None and agents > 1:
        # several launcher agents per node (SB201): each claims a place in a rendezvous sized
        # for one agent per node, so no world of the declared size forms; the processes started
        # per node are still nproc x agents
        return None, nproc * agents
    return nnodes * nproc, nproc * agents if agents is not None else None


def _literal(la: Launch, name: str, script: Script) -> int | None:
    w = la.args.get(name)
    return count_of(w, script)[0] if w is not None else None


def _nnodes(la: Launch, layout: Layout, script: Script) -> int | None:
    w = la.args.get("nnodes")
    if w is None:
        return 1  # torchrun's default --nnodes=1:1 (each node its own world)
    if w.value is not None:
        lo, _, hi = w.value.partition(":")
        return parse_count(lo) if not hi or hi == lo else None
    value, symbol = count_of(w, script)
    if symbol == "nodes" or (w.expansions and w.expansions[0].name == "SLURM_STEP_NUM_NODES"):
        return layout.nodes
    return value


def _mpirun(la: Launch) -> tuple[int | None, int | None]:
    """(total processes, processes per node) of an mpirun/mpiexec launch as its options give
    them (launchers.find_launch reads them with facts/argv.py's mpi walker): ``-np``/``-n``
    the total, ``-npernode``/``-N``/``-ppn`` or ``--map-by ppr:N:node`` per node (Open MPI
    mpirun(1) v4.1 "Mapping, Ranking, and Binding"; MPICH mpiexec(1) ``-ppn``)."""
    world = parse_count(la.arg("np")) if la.arg("np") else None
    per = parse_count(la.arg("npernode")) if la.arg("npernode") else None
    ppr = (la.arg("map-by") or "").split(":")
    if len(ppr) >= 3 and ppr[0].lower() == "ppr" and ppr[2].lower().startswith("node"):
        per = parse_count(ppr[1])
    return world, per


def _export_mode(job: Job, step: Step) -> tuple[str, dict[str, str | None]]:
    """The step's export mode (``ALL``, ``NONE`` or ``LIST``) and the variables it names."""
    mode, named = step.exports()
    if mode is not None:
        return mode, named
    a = job.script.value_at("SLURM_EXPORT_ENV", step.command.start)
    if a is not None and a.value is not None and a.value.value and \
            job.exported("SLURM_EXPORT_ENV", step.command.start):
        text = a.value.value.upper()
    else:
        text = job.export_mode
    return ("NONE" if text.startswith(("NONE", "NIL")) else "ALL" if "ALL" in text or not text
            else "LIST"), {}


def passes_variable(job: Job, step: Step, name: str) -> bool:
    """Whether the step's ``--export`` (or the job's, through ``SLURM_EXPORT_ENV``) lets the
    batch shell's exported variable ``name`` reach its tasks: ``ALL``, or a list naming it."""
    mode, named = _export_mode(job, step)
    return mode == "ALL" or name in named


class LazyEnv(Mapping[str, EnvVar]):
    """A step's :func:`_env`, computed when read: it holds every batch-shell variable set before
    the step, so a script with S steps and V variables pays S × V evaluations for all of it. A
    lookup of one name (``env.get("WORLD_SIZE")``, ``name in env``) evaluates that name only
    and gives what the whole mapping holds for it; iterating computes the whole of it once.
    The job is held weakly (it caches this mapping): reading needs the job alive."""

    _job: Owner[Job] = Owner()

    def __init__(self, job: Job, ev: Evaluator, step: Step):
        self._job, self._ev, self._step = job, ev, step
        self._full: dict[str, EnvVar] | None = None
        self._one: dict[str, EnvVar | None] = {}

    def _read(self) -> dict[str, EnvVar]:
        if self._full is None:
            self._full = _env(self._job, self._ev, self._step)
        return self._full

    def _lookup(self, name: str) -> EnvVar | None:
        """What the whole mapping holds for ``name``, None when absent."""
        if self._full is not None:
            return self._full.get(name)
        if name not in self._one:
            self._one[name] = _env_one(self._job, self._ev, self._step, name)
        return self._one[name]

    def __getitem__(self, name: str) -> EnvVar:
        found = self._lookup(name)
        if found is None:
            raise KeyError(name)
        return found

    def get(self, name: str, default: EnvVar | None = None) -> EnvVar | None:  # type: ignore[override]
        """``Mapping.get`` without its KeyError: rules ask every step for a name most
        steps lack (``WORLD_SIZE``, ``MASTER_ADDR``), and a raised and caught exception per
        step was most of such a lookup's cost."""
        found = self._lookup(name)
        return default if found is None else found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._lookup(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


def _visible(a: Assignment, at: int, step: Step) -> bool:
    """Whether batch-shell assignment ``a`` gives the step at offset ``at`` a variable."""
    if a.start >= at or a.local or a.name == "SLURM_EXPORT_ENV":
        return False
    # `X=1 cmd`: only that command sees it
    return not (a.command is not None and a.command.words and a.command is not step.command and
                (a.command.words[0].value or "") not in ("export", "declare", "typeset"))


def _by_name(job: Job) -> dict[str, list[Assignment]]:
    """The batch script's assignments by name, in the script model's order."""
    out: dict[str, list[Assignment]] = {}
    for a in job.script.assignments:
        out.setdefault(a.name, []).append(a)
    return out


def _env(job: Job, ev: Evaluator, step: Step) -> dict[str, EnvVar]:
    """The batch shell's variables at the step, and whether each reaches its tasks."""
    mode, named = _export_mode(job, step)
    at = step.command.start
    names: dict[str, Assignment] = {}
    for a in job.script.assignments:
        if _visible(a, at, step):
            names[a.name] = a
    for a in step.command.assignments:  # `X=1 srun …`
        names[a.name] = a
    out = {name: _env_var(job, ev, step, mode, named, a) for name, a in names.items()}
    for name in named:
        var = _named_var(step, mode, named, name, out.get(name))
        if var is not None:
            out[name] = var
    return out


def _env_one(job: Job, ev: Evaluator, step: Step, name: str) -> EnvVar | None:
    """``_env(job, ev, step).get(name)``, evaluating ``name`` only."""
    at = step.command.start
    a = None
    for found in reversed(job.derived(_by_name).get(name, ())):  # (a loop: no generator)
        if _visible(found, at, step):
            a = found
            break
    for p in step.command.assignments:  # `X=1 srun …`
        if p.name == name:
            a = p
    if a is None and ("export" not in step.options or name not in step.exports()[1]):
        # (most lookups: no such variable, and most steps have no --export to read)
        return None  # (the step's mode is not needed)
    mode, named = _export_mode(job, step)  # (``named`` is the step's own list, as above)
    var = _env_var(job, ev, step, mode, named, a) if a is not None else None
    if name in named:
        var = _named_var(step, mode, named, name, var) or var
    return var


def shell_variable(job: Job, name: str, at: int) -> EnvVar | None:
    """The batch shell's variable ``name`` just before offset ``at`` (a command the batch shell
    runs itself): the last assignment before it that is not ``local`` nor a prefix of another
    command, with ``exported`` telling whether the batch shell exports it there (so a program
    it starts inherits it: bash(1) "ENVIRONMENT"); None when the script sets nothing before
    ``at``."""
    a = next((a for a in reversed(job.derived(_by_name).get(name, ())) if a.start < at and
              not a.local and not (a.command is not None and a.command.words and
                                   (a.command.words[0].value or "") not in
                                   ("export", "declare", "typeset"))), None)
    if a is None:
        return None
    held = job.script.value_at(name, at)
    word = held.value if held is not None else a.value
    ev = facts_of(job).evaluator
    scope = Scope.CONST if word is not None and word.value is not None else \
        ev.scope(word, Place.BATCH, job.script) if word is not None else Scope.SUBMIT
    return EnvVar(name, scope, job.exported(name, at), word.value if word is not None else None,
                  a.start, a.end)


def _env_var(job: Job, ev: Evaluator, step: Step, mode: str, named: dict[str, str | None],
             a: Assignment) -> EnvVar:
    """The variable ``a`` (the last visible assignment of its name) gives the step."""
    name, at = a.name, step.command.start
    prefix = a in step.command.assignments
    exported = prefix or job.exported(name, at)
    reaches = exported and (mode == "ALL" or name in named)
    held = job.script.value_at(name, at) if not prefix else a
    word = held.value if held is not None and held.value is not None else a.value
    # no value in the script: the submitting environment's (sbatch --export=ALL)
    scope = ev.scope(word, Place.BATCH, job.script) if word is not None else Scope.SUBMIT
    literal = word.value if word is not None else None
    if literal is not None:
        scope = Scope.CONST
    return EnvVar(name, scope, reaches, literal, a.start, a.end)


def _named_var(step: Step, mode: str, named: dict[str, str | None], name: str,
               var: EnvVar | None) -> EnvVar | None:
    """The variable a ``--export=NAME=value`` item gives the step (None: it gives none, or
    the batch shell's ``var`` wins)."""
    text = named[name]
    if text is None or name in ("ALL", "NONE", "NIL"):
        return None
    if mode == "ALL" and var is not None and var.exported:
        # srun(1) --export (22.05): with ALL "all user environment variables will be loaded
        # and will take precedence over any explicitly given environment variables"
        return None
    ow = step.options["export"]
    return EnvVar(name, Scope.CONST if "$" not in text else Scope.JOB, True,
                  text.strip("'\"") if "$" not in text else None, ow.start, ow.end)
