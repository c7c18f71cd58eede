"""SB215–SB219: task arithmetic, launch worlds the step does not make, GPU binding against
device selection by local rank, data files that array tasks share, and misspelt Slurm
variables.

Slurm facts (Slurm 22.05.8 sbatch(1)/srun(1); ``src/sbatch/opt.c`` and
``src/srun/libsrun/opt.c`` ``_opt_verify``):

- ``--ntasks-per-node`` with ``--ntasks``: "the --ntasks option will take precedence and the
  --ntasks-per-node will be treated as a maximum count of tasks per node" (sbatch(1), srun(1));
  ``--ntasks`` below the node count makes sbatch/srun warn "can't run N processes on M nodes,
  setting nnodes to N" and shrink the node count.
- ``--gpus-per-task`` "will implicitly set --gpu-bind=per_task:<gpus_per_task>" and
  ``--ntasks-per-gpu`` ``--gpu-bind=single:<ntasks>`` (srun(1)); a binding gives each task only
  its own GPU(s) in ``CUDA_VISIBLE_DEVICES``, numbered from 0 in the task; ``--gpu-bind=none``
  turns it off; "GPU binding is ignored if there is only one task".
- An array task's ``SLURM_ARRAY_JOB_ID`` is the same for every task of the array; its
  ``SLURM_ARRAY_TASK_ID`` and ``SLURM_JOB_ID`` differ per task (sbatch(1) "OUTPUT ENVIRONMENT
  VARIABLES", job_array.html).
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

from ..diagnostics import Diagnostic
from ..directives import OptionUse
from ..facts.arrays import ARRAY_JOB_VARS, array_variance, is_array, max_array_index
from ..facts.layout import Component, count_of, parse_count
from ..facts.reads import variable_reads
from ..facts.slurm_names import base_name, known_names
from ..facts.steps import StepFacts, facts_of
from ..shell.model import Command, Word, command_words
from . import Related, Severity, finding, rule

#: variables that hold the task's index on its node in an srun-native launch
LOCAL_RANK_VARS = frozenset({"SLURM_LOCALID", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                             "MPI_LOCALRANKID", "PMI_LOCAL_RANK"})
#: program flags whose value selects the process's CUDA device (HF/DeepSpeed-style scripts call
#: ``torch.cuda.set_device(args.local_rank)``)
DEVICE_FLAGS = frozenset({"--local_rank", "--local-rank", "--device", "--gpu", "--gpu_id",
                          "--gpu-id", "--device_id", "--device-id", "--cuda_device",
                          "--cuda-device"})
#: program flags whose value is the world size the program waits for
WORLD_FLAGS = frozenset({"--world_size", "--world-size"})
#: fairseq's and ParlAI's total-rank option: with one task per node fairseq derives it itself
#: (nodes x GPUs per node, fairseq/distributed/utils.py infer_init_method), with several it
#: must equal the task count (ranks are SLURM_PROCID), so it is read only then
SPAWNING_WORLD_FLAGS = frozenset({"--distributed-world-size", "--distributed_world_size"})
TORCHRUN_LIKE = frozenset({"torchrun", "accelerate", "colossalai", "deepspeed"})


def _is_range(use: OptionUse | None) -> bool:
    return use is not None and use.value is not None and "-" in use.value.strip().lstrip("-")


# -- SB215 ------------------------------------------------------------------------------------

@rule("SB215", "ntasks-below-layout", Severity.WARNING,
      "`--ntasks` below `--nodes` × `--ntasks-per-node`, or with `--ntasks-per-node` but no "
      "`--nodes`: Slurm keeps the task count, shrinks the nodes or treats tasks per node as a "
      "maximum")
def ntasks_below_layout(job) -> Iterator[Diagnostic]:
    """Each hetjob component's directives, and each srun step's own options, where a literal
    ``--ntasks`` is below the literal nodes × tasks per node they also give (sbatch(1)
    ``--ntasks-per-node``: a maximum when ``--ntasks`` is given; ``_opt_verify``: "can't run N
    processes on M nodes, setting nnodes to N")."""
    for comp in facts_of(job).components:
        yield from _component_arithmetic(comp)
    for sf in facts_of(job).steps:
        yield from _step_arithmetic(job, sf)


def _component_arithmetic(comp: Component) -> Iterator[Diagnostic]:
    nodes_use = comp.options.get("nodes")
    ntasks_use = comp.options.get("ntasks")
    tpn_use = comp.options.get("ntasks-per-node")
    n, t, k = comp.nodes.value, comp.ntasks.value, comp.ntasks_per_node.value
    where = "" if comp.index == 0 else f" (hetjob component {comp.index})"
    if nodes_use is None and ntasks_use is not None and tpn_use is not None and \
            t is not None and k is not None and t > 1 and "nodelist" not in comp.options:
        yield from _nodes_not_fixed(ntasks_use, tpn_use, t, k, where)
        return
    if ntasks_use is None or nodes_use is None or n is None or t is None or \
            _is_range(nodes_use) or "nodelist" in comp.options:
        return  # a host list names the nodes whatever the counts say
    if t < n:
        yield finding(
            "SB215", ntasks_use.start, ntasks_use.end,
            f"--ntasks={t} is below --nodes={n}{where}: sbatch says \"can't run {t} processes "
            f"on {n} nodes, setting nnodes to {t}\" and the job gets {t} node(s); ask for "
            f"--ntasks={n * (k or 1)} (or drop --ntasks and keep --ntasks-per-node)",
            related=[Related(nodes_use.start, nodes_use.end, f"{n} nodes requested")])
    elif k is not None and tpn_use is not None and t < n * k:
        yield finding(
            "SB215", ntasks_use.start, ntasks_use.end,
            f"--ntasks={t} is below --nodes={n} × --ntasks-per-node={k} = {n * k}{where}: "
            f"--ntasks wins and --ntasks-per-node={k} becomes a maximum, so the nodes do not "
            f"all run {k} tasks (SLURM_NTASKS={t}); set --ntasks={n * k} or drop --ntasks",
            related=[Related(tpn_use.start, tpn_use.end, "treated as a maximum")])


def _nodes_not_fixed(ntasks_use: OptionUse, tpn_use: OptionUse, t: int, k: int,
                     where: str) -> Iterator[Diagnostic]:
    """``--ntasks`` with ``--ntasks-per-node`` and no ``--nodes``: the per-node count is only a
    maximum, so Slurm may spread the tasks over more nodes than ⌈ntasks / per node⌉ (sbatch(1):
    "Meant to be used with the --nodes option"). A warning when the tasks fit on one node
    (the script means one node), an info otherwise."""
    least = -(-t // k)
    most = t
    yield finding(
        "SB215", tpn_use.start, tpn_use.end,
        f"--ntasks-per-node={k} without --nodes{where} is only a maximum: Slurm may place the "
        f"{t} tasks on {least} to {most} nodes, not necessarily {least}; add "
        f"--nodes={least} to fix the layout",
        severity=Severity.WARNING if t <= k else Severity.INFO,
        related=[Related(ntasks_use.start, ntasks_use.end, f"{t} tasks")])


def _step_arithmetic(job, sf: StepFacts) -> Iterator[Diagnostic]:
    opts = sf.step.options
    if "ntasks" not in opts or "nodes" not in opts:
        return
    t = count_of(opts["ntasks"], job.script)[0]
    n_word = opts["nodes"]
    n = count_of(n_word, job.script)[0]
    if t is None or n is None or "-" in (n_word.value or "-").strip():
        return
    k = count_of(opts["ntasks-per-node"], job.script)[0] if "ntasks-per-node" in opts else None
    w = opts["ntasks"]
    if t < n:
        yield finding("SB215", w.start, w.end,
                      f"this step's -n {t} is below its -N {n}: srun says \"can't run {t} "
                      f"processes on {n} nodes, setting nnodes to {t}\" and runs on {t} "
                      "node(s)",
                      related=[Related(n_word.start, n_word.end, f"{n} nodes requested")])
    elif k is not None and t < n * k:
        kw = opts["ntasks-per-node"]
        yield finding("SB215", w.start, w.end,
                      f"this step's -n {t} is below -N {n} × --ntasks-per-node={k}: --ntasks "
                      f"wins and --ntasks-per-node={k} is only a maximum per node",
                      related=[Related(kw.start, kw.end, "treated as a maximum")])


# -- SB216 ------------------------------------------------------------------------------------

@rule("SB216", "launch-world-mismatch", Severity.ERROR,
      "a launch expects a world the step does not make (torchrun `--nnodes`, `WORLD_SIZE`, "
      "`--world_size` constants)")
def launch_world_mismatch(job) -> Iterator[Diagnostic]:
    """A constant expected world against the step's effective layout (facts/layout.py): a
    torchrun-style ``--nnodes=N`` (torch/distributed/run.py: the rendezvous waits for N agents)
    on a step that starts one agent on each of M ≠ N nodes; an srun-native launch whose
    ``WORLD_SIZE`` or ``--world_size`` is a literal other than the step's task count
    (``torch.distributed.init_process_group`` with ``env://`` waits for WORLD_SIZE ranks)."""
    for sf in facts_of(job).steps:
        layout = sf.layout
        if sf.launcher in TORCHRUN_LIKE and sf.launch is not None and \
                layout.nodes is not None and layout.tasks_per_node == 1:
            yield from _nnodes_mismatch(job, sf)
        elif sf.launcher == "srun" and layout.tasks is not None and layout.tasks > 1:
            yield from _world_size_mismatch(job, sf)


def _job_size(job, sf: StepFacts) -> tuple[int | None, int | None]:
    """(nodes, tasks) of the component the step runs in, as Slurm sizes it (``--ntasks`` below
    the node count shrinks the nodes); (None, None) when unknown or a host list decides."""
    comps = facts_of(job).components
    k = sf.layout.component
    if k is None or k >= len(comps) or "nodelist" in comps[k].options:
        return None, None
    comp = comps[k]
    nodes, tasks = comp.nodes.value, comp.tasks
    if nodes is not None and tasks is not None and tasks < nodes:
        nodes = tasks
    return nodes, tasks


def _partial(step_count: int, job_count: int | None, expected: int) -> bool:
    """Whether the step covers only part of the allocation while the launch expects no more
    than the allocation holds: several such steps (a loop of ``srun -N 1 … &``, one per
    machine rank) may together make the expected world."""
    return job_count is None or (step_count < job_count and expected <= job_count)


def _evidence(sf: StepFacts, what: str) -> list[Related]:
    return [Related(sf.step.srun.start, sf.step.srun.end,
                    f"this step runs {what} ({sf.layout.note})")]


def _nnodes_mismatch(job, sf: StepFacts) -> Iterator[Diagnostic]:
    la = sf.launch
    assert la is not None
    w = la.args.get("nnodes")
    if w is None:
        return
    script = next((s.command.script for s in job.launches if s.launch is la and
                   s.command.script), job.script)
    text = w.value
    expected: int | None
    if text is not None and ":" in text:
        lo, _, hi = text.partition(":")
        low, high = parse_count(lo), parse_count(hi)
        expected = low if low == high else None
        if low is None or high is None:
            return
        if expected is None:
            if low <= (sf.layout.nodes or 0) <= high:
                return
            expected = low
    else:
        expected = count_of(w, script)[0]
    m = sf.layout.nodes
    if expected is None or m is None or expected == m or expected <= 1:
        return  # --nnodes=1 on several nodes is SB202's
    if expected > m and _partial(m, _job_size(job, sf)[0], expected):
        return
    outcome = (f"the rendezvous waits for {expected - m} agent(s) that never start and times "
               "out" if expected > m else
               f"{m - expected} agent(s) more than the rendezvous admits fail or wait")
    yield finding("SB216", w.start, w.end,
                  f"{la.spelled('nnodes')}={w.value or w.text} but this step starts one "
                  f"launcher on each of {m} node(s): {outcome}; pass "
                  "--nnodes=\"$SLURM_JOB_NUM_NODES\" (or the step's own node count)",
                  related=_evidence(sf, f"{m} node(s), one task each")
                  + la.option_related("nnodes", "the launcher is given"))


def _world_size_mismatch(job, sf: StepFacts) -> Iterator[Diagnostic]:
    tasks = sf.layout.tasks
    assert tasks is not None

    def partial(n: int) -> bool:  # (the component's size only then: most steps never ask)
        return n > tasks and _partial(tasks, _job_size(job, sf)[1], n)

    var = sf.env.get("WORLD_SIZE")
    if var is not None and var.exported and var.value is not None:
        n = parse_count(var.value)
        if n is not None and n != tasks and not partial(n):
            yield finding("SB216", var.start, var.end,
                          f"WORLD_SIZE={n} but this step starts {tasks} task(s): "
                          f"init_process_group waits for {n} ranks "
                          + ("and hangs until its timeout" if n > (tasks or 0) else
                             f"and ranks {n}… are out of range")
                          + "; set WORLD_SIZE=$SLURM_NTASKS inside the task",
                          related=_evidence(sf, f"{tasks} task(s)"))
    tpn = sf.layout.tasks_per_node
    flags = WORLD_FLAGS | SPAWNING_WORLD_FLAGS if isinstance(tpn, int) and tpn > 1 \
        else WORLD_FLAGS
    for cmd in sf.step.task_commands:
        for flag, value in _flag_values(cmd, flags):
            n = count_of(value, cmd.script or job.script)[0]
            if n is not None and n != tasks and not partial(n):
                yield finding("SB216", value.start, value.end,
                              f"{flag} {n} but this step starts {tasks} task(s): the "
                              f"program expects {n} ranks; pass $SLURM_NTASKS",
                              related=_evidence(sf, f"{tasks} task(s)"))


def _flag_values(cmd: Command, flags: frozenset[str]) -> Iterator[tuple[str, Word]]:
    """(flag, value word) for each ``--flag value`` or ``--flag=value`` of ``cmd`` whose flag
    is one of ``flags``."""
    words = cmd.words
    for i, w in enumerate(words):
        text = w.value if w.value is not None else w.text
        if text in flags and i + 1 < len(words):
            yield text, words[i + 1]
        elif "=" in text and text.split("=", 1)[0] in flags and text.startswith("--"):
            cut = len(text.split("=", 1)[0]) + 1
            if w.text.startswith(text[:cut]):
                yield text[:cut - 1], w.tail(cut, text[cut:] if w.value is not None else None)


# -- SB217 ------------------------------------------------------------------------------------

#: the job's options that :func:`_binding` reads (looked up once per job, not once per step)
BINDING_OPTIONS = ("gpu-bind", "gpus-per-task", "ntasks-per-gpu")


def _binding(job_uses: dict[str, OptionUse | None],
             sf: StepFacts) -> tuple[str, int, int] | None:
    """(what binds, its span) when each task of the step sees exactly one GPU: an explicit
    ``--gpu-bind`` of ``per_task:1``, ``single:N`` or ``map_gpu:…`` (the step's, else the
    job's), else ``--gpus-per-task=1`` or ``--ntasks-per-gpu`` (which imply per_task/single);
    None when the binding is off (``none``), gives several GPUs or is unknown. ``job_uses``
    maps each of :data:`BINDING_OPTIONS` to the job's directive use of it (or None)."""
    step = sf.step
    bind: Word | OptionUse | None = step.options.get("gpu-bind")  # (the step's wins)
    if bind is None:
        bind = job_uses["gpu-bind"]
    if bind is not None:
        text = bind.value
        if text is None:
            return None
        kind = text.strip().lower()
        kind = kind.removeprefix("verbose,")
        if kind in ("per_task:1",) or kind.startswith(("single:", "map_gpu:")):
            return f"--gpu-bind={text}", bind.start, bind.end
        return None
    if sf.gpus_per_task == 1:
        w = step.options.get("gpus-per-task")
        use = job_uses["gpus-per-task"]
        if w is not None:
            return f"--gpus-per-task={w.value}", w.start, w.end
        if use is not None and "gpus-per-task" not in step.options and \
                not any(k in step.options for k in ("gpus", "gpus-per-node", "gres")):
            return f"#SBATCH --gpus-per-task={use.value}", use.start, use.end
    for source in (step.options.get("ntasks-per-gpu"), job_uses["ntasks-per-gpu"]):
        if source is not None:
            return "--ntasks-per-gpu (implies --gpu-bind=single)", source.start, source.end
    return None


def _local_rank_refs(word: Word, ev, script) -> bool:
    """Whether ``word`` reads the task's local rank (directly, or through variables assigned
    from it in the script that expands it)."""
    names = {e.name for e in word.expansions if e.name and e.quoting in ("unquoted", "double")}
    if names & LOCAL_RANK_VARS:
        return True
    return bool(ev.roots(word, script) & LOCAL_RANK_VARS) if names else False


def _device_selections(sf: StepFacts, ev, job) -> Iterator[tuple[Word, str]]:
    """Words of the step's tasks that select a CUDA device by local rank: ``cuda:$LOCAL_RANK``
    inside a word, or a device/local-rank flag whose value reads it."""
    for cmd in sf.step.task_commands:
        script = cmd.script or job.script
        seen: set[int] = set()
        for flag, value in _flag_values(cmd, DEVICE_FLAGS):
            if _local_rank_refs(value, ev, script):
                seen.add(value.end)
                yield value, f"{flag} {value.text}"
        for w in cmd.words:
            i = w.text.find("cuda:$")
            if i >= 0 and w.end not in seen and _local_rank_refs(w, ev, script):
                yield w, w.text[i:].split("'")[0].split('"')[0]


@rule("SB217", "gpu-bind-device-ordinal", Severity.ERROR,
      "each task is bound to one GPU (`--gpus-per-task=1`, `--gpu-bind`) but selects "
      "`cuda:$LOCAL_RANK`: \"invalid device ordinal\"")
def gpu_bind_device_ordinal(job) -> Iterator[Diagnostic]:
    """A step whose tasks each see one GPU as device 0 (srun(1) ``--gpus-per-task``,
    ``--gpu-bind``) and run several to a node, with a device chosen by local rank: every task
    but the first on a node asks for a device it does not see (CUDA's "invalid device
    ordinal"). Info when the tasks only export the local rank and the device choice is in
    code the script does not show."""
    ev = facts_of(job).evaluator
    job_uses = {name: job.directives.get(name) for name in BINDING_OPTIONS}
    for sf in facts_of(job).steps:
        if sf.launcher in TORCHRUN_LIKE or sf.launcher == "mpirun":
            continue
        per_node = sf.layout.max_per_node
        # with no node count the tasks may share a node: then only an info
        maybe = per_node is None and (sf.layout.tasks or 0) > 1
        if not maybe and (per_node is None or per_node <= 1):
            continue
        bind = _binding(job_uses, sf)
        if bind is None:
            continue
        what, b_start, b_end = bind
        related = [Related(b_start, b_end, f"{what}: each task sees one GPU, as device 0")]
        found = False
        for w, shown in _device_selections(sf, ev, job):
            found = True
            outcome = (f"every task with local rank {_ranks(per_node)} fails"
                       if per_node is not None else
                       "the tasks that share a node (the node count is not fixed) fail")
            yield finding("SB217", w.start, w.end,
                          f"`{shown}` selects the task's local rank as its CUDA device, but "
                          f"{what} leaves each task one visible GPU (device 0): {outcome} "
                          "with \"invalid device ordinal\"; use device 0 (cuda:0) or add "
                          "--gpu-bind=none to this srun",
                          severity=Severity.INFO if maybe else None, related=related)
        distributed = _distributed_flag(sf) or _rendezvous_env(sf)
        if not found and (sf.launcher == "srun" or distributed) and \
                (_exports_local_rank(sf, ev, job) or distributed) and \
                not _literal_device(sf):
            yield finding("SB217", sf.step.srun.start, sf.step.srun.end,
                          f"this step's program picks its device itself (LOCAL_RANK from the "
                          "local task id, a distributed mode, or an env:// rendezvous through "
                          f"MASTER_ADDR) while {what} leaves each task "
                          "one visible GPU: if the program selects "
                          "cuda:LOCAL_RANK (torch.cuda.set_device(local_rank)), ranks 1… fail "
                          "with \"invalid device ordinal\"; select device 0",
                          severity=Severity.INFO, related=related)


#: program flags that switch a training program to its distributed mode (it then picks the
#: device of its local rank itself: mace ``--distributed``, PyTorch examples
#: ``--multiprocessing-distributed``)
DISTRIBUTED_FLAGS = frozenset({"--distributed", "--multiprocessing-distributed", "--ddp"})


def _distributed_flag(sf: StepFacts) -> bool:
    return any((w.value or "") in DISTRIBUTED_FLAGS
               for cmd in sf.step.task_commands for w in cmd.words)


def _rendezvous_env(sf: StepFacts) -> bool:
    """Whether the step's tasks receive an exported ``MASTER_ADDR``: the program joins a
    torch.distributed ``env://`` rendezvous, and such programs commonly pick the device of
    their rank (``torch.device("cuda", rank)``), which the script does not show."""
    var = sf.env.get("MASTER_ADDR")
    return var is not None and var.exported


def _literal_device(sf: StepFacts) -> bool:
    """Whether a device flag of the step's tasks names a literal device (``--device cuda:0``):
    the script then shows the device choice, and it is not by local rank."""
    return any(value.value is not None for cmd in sf.step.task_commands
               for _, value in _flag_values(cmd, DEVICE_FLAGS))


def _ranks(per_node: int) -> str:
    return "1" if per_node == 2 else f"1 to {per_node - 1}"


def _exports_local_rank(sf: StepFacts, ev, job) -> bool:
    for cmd in sf.step.task_commands:
        script = cmd.script or job.script
        assigns = list(cmd.assignments)
        if cmd.script is not None and cmd.words and cmd.words[0].value == "export":
            assigns += [a for a in cmd.script.assignments if a.command is cmd]
        for a in assigns:
            if a.name == "LOCAL_RANK" and a.value is not None and \
                    _local_rank_refs(a.value, ev, script):
                return True
    return False


# -- SB218 ------------------------------------------------------------------------------------

#: program flags whose value is a file or folder the program writes
OUTPUT_FLAGS = frozenset({"-o", "--output", "--output_dir", "--output-dir", "--out",
                          "--out_dir", "--out-dir", "--outdir", "--save", "--save_dir",
                          "--save-dir", "--save_path", "--save-path", "--output_file",
                          "--output-file", "--output_path", "--output-path", "--log_dir",
                          "--log-dir", "--logdir", "--results", "--result_dir",
                          "--results_dir", "--checkpoint_dir", "--ckpt_dir"})
WRITERS = frozenset({"tee"})


@rule("SB218", "array-shared-data-file", Severity.WARNING,
      "in a job array, a file the tasks write is named by the array job id alone (or by a "
      "`%A` the shell never expands): every task writes the same file")
def array_shared_data_file(job) -> Iterator[Diagnostic]:
    """Output paths of an array job (``tee`` operands, ``--output_dir``-style program flags,
    and the targets of output redirections ``>``, ``2>``, ``&>``, ``>>``) whose value varies
    by the array job (``$SLURM_ARRAY_JOB_ID``) but not by the array task (facts/arrays.py):
    the tasks overwrite or interleave one file. A redirection target holding sbatch's filename
    pattern ``%A``/``%a``/``%j`` is one literal name for every task: bash expands ``$`` and
    ``~``, never ``%`` (bash(1) REDIRECTION: the word "is subjected to brace expansion, tilde
    expansion, parameter and variable expansion, command substitution, arithmetic expansion,
    quote removal, pathname expansion, and word splitting"); only sbatch's own
    ``--output``/``--error`` read those patterns (sbatch(1) "filename pattern").

    ``>>`` from ``echo``/``printf`` (a line per task appended to one summary) is left alone;
    ``>>`` from another program only interleaves, an info."""
    if not is_array(job.directives):
        return
    ev = facts_of(job).evaluator
    for cmd in job.script.walk():
        if cmd.in_substitution or not cmd.words:
            continue
        script = cmd.script or job.script
        for w in _output_words(cmd):
            if array_variance(w, script, ev) == "array-job":
                yield _shared(w, sorted(ev.roots(w, script) & ARRAY_JOB_VARS)[0])
        for r in cmd.redirects:
            if not r.writes_file:
                continue
            w = r.target
            append = r.op in (">>", "&>>")
            if append and (cmd.name or "").rsplit("/", 1)[-1] in LINE_WRITERS:
                continue
            severity = Severity.INFO if append else None
            pattern = _literal_pattern(w)
            if pattern is not None:
                yield finding("SB218", w.start, w.end,
                              f"`{w.text}`: the shell does not expand `{pattern}` (only "
                              "sbatch's --output/--error read filename patterns), so every "
                              "task of the array writes the one file literally named so and "
                              f"{'interleaves with' if append else 'overwrites'} the others; "
                              "use ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}",
                              severity=severity)
            elif array_variance(w, script, ev) == "array-job":
                yield _shared(w, sorted(ev.roots(w, script) & ARRAY_JOB_VARS)[0], severity,
                              append)


#: ``echo … >> summary``: a line per task appended to one file is how arrays collect results
LINE_WRITERS = frozenset({"echo", "printf"})
#: sbatch's filename pattern letters a shell leaves as they are (sbatch(1) "filename pattern")
FILENAME_PATTERN = re.compile(r"%(?:\d*)[AaJjNnsux]")


def _literal_pattern(w: Word) -> str | None:
    """The first sbatch filename pattern (``%A``, ``%a``, ``%j``…) in the word's own text,
    outside its expansions (``${NAME%a}`` is bash's suffix removal, not a pattern)."""
    for m in FILENAME_PATTERN.finditer(w.text):
        at = w.start + m.start()
        if not any(e.start <= at < e.end for e in w.expansions):
            return m.group()
    return None


def _shared(w: Word, name: str, severity: Severity | None = None,
            append: bool = False) -> Diagnostic:
    """SB218 on ``w``, named by the array job variable ``name`` alone."""
    what = "interleave their lines" if append else "overwrite each other's results"
    return finding("SB218", w.start, w.end,
                   f"`{w.text}` is named by ${name} alone, which every task of the array "
                   f"shares: the tasks write the same file and {what}; add "
                   "$SLURM_ARRAY_TASK_ID", severity=severity)


def _output_words(cmd: Command) -> Iterator[Word]:
    name = (cmd.words[0].value or "").rsplit("/", 1)[-1]
    if name in WRITERS:
        yield from (w for w in cmd.words[1:] if not (w.value or "").startswith("-"))
        return
    for _, value in _flag_values(cmd, OUTPUT_FLAGS):
        yield value


# -- SB224 ------------------------------------------------------------------------------------

#: slurm.conf(5) MaxArraySize when the site does not set it
DEFAULT_MAX_ARRAY_SIZE = 1001


@rule("SB224", "array-index-over-max", Severity.ERROR,
      "an `--array` index at or above the site's MaxArraySize (default 1001): the controller "
      "refuses the job (\"Invalid job array specification\")")
def array_index_over_max(job) -> Iterator[Diagnostic]:
    """slurm.conf(5) MaxArraySize: "The maximum job array task index value will be one less
    than MaxArraySize to allow for an index value of zero", default 1001; 0 disables arrays.
    slurmctld allocates the array's bitmap with MaxArraySize bits and refuses an index beyond
    it with ESLURM_INVALID_ARRAY (``src/slurmctld/job_mgr.c`` ``_valid_array_inx``, Slurm
    22.05.8). It is the highest *index* that counts, not the number of tasks:
    ``--array=1000-1001`` is 2 tasks and refused. An error with the profile's
    ``max-array-size``; an info on the default when the profile does not say (sites raise it)."""
    use = job.directives.get("array")
    if use is None or not use.value:
        return
    top = max_array_index(use.value)
    if top is None:
        return
    limit = job.profile.max_array_size
    known = limit is not None
    limit = DEFAULT_MAX_ARRAY_SIZE if limit is None else limit
    if top < limit and limit > 0:
        return
    start = use.value_start if use.value_start is not None else use.start
    if limit == 0:
        why = "the site's MaxArraySize is 0 (job arrays disabled), so the controller refuses it"
    elif known:
        why = (f"the highest index is {top} and array indices must be below the site's "
               f"MaxArraySize={limit}, so the controller refuses the job")
    else:
        why = (f"the highest index is {top}: on a cluster with Slurm's default "
               f"MaxArraySize={limit} (the profile does not say; set max-array-size) the "
               "controller refuses the job")
    yield finding("SB224", start, start + len(use.value),
                  f"--array={use.value}: {why} (\"Batch job submission failed: Invalid job "
                  f"array specification\"); split it into jobs of at most {max(limit, 1)} "
                  "indices and offset the index in the script "
                  "(e.g. $((SLURM_ARRAY_TASK_ID + OFFSET)))",
                  severity=None if known else Severity.INFO)


# -- SB219 ------------------------------------------------------------------------------------

@rule("SB219", "misspelt-slurm-variable", Severity.WARNING,
      "a `$SLURM_*` name Slurm never sets, close to one it does (`$SLURM_TASK_ARRAY_ID`, "
      "`$SLURM_JOB_NUMNODES`, `$SLURM_ARRAY_TASK_ID_x`): it expands to nothing")
def misspelt_slurm_variable(job) -> Iterator[Diagnostic]:
    """A variable read whose name starts with ``SLURM_`` that no Slurm command sets or reads
    (facts/slurm_names.py), that the script never assigns, and that is a near miss of a real
    name: a known name followed by more name characters (bash(1) "PARAMETERS": a name runs
    on through letters, digits and ``_``, so ``$SLURM_ARRAY_TASK_ID_out`` reads
    ``SLURM_ARRAY_TASK_ID_out``), the same words in another order, or one or two characters
    off. Bash expands an unset variable to the empty string, silently."""
    known = known_names()
    if not _unknown_slurm_reads(job, known):
        return  # (most scripts: every SLURM_* name read is one Slurm sets)
    scripts = list(_scripts(job))  # (one walk of the commands for both)
    assigned = {a.name for s in scripts for a in s.assignments}
    seen: set[int] = set()
    advice: dict[str, str | None] = {}  # name -> _near_miss's (None: no finding), once a name
    for word in _read_words(scripts):
        for e in word.expansions:
            if not e.name or not e.name.startswith(("SLURM_", "SLURMD_")) or e.start in seen \
                    or e.quoting in ("single", "escaped"):
                continue  # a quoted string another shell reads is walked as its own script
            if e.name not in advice:
                name = base_name(e.name)
                advice[e.name] = None if name in known or e.name in assigned else \
                    _near_miss(name, known)
            message = advice[e.name]
            if message is None:
                continue
            seen.add(e.start)
            yield finding("SB219", e.start, e.end,
                          f"`${e.name}` is not a variable Slurm sets and the script never "
                          f"assigns it: it expands to nothing; {message}")


def _unknown_slurm_reads(job, known: frozenset[str]) -> bool:
    """Whether the script reads a ``SLURM_*``/``SLURMD_*`` name that is not ``known``: what
    a finding needs (facts/reads.py has every name its words read)."""
    for name in variable_reads(job).names:  # (a loop, not a generator: every name read)
        if name.startswith(("SLURM_", "SLURMD_")) and base_name(name) not in known:
            return True
    return False


def _scripts(job):
    yield job.script
    for cmd in job.script.walk():
        yield from cmd.nested


def _read_words(scripts) -> list[Word]:
    """The scripts' words in order: each command's argv and prefix assignment values, then the
    values of the script's standalone assignments."""
    out: list[Word] = []
    for script in scripts:
        out += command_words(script.commands)
        out += [a.value for a in script.assignments if a.value is not None and a.command is None]
    return out


def _near_miss(name: str, known: frozenset[str]) -> str | None:
    """What ``name`` was probably meant to be, as advice; None when it is no near miss."""
    prefix = max((k for k in known if name.startswith(k + "_") or
                  (name.startswith(k) and name[len(k):len(k) + 1].isdigit())),
                 key=len, default=None)
    if prefix is not None:
        return (f"bash reads the whole name `{name}`; write `${{{prefix}}}{name[len(prefix):]}` "
                f"to append to ${prefix}")
    words = sorted(name.split("_"))
    same = next((k for k in sorted(known) if sorted(k.split("_")) == words), None)
    if same is None:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.9)
        same = close[0] if close else None
    if same is None:
        return None
    return f"did you mean `${same}`?"
