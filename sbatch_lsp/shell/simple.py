"""One-line simple commands, split without a parser.

Most lines of a job script are simple commands: ``export NCCL_DEBUG=INFO``, ``cd "$WORKDIR"``,
``echo "start: $(date)"`` (not this one: it has a substitution), ``srun python train.py --lr 3e-4``.
For a line with no control operator, substitution, escape, heredoc, grouping or reserved word, bash
splits words at unquoted blanks and nothing else (bash(1), DEFINITIONS and SHELL GRAMMAR), so the
command's words can be found by a scan of quotes, blanks and redirections. bashlex takes about
0.15 ms for each such line; this scan takes a few microseconds.

``split`` returns ``None`` for anything outside that subset, and the caller hands the line to
bashlex as before. tests/test_simple.py checks, against bashlex, that both give the same model on
every line ``split`` accepts (on the corpus of real scripts too: benchmarks/corpus_run.py).
"""
from __future__ import annotations

import re
from typing import NamedTuple

#: words that start a compound command or change how the line parses when they come first
RESERVED = {"if", "then", "elif", "else", "fi", "for", "while", "until", "do", "done", "case",
            "esac", "select", "function", "time", "coproc", "!", "[[", "]]", "{", "}", "in"}
#: a redirection operator at the start of a token: ``>``, ``>>``, ``2>``, ``&>``, ``>&2``, ``<``
REDIRECT = re.compile(r"(?:\d*(?:>>|>\||<>|>&|<&|>|<)|&>>?)")
DUP_TARGET = re.compile(r"(?:\d+|-)(?=[ \t]|$)")
#: characters that end the simple subset anywhere outside single quotes
SPECIAL = frozenset("\\`;&|()<>{}")
#: the inside of ``${...}`` kept in the subset: a name with an optional operator and plain word
#: ``A[1]=x``: bash reads an array-element assignment, bashlex a word; left to bashlex
SUBSCRIPT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[")
BRACED = re.compile(r"\$\{[A-Za-z_#!][A-Za-z0-9_]*(?:[:#%/^,@*?+=-][^\s'\"{}\\`$]*)?\}")


class Token(NamedTuple):
    """A word or a redirection of a simple command; offsets into the line, end exclusive."""

    start: int
    end: int
    redirect: bool


def split(line: str) -> list[Token] | None:
    """Split one line holding a simple command into tokens, or return ``None``.

    ``None`` means the line is outside the subset this module reads (it may still be valid bash):
    more than one line, control operators, substitutions, escapes, heredocs, brace groups,
    reserved words first, unbalanced quotes. A ``#`` at the start of a token ends the line
    (a comment). Redirections are tokens with ``redirect=True`` covering operator and target.
    """
    if "\n" in line:
        return None
    tokens: list[Token] = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c in " \t":
            i += 1
            continue
        if c == "#":
            break
        start = i
        redirect = REDIRECT.match(line, i)
        if redirect:
            op = redirect.group()
            if op.startswith("<<") or line.startswith("(", redirect.end()):
                return None
            i = redirect.end()
            if op.endswith("&") and op != "&":
                target = DUP_TARGET.match(line, i)
                if not target:
                    return None
                tokens.append(Token(start, target.end(), True))
                i = target.end()
                continue
            while i < n and line[i] in " \t":
                i += 1
            end = _word_end(line, i)
            if end is None or end == i:
                return None
            tokens.append(Token(start, end, True))
            i = end
            continue
        end = _word_end(line, i)
        if end is None or SUBSCRIPT.match(line, i):
            return None
        tokens.append(Token(start, end, False))
        i = end
    words = [line[t.start:t.end] for t in tokens if not t.redirect]
    if not words or words[0] in RESERVED:
        return None
    return tokens


def _word_end(line: str, i: int) -> int | None:
    """End of the word starting at ``i`` (``i`` itself for none), or ``None`` outside the subset."""
    n = len(line)
    while i < n:
        c = line[i]
        if c in " \t":
            return i
        if c == "'":
            j = line.find("'", i + 1)
            if j < 0:
                return None
            i = j + 1
        elif c == '"':
            j = line.find('"', i + 1)
            if j < 0:
                return None
            inner = line[i + 1:j]
            if "\\" in inner or "`" in inner or not _plain_dollars(inner):
                return None
            i = j + 1
        elif c == "$":
            after = _after_dollar(line, i)
            if after is None:
                return None
            i = after
        elif c in SPECIAL:
            return None
        else:
            i += 1
    return i


def _after_dollar(text: str, i: int, quoted: bool = False) -> int | None:
    """Offset after the ``$`` at ``i`` and what it expands (``$NAME`` reads on as plain word
    characters, a simple ``${...}`` whole), or ``None`` for a substitution or ``${...}`` outside
    the subset; unquoted, ``$'...'`` and ``$"..."`` are outside it too."""
    if text.startswith("${", i):
        m = BRACED.match(text, i)
        return m.end() if m else None
    if text.startswith("$(", i) or not quoted and text.startswith(("$'", '$"'), i):
        return None
    return i + 1


def _plain_dollars(text: str) -> bool:
    """True if every ``$`` in double-quoted ``text`` starts a plain ``$NAME`` or simple ``${...}``."""
    k = text.find("$")
    while k >= 0:
        end = _after_dollar(text, k, quoted=True)
        if end is None:
            return False
        k = text.find("$", end)
    return True
