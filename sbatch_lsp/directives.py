"""The ``#SBATCH`` directive block, read exactly as sbatch reads it.

Facts (slurm-facts.md §1.3, §2; Slurm src/sbatch/opt.c ``_opt_batch_script``/``_get_argument``):

* A directive is a line that starts at column 0 with the bytes ``#SBATCH`` (case-sensitive prefix
  test; no space is needed after it).
* A line whose first non-blank character is ``#``, and a blank line, are skipped; any other line
  ends the scan, and no directive below it is read.
* Tokens are split on white space; ``'…'`` and ``"…"`` group; a backslash escapes the next
  character (before 24.05 a backslash cannot keep a space inside a token); an unquoted,
  unescaped ``#`` ends the line; an unmatched quote and a token starting with ``:`` are fatal.
* All tokens of all directive lines go through one getopt pass (``+`` mode): the first token that
  is not an option stops it with ``Invalid directive found in batch script: <token>``.
* No shell expansion happens: ``$VAR``, ``$(…)`` and ``~`` stay literal.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from . import options as opts
from .source import Source

MAGIC = "#SBATCH"
#: the old magic word, still read (with "error: Change from #SLURM to #SBATCH in your script")
OLD_MAGIC = "#SLURM"
#: a directive line starting with one of these words starts the next heterogeneous component
HET_LINE = re.compile(r"(?i)(hetjob|packjob)(\s|$)")
LOOKALIKE = re.compile(r"^\s*#+\s*sbatch", re.IGNORECASE)
#: lines of a whole text that may start with a magic word or be a :data:`LOOKALIKE` (more than
#: those: each is read as a line), each found from the line break before it: a search for a
#: ``\n`` skips to the next one where a ``^`` (MULTILINE) is tried at every character, three
#: times slower (:func:`_directive_like_lines`). Possessive: blanks, ``#``s and letters are
#: apart, so what a repeat gives back can never let the next part match (a quarter fewer
#: instructions in a line break's failed tries)
_MAYBE_DIRECTIVE = re.compile(r"\n[^\S\n]*+#++[^\S\n]*+(?:sbatch|slurm)", re.IGNORECASE)


@dataclass
class Token:
    """One directive token: ``text`` after quote and escape removal, ``start``/``end`` the raw span."""

    text: str
    start: int
    end: int
    line: int
    quoted: bool = False
    escaped_space: bool = False
    cut_by_hash: bool = False  # an unquoted '#' ended the token (and the line)


@dataclass
class DirectiveLine:
    """A physical ``#SBATCH`` line (0-based ``line``) with its tokens."""

    line: int
    start: int
    end: int
    tokens: list[Token]
    comment_start: int | None = None  # offset of an unquoted '#' that starts a comment
    fatal: str | None = None  # sbatch's fatal tokenizer error for this line, if any
    late: bool = False
    magic: str = MAGIC  # "#SBATCH", or the deprecated "#SLURM"
    component: int = 0  # heterogeneous job component (``#SBATCH hetjob`` lines separate them)


@dataclass
class OptionUse:
    """One option as getopt reads it from the directive tokens.

    ``typed`` is what the user wrote (``--ntasks-per-n``, ``-N``); ``name`` the canonical long
    name when getopt accepts it; ``value`` the argument (None for flags); spans are offsets.
    """

    typed: str
    name: str | None
    value: str | None
    start: int
    end: int
    name_end: int
    value_start: int | None
    value_end: int | None
    line: int
    token: Token
    resolution: opts.Resolution | None = None
    error: str | None = None  # getopt's complaint, in sbatch's words
    value_token: Token | None = None
    component: int = 0  # heterogeneous job component

    @property
    def ok(self) -> bool:
        return self.error is None and self.name is not None

    @property
    def single_dash_long(self) -> str | None:
        """The long option meant by a one-dash word such as ``-array=1-4`` (getopt reads it as
        ``-a`` with the value ``rray=1-4``), or None. Only words whose letters before ``=``
        (at least three) name a long option, or a unique prefix of one, count."""
        text = self.token.text
        if self.typed.startswith("--") or text.startswith("--") or \
                self.start != self.token.start + 1:
            return None
        word = text[1:].split("=", 1)[0]
        if len(word) < 3 or not re.fullmatch(r"[a-z][a-z-]+", word):
            return None
        res = opts.resolve_long(word, opts.sbatch_options())
        return res.canonical if res.option is not None else None


@dataclass
class DirectiveBlock:
    """Everything about the directives of one script.

    ``lines`` are the directives sbatch reads; ``late_lines`` the ``#SBATCH`` lines below the
    first command (ignored by sbatch); ``options`` the getopt reading of ``lines`` in order;
    ``stray`` the token that stopped getopt (sbatch refuses the job there); ``strays`` every
    word getopt would stop at, as the reading goes on past each one so that the options after it
    stay in the model; ``scan_end_line`` the 0-based line of the first command (None when the
    file has none).
    """

    lines: list[DirectiveLine] = field(default_factory=list)
    late_lines: list[DirectiveLine] = field(default_factory=list)
    lookalikes: list[tuple[int, int, int]] = field(default_factory=list)  # (line, start, end)
    options: list[OptionUse] = field(default_factory=list)
    stray: Token | None = None
    strays: list[Token] = field(default_factory=list)
    scan_end_line: int | None = None
    fatal: str | None = None
    #: the accepted uses by (name, component), built by the first :meth:`all` or :meth:`get`
    #: (the rules ask about 80 times per script); the block is complete when
    #: :func:`read_directives` returns and is not changed afterwards
    _accepted: dict[tuple[str, int], list[OptionUse]] | None = field(
        default=None, init=False, repr=False, compare=False)

    def all(self, name: str, component: int = 0) -> list[OptionUse]:
        """Every accepted use of long option ``name`` in a heterogeneous ``component`` (0, the
        batch step's, for ordinary jobs), in order (a new list)."""
        return list((self._accepted or self._index()).get((name, component), ()))

    def get(self, name: str) -> OptionUse | None:
        """The effective use of ``name``: the last one wins (slurm-facts.md §2)."""
        uses = (self._accepted or self._index()).get((name, 0))
        return uses[-1] if uses else None

    def _index(self) -> dict[tuple[str, int], list[OptionUse]]:
        """The accepted uses by (name, component), built now (an empty index is built again
        on each call: a block without accepted options)."""
        self._accepted = {}
        for o in self.options:
            if o.ok and o.name is not None:
                self._accepted.setdefault((o.name, o.component), []).append(o)
        return self._accepted

    def effective(self, component: int = 0) -> dict[str, OptionUse]:
        """Each option's effective use in a heterogeneous ``component``, by canonical long name:
        after prefix expansion, short forms and aliases, the last use wins (slurm-facts.md §2).
        Refused uses are left out."""
        out: dict[str, OptionUse] = {}
        for o in self.options:
            if o.ok and o.name is not None and o.component == component:
                out[o.name] = o
        return out

    def value(self, name: str) -> str | None:
        use = self.get(name)
        return use.value if use else None

    @property
    def last_line(self) -> int | None:
        return self.lines[-1].line if self.lines else None


#: a token of a directive line without quotes, backslashes and ``#`` (:func:`tokenize`)
_PLAIN_TOKEN = re.compile(r"[^ \t\r\f\v]+")
#: a character that makes a directive line's tokens more than its runs of non-blanks
_NOT_PLAIN = re.compile(r"['\"\\#]")


def tokenize(source: Source, line: int, start: int, end: int, escaped_space: bool) -> DirectiveLine:
    """Split the directive text ``source.text[start:end]`` (after ``#SBATCH``) into tokens.

    ``escaped_space`` says whether ``\\ `` keeps a space in a token (Slurm >= 24.05).
    """
    text = source.text
    tokens: list[Token] = []
    dl = DirectiveLine(line=line, start=start, end=end, tokens=tokens)
    if _NOT_PLAIN.search(text, start, end) is None:
        # (most lines) no quote, escape or comment: the tokens are the runs of non-blanks
        for m in _PLAIN_TOKEN.finditer(text, start, end):
            word = m.group()
            if word[0] == ":":
                dl.fatal = "Unexpected `:`"
                break
            tokens.append(Token(word, m.start(), m.end(), line))
        return dl
    i = start
    while i < end:
        while i < end and text[i] in " \t\r\f\v":
            i += 1
        if i >= end:
            break
        if text[i] == "#":
            dl.comment_start = i
            break
        if text[i] == ":":
            dl.fatal = "Unexpected `:`"
            break
        tok_start = i
        buf: list[str] = []
        quote = ""
        quoted = esc_space = cut = False
        while i < end:
            c = text[i]
            if quote:
                if c == quote:
                    quote = ""
                else:
                    buf.append(c)
                i += 1
                continue
            if c in " \t\r\f\v":
                break
            if c == "\\":
                if i + 1 < end:
                    nxt = text[i + 1]
                    if nxt in " \t" and not escaped_space:
                        i += 1  # the backslash is dropped and the space still splits
                        break
                    if nxt in " \t":
                        esc_space = True
                    buf.append(nxt)
                    i += 2
                    continue
                i += 1
                continue
            if c in "\"'":
                quote = c
                quoted = True
                i += 1
                continue
            if c == "#":
                cut = True
                dl.comment_start = i
                break
            buf.append(c)
            i += 1
        if quote:
            dl.fatal = f"Unmatched `{quote}`"
            break
        if not buf and not quoted and text[tok_start:i] == "\\":
            continue  # a lone `\` at the end of the line makes no argument
        tokens.append(Token("".join(buf), tok_start, i, line, quoted, esc_space, cut))
        if cut:
            break
    return dl


def _magic(line_text: str) -> str | None:
    """The magic word a directive line starts with (sbatch's ``xstrncmp`` prefix tests)."""
    if line_text.startswith(MAGIC):
        return MAGIC
    return OLD_MAGIC if line_text.startswith(OLD_MAGIC) else None


def read_directives(source: Source, data_lines: frozenset[int] = frozenset(),
                    slurm_version: str = opts.NEWEST_RELEASE, pyxis: bool | str | None = None
                    ) -> DirectiveBlock:
    """Read the directive block of ``source`` the way sbatch does.

    ``data_lines`` are 0-based lines that hold data, not code (here-document bodies, multi-line
    strings): a ``#SBATCH`` there is not a late directive. ``pyxis`` None (unknown) reads pyxis
    options as if the plugin were loaded. Raises nothing; tokenizer faults are
    recorded in ``DirectiveLine.fatal`` and ``DirectiveBlock.fatal``.
    """
    block = DirectiveBlock()
    escaped_space = opts.version_key(slurm_version) >= (24, 5)
    scanning = True
    component = 0
    for n in _lines_to_read(source, block):
        text = source.line_text(n)
        start = source.line_starts[n]
        magic = _magic(text)
        if magic:
            dl = tokenize(source, n, start + len(magic), start + len(text), escaped_space)
            dl.magic = magic
            if dl.tokens and HET_LINE.match(text[len(magic):].lstrip()):
                component += 1
                dl.tokens = dl.tokens[1:]
            dl.component = component
            if scanning:
                block.lines.append(dl)
                if dl.fatal and not block.fatal:
                    block.fatal = dl.fatal
            elif n not in data_lines:
                dl.late = True
                block.late_lines.append(dl)
            continue
        stripped = text.strip()
        if LOOKALIKE.match(text) and n not in data_lines:
            if not stripped.startswith("##"):
                lead = len(text) - len(text.lstrip())
                block.lookalikes.append((n, start + lead, start + len(text)))
        if not scanning or not stripped or stripped.startswith("#"):
            continue
        scanning = False
        block.scan_end_line = n
    # with pyxis unknown, its options are read with their arguments so that one
    # `--container-image IMG` does not swallow the rest of the block (SB111 warns about them)
    pyxis = True if pyxis is None else pyxis
    _getopt(block, opts.sbatch_table(slurm_version, pyxis),
            opts.sbatch_short_table(slurm_version, pyxis))
    return block


def _lines_to_read(source: Source, block: DirectiveBlock) -> Iterator[int]:
    """The 0-based lines :func:`read_directives` reads, in order: every line down to the first
    command (``block.scan_end_line``, set by the reader as it meets it), then only those
    :data:`_MAYBE_DIRECTIVE` finds: below the block nothing but a directive or a lookalike
    counts, and one search of the text finds them faster than a look at every line."""
    n = 0
    for n in range(source.line_count):
        yield n
        if block.scan_end_line is not None:
            break
    else:
        return
    if n + 1 < source.line_count:
        yield from _directive_like_lines(source, n + 1)


def _directive_like_lines(source: Source, line: int) -> Iterator[int]:
    """The 0-based lines of ``source`` from ``line`` (at least 1) on, in order, that
    :data:`_MAYBE_DIRECTIVE` finds: those starting with blanks, ``#``s, blanks and ``sbatch``
    or ``slurm`` in any case."""
    for m in _MAYBE_DIRECTIVE.finditer(source.text, source.line_starts[line] - 1):
        yield source.line_of(m.start() + 1)


def _getopt(block: DirectiveBlock, table: dict[str, opts.Option],
            shorts: dict[str, opts.Option]) -> None:
    """Simulate sbatch's one getopt pass over the tokens of all directive lines (``table``:
    the long options, ``shorts``: the short ones by letter)."""
    tokens = [t for dl in block.lines for t in dl.tokens]
    component = {t.line: dl.component for dl in block.lines for t in dl.tokens}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        t = tok.text
        if t == "--":
            if i + 1 < len(tokens):
                block.stray = tokens[i + 1]
                block.strays.append(tokens[i + 1])
            return
        if t.startswith("--"):
            body = t[2:]
            name, eq, val = body.partition("=")
            name_end = tok.start + _raw_index(tok, 2 + len(name))
            res = opts.resolve_long(name, table)
            use = OptionUse(typed="--" + name, name=res.canonical, value=None, start=tok.start,
                            end=tok.end, name_end=name_end, value_start=None, value_end=None,
                            line=tok.line, token=tok, resolution=res)
            use.component = component[tok.line]
            block.options.append(use)
            if eq:  # the value is known whether or not getopt accepts the name
                use.value = val
                use.value_start, use.value_end = name_end + 1, tok.end
                use.value_token = tok
            if res.option is None:
                if res.candidates:
                    use.error = (f"option '--{name}' is ambiguous; possibilities: "
                                 + " ".join(f"'--{c}'" for c in res.candidates))
                else:
                    use.error = f"unrecognized option '{t}'"
                # sbatch stops at the first refusal; reading on (an unknown option is assumed to
                # take the next word of its line when srun, pyxis or its looks say so) keeps the
                # later directives in the model for the other rules
                if not eq and i + 1 < len(tokens) and _guess_takes_value(name, tok, tokens[i + 1]):
                    vt = tokens[i + 1]
                    use.value, use.value_start, use.value_end = vt.text, vt.start, vt.end
                    use.value_token = vt
                    use.end = vt.end
                    i += 1
                i += 1
                continue
            arg = res.option.arg
            if eq:
                if arg == "none":
                    use.error = f"option '--{res.option.long}' doesn't allow an argument"
            elif arg == "required":
                if i + 1 < len(tokens):
                    vt = tokens[i + 1]
                    use.value, use.value_start, use.value_end = vt.text, vt.start, vt.end
                    use.value_token = vt
                    use.end = vt.end
                    i += 1
                else:
                    use.error = f"option '--{res.option.long}' requires an argument"
            i += 1
            continue
        if t.startswith("-") and len(t) > 1:
            j = 1
            while j < len(t):
                letter = t[j]
                o = shorts.get(letter)
                pos = tok.start + _raw_index(tok, j)
                use = OptionUse(typed="-" + letter, name=None, value=None, start=pos,
                                end=tok.end, name_end=pos + 1, value_start=None, value_end=None,
                                line=tok.line, token=tok, component=component[tok.line])
                block.options.append(use)
                if o is None:
                    use.error = f"invalid option -- '{letter}'"
                    j += 1
                    continue
                use.name = opts.ALIASES.get(o.long, o.long)
                use.resolution = opts.Resolution(use.typed, o)
                if o.arg == "none":
                    use.end = pos + 1
                    j += 1
                    continue
                rest = t[j + 1:]
                if rest:
                    use.value = rest
                    use.value_start, use.value_end = pos + 1, tok.end
                    use.value_token = tok
                elif o.arg == "required":
                    if i + 1 < len(tokens):
                        vt = tokens[i + 1]
                        use.value, use.value_start, use.value_end = vt.text, vt.start, vt.end
                        use.value_token = vt
                        use.end = vt.end
                        i += 1
                    else:
                        use.error = f"option requires an argument -- '{letter}'"
                break
            i += 1
            continue
        if block.stray is None:
            block.stray = tok
        block.strays.append(tok)
        i += 1


def _guess_takes_value(name: str, tok: Token, nxt: Token) -> bool:
    """Whether a long option getopt refused (``--name``) probably takes ``nxt`` as its value:
    srun and pyxis know its arity; otherwise a following word of the same line that is not an
    option is taken as its value."""
    known = opts.srun_options()
    res = opts.resolve_long(name, known)
    if res.option is not None:
        return res.option.arg == "required"
    return nxt.line == tok.line and not nxt.text.startswith("-")


def _raw_index(tok: Token, k: int) -> int:
    """Map index ``k`` of ``tok.text`` to an index into its raw span: exact when no quote or
    backslash comes before it (option names), clamped to the span otherwise."""
    return min(k, tok.end - tok.start)
