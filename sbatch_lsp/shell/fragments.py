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

from .model import Assignment, Chunk, Command, Expansion, Heredoc, Redirect, Script, Word


@dataclass(frozen=True)
class Fragment:
    """What one chunk's reading added to a script, offsets relative to the chunk's start: the
    commands (in the order the build made them), the assignments and here-documents the
    script lists (shared with the commands' own lists, as in a built script), the functions
    defined (name -> span, in definition order), the multi-line strings (``data_spans``), and
    how the chunk was read (``Chunk.parser``/``Chunk.error``). Its own objects are never
    mutated; ``last`` holds ``(base, objects)``: the offset of the last placement and the
    objects it made that nothing changes once built, by the id of this fragment's object each
    copies."""

    commands: tuple[Command, ...]
    assignments: tuple[Assignment, ...]
    heredocs: tuple[Heredoc, ...]
    functions: tuple[tuple[str | None, tuple[int, int]], ...]
    data_spans: tuple[tuple[int, int], ...]
    parser: str
    error: str | None
    last: list[tuple[int, dict[int, object]]] = field(
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
    objects nothing changes once built come from ``kept`` (the copies a placement at the same
    ``base`` made, by the id of the fragment's object) when there; ``shared`` gathers them all
    for the next placement."""

    def __init__(self, base: int, script: Script, kept: dict[int, object]):
        self.base = base
        self.script = script
        self.made: dict[int, object] = {}
        self.kept = kept
        self.shared: dict[int, object] = {}

    def _reuse(self, obj: object) -> object | None:
        """The kept copy of ``obj`` (recorded for the next placement), or None."""
        made = self.kept.get(id(obj))
        if made is not None:
            self.shared[id(obj)] = made
        return made

    def word(self, w: Word) -> Word:
        """``w`` moved by ``base``: the kept copy, else a copy of ``w`` and of its expansions.
        An Expansion (frozen: its ``__init__`` sets each field through ``object.__setattr__``,
        most of a placement's time) is made from a copy of its fields with the offsets
        changed."""
        made = self._reuse(w)
        if made is not None:
            return made  # type: ignore[return-value]
        b = self.base
        expansions = []
        for x in w.expansions:
            moved = x.__dict__.copy()
            moved["start"] += b
            moved["end"] += b
            e = _new(Expansion)
            _set(e, "__dict__", moved)
            expansions.append(e)
        new = Word(w.text, w.start + b, w.end + b, w.value, expansions, list(w.early))
        self.shared[id(w)] = new
        return new

    def words(self, ws: list[Word]) -> list[Word]:
        """A command's word list moved by ``base``, kept or new."""
        made = self._reuse(ws)  # (no fragment word is in two lists: its words go with it)
        if made is not None:
            return made  # type: ignore[return-value]
        new = [self.word(w) for w in ws]
        self.shared[id(ws)] = new
        return new

    def redirects(self, rs: list[Redirect]) -> list[Redirect]:
        """A command's redirection list moved by ``base``, kept or new."""
        made = self._reuse(rs)
        if made is not None:
            return made  # type: ignore[return-value]
        b = self.base
        new = [Redirect(r.op, r.fd, self.word(r.target), r.start + b, r.end + b) for r in rs]
        self.shared[id(rs)] = new
        return new

    def heredoc(self, h: Heredoc) -> Heredoc:
        made = self.made.get(id(h)) or self._reuse(h)
        if made is None:
            made = Heredoc(h.start + self.base, h.end + self.base, h.quoted, h.text)
            self.shared[id(h)] = made
        self.made[id(h)] = made
        return made  # type: ignore[return-value]

    def heredocs(self, hs: list[Heredoc]) -> list[Heredoc]:
        """A command's here-document list moved by ``base``, kept or new (its documents are
        the script's own: the same objects as the script's list holds)."""
        made = self._reuse(hs)
        if made is not None:
            for h in hs:  # the script's list holds them too: the same objects
                self.heredoc(h)
            return made  # type: ignore[return-value]
        new = [self.heredoc(h) for h in hs]
        self.shared[id(hs)] = new
        return new

    def command(self, c: Command) -> Command:
        made = self.made.get(id(c))
        if made is not None:
            return made  # type: ignore[return-value]
        b = self.base
        new = Command(self.words(c.words), [], c.start + b, c.end + b,
                      heredocs=self.heredocs(c.heredocs), function=c.function,
                      in_substitution=c.in_substitution, background=c.background,
                      script=self.script, runs=c.runs, calls=c.calls, call=c.call,
                      redirects=self.redirects(c.redirects))
        self.made[id(c)] = new
        new.assignments = [self.assignment(a) for a in c.assignments]
        return new

    def assignment(self, a: Assignment) -> Assignment:
        made = self.made.get(id(a))
        if made is None:
            b = self.base
            made = self.made[id(a)] = Assignment(
                a.name, self.word(a.value) if a.value is not None else None, a.start + b,
                a.end + b, a.exported, a.local, a.append,
                self.command(a.command) if a.command is not None else None)
        return made  # type: ignore[return-value]
