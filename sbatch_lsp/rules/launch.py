"""SB2xx: launch layout (srun steps, torchrun and friends).

Facts: torchrun's static rendezvous binds a TCPStore on master_addr:master_port on the agent
with node_rank 0, defaults to ``--nnodes 1:1``, ``--node-rank 0``, ``--master-addr 127.0.0.1``
and ``--master-port 29500``, and does not read MASTER_ADDR/MASTER_PORT from the environment;
``--standalone`` is single-node only (slurm-facts.md §8, torch/distributed/run.py).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .. import options as opts
from ..facts.control import agents_per_node
from ..facts.exports import value_assignment
from ..facts.launches import launch_specs
from ..facts.layout import parse_count
from ..facts.reach import job_reach, node_agents
from ..facts.resources import Strength, gpu_resources, job_counts
from ..facts.steps import facts_of
from ..facts.values import LOCAL_ADDRESS, Place, Scope
from ..srun_native import plan
from . import Edit, Fix, Related, Severity, finding, insert_line_before, rule
from .ports import address_outside_allocation

if TYPE_CHECKING:  # the rules read facts; the shell model's types only annotate
    from ..shell.model import Script

LOCAL_ADDR = re.compile(r"^(localhost|127\.0\.0\.1|0\.0\.0\.0|::1)$")


def _torchrun_specs(job):
    return [s for s in launch_specs(job) if s.launch.kind == "torchrun"]


def _step_nodes(spec) -> int | None:
    """The nodes of the step that runs the launcher (None: the batch shell, or unknown)."""
    return spec.step.layout.nodes if spec.step is not None else None


def _nodes_of(job, spec) -> int | None:
    """The nodes the launcher's world spans: its step's, else the job's."""
    return _step_nodes(spec) or job_counts(job).nodes.value


#: torchrun arguments a fix can take from the allocation (expanded inside the task)
FROM_ALLOCATION = {
    "nnodes": '--nnodes="$SLURM_JOB_NUM_NODES"', "node-rank": '--node-rank="$SLURM_NODEID"',
    "master-addr": '--master-addr="$MASTER_ADDR"', "master-port": '--master-port="$MASTER_PORT"',
}


@rule("SB201", "torchrun-per-task", Severity.ERROR,
      "torchrun started by an srun step with more than one task per node (EADDRINUSE)", fix="unsafe",
      rests_on=("nodes", "ntasks", "ntasks-per-node"))
def torchrun_per_task(job):
    """A torchrun-style launcher must run once per node; srun inherits the job's task count
    (slurm-facts.md §8, §14). Reads the step facts' layout and the task-id guards around the
    launcher (facts/control.py)."""
    for spec in launch_specs(job):
        if spec.launch.kind != "torchrun" or spec.step is None:
            continue
        layout, step, la = spec.step.layout, spec.step.step, spec.launch
        tpn = agents_per_node(job, spec.command, layout.max_per_node, layout.nodes)
        note = layout.refused or layout.note
        if tpn is None:
            yield finding(
                "SB201", la.anchor.start, la.anchor.end,
                f"cannot tell how many tasks per node this srun step starts ({note}); torchrun "
                "must run once per node, so make the step say `--ntasks-per-node=1` together "
                "with `--ntasks`", severity=Severity.INFO)
            continue
        if tpn <= 1:
            continue
        w = la.args.get("nproc-per-node")
        nproc = (w.value or w.text) if w is not None else "1"
        related = [Related(u.start, u.end, f"this makes srun start {tpn} tasks per node")
                   for u in step.layout_evidence]
        related.append(Related(step.srun.start, step.srun.end,
                               f"this step runs {tpn} tasks per node ({note})"))
        fixes = [job.derived(plan).fix(), _one_task_per_node(step)]
        unless = (f" (unless {step.hidden[0].text}, whose value is not known, sets another "
                  "layout)" if step.hidden else "")
        # --standalone: a c10d rendezvous on localhost:0, a free port per agent
        # (torch/distributed/run.py): no port clash, but one separate world per copy
        clash = (f"each forms its own one-node world on a free port, so every node runs {tpn} "
                 "separate trainings that double-book the GPUs" if la.has("standalone") else
                 "they all bind the same master port (EADDRINUSE: address already in use) and "
                 "double-book the GPUs")
        yield finding(
            "SB201", la.anchor.start, la.anchor.end,
            f"srun starts {tpn} copies of this launcher on every node{unless}, each with "
            f"--nproc-per-node={nproc}: {clash}; run one launcher per node "
            "(`srun --ntasks-per-node=1 --ntasks=<nodes>`) or drop torchrun and launch one "
            "task per GPU with srun", severity=Severity.WARNING if step.hidden else None,
            related=related, fixes=[f for f in fixes if f])


def _one_task_per_node(step) -> Fix | None:
    edits = []
    text_opts = ["nodes", "ntasks", "ntasks-per-node"]
    for name in text_opts:
        ow = step.option_words.get(name)
        if ow is None:
            continue
        vw = step.options.get(name)
        end = vw.end if vw is not None and vw is not ow else ow.end
        edits.append(Edit(ow.start - 1, end, ""))
    add = ' --nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1'
    if step.command.top() is not step.command:
        return None  # srun inside a command string: its options are not ours to rewrite
    edits.append(Edit(step.srun.end, step.srun.end, add))
    return Fix("run one task per node in this step", tuple(sorted(edits, key=lambda e: e.start)),
               safe=False)


@rule("SB202", "torchrun-multinode-args", Severity.ERROR,
      "a multi-node torchrun without --nnodes, or without node rank and master address/port", fix="unsafe",
      rests_on=("nodes",))
def torchrun_multinode_args(job):
    """torchrun defaults to ``--nnodes=1:1`` and the static rendezvous on 127.0.0.1; a c10d
    ``--rdzv-endpoint`` replaces node rank and master address/port, never ``--nnodes``."""
    for site in _torchrun_specs(job):
        la = site.launch
        if la.flavour == "colossalai" and la.has("hostfile"):
            continue
        nodes = _nodes_of(job, site)
        multi = nodes is not None and nodes > 1
        nn = la.arg("nnodes")
        nn_val = parse_count((nn or "").split(":")[-1]) if nn else None
        if not multi and not (nn_val and nn_val > 1):
            continue
        if nn_val == 1:
            if (_step_nodes(site) or 0) > 1:
                w = la.args["nnodes"]
                yield finding("SB202", w.start, w.end,
                              f"{la.spelled('nnodes')}={nn} but this step starts the launcher on "
                              f"{_step_nodes(site)} nodes: each node forms its own one-node world "
                              "and trains alone")
            continue  # one launcher, one node: SB205 reports the idle nodes
        if la.has("standalone"):
            w = la.args["standalone"]
            yield finding("SB202", w.start, w.end,
                          f"--standalone runs a single-node rendezvous on localhost, but this job "
                          f"has {nodes} nodes: each node trains alone", severity=Severity.ERROR)
            continue
        missing, backend = _missing_args(la)
        if missing:
            configured = la.flavour == "accelerate" and (la.has("config-file") or
                                                         la.has("config"))
            sev = Severity.INFO if configured or la.hidden or missing == ["master-port"] \
                else Severity.ERROR
            yield finding(
                "SB202", la.anchor.start, la.anchor.end,
                f"multi-node {la.title} launch without "
                + ", ".join(la.spelled(m) for m in missing) + ": "
                + "; ".join(_why_missing(la, missing, backend, configured)),
                severity=sev, fixes=[f for f in [_add_args(job, site, missing)] if f])
        if multi:
            yield from _node_rank(job, site, nodes)


def _missing_args(la) -> tuple[list[str], str | None]:
    """The torchrun arguments a multi-node launch lacks, and its rendezvous backend (None when
    not a literal: then neither the static nor the dynamic set is required)."""
    missing = [] if la.has("nnodes") else ["nnodes"]
    backend = la.arg("rdzv-backend") if la.has("rdzv-backend") else "static"
    # accelerate builds the endpoint from --main_process_ip:--main_process_port when it
    # runs on several machines (accelerate/utils/launch.py prepare_multi_gpu_env)
    endpoint = la.has("rdzv-endpoint") or (la.flavour == "accelerate" and la.has("master-addr"))
    if backend == "static" and not endpoint:
        missing += [n for n in ("node-rank", "master-addr", "master-port") if not la.has(n)]
    elif backend is not None and not endpoint:
        # A dynamic backend (c10d, etcd) with no endpoint uses "localhost" on every node
        # (torch parse_rendezvous_endpoint: an empty endpoint means localhost:29400).
        missing.append("rdzv-endpoint")
    return missing, backend


def _why_missing(la, missing: list[str], backend: str | None, configured: bool) -> list[str]:
    """What each missing argument does to a multi-node launch, in the launcher's spelling."""
    opt = la.spelled
    reasons = {
        "nnodes": f"without {opt('nnodes')} it defaults to 1 and every node forms its own "
                  "one-node world",
        "node-rank": f"without {opt('node-rank')} every node claims rank 0",
        "master-addr": f"without {opt('master-addr')} nodes look for the rendezvous on their "
                       "own 127.0.0.1 and wait until the 600 s timeout (torchrun ignores "
                       "$MASTER_ADDR)",
        "master-port": f"{opt('master-port')} defaults to 29500 on every node, which works; "
                       "pass it explicitly to avoid clashes between jobs sharing a node",
        "rdzv-endpoint": f"{opt('rdzv-backend')}={backend} without {opt('rdzv-endpoint')} "
                         "uses localhost, so every node waits in its own rendezvous",
    }
    why = [reasons[m] for m in missing]
    if configured:
        why.append("(it may come from the --config_file, which is not read)")
    if la.hidden:
        why.append(f"(unless {la.hidden[0].text} supplies it: its value is not known)")
    return why


def _node_rank(job, site, nodes: int | None):
    """A node rank that is one value for every node of a multi-node launch: fixed at
    submission, or a constant."""
    la = site.launch
    rank = la.args.get("node-rank")
    if rank is None:
        return
    if rank.value is None:
        if site.step is not None:
            yield from _submitted_rank(job, site, la, rank)
        return
    if not rank.value.isdigit():
        return
    in_step = (_step_nodes(site) or 0) > 1
    msg = (f"{la.spelled('node-rank')} is the constant {rank.value}: every node this step "
           "runs on claims the same rank, so the rendezvous never completes"
           if in_step else
           f"{la.spelled('node-rank')} is the constant {rank.value} in a {nodes}-node "
           "job: only one launcher with this rank can ever join")
    yield finding("SB202", rank.start, rank.end,
                  msg + "; use `--node-rank=$SLURM_NODEID` expanded inside each task",
                  severity=Severity.ERROR if in_step else Severity.WARNING)


def _submitted_rank(job, site, la, rank):
    """A node rank fixed at submission (``$1``, the submit environment) is one value for every
    node of the step: when the step certainly starts the launcher on several nodes they all
    claim that rank (an error whatever the value is); otherwise an assumption at info level."""
    ev = facts_of(job).evaluator
    place = Place.TASK if site.command.script is not job.script else Place.BATCH
    script = site.command.script or job.script
    if ev.scope(rank, place, script) is not Scope.SUBMIT:
        return
    nodes = site.step.layout.nodes
    per_node = site.step.layout.tasks_per_node
    certain = nodes is not None and nodes > 1 and per_node == 1
    names = ", ".join(f"${n}" for n in sorted(ev.roots(rank, script)))
    where = f"all {nodes} nodes of this step" if certain else "every node this step runs on"
    yield finding("SB202", rank.start, rank.end,
                  f"{la.spelled('node-rank')}={rank.text} is fixed at submission ({names}): "
                  f"{where} claim the same node rank and the static rendezvous hangs"
                  + ("" if certain else " (unless each node gets its own job)")
                  + "; use `--node-rank=$SLURM_NODEID` expanded inside each task",
                  severity=None if certain else Severity.INFO)


def _add_args(job, site, missing) -> Fix | None:
    """Add the missing torchrun arguments after the launcher's own name (or module)."""
    la = site.launch
    parent = next(site.command.ancestors(), None)  # the command running a nested string
    if "node-rank" in missing and parent is None or "rdzv-endpoint" in missing:
        return None  # $SLURM_NODEID on a batch-shell line would expand to 0
    if parent is not None:
        outer = parent.words[-1] if parent.words else None
        if outer is None or not outer.text.startswith("'"):
            return None  # inside a double-quoted string: escaping is not automatic
    ins_word = la.anchor
    for k, w in enumerate(la.words):
        if w.value in ("torch.distributed.run", "torch.distributed.launch") or (
                w.value or "").startswith("-mtorch.distributed"):
            ins_word = w
        if w.value in ("launch", "run") and k == 1:
            ins_word = w
    edits = [Edit(ins_word.end, ins_word.end,
                  " " + " ".join(FROM_ALLOCATION[m] for m in missing))]
    addr, port = site.env(job, "MASTER_ADDR"), site.env(job, "MASTER_PORT")
    need_addr = "master-addr" in missing and not (addr is not None and addr.exported)
    need_port = "master-port" in missing and not (port is not None and port.exported)
    if need_addr or need_port:
        if need_addr and addr is not None:
            return None  # set but not exported (or kept out by --export): a second one confuses
        lines = []
        if need_addr:
            lines.append('export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" '
                         '| head -n1)')
        if need_port:
            lines.append("export MASTER_PORT=$((20000 + SLURM_JOB_ID % 10000))")
        edits.insert(0, insert_line_before(job, site.command, "\n".join(lines)))
    return Fix("add " + ", ".join("--" + m for m in missing) + " from the allocation",
               tuple(sorted(edits, key=lambda e: e.start)), safe=False)


@rule("SB203", "missing-gpu-request", Severity.ERROR,
      "GPU work but no GPU request: Slurm gives the job zero GPUs", fix="unsafe",
      rests_on=("gpus", "partition"))
def missing_gpu_request(job):
    """GPU work (facts.resources: launchers, GPU tools and code, probes, names) in a job that
    requests no GPU. With ``--exclusive`` the batch shell sees every GPU of its node, so only GPU
    work inside an srun step that requests none is reported: the step gets no GPU, and whether
    it can open them anyway is the site's (cgroup ConstrainDevices, gres.conf): a warning when
    the profile says devices are confined, else an info. A GPU count read from the submitting
    environment means the submitter sets the GPUs too: an info; so does a file with no #SBATCH
    line of its own, even below the first command (its request is on the sbatch command line,
    or it only writes the job script it submits: #SBATCH lines in a here-document are not its
    directives)."""
    res = gpu_resources(job)
    if res.request is not None or res.cpu_partition or res.steps_request:
        return
    uses = list(res.uses)
    if res.exclusive is not None:
        uses = [u for u in res.gpu_less_steps_use() if u.strength > Strength.NAME]
    if not uses or job.templated:
        # no GPU work (with --exclusive: the batch shell sees every GPU, no step needs one), or
        # a template, whose request is filled in later (asked last: the provenance reads the
        # files beside the job)
        return
    primary = uses[0]
    related = [Related(u.start, u.end, u.why) for u in uses[1:]]
    sev = _gpu_work_severity(primary.strength)
    message = ("this job uses GPUs but requests none (no --gpus-per-node, --gres=gpu, --gpus or "
               "--gpus-per-task): Slurm allocates zero GPUs and CUDA finds no device")
    if res.exclusive is not None:
        message, sev = _exclusive(res.constrain_devices, sev)
        related.append(Related(res.exclusive.start, res.exclusive.end, "--exclusive"))
    if res.submitted_counts:
        names = ", ".join("$" + n for n in res.submitted_counts)
        message += (f" (unless the submitter passes them: the script reads its GPU count from "
                    f"{names}, which the submitting environment sets, and sbatch options on the "
                    "command line override the file's)")
        sev = Severity.INFO
    elif not job.directives.lines and not job.directives.late_lines:
        message += (" (unless the submitter passes them: the file sets no #SBATCH option of its "
                    "own, so its request is on the sbatch command line, or the file writes the "
                    "job script it submits)")
        sev = Severity.INFO
    yield finding("SB203", primary.start, primary.end, message, severity=sev, related=related,
                  fixes=_request_gpus(job))


def _gpu_work_severity(strength: Strength) -> Severity:
    """A GPU launcher is an error, GPU code or tools a warning, a probe that runs without GPUs
    (nvidia-smi, --nv) or a name (a partition, a CUDA module) an info."""
    return {Strength.LAUNCHER: Severity.ERROR, Strength.TOOL: Severity.WARNING,
            Strength.PROBE: Severity.INFO, Strength.NAME: Severity.INFO}[strength]


def _exclusive(constrain_devices: bool | None, sev: Severity) -> tuple[str, Severity]:
    """The message and severity for GPU work in a GPU-less step of an ``--exclusive`` job:
    at most a warning where the profile says devices are confined, an info elsewhere (the
    script does not say how the site is configured)."""
    site = {True: ", and this site confines devices (cgroup ConstrainDevices), so CUDA finds no "
                  "device",
            False: "; the profile says devices are not confined, so it may still open them",
            None: "; where the site confines devices (cgroup ConstrainDevices) and lists the GPUs "
                  "in gres.conf, CUDA finds no device (the script does not say how the site is "
                  "configured; set the profile's constrain-devices)"}[constrain_devices]
    message = ("--exclusive gives the job every GPU of its nodes, and the batch shell sees them, "
               "but this srun step requests none and gets none (srun(1) --gres): Slurm sets no "
               "CUDA_VISIBLE_DEVICES for it" + site + "; request GPUs for the job or the step")
    return message, min(sev, Severity.WARNING) if constrain_devices else Severity.INFO


def _request_gpus(job) -> list[Fix]:
    """Append ``#SBATCH --gpus-per-node=N`` after the last directive, N from a literal
    ``--nproc-per-node`` or the profile; none when N is not known."""
    n = next((s.nproc_per_node for s in reversed(launch_specs(job)) if s.nproc_per_node), None)
    n = n or job.profile.gpus_per_node
    if not n or not job.directives.lines:
        return []
    at = job.source.line_end(job.directives.lines[-1].line)
    return [Fix(f"request {n} GPU(s) per node", (Edit(at, at, f"\n#SBATCH --gpus-per-node={n}"),),
                safe=False)]


@rule("SB204", "gpu-count-mismatch", Severity.WARNING,
      "processes per node differ from the GPUs per node",
      rests_on=("gpus", "ntasks-per-node", "nodes"))
def gpu_count_mismatch(job):
    """torchrun --nproc-per-node, or srun-native tasks per node, against the GPUs per node."""
    counts = job_counts(job)
    gpn, use = counts.gpus_per_node.value, counts.gpus_per_node.use
    yield from _gpus_total(job, counts)
    if gpn is None or use is None:
        return
    for spec in launch_specs(job):
        n = spec.nproc_per_node
        if spec.launch.kind != "torchrun" or n is None or n == gpn:
            continue
        tpn = spec.step.layout.tasks_per_node if spec.step is not None else 1
        if isinstance(tpn, list) or tpn is not None and tpn > 1:
            continue  # SB201 reports several launchers per node
        w = spec.launch.args["nproc-per-node"]
        yield finding(
            "SB204", w.start, w.end,
            f"--nproc-per-node={n} but the job has {gpn} GPU(s) per node: "
            + ("workers share GPUs (or fail to find a device)" if n > gpn else
               f"{gpn - n} GPU(s) per node sit idle"),
            related=[Related(use.start, use.end, f"{gpn} GPU(s) per node"),
                     *spec.launch.option_related("nproc-per-node", "the launcher is given")])
    yield from _srun_native_mismatch(job, counts, gpn, use)


def _gpus_total(job, counts):
    """``--gpus=N`` over several nodes gives no per-node figure: the scheduler chooses the
    split (select/cons_tres places the GPUs where it finds them). A warning when the split
    cannot be even or a per-node launcher (torchrun's ``--nproc-per-node``) relies on it; else
    an info: nothing in the script reads a per-node count."""
    gpus, nodes = counts.gpus, counts.nodes.value or 0
    if gpus is None or counts.gpus_per_node.use is not gpus or counts.gpus_per_node.value \
            is not None or nodes <= 1:
        return
    total = parse_count((gpus.value or "").split(":")[-1])
    if job.profile.gpus_per_node and total == job.profile.gpus_per_node * nodes:
        return  # whole nodes' worth: every node holds all of its GPUs
    uneven = total is not None and total % nodes != 0
    per_node = any(spec.launch.kind == "torchrun" for spec in launch_specs(job))
    yield finding("SB204", gpus.start, gpus.end,
                  f"--gpus={gpus.value} over {nodes} nodes gives no per-node figure: Slurm "
                  + (f"cannot split {total} GPUs evenly over {nodes} nodes" if uneven else
                     "may split the GPUs unevenly")
                  + ("" if uneven or per_node else
                     " (nothing here reads a per-node GPU count, so an uneven split may not "
                     "matter)")
                  + "; use --gpus-per-node",
                  severity=None if uneven or per_node else Severity.INFO)


def _srun_native_mismatch(job, counts, gpn, use):
    """An srun-native step (no torchrun-style launcher in its tasks) runs one process per task;
    with more than one task per node, the tasks per node should equal the GPUs per node, or
    GPUs sit idle / tasks share a GPU. One task per node is left alone (a multi-GPU process or
    a per-node launcher); steps that request their own GPUs are left alone."""
    share = counts.tasks_per_gpu
    for sf in facts_of(job).steps:
        tpn = sf.layout.tasks_per_node
        if sf.launcher not in (None, "srun") or not isinstance(tpn, int) or tpn <= 1 or \
                tpn == gpn or share and tpn == share * gpn:
            continue
        step = sf.step
        if any("gpu" in k or k == "gres" for k in step.options):
            continue
        yield finding(
            "SB204", step.srun.start, step.srun.end,
            f"this step runs {tpn} tasks per node ({sf.layout.note}) but the job has {gpn} "
            "GPU(s) per node: "
            + ("several tasks share a GPU (or fail to find a device)" if tpn > gpn else
               f"{gpn - tpn} GPU(s) per node sit idle"),
            related=[Related(use.start, use.end, f"{gpn} GPU(s) per node")]
            + [Related(u.start, u.end, f"{tpn} tasks per node") for u in step.layout_evidence])


@rule("SB205", "launcher-outside-srun", Severity.ERROR,
      "a multi-node job whose launcher runs only in the batch shell (node 0 only)",
      rests_on=("nodes", "ntasks", "ntasks-per-node"))
def launcher_outside_srun(job):
    """The batch script runs once, on the first node; only srun starts tasks on the others."""
    nodes = job_counts(job).nodes
    if nodes.value is None or nodes.value <= 1 or nodes.use is None:
        return
    for spec in launch_specs(job):
        la = spec.launch
        if not spec.batch_shell:
            continue  # in a step, a substitution, or behind a guard the batch shell fails
        if la.kind == "torchrun" or (la.kind == "deepspeed" and not la.has("hostfile")):
            one_node = la.arg("nnodes") in ("1", "1:1")
            outcome = (f"the other {nodes.value - 1} node(s) sit idle for the whole job"
                       if one_node else "the other nodes never start a worker and the "
                       "rendezvous waits for them until it times out")
            yield finding(
                "SB205", la.anchor.start, la.anchor.end,
                f"this launcher runs only in the batch shell, on the first of {nodes.value} "
                f"nodes: {outcome}; start it with `srun --ntasks-per-node=1 ...`",
                related=[Related(nodes.use.start, nodes.use.end,
                                 f"the job has {nodes.value} nodes")])
    yield from _program_without_steps(job, nodes)
    yield from _agents_in_batch_shell(nodes, *node_agents(job))


def _agents_in_batch_shell(nodes, batch, in_tasks):
    """A per-node agent (a Ray or Dask worker, facts/reach.py) that only the batch shell starts:
    it joins from the first node alone, and no other node ever joins the cluster. Left alone
    when a step also starts that agent in its tasks (the batch shell then adds the first node
    on purpose)."""
    started = {a.what for a in in_tasks}
    for agent in batch:
        if agent.what in started:
            continue
        cmd = agent.command
        yield finding(
            "SB205", cmd.words[0].start, cmd.words[0].end,
            f"{agent.what} runs here in the batch shell, on the first of {nodes.value} nodes "
            f"only (not inside an srun step): the other {nodes.value - 1} node(s) never join; "
            "start it in a step on each node, e.g. `srun --nodes=1 --ntasks=1 -w \"$node\" "
            "bash -c \"setup && ray start --address ... --block\" &` (a `;` ends the srun "
            "command)",
            related=[Related(nodes.use.start, nodes.use.end,
                             f"the job has {nodes.value} nodes")])


def _program_without_steps(job, nodes):
    """A multi-node job that starts no step and nothing else that reaches the other nodes
    (facts/reach.py), whose Python program runs in the batch shell: only the first node works.
    One finding, on the last such program. A warning when the job asks for several tasks
    (``--ntasks``, or ``--ntasks-per-node`` × nodes): sbatch then sets SLURM_NTASKS in the batch
    environment (sbatch(1), OUTPUT ENVIRONMENT VARIABLES), no step starts those tasks, and a
    framework that sizes its world from it (Lightning's SLURMEnvironment reads SLURM_NTASKS:
    lightning/fabric/plugins/environments/slurm.py) waits for ranks that never start. Info
    otherwise (the idle nodes are certain, but a driver such as SmartSim or Ray may start steps
    from inside the program, which the script cannot show), when the script runs commands
    this reader cannot see (they may start steps), and when it loads an MPI implementation's
    module (the program may run ``mpirun`` itself: facts/reach.py)."""
    if facts_of(job).steps:
        return
    reach = job_reach(job)
    if reach.starter is not None:
        return
    specs = launch_specs(job)
    if any(s.launch.kind != "python" for s in specs):
        return  # a launcher (deepspeed --hostfile fans out; the others are reported above)
    programs = [s for s in specs if s.batch_shell]
    if not programs:
        return
    la = programs[-1].launch
    related = [Related(nodes.use.start, nodes.use.end, f"the job has {nodes.value} nodes")]
    tasks = job.ntasks.value if job.ntasks.known else \
        (job.ntasks_per_node.value or 0) * nodes.value
    task_use = job.ntasks.use or job.ntasks_per_node.use
    severity = Severity.INFO
    if tasks > 1 and task_use is not None and reach.opaque is None and reach.mpi is None:
        severity = Severity.WARNING
        related.append(Related(task_use.start, task_use.end,
                               f"the job asks for {tasks} tasks (SLURM_NTASKS={tasks})"))
    if reach.opaque is not None:
        related.append(Related(reach.opaque.start, reach.opaque.end,
                               "this runs commands not read here: they may start steps"))
    if reach.mpi is not None:
        related.append(Related(reach.mpi.start, reach.mpi.end,
                               "this loads an MPI implementation: the program may start its "
                               "ranks itself (mpirun from inside the program reaches every node)"))
    yield finding(
        "SB205", la.anchor.start, la.anchor.end,
        f"this program runs only in the batch shell, on the first of {nodes.value} nodes, and "
        f"the script starts no srun step: the other {nodes.value - 1} node(s) run nothing"
        + (f" and none of the {tasks} tasks starts (a framework that reads SLURM_NTASKS waits "
           "for ranks that never come)" if severity is Severity.WARNING else "")
        + "; start it with `srun`, or ask for one node", severity=severity, related=related)


def _place_of(job, cmd, task_cmds: set[int]) -> tuple[Place, Script]:
    """Where ``cmd``'s words are expanded: in a step's tasks when it belongs to a command
    string the step runs, else by the batch shell (an srun line's own words)."""
    if id(cmd) in task_cmds and cmd.script is not None and cmd.script is not job.script:
        return Place.TASK, cmd.script
    return Place.BATCH, job.script


@rule("SB206", "master-addr-per-node", Severity.ERROR,
      "MASTER_ADDR/MASTER_PORT evaluated on each node (localhost, $(hostname), a random port)")
def master_addr_per_node(job):
    """Every rank must agree on one address and port: a value whose scope is per node or per
    task (evaluated inside each task), a loopback address, or the submit host differs from the
    allocation's first node (slurm-facts.md §6.3, §15)."""
    nodes = job_counts(job).nodes.value
    if nodes is not None and nodes <= 1:
        return
    ev = facts_of(job).evaluator
    task_cmds = {id(c) for sf in facts_of(job).steps for c in sf.step.task_commands}
    reported: set[tuple[int, str]] = set()  # (script, name) whose assignment is reported
    for cmd in job.script.walk():
        if id(cmd) in task_cmds:
            yield from _task_assignments(job, ev, cmd, task_cmds, reported)
    yield from _loopback_reaching_tasks(job, reported)
    for site in launch_specs(job):
        if site.step is None:
            continue
        la = site.launch
        endpoint = la.args.get("rdzv-endpoint") if la.kind == "torchrun" else None
        if endpoint is not None:
            yield from _endpoint(job, ev, site, endpoint, task_cmds)
        elif "master-addr" in la.args:
            yield from _master_addr(job, ev, site, la.args["master-addr"], task_cmds, reported)


#: a word that names torch.distributed's env:// rendezvous (``--dist-url env://``,
#: ``init_method=env://``): the program reads MASTER_ADDR/MASTER_PORT from its environment
ENV_RENDEZVOUS = re.compile(r"(^|[=:\s])env://")


def _loopback_reaching_tasks(job, reported):
    """A loopback MASTER_ADDR that the batch shell exports into a multi-node step whose tasks
    run the program itself (srun-native, no torchrun-style launcher to replace it): each task
    that joins torch.distributed's ``env://`` rendezvous (torch/distributed/rendezvous.py
    ``_env_rendezvous_handler`` reads MASTER_ADDR) points it at its own node. An error when the
    tasks' words name ``env://``, else a warning: the read is inside the program, but the
    variable is exported for nothing else. One finding per assignment."""
    done: set[int] = set()
    for sf in facts_of(job).steps:
        var = sf.env.get("MASTER_ADDR")
        nodes = sf.layout.nodes
        if var is None or not var.exported or var.value is None or \
                not LOCAL_ADDR.match(var.value) or sf.launcher not in (None, "srun") or \
                nodes is None or nodes <= 1 or var.start in done:
            continue
        a = value_assignment(job.batch_assignments("MASTER_ADDR"), var.start)
        if a is None or a.command is None or a.command.script is not job.script:
            continue
        done.add(var.start)
        reported.add((id(job.script), "MASTER_ADDR"))
        env_url = any(ENV_RENDEZVOUS.search(w.value or w.text)
                      for cmd in sf.step.task_commands for w in cmd.words)
        yield finding("SB206", a.start, a.end,
                      f"MASTER_ADDR={var.value} reaches every task of this {nodes}-node step, "
                      "whose tasks run the program without a launcher: each one that joins "
                      "torch.distributed's env:// rendezvous looks for rank 0 on its own node, "
                      "and init_process_group waits until the timeout; export the first host "
                      "of the allocation: `export MASTER_ADDR=$(scontrol show hostnames "
                      "\"$SLURM_JOB_NODELIST\" | head -n1)`",
                      severity=None if env_url else Severity.WARNING,
                      related=[Related(sf.step.srun.start, sf.step.srun.end,
                                       f"this step runs on {nodes} nodes")])


def _task_assignments(job, ev, cmd, task_cmds, reported):
    """MASTER_ADDR/MASTER_PORT assigned by a command a step's tasks run: a loopback or
    per-node address, a port chosen in each task. Adds each reported (script, name) to
    ``reported`` so the launcher option that reads it is not reported again."""
    place, script = _place_of(job, cmd, task_cmds)
    assigns = list(cmd.assignments)
    if cmd.words and cmd.words[0].value in ("export", "declare"):
        assigns = [a for a in cmd.script.assignments if a.command is cmd]
    for a in assigns:
        if a.value is None or a.name not in ("MASTER_ADDR", "MASTER_PORT"):
            continue
        raw, val = a.value.text, a.value.value
        scope = ev.scope(a.value, place, script)
        if a.name == "MASTER_ADDR" and ((val and LOCAL_ADDR.match(val)) or
                                        scope in (Scope.NODE, Scope.TASK)):
            reported.add((id(script), a.name))
            fallback = (" (where scontrol may be missing, in a container, the local "
                        "fallback wins)" if val is None and LOCAL_ADDRESS.search(raw) else "")
            yield finding("SB206", a.start, a.end,
                          f"MASTER_ADDR={raw} is evaluated inside each task{fallback}, so "
                          "every node points the rendezvous at itself and init_process_group "
                          "waits forever; compute it once in the batch script: "
                          "`export MASTER_ADDR=$(scontrol show hostnames "
                          "\"$SLURM_JOB_NODELIST\" | head -n1)`")
        elif a.name == "MASTER_PORT" and place is Place.TASK and (
                scope in (Scope.NODE, Scope.TASK) or
                any(e.kind == "command" for e in a.value.expansions)):
            yield finding("SB206", a.start, a.end,
                          "MASTER_PORT is chosen inside each task, so nodes pick different "
                          "ports and never meet; set one port in the batch script (e.g. "
                          "`export MASTER_PORT=$((20000 + SLURM_JOB_ID % 10000))`)")


def _master_addr(job, ev, site, w, task_cmds, reported):
    """A launcher's ``--master-addr`` must name one host of the allocation for every node."""
    place, script = _place_of(job, site.command, task_cmds)
    scope = ev.scope(w, place, script)
    late = [e for e in w.expansions if e.quoting in ("unquoted", "double")]
    if any((id(script), e.name) in reported for e in late):
        return  # its assignment in this task is the finding
    if (w.value and LOCAL_ADDR.match(w.value)) or scope in (Scope.NODE, Scope.TASK):
        yield finding("SB206", w.start, w.end,
                      f"--master-addr={w.value or w.text} is resolved on each node, so every "
                      "node rendezvouses with itself; pass the first host of "
                      "$SLURM_JOB_NODELIST, computed once in the batch script")
    elif "SLURM_SUBMIT_HOST" in ev.roots(w, script):
        yield finding("SB206", w.start, w.end,
                      f"--master-addr={w.text} is the host sbatch ran on, outside the "
                      "allocation: no agent listens there and the rendezvous times out; "
                      "pass the first host of $SLURM_JOB_NODELIST")
    elif len(late) == 1 and late[0].name and late[0].early is None:
        yield from _local_address_from_outside(job, site.step.step, w, late[0].name)
    elif (outside := address_outside_allocation(job, w, script)) is not None:
        yield finding("SB206", w.start, w.end,
                      f"--master-addr: {outside}; no agent listens there and the "
                      "rendezvous times out; pass the first host of $SLURM_JOB_NODELIST")


def _endpoint(job, ev, site, w, task_cmds):
    """A ``--rdzv-endpoint`` must name one host of the allocation for every node."""
    place, script = _place_of(job, site.command, task_cmds)
    host = (w.value or "").rsplit(":", 1)[0] if w.value is not None else None
    if (host is not None and LOCAL_ADDR.match(host)) or \
            ev.scope(w, place, script) in (Scope.NODE, Scope.TASK):
        source = _per_node_source(ev, w, place, script)
        if source is not None:  # the task's own assignment is the text to edit
            fallback = (" (in a container without scontrol the local fallback wins)"
                        if LOCAL_ADDRESS.search(source.value.text) else "")
            yield finding("SB206", source.start, source.end,
                          f"{source.name} is computed inside each task{fallback}, and "
                          f"--rdzv-endpoint reads it: every node waits in its own rendezvous; "
                          "compute the first host of $SLURM_JOB_NODELIST once in the batch "
                          "script and export it",
                          related=[Related(w.start, w.end, "read here by the launcher")])
            return
        yield finding("SB206", w.start, w.end,
                      f"--rdzv-endpoint={w.value or w.text} is resolved on each node, so every "
                      "node waits in its own rendezvous; use the first host of "
                      "$SLURM_JOB_NODELIST, computed once in the batch script")


def _per_node_source(ev, w, place, script):
    """The task script's own assignment whose per-node value ``w`` reads, or None."""
    if place is not Place.TASK:
        return None
    for e in w.expansions:
        if not e.name or e.quoting not in ("unquoted", "double"):
            continue
        a = script.value_at(e.name, e.start)
        if a is not None and a.value is not None and \
                ev.scope(a.value, place, script) in (Scope.NODE, Scope.TASK):
            return a
    return None


def _local_address_from_outside(job, step, w, name):
    """``--master-addr=$MASTER_ADDR`` read in the task, where the value comes from the step's
    ``--export`` or the batch shell's export: a loopback address there is each node itself."""
    _, named = step.exports()
    given = named.get(name)
    if given is not None:
        if LOCAL_ADDR.match(given.strip("'\"")):
            ow = step.option_words["export"]
            yield finding("SB206", ow.start, ow.end,
                          f"this step exports {name}={given}: each node rendezvouses with itself "
                          f"(read by --master-addr here); use the first host of "
                          "$SLURM_JOB_NODELIST", related=[Related(w.start, w.end, "read here")])
        return
    a = job.script.value_at(name, step.command.start)
    if a is not None and a.value.value and LOCAL_ADDR.match(a.value.value) and \
            job.exported(name, before=step.command.start):
        yield finding("SB206", a.start, a.end,
                      f"{name}={a.value.value} reaches every task of a multi-node step, so each "
                      "node rendezvouses with itself; use the first host of $SLURM_JOB_NODELIST: "
                      f"`export {name}=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | "
                      "head -n1)`", related=[Related(w.start, w.end, "read here")])


@rule("SB207", "srun-cpus-per-task", Severity.WARNING,
      "steps that lose `--cpus-per-task` because srun does not inherit it (Slurm 22.05–23.02)",
      fix="unsafe",
      rests_on=("cpus-per-task",))
def srun_cpus_per_task(job):
    """From 22.05 through 23.02 srun does not read SLURM_CPUS_PER_TASK, so a step gets one CPU
    per task unless it passes ``-c`` or SRUN_CPUS_PER_TASK is exported; 23.11 restored the
    inheritance ([slurm] RELEASE_NOTES at slurm-22-05-0-1 and slurm-23-11-0-1; slurm-facts.md
    §6.3). Follows the profile's ``slurm-version``; the step's CPUs per task are the step
    facts' (facts/steps.py)."""
    v = opts.version_key(job.profile.slurm_version)
    if not (22, 5) <= v < (23, 11):
        return
    cpt = job_counts(job).cpus_per_task
    if cpt.use is None or cpt.value == 1:
        return
    first = True
    for sf in facts_of(job).steps:
        step = sf.step
        if "cpus-per-task" in step.options or step.hidden or sf.cpus_per_task != 1:
            continue  # its own -c, options we cannot see, or SRUN_CPUS_PER_TASK exported
        fixes = []
        if first:
            fixes.append(Fix("export SRUN_CPUS_PER_TASK before the first step",
                             (insert_line_before(
                                 job, step.command,
                                 'export SRUN_CPUS_PER_TASK="$SLURM_CPUS_PER_TASK"'),),
                             safe=False))
        first = False
        yield finding("SB207", step.srun.start, step.srun.end,
                      f"on Slurm {job.profile.slurm_version} srun does not inherit "
                      f"`--cpus-per-task={cpt.text}`: each task of this step gets one CPU "
                      "(data loaders and OpenMP threads crowd onto it); pass "
                      "`--cpus-per-task=\"$SLURM_CPUS_PER_TASK\"` or export "
                      "SRUN_CPUS_PER_TASK (Slurm 23.11 inherits it again)",
                      related=[Related(cpt.use.start, cpt.use.end,
                                       "the job asks for this many CPUs per task")],
                      fixes=fixes)
