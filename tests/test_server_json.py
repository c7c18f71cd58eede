"""The server's hand-written JSON paths against pygls' own (server/wire.py ``converter``,
server/stdio.py, server/settings.py ``_candidates``): same bytes, same messages, same files."""
from __future__ import annotations

import io
import json
import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types as t
from pygls.protocol import default_converter
from pygls.workspace.position_codec import PositionCodec

from sbatch_lsp.lint import lint
from sbatch_lsp.server.diagnostics import lsp_diagnostics
from sbatch_lsp.server.positions import Positions
from sbatch_lsp.server.settings import _candidates
from sbatch_lsp.server.stdio import read_message
from sbatch_lsp.server.wire import converter, diagnostic_json, did_change_params

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*/*.sbatch"))
PUBLISH = "textDocument/publishDiagnostics"


def _wire(conv, message) -> str:
    """The JSON text pygls sends for ``message`` with converter ``conv`` (JsonRPCProtocol
    ``_send_data``: ``json.dumps`` with the converter as ``default``)."""
    return json.dumps(message, default=conv.unstructure)


def _publish(uri: str, diagnostics, version) -> t.PublishDiagnosticsNotification:
    return t.PublishDiagnosticsNotification(
        params=t.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version),
        method=PUBLISH, jsonrpc="2.0")


def test_publish_messages_of_the_examples_are_byte_identical():
    old, new = default_converter(), converter()
    codec = PositionCodec(t.PositionEncodingKind.Utf16)
    seen = 0
    for path in EXAMPLES:
        text = path.read_text()
        result = lint(text, str(path))
        uri = path.as_uri()
        diagnostics = lsp_diagnostics(result, uri, Positions(result.source, codec))
        seen += len(diagnostics)
        for version in (3, None):
            message = _publish(uri, diagnostics, version)
            assert _wire(new, message) == _wire(old, message), path.name
        report = t.RelatedFullDocumentDiagnosticReport(items=diagnostics, result_id="3:0")
        assert _wire(new, report) == _wire(old, report), path.name
    assert seen > 20  # the sample has findings of many shapes (related information, tags)


POSITION = st.builds(t.Position, line=st.integers(0, 2**31 - 1),
                     character=st.integers(0, 2**31 - 1))
RANGE = st.builds(t.Range, start=POSITION, end=POSITION)
TEXT = st.text(max_size=20)
JSON_VALUE = st.recursive(st.none() | st.booleans() | st.integers() | TEXT,
                          lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8)
DIAGNOSTIC = st.builds(
    t.Diagnostic, range=RANGE, message=TEXT,
    severity=st.none() | st.sampled_from(t.DiagnosticSeverity),
    code=st.none() | st.integers(-5, 5) | TEXT,
    code_description=st.none() | st.builds(t.CodeDescription, href=TEXT),
    source=st.none() | TEXT,
    tags=st.none() | st.lists(st.sampled_from(t.DiagnosticTag), max_size=2),
    related_information=st.none() | st.lists(st.builds(
        t.DiagnosticRelatedInformation, location=st.builds(t.Location, uri=TEXT, range=RANGE),
        message=TEXT), max_size=3),
    data=JSON_VALUE)


@settings(max_examples=300, deadline=None)
@given(st.lists(DIAGNOSTIC, max_size=3), st.none() | st.integers(0, 9))
def test_any_diagnostic_is_written_as_lsprotocol_writes_it(diagnostics, version):
    old, new = default_converter(), converter()
    for d in diagnostics:
        assert json.dumps(diagnostic_json(new, d)) == json.dumps(old.unstructure(d))
    message = _publish("file:///a.sbatch", diagnostics, version)
    assert _wire(new, message) == _wire(old, message)


def test_read_message_reads_headers_as_pygls_does():
    body = json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}).encode()
    framed = (b"Content-Length: %d\r\n" % len(body)
              + b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + body)
    stream = io.BytesIO(b"\r\n" + framed  # a blank line before any length is ignored
                        + b"Content-Length: 2\r\n\r\n{}" + b"Content-Length: 9\r\n\r\n{}")
    assert read_message(stream) == body
    assert read_message(stream) == b"{}"
    assert read_message(stream) == b"{}"  # cut short: the caller's parse fails on it
    assert read_message(stream) == b""
    assert read_message(io.BytesIO(b"Content-Length: 4\r\n")) == b""


def test_candidates_are_the_folder_and_every_folder_above_it(tmp_path):
    for folder in (Path("/"), Path("/a"), tmp_path / "x" / "y"):
        want = [str(d / name) for d in (folder, *folder.parents)
                for name in (".sbatch-lint.toml", "pyproject.toml")]
        assert list(_candidates(str(folder))) == want
    assert _candidates(os.sep)[0] == "/.sbatch-lint.toml"


def _structured(conv, data, cls):
    """``conv.structure(data, cls)``, or the type of the error it raises."""
    try:
        return conv.structure(data, cls)
    except Exception as exc:  # noqa: BLE001  (compared: both converters must fail alike)
        return type(exc)


UINT = st.integers(0, 2**31 - 1)
#: JSON values a field might hold instead of its own type
ODD = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | TEXT \
    | st.lists(st.integers(), max_size=1) | st.dictionaries(TEXT, st.integers(), max_size=1)


def _or_odd(strategy):
    """``strategy``'s values, sometimes a value of another type."""
    return st.one_of(*[strategy] * 5, ODD)


def did_change_json(odd=_or_odd):
    """didChange params; with ``odd``, any value may have another type."""
    position = st.fixed_dictionaries({"line": odd(UINT), "character": odd(UINT)},
                                     optional={"x": ODD})
    rng = st.fixed_dictionaries({"start": odd(position), "end": odd(position)})
    change = st.one_of(
        st.fixed_dictionaries({"text": odd(TEXT)}, optional={"rangeLength": odd(UINT)}),
        st.fixed_dictionaries({"range": odd(rng), "text": odd(TEXT)},
                              optional={"rangeLength": odd(st.none() | UINT), "x": ODD}))
    if odd is _or_odd:
        change |= st.fixed_dictionaries({}, optional={"range": rng, "rangeLength": UINT})
    return st.fixed_dictionaries(
        {"textDocument": odd(st.fixed_dictionaries(
            {"uri": odd(TEXT), "version": odd(st.integers(-5, 2**31 - 1))},
            optional={"x": ODD})),
         "contentChanges": odd(st.lists(odd(change), max_size=3))},
        optional={"x": ODD})


def _as_is(strategy):
    return strategy


def _refuse(data, cls):
    raise AssertionError("read by the generated hook")


@settings(max_examples=500, deadline=None)
@given(_or_odd(did_change_json()))
def test_any_did_change_is_read_as_lsprotocol_reads_it(data):
    old, new = default_converter(), converter()
    message = {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": data}
    for cls, value in ((t.DidChangeTextDocumentParams, data),
                       (t.DidChangeTextDocumentNotification, message)):
        assert _structured(new, value, cls) == _structured(old, value, cls)


@settings(max_examples=200, deadline=None)
@given(did_change_json(_as_is))
def test_a_well_typed_did_change_is_read_by_hand_as_lsprotocol_reads_it(data):
    assert did_change_params(_refuse, data, t.DidChangeTextDocumentParams) == \
        default_converter().structure(data, t.DidChangeTextDocumentParams)


def test_an_editors_did_change_is_read_by_hand():
    at = {"line": 3, "character": 7}
    data = {"textDocument": {"uri": "file:///a.sbatch", "version": 4},
            "contentChanges": [{"range": {"start": at, "end": at}, "text": "x"},
                               {"range": {"start": at, "end": at}, "rangeLength": 0, "text": ""},
                               {"text": "all\n"}]}
    assert did_change_params(_refuse, data, t.DidChangeTextDocumentParams) == \
        default_converter().structure(data, t.DidChangeTextDocumentParams)
