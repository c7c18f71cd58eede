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
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .model import Assignment, Chunk, Command, Expansion, Heredoc, Redirect, Script, Word


@dataclass(frozen=True)
class Fragment:
    """What one chunk's reading added to a script, offsets relative to the chunk's start: the
    commands (in the order the build made them), the assignments and here-documents the
    script lists (shared with the commands' own lists, as in a built script), the functions
    defined (name -> span, in definition order), the multi-line strings (``data_spans``), and
    how the chunk was read (``Chunk.parser``/``Chunk.error``). Its own objects are never
    mutated; ``last`` holds ``(base, objects)``: the offset of the last placement and what it
    made that nothing changes once built (:class:`_Copy`'s ``shared``)."""

    commands: tuple[Command, ...]
    assignments: tuple[Assignment, ...]
    heredocs: tuple[Heredoc, ...]
    functions: tuple[tuple[str | None, tuple[int, int]], ...]
    data_spans: tuple[tuple[int, int], ...]
    parser: str
    error: str | None
    last: list[tuple[int, dict[int, Any]]] = field(
        default_factory=lambda: [(-1, {})], compare=False, repr=False)

    @classmethod
    def of(cls, script: Script, chunk: Chunk) -> "Fragment":
        """The fragment of ``script``, a script built from one chunk's text alone (offsets
        relative to it), whose reading is recorded in ``chunk``. Detaches its commands from
        ``script`` (the fragment keeps no script alive)."""
        for cmd in script.commands:
            cmd.script = None
        return cls(tuple(script.commands), tuple(script.assignments), tuple(script.heredocs),
                   tuple(script.functions.items()), tuple(script.data_spans), chunk.parser,
                   chunk.error)

    def place(self, script: Script, chunk: Chunk, base: int) -> None:
        """Append copies of this fragment's objects to ``script``, every offset moved by
        ``base`` (the chunk's start in the script's text), and record the reading in
        ``chunk``. The copies' commands belong to ``script``; the objects nothing changes are
        the last placement's when it was at ``base`` too."""
        at, kept = self.last[0]
        copy = _Copy(base, script, kept if at == base else {})
        script.commands.extend(copy.command(c) for c in self.commands)
        script.assignments.extend(copy.assignment(a) for a in self.assignments)
        script.heredocs.extend(copy.heredoc(h) for h in self.heredocs)
        for name, (s, e) in self.functions:
            script.functions[name] = (s + base, e + base)
        script.data_spans.extend((s + base, e + base) for s, e in self.data_spans)
        chunk.parser, chunk.error = self.parser, self.error
        self.last[0] = (base, copy.shared)


_new = object.__new__
_set = object.__setattr__


class _Copy:
    """Copies of a fragment's objects moved by ``base``; an object met twice (an assignment in
    both its command's list and the script's, a here-document in both) is copied once. The
    objects nothing changes once built come from ``kept`` (what a placement at the same
    ``base`` made: by the id of the fragment's command, its (words, here-documents,
    redirections) lists; by the id of an assignment, its value word) when there; ``shared``
    gathers them all for the next placement."""

    def __init__(self, base: int, script: Script, kept: dict[int, Any]):
        self.base = base
        self.script = script
        self.made: dict[int, Any] = {}
        self.kept = kept
        self.shared: dict[int, Any] = {}

    def word(self, w: Word) -> Word:
        """A copy of ``w`` and of its expansions moved by ``base``. An Expansion (frozen: its
        ``__init__`` sets each field through ``object.__setattr__``, most of a placement's
        time) is made from a copy of its fields with the offsets changed."""
        b = self.base
        expansions = []
        for x in w.expansions:
            moved = x.__dict__.copy()
            moved["start"] += b
            moved["end"] += b
            e = _new(Expansion)
            _set(e, "__dict__", moved)
            expansions.append(e)
        return Word(w.text, w.start + b, w.end + b, w.value, expansions, list(w.early))

    def heredoc(self, h: Heredoc) -> Heredoc:
        made = self.made.get(id(h))
        if made is None:
            made = self.made[id(h)] = Heredoc(h.start + self.base, h.end + self.base, h.quoted,
                                              h.text)
        return made

    def command(self, c: Command) -> Command:
        made = self.made.get(id(c))
        if made is not None:
            return made
        b = self.base
        lists = self.kept.get(id(c))
        if lists is None:
            lists = ([self.word(w) for w in c.words], [self.heredoc(h) for h in c.heredocs],
                     [Redirect(r.op, r.fd, self.word(r.target), r.start + b, r.end + b)
                      for r in c.redirects])
        else:  # the script's list of here-documents holds the same objects
            for h, kept in zip(c.heredocs, lists[1], strict=True):
                self.made[id(h)] = kept
        self.shared[id(c)] = lists
        # (a copy of the fields, as for an Expansion: a Command's ``__init__`` sets a dozen)
        fields = c.__dict__.copy()
        fields["words"], fields["heredocs"], fields["redirects"] = lists
        fields["start"] += b
        fields["end"] += b
        fields["nested"] = []
        new = _new(Command)
        new.__dict__ = fields
        new.script = self.script
        self.made[id(c)] = new
        new.assignments = [self.assignment(a) for a in c.assignments]
        return new

    def assignment(self, a: Assignment) -> Assignment:
        made = self.made.get(id(a))
        if made is None:
            b = self.base
            value = self.kept.get(id(a))
            if value is None and a.value is not None:
                value = self.word(a.value)
            self.shared[id(a)] = value
            made = self.made[id(a)] = Assignment(
                a.name, value, a.start + b, a.end + b, a.exported, a.local, a.append,
                self.command(a.command) if a.command is not None else None)
        return made
