"""Resources per heterogeneous-job component, and each srun step's layout and task placement.

Slurm facts (verified on Slurm 22.05.8; slurm-facts.md §14 and the slurm tier): inside a batch
job srun takes ``SLURM_NTASKS``, ``SLURM_NTASKS_PER_NODE`` and ``SLURM_JOB_NUM_NODES`` from its
environment as defaults (``src/srun/opt.c`` ``env_vars[]``), so a step inherits the
allocation's task count and a lone ``srun --ntasks-per-node=1`` is ignored; with no task count
anywhere srun starts one task per node; ``--ntasks`` equal to the node count places one task on
each node; ``--ntasks`` without ``--ntasks-per-node`` may place tasks unevenly (4 tasks on 2 nodes
ran 3 + 1), so that layout is unknown. ``--ntasks`` below the node count shrinks the node count
(srun ``opt.c``: "can't run N processes on M nodes, setting nnodes to N"). Task ids are placed by
the default ``block`` distribution (srun(1) ``--distribution``): node ``i`` of ``k`` tasks per node
runs ``i*k … i*k+k-1``; ``cyclic`` deals them round-robin. In a heterogeneous job a step runs in
component 0 unless ``--het-group`` names another (srun(1) ``--het-group``, default 0).

Steps srun refuses (verified on Slurm 22.05.8, the slurm tier's layout differential): a step
asking for more nodes than the job holds ("Only allocated 1 nodes asked for 2":
``src/srun/libsrun/srun_job.c`` ``job_step_create_allocation``), and a step whose tasks need more
CPUs than the job holds on the step's nodes ("Unable to create step …: More processors requested
than permitted", ``ESLURM_TOO_MANY_REQUESTED_CPUS`` from ``src/slurmctld/step_mgr.c``) unless it
says ``--overcommit``. A job holds the CPUs of its own tasks on each node (``select/cons_tres``,
the usual GPU-cluster setting); a whole-node allocation (``--exclusive``) holds more, so no CPU
refusal is predicted for it, and since whole cores (hyper-threads) may hold more CPUs than
the tasks use, a CPU refusal makes the layout unknown rather than certain. On 22.05 a step's tasks take one CPU each unless the step says
``--cpus-per-task`` (srun no longer reads ``SLURM_CPUS_PER_TASK``: 22.05 RELEASE_NOTES).
A step with ``--nodes`` but no ``--ntasks`` still takes the job's ``SLURM_NTASKS`` and, when the
job's ``--ntasks-per-node`` no longer fits, warns "can't honor --ntasks-per-node … Ignoring"
(``src/srun/libsrun/opt.c``): ``srun --nodes=1`` in a 2 × 2 job asks for 4 tasks on one node.
Without ``--nodes`` and any job-wide count (``--ntasks``, ``--gpus``, ``--nodelist``) sbatch
allocates one node (sbatch(1) ``--nodes``: "enough nodes to satisfy the requested resources as
expressed by per-job specification options"); one node also holds ``--gpus=1`` (an array job's
usual request: each array task is a job of its own with the same resources, sbatch(1)
``--array``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..directives import DirectiveBlock, OptionUse
from ..shell.model import Script, Word
from ..values import format_time, time_seconds

NODE_COUNT_VARS = frozenset({"SLURM_JOB_NUM_NODES", "SLURM_NNODES"})


def count_of(word: Word, script: Script, depth: int = 0) -> tuple[int | None, str | None]:
    """A step option's count: (its integer value when literal, the name of what it stands
    for). ``$SLURM_JOB_NUM_NODES`` and ``$SLURM_NNODES`` stand for ``"nodes"``, ``$SLURM_NTASKS``
    for ``"tasks"``, a script variable for what its assignment holds (the Megatron-LM template's
    ``NNODES=${SLURM_NNODES}`` … ``srun --ntasks=${NNODES}``); any other single ``$NAME`` for
    itself."""
    if word.value is not None:
        return parse_count(word.value), None
    name = sole_reference(word)
    if name is None:
        return None, None
    if name in NODE_COUNT_VARS:
        return None, "nodes"
    if name in ("SLURM_NTASKS", "SLURM_NPROCS"):
        return None, "tasks"
    a = script.value_at(name, word.start)
    if a is not None and a.value is not None and depth < 8 and not a.append and \
            script.certain(a, word.start):
        value, symbol = count_of(a.value, script, depth + 1)
        if value is not None or symbol is not None:
            return value, symbol
    return None, name


def sole_reference(w: Word) -> str | None:
    """The variable name when ``w`` is exactly ``$NAME``, ``${NAME}`` or either in double
    quotes; None otherwise."""
    refs = [e.name for e in w.expansions if e.name]
    if len(refs) == 1 and w.text.strip('"') in ("$" + refs[0], "${" + refs[0] + "}"):
        return refs[0]
    return None


#: a count as sbatch and srun read it: digits, a k/m suffix, the minimum of a range
COUNT = re.compile(r"\s*(\d+)([kKmM]?)(?:-\d+[kKmM]?)?\s*")


def parse_count(text: str | None) -> int | None:
    """An integer count (``8``, ``2-4`` -> 2, ``1k`` -> 1024); None when not a literal."""
    if text is None:
        return None
    if text.isdecimal():
        return int(text)  # (most counts: digits alone, what COUNT's \d+ reads)
    m = COUNT.fullmatch(text)
    if not m:
        return None
    n = int(m.group(1))
    return n * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]


def gpu_count(text: str | None) -> int | None:
    """GPUs in ``[type:]N`` (``--gpus-per-node``) or a ``--gres`` list (``gpu:a100:8``)."""
    if not text:
        return None
    for item in text.split(","):
        parts = item.strip().split(":")
        if parts[0] in ("gpu", "gres/gpu") and len(parts) == 1:
            return 1
        if parts[0] in ("gpu", "gres/gpu") or (len(parts) <= 2 and "gres" not in text):
            n = parse_count(parts[-1].split("(")[0])
            if n is not None:
                return n
    return None


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class Request:
    """One count as requested: ``given`` when the option is present, ``value`` when it is a
    literal (or resolves to one). Never changed, hashable."""

    given: bool = False
    value: int | None = None


@dataclass
class Component:
    """The resources of one heterogeneous-job component (component 0 for ordinary jobs).

    ``tasks_per_node`` is known only when every node runs the same number of tasks.
    """

    index: int
    nodes: Request
    ntasks: Request
    ntasks_per_node: Request
    gpus_per_node: int | None
    gpus_per_task: int | None
    partition: str | None
    time: str | None
    options: dict[str, OptionUse] = field(default_factory=dict)

    @property
    def cpus_per_task(self) -> int | None:
        """``--cpus-per-task`` (1 when not given; None when not a literal)."""
        use = self.options.get("cpus-per-task")
        return 1 if use is None else parse_count(use.value)

    @property
    def whole_nodes(self) -> bool:
        """Whether the job holds its nodes whole (``--exclusive``): more CPUs than its tasks'."""
        return "exclusive" in self.options

    def task_counts(self) -> list[int] | None:
        """Tasks of the job on each node, largest first (the CPUs it holds there, in tasks), or
        None when unknown. ``--ntasks`` over fewer nodes fills them in block order."""
        n, t = self.nodes.value, self.tasks
        if n is None or t is None or n <= 0:
            return None
        if isinstance(self.tasks_per_node, int) and self.tasks_per_node * n == t:
            return [self.tasks_per_node] * n
        if self.ntasks_per_node.given:
            return None
        return sorted([t // n + (1 if i < t % n else 0) for i in range(n)], reverse=True)

    @property
    def tasks(self) -> int | None:
        """SLURM_NTASKS as sbatch sets it: ``--ntasks``, else nodes × ``--ntasks-per-node``,
        else one per node when no task option is given."""
        if self.ntasks.given:
            return self.ntasks.value
        if self.ntasks_per_node.given:
            if self.ntasks_per_node.value is not None and self.nodes.value is not None:
                return self.ntasks_per_node.value * self.nodes.value
            return None
        return self.nodes.value

    @property
    def tasks_per_node(self) -> int | None:
        n, t = self.nodes.value, self.tasks
        if self.ntasks_per_node.value is not None and (
                not self.ntasks.given or t == (n or 0) * self.ntasks_per_node.value):
            return self.ntasks_per_node.value
        if t is not None and (t == n or n == 1):
            return 1 if t == n else t
        if not self.ntasks.given and not self.ntasks_per_node.given and n is not None:
            return 1
        return None


def components(block: DirectiveBlock) -> list[Component]:
    """Every heterogeneous-job component's resources, in order (one for ordinary jobs)."""
    count = 1 + max([o.component for o in block.options] or [0])
    return [_component(block, k) for k in range(count)]


def _component(block: DirectiveBlock, k: int) -> Component:
    eff = block.effective(k)

    def request(name: str) -> Request:
        use = eff.get(name)
        return Request(use is not None, parse_count(use.value) if use is not None else None)

    nodes, ntasks, tpn = request("nodes"), request("ntasks"), request("ntasks-per-node")
    # one GPU for the job (--gpus=1) fits on one node, like one task does
    one_gpu = "gpus" in eff and (gpu_count(eff["gpus"].value) or 0) <= 1 and \
        gpu_count(eff["gpus"].value) is not None
    if not nodes.given and (ntasks.value == 1 or not ntasks.given and "nodelist" not in eff
                            and ("gpus" not in eff or one_gpu)):
        nodes = Request(False, 1)
    per_task = gpu_count(eff["gpus-per-task"].value) if "gpus-per-task" in eff else None
    comp = Component(k, nodes, ntasks, tpn, None, per_task,
                     eff["partition"].value if "partition" in eff else None,
                     _time(eff.get("time")), eff)
    comp.gpus_per_node = _gpus_per_node(eff, comp)
    return comp


def _time(use: OptionUse | None) -> str | None:
    secs = time_seconds(use.value or "") if use is not None else None
    if secs is None:
        return None
    return "UNLIMITED" if secs < 0 else format_time(secs)


def _gpus_per_node(eff: dict[str, OptionUse], comp: Component) -> int | None:
    if "gpus-per-node" in eff:
        return gpu_count(eff["gpus-per-node"].value)
    if "gres" in eff and "gpu" in (eff["gres"].value or ""):
        return gpu_count(eff["gres"].value)
    if comp.gpus_per_task is not None:
        tpn = comp.tasks_per_node
        return comp.gpus_per_task * tpn if tpn is not None else None
    if "gpus" in eff and comp.nodes.value == 1:
        return gpu_count(eff["gpus"].value)
    return None


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class StepRequest:
    """An srun step's own layout options: each a Request; ``node_count_tasks`` is True when
    its ``--ntasks`` names the node count even though that count is not a literal
    (``--ntasks="$SLURM_JOB_NUM_NODES"``, or the same text as the step's ``--nodes``)."""

    nodes: Request
    ntasks: Request
    ntasks_per_node: Request
    distribution: str | None = None
    node_count_tasks: bool = False
    het_group: int | None = 0
    #: the step's own ``--cpus-per-task`` (1 when not given, None when not a literal)
    cpus_per_task: int | None = 1
    overcommit: bool = False


@dataclass
class Layout:
    """A step's effective layout: nodes, tasks, tasks per node (an int when even, a per-node
    list when known and uneven, None when unknown), the task ids on each node, and why."""

    nodes: int | None
    tasks: int | None
    tasks_per_node: int | list[int] | None
    placement: list[list[int]] | None
    note: str
    component: int | None = 0
    #: why srun refuses (or may refuse) to start the step, then every count is None; or None
    refused: str | None = None

    @property
    def max_per_node(self) -> int | None:
        """The most tasks any node runs (at least this many when the layout is uneven and
        ``tasks`` exceeds ``nodes``, by the pigeonhole principle)."""
        if isinstance(self.tasks_per_node, int):
            return self.tasks_per_node
        if isinstance(self.tasks_per_node, list):
            return max(self.tasks_per_node)
        if self.tasks is not None and self.nodes:
            return -(-self.tasks // self.nodes)
        return None


def step_layout(job: Component, step: StepRequest) -> Layout:
    """The layout Slurm gives ``step`` inside component ``job`` (the module docstring has the
    Slurm facts)."""
    nodes, tasks, k, note = _counts(job, step)
    if tasks == 1:
        nodes = 1
    if nodes is not None and tasks is not None and tasks < nodes:
        nodes = tasks  # srun shrinks the node count to the task count
    refused = _refusal(job, step, nodes, tasks)
    if refused is not None:
        return Layout(None, None, None, None, refused, step.het_group, refused)
    per_node: int | None = None
    if nodes is not None and tasks is not None:
        if tasks == nodes:
            per_node = 1
        elif nodes == 1:
            per_node = tasks
        elif k is not None and k * nodes == tasks:
            per_node = k
    elif step.node_count_tasks:
        per_node = 1
    placement = _place(nodes, per_node, step.distribution)
    return Layout(nodes, tasks, per_node, placement, note, step.het_group)


def _counts(job: Component,
            step: StepRequest) -> tuple[int | None, int | None, int | None, str]:
    """(nodes, tasks, the tasks-per-node figure that applies, why) of a step."""
    nodes = step.nodes.value if step.nodes.given else job.nodes.value
    if step.ntasks.given:
        k = step.ntasks_per_node.value
        if step.ntasks.value is None and step.node_count_tasks:
            return nodes, nodes, 1, "the step asks for one task per node"
        return nodes, step.ntasks.value, k, "the step's --ntasks"
    if job.ntasks.given or job.ntasks_per_node.given:
        k = job.ntasks_per_node.value if not job.ntasks.given or \
            job.tasks == (job.nodes.value or 0) * (job.ntasks_per_node.value or 0) else None
        if step.nodes.given and step.nodes.value != job.nodes.value:
            # SLURM_NTASKS still applies; the job's --ntasks-per-node is ignored when it no
            # longer fits ("can't honor --ntasks-per-node", module docstring)
            fits = k is not None and nodes is not None and job.tasks == k * nodes
            return nodes, job.tasks, k if fits else None, \
                "srun inherits the job's task count (SLURM_NTASKS) on the step's --nodes"
        note = "srun inherits the job's task count (SLURM_NTASKS)"
        if step.ntasks_per_node.given:
            note += " and ignores a lone --ntasks-per-node"
        return nodes, job.tasks, k, note
    if step.ntasks_per_node.given:
        k = step.ntasks_per_node.value
        return nodes, (k * nodes if k is not None and nodes is not None else None), k, \
            "the step's --ntasks-per-node"
    return nodes, nodes, 1, "srun starts one task per node by default"


def _refusal(job: Component, step: StepRequest, nodes: int | None,
             tasks: int | None) -> str | None:
    """Why srun refuses ``step`` in ``job`` (the module docstring's Slurm facts), or None when
    it starts or that is not known."""
    held = job.nodes.value
    if step.nodes.given and step.nodes.value is not None and held is not None and \
            step.nodes.value > held:
        return f"srun refuses the step: only allocated {held} node(s), asked for " \
            f"{step.nodes.value}"
    counts = job.task_counts()
    if step.overcommit or job.whole_nodes or counts is None or nodes is None or \
            tasks is None or step.cpus_per_task is None or job.cpus_per_task is None:
        return None
    capacity = sum(counts[:nodes]) * job.cpus_per_task
    if tasks * step.cpus_per_task > capacity:
        return (f"srun may refuse the step ('More processors requested than permitted'): "
                f"{tasks} task(s) x {step.cpus_per_task} CPU(s) is more than the {capacity} CPU(s) "
                f"the job's tasks hold on {nodes} node(s), unless the site allocates whole cores "
                "or nodes")
    return None


def _place(nodes: int | None, per_node: int | None,
           distribution: str | None) -> list[list[int]] | None:
    """Task ids per node index for an even layout: ``block`` (the default) or ``cyclic``;
    None for any other distribution or an unknown layout."""
    if nodes is None or per_node is None:
        return None
    first = (distribution or "block").split(":")[0].split(",")[0]
    if first == "block":
        return [list(range(i * per_node, (i + 1) * per_node)) for i in range(nodes)]
    if first == "cyclic":
        return [list(range(i, nodes * per_node, nodes)) for i in range(nodes)]
    return None
