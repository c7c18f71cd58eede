"""SB7xx: the site's own limits, judged against an imported site profile (``profile.partitions``,
written by ``sbatch-lint profile import``). Without partitions in the profile every rule here is
silent.

The job's partition is its ``--partition`` directive, or the profile's default partition (then
the command line or ``SBATCH_PARTITION`` may choose another, so findings are info). A comma list
of partitions means any of them may take the job: a limit is reported only when none fits
(``EnforcePartLimits=ALL`` refuses a job that breaks any listed partition's size or time limit:
slurm.conf(5)). Each finding sits at the directive to edit, the partition as related evidence.

What the controller does (slurm.conf(5) EnforcePartLimits, squeue(1) JOB REASON CODES; observed
with Slurm 22.05.8 on the project's cluster tier, tests/slurm/test_profile_cluster.py):

- an unknown partition: always refused, "Batch job submission failed: Invalid partition name
  specified";
- time above the partition's MaxTime, or more nodes than it allows (MaxNodes) or has
  (TotalNodes): refused at submission when EnforcePartLimits is ALL or ANY ("Requested time
  limit is invalid (missing or exceeds some limit)", "Node count specification invalid");
  accepted and pending for ever, reason PartitionTimeLimit or PartitionNodeLimit, when it is
  NO (the default);
- more GPUs or memory per node than its nodes have, or a GPU type none of them has: refused,
  "Requested node configuration is not available" (for memory after "Memory specification can
  not be satisfied");
- a ``--constraint`` feature no node of the cluster has: refused, "Invalid feature
  specification"; one only other partitions' nodes have: "Requested node configuration is not
  available".
"""
from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

from ..directives import OptionUse
from ..facts.layout import gpu_count
from ..facts.partitions import Target, listed, located, target
from ..values import format_time, mbytes, time_seconds
from . import Edit, Fix, Related, Severity, finding, rule

if TYPE_CHECKING:
    from ..config import Partition

UNAVAILABLE = "\"Batch job submission failed: Requested node configuration is not available\""


def _severity(t: Target, derived: bool = False) -> Severity:
    if t.use is None:
        return Severity.INFO
    return Severity.WARNING if derived else Severity.ERROR


def _where(t: Target) -> str:
    if t.use is None:
        return (f"the default partition {t.names[0]} (the script names none; the sbatch command "
                "line or SBATCH_PARTITION may choose another)")
    if len(t.names) == 1:
        return f"partition {t.names[0]}"
    return f"any of the partitions {', '.join(t.names)}"


def _related(t: Target, say) -> list[Related]:
    if t.use is None:
        return []
    return [Related(t.use.start, t.use.end, "; ".join(say(n, p) for n, p in
                                                      zip(t.names, t.parts, strict=True)))]


@rule("SB701", "unknown-partition", Severity.ERROR,
      "a `--partition` the site profile does not list: sbatch refuses the job", fix="unsafe")
def unknown_partition(job):
    """Each name of ``--partition`` that is not one of the profile's partitions (slurmctld
    refuses the job when any listed partition is unknown: src/slurmctld/job_mgr.c
    ``_get_job_parts``, "invalid partition specified")."""
    parts = job.profile.partitions
    use = job.directives.get("partition")
    if not parts or use is None or not use.value or any(c in use.value for c in "$`{<"):
        return
    for name, start, end in listed(job, use):
        if name in parts:
            continue
        close = [n for n in parts if n.lower() == name.lower()] or \
            difflib.get_close_matches(name, list(parts), n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]}?)" if close else \
            f" (the site's partitions: {', '.join(sorted(parts))})"
        # unsafe: another partition means other nodes, limits and accounting
        fixes = [Fix(f"use partition {close[0]}", (Edit(start, end, close[0]),), safe=False)] \
            if close and job.source.text[start:end] == name else []
        yield finding("SB701", start, end,
                      f"partition {name} is not one of the site's partitions{hint}: sbatch "
                      "refuses the job (\"sbatch: error: invalid partition specified: "
                      f"{name}\", \"Batch job submission failed: Invalid partition name "
                      "specified\")", fixes=fixes)


def _limit_outcome(job, reason: str, refusal: str) -> str:
    """What the controller does with a job over a partition's time or size limit, as far as the
    profile's ``enforce-part-limits`` says."""
    epl = job.profile.enforce_part_limits
    pending = (f"the job is accepted but never starts: it stays pending with reason {reason}")
    refused = f"sbatch refuses the job (\"Batch job submission failed: {refusal}\")"
    if epl in ("ALL", "ANY"):
        return f"{refused}: the site enforces partition limits at submission " \
               f"(EnforcePartLimits={epl})"
    if epl == "NO":
        return f"{pending} (EnforcePartLimits=NO)"
    return (f"where the site enforces partition limits at submission (EnforcePartLimits=ALL or "
            f"ANY) {refused}; otherwise {pending}; the profile does not say which (import "
            "`scontrol show config` to know)")


def _over(t: Target, job, over) -> bool:
    """Whether the job breaks the limit ``over(partition)`` where it matters: in every listed
    partition, or in any of them when the site enforces ALL of them at submission."""
    hits = [over(p) for p in t.parts]
    if job.profile.enforce_part_limits == "ALL" and t.use is not None:
        return any(hits)
    return all(hits)


@rule("SB702", "time-over-partition-limit", Severity.ERROR,
      "`--time` above the partition's MaxTime: refused, or pending for ever (PartitionTimeLimit)")
def time_over_limit(job):
    """``--time`` against the partition's ``max-time`` (slurm.conf(5) MaxTime and
    EnforcePartLimits; squeue(1) reason PartitionTimeLimit)."""
    t = target(job)
    use = job.directives.get("time")
    if t is None or use is None or not use.value:
        return
    secs = time_seconds(use.value)
    if secs is None:
        return  # SB105 reports a time sbatch refuses

    def over(p: Partition) -> bool:
        return p.max_time is not None and (secs < 0 or secs > p.max_time)

    if not _over(t, job, over):
        return
    asked = "UNLIMITED" if secs < 0 else format_time(secs)
    limits = [format_time(p.max_time) for p in t.parts if p.max_time is not None]
    yield finding(
        "SB702", use.start, use.end,
        f"--time={use.value} ({asked}) is above the time limit of {_where(t)} "
        f"(MaxTime {', '.join(limits)}): "
        + _limit_outcome(job, "PartitionTimeLimit",
                         "Requested time limit is invalid (missing or exceeds some limit)")
        + "; ask for at most the limit, or use a partition that allows it",
        severity=_severity(t),
        related=_related(t, lambda n, p: f"{n}: MaxTime="
                         f"{format_time(p.max_time) if p.max_time is not None else 'UNLIMITED'}"))


@rule("SB703", "nodes-over-partition", Severity.ERROR,
      "more nodes than the partition allows (MaxNodes) or has (TotalNodes)")
def nodes_over_partition(job):
    """The job's minimum node count against the partition's ``max-nodes`` (MaxNodes) and
    ``total-nodes`` (TotalNodes). Both are partition limits to the controller: with
    EnforcePartLimits=NO a job over either is accepted and pends with reason PartitionNodeLimit
    (observed on Slurm 22.05.8 for ``-N 3`` on a two-node partition), otherwise it is refused."""
    t = target(job)
    use = job.nodes.use
    n = job.nodes.value  # after sbatch's own adjustments (--ntasks below it lowers it)
    if t is None or use is None or n is None:
        return

    def limit(p: Partition) -> int | None:
        known = [x for x in (p.max_nodes, p.total_nodes) if x is not None]
        return min(known) if known else None

    def over(p: Partition) -> bool:
        lim = limit(p)
        return lim is not None and n > lim

    def say(name: str, p: Partition) -> str:
        return f"{name}: TotalNodes={p.total_nodes if p.total_nodes is not None else '?'}, " \
               f"MaxNodes={p.max_nodes if p.max_nodes is not None else 'UNLIMITED'}"

    if not _over(t, job, over):
        return
    has = [p.total_nodes for p in t.parts if p.total_nodes is not None and n > p.total_nodes]
    what = (f"has only {max(has)} node{'s' if max(has) != 1 else ''}" if len(has) == len(t.parts) else
            f"allows at most {max(limit(p) or 0 for p in t.parts)} per job (MaxNodes)")
    yield finding("SB703", use.start, use.end,
                  f"--nodes={use.value} asks for {n} nodes but {_where(t)} {what}: "
                  + _limit_outcome(job, "PartitionNodeLimit", "Node count specification invalid"),
                  severity=_severity(t), related=_related(t, say))


@rule("SB704", "gpus-over-node", Severity.ERROR,
      "more GPUs per node than the partition's nodes have: sbatch refuses the job")
def gpus_over_node(job):
    """GPUs per node (``--gpus-per-node``, ``--gres=gpu:N``, ``--gpus-per-task`` times the tasks
    per node, ``--gpus`` on one node) against the partition's ``gpus-per-node`` (its largest
    node's ``Gres=gpu:…``); a ``--gpus`` total over a known node count against what that many
    of its largest nodes hold."""
    t = target(job)
    if t is None:
        return
    counts = [p.gpus_per_node for p in t.parts if p.gpus_per_node is not None]
    if len(counts) < len(t.parts):
        return
    have = max(counts)
    each = "have no GPUs" if have == 0 else f"have at most {have} GPUs each"
    want, use = job.gpus_per_node.value, job.gpus_per_node.use
    if want is not None and use is not None and want > 0:
        if want <= have:
            return
        what = f"{want} GPUs per node, but the nodes of {_where(t)} {each}"
    else:
        use = job.directives.get("gpus")
        total = gpu_count(use.value) if use is not None else None
        nodes = job.nodes.value
        if use is None or total is None or nodes is None or total <= have * nodes:
            return
        what = (f"--gpus={use.value} over {nodes} node{'s' if nodes != 1 else ''}, but the nodes "
                f"of {_where(t)} {each} ({have * nodes} in all)")
    derived = any("gpus-per-node" in p.derived for p in t.parts)
    yield finding(
        "SB704", use.start, use.end,
        f"{what}: sbatch refuses the job ({UNAVAILABLE})"
        + (" (the profile derives the per-node figure, from the partition's TRES sum or some of its "
           "nodes: check it)"
           if derived else ""),
        severity=_severity(t, derived),
        related=_related(t, lambda n, p: f"{n}: {p.gpus_per_node} GPUs per node"))


def _gpu_types(job) -> list[tuple[str, OptionUse]]:
    """The GPU types the job's directives name, with their directive: ``--gres=gpu:TYPE[:N]``,
    ``--gpus*=TYPE:N``."""
    out = []
    d = job.directives
    use = d.get("gres")
    if use is not None and use.value:
        for item in use.value.split(","):
            parts = item.strip().split(":")
            if parts[0] in ("gpu", "gres/gpu") and len(parts) >= 2 and \
                    not parts[1].split("(")[0].isdigit():
                out.append((parts[1], use))
    for name in ("gpus-per-node", "gpus", "gpus-per-task", "gpus-per-socket"):
        use = d.get(name)
        if use is not None and use.value:
            for item in use.value.split(","):
                parts = item.strip().split(":")
                if len(parts) == 2 and parts[0] and not parts[0].isdigit():
                    out.append((parts[0], use))
    return out


@rule("SB705", "unknown-gpu-type", Severity.ERROR,
      "a GPU type in `--gres`/`--gpus*` that the partition's nodes do not have")
def unknown_gpu_type(job):
    """GPU types the job asks for against the GRES types of the partition's nodes
    (``Gres=gpu:TYPE:N``), judged only when the profile lists the types."""
    t = target(job)
    if t is None or any(p.gpu_types is None for p in t.parts):
        return
    known = sorted({k for p in t.parts for k in p.gpu_types or ()})
    for kind, use in _gpu_types(job):
        if kind.lower() in {k.lower() for k in known}:
            continue
        close = difflib.get_close_matches(kind, known, n=1, cutoff=0.4)
        hint = f"did you mean {close[0]}? " if close else ""
        have = f"{hint}they have: {', '.join(known)}" if known else \
            "their GPUs have no type: ask for a count only, --gres=gpu:N"
        _, first, last = located(job, use, [kind])[0]
        yield finding(
            "SB705", first, last,
            f"GPU type {kind} is not one the nodes of {_where(t)} have ({have}): sbatch "
            f"refuses the job ({UNAVAILABLE})",
            severity=_severity(t),
            related=_related(t, lambda n, p: f"{n}: GPU types "
                             f"{', '.join(p.gpu_types or ()) or '(untyped)'}"))


@rule("SB706", "memory-over-node", Severity.ERROR,
      "`--mem` above the memory of the partition's largest node: sbatch refuses the job")
def memory_over_node(job):
    """``--mem`` (per node, MB) against the partition's ``mem-per-node`` (its largest node's
    RealMemory); ``--mem=0`` asks for all of a node's memory and always fits."""
    t = target(job)
    use = job.directives.get("mem")
    want = mbytes(use.value) if use is not None and use.value else None
    if t is None or use is None or not want:
        return
    sizes = [p.mem_per_node for p in t.parts if p.mem_per_node is not None]
    if len(sizes) < len(t.parts) or not all(want > m for m in sizes):
        return
    have = max(sizes)
    derived = any("mem-per-node" in p.derived for p in t.parts)
    yield finding(
        "SB706", use.start, use.end,
        f"--mem={use.value} ({want} MB per node) is more than the nodes of {_where(t)} have "
        f"(at most {have} MB, RealMemory): sbatch refuses the job (\"Memory specification can "
        f"not be satisfied\", {UNAVAILABLE})"
        + (" (the profile derives the per-node figure, from the partition's TRES sum or some of its "
           "nodes: check it)"
           if derived else ""),
        severity=_severity(t, derived),
        related=_related(t, lambda n, p: f"{n}: {p.mem_per_node} MB per node"))


#: the operators of a ``--constraint`` expression (sbatch(1): ``&``, ``|``, ``[...]`` matching
#: OR, ``*N`` counts, parentheses; a comma is read as AND)
CONSTRAINT_SPLIT = re.compile(r"\*\d+|[&|,()\[\]]")


def _features(job, use: OptionUse) -> list[tuple[str, int, int]]:
    """The feature names of a ``--constraint`` value with their spans in the file."""
    names = [n.strip() for n in CONSTRAINT_SPLIT.split(use.value or "") if n.strip()]
    return located(job, use, names)


@rule("SB707", "unknown-feature", Severity.ERROR,
      "a `--constraint` feature that the partition's nodes do not have: sbatch refuses the job")
def unknown_feature(job):
    """``--constraint`` names against the AvailableFeatures of the partition's nodes, judged when
    the profile lists them. Observed on Slurm 22.05.8: a name no node of the cluster has is
    refused with "Invalid feature specification" (inside an OR too); one that only nodes of
    other partitions have, with "Requested node configuration is not available"; names are
    case-sensitive. In an OR (``a|b``) only names no partition has are reported."""
    t = target(job)
    use = job.directives.get("constraint")
    if t is None or use is None or not use.value or any(c in use.value for c in "$`{<"):
        return
    if any(p.features is None for p in t.parts):
        return
    here = {f for p in t.parts for f in p.features or ()}
    anywhere = {f for p in job.profile.partitions.values() for f in p.features or ()}
    alternatives = "|" in use.value
    for name, start, end in _features(job, use):
        if name in here or (alternatives and name in anywhere):
            continue
        if name in anywhere:
            why = (f"only nodes of other partitions have it: sbatch refuses the job "
                   f"({UNAVAILABLE})")
        else:
            close = difflib.get_close_matches(name, sorted(anywhere), n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]}?)" if close else ""
            why = (f"no node of the site has it{hint}: sbatch refuses the job (\"Batch job "
                   "submission failed: Invalid feature specification\")")
        have = ", ".join(sorted(here)) or "none"
        yield finding("SB707", start, end,
                      f"feature {name} is not one the nodes of {_where(t)} have (their "
                      f"features: {have}); {why}",
                      severity=_severity(t),
                      related=_related(t, lambda n, p: f"{n}: features "
                                       f"{', '.join(p.features or ()) or '(none)'}"))
