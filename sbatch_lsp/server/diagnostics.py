"""Engine findings as LSP diagnostics: code, rule page link, related information, tags; and
the server's JSON converter, which writes diagnostics by hand (:func:`diagnostic_json`)."""
from __future__ import annotations

import functools
from typing import Any

import cattrs
from lsprotocol import types as t
from pygls.protocol import default_converter

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


def converter() -> cattrs.Converter:
    """pygls' converter, with :func:`diagnostic_json` for every :class:`t.Diagnostic` it
    writes (publish, pull)."""
    made = default_converter()
    made.register_unstructure_hook(t.Diagnostic, functools.partial(diagnostic_json, made))
    return made


def diagnostic_json(conv: cattrs.Converter, d: t.Diagnostic) -> dict[str, Any]:
    """``d`` as the JSON object lsprotocol's converter makes of it, with the same keys in the
    same order (fields that are None left out, enums as their values, ``data`` through
    ``conv``), written out: lsprotocol's generated function dispatches every field by its type
    (``code`` is a union, each dispatched at run time), several times the cost of this for
    the publish after each keystroke. tests/test_server_json.py compares the two."""
    out: dict[str, Any] = {"range": _range_json(d.range), "message": d.message}
    if d.severity is not None:
        out["severity"] = d.severity.value
    if d.code is not None:
        out["code"] = d.code
    if d.code_description is not None:
        out["codeDescription"] = {"href": d.code_description.href}
    if d.source is not None:
        out["source"] = d.source
    if d.tags is not None:
        out["tags"] = [tag.value for tag in d.tags]
    if d.related_information is not None:
        out["relatedInformation"] = [
            {"location": {"uri": r.location.uri, "range": _range_json(r.location.range)},
             "message": r.message} for r in d.related_information]
    if d.data is not None:
        out["data"] = conv.unstructure(d.data)
    return out


def _range_json(r: t.Range) -> dict[str, dict[str, int]]:
    return {"start": {"line": r.start.line, "character": r.start.character},
            "end": {"line": r.end.line, "character": r.end.character}}
