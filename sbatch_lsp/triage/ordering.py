"""Which failure came first, and how sure that is.

Timestamps order the evidence when the candidates carry them; otherwise causal evidence does:
cascade categories (SIGTERM, watchdog timeouts, waits for a peer) never start a failure; what
follows a Slurm stop (time limit, preemption, node failure, scancel) is its consequence; a host
OOM kill, a GPU fault or a failed node explains the errors its peers then raise; among the rest
the earliest in the log. ``confidence`` is ``certain`` when one rank (or one node) alone shows
a cause, ``likely`` when it was chosen among several, and ``unknown`` when the log shows only
the waiting side.
"""
from __future__ import annotations

from dataclasses import dataclass

from .categories import CATEGORIES
from .recognisers import Evidence, Scan

STOPS = ("time-limit", "preemption", "node-failure", "cancelled")
#: causes that explain the errors their peers raise afterwards
DOMINANT = ("host-oom", "gpu-hardware", "node-failure")


@dataclass
class Verdict:
    """The chosen ``root`` (None: the log shows no cause), the ``rank``/``node`` that failed
    first and how sure each is, and the ``cascade`` (everything else that failed)."""

    root: Evidence | None
    root_confidence: str
    rank: int | None
    node: str | None
    where: Evidence | None
    first_confidence: str
    cascade: list[Evidence]


def _order(paths: list[str]):
    index = {p: i for i, p in enumerate(paths)}

    def key(e: Evidence) -> tuple:
        return (index.get(e.where.path, 0), e.where.line)
    return key


def _after(e: Evidence, stop: Evidence, key) -> bool:
    if e.where.time is not None and stop.where.time is not None:
        return e.where.time > stop.where.time
    return key(e) > key(stop)


def node_of(e: Evidence, scan: Scan) -> str | None:
    """The node of ``e``: its own, the node srun's echo places its task on, or the one host
    torchelastic's reports name for its global rank (a ``[rank5]:`` traceback carries no host;
    the agent's ``host : … rank : 5`` record does)."""
    if e.node:
        return e.node
    if e.where.task is not None and e.where.task in scan.task_nodes:
        return scan.task_nodes[e.where.task]
    if e.rank is not None:
        hosts = scan.rank_nodes.get(e.rank, set())
        if len(hosts) == 1:
            return next(iter(hosts))
    return None


def _who(e: Evidence) -> tuple:
    return (e.rank, e.node, e.where.task, e.where.local_rank, e.where.host)


def decide(scan: Scan, paths: list[str]) -> Verdict:
    """The verdict for one job's scan; ``paths`` in the order given (file order breaks ties)."""
    key = _order(paths)
    evidence = sorted(scan.evidence, key=key)
    stops = [e for e in evidence if e.category in STOPS]
    # a plain cancellation after ranks already timed out or lost peers is srun ending the step:
    # part of the cascade, not a cause
    stops = [e for e in stops if e.category != "cancelled" or not any(
        c.cascade and c.category not in ("srun-exit", "launcher-report") and key(c) < key(e)
        for c in evidence)]
    origins = [e for e in evidence if not e.cascade and e.category not in STOPS]
    if stops:  # what follows a stop is its consequence, unless it explains the stop
        origins = [e for e in origins if not _after(e, stops[0], key) or
                   e.category in DOMINANT] or [stops[0]]
    timed = origins and all(e.where.time is not None for e in origins)
    dominant = [e for e in origins if e.category in DOMINANT]
    pool = dominant or [e for e in origins if CATEGORIES[e.category].strength > 1] or origins
    if timed:
        pool.sort(key=lambda e: (e.where.time, -CATEGORIES[e.category].strength, key(e)))
    else:
        pool.sort(key=key)
    root = pool[0] if pool else None
    cascade = [e for e in evidence if e is not root]
    if root is None:
        return _waiting_side(scan, cascade)
    same = [e for e in origins if e.category == root.category]
    root_conf = "certain" if len(same) == len(origins) else "likely"
    rank, node = root.rank, node_of(root, scan)
    if root.category in STOPS:  # the whole job was stopped: no rank failed first
        return Verdict(root, root_conf, None, None, None, "unknown", cascade)
    if node is None:  # another line of the same cause may name the node (srun's echo)
        nodes = {node_of(e, scan) for e in origins if e.category == root.category} - {None}
        node = nodes.pop() if len(nodes) == 1 else None
    if rank is None:
        rank = _rank_from_reports(scan, node)
    failing = {_who(e) for e in origins if e.category not in STOPS}
    first_conf = "certain" if len(failing) <= 1 else "likely"
    if rank is None:
        echo_rank, echo_node = _from_srun_echo(scan, root)
        if echo_rank is not None and node in (None, echo_node):
            rank, node, first_conf = echo_rank, echo_node, "likely"
    if rank is None and root.category == "address-in-use":
        rank, first_conf = 0, "likely"  # the store's server is rank 0 (node rank 0's agent)
    if node is None:
        node = _failed_task_node(scan)
    if rank is None and node is None:
        first_conf = "unknown"
    return Verdict(root, root_conf, rank, node, root, first_conf, cascade)


def _from_srun_echo(scan: Scan, root: Evidence) -> tuple[int | None, str | None]:
    """The one task srun says failed (exit code ≠ 0 and not a signal, or Out Of Memory for an
    OOM kill), as (rank, node): with no launcher in the log (no torchelastic report, no rank
    prefixes) srun's task id is the rank."""
    if scan.launcher or any(e.category == "launcher-report" or e.where.rank is not None or
           e.where.local_rank is not None for e in scan.evidence):
        return None, None
    want = ("Out Of Memory",) if root.category == "host-oom" else None
    failed = [r for r in scan.exits if r.source == "srun" and (
        r.code in want if want else r.code.isdigit() and r.code != "0")]
    tasks = {(t, r.node) for r in failed for t in r.tasks}
    if len(tasks) == 1:
        return tasks.pop()
    return None, None


def _failed_task_node(scan: Scan) -> str | None:
    """The node srun's echo names for the one task that exited with an error code ("srun:
    error: NODE: task N: Exited with exit code C"), a launcher's agent or the program itself,
    unless a launcher in the log was stopped by a signal: torchrun turns SIGTERM into a
    SignalException and exits with code 1 as well
    (``torch/distributed/elastic/multiprocessing/api.py`` ``_terminate_process_handler``), so an
    exit code then does not single out the task that failed."""
    if any(e.category == "sigterm" and e.detail.startswith(("signal ", "received signal"))
           for e in scan.evidence):
        return None
    failed = {(t, r.node) for r in scan.exits if r.source == "srun" and r.node and
              r.code.isdigit() and r.code != "0" for t in r.tasks}
    return failed.pop()[1] if len(failed) == 1 else None


def _rank_from_reports(scan: Scan, node: str | None) -> int | None:
    """The rank torchelastic's report names on ``node`` (the earliest non-SIGTERM failure), when
    it names exactly one."""
    reports = [e for e in scan.evidence if e.category == "launcher-report" and e.rank is not None
               and (node is None or e.node == node)]
    ranks = {e.rank for e in reports}
    if len(ranks) == 1:
        return ranks.pop()
    timed = [e for e in reports if e.where.time is not None]
    if timed:
        timed.sort(key=lambda e: e.where.time)  # type: ignore[arg-type, return-value]
        if len(timed) == 1 or timed[0].where.time != timed[1].where.time:
            return timed[0].rank
    return None


def _waiting_side(scan: Scan, cascade: list[Evidence]) -> Verdict:
    """No cause in the log: the waiting side may still point at a rank. A peer's hint ("crash
    on rank 0"), the one rank missing among watchdog timeouts of ranks 0..max, or torchelastic's
    earliest reported failure."""
    suspects = {e.suspect for e in cascade if e.suspect is not None}
    if len(suspects) == 1:
        return Verdict(None, "unknown", suspects.pop(), None, None, "likely", cascade)
    timeouts = {e.rank for e in cascade if e.category == "nccl-timeout" and e.rank is not None}
    if len(timeouts) >= 2:
        missing = set(range(max(timeouts) + 1)) - timeouts
        if len(missing) == 1:
            return Verdict(None, "unknown", missing.pop(), None, None, "likely", cascade)
    signals = [e for e in cascade if e.category == "sigterm" and
               e.detail.startswith("received signal")]
    if signals:  # a launcher killed from outside, and nothing else failed before it
        return Verdict(signals[0], "likely", signals[0].rank, signals[0].node, signals[0],
                       "unknown" if signals[0].rank is None else "likely",
                       [e for e in cascade if e is not signals[0]])
    reports = sorted((e for e in cascade if e.category == "launcher-report"),
                     key=lambda e: (e.where.time is None, e.where.time or 0.0))
    if reports:
        r = reports[0]
        return Verdict(None, "unknown", r.rank, r.node, r, "likely" if r.where.time else
                       "unknown", cascade)
    return Verdict(None, "unknown", None, None, None, "unknown", cascade)
