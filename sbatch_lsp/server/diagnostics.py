"""Engine findings as LSP diagnostics: code, rule page link, related information, tags."""
from __future__ import annotations

import functools

from lsprotocol import types as t

from ..diagnostics import Diagnostic, Severity
from ..lint import LintResult
from ..rules import RULES
from .positions import Positions

SOURCE = "sbatch-lint"
SEVERITY = {Severity.ERROR: t.DiagnosticSeverity.Error,
            Severity.WARNING: t.DiagnosticSeverity.Warning,
            Severity.INFO: t.DiagnosticSeverity.Information,
            Severity.HINT: t.DiagnosticSeverity.Hint}
TAGS = {"unnecessary": t.DiagnosticTag.Unnecessary, "deprecated": t.DiagnosticTag.Deprecated}
#: rules whose findings mark text that does nothing (editors fade it)
UNNECESSARY = {"SB001"}


def to_lsp(d: Diagnostic, uri: str, pos: Positions) -> t.Diagnostic:
    """One finding as an LSP Diagnostic (code actions never rely on what a client sends back:
    they come from the server's own lint)."""
    tags = [TAGS[x] for x in d.tags if x in TAGS]
    if d.code in UNNECESSARY and t.DiagnosticTag.Unnecessary not in tags:
        tags.append(t.DiagnosticTag.Unnecessary)
    return t.Diagnostic(
        range=pos.range(d.start, d.end),
        message=d.message,
        severity=SEVERITY[d.severity],
        code=d.code,
        code_description=_code_description(d.code),
        source=SOURCE,
        related_information=[
            t.DiagnosticRelatedInformation(location=t.Location(uri=uri, range=pos.range(r.start, r.end)),
                                           message=r.message)
            for r in d.related] or None,
        tags=tags or None,
    )


def lsp_diagnostics(result: LintResult, uri: str, pos: Positions) -> list[t.Diagnostic]:
    return [to_lsp(d, uri, pos) for d in result.diagnostics]


@functools.cache
def _code_description(code: str) -> t.CodeDescription | None:
    """The link to rule ``code``'s page, None for a code that names no rule: made once per
    code (a page's URI takes a path resolution and quoting; every lint asks for each finding).
    The object is shared by every diagnostic with the code: nothing changes it."""
    rule = RULES.get(code)
    return t.CodeDescription(href=rule.url) if rule else None
