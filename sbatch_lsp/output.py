"""Formatters for the CLI: text (with masked source excerpts), concise, json, github, sarif.

Columns: 1-based, in code points; ``end_column`` is exclusive (DESIGN.md "Interfaces").
No output contains a detected secret value: the result's findings arrive masked
(:func:`sbatch_lsp.lint.lint`), and source excerpts are shown through
:meth:`LintResult.excerpt`.
"""
from __future__ import annotations

import json
import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the lint and the rule table are imported where a result is formatted:
    # a run whose every file hits the cache prints stored JSON without loading the engine
    from .lint import LintResult

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _pos(result: LintResult, offset: int) -> tuple[int, int]:
    line, col = result.source.position(offset)
    return line + 1, col + 1


def masked(result: LintResult, start: int, end: int) -> str:
    """``source.text[start:end]`` as it may be shown: every secret touching it masked
    (``hf_****``), control characters as U+FFFD so a script cannot drive the terminal."""
    return CONTROL.sub("\ufffd", result.excerpt(start, end))


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
            text = masked(result, start, end).expandtabs(8)
            before = masked(result, start, min(d.start, end))
            marked = masked(result, d.start, min(max(d.end, d.start), end))
            lead = _columns(before.expandtabs(8))
            width = _columns((before + marked).expandtabs(8)) - lead
            number = f"{line:>4}"  # the gutter grows with the line number (10000 and on)
            out.append(f"  {number} | {text}")
            out.append(f"  {' ' * len(number)} | {' ' * lead}{'^' * max(1, width)}")
        for r in d.related:
            rl, rc = _pos(result, r.start)
            out.append(f"  {path}:{rl}:{rc}: note: {r.message}")
        for f in d.fixes[:2]:
            out.append(f"  fix ({f.applicability}): {f.message}")
    return "\n".join(out)


def _columns(text: str) -> int:
    """Terminal columns ``text`` (no tabs) takes: East Asian wide and full-width characters
    take two (Unicode UAX #11), combining marks none, everything else one."""
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


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
    from .rules import RULES

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


# --- SARIF 2.1.0 (OASIS; the shape GitHub code scanning reads) -------------------------------

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note", "hint": "note"}


def _artifact(path: str) -> dict:
    """A SARIF artifactLocation for a path as given on the command line: a relative path is
    a relative URI reference against ``%SRCROOT%`` (the working directory), an absolute one a
    ``file:`` URI."""
    from pathlib import Path
    from urllib.parse import quote

    p = Path(path)
    if p.is_absolute():
        return {"uri": p.as_uri()}
    return {"uri": quote(p.as_posix()), "uriBaseId": "%SRCROOT%"}


def _region(result: LintResult, start: int, end: int, snippet: bool = False) -> dict:
    """A SARIF region: 1-based lines and columns in code points (the run says
    ``columnKind: unicodeCodePoints``), end column exclusive; the snippet is masked."""
    r = _range(result, start, end)
    region = {"startLine": r["line"], "startColumn": r["column"],
              "endLine": r["end_line"], "endColumn": r["end_column"]}
    if snippet:
        src = result.source
        first, last = src.line_of(start), src.line_of(max(start, end - 1))
        region["snippet"] = {"text": masked(result, src.line_starts[first], src.line_end(last))}
    return region


def to_sarif_results(result: LintResult, path: str) -> list[dict]:
    """SARIF ``result`` objects for one file (``ruleIndex`` follows :func:`sarif_rules`).
    Messages and inserted texts arrive masked; the snippet is a masked excerpt."""
    from .rules import RULES

    index = {code: i for i, code in enumerate(sorted(RULES))}
    artifact = _artifact(path)

    def location(start: int, end: int, snippet: bool = False) -> dict:
        return {"physicalLocation": {"artifactLocation": artifact,
                                     "region": _region(result, start, end, snippet)}}

    out = []
    for d in result.diagnostics:
        res = {
            "ruleId": d.code, "ruleIndex": index[d.code], "level": SARIF_LEVEL[d.severity.label],
            "message": {"text": d.message},
            "locations": [location(d.start, d.end, snippet=True)],
        }
        if d.related:
            res["relatedLocations"] = [
                location(r.start, r.end) | {"id": i, "message": {"text": r.message}}
                for i, r in enumerate(d.related, 1)]
        if d.fixes:
            res["fixes"] = [{
                "description": {"text": f.message},
                "artifactChanges": [{"artifactLocation": artifact, "replacements": [
                    {"deletedRegion": _region(result, e.start, e.end),
                     "insertedContent": {"text": e.new_text}}
                    for e in f.edits]}],
                "properties": {"applicability": f.applicability},
            } for f in d.fixes]
        if d.severity.label != RULES[d.code].severity.label:
            res["properties"] = {"severity": d.severity.label}
        out.append(res)
    return out


def sarif_rules() -> list[dict]:
    """Every rule as a SARIF ``reportingDescriptor``: id, name, descriptions, ``help`` (the rule
    page's Markdown, which code scanning shows; the project publishes no web page to link as
    ``helpUri``) and default level, sorted by code."""
    from .rules import RULES

    return [{
        "id": code, "name": r.name,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": f"{r.summary} (default severity: {r.severity.label}; "
                                    f"fix: {r.fix})."},
        "help": {"text": f"{r.summary}. Examples and fixes: sbatch-lint --explain {code}",
                 "markdown": _page(code) or f"{r.summary}. Examples and fixes: "
                                            f"`sbatch-lint --explain {code}`"},
        "defaultConfiguration": {"level": SARIF_LEVEL[r.severity.label]},
        "properties": {"tags": ["slurm", r.name], "fix": r.fix},
    } for code, r in sorted(RULES.items())]


def _page(code: str) -> str | None:
    """The installed page of rule ``code`` (Markdown) with the token formats of its examples
    masked like any other output (SB501's page shows keys to detect); None when it is missing."""
    from .rules import page_path
    from .secrets import Masker, find_secrets

    try:
        text = page_path(code).read_text("utf-8")
    except OSError:
        return None
    return Masker.of(text, find_secrets(text)).text(text)


def format_sarif(results: list[dict], errors: list[str], version: str) -> str:
    """One SARIF 2.1.0 log with one run: the tool and its rules, the results, and files that
    could not be linted as tool execution notifications."""
    from pathlib import Path

    invocation: dict[str, object] = {"executionSuccessful": not errors}
    if errors:
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": e}} for e in errors]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "sbatch-lint", "version": version,
                                "semanticVersion": version, "rules": sarif_rules()}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",
            "invocations": [invocation],
            "results": results,
        }],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)
