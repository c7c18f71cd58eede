"""The parser-neutral shell model that rules read.

Every span is a pair of character offsets into the *original* script text, even for commands
found inside nested command strings (``bash -c "$TRAIN_CMD"``): those are parsed from a
synthetic text whose characters each remember where they came from (``TextMap``).
"""
from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import lt
from typing import ClassVar

from ..backref import BackRef

UNQUOTED, DOUBLE, SINGLE, ESCAPED = "unquoted", "double", "single", "escaped"
BARE_EXPANSION = re.compile(r'"?\$\{?[A-Za-z_][A-Za-z0-9_]*(\[[@*]\])?(:?[-=+][^}]*)?\}?"?')


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class Expansion:
    """A ``$NAME``/``${NAME…}``, ``$(…)``/backquote or ``$((…))`` inside a word.

    ``name`` is the variable name (None for a command substitution); ``kind`` is ``"var"``,
    ``"command"`` or ``"arith"``; ``quoting`` is how the shell that reads the word sees it:
    ``unquoted``/``double`` expand now, ``single``/``escaped`` are literal now and expand only if
    another shell reads the text again. ``nested`` marks a reference found inside a command
    substitution, arithmetic or a ``${…}`` default. ``early`` marks a value that the batch
    shell substituted into a nested command string (it carries the original expansion).
    """

    name: str | None
    kind: str
    quoting: str
    start: int
    end: int
    text: str
    nested: bool = False
    early: "Expansion | None" = None


@dataclass
class Word:
    """A shell word: raw ``text``, span, literal ``value`` (None when it holds an expansion that
    the reading shell performs), and its expansions."""

    text: str
    start: int
    end: int
    value: str | None
    expansions: list[Expansion] = field(default_factory=list)
    #: early expansions (batch-shell values) that flowed into this word of a nested script
    early: list[Expansion] = field(default_factory=list)

    @property
    def bare_expansion(self) -> bool:
        """Whether the word is nothing but one variable or array expansion (``$ARGS``,
        ``"${ARGS[@]}"``, ``${X:-}``): it may stand for any number of words, options included."""
        return self.value is None and BARE_EXPANSION.fullmatch(self.text) is not None

    def tail(self, cut: int, value: str | None) -> "Word":
        """The part of this word after its first ``cut`` characters (the value of ``--opt=value``
        or ``-n4``) as a Word of its own; ``value`` is that part's literal value, kept only when
        this word is literal."""
        return Word(self.text[cut:], self.start + cut, self.end,
                    value if self.value is not None else None,
                    [e for e in self.expansions if e.end > self.start + cut], self.early)

    def refs(self, *quoting: str) -> list[Expansion]:
        """Variable references with one of the given quoting contexts (all when none given)."""
        return [e for e in self.expansions if e.name and (not quoting or e.quoting in quoting)]


@dataclass
class Imported:
    """Where an assignment read from a sourced file came from (shell/sourced.py): the file's
    ``path`` and ``text``, and the value ``word`` with its offsets into that text (the
    assignment's own spans all sit at the end of the ``source`` command)."""

    path: str
    text: str
    word: "Word | None"


@dataclass(frozen=True)
class Sourcing:
    """A file on disk read at a ``source`` command (shell/sourced.py): the command's span and
    the file's ``path``. What the file's commands and assignments hold sits at ``self.end``
    (the command's end: no word of the script starts there)."""

    start: int
    end: int
    path: str


@dataclass
class Assignment:
    """``NAME=value`` (prefix of a command, standalone, or an ``export``/``declare`` argument);
    ``origin`` is set for one a sourced file makes (its spans sit at the end of the ``source``
    command, :class:`Sourcing`: no finding or fix belongs there)."""

    name: str
    value: Word | None
    start: int
    end: int
    exported: bool = False
    local: bool = False
    append: bool = False
    #: the command it prefixes, or the export/declare builtin (held weakly: the command holds
    #: its prefix assignments, the script the others)
    command: BackRef["Command"] = BackRef()  # noqa: RUF009  (a descriptor)
    origin: Imported | None = None


@dataclass
class Heredoc:
    """A here-document: body span (without the delimiter line) and whether its delimiter was quoted
    (a quoted delimiter keeps ``$`` literal)."""

    start: int
    end: int
    quoted: bool
    text: str


@dataclass(frozen=True)
class Body:
    """A here-document body that the script writes to a file and then runs: its span, where it
    runs (``"source"``: in this shell; ``"child"``: in a child shell on the batch node, which
    inherits exported values only; ``"tasks"``: in every task of an srun step) and whether the
    delimiter was quoted (else the writing shell expanded ``$…`` in it)."""

    start: int
    end: int
    place: str
    quoted: bool

#: redirection operators that open a file for writing (bash(1) REDIRECTION): ``>``, ``>|``,
#: ``>>``, ``&>``, ``&>>``, ``<>``; ``>&WORD`` too when WORD is not a descriptor number or ``-``
WRITE_OPS = frozenset({">", ">|", ">>", "&>", "&>>", "<>"})


@dataclass(frozen=True)
class Redirect:
    """An I/O redirection of a command (bash(1) REDIRECTION): the operator ``op`` as written
    (``>``, ``>>``, ``>|``, ``<``, ``<>``, ``&>``, ``&>>``, ``>&``, ``<&``, ``<<<``), the file
    descriptor number written before it (``fd``; None when the operator's default applies: 1
    for output, 0 for input), the ``target`` word (a file name, or for ``>&``/``<&`` the
    descriptor number or ``-``), and the span of the whole redirection. Here-documents are in
    ``Command.heredocs``, not here."""

    op: str
    fd: int | None
    target: Word
    start: int
    end: int

    @property
    def writes_file(self) -> bool:
        """Whether the redirection opens its target as a file for writing: ``> f``, ``>> f``,
        ``&> f``, ``2> f``, ``<> f``, and ``>& f`` when ``f`` is no descriptor number (bash
        then reads it as ``&> f``)."""
        if self.op in WRITE_OPS:
            return True
        return self.op == ">&" and not re.fullmatch(r"\d+-?|-", self.target.text)


@dataclass(eq=False)  # a node of the command graph: compared by identity
class Command:
    """A simple command: argv ``words`` (after prefix assignments), prefix ``assignments``,
    here-documents, redirections, span, and where it sits."""

    words: list[Word]
    assignments: list[Assignment]
    start: int
    end: int
    heredocs: list[Heredoc] = field(default_factory=list)
    function: str | None = None  # enclosing function definition
    in_substitution: bool = False  # inside $(...) or backquotes
    background: bool = False
    #: the script whose ``commands`` hold this one (held weakly: the script owns it)
    script: BackRef["Script"] = BackRef()  # noqa: RUF009  (a descriptor)
    nested: list["Script"] = field(default_factory=list)  # command strings this command runs
    #: the here-document body this command runs on the batch node (``bash FILE``, ``exec bash
    #: FILE``, ``source FILE``): its commands are the work, the command itself is not
    runs: "Body | None" = None
    #: the function this command calls when its arguments were put into that function's body
    #: (``run python x.py`` for ``run() { srun "$@"; }``): the body's commands hold its words
    calls: str | None = None
    #: the command's redirections in the order written (not its here-documents)
    redirects: list[Redirect] = field(default_factory=list)
    #: for a body command of a function called several times: the call whose arguments this
    #: copy of it holds (each call is its own command, and an srun there its own step)
    call: "Command | None" = None
    #: the ``words`` list (this very object) in which :func:`~sbatch_lsp.shell.parse.
    #: attach_nested` has nothing to read, whatever the script's values (no word starts with
    #: ``$``, no shell reads a ``-c`` string, no ``eval``): set when a fragment is placed
    #: (shell/fragments.py), which found so once for the chunk's text. attach_nested passes
    #: the command over while ``words`` is still that list (words replaced later, as a
    #: function call's are, are read again). A class attribute, not a field: only a
    #: placement sets it, in the copy of the fields it makes a command from (``__init__``,
    #: which every command read in place and every view of one runs, sets no more fields)
    inert: ClassVar[list[Word] | None] = None

    @property
    def name(self) -> str | None:
        """The command name's literal value (basename not taken), or None."""
        return self.words[0].value if self.words else None

    def argv(self) -> list[str | None]:
        return [w.value for w in self.words]

    def all_words(self) -> list[Word]:
        """The argv words and the values of the prefix assignments (``X=$Y cmd``)."""
        return self.words + [a.value for a in self.assignments if a.value is not None]

    def ancestors(self):
        """The commands that run this one's command string, innermost first
        (``srun bash -c '… torchrun …'``: the srun command for the torchrun)."""
        script = self.script  # (each read of a back-reference is a call: read it once)
        parent = script.parent if script is not None else None
        while parent is not None:
            yield parent
            script = parent.script
            parent = script.parent if script is not None else None

    def top(self) -> "Command":
        """The batch-script command that runs this one (itself when it is one)."""
        return next((c for c in self.ancestors() if c.script is None or c.script.parent is None),
                    self)


def sort_commands(commands: list[Command]) -> None:
    """Put ``commands`` in script order, in place: by start offset, the longer first at one
    start (a command before those nested in it), equal spans in the order given. Most lists
    are already in that order with distinct starts (a script's commands as read, chunk after
    chunk): they are only checked (one pass in C), not sorted by a key function that Python
    calls per command."""
    starts = [c.start for c in commands]
    if not all(map(lt, starts, starts[1:])):
        commands.sort(key=lambda c: (c.start, -c.end))


@dataclass
class Chunk:
    """A top-level chunk of the script: 0-based line range and how it was read."""

    start_line: int
    end_line: int
    start: int
    end: int
    parser: str  # "simple", "bashlex", "tree-sitter" or "none"
    error: str | None = None
    #: the chunk is a compound command that may run its body once, several times or not at
    #: all (``if``, ``case``, ``for``, ``while``, ``until``, ``select``): an assignment in it
    #: may or may not have run when the script goes on after it (:meth:`Script.certain`)
    conditional: bool = False


#: the first word of a chunk (after comment lines) that makes it a conditional compound command
CONDITIONAL = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*(?:if|case|for|while|until|select)"
                         r"(?=[ \t\n;(]|$)")


@dataclass(eq=False)  # a node of the command graph: compared by identity
class Script:
    """A shell program: the batch script itself, or a nested command string.

    ``kind`` is ``"batch"`` for the script, or the way a nested string runs: ``"bash -c"``,
    ``"eval"``, ``"split"`` (an unquoted expansion word-split into argv), ``"file"`` (a file the
    batch script wrote with a here-document, run by ``srun … bash FILE``). ``parent`` is the
    command that runs a nested script.
    """

    commands: list[Command] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    heredocs: list[Heredoc] = field(default_factory=list)
    functions: dict[str | None, tuple[int, int]] = field(default_factory=dict)  # None: unnamed
    kind: str = "batch"
    parent: BackRef[Command] = BackRef()  # noqa: RUF009  (a descriptor)
    data_spans: list[tuple[int, int]] = field(default_factory=list)  # strings spanning lines
    #: the real comments of this script's text, as spans from the ``#`` to the end of its line
    #: (not ``#`` inside quotes or here-document bodies)
    comments: list[tuple[int, int]] = field(default_factory=list)
    #: bugs met while building the model (a mask that raised): each becomes an SB003 finding
    internal_errors: list[str] = field(default_factory=list)
    #: here-document bodies this script writes to a file and runs (shell/generated.py); the
    #: commands of one the batch node runs are this script's, at their place in the text
    bodies: list["Body"] = field(default_factory=list)
    #: the files on disk read into this script (shell/sourced.py), each at its ``source`` line
    imports: list[Sourcing] = field(default_factory=list)
    #: the body commands of a function called several times, which ``commands`` holds one copy
    #: of per call instead (parse.py ``_substitute_calls``): kept for their assignments, whose
    #: ``command`` they are
    replaced: list[Command] = field(default_factory=list, repr=False)
    #: value_at's index, built on first use for this many assignments (see _value_index)
    _index: tuple[int, dict] = field(default=(-1, {}), repr=False)
    #: the chunks' start offsets for :meth:`certain`, rebuilt when chunks were added
    _starts: list[int] = field(default_factory=list, repr=False)
    #: what :meth:`walk` gives, listed once the model is finished (:meth:`seal`)
    _walked: list[Command] | None = field(default=None, repr=False)

    def value_at(self, name: str, before: int) -> Assignment | None:
        """The assignment that gives ``name`` its value at offset ``before``: the last one (by
        start; of several with one start, the last in the model's order: the assignments a
        sourced file makes all sit at the end of its ``source`` command) that ends before it and sets a value (``export NAME`` alone and ``NAME+=…`` do not
        replace it). In ``CMD="$CMD --x"`` the ``$CMD`` therefore reads the previous value, as bash
        does. O(log n) in the script's assignments. Inside a child body (``bodies``) an
        assignment made before the body gives a value only when it exports it itself
        (``export N=v``): a child shell inherits the environment, not the shell's variables
        (bash(1), "COMMAND EXECUTION ENVIRONMENT"); a later ``export N`` leaves it unknown."""
        ends, latest = self._value_index().get(name, ((), ()))
        k = bisect_right(ends, before)
        found = latest[k - 1] if k else None
        if found is not None and self.bodies:
            body = next((b for b in self.bodies if b.place == "child" and
                         b.start <= before < b.end), None)
            if body is not None and found.start < body.start and not found.exported:
                return None
        return found

    def certain(self, a: Assignment, before: int) -> bool:
        """Whether ``a`` surely ran before offset ``before`` (so its value, not an earlier one,
        is the variable's there): False when ``a`` sits in a conditional top-level compound
        (:attr:`Chunk.conditional`: a branch of ``if``/``case`` or a loop body) that ends at or
        before ``before``; within the compound the script's order holds. The readers that need
        the exact value (framework sizes, layout counts, value scopes) treat an uncertain one
        as unknown (DESIGN.md "Findings": no error or warning rests on a value that cannot be
        resolved statically); the shell's own substitution keeps the last assignment written,
        so a command chosen in branches (``if …; then L="srun A"; else L="srun B"; fi``) is
        still read as a step (values with several candidates are not modelled)."""
        return a.origin is not None or self.settled(a.start, before)

    def settled(self, at: int, before: int) -> bool:
        """Whether the script's text at offset ``at`` surely ran before offset ``before``:
        False when ``at`` lies in a conditional top-level compound (:attr:`Chunk.conditional`)
        that ends at or before ``before`` (a value a branch assigns, read after the ``fi``)."""
        if not self.chunks:
            return True
        if len(self._starts) != len(self.chunks):  # chunks are added in order while building
            self._starts = [c.start for c in self.chunks]
        k = bisect_right(self._starts, at) - 1
        if k < 0:
            return True
        chunk = self.chunks[k]
        return not (chunk.conditional and at < chunk.end <= before)

    def _value_index(self) -> dict[str, tuple[list[int], list[Assignment]]]:
        """name -> (ends ascending, the assignment with the greatest start among those ending
        at or before each end); rebuilt when assignments were added since the last build."""
        count, index = self._index
        if count == len(self.assignments):
            return index
        by_name: dict[str, list[Assignment]] = {}
        for a in self.assignments:
            if a.value is not None and not a.append:
                by_name.setdefault(a.name, []).append(a)
        index = {}
        for name, found in by_name.items():
            if len(found) == 1:  # (most names: assigned once)
                index[name] = ([found[0].end], found)
                continue
            found.sort(key=lambda a: a.end)
            latest, best = [], None
            for a in found:
                if best is None or a.start >= best.start:
                    best = a
                latest.append(best)
            index[name] = ([a.end for a in found], latest)
        self._index = (len(self.assignments), index)
        return index

    def imported_at(self, start: int) -> Sourcing | None:
        """The sourced file whose text sits at offset ``start`` (the end of its ``source``
        command), or None: a finding or an edit starting there is about the other file."""
        return next((s for s in self.imports if s.end == start), None)

    def walk(self) -> Iterator[Command]:
        """Every command of this script and of the scripts nested in it, depth first (read
        from a list once the model is sealed: the facts walk the script a dozen times)."""
        if self._walked is not None:
            return iter(self._walked)
        return self._walk()

    def _walk(self) -> Iterator[Command]:
        for cmd in self.commands:
            yield cmd
            for inner in cmd.nested:
                yield from inner.walk()

    def seal(self) -> None:
        """Mark the model finished: no command or nested script is added to this script or
        to those nested in it from now on (parse_script's last step), so :meth:`walk` can
        read a list made now."""
        self._walked = list(self._walk())


def command_words(commands: list[Command]) -> list[Word]:
    """Each command's :meth:`Command.all_words`, in order, in one list (without a list per
    command: for the passes over every word of a script)."""
    out: list[Word] = []
    for cmd in commands:
        out += cmd.words
        if cmd.assignments:
            out += [a.value for a in cmd.assignments if a.value is not None]
    return out


def allexport_toggles(args: list[Word]) -> list[tuple[int, bool]]:
    """(offset, on) for each ``-a``/``+a`` or ``-o allexport``/``+o allexport`` among the
    arguments of a ``set`` command (bash(1) ``set``: options end at ``-``, ``--`` or the first
    word that is not one; the positional parameters follow)."""
    out: list[tuple[int, bool]] = []
    k = 0
    while k < len(args):
        v = args[k].value or ""
        if v in ("-", "--") or v[:1] not in ("-", "+") or len(v) < 2:
            break
        on = v[0] == "-"
        letters = v[1:]
        if "a" in letters:
            out.append((args[k].start, on))
        if letters.endswith("o") and k + 1 < len(args):
            if args[k + 1].value == "allexport":
                out.append((args[k + 1].start, on))
            k += 1
        k += 1
    return out
