"""Apply fixes: choose the first applicable fix of each finding, apply non-overlapping edits,
re-lint, repeat (at most 10 passes). Conflicting fixes wait for the next pass; a fix is never
half-applied (DESIGN.md "Fixes")."""
from __future__ import annotations

from dataclasses import dataclass

from . import suppressions
from .config import Config
from .diagnostics import Edit, Fix, apply_edits
from .lint import LintResult, lint

MAX_PASSES = 10


@dataclass
class FixOutcome:
    """The fixed text, how many fixes were applied, the lint of the original text (``before``)
    and of the final text (``result``)."""

    text: str
    applied: int
    before: LintResult
    result: LintResult
    skipped: int = 0


def _overlaps(a: Edit, taken: list[Edit]) -> bool:
    for b in taken:
        if a.start < b.end and b.start < a.end:
            return True
        if a.start == a.end == b.start == b.end:
            continue
        if a.start == a.end and b.start < a.start < b.end:
            return True
        if b.start == b.end and a.start < b.start < a.end:
            return True
    return False


def choose(result: LintResult, unsafe: bool, codes: set[str] | None = None) -> tuple[list[Fix], int]:
    """Pick one fix per finding (preferred first, safe unless ``unsafe``) whose edits do not
    overlap those already picked; returns (fixes, number skipped for conflicts)."""
    taken: list[Edit] = []
    chosen: list[Fix] = []
    skipped = 0
    for d in result.fixable:
        if codes is not None and d.code not in codes:
            continue
        for fix in d.fixes:
            if not fix.safe and not unsafe:
                continue
            if any(_overlaps(e, taken) for e in fix.edits):
                skipped += 1
                break
            taken.extend(fix.edits)
            chosen.append(fix)
            break
    return chosen, skipped


def fix_text(text: str, path: str = "<stdin>", config: Config | None = None,
             unsafe: bool = False, codes: set[str] | None = None) -> FixOutcome:
    """Fix ``text`` as ``--fix`` (``unsafe`` adds ``--unsafe-fixes``) would; ``codes`` limits
    the fixes to those rules."""
    applied = 0
    result = before = lint(text, path, config)
    skipped = 0
    for _ in range(MAX_PASSES):
        fixes, skipped = choose(result, unsafe, codes)
        if not fixes:
            break
        new = apply_edits(text, [e for f in fixes for e in f.edits])
        if new == text:
            break
        applied += len(fixes)
        text = new
        result = lint(text, path, config)
    return FixOutcome(text, applied, before, result, skipped)


def add_noqa_text(text: str, path: str, config: Config) -> tuple[str, int, LintResult]:
    """``sbatch-lint --add-noqa`` for one script: the text with a suppression for every current
    finding (:func:`suppressions.add_noqa`), how many findings it silenced, and the lint of the new text
    (what is left: SB001, SB003). Running it again changes nothing."""
    before = lint(text, path, config)
    script = before.job.script if before.job is not None else None
    new = apply_edits(text, suppressions.add_noqa(before.source, script, before.diagnostics))
    after = lint(new, path, config) if new != text else before
    return new, len(before.diagnostics) - len(after.diagnostics), after
