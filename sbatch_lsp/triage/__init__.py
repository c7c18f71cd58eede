"""Log triage: from a failed job's output to the first failing rank, the root line and the
script finding behind it (DESIGN.md "Triage"; ``sbatch-lint triage``).

Data flows one way: :mod:`.reading` (bytes → the lines that matter) → :mod:`.recognisers`
(lines → evidence, each with a category of :mod:`.categories`) → :mod:`.ordering` (evidence →
the first failure and the cascade) → :mod:`.report` (JSON and text), with
:mod:`.script_link` attaching the script's findings.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import BinaryIO

from ..lint import lint
from ..output import to_json_obj
from .ordering import decide
from .reading import LogError, lines
from .recognisers import Scanner
from .report import Report
from .script_link import config_for, explaining, find_script, read_script

__all__ = ["LogError", "Report", "link_script", "triage", "triage_text"]


def triage(paths: list[str], script: str | None = None, stdin: BinaryIO | None = None,
           find_beside: bool = True, from_stdin: bool = False) -> Report:
    """Triage one job's logs (``paths``: files, ``-`` for ``stdin``, ``.gz`` accepted; all one
    job's output). ``script`` links the job script; without it, the script beside the first log
    whose ``#SBATCH --output`` pattern names it is used when ``find_beside``. Raises
    :class:`LogError` (message for people) for unreadable logs or a script that cannot be read.
    ``from_stdin``: the one path is only a name, the text comes from ``stdin``."""
    scanner = Scanner()
    for p in paths:
        for ln in lines("-" if from_stdin else p, stdin, p):
            scanner.feed(ln)
    scan = scanner.scan
    report = Report(list(paths), scan, decide(scan, list(paths)))
    if not scan.evidence and not scan.exits:
        report.notes.append("nothing in the log shows a failure: no Python exception, Slurm "
                            "stop, OOM, NCCL or launcher error was found (is this a job's "
                            "output?)")
    script_path = Path(script) if script else None
    if script_path is None and find_beside and paths and paths[0] != "-":
        script_path = find_script(Path(paths[0]))
    if script_path is not None:
        link_script(report, script_path)
    return report


def link_script(report: Report, script_path: Path) -> None:
    """Attach the findings of the job script at ``script_path`` that explain ``report``'s root
    cause (lint JSON shape). Raises :class:`LogError` when the script cannot be read."""
    try:
        text = read_script(script_path)
    except (OSError, ValueError) as exc:
        raise LogError(f"{script_path}: the job script cannot be read ({exc})") from None
    result = lint(text, str(script_path), config_for(script_path))
    category = report.verdict.root.category if report.verdict.root else None
    chosen = explaining(result, category)
    everything = to_json_obj(result, str(script_path))
    report.rules = [everything[result.diagnostics.index(d)] for d in chosen]
    report.script_path = str(script_path)


def triage_text(text: str, path: str = "<log>") -> Report:
    """Triage a log held in memory, its lines carrying ``path`` (the language server's and
    MCP's entry point); no script is looked for. Raises :class:`LogError`."""
    return triage([path], stdin=io.BytesIO(text.encode("utf-8", "replace")), find_beside=False,
                  from_stdin=True)
