"""Job arrays: whether a job is one, and what a path varies by across its tasks.

Slurm facts (sbatch(1) ``--array``, "OUTPUT ENVIRONMENT VARIABLES" and "filename pattern";
job_array.html, Slurm 22.05): every task of an array is its own job with its own
``SLURM_JOB_ID`` (``%j``) and ``SLURM_ARRAY_TASK_ID`` (``%a``); ``SLURM_ARRAY_JOB_ID`` (``%A``)
is the first task's job id, the same for every task of the array.
"""
from __future__ import annotations

import re
from typing import Literal

from ..directives import DirectiveBlock
from ..shell.model import Script, Word
from .values import SUBMIT_VARS, Evaluator

#: the same for every task of an array
ARRAY_JOB_VARS = frozenset({"SLURM_ARRAY_JOB_ID"})
#: different for every task of an array (and every job)
ARRAY_TASK_VARS = frozenset({"SLURM_ARRAY_TASK_ID", "SLURM_JOB_ID", "SLURM_JOBID",
                             "SLURM_TASK_PID", "RANDOM", "BASHPID", "$"})

Variance = Literal["array-task", "array-job", "none", "unknown"]


def is_array(block: DirectiveBlock) -> bool:
    """Whether the script's own directives make it a job array (``#SBATCH --array``)."""
    return block.get("array") is not None


def array_variance(word: Word, script: Script, ev: Evaluator) -> Variance:
    """What ``word``'s value varies by across the tasks of an array, following the script's
    assignments (``Evaluator.roots``): ``array-task`` when it reads a per-task id
    (``$SLURM_ARRAY_TASK_ID``, ``$SLURM_JOB_ID``, ``$RANDOM``, …), ``array-job`` when it reads
    ``$SLURM_ARRAY_JOB_ID`` and nothing that may differ per task, ``none`` when it reads
    neither, ``unknown`` when it holds a command substitution or a lower-case name no
    assignment sets (a loop or ``read`` variable, which may come from the task id).
    Upper-case names no assignment sets are the submitting environment, the same for every
    task."""
    if any(e.kind == "command" for e in word.expansions):
        return "unknown"
    roots = ev.roots(word, script)
    if roots & ARRAY_TASK_VARS:
        return "array-task"
    unknown = {r for r in roots if not (r.isupper() or r in SUBMIT_VARS)}
    if unknown:
        return "unknown"
    if _substituted(word, script, ev):
        return "unknown"
    return "array-job" if roots & ARRAY_JOB_VARS else "none"


def _substituted(word: Word, script: Script, ev: Evaluator, depth: int = 0) -> bool:
    """Whether a variable ``word`` reads is assigned from a command substitution (its value
    may be computed from the task id in ways the roots do not show)."""
    if depth > 16:
        return True
    for e in word.expansions:
        if not e.name:
            continue
        a = script.value_at(e.name, e.start)
        if a is None or a.value is None:
            continue
        if any(x.kind == "command" for x in a.value.expansions) or \
                _substituted(a.value, script, ev, depth + 1):
            return True
    return False


#: one item of an ``--array`` index list: ``N``, ``N-M`` or ``N-M:STEP``
ARRAY_ITEM = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?")


def max_array_index(value: str) -> int | None:
    """The largest task index an ``--array`` value makes (``0-99`` → 99, ``1-10:4`` → 9,
    ``5,1000-1002%10`` → 1002), or None when the value is not a literal index list. The
    ``%MAX_RUNNING`` suffix limits concurrency, not indices (sbatch(1) ``--array``)."""
    body = value.strip().strip("'\"").split("%", 1)[0]
    best = -1
    for item in body.split(","):
        m = ARRAY_ITEM.fullmatch(item)
        if m is None:
            return None
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) else first
        step = int(m.group(3)) if m.group(3) else 1
        if last < first or step < 1:
            return None
        best = max(best, first + (last - first) // step * step)
    return best if best >= 0 else None
