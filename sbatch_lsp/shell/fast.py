"""Lists of simple commands, read without bashlex.

Most chunks of a job script are simple commands, often continued over lines with a trailing
backslash (``srun \\`` / ``  python train.py``), joined by ``&&``, ``||``, ``|`` or ``;``, or
holding command substitutions (``NODES=$(scontrol show hostnames "$SLURM_JOB_NODELIST")``).
bashlex takes milliseconds for each; this scanner a few microseconds per line. It reads:

- words (quotes, also over several lines, backslash escapes (inside double quotes, and outside
  quotes before any character but a newline), ``$NAME``,
  ``${...}`` with subscripts and plain operands, ``$((...))``, array values ``NAME=(...)``,
  braces ``{}``/``a{b,c}`` (bashlex does no brace expansion), redirections and here-strings,
  also right after a word (``tr a b> f``, ``cat<<<x``, ``a &>> log``, ``2>& 1``)),
  plus ``$(...)`` and backquotes holding a list of their own (unquoted or inside double
  quotes; not nested: bashlex does not report the commands of a ``$(...)`` inside another);
  arithmetic, array values and parameter operands are opaque to bashlex behind its masks
  (shell/masks.py), so they hold no commands here either;
- backslash-newline between words (bash removes the pair: bash(1), QUOTING), also right after
  a word when a blank follows (bashlex's word then holds the pair; not inside ``$(...)``);
- ``;``, ``&&``, ``||``, ``|``, ``|&`` and a newline after ``&&``/``||``/``|`` (not inside ``$(...)``,
  where bashlex drops what follows a newline);
- a trailing ``&`` after a pipeline, also inside compound commands and after ``&&``/``||``
  (``a && b &``: bashlex marks the last pipeline as background, as this reader does; not inside
  ``$(...)``);
- ``! PIPELINE`` at the start of a list item, also after ``&&``/``||`` (the command starts after
  the ``!``; bashlex refuses one after ``|``);
- here-documents with a plain delimiter (``<<EOF``, ``<<- END``; a quoted one behind the masks)
  outside ``$(...)``, their bodies gathered at the next newline token as bashlex gathers them
  (inside a compound command, when the delimiter ends its line, at the newline after next:
  bashlex reads the line between as commands); inside ``$(...)`` one ``<<`` here-document at
  the top level whose delimiter line the ``)`` follows (``X=$(cat <<EOF`` newline … ``EOF``
  newline ``)``; see ``_substitution_body``);
- ``if``/``elif``/``else``, ``for NAME in``, ``while``/``until``, ``{ … }``, ``( … )`` and function
  definitions (``NAME()``, ``function NAME``, ``function NAME()``; the function's span holds the
  redirections after its body, as bashlex's does).

shell/parse.read_chunk also hands it the masked text bashlex would be given (shell/masks.py:
``case`` as a ``{ … }`` group, ``(( … ))`` as ``:``) when the chunk's own text leaves the subset.

:func:`read` returns ``None`` for anything else (``case``, a backslash-newline inside a word,
backslashes inside backquotes, comments inside ``$(...)``,
and the spots where bashlex's reading is off and not followed here: a ``$(...)`` after a
backslash-newline in the same word whose command starts ``NAME=`` (bashlex places the commands of
a substitution there as if the pairs were not there: ``_placed`` follows that); one inside single
quotes in a word that does not start and end with one, which bashlex reads as a command, where
``_quoted_code`` cannot follow it, and one outside them in a word that does, whose commands
bashlex does not report; ``NAME=…`` after a redirection, which bashlex reads as the command
name; ``[[`` as an
argument, which bashlex's mask rewrites; a ``~`` prefix holding a substitution, which bashlex
reads as one tilde part; a comment right after ``;`` or ``&``, whose words bashlex reads as a
command) and the caller
hands the chunk to bashlex, the parser of record. The commands come in bashlex's walk order (a command, then the
commands of its substitutions, then the next command) with bashlex's spans, so the shell model is
the same: tests/test_fast_reader.py checks it chunk by chunk against bashlex on every page example,
case and generated script, and on the real corpus with ``CORPUS_DIR``.
"""
from __future__ import annotations

import re
from functools import partial
from typing import NamedTuple

from . import masks


#: words that start a compound command or change how the line parses when they come first
RESERVED = {"if", "then", "elif", "else", "fi", "for", "while", "until", "do", "done", "case",
            "esac", "select", "function", "time", "coproc", "!", "[[", "]]", "{", "}", "in"}
#: a redirection operator at the start of a token: ``>``, ``>>``, ``2>``, ``&>``, ``>&2``, ``<``,
#: ``<<<`` (a here-string: its word is a target like any other)
REDIRECT = re.compile(r"(?:\d*(?:>>|>\||<>|>&|<&|<<<|>|<)|&>>?)")
#: the characters a redirection operator or here-document can start with
_REDIRECT_FIRST = frozenset("0123456789<>&")
#: a ``>&``/``<&`` target: a descriptor number or ``-``, then a blank, newline, operator, the
#: ``)`` closing a ``$(…)`` or the end (``echo x >&2`` as a compound command's last line)
DUP_TARGET = re.compile(r"(?:\d+|-)(?=[\s;&|)]|$)")
#: ``A[1]=`` or ``A[``: bash reads an array-element assignment, bashlex a word (its assignments
#: are ``NAME=`` only), as parse._simple_command does; see ``_placed``
SUBSCRIPT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[")
#: the inside of ``${...}`` kept in the subset: a name with an optional operator and plain word
BRACED = re.compile(r"\$\{[A-Za-z_#!][A-Za-z0-9_]*(?:[:#%/^,@*?+=-][^\s'\"{}\\`$]*)?\}")
#: ``${...}`` with a subscript or an operand holding ``$NAME``/``${NAME}``/quoted words
#: (``${arr[@]}``, ``${#a[*]}``, ``${X:-$HOME/x}``, ``${X:-"a b"}``): bashlex reads a
#: parameter expansion as one part of its word and reports no command inside one (the masks
#: hide a ``$(…)`` there), so only where it ends matters; blanks are part of it
#: (``"${P:-What is it?}"``); no backslash, backquote, ``$(``, newline or nested braces beyond
#: a plain ``${NAME}`` or one ``${NAME<op>OPERAND}`` (``${A:-${B:-1}}``; ``$NAME`` inside quotes)
#: (an operand's characters: plain ones, ``$NAME``, ``${NAME}``)
_OPERAND = r"""[^\n'"`\\${}()]|\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\}"""
#: a backslash and the character it escapes in an operand (``${P//\//\\/}``, ``${6#\'}``):
#: bashlex's tokenizer skips the pair; not ``\}``, where its expansion (``find('}')``) ends
#: (``${X:-\}$(c)}`` runs ``c``), nor a backslash-newline
_ESCAPED = r"|\\[^\n}]"
_WIDE = (r"""\$\{[#!]?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(?:\[[^\]\s'"`\\${}()]*\])?"""
         r"""(?:%s|\$\{[A-Za-z_][A-Za-z0-9_]*[:#%%/^,@*?+=-](?:%s)*\}%s)*\}""")
WIDE_BRACED = re.compile(_WIDE % (_OPERAND, _OPERAND, r"|'[^'\n]*'"
                                  + r'|"(?:[^"\n`\\$]|\$[A-Za-z_][A-Za-z0-9_]*)*"'
                                  + _ESCAPED))
#: the same inside double quotes, where quotes in the operand are read differently: only ``""``
#: (bashlex fails on ``"${1:-'a'}"``)
WIDE_BRACED_QUOTED = re.compile(_WIDE % (_OPERAND, _OPERAND, r'|""' + _ESCAPED))
#: ``NAME=`` or ``NAME+=`` before ``(``: an array assignment, which bashlex reads (behind its
#: mask) as one word up to the matching ``)``
ARRAY_HEAD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


class Token(NamedTuple):
    """A word or a redirection of a simple command; offsets into the line, end exclusive."""

    start: int
    end: int
    redirect: bool
    #: a here-document's operator and delimiter (``<<EOF``, ``<<- END``): not a redirection
    #: of the model; its body is in :attr:`Command.heredocs`
    heredoc: bool = False


#: a :class:`Token` from its four fields given as one tuple, ``_new_token((start, end, redirect,
#: heredoc))``: ``tuple.__new__`` called from C, without the NamedTuple's Python-level
#: ``__new__`` (the reader builds one per word: that call took 7% of its instructions);
#: tests/test_fast_reader.py checks it builds what ``Token(…)`` builds
_new_token = partial(tuple.__new__, Token)

_BLANK = " \t"
#: a run of characters that stand for themselves in a word outside quotes (any but blanks,
#: newlines, operators, quotes, ``$``, backquotes, parentheses, ``<``, ``>``, backslashes)
_PLAIN = re.compile(r"[^ \t\n;&|'\"$`()<>\\]*")
#: the characters that end a word after a :data:`_PLAIN` run (see ``_Reader._word_end``)
_WORD_END = frozenset(" \t\n;&|")
#: a command substitution bashlex reads inside single quotes (see ``_Reader._word_end``), or
#: ``$[``, on which it fails there
_QUOTED_CODE = re.compile(r"\$[(\[]|`")
#: what bashlex reads specially inside single quotes when it reads them as code
_QUOTED_SPECIAL = re.compile(r"[\\$`<>]")
#: the one-character parameters (``$1``, ``$$``, ``$@``: bashlex/subst.py, ``_paramexpand``)
_SPECIAL_PARAMETER = frozenset("0123456789$#?-!*@")
#: a backslash that bash removes inside backquotes (before ``$``, a backquote or a backslash),
#: or one at their end (before the closing backquote)
_BACKQUOTE_ESCAPE = re.compile(r"\\(?:[$`\\]|$)")
#: a run of characters that stand for themselves inside double quotes
_PLAIN_QUOTED = re.compile(r'[^"\\`$]*')
#: blanks, and blanks and newlines
_BLANKS = re.compile(r"[ \t]*")
_BLANKS_NL = re.compile(r"[ \t\n]*")
#: the characters at which :meth:`_Reader._blanks` has anything to do (skip blanks, newlines,
#: backslash-newlines or a comment; refuse a newline or comment inside ``$(…)``): at any other
#: it returns at once
_SKIPPED = frozenset(" \t\n\\#")
#: compound commands the reader takes apart (``()`` stands for a function head ``NAME()``, ``(``
#: for a subshell)
COMPOUND = frozenset({"if", "for", "while", "until", "{", "()", "function", "("})
#: a word in command position: group 1 the word, group 2 set for a function head ``NAME ()``
_HEAD = re.compile(r"([^\s;&|()<>]+)(?=[\s;&|()<>]|$)([ \t]*\([ \t]*\))?")
#: ``function NAME``, ``function NAME()``: group 1 the name
_FUNCTION = re.compile(r"""function[ \t]+([^\s;&|()<>$`'"\\{}]+)(?:[ \t]*\([ \t]*\))?(?=[\s{])""")
#: a here-document's operator and plain delimiter word (a quoted one is masked to blanks
#: for bashlex: shell/masks.m_quoted_heredoc); group 1 ``-``, group 2 the delimiter
_HEREDOC = re.compile(r"<<(-?)[ \t]*([A-Za-z0-9_.@%+:/-]+)(?=[\s;&|<>)]|$)")
_FOR = re.compile(r"for[ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]+in(?=[ \t])")


class Command(NamedTuple):
    """One simple command of a chunk: its words and redirections (offsets into the chunk, end
    exclusive), whether it sits inside ``$(...)``, whether ``&`` runs it in the background, and
    the function whose body holds it."""

    tokens: tuple[Token, ...]
    in_substitution: bool
    background: bool
    function: str | None = None
    #: (operator start, body start, body end) of each here-document, in order: the body runs
    #: from the line after the command's line to the end of the delimiter line (its newline
    #: excluded), as bashlex's heredoc node spans it
    heredocs: tuple[tuple[int, int, int], ...] = ()


#: a :class:`Command` from its five fields given as one tuple (see :data:`_new_token`)
_new_command = partial(tuple.__new__, Command)


class Reading(NamedTuple):
    """What :func:`read` makes of a chunk: its simple commands in bashlex's walk order and its
    function definitions (name, start, end: from the name to the closing brace)."""

    commands: tuple[Command, ...]
    functions: tuple[tuple[str, int, int], ...]
    #: the error bashlex raises on the chunk (``"AssertionError: token = {while}"``, as
    #: parse.read_chunk records it), or None; with one, the commands are not bashlex's model
    #: (it has none) and the chunk goes to the next parser
    refusal: str | None = None


class _Outside(Exception):
    """The text leaves the subset this module reads."""


class _Refused(Exception):
    """bashlex raises on the text read so far, with this message (see :attr:`Reading.refusal`)."""


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.in_substitution = False
        self.compound = 0  # depth of compound commands around the current position
        #: depth of ``( … )`` subshells around the current position: a ``)`` there ends the
        #: word, the command and the list, as inside ``$(…)``
        self.subshells = 0
        #: whether this reader reads the list of a process substitution (``<(a |`` newline
        #: ``b)``): bashlex reads a newline after ``|`` there, and the model takes no command
        #: from it (see ``_process_substitution``)
        self.process = False
        self.function: str | None = None
        self.functions: list[tuple[str, int, int]] = []
        #: whether the list read last was one pipeline, not joined to another by an operator
        self.lone_pipeline = False
        #: the error bashlex raises on the text (see :attr:`Reading.refusal`)
        self.refusal: str | None = None
        #: the backslash-newlines inside double quotes read so far in the current word (bashlex
        #: drops each from the word before it places the word's substitutions: see ``_placed``)
        self.continued = 0
        #: the backslash-newlines between the words inside the ``$(…)`` of the current word
        #: (see ``_placed``)
        self.pairs: list[int] = []
        #: here-documents whose bodies start after the next newline token: (the list holding
        #: their command, its index there, offset after the delimiter (after the first newline
        #: once passed), operator start, delimiter, leading tabs stripped, whether the body
        #: waits for the newline after next (see ``_command``))
        self.pending: list[tuple[list[Command], int, int, int, str, bool, bool]] = []

    # ---- lists ----------------------------------------------------------------------------
    def read_list(self, i: int, subst: bool, stop: frozenset[str] = frozenset()
                  ) -> tuple[list[Command], int]:
        """The commands of the list starting at ``i`` (in walk order) and the offset where it
        ends: the end of the text, the ``)`` closing ``$(`` when ``subst``, or a reserved word
        of ``stop`` in command position (``then``, ``fi``, ``done``, ``}``). A list of no
        command leaves the subset."""
        text, n = self.text, self.n
        out: list[Command] = []
        items = 0
        linked = False  # items joined by `;`, `&`, `&&` or `||`
        background_at: list[tuple[int, int]] = []  # spans of pipelines ended by `&`
        pipeline_start = 0  # index in ``out`` of the current pipeline's first command
        need_command = False  # after `&&`, `||` or `|`
        piped = False  # after `|` (bashlex refuses `a | ! b`, reads `a && ! b`)
        while True:
            i = self._blanks(i, subst, newlines=not self.pending)
            if self.pending and text.startswith("\n", i):  # (a blank or comment line: a
                i = self._bodies(i)  # newline token, where a waiting body starts)
                continue
            word = self._reserved(i)  # (None at the end)
            if i >= n or self._closes(i, subst) or stop and word in stop:
                if need_command or not items:
                    raise _Outside  # `a &&` / `a |` with nothing after, or nothing at all
                break
            if word == "!" and not piped:  # `! PIPELINE`: bashlex's command starts after
                i = self._blanks(i + 1, subst, newlines=False)
                word = self._reserved(i)
            if text.startswith("(", i) and not text.startswith("((", i) and not subst:
                word = "("  # a subshell (`((`: arithmetic, read behind the masks)
            if word in COMPOUND and not subst:
                i = self._compound(i, word, out)
            else:
                i = self._command(i, subst, out)
            items += 1
            need_command = piped = False
            i = self._blanks(i, subst, newlines=False)
            if i >= n or self._closes(i, subst):
                break
            c = text[i]
            two = text[i:i + 2]
            if two in (";#", "&#"):
                raise _Outside  # (bashlex reads the comment's words as a command)
            if c == "\n" and self.pending:
                i = self._bodies(i)
                if subst and not text.startswith(")", i):
                    raise _Outside  # (bashlex drops what follows a newline inside `$(…)`)
                pipeline_start = len(out)
            elif c == "\n" or c == ";" and two not in (";;", ";&"):  # (`;&`: a case operator)
                linked = linked or c == ";"
                i += 1
                if c == ";" and subst:  # (bashlex fails on the `)` after `;` in `$(a; )`)
                    after = _BLANKS.match(text, i).end()  # type: ignore[union-attr]
                    if text.startswith(")", after):
                        raise _Outside
                pipeline_start = len(out)
            elif two in ("&&", "||"):
                need_command = linked = True
                i = self._after_operator(i + 2, subst)
                pipeline_start = len(out)
            elif c == "|":  # (`|&`: `2>&1 |`)
                need_command = piped = True
                i = self._after_operator(i + len("|&" if two == "|&" else "|"), subst)
            elif c == "&" and not subst:
                background_at.append((out[pipeline_start].tokens[0].start,
                                      max(cmd.tokens[-1].end for cmd in out[pipeline_start:])))
                i += 1
                pipeline_start = len(out)
                linked = True
            else:
                raise _Outside
        self.lone_pipeline = items == 1 and not linked
        if self.pending and any(lst is out for lst, *_ in self.pending):
            raise _Outside  # a here-document whose body this list does not reach
        if background_at:
            out = [cmd._replace(background=True)
                   if any(s <= cmd.tokens[0].start and cmd.tokens[-1].end <= e
                          for s, e in background_at) else cmd for cmd in out]
        return out, i

    def _bodies(self, i: int) -> int:
        """Skip the bodies of the pending here-documents after the newline at ``i``, as bashlex
        gathers them at a newline token (bashlex/heredoc.py): each runs to a line equal to its
        delimiter (leading tabs stripped for ``<<-``); the offset after the last one. Each
        command gets its bodies' spans. A body that waits for the next newline token waits
        on. A newline read elsewhere since the operator (or since the newline a body waited
        after: after ``&&``, a backslash-newline, inside quotes) or a body ended by the end of
        the text leaves the subset."""
        text, n = self.text, self.n
        pos = i + 1
        waiting = []
        for lst, k, after, op_start, delim, strip, wait in self.pending:
            if "\n" in text[after:i]:
                raise _Outside
            if wait:
                waiting.append((lst, k, i + 1, op_start, delim, strip, False))
                continue
            if text.startswith("\\\n", pos):  # (bashlex's peek before it reads the body
                raise _Outside  # skips the pair, and the body starts after it)
            body = pos
            while True:
                line, line_end = self._body_line(pos)
                if (line.lstrip("\t") if strip else line) == delim:
                    break
                pos = line_end + 1
            cmd = lst[k]
            if cmd.in_substitution:
                _substitution_body(text[body:line_end], cmd)
            lst[k] = cmd._replace(heredocs=cmd.heredocs + ((op_start, body, line_end),))
            pos = line_end + 1
        self.pending = waiting
        return min(pos, n)

    def _body_line(self, i: int) -> tuple[str, int]:
        """The line of a here-document body starting at ``i`` as bashlex reads it to compare
        it with the delimiter, and the offset of the newline ending it: its reader drops every
        backslash-newline (bashlex/tokenizer.py, ``_getc``), so a line ending with a backslash
        goes on on the next one. A line starting at the end of the text, or a backslash ending
        it, leaves the subset."""
        text, n = self.text, self.n
        parts = []
        while True:
            if i >= n:
                raise _Outside
            nl = text.find("\n", i)
            end = n if nl < 0 else nl
            if end == i or text[end - 1] != "\\":
                parts.append(text[i:end])
                return "".join(parts), end
            if nl < 0:
                raise _Outside  # (a backslash ending the text: bashlex fails on it)
            parts.append(text[i:end - 1])
            i = nl + 1

    def _closes(self, i: int, subst: bool) -> bool:
        """Whether the ``)`` of the ``$(…)`` (``subst``) or subshell being read stands at ``i``."""
        return (subst or self.subshells > 0) and self.text.startswith(")", i)

    def _after_operator(self, i: int, subst: bool) -> int:
        """Skip blanks, newlines and comment lines after ``&&``, ``||`` or ``|``; a command
        must follow."""
        while True:
            i = self._blanks(i, subst and not self.process, newlines=True)
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
        if i < n and text[i] not in _SKIPPED:  # (nothing to skip, as at most calls)
            return i
        skip = (_BLANKS_NL if newlines and not subst else _BLANKS).match
        while True:
            i = skip(text, i).end()  # type: ignore[union-attr]  # (matches "")
            if i >= n:
                return i
            c = text[i]
            if subst and (c == "#" or c == "\n" and not self.pending):
                raise _Outside  # bashlex drops what follows a newline inside `$(…)`
            if subst and text.startswith("\\\n", i):
                self.pairs.append(i)  # (see ``_placed``)
            if c == "\n" and newlines:
                i += 1
            elif c == "\\" and text.startswith("\\\n", i):
                i += 2
            elif c == "#":
                j = text.find("\n", i)
                i = n if j < 0 else j
            else:
                return i

    # ---- compound commands ----------------------------------------------------------------
    def _reserved(self, i: int) -> str | None:
        """The reserved word (or function head ``NAME()``) at ``i``, if one is there."""
        m = _HEAD.match(self.text, i)
        if m is None:
            return None
        if m.group(2) is not None:
            return None if m.group(1).endswith("=") else "()"  # `a=()`: an empty array
        word = m.group(1)
        return word if word in RESERVED else None

    def _compound(self, i: int, word: str, out: list[Command]) -> int:
        """Read the compound command (``if``, ``for``, ``while``/``until``, ``{ }``, a ``( )``
        subshell or a function definition) at ``i`` into ``out``; the offset after it and its redirections.
        Its redirections may not hold substitutions (bashlex does not walk them)."""
        self.compound += 1
        start = i
        name = None
        if word in ("()", "function"):
            head = (_HEAD if word == "()" else _FUNCTION).match(self.text, i)
            if head is None:
                raise _Outside
            i = self._blanks(head.end(), False, True)
            if self._reserved(i) != "{" or self.function is not None:
                raise _Outside
            self.function = name = head.group(1)
            i = self._word(self._group(i, "{", ("}",), out), "}")
            self.function = None
        elif word == "if":
            i = self._group(i, "if", ("then",), out)
            i = self._group(i, "then", ("elif", "else", "fi"), out)
            while self._reserved(i) == "elif":
                i = self._group(i, "elif", ("then",), out)
                i = self._group(i, "then", ("elif", "else", "fi"), out)
            if self._reserved(i) == "else":
                i = self._group(i, "else", ("fi",), out)
            i = self._word(i, "fi")
        elif word == "for":
            i = self._for_words(i, out)
            i = self._group(i, "do", ("done",), out)
            i = self._word(i, "done")
        elif word in ("while", "until"):
            i = self._group(i, word, ("do",), out)
            lone = self.lone_pipeline
            if not lone and not self.text[:i].rstrip(_BLANK).endswith(";"):
                raise _Outside  # (`while a && b` + newline + `do`)
            i = self._group(i, "do", ("done",), out)
            i = self._word(i, "done")
            if lone:  # (one pipeline, then newlines: bashlex asserts the condition is a list
                # when it has read the loop, bashlex/parser.py p_shell_command)
                self.refusal = self.refusal or f"AssertionError: token = {{{word}}}"
        elif word == "{":
            i = self._group(i, "{", ("}",), out)
            i = self._word(i, "}")
        elif word == "(":
            self.subshells += 1
            commands, i = self.read_list(i + 1, False)
            self.subshells -= 1
            if not self.text.startswith(")", i):
                raise _Outside
            out.extend(commands)
            i += 1
        else:
            raise _Outside
        self.compound -= 1
        end, after = self._plain_redirects(i)
        if name is not None:  # (its span holds its redirections, as bashlex's does)
            self.functions.append((name, start, end))
        return after

    def _group(self, i: int, opener: str, closers: tuple[str, ...], out: list[Command]) -> int:
        """Skip the reserved word ``opener`` at ``i`` and read the list after it up to one of
        ``closers`` (left in place)."""
        i = self._word(i, opener)
        commands, i = self.read_list(i, False, frozenset(closers))
        if self._reserved(i) not in closers:
            raise _Outside
        out.extend(commands)
        return i

    def _word(self, i: int, word: str) -> int:
        """Offset after the reserved word ``word``, which must stand at ``i``."""
        i = self._blanks(i, False, True)
        if self._reserved(i) != word:
            raise _Outside
        return i + len(word)

    def _for_words(self, i: int, out: list[Command]) -> int:
        """``for NAME in WORDS`` up to the ``;`` or newline before ``do``; the commands of
        substitutions in the words go to ``out``."""
        m = _FOR.match(self.text, i)
        if m is None:
            raise _Outside
        i = m.end()
        inner: list[Command] = []
        while True:
            i = self._blanks(i, False, False)
            if i >= self.n:
                raise _Outside
            if self.text[i] in ";\n":
                break
            end = self._word_end(i, False, inner)
            if end == i:
                raise _Outside
            i = end
        out.extend(inner)
        return i + 1

    def _plain_redirects(self, i: int) -> tuple[int, int]:
        """Skip the redirections after a compound command, none holding a substitution: the
        offset after the last (``i`` for none), where a function's span ends, and the offset
        after the blanks or comment that follow it, where the list reads on."""
        while True:
            j = self._blanks(i, False, False)
            inner: list[Command] = []
            end = self._redirect(j, False, inner)
            if end is None:
                return i, j
            if inner:
                raise _Outside
            i = end

    def _redirect(self, i: int, subst: bool, inner: list[Command]) -> int | None:
        """The end of the redirection at ``i`` (operator, blanks, target word), or None when
        no redirection operator stands there; substitutions in the target add their commands
        to ``inner``. A here-document, a process substitution as target, a ``>&N`` target
        followed by a backslash-newline, or no target leave the subset."""
        text = self.text
        redirect = REDIRECT.match(text, i)
        if redirect is None:
            return None
        op = redirect.group()  # (a here-document's `<<` reads as `<` and a target that starts
        if text.startswith("(", redirect.end()):  # with `<`: it leaves the subset below)
            raise _Outside
        k = redirect.end()
        while k < self.n and text[k] in _BLANK:
            k += 1
        if op.endswith("&"):  # `>&2`, `<&0`, `2>&-`, `>& 1`: a descriptor, not a word
            target = DUP_TARGET.match(text, k)
            if not target or text.startswith("\\\n", target.end()):
                raise _Outside
            return target.end()
        if (k == self.n or text[k] == "\n" or text[k] == "#" and k > redirect.end()) \
                and not op.endswith("&") and not self.in_substitution and "\n" not in text[:i]:
            # (no target: bashlex's parser fails on the newline token, which a comment ends,
            # and says where it is from the start of the text, here the first line)
            newline = text.find("\n", k)
            raise _Refused("ParsingError: unexpected token '\\n' (position %d)"
                           % (self.n if newline < 0 else newline))
        end = self._word_end(k, subst, inner)
        if end == k or text.startswith("#", k):  # (no target: a comment)
            raise _Outside
        return end

    # ---- commands -------------------------------------------------------------------------
    def _command(self, i: int, subst: bool, out: list[Command]) -> int:
        """Read one simple command at ``i`` (not blank) into ``out``, followed by the commands
        of its substitutions; the offset after it."""
        text, n = self.text, self.n
        tokens: list[Token] = []
        inner: list[Command] = []
        docs: list[tuple[int, int, str, bool, bool]] = []  # here-documents (see ``pending``)
        first_word: str | None = None
        words = 0
        while True:
            i = _BLANKS.match(text, i).end()  # type: ignore[union-attr]  # (matches "")
            if i < n and text[i] in "\\#\n" and not (docs and text[i] == "\n"):  # (a
                # backslash-newline, a comment; a newline inside `$(…)` unless it ends the
                # line of a here-document)
                i = self._blanks(i, subst, newlines=False)
            if i >= n:
                break
            c = text[i]
            if c in ";|\n" or c == "&" and not text.startswith("&>", i) \
                    or c == ")" and self._closes(i, subst):
                break  # (`&>`, `&>>`: a redirection)
            start = i
            if c in _REDIRECT_FIRST and not text.startswith(("<(", ">("), i):
                doc = _HEREDOC.match(text, i)
                if doc is not None and not self.process:
                    if subst and (self.compound or doc.group(1) or docs or self.pending):
                        raise _Outside  # (see ``_substitution_body``)
                    docs.append((doc.end(), start, doc.group(2), bool(doc.group(1)),
                                 self._waits(doc.end(), doc.group(2), docs)))
                    tokens.append(_new_token((start, doc.end(), True, True)))
                    i = doc.end()
                    continue
                end = self._redirect(i, subst, inner)
                if end is not None:
                    tokens.append(_new_token((start, end, True, False)))
                    i = end
                    continue
            if c == "[" and text.startswith(("[[ ", "[[\t", "[[\n"), i):
                if first_word is not None or tokens:  # (bashlex's mask rewrites a `[[` word
                    raise _Outside  # anywhere)
                if text[i + 2] != "\n":
                    i = self._conditional(i, subst, tokens, inner)
                    words += 1
                    break
            # (a word of plain characters only, as most are, ends where its plain run does, as
            # :meth:`_word_end` finds; its setup matters only to a word's substitutions)
            end = _PLAIN.match(text, i).end()  # type: ignore[union-attr]  # (matches "")
            if end == i or end < n and text[end] not in _WORD_END:
                end = self._word_end(i, subst, inner)
            if end == i:
                raise _Outside
            if first_word is None:
                if not _assignment_like(text, i, end):
                    first_word = text[i:end]
                elif len(tokens) > words:  # (bashlex reads `NAME=…` after a redirection as
                    raise _Outside  # the command's name)
            tokens.append(_new_token((start, end, False, False)))
            words += 1
            i = end
        if not tokens or first_word in RESERVED:  # (redirections alone make a command)
            raise _Outside
        if docs:
            self.pending += [(out, len(out), *doc) for doc in docs]
        out.append(_new_command((tuple(tokens), subst, False, self.function, ())))
        out.extend(inner)
        return i

    def _waits(self, i: int, delim: str, docs: list) -> bool:
        """Whether the body of the here-document whose delimiter ``delim`` ends at ``i`` waits
        for the newline token after next: inside a compound command bashlex takes note of the
        here-document only when it reads the token after the delimiter (a top-level list
        gathers the bodies as it ends), so when that token is the newline the next line is
        read as commands and the body starts after it (bashlex/parser.py, heredoc.py). That
        line is read here as it stands; the masks take it for part of the body, so one they
        might rewrite or this reader reads as they would have rewritten it
        (:func:`_masked_as_code`) or equal to the delimiter leaves the subset, as does a second
        here-document of the command."""
        text = self.text
        rest = _BLANKS.match(text, i).end()  # type: ignore[union-attr]  # (matches "")
        if not self.compound or not text.startswith(("\n", "#"), rest):
            return False
        if docs:
            raise _Outside
        line_start = text.find("\n", rest) + 1
        line_end = text.find("\n", line_start) if line_start else -1
        line = text[line_start:line_end if line_end >= 0 else self.n]
        after_end = text.find("\n", line_end + 1) if line_end >= 0 else -1
        after = text[line_end + 1:after_end if after_end >= 0 else self.n] if line_end >= 0 else ""
        if not line_start or line.lstrip("\t") == delim or line == delim \
                or _masked_as_code(line, after):
            raise _Outside
        return True

    def _conditional(self, i: int, subst: bool, tokens: list[Token],
                     inner: list[Command]) -> int:
        """``[[ WORDS ]]`` at ``i`` with plain words only (no ``&&``, ``||``, ``<``, ``>``,
        ``(``, ``=~``, escapes): bashlex reads it, behind its mask, as ``[`` WORDS ``]`` with
        the ``[`` at the first bracket and the ``]`` at the last, so its tokens are those."""
        tokens.append(_new_token((i, i + 1, False, False)))
        i += 2
        while True:
            i = self._blanks(i, subst, False)
            if i >= self.n or self.text[i] in ";&|\n":
                raise _Outside
            end = self._word_end(i, subst, inner)
            if end == i:
                raise _Outside
            word = self.text[i:end]
            if word == "]]":
                tokens.append(_new_token((end - 1, end, False, False)))
                return end
            if word == "=~":  # bashlex's mask rewrites it
                raise _Outside
            tokens.append(_new_token((i, end, False, False)))
            i = end

    def _word_end(self, i: int, subst: bool, inner: list[Command]) -> int:
        """End of the word starting at ``i`` (``i`` itself for none); substitutions in it add
        their commands to ``inner``.

        bashlex reads single quotes its own way (bashlex/subst.py): a word that starts and
        ends with ``'`` holds no command at all (``'a'$(b)'c'`` neither), and in any other
        word the text between single quotes is read as if unquoted (``x='$(b)'`` runs ``b``);
        a word where that makes a difference leaves the subset."""
        text, n = self.text, self.n
        self.continued = 0
        if not self.in_substitution:
            self.pairs = []
        start = i
        commands = len(inner)
        code_in_quotes = False  # `$(` or a backquote inside single quotes
        plain = _PLAIN.match
        while True:
            i = plain(text, i).end()  # type: ignore[union-attr]  # (matches "")
            if i >= n:
                break
            c = text[i]
            if c in _WORD_END:
                break
            if c == "'":
                j = text.find("'", i + 1)
                if j < 0:
                    raise _Outside
                if _QUOTED_CODE.search(text, i, j) is not None:
                    if text[start] == "'":  # (the word may hold no command at all)
                        code_in_quotes = True
                    else:
                        self._quoted_code(i, j, inner)
                i = j + 1
            elif c == '"':
                i = self._double_quoted(i + 1, inner)
            elif c == "$" or c == "`":
                if text[start] == "~" and (c == "`" or text.startswith("$(", i)) \
                        and "/" not in text[start:i]:
                    raise _Outside  # (bashlex reads `~$(a)/` as one tilde prefix: no commands)
                i = self._dollar(i, False, inner) if c == "$" else self._backquoted(i, inner)
            elif c == ")" and (subst or self.subshells):
                break
            elif c in "<>" and not text.startswith("(", i + 1) and not text[start:i].isdigit():
                break  # a redirection follows (after digits only, `2>`, it starts there)
            elif c in "<>" and i == start:
                i = self._process_substitution(i)
            elif c == "(" and ARRAY_HEAD.fullmatch(text, start, i) \
                    and not text.startswith("((", i):
                i = self._array_end(i)
            elif c == "\\" and i + 1 < n and text[i + 1] != "\n":
                i += 2
            elif c == "\\" and i > start and text.startswith(("\\\n ", "\\\n\t"), i) \
                    and not self.in_substitution:
                i += 2  # (bashlex's word holds the backslash-newline that ends it)
                break
            else:  # (`<(`, `>(`, `N>` as a target, a `(` or `)` not read above, a backslash
                # at the end)
                raise _Outside
        if i - start > 1 and text[start] == "'" and text[i - 1] == "'":
            if len(inner) > commands:
                raise _Outside  # (bashlex reports no command in it)
        elif code_in_quotes:
            raise _Outside  # (bashlex reads the quoted text as code)
        return i

    def _quoted_code(self, i: int, j: int, inner: list[Command]) -> None:
        """Read the text between the single quotes at ``i`` and ``j`` of a word that does not
        start with one as bashlex reads it (bashlex/subst.py, ``_expandwordinternal``): as if
        unquoted, a ``$(…)`` or backquoted command there adding its commands to ``inner``; a
        backslash escapes the next character, ``${`` runs to the next ``}``, ``"`` is skipped.
        A substitution or ``${`` not closed before ``j``, a backslash before ``j``, ``$((``,
        ``$[``, a process substitution, or a substitution holding what the masks rewrite
        (``masks.TRIGGERS``, ``&&``, ``||``: they do not look inside single quotes) leaves the
        subset."""
        text = self.text
        k = i + 1
        while True:
            m = _QUOTED_SPECIAL.search(text, k, j)
            if m is None:
                return
            k = m.start()
            c = text[k]
            if c == "\\":
                if k + 1 >= j:
                    raise _Outside
                k += 2
            elif c in "<>":
                if text.startswith("(", k + 1):
                    raise _Outside
                k += 1
            elif c == "`" or text.startswith("$(", k):
                if text.startswith("$((", k):
                    raise _Outside
                end = text.find("`", k + 1) if c == "`" else masks.match_paren(text, k + 1)
                code = text[k + 1:end]
                if not k < end < j or "&&" in code or "||" in code \
                        or any(t in code for t in masks.TRIGGERS):
                    raise _Outside
                k = self._backquoted(k, inner) if c == "`" else self._dollar(k, False, inner)
                if k != end + 1:
                    raise _Outside
            elif text.startswith("${", k):
                end = text.find("}", k + 2)
                if not k < end < j:
                    raise _Outside
                k = end + 1
            elif text.startswith("$[", k):
                raise _Outside
            else:  # (`$NAME`; `$1`, `$$`: two characters; a `$` before a blank or the quote)
                k += 2 if text[k + 1] in _SPECIAL_PARAMETER and k + 1 < j else 1

    def _double_quoted(self, i: int, inner: list[Command]) -> int:
        """Offset after the ``"`` closing the double-quoted text starting at ``i``."""
        text, n = self.text, self.n
        plain = _PLAIN_QUOTED.match
        while True:
            i = plain(text, i).end()  # type: ignore[union-attr]  # (matches "")
            if i >= n:
                raise _Outside
            c = text[i]
            if c == '"':
                return i + 1
            if c == "\\":  # `\"`, `\$`, `\\`, a backslash-newline: the next character is text
                if i + 1 >= n or text[i + 1] == "\n" and self.in_substitution:
                    raise _Outside
                self.continued += text[i + 1] == "\n"
                i += 2
                continue
            if c == "`":
                i = self._backquoted(i, inner)
                continue
            i = self._dollar(i, True, inner)  # (`$`: what the plain run stops at last)

    def _dollar(self, i: int, quoted: bool, inner: list[Command]) -> int:
        """Offset after the ``$`` at ``i`` and what it expands: ``$NAME`` reads on as plain word
        characters, a simple ``${...}`` and a ``$(list)`` whole."""
        text = self.text
        if text.startswith("${", i):
            m = BRACED.match(text, i) or (WIDE_BRACED_QUOTED if quoted else WIDE_BRACED).match(
                text, i)
            if not m:
                raise _Outside
            return m.end()
        if text.startswith("$((", i):
            return self._arith_end(i)
        if text.startswith("$(", i):
            if self.in_substitution:
                raise _Outside  # bashlex does not report the commands of a nested `$(…)`
            self.in_substitution, continued = True, self.continued
            commands, end = self.read_list(i + 2, subst=True)
            self.in_substitution, self.continued = False, continued  # (its words reset it)
            if end >= self.n or not commands:
                raise _Outside
            inner.extend(self._placed(commands))
            return end + 1
        if not quoted and text.startswith("$'", i):  # (ANSI-C quoting: bashlex reads it as
            j = text.find("'", i + 2)  # `$` and a single-quoted string)
            if j < 0 or text[j - 1] == "\\" or _QUOTED_CODE.search(text, i, j) \
                    or "${" in text[i:j]:
                raise _Outside
            return j + 1
        if not quoted and text.startswith('$"', i):
            raise _Outside
        return i + (2 if text.startswith("$$", i) else 1)  # (`$$(`: no substitution)

    def _backquoted(self, i: int, inner: list[Command]) -> int:
        """Offset after the backquoted command substitution at ``i``, its commands added to
        ``inner`` (as for ``$(…)``); one holding a newline, a ``$(…)``, another substitution
        or a backslash before ``$``, a backquote or a backslash (bash removes that backslash
        before it reads the command: bash(1), "Command Substitution"; before any other
        character the backslash stays, and the command reads as written) leaves the subset."""
        text = self.text
        j = text.find("`", i + 1)
        if j < 0 or self.in_substitution or "\n" in text[i + 1:j] \
                or "$(" in text[i + 1:j] or _BACKQUOTE_ESCAPE.search(text, i + 1, j):
            raise _Outside
        sub = _Reader(text[:j])
        sub.in_substitution, sub.function = True, self.function
        commands, end = sub.read_list(i + 1, subst=True)
        if end != j or not commands:
            raise _Outside
        inner.extend(self._placed(commands))
        return j + 1

    def _placed(self, commands: list[Command]) -> list[Command]:
        """The commands of a substitution where bashlex places them: it drops the word's
        backslash-newlines (inside double quotes, and between the words inside ``$(…)``)
        before it reads the substitutions (bashlex/tokenizer.py), so each one read before a
        token of the substitution moves it two
        characters left (``"\\<newline> $(a)"``: ``a`` one column early, over the blank). A command
        whose first word starts ``NAME=`` or ``NAME[`` there or where it stands leaves the subset
        (bashlex decides it is an assignment by its own text, the model by the text at its
        span)."""
        if not self.continued and not self.pairs:
            return commands
        text, pairs = self.text, self.pairs

        def by(i: int) -> int:
            return 2 * (self.continued + sum(p < i for p in pairs))
        placed = []
        for cmd in commands:
            first = next((t for t in cmd.tokens if not t.redirect), None)
            if cmd.heredocs and by(cmd.tokens[0].start):
                raise _Outside  # (its bodies' spans would move too)
            if first is not None and by(first.start) and any(
                    _assignment_like(text, s, first.end) or SUBSCRIPT.match(text, s)
                    for s in (first.start, first.start - by(first.start))):
                raise _Outside
            placed.append(cmd._replace(tokens=tuple(
                t._replace(start=t.start - by(t.start), end=t.end - by(t.start))
                for t in cmd.tokens)))
        return placed

    def _process_substitution(self, i: int) -> int:
        """Offset after the process substitution ``<(…)`` or ``>(…)`` starting the word at
        ``i``: the model takes no command from one (parse._Builder walks only command
        substitutions), so only where it ends matters. Its list must be one this reader reads
        inside ``$(…)`` (bashlex parses it the same way) with no ``&&``/``||`` (the masks do not
        rewrite them there, and bashlex refuses them), where a newline may follow ``|``; a word
        going on after the ``)`` leaves the subset."""
        text = self.text
        end = masks.match_paren(text, i + 1)
        if end < 0 or self.in_substitution or "&&" in text[i:end] or "||" in text[i:end] \
                or not (end + 1 == self.n or text[end + 1] in " \t\n;&|)") \
                or text[i:end].rstrip(_BLANK).endswith(";"):  # (bashlex fails on `<(a;)`)
            raise _Outside
        sub = _Reader(text[:end])
        sub.in_substitution = sub.process = True
        commands, stop = sub.read_list(i + 2, subst=True)
        if stop != end or not commands:
            raise _Outside
        return end + 1

    def _arith_end(self, i: int) -> int:
        """Offset after the ``$((…))`` at ``i``: from its second ``(`` to the parenthesis that
        matches its first, as the arithmetic mask reads it (masks.spans), which bashlex then
        sees as one opaque ``$___`` part; no quotes, escapes, backquotes, ``#`` or newlines
        inside, no command substitution."""
        end = masks.match_paren(self.text, i + 1)
        if end < 0 or not _no_code(self.text, i, end) or "$(" in self.text[i + 3:end].replace(
                "$((", ""):
            raise _Outside
        return end + 1

    def _array_end(self, i: int) -> int:
        """Offset after the ``( … )`` of an array assignment whose ``(`` is at ``i``: the array
        mask (masks.m_array) turns it into one single-quoted string for bashlex, so it reports
        no command inside and the word ends at the matching ``)`` (masks.match_paren, the
        mask's own reading)."""
        end = masks.match_paren(self.text, i)
        if end < 0 or "$(" in self.text[i:end] or "`" in self.text[i:end]:
            raise _Outside  # bashlex reads a `$(…)` inside an assignment's quotes as a command
        return end + 1


#: what this reader reads only as the masks rewrite it (``[[`` as ``[``, ``((``, ``$((`` and
#: ``$[`` as opaque, an array value as a quoted word, a quoted here-document's delimiter), see
#: :func:`_masked_as_code`
_MASKED_CONSTRUCTS = ("((", "$[", "[[", "=(", "<<")


def _masked_as_code(line: str, after: str) -> bool:
    """Whether the line after a here-document's operator that bashlex reads as commands (see
    ``_Reader._waits``), followed by the line ``after``, may read differently here and in the
    text bashlex is given: the masks take the line for part of the body, so their span-based
    rewrites (shell/masks.spans) skip it, and it reaches bashlex as written unless a
    line-based mask rewrites it (``m_while_newline_do``: a ``while``/``until`` line before a
    ``do`` line; ``m_arith``'s second pass: ``$((``); this reader reads some constructs
    (:data:`_MASKED_CONSTRUCTS`, ``&&``/``||`` inside ``$(…)``) as they read once masked.
    ``time``, ``case``, ``select`` and ``coproc`` as command names leave the subset anyway, and
    mean nothing inside a word."""
    return any(t in line for t in _MASKED_CONSTRUCTS) \
        or "$(" in line and ("&&" in line or "||" in line) \
        or masks.DO_LINE.match(line) is not None \
        or ("while" in line or "until" in line) and masks.DO_LINE.match(after) is not None


def _substitution_body(body: str, command: Command) -> None:
    """Check the body of a here-document inside ``$(…)`` (``X=$(cat <<EOF`` newline body
    newline ``EOF`` newline ``)``, its command at the top level: not inside a compound command,
    one plain ``<<`` here-document and no other waiting, see ``_Reader._command``): bashlex
    reads such a body as it reads one outside, so its span is the model's, but it reads
    commands inside it (``$(…)``, backquotes) and joins lines at a backslash-newline where
    this reader does not follow it, and it fails on a command of no word
    (``$(<<EOF`` newline…): each of those leaves the subset."""
    if "$(" in body or "`" in body or "\\\n" in body \
            or all(t.redirect for t in command.tokens):
        raise _Outside


def _no_code(text: str, s: int, e: int) -> bool:
    """Whether ``text[s:e]`` holds no quote, backslash, backquote, newline or ``#``: nothing
    that could make the masks and this reader disagree about where a construct ends."""
    return not any(c in "'\"\\`\n#" for c in text[s:e])


#: letters, digits and underscores (as ``str.isalnum`` sees them, ``_``), then ``=`` or ``+=``
_NAME_EQUALS = re.compile(r"\w+\+?=")


def _assignment_like(text: str, s: int, e: int) -> bool:
    """Whether the word ``text[s:e]`` starts with ``NAME=`` or ``NAME+=`` (a prefix assignment)."""
    return _NAME_EQUALS.match(text, s, e) is not None and not text[s].isdigit()


#: ``$NAME``, a :data:`BRACED` ``${…}`` (``${X:-1}``) and a ``$`` that expands no command
#: (``$1``, ``$@``)
_PLAIN_DOLLAR = r"""(?:%s|\$(?![({'"]))""" % BRACED.pattern
#: a plain word: characters that stand for themselves, the expansions of
#: :data:`_PLAIN_DOLLAR`, single quotes holding no command (no ``$(``, ``$[``, backquote) and
#: double quotes holding those expansions; no operator, redirection, comment, backslash,
#: parenthesis or newline
_ONE_WORD = re.compile(r"""(?:[^\s;&|'"$`()<>\\#]++|%s|'(?:[^'\n`$]|\$(?![(\[]))*+'"""
                       r"""|"(?:[^"\\`$\n]++|%s)*+")++""" % (_PLAIN_DOLLAR, _PLAIN_DOLLAR))
#: a chunk that is one line holding one simple command of plain words (``srun python train.py
#: --lr 1``, ``cd "$WORK/${RUN}"``, ``export X=1``), maybe a comment after them:
#: :func:`_one_command` reads it
_ONE_COMMAND = re.compile(r"[ \t]*+(?:(?:%s)[ \t]*+)++(?P<comment>(?<=[ \t])#[^\n]*+)?"
                          % _ONE_WORD.pattern)


def read(text: str) -> Reading | None:
    """The simple commands and function definitions of a chunk's ``text`` in bashlex's walk
    order, or the error bashlex raises on it (:attr:`Reading.refusal`), or ``None`` when the
    text leaves the subset this module reads (see the module docstring; it may still be valid
    bash, which bashlex then reads)."""
    one = _ONE_COMMAND.fullmatch(text)
    if one is not None and "[[" not in text:
        comment = one.start("comment")
        reading = _one_command(text, comment if comment >= 0 else len(text))
        if reading is not None:
            return reading
    return read_any(text)


def _one_command(text: str, end: int) -> Reading | None:
    """:func:`read_any`'s reading of a chunk :data:`_ONE_COMMAND` matches, its words ending
    before ``end``: one command whose tokens are its words (:data:`_ONE_WORD`); None when its
    name (the first word that is not an assignment) is a reserved word (``time a``, ``{ a``,
    ``! a``: for :func:`read_any`)."""
    tokens = tuple([_new_token((m.start(), m.end(), False, False))
                    for m in _ONE_WORD.finditer(text, 0, end)])
    for t in tokens:
        if not _assignment_like(text, t.start, t.end):
            if text[t.start:t.end] in RESERVED:
                return None
            break
    return Reading((_new_command((tokens, False, False, None, ())),), ())


def read_any(text: str) -> Reading | None:
    """:func:`read` by the reader of every shape this module reads (the reference for
    :func:`_one_command`: tests/test_fast_reader.py compares the two)."""
    reader = _Reader(text)
    try:
        commands, end = reader.read_list(0, subst=False)
    except (_Outside, RecursionError):
        return None
    except _Refused as refused:
        return Reading((), (), reader.refusal or str(refused))  # (the first error raises)
    if end != len(text) or not commands:
        return None
    return Reading(tuple(commands), tuple(reader.functions), reader.refusal)
