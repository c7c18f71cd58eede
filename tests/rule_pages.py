"""Read the examples out of rules/SBxxx.md pages.

A page marks its examples with fenced blocks whose info string is ``sbatch bad``,
``sbatch good``, or a ``sbatch fix-before`` block followed by a ``sbatch fix-after`` block
(the exact text the rule's fixes produce; ``--unsafe-fixes`` is applied for unsafe ones).
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "rules"
BLOCK = re.compile(r"^```sbatch ([a-z-]+)[^\n]*\n(.*?)^```\s*$", re.S | re.M)


def examples(page: Path) -> list[tuple[str, str]]:
    """(kind, script) pairs in page order; kind is bad, good, fix-before or fix-after."""
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(page.read_text("utf-8"))]


def pages() -> list[Path]:
    return sorted(PAGES.glob("SB*.md"))
