"""Document symbols (the directive block with its resources, each srun step) and inlay hints
next to the directive block (total GPUs, GPU-hours for ``--time``)."""
from __future__ import annotations

from lsprotocol import types as t

from ..facts.steps import facts_of
from ..values import time_seconds
from .documents import Linted
from .steps import step_summary


def _resources(job) -> str:
    parts = []
    if job.nodes.known:
        parts.append(f"{job.nodes.value} node(s)")
    if job.ntasks_per_node.known:
        parts.append(f"{job.ntasks_per_node.value} task(s)/node")
    elif job.ntasks.known:
        parts.append(f"{job.ntasks.value} task(s)")
    if job.gpus_per_node.known:
        parts.append(f"{job.gpus_per_node.value} GPU(s)/node")
    limit = job.directives.value("time")
    if limit:
        parts.append(f"time {limit}")
    return ", ".join(parts)


def document_symbols(linted: Linted) -> list[t.DocumentSymbol]:
    """The ``#SBATCH`` block (its options as children) and the srun steps, in text order."""
    job = linted.result.job
    if job is None:
        return []
    pos = linted.positions
    src = linted.result.source
    shown = linted.result.mask
    out = []
    block = job.directives
    if block.lines:
        first = src.line_starts[block.lines[0].line]
        last = block.lines[-1]
        children = [t.DocumentSymbol(
            name=shown(f"--{u.name}" + (f"={u.value}" if u.value is not None else "")),
            kind=t.SymbolKind.Property, range=pos.range(u.start, u.end),
            selection_range=pos.range(u.start, u.name_end)) for u in block.options if u.ok]
        out.append(t.DocumentSymbol(
            name="#SBATCH directives", detail=shown(_resources(job)) or None,
            kind=t.SymbolKind.Namespace, range=pos.range(first, last.end),
            selection_range=pos.range(first, first + len("#SBATCH")),
            children=children))
    for facts in facts_of(job).steps:
        step = facts.step
        cmd = step.command
        words = " ".join(w.text for w in step.argv[:3])
        line_end = src.line_end(src.line_of(cmd.start))
        out.append(t.DocumentSymbol(
            name=shown(f"srun {words}".strip()), detail=shown(step_summary(facts)),
            kind=t.SymbolKind.Event, range=pos.range(cmd.start, max(cmd.end, cmd.start)),
            selection_range=pos.range(step.srun.start, min(step.srun.end, line_end))))
    return out


def inlay_hints(linted: Linted) -> list[t.InlayHint]:
    """At the end of the directive block: total GPUs (nodes x GPUs per node) and, with a
    ``--time``, GPU-hours at the full time limit. Nothing when a count is not known."""
    job = linted.result.job
    if job is None or not job.directives.lines:
        return []
    if job.nodes.value is None or not job.gpus_per_node.value:
        return []
    total = job.nodes.value * job.gpus_per_node.value
    label = f"{total} GPUs ({job.nodes.value} × {job.gpus_per_node.value})"
    limit = job.directives.value("time")
    seconds = time_seconds(limit) if limit else None
    if seconds:
        label += f", {total * seconds / 3600:g} GPU-hours at --time={limit}"
    end = linted.positions.position(job.directives.lines[-1].end)
    return [t.InlayHint(position=end, label=linted.result.mask(label), padding_left=True,
                        tooltip="sbatch-lsp: what this job requests (sbatchLsp inlayHints)")]
