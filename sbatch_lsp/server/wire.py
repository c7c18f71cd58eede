"""The server's JSON converter: pygls' (lsprotocol's generated hooks), with the two messages of
every keystroke written by hand, each giving exactly what the generated hook gives.

- in: ``textDocument/didChange`` params (:func:`did_change_params`); a value of an unexpected
  type goes to the generated hook, which also makes the errors;
- out: each diagnostic of a publish or a pull (:func:`diagnostic_json`).

lsprotocol's generated functions dispatch every field by its type at run time (unions, optional
fields, sequences): several times the cost of these. tests/test_server_json.py compares both
ways on sample and random messages.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import cattrs
from lsprotocol import types as t
from pygls.protocol import default_converter


def converter() -> cattrs.Converter:
    """pygls' converter with :func:`did_change_params` and :func:`diagnostic_json` (the
    ``converter_factory`` of the server)."""
    made = default_converter()
    generated = made.get_structure_hook(t.DidChangeTextDocumentParams)
    made.register_structure_hook(t.DidChangeTextDocumentParams,
                                 functools.partial(did_change_params, generated))
    made.register_unstructure_hook(t.Diagnostic, functools.partial(diagnostic_json, made))
    return made


class _Irregular(Exception):
    """A didChange that is not in the shape :func:`did_change_params` reads itself."""


def did_change_params(generated: Callable[[Any, type], t.DidChangeTextDocumentParams],
                      data: Any, cls: type) -> t.DidChangeTextDocumentParams:
    """The didChange params of JSON ``data``, as ``generated`` (lsprotocol's hook) makes them.
    Read here when every value has its exact JSON type (the generated hook converts others:
    ``int(True)``); otherwise, and on any value a validator refuses, by ``generated``, which
    raises the error pygls reports."""
    try:
        doc, changes = data["textDocument"], data["contentChanges"]
        uri, version = doc["uri"], doc["version"]
        if type(uri) is not str or type(version) is not int or type(changes) is not list:
            raise _Irregular
        return t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(version=version, uri=uri),
            content_changes=tuple(_change(c) for c in changes))
    except (_Irregular, KeyError, TypeError, ValueError):
        return generated(data, cls)


def _change(c: Any) -> t.TextDocumentContentChangeEvent:
    """One content change: a range's when it has a ``"range"`` (the union's rule), else the
    whole text's; other keys are ignored, as the generated hook ignores them. Raises
    :class:`_Irregular` for a value of another type."""
    if type(c) is not dict or type(c.get("text")) is not str:
        raise _Irregular
    if "range" not in c:
        return t.TextDocumentContentChangeWholeDocument(text=c["text"])
    length = c.get("rangeLength")
    if length is not None and type(length) is not int:
        raise _Irregular
    return t.TextDocumentContentChangePartial(range=_range(c["range"]), text=c["text"],
                                              range_length=length)


def _range(r: Any) -> t.Range:
    return t.Range(start=_position(r["start"]), end=_position(r["end"]))


def _position(p: Any) -> t.Position:
    line, character = p["line"], p["character"]
    if type(line) is not int or type(character) is not int:
        raise _Irregular
    return t.Position(line=line, character=character)


def diagnostic_json(conv: cattrs.Converter, d: t.Diagnostic) -> dict[str, Any]:
    """``d`` as the JSON object lsprotocol's converter makes of it, with the same keys in the
    same order (fields that are None left out, enums as their values, ``data`` through
    ``conv``), written out: lsprotocol's generated function dispatches every field by its type
    (``code`` is a union, each dispatched at run time), several times the cost of this for
    the publish after each keystroke."""
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
