"""The server's hand-written JSON paths against pygls' own (server/diagnostics.py ``converter``,
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
from sbatch_lsp.server.diagnostics import converter, diagnostic_json, lsp_diagnostics
from sbatch_lsp.server.positions import Positions
from sbatch_lsp.server.settings import _candidates
from sbatch_lsp.server.stdio import read_message

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
