"""``--format gitlab``: GitLab's Code Quality report (the ``codequality`` CI artifact).

GitLab reads a JSON array of issues with ``description``, ``check_name``, ``fingerprint``,
``severity`` (``info|minor|major|critical|blocker``), ``location.path`` (relative to the
repository root, no ``./``) and ``location.lines.begin``; the merge request widget compares the
fingerprints of the base and head pipelines to tell new findings from fixed ones
(https://docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format). The shape is
``sbatch_lsp/schemas/gitlab.schema.json``.

No secret value leaves: the findings arrive masked from ``lint()``, and the fingerprint hashes
the masked source text.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .output import masked

if TYPE_CHECKING:
    from .lint import LintResult

#: sbatch-lint severity -> GitLab Code Quality severity
SEVERITY = {"error": "major", "warning": "minor", "info": "info", "hint": "info"}


def repository_root(cwd: Path | None = None) -> Path:
    """The folder GitLab's paths are relative to: ``$CI_PROJECT_DIR`` in a GitLab job, else the
    nearest folder at or above ``cwd`` holding ``.git``, else ``cwd`` itself."""
    env = os.environ.get("CI_PROJECT_DIR")
    if env:
        return Path(env).resolve()
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def report_path(path: str, root: Path) -> str:
    """``path`` (as given on the command line) relative to ``root``, with forward slashes and no
    leading ``./`` (a file outside ``root`` gets ``../`` steps: GitLab cannot show it)."""
    return Path(os.path.relpath(os.path.abspath(path), root)).as_posix()


def to_gitlab_issues(result: LintResult, path: str, root: Path) -> list[dict]:
    """Code Quality issues for one linted file, in the order of ``result.diagnostics``.

    The fingerprint is a SHA-256 of the repository path, the code, the finding's masked source
    text (its primary range and the rest of its first line) and its rank among findings with the
    same three: it does not change when other lines are added or moved, and two identical
    findings in one file still differ."""
    rel = report_path(path, root)
    src = result.source
    seen: dict[tuple[str, str], int] = {}
    issues = []
    for d in result.diagnostics:
        first = src.line_of(d.start)
        text = masked(result, src.line_starts[first], max(src.line_end(first), d.end)).strip()
        key = (d.code, text)
        rank = seen.get(key, 0)
        seen[key] = rank + 1
        digest = hashlib.sha256("\0".join((rel, d.code, text, str(rank))).encode(
            "utf-8", "surrogatepass")).hexdigest()
        last = src.line_of(max(d.start, d.end - 1))
        issues.append({
            "type": "issue",
            "description": f"{d.code} {d.message}",
            "check_name": f"sbatch-lint/{d.code}",
            "fingerprint": digest,
            "severity": SEVERITY[d.severity.label],
            "categories": ["Security" if d.code.startswith("SB5") else "Bug Risk"],
            "location": {"path": rel, "lines": {"begin": first + 1, "end": last + 1}},
        })
    return issues
