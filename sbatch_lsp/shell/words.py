"""Quote-aware reading of shell words: expansions with their quoting context, literal values,
and the batch shell's expansion of a word into a nested command string.

This works on raw source text, so it also sees inside regions the parser masked
(``$((SLURM_PROCID+1))``, ``${X:-$SLURM_NODEID}``).
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Callable

from . import masks
from .model import DOUBLE, ESCAPED, SINGLE, UNQUOTED, Expansion, Word

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SPECIAL = re.compile(r"[0-9@*#?$!-]")
ARITH_NAME = re.compile(r"(?<![A-Za-z0-9_$])[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class TextMap:
    """A text and, for each character, the offset in the original script it came from.

    ``offsets`` is None for the original text itself (identity). ``early`` lists
    ``(start, end, Expansion)`` ranges of the text that are values the batch shell substituted;
    :func:`expand_for_shell` makes them in text order, disjoint, and nothing changes them after.
    """

    text: str
    offsets: list[int] | None = None
    early: list[tuple[int, int, Expansion]] = field(default_factory=list)
    _first: dict[int, int] | None = field(default=None, repr=False, compare=False)
    #: whether ``early``'s ranges are in order, with their starts and ends (for bisection);
    #: built on first use
    _bounds: tuple[bool, list[int], list[int]] | None = field(default=None, repr=False,
                                                               compare=False)

    def orig(self, i: int) -> int:
        """Original offset of text index ``i`` (an end index maps past the previous char)."""
        if self.offsets is None:
            return i
        if not self.offsets:
            return 0
        if i >= len(self.offsets):
            return self.offsets[-1] + 1
        return self.offsets[i]

    def index_of(self, orig: int) -> int | None:
        """The first index of this text that came from original offset ``orig`` (None if no
        character did). Offsets of a nested text are not sorted (an inlined variable value maps
        back to its assignment), so this uses a table built on first use."""
        if self.offsets is None:
            return orig
        if self._first is None:
            self._first = {}
            for i, o in enumerate(self.offsets):
                self._first.setdefault(o, i)
        return self._first.get(orig)

    def orig_span(self, start: int, end: int) -> tuple[int, int]:
        if self.offsets is None:
            return start, end
        if end <= start:
            s = self.orig(start)
            return s, s
        return self.orig(start), self.orig(end - 1) + 1

    def _early_bounds(self) -> tuple[list[int], list[int]] | None:
        """(starts, ends) of ``early`` when both ascend (ranges in text order), else None."""
        if self._bounds is None:
            starts = [s for s, _, _ in self.early]
            ends = [e for _, e, _ in self.early]
            ordered = all(a <= b for a, b in pairwise(starts)) and \
                all(a <= b for a, b in pairwise(ends))
            self._bounds = (ordered, starts, ends)
        ordered, starts, ends = self._bounds
        return (starts, ends) if ordered else None

    def early_in(self, start: int, end: int) -> list[Expansion]:
        """The substituted values whose range overlaps ``[start, end)``, in text order;
        O(log n + found) in the ranges when they are in order."""
        if not self.early:
            return []
        bounds = self._early_bounds()
        if bounds is None:
            return [e for s, t, e in self.early if s < end and t > start]
        starts, ends = bounds
        out = []
        for k in range(bisect_right(ends, start), len(starts)):
            if starts[k] >= end:
                break
            out.append(self.early[k][2])
        return out

    def early_around(self, start: int, end: int) -> Expansion | None:
        """The last substituted value (in ``early``'s order) whose range holds ``[start,
        end)``, or None; O(log n) when the ranges are in order."""
        if not self.early:
            return None
        bounds = self._early_bounds()
        if bounds is None:
            found = None
            for es, ee, exp in self.early:
                if es <= start and end <= ee:
                    found = exp
            return found
        starts, ends = bounds
        j = bisect_right(starts, start) - 1
        return self.early[j][2] if j >= bisect_left(ends, end) and j >= 0 else None


def _match_brace(text: str, i: int, end: int) -> int:
    """Index just past the ``}`` that closes the ``${`` at ``i`` (``end`` if unclosed)."""
    k = masks.match_brace(text, i + 1, end)
    return end if k < 0 else k + 1


def _match_paren(text: str, i: int, end: int) -> int:
    """Index just past the ``)`` matching the ``(`` at ``i`` (``end`` if unclosed)."""
    k = masks.match_paren(text, i, end)
    return end if k < 0 else k + 1


#: the characters :meth:`_Scanner.inner_refs` reacts to in a command substitution or a ``${ }``
#: operand, and in arithmetic (where a name is a reference)
_CODE_SPECIAL = re.compile(r"[\\'$]")
_ARITH_SPECIAL = re.compile(r"[\\$A-Za-z_]")
#: the characters :meth:`_Scanner.run` reacts to outside quotes and inside double quotes (the
#: others it adds to the value as they stand)
_UNQUOTED_SPECIAL = re.compile(r"[\\'\"$`]")
_DOUBLE_SPECIAL = re.compile(r"[\\\"$`]")
#: the same in an unquoted here-document body (where ``"`` is literal)
_HEREDOC_SPECIAL = re.compile(r"[\\$`]")


class _Scanner:
    def __init__(self, tmap: TextMap, start: int, end: int, heredoc: bool = False):
        self.heredoc = heredoc  # an unquoted here-document body: `"` and `'` are literal
        self.t = tmap.text
        self.map = tmap
        self.start, self.end = start, end
        self.expansions: list[Expansion] = []
        self.value: list[str] = []
        self.literal = True

    def add(self, name, kind, quoting, s, e, nested=False):
        os_, oe = self.map.orig_span(s, e) if self.map.offsets is not None else (s, e)
        early = self.map.early_around(s, e) if self.map.early else None
        self.expansions.append(Expansion(name, kind, quoting, os_, oe, self.t[s:e], nested, early))

    def inner_refs(self, s: int, e: int, quoting: str, arith: bool = False) -> None:
        """Variable references inside ``$( )``, ``$(( ))`` or a ``${ }`` operand."""
        t = self.t
        # (the characters in between are passed over in one search each)
        special = _ARITH_SPECIAL if arith else _CODE_SPECIAL
        j = s
        while j < e:
            found = special.search(t, j, e)
            if found is None:
                return
            j = found.start()
            c = t[j]
            if c == "\\":
                j += 2
                continue
            if c == "'" and not arith:
                k = t.find("'", j + 1, e)
                j = e if k < 0 else k + 1
                continue
            if c == "$":
                j = self.dollar(j, quoting, nested=True, limit=e)
                continue
            if arith:
                m = ARITH_NAME.match(t, j)
                if m and (j == s or not (t[j - 1].isalnum() or t[j - 1] in "_$")):
                    self.add(m.group(0), "var", quoting, m.start(), m.end(), nested=True)
                    j = m.end()
                    continue
            j += 1

    def dollar(self, i: int, quoting: str, nested: bool = False, limit: int | None = None) -> int:
        """Handle the ``$`` at ``i``; return the index after the expansion."""
        t, end = self.t, (limit if limit is not None else self.end)
        nxt = t[i + 1] if i + 1 < end else ""
        if t.startswith("((", i + 1):
            close = _match_paren(t, i + 1, end)
            self.add(None, "arith", quoting, i, close, nested)
            self.inner_refs(i + 3, close - 2, quoting, arith=True)
            return close
        if nxt == "(":
            close = _match_paren(t, i + 1, end)
            self.add(None, "command", quoting, i, close, nested)
            self.inner_refs(i + 2, close - 1, UNQUOTED if quoting != SINGLE else SINGLE)
            return close
        if nxt == "{":
            close = _match_brace(t, i, end)
            body = t[i + 2:close - 1]
            m = NAME.match(body) if not body.startswith(("#", "!")) else NAME.match(body, 1)
            if m:
                s = i + 2 + m.start()
                self.add(m.group(0), "var", quoting, i, close, nested)
                rest = s + len(m.group(0))
                if rest < close - 1:
                    self.inner_refs(rest, close - 1, quoting)
            else:
                self.add(None, "var", quoting, i, close, nested)
            return close
        if nxt == "'" and quoting == UNQUOTED:  # $'...' ANSI-C string: literal
            k = t.find("'", i + 2, end)
            return end if k < 0 else k + 1
        m = NAME.match(t, i + 1)
        if m and m.end() <= end:
            self.add(m.group(0), "var", quoting, i, m.end(), nested)
            return m.end()
        if nxt and SPECIAL.match(nxt):
            self.add(nxt, "var", quoting, i, i + 2, nested)
            return i + 2
        return i + 1

    def run(self) -> None:
        t, i, end = self.t, self.start, self.end
        quote = '"' if self.heredoc else None
        while i < end:
            c = t[i]
            if quote is None:
                if c == "\\":
                    if i + 1 < end:
                        if t[i + 1] == "$":
                            j = self._literal_dollar(i + 1, ESCAPED)
                            self.value.append(t[i + 1:j])
                            i = j
                            continue
                        if t[i + 1] != "\n":
                            self.value.append(t[i + 1])
                    i += 2
                    continue
                if c == "'":
                    k = t.find("'", i + 1, end)
                    k = end if k < 0 else k
                    self._single(i + 1, k)
                    i = k + 1
                    continue
                if c == '"':
                    quote = '"'
                    i += 1
                    continue
                if c == "$" and t.startswith("'", i + 1):
                    k = t.find("'", i + 2, end)
                    k = end if k < 0 else k
                    self.value.append(t[i + 2:k])
                    i = k + 1
                    continue
                if c in "$`":
                    i = self.expansion(i, UNQUOTED)
                    continue
                if c == "~" and i == self.start:
                    self.literal = False
                i = self._plain(i, _UNQUOTED_SPECIAL)
                continue
            # inside double quotes
            if c == '"' and not self.heredoc:
                quote = None
                i += 1
                continue
            if c == "\\" and i + 1 < end:
                n = t[i + 1]
                if n == "$":
                    j = self._literal_dollar(i + 1, ESCAPED)
                    self.value.append(t[i + 1:j])
                    i = j
                    continue
                if n in ('`\\' if self.heredoc else '`"\\'):
                    self.value.append(n)
                    i += 2
                    continue
                if n == "\n":
                    i += 2
                    continue
                self.value.append(c)
                i += 1
                continue
            if c in "$`":
                i = self.expansion(i, DOUBLE)
                continue
            i = self._plain(i, _DOUBLE_SPECIAL)

    def _plain(self, i: int, special: re.Pattern) -> int:
        """Add the character at ``i`` and the ones after it up to the next ``special`` one to
        the value (as they stand); return the index of that one (``end`` if none)."""
        m = special.search(self.t, i + 1, self.end)
        j = m.start() if m else self.end
        self.value.append(self.t[i:j])
        return j

    def expansion(self, i: int, quoting: str) -> int:
        """A ``$…`` or backquote at ``i`` that this shell expands; returns the index after it."""
        t = self.t
        if t[i] == "`":
            k = t.find("`", i + 1, self.end)
            k = self.end if k < 0 else k + 1
            self.add(None, "command", quoting, i, k)
            self.inner_refs(i + 1, k - 1, UNQUOTED)
            self.literal = False
            return k
        j = self.dollar(i, quoting)
        if j == i + 1:
            self.value.append("$")  # a lone `$` is literal
        else:
            self.literal = False
        return j

    def _literal_dollar(self, i: int, quoting: str) -> int:
        """Record ``$NAME`` at ``i`` that this shell keeps literal; return the index after it."""
        before = len(self.expansions)
        j = self.dollar(i, quoting)
        for k in range(before, len(self.expansions)):
            e = self.expansions[k]
            if e.quoting != SINGLE:
                self.expansions[k] = Expansion(e.name, e.kind, quoting, e.start, e.end, e.text,
                                               e.nested, e.early)
        return max(j, i + 1)

    def _single(self, s: int, e: int) -> None:
        """The text inside single quotes, ``[s, e)``: its value as it stands, each ``$`` in it
        recorded as a literal reference."""
        self.value.append(self.t[s:e])
        j = self.t.find("$", s, e)
        while j >= 0:
            j = self.t.find("$", self._literal_dollar(j, SINGLE), e)


#: a character that makes a word more than its own text: a quote, escape or expansion
_QUOTED_OR_EXPANDED = re.compile(r"[\\'\"$`]")
#: what follows the ``$`` of a ``${NAME}`` (group 1) or ``$NAME`` (group 2)
_BRACED_OR_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*)")
#: the characters of a name (:data:`NAME`)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def scan_word(tmap: TextMap, start: int, end: int) -> Word:
    """Read the word ``tmap.text[start:end]``: its expansions (with original offsets) and value.

    In the script's own text (``tmap`` maps no offset and holds no substituted value) a word
    with no backslash, single quote or backquote, not starting with ``~``, is read without the
    scanner when it is plain, or holds only double quotes and ``$NAME``/``${NAME}`` (most words
    of real scripts; :func:`_scan` reads the others; tests/test_words.py compares the two)."""
    text = tmap.text[start:end]
    if tmap.offsets is None and not tmap.early and "\\" not in text and "'" not in text \
            and "`" not in text and text[:1] != "~":
        if "$" not in text and '"' not in text:
            return Word(text, start, end, text, [], [])  # nothing to remove or expand
        word = _quoted_names(text, start, end, tmap.text[end:end + 1])
        if word is not None:
            return word
    return _scan(tmap, start, end)


def _quoted_names(text: str, start: int, end: int, after: str) -> Word | None:
    """The word ``text``, ``[start, end)`` of the script's own text (``after``: the character
    that follows it, "" at the end) as :class:`_Scanner` reads it, when it holds nothing but
    plain characters, double quotes and ``$NAME``/``${NAME}`` (the caller tested that it has
    no backslash, single quote or backquote and does not start with ``~``); None when it holds
    another ``$`` (``$1``, ``${X:-y}``, ``$(…)``, a lone ``$``) or a name character follows it
    (the scanner would read ``$NAME`` at its end past it)."""
    if after in _NAME_CHARS:
        return None
    expansions = []
    i = text.find("$")
    while i >= 0:
        m = _BRACED_OR_NAME.match(text, i + 1)
        if m is None:
            return None
        j = m.end()
        # (inside double quotes when an odd number of them come before it)
        quoting = DOUBLE if text.count('"', 0, i) % 2 else UNQUOTED
        expansions.append(Expansion(m[1] or m[2], "var", quoting, start + i, start + j,
                                    text[i:j]))
        i = text.find("$", j)
    return Word(text, start, end, None if expansions else text.replace('"', ""), expansions, [])


def _scan(tmap: TextMap, start: int, end: int) -> Word:
    """:func:`scan_word`'s reading of any word, by :class:`_Scanner` (the reference)."""
    text = tmap.text[start:end]
    os_, oe = tmap.orig_span(start, end) if tmap.offsets is not None else (start, end)
    early = tmap.early_in(start, end) if tmap.early else []
    if not _QUOTED_OR_EXPANDED.search(text) and not text.startswith("~"):
        return Word(text, os_, oe, text, [], early)  # nothing to remove or expand: its own value
    sc = _Scanner(tmap, start, end)
    sc.run()
    return Word(text, os_, oe, "".join(sc.value) if sc.literal else None, sc.expansions, early)


Lookup = Callable[[str, int], "TextMap | None"]


def expand_for_shell(word: Word, tmap: TextMap, start: int, end: int, lookup: Lookup,
                     heredoc: bool = False) -> TextMap:
    """The text another shell receives when the current shell expands ``word``.

    Quote removal is applied; ``\\$`` and single-quoted ``$`` survive as ``$`` (they expand in
    the next shell); an expansion the current shell performs is replaced by the known value of
    the variable (``lookup(name, offset)`` returns its TextMap, or None) or by an opaque
    placeholder, and recorded in ``early``. Every character maps back to an original offset.
    With ``heredoc`` the text is the body of an unquoted here-document: quotes are literal and
    a backslash quotes only ``$``, backquote, backslash and newline (bash(1), "Here Documents").
    """
    t = tmap.text
    out: list[str] = []
    offs: list[int] = []
    early: list[tuple[int, int, Expansion]] = []
    exps = {e.start: e for e in word.expansions if not e.nested}

    def copy(i: int, j: int) -> None:
        """Copy ``t[i:j]`` as it stands, each character with its own offset."""
        out.append(t[i:j])
        offs.extend(range(i, j) if tmap.offsets is None else tmap.offsets[i:j])

    def substitute(i: int, j: int, quoting: str) -> None:
        os_, oe = tmap.orig_span(i, j)
        exp = exps.get(os_) or Expansion(None, "var", quoting, os_, oe, t[i:j])
        begin = len(offs)
        val = lookup(exp.name, os_) if exp.name and exp.kind == "var" and t[i:j] in (
            "$" + exp.name, "${" + exp.name + "}") else None
        if val is not None:
            out.append(val.text)
            offs.extend(val.offsets or range(len(val.text)))
            # a known value is inlined as code for the next shell; only the opaque values it
            # carries (its own early expansions) stay marked
            for s, e2, inner in val.early:
                early.append((begin + s, begin + e2, inner))
        else:
            ph = "_" + (exp.name or "X") + "_"
            if quoting == DOUBLE or exp.kind != "var":
                ph = re.sub(r"[^A-Za-z0-9_]", "_", ph)
            out.append(ph)
            offs.extend([os_] * len(ph))
            early.append((begin, len(offs), exp))

    i = start
    quote = '"' if heredoc else None
    escapes = '$`\\\n' if heredoc else '$`"\\\n'
    # the characters that are more than themselves outside quotes and inside double quotes
    # (a here-document body is read as inside double quotes, where `"` is literal)
    special_outside = _UNQUOTED_SPECIAL
    special_inside = _HEREDOC_SPECIAL if heredoc else _DOUBLE_SPECIAL
    while i < end:
        c = t[i]
        if quote is None:
            if c == "\\" and i + 1 < end:
                if t[i + 1] != "\n":
                    copy(i + 1, i + 2)
                i += 2
                continue
            if c == "'":
                k = t.find("'", i + 1, end)
                k = end if k < 0 else k
                copy(i + 1, k)
                i = k + 1
                continue
            if c == '"':
                quote = '"'
                i += 1
                continue
            if c in "$`":
                j = _expansion_end(t, i, end)
                if j > i + 1:
                    substitute(i, j, UNQUOTED)
                    i = j
                    continue
            # this character as it stands, and the ones after it up to the next special one
            m = special_outside.search(t, i + 1, end)
            j = m.start() if m else end
            copy(i, j)
            i = j
            continue
        if c == '"' and not heredoc:
            quote = None
            i += 1
            continue
        if c == "\\" and i + 1 < end and t[i + 1] in escapes:
            if t[i + 1] != "\n":
                copy(i + 1, i + 2)
            i += 2
            continue
        if c in "$`":
            j = _expansion_end(t, i, end)
            if j > i + 1:
                substitute(i, j, DOUBLE)
                i = j
                continue
        m = special_inside.search(t, i + 1, end)
        j = m.start() if m else end
        copy(i, j)
        i = j
    return TextMap("".join(out), offs, early)


def expand_heredoc(tmap: TextMap, start: int, end: int, lookup: Lookup) -> TextMap:
    """The text an unquoted here-document body ``tmap.text[start:end]`` writes: the current
    shell expands parameters, command substitutions and arithmetic in it when the command
    runs (bash(1), "Here Documents"), as :func:`expand_for_shell` does for a word."""
    sc = _Scanner(tmap, start, end, heredoc=True)
    sc.run()
    os_, oe = tmap.orig_span(start, end)
    body = Word(tmap.text[start:end], os_, oe, None, sc.expansions)
    return expand_for_shell(body, tmap, start, end, lookup, heredoc=True)


def _expansion_end(t: str, i: int, end: int) -> int:
    if t[i] == "`":
        k = t.find("`", i + 1, end)
        return end if k < 0 else k + 1
    nxt = t[i + 1] if i + 1 < end else ""
    if nxt == "(":
        return _match_paren(t, i + 1, end)
    if nxt == "{":
        return _match_brace(t, i, end)
    m = NAME.match(t, i + 1)
    if m:
        return min(m.end(), end)
    if nxt and SPECIAL.match(nxt):
        return i + 2
    return i + 1
