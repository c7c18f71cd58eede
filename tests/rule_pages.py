"""Read the examples out of rules/SBxxx.md pages.

A page marks its examples with fenced blocks whose info string is ``sbatch bad``,
``sbatch good``, or a ``sbatch fix-before`` block followed by a ``sbatch fix-after`` block
(the exact text the rule's fixes produce; ``--unsafe-fixes`` is applied for unsafe ones).
Profile keys may follow the kind (``sbatch bad slurm-version=22.05 pyxis=false``): the example
is linted with that profile. A page whose rules need a site profile holds it in a fenced
``toml profile`` block (the keys of a configuration file, e.g. ``[profile.partitions.gpu]``):
every example of the page is linted with it, or with the block ``toml profile NAME`` when the
example says ``profile=NAME``; the keys then arrive as ``config`` (the table as JSON).

A bad example states where and how bad its findings of the page's rule are with
``at=LINE:COL:SEVERITY`` (1-based line and column of the finding's start in the example;
severity error, warning or info), several separated by commas:
``sbatch bad at=7:1:error,9:5:warning``. ``at`` is never a profile key.
"""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "rules"
BLOCK = re.compile(r"^```sbatch ([a-z-]+)([^\n]*)\n(.*?)^```\s*$", re.S | re.M)
PROFILE = re.compile(r"^```toml profile ?([\w-]*)\n(.*?)^```\s*$", re.S | re.M)


def examples(page: Path) -> list[tuple[str, str]]:
    """(kind, script) pairs in page order; kind is bad, good, fix-before or fix-after."""
    return [(kind, text) for kind, text, _ in examples_with_profile(page)]


def examples_with_profile(page: Path) -> list[tuple[str, str, dict[str, str]]]:
    """(kind, script, profile keys given after the kind) in page order; with the page's
    ``toml profile`` block as the key ``config`` (JSON)."""
    return [(kind, text, keys) for kind, text, keys, _ in examples_with_findings(page)]


Finding = tuple[int, int, str]  # (line, column, severity) as a page states it


def parse_at(value: str) -> list[Finding]:
    """``7:1:error,9:5:warning`` -> [(7, 1, "error"), (9, 5, "warning")]."""
    out = []
    for item in value.split(","):
        line, col, severity = item.split(":")
        if severity not in ("error", "warning", "info"):
            raise ValueError(f"at={value}: severity {severity!r} is not error, warning or info")
        out.append((int(line), int(col), severity))
    return out


def examples_with_findings(page: Path) -> list[tuple[str, str, dict[str, str], list[Finding] | None]]:
    """(kind, script, profile keys, the findings ``at=`` states or None) in page order."""
    text = page.read_text("utf-8")
    profiles = {m.group(1): tomllib.loads(m.group(2)) for m in PROFILE.finditer(text)}
    out = []
    for m in BLOCK.finditer(text):
        keys = dict(item.split("=", 1) for item in m.group(2).split() if "=" in item)
        at = keys.pop("at", None)
        table = profiles.get(keys.pop("profile", ""))
        if table is not None:
            keys["config"] = json.dumps(table)
        out.append((m.group(1), m.group(3), keys, parse_at(at) if at is not None else None))
    return out


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset into ``text``."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def pages() -> list[Path]:
    return sorted(PAGES.glob("SB*.md"))


def sample_scripts(page_kinds: tuple[str, ...] = ("bad", "good", "fix-before", "fix-after")):
    """pytest params of every script the project holds: examples/, the shared and the
    project's own cases, and the rule pages' examples of ``page_kinds``."""
    import pytest

    from test_cases import LOCAL_DIR, SHARED_DIR

    params = [pytest.param(f.read_text(), id=f"examples/{f.relative_to(ROOT / 'examples')}")
              for f in sorted((ROOT / "examples").rglob("*.sbatch"))]
    params += [pytest.param(f.read_bytes().decode(), id=f"cases/{f.name}")
               for f in sorted(SHARED_DIR.glob("*.sbatch"))]
    params += [pytest.param(f.read_bytes().decode(), id=f"tests/cases/{f.name}")
               for f in sorted(LOCAL_DIR.glob("*.sbatch"))]
    params += [pytest.param(text, id=f"{p.stem}-{i}") for p in pages()
               for i, (kind, text) in enumerate(examples(p)) if kind in page_kinds]
    return params
