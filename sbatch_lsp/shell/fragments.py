"""Chunk fragments: the shell model of one top-level chunk with offsets relative to the chunk,
kept to be placed again at any offset.

A top-level chunk of a script (shell/chunker.py) is read by the parsers from its own text
alone, and in the script's own text (no nested string, no here-document body) every offset is
the chunk's start plus an offset into the chunk: so the commands, assignments, here-documents,
functions and multi-line strings a chunk contributes are a pure function of its text, placed
at its start. :func:`sbatch_lsp.shell.parse.chunk_fragment` memoises that function by the
chunk's text (the language server lints every version of a document: an edit leaves all
chunks but one unchanged); :meth:`Fragment.place` copies a fragment into a script, so a placed
model is indistinguishable from one built afresh (tests/test_incremental.py compares them).

The objects the rest of the build and the facts change are new at every placement: a
``Command`` (its ``words`` after a function call's substitution, ``nested``, ``runs``,
``calls``, ``script``) and an ``Assignment`` (it names its command). The ones nothing changes
once built (a word with its expansions, a redirection, a here-document, and a command's lists
of words, redirections and here-documents) are shared with the fragment's previous placement
when that was at the same offset: the chunks before an edit keep their offsets, so an edit
makes, and later frees, only those objects of the chunks it changed or moved.

A fragment lists its objects once and links them by position (a command's assignments and
here-documents, an assignment's command, the script's lists), so a placement is a pass over
lists, with no lookup by identity. Those passes use ``zip`` without ``strict=True`` (the
lists are the fragment's own, of equal lengths by construction): a keyword argument makes
``zip`` parse its arguments the slow way, about 800 instructions a call.
"""
from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from .model import (Assignment, Chunk, Command, Expansion, Heredoc, Redirect, Script, Word,
                    sort_commands)

_new = object.__new__
_set = object.__setattr__
#: where a Command keeps its weak reference to its script (model.Command.script, a BackRef)
_SCRIPT_SLOT = vars(Command)["script"].slot
#: where an Assignment keeps its weak reference to its command (model.Assignment.command)
_COMMAND_SLOT = vars(Assignment)["command"].slot


class _Links(NamedTuple):
    """How a fragment's objects refer to each other, by position: for each command its prefix
    assignments (in :attr:`Fragment.assignments`) and here-documents (in
    :attr:`Fragment.heredocs`); for each assignment its command (in :attr:`Fragment.commands`,
    -1 for none); and the script's lists of assignments and here-documents."""

    prefix: tuple[tuple[int, ...], ...]
    docs: tuple[tuple[int, ...], ...]
    owner: tuple[int, ...]
    listed: tuple[int, ...]
    listed_docs: tuple[int, ...]


class _Placed(NamedTuple):
    """What a placement at one offset and line made that nothing changes once built, by
    position: for each of the fragment's commands, the command and its (words,
    here-documents, redirections) lists as placed and its ``Command.inert`` (the words list
    again when the fragment found it inert, else None); each assignment's value word, each
    here-document, and the script's :class:`Chunk`."""

    lists: list[tuple[Command, list[Word], list[Heredoc], list[Redirect], list[Word] | None]]
    values: list[Word | None]
    docs: list[Heredoc]
    chunk: Chunk


@dataclass(frozen=True)
class Fragment:
    """What one chunk's reading added to a script, offsets relative to the chunk's start: the
    commands (in the order :func:`sbatch_lsp.shell.parse.parse` sorts a script's: by start,
    the longer first), every assignment (the commands' prefix ones and the others the script
    lists) and here-document once, how they link (:class:`_Links`), the functions defined
    (name -> span, in definition order), the multi-line strings (``data_spans``), how the
    chunk was read (``Chunk.parser``/``Chunk.error``), whether it is a conditional compound
    (``Chunk.conditional``) and its number of lines less one (``Chunk.end_line`` -
    ``Chunk.start_line``) and characters (``length``). ``words`` holds the commands' words
    in one list, command after command, and ``parts`` for each command the command, its
    here-documents' positions (as in :attr:`_Links.docs`), where its words end in
    ``words`` (a move copies the words in one pass, then cuts them per command) and whether
    its words are inert (``Command.inert``: the placed command is marked so). Its own
    objects are never mutated; ``last`` holds ``(base, line, placed)``: the offset and first
    line of the last placement and what it made that nothing changes once built
    (:class:`_Placed`)."""

    commands: tuple[Command, ...]
    assignments: tuple[Assignment, ...]
    heredocs: tuple[Heredoc, ...]
    links: _Links
    functions: tuple[tuple[str | None, tuple[int, int]], ...]
    data_spans: tuple[tuple[int, int], ...]
    parser: str
    error: str | None
    conditional: bool
    lines: int
    length: int
    words: tuple[Word, ...]
    parts: tuple[tuple[Command, tuple[int, ...], int, bool], ...]
    last: list[tuple[int, int, _Placed | None]] = field(
        default_factory=lambda: [(-1, -1, None)], compare=False, repr=False)

    @classmethod
    def of(cls, script: Script, chunk: Chunk, inert: Callable[[list[Word]], bool]) -> "Fragment":
        """The fragment of ``script``, a script built from one chunk's text alone (offsets
        relative to it), whose reading is recorded in ``chunk``; ``inert`` tells whether a
        command's words are inert (``Command.inert``). Detaches its commands from ``script``
        (the fragment keeps no script alive)."""
        commands = script.commands[:]
        sort_commands(commands)
        assignments = _distinct([a for c in commands for a in c.assignments] +
                                script.assignments)
        heredocs = _distinct([h for c in commands for h in c.heredocs] + script.heredocs)
        where = {id(x): k for k, x in enumerate(commands)}
        where.update((id(x), k) for k, x in enumerate(assignments))
        where.update((id(x), k) for k, x in enumerate(heredocs))
        owners = [a.command for a in assignments]
        links = _Links(tuple(tuple(where[id(a)] for a in c.assignments) for c in commands),
                       tuple(tuple(where[id(h)] for h in c.heredocs) for c in commands),
                       tuple(where[id(c)] if c is not None else -1 for c in owners),
                       tuple(where[id(a)] for a in script.assignments),
                       tuple(where[id(h)] for h in script.heredocs))
        for cmd in commands:
            cmd.script = None
        cuts = itertools.accumulate(len(c.words) for c in commands)
        parts = tuple(zip(commands, links.docs, cuts, [inert(c.words) for c in commands],
                          strict=True))
        return cls(tuple(commands), tuple(assignments), tuple(heredocs), links,
                   tuple(script.functions.items()), tuple(script.data_spans), chunk.parser,
                   chunk.error, chunk.conditional, chunk.end_line - chunk.start_line,
                   chunk.end - chunk.start, tuple(w for c in commands for w in c.words), parts)

    def place(self, script: Script, ref: weakref.ref, base: int, line: int) -> None:
        """Append this fragment's chunk and copies of its objects to ``script`` (``ref``: a
        weak reference to it, made once per build), every offset moved by ``base`` (the
        chunk's start in the script's text) and its lines by ``line`` (its 0-based first
        line). The copies' commands belong to ``script``; the chunk and the objects nothing
        changes are the last placement's when it was at ``base`` and ``line`` too."""
        at, at_line, placed = self.last[0]
        if at != base or at_line != line or placed is None:
            placed = self._moved(base, line)
            self.last[0] = (base, line, placed)
        script.chunks.append(placed.chunk)
        commands = script.commands
        first = len(commands)
        for c, words, docs, redirects, inert in placed.lists:  # (no zip: a call a chunk)
            # (a copy of the fields: a Command's ``__init__`` sets a dozen)
            fields = c.__dict__.copy()
            fields["words"], fields["heredocs"], fields["redirects"] = words, docs, redirects
            fields["inert"] = inert
            fields["start"] += base
            fields["end"] += base
            fields["nested"], fields["assignments"] = [], []
            fields[_SCRIPT_SLOT] = ref
            new = _new(Command)
            new.__dict__ = fields
            commands.append(new)
        if self.assignments:
            self._assign(script, commands[first:], placed.values, base)
        if self.links.listed_docs:
            script.heredocs += _picked(placed.docs, self.links.listed_docs)
        for name, (s, e) in self.functions:
            script.functions[name] = (s + base, e + base)
        for s, e in self.data_spans:
            script.data_spans.append((s + base, e + base))

    def _assign(self, script: Script, commands: list[Command], values: list[Word | None],
                base: int) -> None:
        """Give ``script`` and ``commands`` (this placement's copies of :attr:`commands`)
        copies of :attr:`assignments` moved by ``base``, holding ``values`` (their value words
        as placed). (Apart from :meth:`place`, and a loop, not a comprehension: one that reads
        a function's local variable makes it a cell, dearer for every call.)"""
        links = self.links
        owned = []
        for a, value, k in zip(self.assignments, values, links.owner):  # noqa: B905
            owned.append(_assignment(a, value, base, commands[k] if k >= 0 else None))
        for new, mine in zip(commands, links.prefix):  # noqa: B905
            if mine:
                new.assignments = _picked(owned, mine)
        script.assignments += _picked(owned, links.listed)

    def _moved(self, base: int, line: int) -> _Placed:
        """New words, here-documents, redirections and chunk for a placement at offset ``base``
        and first line ``line``. (The words in one pass over :attr:`words`, and no
        comprehension over an empty list: every chunk after an edit is moved, and each
        comprehension costs a function object and a frame; most chunks are one command with
        no here-document or redirection.)"""
        docs = [Heredoc(h.start + base, h.end + base, h.quoted, h.text) for h in self.heredocs] \
            if self.heredocs else []
        words = _words(self.words, base)
        lists = []
        cut = 0
        for c, mine, end, inert in self.parts:
            own = words[cut:end] if cut or end < len(words) else words
            lists.append((c, own, _picked(docs, mine) if mine else [],
                          [_redirect(r, base) for r in c.redirects] if c.redirects else [],
                          own if inert else None))
            cut = end
        values = [_word(a.value, base) if a.value is not None else None
                  for a in self.assignments] if self.assignments else []
        chunk = Chunk(line, line + self.lines, base, base + self.length, self.parser, self.error,
                      self.conditional)
        return _Placed(lists, values, docs, chunk)


def _picked(objects: list, positions: tuple[int, ...]) -> list:
    """The items of ``objects`` at ``positions``, in that order."""
    return [objects[k] for k in positions]


def _distinct(objects: list) -> list:
    """``objects`` without the repeats of an object met before (by identity), in order."""
    seen: set[int] = set()
    out = []
    for x in objects:
        if id(x) not in seen:
            seen.add(id(x))
            out.append(x)
    return out


def _word(w: Word, base: int) -> Word:
    """A copy of ``w`` and of its expansions moved by ``base`` (:func:`_words`)."""
    return _words((w,), base)[0]


def _words(words: list[Word] | tuple[Word, ...], base: int) -> list[Word]:
    """Copies of ``words`` and of their expansions moved by ``base``, in order (one loop for
    a chunk's words, not a call per word: every word after an edit is copied). An Expansion
    is made from a copy of its fields with the offsets changed (cheaper than its
    ``__init__``). A Word is made without its ``__init__`` call (its fields set in the same
    order), which cost as much as the copy itself."""
    out = []
    for w in words:
        new = _new(Word)
        new.text, new.start, new.end, new.value = w.text, w.start + base, w.end + base, w.value
        expansions = []
        if w.expansions:  # (most words have none: no loop begun)
            for x in w.expansions:
                moved = x.__dict__.copy()
                moved["start"] += base
                moved["end"] += base
                e = _new(Expansion)
                _set(e, "__dict__", moved)
                expansions.append(e)
        new.expansions, new.early = expansions, w.early[:] if w.early else []
        out.append(new)
    return out


def _assignment(a: Assignment, value: Word | None, base: int,
                command: Command | None) -> Assignment:
    """A copy of ``a`` moved by ``base``, holding ``value`` (its value word as placed) and
    naming ``command`` (its command as placed, or None). Made from a copy of its fields, as a
    Command in :meth:`Fragment.place`: its ``__init__`` sets ten fields, one of them through
    the ``command`` descriptor (model.Assignment.command, a BackRef), a call of its own."""
    fields = a.__dict__.copy()
    fields["value"] = value
    fields["start"] += base
    fields["end"] += base
    fields[_COMMAND_SLOT] = weakref.ref(command) if command is not None else None
    new = _new(Assignment)
    new.__dict__ = fields
    return new


def _redirect(r: Redirect, base: int) -> Redirect:
    """A copy of ``r`` moved by ``base``, made from a copy of its fields as an Expansion is
    (a Redirect is frozen: its ``__init__`` sets each field through ``object.__setattr__``)."""
    moved = r.__dict__.copy()
    moved["target"] = _word(r.target, base)
    moved["start"] += base
    moved["end"] += base
    new = _new(Redirect)
    _set(new, "__dict__", moved)
    return new
