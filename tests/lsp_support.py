"""Helpers for the end-to-end language-server tests (pytest-lsp drives the real server over
stdio): documents, waiting for a given publish, applying a WorkspaceEdit as a client would."""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT.parent / "shared" / "cases"
SERVER = [sys.executable, "-m", "sbatch_lsp.server", "--stdio"]
#: push clients: VS Code 1.65 and Debian's Neovim 0.7 declare no pull diagnostics
PROFILES = ["visual-studio-code", "neovim@v0.7.0"]
#: pull clients: Neovim 0.11 (which also negotiates UTF-8 positions) and VS Code with pull


def config() -> ClientServerConfig:
    return ClientServerConfig(server_command=SERVER)


def record_publishes(client: LanguageClient) -> list[t.PublishDiagnosticsParams]:
    """Keep every publishDiagnostics (pytest-lsp keeps only the last list per URI)."""
    seen: list[t.PublishDiagnosticsParams] = []
    client.published = seen
    client.protocol.fm._features.pop(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, None)  # replace pytest-lsp's

    @client.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _publish(params: t.PublishDiagnosticsParams) -> None:
        seen.append(params)
        client.diagnostics[params.uri] = params.diagnostics

    return seen


async def initialize(client: LanguageClient, profile: str, root: Path, options=None,
                     caps: t.ClientCapabilities | None = None) -> t.InitializeResult:
    record_publishes(client)
    client.init_result = await client.initialize_session(t.InitializeParams(
        capabilities=caps or pytest_lsp.client_capabilities(profile),
        root_uri=root.as_uri(), initialization_options=options))
    return client.init_result


def open_doc(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(t.DidOpenTextDocumentParams(
        t.TextDocumentItem(uri=uri, language_id="shellscript", version=version, text=text)))


def replace_all(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(t.DidChangeTextDocumentParams(
        text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[t.TextDocumentContentChangeWholeDocument(text=text)]))


async def publish_for(client: LanguageClient, uri: str, version: int | None,
                      timeout: float = 60) -> t.PublishDiagnosticsParams:
    """The first publish for ``uri`` at ``version`` (a hang guard, not a timing check)."""
    async def wait():
        while True:
            for p in client.published:
                if p.uri == uri and p.version == version:
                    return p
            await client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return await asyncio.wait_for(wait(), timeout)


def utf16(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def offset_of(text: str, pos: t.Position) -> int:
    """A UTF-16 LSP position as a code-point offset into ``text`` (lines split on \\n)."""
    lines = text.split("\n")
    off = sum(len(x) + 1 for x in lines[:pos.line])
    line, units, i = lines[pos.line] if pos.line < len(lines) else "", 0, 0
    while i < len(line) and units < pos.character:
        units += utf16(line[i])
        i += 1
    return off + i


def apply(text: str, edits: list[t.TextEdit]) -> str:
    """Apply TextEdits as an LSP client does (all ranges refer to the original text)."""
    spans = sorted(((offset_of(text, e.range.start), offset_of(text, e.range.end), e.new_text)
                    for e in edits), key=lambda x: (x[0], x[1]))
    out, pos = [], 0
    for a, b, new in spans:
        assert a >= pos, "overlapping edits"
        out += [text[pos:a], new]
        pos = b
    return "".join(out + [text[pos:]])


def edits_of(edit: t.WorkspaceEdit, uri: str) -> list[t.TextEdit]:
    if edit.document_changes:
        return [e for dc in edit.document_changes if dc.text_document.uri == uri for e in dc.edits]
    return list(edit.changes[uri])
