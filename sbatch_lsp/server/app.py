"""The language server: wiring LSP messages to the engine (pygls 2, lsprotocol).

Diagnostics are pulled (``textDocument/diagnostic``) by clients that declare
``textDocument.diagnostic`` and pushed (on didOpen, didChange, didSave) to the others, never
both, so no client shows a finding twice.
"""
from __future__ import annotations

import asyncio
import logging
import sys
import threading

from lsprotocol import types as t
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..source import Source
from . import actions, live, logs, stdio
from .completion import complete
from .wire import converter
from .documents import Documents, Linted, split_lines_as_lsp
from .hover import hover_text
from .positions import Positions
from .symbols import document_symbols, inlay_hints
from .settings import parse_settings
from .steps import code_lenses

log = logging.getLogger("sbatch_lsp.server")
NAME = "sbatch-lsp"


class SbatchLanguageServer(LanguageServer):
    """pygls' server plus the open documents' lints and the client's diagnostic model."""

    def __init__(self):
        super().__init__(NAME, __version__, converter_factory=converter)
        self.documents = Documents(self)
        self.pull = False  # decided at initialize
        self.shut_down = False  # a shutdown request came before exit
        self._published: dict[str, int] = {}  # uri -> serial of the lint last published
        self._shown: set[str] = set()

    def shutdown(self):
        """Stop without waiting for pygls' stdin reader thread (blocked in a read until the
        client closes the pipe; pygls' own shutdown waits for it, so `exit` took seconds)."""
        if self._stop_event is not None:
            self._stop_event.set()
        if self._thread_pool:
            self._thread_pool.shutdown(wait=False, cancel_futures=True)
        if self._server:
            self._server.close()

    def start_io(self, stdin=None, stdout=None) -> None:
        """Serve over stdio as pygls does, but reading each message in one thread hand-over
        (server/stdio.py)."""
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(stdio.serve(self, stdin or sys.stdin.buffer))
        except BrokenPipeError:
            log.error("Connection to the client is lost! Shutting down the server.")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    # ---- helpers --------------------------------------------------------------------------
    def caps(self, *path, default=None):
        """A nested client capability (``caps("workspace", "diagnostics", "refresh_support")``)."""
        node: object = self.client_capabilities
        for name in path:
            node = getattr(node, name, None) if node is not None else None
        return default if node is None else node

    def warn_once(self, message: str) -> None:
        """Show ``message`` (masked) once per server run."""
        message = self.documents.masker(message).text(message)
        if message not in self._shown:
            self._shown.add(message)
            self.window_show_message(t.ShowMessageParams(type=t.MessageType.Warning,
                                                         message=f"sbatch-lsp: {message}"))

    async def linted(self, uri: str, fresh: bool = False) -> Linted:
        # shielded: the lint is shared by every request for this version, and a request the
        # client cancels (a pull a save supersedes) must not cancel it for the next one
        linted = await asyncio.shield(self.documents.current(uri, fresh))
        if linted.config_error:
            self.warn_once(linted.config_error)
        return linted

    def schedule_publish(self, uri: str, fresh: bool = False) -> None:
        """Publish the diagnostics of the document's current text once its lint is done (push
        clients only). A callback on the lint's future, not a task awaiting it: a task took
        three more turns of the event loop per keystroke (its start, the shield, its wake-up)."""
        if self.pull:
            return
        try:
            future = self.documents.current(uri, fresh)
        except Exception:  # logged; the server stays up
            log.exception("linting %s failed", uri)
            return
        future.add_done_callback(lambda f: self._publish(uri, f))

    def _publish(self, uri: str, future: asyncio.Future) -> None:
        if future.cancelled():
            return  # the document was closed
        if future.exception() is not None:
            log.error("linting %s failed", uri, exc_info=future.exception())
            return
        linted = future.result()
        if linted.config_error:
            self.warn_once(linted.config_error)
        doc = self.workspace.text_documents.get(uri)
        if doc is None or doc.version != linted.version or \
                self._published.get(uri) == linted.serial:
            return  # closed, stale (a newer lint publishes), or already sent
        self._published[uri] = linted.serial
        self.text_document_publish_diagnostics(t.PublishDiagnosticsParams(
            uri=uri, diagnostics=linted.diagnostics, version=linted.version))
        self.documents.sent()

    def relint_all(self) -> None:
        """After a settings change: pull clients are asked to pull again, push clients get new
        diagnostics for every open document."""
        if self.pull:
            if self.caps("workspace", "diagnostics", "refresh_support", default=False):
                self.workspace_diagnostic_refresh(None)
            return
        for uri in list(self.workspace.text_documents):
            self.schedule_publish(uri)

    def apply_settings(self, value) -> None:
        settings, error = parse_settings(value)
        if error:
            self.warn_once(error)
        self.documents.set_settings(settings)


server = SbatchLanguageServer()
logs.register(server)  # Slurm job logs: the triage command (diagnostics: documents.py)
live.register(server)  # the controller's answer (sbatch --test-only), only when asked


@server.feature(t.INITIALIZE)
def initialize(ls: SbatchLanguageServer, params: t.InitializeParams) -> None:
    split_lines_as_lsp(ls.workspace)
    ls.pull = ls.caps("text_document", "diagnostic") is not None
    ls.apply_settings(params.initialization_options)


@server.feature(t.SHUTDOWN)
def shutdown(ls: SbatchLanguageServer, params) -> None:
    ls.shut_down = True


@server.feature(t.TEXT_DOCUMENT_DID_OPEN)
@server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
def changed(ls: SbatchLanguageServer, params) -> None:
    ls.schedule_publish(params.text_document.uri)


@server.feature(t.TEXT_DOCUMENT_DID_SAVE)
def saved(ls: SbatchLanguageServer, params: t.DidSaveTextDocumentParams) -> None:
    """Lint again even with the same text: a project configuration file may have changed."""
    ls.schedule_publish(params.text_document.uri, fresh=True)


@server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
def closed(ls: SbatchLanguageServer, params: t.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.documents.forget(uri)
    if ls._published.pop(uri, None) is not None:
        ls.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(t.WORKSPACE_DID_CHANGE_CONFIGURATION)
def configuration(ls: SbatchLanguageServer, params: t.DidChangeConfigurationParams) -> None:
    ls.apply_settings(params.settings)
    ls.relint_all()


@server.feature(t.TEXT_DOCUMENT_DIAGNOSTIC,
                t.DiagnosticOptions(identifier="sbatch-lint", inter_file_dependencies=False,
                                    workspace_diagnostics=False))
async def pull_diagnostics(ls: SbatchLanguageServer, params: t.DocumentDiagnosticParams):
    linted = await ls.linted(params.text_document.uri)
    if params.previous_result_id == linted.result_id:
        return t.RelatedUnchangedDocumentDiagnosticReport(result_id=linted.result_id)
    return t.RelatedFullDocumentDiagnosticReport(items=linted.diagnostics,
                                                 result_id=linted.result_id)


@server.feature(t.TEXT_DOCUMENT_CODE_ACTION,
                t.CodeActionOptions(code_action_kinds=actions.KINDS))
async def code_action(ls: SbatchLanguageServer, params: t.CodeActionParams):
    linted = await ls.linted(params.text_document.uri)
    only = list(params.context.only) if params.context.only is not None else None
    versioned = bool(ls.caps("workspace", "workspace_edit", "document_changes", default=False))
    out: list[t.CodeAction] = []
    if actions.wanted(t.CodeActionKind.QuickFix, only):
        pos = linted.positions
        out += actions.quick_fixes(linted, pos.offset(params.range.start),
                                   pos.offset(params.range.end), versioned)
    for kind, make in ((actions.FIX_ALL, actions.fix_all),
                       (t.CodeActionKind.RefactorRewrite, actions.srun_native)):
        if actions.wanted(kind, only):
            action = await ls.documents.derived(linted, make, versioned)
            if action is not None:
                out.append(action)
    return out


def _snapshot(ls: SbatchLanguageServer, uri: str) -> Positions:
    doc = ls.workspace.get_text_document(uri)
    return Positions(Source(doc.source), doc.position_codec)


@server.feature(t.TEXT_DOCUMENT_HOVER)
def hover(ls: SbatchLanguageServer, params: t.HoverParams) -> t.Hover | None:
    """Answered from the current text at once, never waiting for a lint."""
    pos = _snapshot(ls, params.text_document.uri)
    found = hover_text(pos.source, pos.offset(params.position),
                       ls.documents.config(params.text_document.uri))
    if found is None:
        return None
    markdown = t.MarkupKind.Markdown in (ls.caps("text_document", "hover", "content_format")
                                         or [t.MarkupKind.Markdown])
    body, start, end = found
    body = ls.documents.masker(pos.source.text).text(body)
    return t.Hover(contents=t.MarkupContent(kind=t.MarkupKind.Markdown if markdown else
                                            t.MarkupKind.PlainText, value=body),
                   range=pos.range(start, end))


@server.feature(t.TEXT_DOCUMENT_COMPLETION,
                t.CompletionOptions(trigger_characters=["-", "=", "$", "%", ",", "{"]))
def completion(ls: SbatchLanguageServer, params: t.CompletionParams) -> t.CompletionList:
    pos = _snapshot(ls, params.text_document.uri)
    src = pos.source
    offset = pos.offset(params.position)
    line = src.line_of(offset)
    text = src.line_text(line)
    col = offset - src.line_starts[line]
    snippets = bool(ls.caps("text_document", "completion", "completion_item", "snippet_support",
                            default=False))
    items = complete(text, line, lambda c: pos.codec.client_num_units(text[:c]), col,
                     ls.documents.config(params.text_document.uri), snippets)
    return t.CompletionList(is_incomplete=False, items=items)


@server.feature(t.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
async def symbols(ls: SbatchLanguageServer, params: t.DocumentSymbolParams):
    return document_symbols(await ls.linted(params.text_document.uri))


@server.feature(t.TEXT_DOCUMENT_CODE_LENS, t.CodeLensOptions(resolve_provider=False))
async def lenses(ls: SbatchLanguageServer, params: t.CodeLensParams):
    """Each srun step's layout, GPUs and launcher above its ``srun`` (server/steps.py)."""
    linted = await ls.linted(params.text_document.uri)
    if linted.version != ls.workspace.get_text_document(params.text_document.uri).version:
        return []  # the text moved on while it was linted: positions would be wrong
    return code_lenses(linted)


@server.feature(t.TEXT_DOCUMENT_INLAY_HINT, t.InlayHintOptions(resolve_provider=False))
async def hints(ls: SbatchLanguageServer, params: t.InlayHintParams):
    if not ls.documents.settings.inlay_hints:
        return []
    linted = await ls.linted(params.text_document.uri)
    if linted.version != ls.workspace.get_text_document(params.text_document.uri).version:
        return []  # the text moved on while it was linted: positions would be wrong
    return inlay_hints(linted)
