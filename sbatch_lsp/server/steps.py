"""What each srun step runs, shown in the editor: a code lens above every ``srun`` (and the
detail of its document symbol) from the same facts ``sbatch-lint show`` prints."""
from __future__ import annotations

from lsprotocol import types as t

from ..facts.steps import StepFacts, facts_of
from .documents import Linted


def _n(v: object) -> str:
    return "?" if v is None else str(v)


def step_summary(s: StepFacts) -> str:
    """One line: ``2 node(s) × 4 task(s)/node = 8 task(s) · 4 GPU(s)/node · torchrun: world
    16, 8 rank(s)/node``; ``?`` where Slurm's layout is not known from the script."""
    lay = s.layout
    tpn = lay.tasks_per_node
    per_node = "uneven" if isinstance(tpn, list) else _n(tpn)
    parts = [f"{_n(lay.nodes)} node(s) × {per_node} task(s)/node = {_n(lay.tasks)} task(s)"]
    if s.gpus_per_node is not None:
        parts.append(f"{s.gpus_per_node} GPU(s)/node")
    if s.container:
        parts.append(f"container {s.container}")
    if s.launcher:
        parts.append(f"{s.launcher}: world {_n(s.world_size)}, "
                     f"{_n(s.ranks_per_node)} rank(s)/node")
    return " · ".join(parts)


def code_lenses(linted: Linted) -> list[t.CodeLens]:
    """A lens on the ``srun`` word of every step; its title is the step's summary (the
    command is empty: a label, nothing to run), masked like every output."""
    job = linted.result.job
    if job is None:
        return []
    pos = linted.positions
    return [t.CodeLens(range=pos.range(s.step.srun.start, s.step.srun.end),
                       command=t.Command(title=linted.result.mask(step_summary(s)), command=""))
            for s in facts_of(job).steps]
