"""Lists of simple commands, read without bashlex.

Most chunks of a job script are simple commands, often continued over lines with a trailing
backslash (``srun \\`` / ``  python train.py``), joined by ``&&``, ``||``, ``|`` or ``;``, or
holding command substitutions (``NODES=$(scontrol show hostnames "$SLURM_JOB_NODELIST")``).
bashlex takes milliseconds for each; this scanner a few microseconds per line. It reads:

- words as :mod:`sbatch_lsp.shell.simple` does (quotes, ``$NAME``, simple ``${...}``,
  redirections), plus ``$(...)`` holding a list of its own (unquoted or inside double quotes; not nested: bashlex does
  not report the commands of a ``$(...)`` inside another);
- backslash-newline between words (bash removes the pair: bash(1), QUOTING);
- ``;``, ``&&``, ``||``, ``|`` and a newline after ``&&``/``||``/``|`` (not inside ``$(...)``,
  where bashlex drops what follows a newline);
- a trailing ``&`` after a pipeline (not in a list with ``&&``/``||``, where bashlex marks only
  the last command as background, and not inside ``$(...)``).

:func:`read` returns ``None`` for anything else (compound commands, heredocs, escapes, backquotes,
arithmetic, arrays, words spanning lines, comments inside ``$(...)``) and the caller hands the chunk
to bashlex, the parser of record. The commands come in bashlex's walk order (a command, then the
commands of its substitutions, then the next command) with bashlex's spans, so the shell model is
the same: tests/test_fast_reader.py checks it chunk by chunk against bashlex on every page example,
case and generated script, and on the real corpus with ``CORPUS_DIR``.
"""
from __future__ import annotations

from typing import NamedTuple

from .simple import BRACED, DUP_TARGET, REDIRECT, RESERVED, SUBSCRIPT, Token

#: characters that end the subset inside a word (``;``, ``&``, ``|`` end the word instead)
_SPECIAL = frozenset("\\`()<>{}")
_BLANK = " \t"


class Command(NamedTuple):
    """One simple command of a chunk: its words and redirections (offsets into the chunk, end
    exclusive), whether it sits inside ``$(...)``, and whether ``&`` runs it in the background."""

    tokens: tuple[Token, ...]
    in_substitution: bool
    background: bool


class _Outside(Exception):
    """The text leaves the subset this module reads."""


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.in_substitution = False

    # ---- lists ----------------------------------------------------------------------------
    def read_list(self, i: int, subst: bool) -> tuple[list[Command], int]:
        """The commands of the list starting at ``i`` (in walk order) and the offset where it
        ends: the end of the text, or the ``)`` closing ``$(`` when ``subst``."""
        text, n = self.text, self.n
        out: list[Command] = []
        and_or = False
        background_at: list[tuple[int, int]] = []  # spans of pipelines ended by `&`
        pipeline_start = 0  # index in ``out`` of the current pipeline's first command
        need_command = False  # after `&&`, `||` or `|`
        while True:
            i = self._blanks(i, subst, newlines=True)
            if i >= n or subst and text[i] == ")":
                if need_command:
                    raise _Outside  # `a &&` / `a |` with nothing after
                break
            i = self._command(i, subst, out)
            need_command = False
            i = self._blanks(i, subst, newlines=False)
            if i >= n or subst and text[i] == ")":
                break
            c = text[i]
            two = text[i:i + 2]
            if c == "\n" or c == ";" and two != ";;":
                i += 1
                pipeline_start = len(out)
            elif two in ("&&", "||"):
                and_or = need_command = True
                i = self._after_operator(i + 2, subst)
                pipeline_start = len(out)
            elif c == "|" and two != "|&":
                need_command = True
                i = self._after_operator(i + 1, subst)
            elif c == "&" and not subst:
                background_at.append((out[pipeline_start].tokens[0].start,
                                      max(cmd.tokens[-1].end for cmd in out[pipeline_start:])))
                i += 1
                pipeline_start = len(out)
            else:
                raise _Outside
        if background_at:
            if and_or:
                raise _Outside
            out = [cmd._replace(background=True)
                   if any(s <= cmd.tokens[0].start and cmd.tokens[-1].end <= e
                          for s, e in background_at) else cmd for cmd in out]
        return out, i

    def _after_operator(self, i: int, subst: bool) -> int:
        """Skip blanks, newlines and comment lines after ``&&``, ``||`` or ``|``; a command
        must follow."""
        while True:
            i = self._blanks(i, subst, newlines=True)
            if i < self.n and self.text[i] == "#" and not subst:
                j = self.text.find("\n", i)
                i = self.n if j < 0 else j
                continue
            if i >= self.n:
                raise _Outside
            return i

    def _blanks(self, i: int, subst: bool, newlines: bool) -> int:
        """Skip blanks, backslash-newlines, a comment up to its newline, and, with ``newlines``,
        newlines too; inside ``$(...)`` a newline, backslash-newline or comment leaves the
        subset."""
        text, n = self.text, self.n
        while i < n:
            c = text[i]
            if subst and (c == "\n" or text.startswith("\\\n", i)):
                raise _Outside  # bashlex drops what follows a newline inside `$(…)`
            if c in _BLANK or newlines and c == "\n":
                i += 1
            elif c == "\\" and text.startswith("\\\n", i):
                i += 2
            elif c == "#":
                if subst:
                    raise _Outside
                j = text.find("\n", i)
                i = n if j < 0 else j
            else:
                break
        return i

    # ---- commands -------------------------------------------------------------------------
    def _command(self, i: int, subst: bool, out: list[Command]) -> int:
        """Read one simple command at ``i`` (not blank) into ``out``, followed by the commands
        of its substitutions; the offset after it."""
        text, n = self.text, self.n
        tokens: list[Token] = []
        inner: list[Command] = []
        first_word: str | None = None
        while True:
            i = self._blanks(i, subst, newlines=False)
            if i >= n or text[i] in ";&|\n" or text[i] == "#" or subst and text[i] == ")":
                break
            start = i
            redirect = REDIRECT.match(text, i)
            if redirect:
                op = redirect.group()
                if op.startswith("<<") or text.startswith("(", redirect.end()):
                    raise _Outside
                i = redirect.end()
                if op.endswith("&") and op != "&":
                    target = DUP_TARGET.match(text, i)
                    if not target or text.startswith("\\\n", target.end()):
                        raise _Outside
                    tokens.append(Token(start, target.end(), True))
                    i = target.end()
                    continue
                while i < n and text[i] in _BLANK:
                    i += 1
                end = self._word_end(i, subst, inner)
                if end == i:
                    raise _Outside
                tokens.append(Token(start, end, True))
                i = end
                continue
            if SUBSCRIPT.match(text, i):
                raise _Outside
            end = self._word_end(i, subst, inner)
            if end == i:
                raise _Outside
            if first_word is None and not _assignment_like(text, i, end):
                first_word = text[i:end]
            tokens.append(Token(start, end, False))
            i = end
        if not any(not t.redirect for t in tokens) or first_word in RESERVED:
            raise _Outside
        out.append(Command(tuple(tokens), subst, False))
        out.extend(inner)
        return i

    def _word_end(self, i: int, subst: bool, inner: list[Command]) -> int:
        """End of the word starting at ``i`` (``i`` itself for none); substitutions in it add
        their commands to ``inner``."""
        text, n = self.text, self.n
        while i < n:
            c = text[i]
            if c in " \t\n;&|":
                return i
            if c == "'":
                j = text.find("'", i + 1)
                if j < 0 or "\n" in text[i:j]:
                    raise _Outside
                i = j + 1
            elif c == '"':
                i = self._double_quoted(i + 1, inner)
            elif c == "$":
                i = self._dollar(i, False, inner)
            elif c == ")" and subst:
                return i
            elif c in _SPECIAL:
                raise _Outside
            else:
                i += 1
        return i

    def _double_quoted(self, i: int, inner: list[Command]) -> int:
        """Offset after the ``"`` closing the double-quoted text starting at ``i``."""
        text, n = self.text, self.n
        while i < n:
            c = text[i]
            if c == '"':
                return i + 1
            if c in "\\`\n":
                raise _Outside
            i = self._dollar(i, True, inner) if c == "$" else i + 1
        raise _Outside

    def _dollar(self, i: int, quoted: bool, inner: list[Command]) -> int:
        """Offset after the ``$`` at ``i`` and what it expands: ``$NAME`` reads on as plain word
        characters, a simple ``${...}`` and a ``$(list)`` whole."""
        text = self.text
        if text.startswith("${", i):
            m = BRACED.match(text, i)
            if not m:
                raise _Outside
            return m.end()
        if text.startswith("$(", i):
            if text.startswith("$((", i) or self.in_substitution:
                raise _Outside  # bashlex does not report the commands of a nested `$(…)`
            self.in_substitution = True
            commands, end = self.read_list(i + 2, subst=True)
            self.in_substitution = False
            if end >= self.n or not commands:
                raise _Outside
            inner.extend(commands)
            return end + 1
        if not quoted and text.startswith(("$'", '$"'), i):
            raise _Outside
        return i + 1


def _assignment_like(text: str, s: int, e: int) -> bool:
    """Whether the word ``text[s:e]`` starts with ``NAME=`` or ``NAME+=`` (a prefix assignment)."""
    j = s
    while j < e and (text[j].isalnum() or text[j] == "_"):
        j += 1
    return j > s and not text[s].isdigit() and (text.startswith("=", j) or
                                                  text.startswith("+=", j))


def read(text: str) -> tuple[Command, ...] | None:
    """The simple commands of a chunk's ``text`` in bashlex's walk order, or ``None`` when the
    text leaves the subset this module reads (see the module docstring; it may still be valid
    bash, which bashlex then reads)."""
    reader = _Reader(text)
    try:
        commands, end = reader.read_list(0, subst=False)
    except _Outside:
        return None
    except RecursionError:
        return None
    if end != len(text) or not commands:
        return None
    return tuple(commands)
