"""The ports a launch's rendezvous binds: which numbers a port word can take when the job runs.

A port word is a literal (``29500``), a variable followed to its assignment, an arithmetic
expansion over literals, ``$RANDOM`` (0–32767, bash(1) "Shell Variables") and job-constant
Slurm numbers (``$SLURM_JOB_ID``: any positive 32-bit id), or ``$(shuf -i LO-HI -n 1)``
(coreutils shuf(1)). The result is the closed interval of values it can take, and whether it
is one fixed number for every job.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..shell.model import Script, Word

#: job-constant Slurm numbers (sbatch(1) OUTPUT ENVIRONMENT VARIABLES): unbounded ids
JOB_NUMBERS = frozenset({"SLURM_JOB_ID", "SLURM_JOBID", "SLURM_ARRAY_JOB_ID",
                         "SLURM_ARRAY_TASK_ID"})
#: bash's $RANDOM: 0..32767
RANDOM_RANGE = (0, 32767)
MAX_ID = 2 ** 32 - 1
ARITH = re.compile(r"^\$\(\((.*)\)\)$", re.S)
SHUF = re.compile(r"^\$\(\s*shuf\s+(?:-n\s*1\s+)?-i\s*(\d+)-(\d+)(?:\s+-n\s*1)?\s*\)$")
VAR = re.compile(r"\$\{?(\w+)\}?")
MAX_CHAIN = 8


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class PortRange:
    """The ports a word can name: ``low``..``high`` inclusive; ``fixed`` when it is one literal
    number for every job (two jobs on a node bind the same port); ``word`` the word that holds
    the expression (the assignment's value when the port came through a variable)."""

    low: int
    high: int
    fixed: bool
    word: Word

    @property
    def size(self) -> int:
        return self.high - self.low + 1

    def overlap(self, first: int, last: int) -> int:
        """How many of these ports lie in ``first``..``last``."""
        return max(0, min(self.high, last) - max(self.low, first) + 1)


def port_range(word: Word, script: Script, batch: Script | None = None, batch_at: int = 0,
               depth: int = 0) -> PortRange | None:
    """The ports ``word`` can name when the job runs (None when it cannot be bounded).
    A ``$NAME`` is followed to its last assignment in ``script`` before the word, then in
    ``batch`` (the batch script, whose exported values a task inherits) before ``batch_at``
    (the srun command's offset)."""
    if word.early:
        return None  # the batch shell's values flowed in as placeholders
    text = word.value if word.value is not None else word.text.strip('"')
    if word.value is not None:
        return PortRange(int(text), int(text), True, word) if text.isdigit() else None
    m = re.fullmatch(r"\$\{?(\w+)\}?", text)
    if m is not None and depth < MAX_CHAIN:
        name = m.group(1)
        for s, at in ((script, word.start), (batch, batch_at)):
            if s is None:
                continue
            a = s.value_at(name, at)
            if a is not None and a.value is not None and not a.append:
                return port_range(a.value, s, batch, batch_at, depth + 1)
        return None
    shuf = SHUF.match(text)
    if shuf is not None:
        lo, hi = int(shuf.group(1)), int(shuf.group(2))
        return PortRange(lo, hi, lo == hi, word) if lo <= hi else None
    arith = ARITH.match(text)
    if arith is not None:
        bounds = _interval(arith.group(1), script, word.start)
        if bounds is not None:
            return PortRange(bounds[0], bounds[1], False, word)
    return None


def _interval(expr: str, script: Script, at: int) -> tuple[int, int] | None:
    """Interval arithmetic over a bash arithmetic expression with ``+ - * / %``, literals,
    ``RANDOM``, job ids and variables with literal numeric values."""
    source = VAR.sub(lambda m: m.group(1), expr).strip()
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError:
        return None
    return _eval(tree.body, script, at)


def _eval(node: ast.AST, script: Script, at: int) -> tuple[int, int] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value, node.value
    if isinstance(node, ast.Name):
        if node.id == "RANDOM":
            return RANDOM_RANGE
        if node.id in JOB_NUMBERS:
            return 0, MAX_ID
        a = script.value_at(node.id, at)
        v = a.value.value if a is not None and a.value is not None else None
        return (int(v), int(v)) if v is not None and v.isdigit() else None
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, script, at), _eval(node.right, script, at)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Add):
            return left[0] + right[0], left[1] + right[1]
        if isinstance(node.op, ast.Sub):
            return left[0] - right[1], left[1] - right[0]
        if isinstance(node.op, ast.Mult) and left[0] >= 0 and right[0] >= 0:
            return left[0] * right[0], left[1] * right[1]
        if isinstance(node.op, ast.Mod) and right[0] == right[1] and right[0] > 0 and \
                left[0] >= 0:
            n = right[0]
            if left[1] - left[0] + 1 >= n:
                return 0, n - 1
            lo, hi = left[0] % n, left[1] % n
            return (lo, hi) if lo <= hi else (0, n - 1)
        if isinstance(node.op, (ast.FloorDiv, ast.Div)) and right[0] == right[1] and \
                right[0] > 0 and left[0] >= 0:
            return left[0] // right[0], left[1] // right[0]
    return None
