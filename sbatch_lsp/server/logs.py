"""Slurm job logs in the editor: the triage engine's root line as an error diagnostic, the
cascade as information, and the script finding that explains it as related information; the
``sbatch-lsp.triage`` command returns the text report (the VS Code "triage this log" command).

A document is a log when its name is one Slurm gives (``slurm-%j.out``, ``slurm-%A_%a.out``),
ends in ``.err``, ``.out`` or ``.log``, or when its text opens with what only job output prints
(srun/slurmstepd lines, torchelastic's report, a rank-prefixed traceback) and has no ``#!``.
"""
from __future__ import annotations

import re
from pathlib import Path

from lsprotocol import types as t
from pygls.workspace.position_codec import PositionCodec

from ..source import Source
from ..triage import LogError, Report, link_script, triage_text
from ..triage.categories import CATEGORIES
from ..triage.report import format_text
from ..triage.script_link import find_script
from .positions import Positions

SOURCE = "sbatch-lint triage"
COMMAND = "sbatch-lsp.triage"
NAME = re.compile(r"(?:^slurm-\d+(?:_\d+)?\.out$|\.(?:err|out|log)(?:\.\d+)?$)")
CONTENT = re.compile(r"^(?:\s*\d+: )?(?:srun: error: |slurmstepd(?:-\S+)?: error: |\[rank\d+\]: |"
                     r"\[default\d+\]:|Root Cause \(first observed failure\))", re.M)
#: how much of a document's start the content test reads
HEAD = 65536
#: cascade diagnostics shown per log (the rest are in the report)
MAX_CASCADE = 200


def is_log(uri: str, text: str) -> bool:
    """True for a Slurm log by name or by content (never for a job script: ``#!`` first)."""
    if text.startswith("#!"):
        return False
    name = uri.rsplit("/", 1)[-1]
    return bool(NAME.search(name)) or bool(CONTENT.search(text[:HEAD]))


def _line_range(src: Source, pos: Positions, line: int) -> t.Range:
    n = min(max(line - 1, 0), src.line_count - 1)
    return pos.range(src.line_starts[n], src.line_end(n))


def _report(text: str, uri: str, path: str | None) -> Report:
    report = triage_text(text, path or uri)
    if path:
        script = find_script(Path(path))
        if script is not None:
            link_script(report, script)
    return report


def log_diagnostics(text: str, uri: str, path: str | None, codec: PositionCodec
                    ) -> list[t.Diagnostic]:
    """The log's diagnostics; [] when the text cannot be triaged (binary, empty)."""
    try:
        report = _report(text, uri, path)
    except LogError:
        return []
    src = Source(text)
    pos = Positions(src, codec)
    obj = report.to_json()
    out: list[t.Diagnostic] = []
    root = obj["root_cause"]
    if root is not None:
        ff = obj["first_failure"] or {}
        who = ", ".join(x for x in (f"rank {ff['rank']}" if ff.get("rank") is not None else "",
                                    f"node {ff['node']}" if ff.get("node") else "") if x)
        related = [_related(d) for d in obj["rules"]]
        out.append(t.Diagnostic(
            range=_line_range(src, pos, root["line"]), severity=t.DiagnosticSeverity.Error,
            source=SOURCE, code=root["category"],
            message=f"root cause ({root['confidence']}): {root['explanation']}"
                    + (f" [first failure: {who}]" if who else ""),
            related_information=[r for r in related if r is not None] or None))
    for c in obj["cascade"][:MAX_CASCADE]:
        if root is not None and c["line"] == root["line"]:
            continue
        kind = CATEGORIES[c["kind"]]
        what = "cascade" if kind.cascade else "also failed"
        rank = f" (rank {c['rank']})" if c["rank"] is not None else ""
        out.append(t.Diagnostic(
            range=_line_range(src, pos, c["line"]), severity=t.DiagnosticSeverity.Information,
            source=SOURCE, code=c["kind"], message=f"{what}{rank}: {kind.explanation}"))
    return out


def _related(d: dict) -> t.DiagnosticRelatedInformation | None:
    """A script finding (lint JSON shape: 1-based, code points) as related information."""
    try:
        lines = Path(d["path"]).read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        return None

    def position(line: int, column: int) -> t.Position:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return t.Position(line=line - 1,
                          character=len(text[:column - 1].encode("utf-16-le")) // 2)
    return t.DiagnosticRelatedInformation(
        location=t.Location(uri=Path(d["path"]).resolve().as_uri(), range=t.Range(
            start=position(d["line"], d["column"]), end=position(d["end_line"], d["end_column"]))),
        message=f"{d['code']}: {d['message']}")


def report_text(text: str, uri: str, path: str | None) -> str:
    """The text report of one open log (the ``sbatch-lsp.triage`` command's result)."""
    try:
        return format_text(_report(text, uri, path))
    except LogError as exc:
        return f"sbatch-lint triage: {exc}\n"


def register(server) -> None:
    """Register the ``sbatch-lsp.triage`` command on ``server``: arguments ``[uri]`` of an open
    (or readable) document; the result is the text report, run off the event loop."""
    import asyncio

    @server.command(COMMAND)
    async def triage_command(ls, *args) -> str:  # pygls 2 passes the arguments spread
        uri = args[0] if args and isinstance(args[0], str) else None
        if uri is None:
            return "sbatch-lint triage: no document given\n"
        doc = ls.workspace.get_text_document(uri)
        return await asyncio.to_thread(report_text, doc.source, uri, doc.path)
