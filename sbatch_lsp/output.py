"""Formatters for the CLI: text (with masked source excerpts), concise, json, github.

Columns: 1-based, in code points; ``end_column`` is exclusive (DESIGN.md "Interfaces").
No output contains a detected secret value: excerpts are masked.
"""
from __future__ import annotations

import json
import re

from .lint import LintResult
from .rules import RULES
from .rules.secrets import mask


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _pos(result: LintResult, offset: int) -> tuple[int, int]:
    line, col = result.source.position(offset)
    return line + 1, col + 1


def masked(result: LintResult, start: int, end: int) -> str:
    """``source.text[start:end]`` as it may be shown: every secret touching it masked
    (``hf_****``), control characters as U+FFFD so a script cannot drive the terminal."""
    src = result.source
    text = src.text[start:end]
    for sec in sorted(result.secrets, key=lambda s: -s.start):
        if sec.end <= start or sec.start >= end:
            continue
        s, e = max(sec.start, start) - start, min(sec.end, end) - start
        text = text[:s] + mask(src.text[sec.start:sec.end]) + text[e:]
    return CONTROL.sub("\ufffd", text)


def mask_text(result: LintResult, text: str) -> str:
    """Mask every secret value of ``result`` wherever it appears in ``text`` (for diffs)."""
    for sec in result.secrets:
        value = result.source.text[sec.start:sec.end]
        if value:
            text = text.replace(value, mask(value))
    return text


def _range(result: LintResult, start: int, end: int) -> dict:
    """``{line, column, end_line, end_column}``: 1-based, code points, end exclusive."""
    line, col = _pos(result, start)
    eline, ecol = _pos(result, end)
    return {"line": line, "column": col, "end_line": eline, "end_column": ecol}


def to_json_obj(result: LintResult, path: str) -> list[dict]:
    """DESIGN.md's JSON objects for one file."""
    return [{
        "code": d.code, "name": d.name, "severity": d.severity.label, "message": d.message,
        "path": path, **_range(result, d.start, d.end),
        "related": [_range(result, r.start, r.end) | {"message": r.message} for r in d.related],
        "fixes": [{"applicability": f.applicability, "message": f.message,
                   "edits": [_range(result, e.start, e.end) | {"new_text": e.new_text}
                             for e in f.edits]}
                  for f in d.fixes],
    } for d in result.diagnostics]


def format_json(items: list[dict]) -> str:
    return json.dumps(items, indent=2, ensure_ascii=False)


def format_text(result: LintResult, path: str, color: bool = False) -> str:
    """``path:line:col: CODE severity message``, the masked source line, a caret under the
    range, then related locations and available fixes."""
    out = []
    bold = (lambda s: f"\x1b[1m{s}\x1b[0m") if color else (lambda s: s)
    sevc = {"error": "31", "warning": "33", "info": "36", "hint": "36"}
    for d in result.diagnostics:
        line, col = _pos(result, d.start)
        sev = d.severity.label
        sev_s = f"\x1b[{sevc[sev]}m{sev}\x1b[0m" if color else sev
        out.append(f"{bold(f'{path}:{line}:{col}:')} {d.code} {sev_s} {d.message}")
        if line - 1 < result.source.line_count:
            # measure the caret on the text as shown (a masked secret is shorter)
            src = result.source
            start, end = src.line_starts[line - 1], src.line_end(line - 1)
            text = masked(result, start, end)
            lead = len(masked(result, start, min(d.start, end)))
            width = len(masked(result, d.start, min(max(d.end, d.start), end)))
            out.append(f"  {line:>4} | {text}")
            out.append(f"       | {' ' * lead}{'^' * max(1, width)}")
        for r in d.related:
            rl, rc = _pos(result, r.start)
            out.append(f"  {path}:{rl}:{rc}: note: {r.message}")
        for f in d.fixes[:2]:
            out.append(f"  fix ({f.applicability}): {f.message}")
    return "\n".join(out)


def format_concise(result: LintResult, path: str) -> str:
    return "\n".join(f"{path}:{_pos(result, d.start)[0]}:{_pos(result, d.start)[1]}: "
                     f"{d.code} [{d.severity.label}] {d.message}" for d in result.diagnostics)


def _gh_escape(s: str, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        s = s.replace(":", "%3A").replace(",", "%2C")
    return s


def format_github(result: LintResult, path: str) -> str:
    """GitHub Actions workflow commands (``::error file=…,line=…,col=…,endLine=…,…::msg``)."""
    level = {"error": "error", "warning": "warning", "info": "notice", "hint": "notice"}
    lines = []
    for d in result.diagnostics:
        line, col = _pos(result, d.start)
        eline, ecol = _pos(result, d.end)
        title = f"{d.code} {RULES[d.code].name}"
        lines.append(f"::{level[d.severity.label]} file={_gh_escape(path, True)},line={line},"
                     f"col={col},endLine={eline},endColumn={ecol},"
                     f"title={_gh_escape(title, True)}::{_gh_escape(d.message)}")
    return "\n".join(lines)
