"""Linting open documents off the event loop, tied to their versions.

One daemon thread lints; the event loop only takes snapshots (text, version) and turns results
into messages, so hover, completion and the rest are answered while a long script is linted
(the thread gives the interpreter lock up every few milliseconds). A lint for a version that a
newer one replaces is abandoned: before it starts (it never runs) or, once started, at the
lint's next check (``lint(superseded=...)``: before each rule); whoever waited for it gets the
newer result, and a result for a version that is no longer current is never published.

The lint thread also runs the cyclic garbage collector itself (``own_gc``); automatic
collection is off. A dropped lint leaves no cyclic garbage (its shell model and facts hold their
owners weakly: sbatch_lsp/backref.py), so reference counting frees a lint once it is replaced, and
a lint makes no cyclic temporaries either. Two costs stay off the path from a keystroke to its
diagnostics:

- Freeing the replaced lint (tens of milliseconds for a long script) happens on the lint thread
  after the publish of the lint that replaced it: the loop hands it over (``Worker.retire``) and,
  once it has published, asks for a sweep (``Documents.sent``); a lint starting with something
  still retired (a pull client, a stale lint nobody published) sweeps first.
- No collection walks a finished lint: each sweep moves every tracked object out of the
  collector's sight (``gc.freeze``, free of cost), so nothing is left for a young collection (a
  young collection at a pause in typing walked the whole last lint: ~260 ms at 5,000 lines).

A sweep adds the objects made since the previous one to the growth (the collector's count:
allocations less deallocations since the last freeze, so a lint and the freeing of the lint it
replaced cancel out) and, when the tracked objects grew since the last full collection by more
than a quarter of those that survived it (at least ``COLLECT_FLOOR``: CPython's own rule for a
full collection, which bounds memory), unfreezes everything and runs a full collection, but only
at a pause: when the thread has been idle for ``IDLE_COLLECT`` seconds. So full collections run
after documents are opened, never while one is typed in nor between a publish and the next
keystroke's lint, and what the collector may still find (the server's own cycles, frozen
meanwhile) is found then. Sweeps run after a publish and at such a pause with something to sweep
or a collection due.
"""
from __future__ import annotations

import asyncio
import gc
import itertools
import logging
import queue
import re
import os
import threading
from dataclasses import dataclass, field

from lsprotocol import types as t
from pygls.workspace import TextDocument, Workspace

from ..config import Config
from ..lint import LintResult, Superseded, lint
from ..secrets import Masker, find_secrets
from ..shell import sourced
from ..source import Source
from .diagnostics import lsp_diagnostics
from .logs import is_log, log_diagnostics
from .positions import Positions
from .settings import Settings, config_for

log = logging.getLogger(__name__)


LINES = re.compile(r"[^\n]*\n|[^\n]+$")


class LspLinesDocument(TextDocument):
    """pygls' document with the engine's (and LSP's) line breaks. pygls splits lines with
    ``str.splitlines``, which also breaks at form feeds, ``\\x1c``-``\\x1e``, U+2028 and more: a
    form feed in a comment then shifted every later line of an incremental edit, and the server's
    copy of the text silently diverged from the editor's."""

    @property
    def lines(self):
        return tuple(LINES.findall(self.source))

    def _apply_incremental_change(self, change: t.TextDocumentContentChangePartial) -> None:
        """Apply an incremental (range) change, as pygls does, on the text: a splice at the
        range's offsets when :meth:`_ascii_offset` finds both (a keystroke: one place on ASCII
        lines), else pygls' own, which handles the rest (columns past a line's end, a line past
        the last, non-ASCII lines, a range whose end line comes before its start line). pygls'
        splits the whole text into lines, walks the line's characters in Python to convert
        columns (twice per end) and rewrites the text line by line: 1.7M instructions a
        keystroke at 300 lines, 0.1M this way (callgrind)."""
        source = self.source
        rng = change.range
        start = self._ascii_offset(source, rng.start)
        end = start if rng.end == rng.start else self._ascii_offset(source, rng.end)
        if start is None or end is None or rng.start.line > rng.end.line:
            super()._apply_incremental_change(change)
            return
        self._source = source[:start] + change.text + source[end:]

    @staticmethod
    def _ascii_offset(source: str, pos: t.Position) -> int | None:
        """The offset into ``source`` where pygls' conversion puts ``pos`` (lines split after
        each ``\\n``, as :attr:`lines`), when its line exists and is ASCII (a column is then a
        character in every position encoding) and its column is at most the line's length
        with ``\\r\\n`` counted as one (pygls counts it so); None otherwise (pygls' own
        conversion clamps or must count units)."""
        rest = source.split("\n", pos.line)  # the text after line pos.line's start, last
        if len(rest) <= pos.line:
            return None  # fewer lines
        start = len(source) - len(rest[-1])
        if start >= len(source):
            return None  # the line after the last: pygls appends
        line = source[start:source.find("\n", start) + 1 or len(source)]
        if not line.isascii() or not 0 <= pos.character <= len(line.replace("\r\n", "\n")):
            return None
        return start + pos.character


def split_lines_as_lsp(workspace: Workspace) -> None:
    """Make every document ``workspace`` creates an :class:`LspLinesDocument`."""
    create = workspace._create_text_document

    def _create(*args, **kwargs):
        doc = create(*args, **kwargs)
        doc.__class__ = LspLinesDocument
        return doc

    workspace._create_text_document = _create  # type: ignore[method-assign]


@dataclass
class Linted:
    """The lint of one snapshot of a document."""

    uri: str
    version: int | None
    generation: int  # settings generation the lint used
    text: str
    result: LintResult
    config: Config
    positions: Positions
    diagnostics: list[t.Diagnostic]
    config_error: str | None = None
    serial: int = 0  # distinct for every lint
    cache: dict = field(default_factory=dict)

    @property
    def result_id(self) -> str:
        return f"{self.version}:{self.generation}"


class _Job:
    __slots__ = ("fn", "args", "future", "skip", "cancellable")

    def __init__(self, fn, args, future, cancellable: bool):
        self.fn, self.args, self.future, self.skip = fn, args, future, False
        self.cancellable = cancellable


#: seconds the lint thread waits idle before it frees what was retired and freezes the rest
IDLE_COLLECT = 0.2
#: growth in tracked objects since the last full collection that makes one due, at least
COLLECT_FLOOR = 100_000
#: a threshold no count reaches: collections run only when the thread asks
NEVER = 1 << 30


class Worker:
    """A single daemon thread running functions for the event loop (it never delays exit);
    with ``own_gc`` it runs the garbage collector as the module docstring says."""

    def __init__(self, loop: asyncio.AbstractEventLoop, own_gc: bool = False):
        self.loop = loop
        self.own_gc = own_gc
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.retired: list = []  # what the loop handed over to be freed here (retire)
        self.survivors = 0  # objects the collector tracked after its last full collection
        self.made = 0  # growth in tracked objects since then, summed at each sweep
        self.thread = threading.Thread(target=self._run, name="sbatch-lint", daemon=True)
        self.thread.start()

    def submit(self, fn, *args, cancellable: bool = False) -> _Job:
        """Run ``fn(*args)`` on the thread; with ``cancellable`` as ``fn(*args, superseded)``,
        where ``superseded()`` answers whether the job was marked ``skip`` since."""
        job = _Job(fn, args, self.loop.create_future(), cancellable)
        self.jobs.put(job)
        return job

    def retire(self, obj) -> None:
        """Hand ``obj`` (a lint a newer one replaced) over to be freed on the thread, at its
        next sweep: freeing a long script's lint takes tens of milliseconds, which the loop
        would spend before it publishes the newer one (on the loop, any thread)."""
        self.retired.append(obj)

    def sweep_soon(self) -> None:
        """Sweep once the jobs already queued have run (on the loop: after a publish)."""
        if self.own_gc:
            self.submit(self._sweep)

    def _next(self) -> _Job:
        if not self.own_gc or not (self.retired or gc.get_count()[0] or self._due()):
            return self.jobs.get()
        try:
            return self.jobs.get(timeout=IDLE_COLLECT)
        except queue.Empty:
            self._sweep(idle=True)
            return self.jobs.get()

    def _sweep(self, idle: bool = False) -> None:
        """Free what was retired, then move every tracked object out of the collector's sight
        (``gc.freeze``, at no cost: no collection walks them until a full one), adding the
        objects made since the last sweep to the growth; then, when ``idle`` (no job for
        ``IDLE_COLLECT`` seconds), a full collection if due. A due collection waits for such a
        pause: run after a publish, it delayed the next keystroke's lint by the whole
        collection (the first edit after opening a 5,000-line script took 1.5x the others).

        The growth is the collector's count (allocations less deallocations since the last
        freeze, which zeroes it): the lint that made objects and the freeing of the lint it
        replaced must fall between the same two freezes, in that order, for them to cancel (the
        count never goes below zero: freed first, they would be lost and the new lint counted
        whole). Retired lints are freed only here, after the lint that replaced them."""
        self.retired.clear()
        self.made += gc.get_count()[0]
        gc.freeze()
        if idle and self._due():
            gc.unfreeze()
            gc.collect()
            self.survivors, self.made = len(gc.get_objects()), 0
            gc.freeze()

    def _due(self) -> bool:
        """Whether the tracked objects grew, since the last full collection, by more than a
        quarter of its survivors (at least ``COLLECT_FLOOR``)."""
        return self.made > max(COLLECT_FLOOR, self.survivors // 4)

    def _run(self) -> None:
        if self.own_gc:
            gc.freeze()
            gc.set_threshold(NEVER, NEVER, NEVER)
        while True:
            job = self._next()
            if job.skip:
                continue
            if self.own_gc and self.retired and job.fn != self._sweep:
                self._sweep()  # no publish asked for one since (a pull client, a stale lint)
            try:
                args = job.args + ((lambda j=job: j.skip),) if job.cancellable else job.args
                value, exc = job.fn(*args), None
            except Superseded:  # a newer version's job settles this one's future
                value, exc = None, None
            except BaseException as e:  # noqa: BLE001  (reported through the future)
                value, exc = None, e
            if job.skip or (exc is None and job.fn == self._sweep):
                continue  # a sweep's future has no waiter: settling it woke the loop for
                # nothing after every publish
            try:
                self.loop.call_soon_threadsafe(_settle, job.future, value, exc)
            except RuntimeError:  # the loop closed (the server shut down): nobody waits
                return


def _settle(future: asyncio.Future, value, exc) -> None:
    """Give ``future`` its outcome (on the loop)."""
    if not future.done():
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(value)


class Documents:
    """The latest lint of each document, computed on demand."""

    def __init__(self, server):
        self.server = server
        self.settings = Settings()
        self.generation = 0
        self._worker: Worker | None = None
        self._jobs: dict[str, tuple[tuple, _Job]] = {}
        self._last: dict[str, Linted] = {}

    def config(self, uri: str) -> Config:
        """The configuration of the document's latest finished lint (the editor's before that):
        for hover and completion, which never wait for a lint."""
        last = self._last.get(uri)
        return last.config if last is not None else self.settings.config

    def masker(self, text: str = "") -> Masker:
        """A masker for ``text`` (a document snapshot, a log line) that also knows every
        secret value the latest lints of the open documents found: for the faces answered
        without waiting for a lint (hover) and for the server's log."""
        known = [v for linted in list(self._last.values()) for v in linted.result.masker.values]
        return Masker.of(text, find_secrets(text), known)

    def set_settings(self, settings: Settings) -> None:
        """New editor settings: every later lint uses them."""
        self.settings = settings
        self.generation += 1

    def _lint_thread(self) -> Worker:
        """The thread that lints, started on first use (inside the server's event loop)."""
        if self._worker is None:
            self._worker = Worker(asyncio.get_running_loop(), own_gc=True)
        return self._worker

    async def derived(self, linted: Linted, compute, *args):
        """``compute(linted, *args)`` run on the lint thread, once per lint (fix-all and the
        srun-native conversion lint the text again: they must not block the loop either)."""
        key = (compute, args)
        if key not in linted.cache:
            linted.cache[key] = self._lint_thread().submit(compute, linted, *args).future
        return await asyncio.shield(linted.cache[key])

    def forget(self, uri: str) -> None:
        """The document was closed: drop its pending lint and free its last one (on the lint
        thread, which may be waiting for work with nothing else to sweep)."""
        self._retire(self._last.pop(uri, None))
        self.sent()
        job = self._jobs.pop(uri, None)
        if job is not None:
            job[1].skip = True
            job[1].future.cancel()  # no newer lint will settle it: the document is closed

    def current(self, uri: str, fresh: bool = False) -> asyncio.Future:
        """A future of the :class:`Linted` for the document's current text and settings;
        ``fresh`` lints again even so (after a save: a project file may have changed).

        Raises whatever reading the document raises (an unknown URI whose file is missing)."""
        doc = self.server.workspace.get_text_document(uri)
        text = doc.source
        key = (doc.version, self.generation, hash(text))
        held = self._jobs.get(uri)
        if held is not None and held[0] == key and not fresh:
            return held[1].future
        job = self._lint_thread().submit(self._lint, uri, text, doc.version, doc.path,
                                         self.generation, self.settings, doc.position_codec,
                                         self.opened, cancellable=True)
        if held is not None and not held[1].future.done():
            old = held[1]
            old.skip = True  # never run it, or abandon it at its next check; its waiters get
            # the newer result
            job.future.add_done_callback(lambda f, o=old.future: _forward(f, o))
        self._jobs[uri] = (key, job)
        job.future.add_done_callback(lambda f: self._keep(uri, f))
        return job.future

    def opened(self, path: str) -> str | None:
        """The text of the open document at file ``path`` (absolute, normalised), or None: a
        file the script sources is read from here before the disk (shell/sourced.py)."""
        for doc in list(self.server.workspace.text_documents.values()):
            if doc.uri.startswith("file:") and doc.path and os.path.normpath(doc.path) == path:
                return doc.source
        return None

    def _keep(self, uri: str, future: asyncio.Future) -> None:
        if not future.cancelled() and future.exception() is None and uri in self._jobs:
            self._retire(self._last.get(uri))
            self._last[uri] = future.result()

    def _retire(self, linted: Linted | None) -> None:
        """Free ``linted`` on the lint thread, after the publish of what replaced it."""
        if linted is not None and self._worker is not None:
            self._worker.retire(linted)

    def sent(self) -> None:
        """Ask the lint thread to sweep: free what was retired, once the loop is done with it
        (after a publish; after a document is closed)."""
        if self._worker is not None:
            self._worker.sweep_soon()

    @staticmethod
    def _lint(uri, text, version, path, generation, settings, codec, opened,
              superseded) -> Linted:
        """The Linted of one snapshot (on the lint thread); raises :class:`Superseded` when
        ``superseded()`` turns True before the lint's rules have all run. ``opened(path)``
        gives an open document's text: files the script sources are read from it first."""
        config, error = config_for(path if uri.startswith("file:") else None, settings)
        if is_log(uri, text):  # a job's output: triage's diagnostics (server/logs.py)
            result = LintResult(Source(text, path or uri), [])
            pos = Positions(result.source, codec)
            diagnostics = log_diagnostics(text, uri, path, codec)
        else:
            with sourced.documents(opened):
                result = lint(text, path or uri, config, superseded)
            pos = Positions(result.source, codec)
            diagnostics = lsp_diagnostics(result, uri, pos)
        return Linted(uri, version, generation, text, result, config, pos,
                      diagnostics, error, next(_SERIAL))


_SERIAL = itertools.count(1)


def _forward(src: asyncio.Future, dst: asyncio.Future) -> None:
    if dst.done():
        return
    if src.cancelled():
        dst.cancel()
    elif (exc := src.exception()) is not None:
        dst.set_exception(exc)
    else:
        dst.set_result(src.result())
