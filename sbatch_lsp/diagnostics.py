"""Findings and fixes: the values that flow from rules to the CLI, the fixer and the server.

Positions are character offsets (code points) into the text that was linted; the output layers
convert them to 1-based lines and columns (CLI, JSON) or UTF-16 positions (LSP).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .severity import Severity

__all__ = ["Severity", "Edit", "Fix", "Related", "Diagnostic", "apply_edits"]


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class Edit:
    """Replace ``text[start:end]`` (character offsets) with ``new_text``."""

    start: int
    end: int
    new_text: str


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class Fix:
    """One way out of a finding: edits applied together, and whether the fix is safe.

    ``safe`` fixes only remove the fault; unsafe ones change resources, layout, environment or
    behaviour (DESIGN.md "Fixes").
    """

    message: str
    edits: tuple[Edit, ...]
    safe: bool = True

    @property
    def applicability(self) -> str:
        return "safe" if self.safe else "unsafe"


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class Related:
    """Other evidence for a finding, with its own message."""

    start: int
    end: int
    message: str


@dataclass
class Diagnostic:
    """A finding: rule code, severity, message, primary range, related ranges and fixes."""

    code: str
    severity: Severity
    message: str
    start: int
    end: int
    related: list[Related] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    name: str = ""
    tags: tuple[str, ...] = ()

    def sort_key(self) -> tuple:
        return (self.start, self.end, self.code, self.message)


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (offsets into ``text``). Inserts at the same offset keep
    their order. Raises ValueError on overlap."""
    order = sorted(enumerate(edits), key=lambda p: (p[1].start, p[1].end, p[0]))
    out, pos = [], 0
    for _, e in order:
        if e.start < pos:
            raise ValueError("overlapping edits")
        out.append(text[pos:e.start])
        out.append(e.new_text)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)
