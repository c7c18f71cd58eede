"""Inline suppressions: ``# sbatch-lint: disable=…``, ``enable=…`` and ``disable-file=…``.

This module owns them whole: reading them from the shell model's real comments (a ``#`` that
bash reads as a comment; never a heredoc body or a string), deciding what each covers, applying
them to a lint's findings (with SB001 for one that covers nothing or names no rule), and the
edits that add or merge one (the editor's "disable for this line/file" and ``--add-noqa``).

What a comment covers (DESIGN.md, "Configuration"):

- ``disable=`` on a line of its own covers the next command at its nesting level (continuation
  lines and here-document bodies included; comment lines in between are skipped, a ``#SBATCH``
  line counts as a command), unless a matching ``enable=`` follows at the same nesting level:
  then it covers every finding that starts between the two comments.
- ``disable=`` after code on the same line covers the command on that line.
- ``disable-file=`` covers the file.

Each takes a comma-separated list of codes (``SB201``), code prefixes (``SB2``) or rule names
(``torchrun-per-task``); anything after the list (a reason) is ignored.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .config import Config
from .diagnostics import Diagnostic, Edit
from .directives import LOOKALIKE
from .rules import RULES, code_of, finding
from .shell import chunker
from .shell.model import Script
from .source import Source

#: ``# sbatch-lint: KIND=ITEMS`` inside a comment's text
COMMENT = re.compile(r"#\s*sbatch-lint:\s*(disable-file|disable|enable)\s*=\s*"
                     r"([A-Za-z0-9][\w-]*(?:[ \t]*,[ \t]*[A-Za-z0-9][\w-]*)*)")
ITEM = re.compile(r"[A-Za-z0-9][\w-]*")
#: what every comment :data:`COMMENT` matches holds (a comment has no line break): a text
#: without it has no suppression
_MARKER = "sbatch-lint:"
#: codes an inline comment never silences: an unused suppression, a bug in sbatch-lint
UNSUPPRESSIBLE = ("SB001", "SB003")


@dataclass(frozen=True)
class Item:
    """One name in a suppression: as typed, the code prefix it stands for, and its span."""

    typed: str
    prefix: str
    start: int
    end: int

    @property
    def known(self) -> bool:
        """Whether the name stands for at least one rule."""
        return any(code.startswith(self.prefix) for code in RULES)


@dataclass(frozen=True)
class Suppression:
    """One ``sbatch-lint:`` comment. ``start``/``end`` span the directive text (from
    ``sbatch-lint:`` to the last item), ``items_end`` is where a merged item goes, ``line`` the
    0-based line, ``alone`` whether the comment is the whole line, ``level`` the nesting level
    (the index of the enclosing top-level chunk, None between commands)."""

    kind: str
    items: tuple[Item, ...]
    start: int
    end: int
    line: int
    alone: bool
    level: int | None


@dataclass(frozen=True)
class _Scope:
    """What one item of one comment covers: lines ``first``..``last`` (or offsets, for an
    enable range), for findings whose code starts with ``item.prefix``."""

    item: Item
    kind: str
    first: int
    last: int
    by_offset: bool = False


def read(source: Source, script: Script) -> list[Suppression]:
    """Every suppression comment of the script, in text order (the batch script's own
    comments: ``script`` is the model :func:`~sbatch_lsp.shell.parse.parse_script` built)."""
    if _MARKER not in source.text:
        return []  # (most scripts: no comment can match, and the chunk index is not built)
    chunk_at = _chunk_index(script)
    out = []
    for start, end in script.comments:
        text = source.text[start:end]
        m = COMMENT.search(text)
        if m is None:
            continue
        base = start + m.start(2)
        items = tuple(Item(i.group(0), code_of(i.group(0)), base + i.start(), base + i.end())
                      for i in ITEM.finditer(m.group(2)))
        line = source.line_of(start)
        alone = source.text[source.line_starts[line]:start].strip() == ""
        out.append(Suppression(m.group(1), items, start + m.start(), start + m.end(),
                               line, alone, chunk_at.get(line)))
    return out


def apply(source: Source, script: Script, diags: list[Diagnostic],
          config: Config) -> list[Diagnostic]:
    """``diags`` without the findings a suppression covers, plus an SB001 (when enabled) for
    each item that names no rule (in the user's spelling), covers nothing, or closes no range."""
    sups = read(source, script)
    if not sups:
        return diags
    scopes, problems = _scopes(source, script, sups)
    used: set[int] = set()
    kept = []
    for d in diags:
        line = source.line_of(d.start)
        hit = None
        if d.code not in UNSUPPRESSIBLE:
            hit = next((k for k, s in enumerate(scopes) if d.code.startswith(s.item.prefix) and
                        s.first <= (d.start if s.by_offset else line) <= s.last), None)
        if hit is None:
            kept.append(d)
        else:
            used.add(hit)
    if config.enabled("SB001"):
        for k, s in enumerate(scopes):
            if k not in used and s.item.known:
                where = "in this file" if s.kind == "disable-file" else \
                    "between it and its enable" if s.by_offset else "on the command it covers"
                kept.append(finding("SB001", s.item.start, s.item.end,
                                    f"`{s.kind}={s.item.typed}` suppresses nothing {where}"))
        kept += problems
    return kept


def _scopes(source: Source, script: Script,
            sups: list[Suppression]) -> tuple[list[_Scope], list[Diagnostic]]:
    """The scope of every item, and the SB001 findings for items that cannot have one."""
    scopes: list[_Scope] = []
    problems: list[Diagnostic] = []
    open_ranges: dict[tuple[int | None, str], list[tuple[Suppression, Item]]] = {}
    closed: set[int] = set()  # id() of disable items that an enable closed
    for s in sups:
        for item in s.items:
            if not item.known:
                problems.append(finding("SB001", item.start, item.end,
                                        f"`{s.kind}={item.typed}` names no rule "
                                        "(see sbatch-lint --list-rules)"))
            elif s.kind == "disable" and s.alone:
                open_ranges.setdefault((s.level, item.prefix), []).append((s, item))
            elif s.kind == "enable":
                pending = open_ranges.get((s.level, item.prefix))
                if not pending:
                    problems.append(finding("SB001", item.start, item.end,
                                            f"`enable={item.typed}` follows no "
                                            f"`disable={item.typed}` at this level"))
                    continue
                opener, opened = pending.pop()
                closed.add(id(opened))
                scopes.append(_Scope(opened, "disable", opener.start, s.start, by_offset=True))
    for s in sups:
        if s.kind == "enable":
            continue
        first, last = (0, source.line_count) if s.kind == "disable-file" else \
            _covered_lines(source, script, s)
        scopes += [_Scope(item, s.kind, first, last) for item in s.items
                   if item.known and id(item) not in closed]
    return scopes, problems


def _covered_lines(source: Source, script: Script, s: Suppression) -> tuple[int, int]:
    """First and last 0-based line that a ``disable=`` comment (not a range) covers."""
    chunks = script.chunks
    if not s.alone:  # after code: the command on this line
        if s.level is not None:
            return chunks[s.level].start_line, chunks[s.level].end_line
        return s.line, s.line
    target = s.line + 1
    while target < source.line_count and _is_comment_line(source.line_text(target)):
        target += 1
    if s.level is None:  # between commands: the next chunk, or a directive line
        ch = next((c for c in chunks if c.start_line <= target <= c.end_line), None)
        return (ch.start_line, ch.end_line) if ch is not None else (target, target)
    # inside a compound command: the next command at this level, read as the chunker reads
    # the top level (``if … fi`` stays one)
    enclosing = chunks[s.level]
    if target > enclosing.end_line:
        return target, target
    rest = "\n".join(source.line_text(ln) for ln in range(target, enclosing.end_line + 1))
    inner = chunker.split_chunks(rest)
    if not inner:
        return target, target
    return target + inner[0].start - 1, target + inner[0].end - 1


def _is_comment_line(text: str) -> bool:
    """A comment line that a ``disable=`` above skips (``#SBATCH`` and look-alike directive
    lines are what it covers instead)."""
    return text.strip().startswith("#") and not text.startswith("#SBATCH") and \
        not LOOKALIKE.match(text)


def _chunk_index(script: Script) -> dict[int, int]:
    """0-based line -> index of the top-level chunk holding it."""
    out: dict[int, int] = {}
    for k, ch in enumerate(script.chunks):
        for ln in range(ch.start_line, ch.end_line + 1):
            out.setdefault(ln, k)
    return out


# ------------------------------------------------------------------------- adding them


def anchor_line(source: Source, script: Script | None, line: int) -> int:
    """The line above which a ``disable=`` comment for a finding on ``line`` goes: the first
    line of the top-level command holding it (a comment inside a continued command or a
    here-document would break it or be data), else ``line`` itself (a directive line)."""
    if script is not None:
        for ch in script.chunks:
            if ch.start_line <= line <= ch.end_line:
                return ch.start_line
    return line


def add_line_edit(source: Source, script: Script | None, line: int,
                  codes: Iterable[str]) -> Edit | None:
    """An edit that disables ``codes`` for the command holding ``line``: merged into a
    ``disable=`` comment that is the whole line above it, or a new comment line with the
    command's indentation. None when the command starts on line 0 (a comment cannot go above
    the ``#!`` line: use :func:`add_file_edit`)."""
    at_line = anchor_line(source, script, line)
    if at_line == 0:
        return None
    wanted = _ordered(codes)
    above = _own_comment(source, script, at_line - 1, "disable")
    if above is not None:
        return _merge(above, wanted)
    own = source.line_text(at_line)
    at = source.line_starts[at_line]
    indent = own[:len(own) - len(own.lstrip())]
    return Edit(at, at, f"{indent}# sbatch-lint: disable={','.join(wanted)}\n")


def add_file_edit(source: Source, script: Script | None, codes: Iterable[str]) -> Edit | None:
    """An edit that disables ``codes`` for the whole file: merged into the first
    ``disable-file=`` comment, or a new one below the ``#!`` line (at the top without one);
    None when that comment already covers them."""
    wanted = _ordered(codes)
    if script is not None:
        existing = next((s for s in read(source, script) if s.kind == "disable-file"), None)
        if existing is not None:
            return _merge(existing, wanted)
    text = source.text
    if text.startswith("#!"):
        at = source.line_starts[1] if source.line_count > 1 else len(text)
    else:
        at = 0
    prefix = "\n" if at == len(text) and at > 0 and not text.endswith("\n") else ""
    return Edit(at, at, f"{prefix}# sbatch-lint: disable-file={','.join(wanted)}\n")


def _own_comment(source: Source, script: Script | None, line: int,
                 kind: str) -> Suppression | None:
    """The ``kind`` suppression that is the whole of ``line``, if any."""
    if script is None:
        return None
    return next((s for s in read(source, script) if s.line == line and s.alone and
                 s.kind == kind), None)


def _merge(s: Suppression, codes: list[str]) -> Edit | None:
    """An edit appending to ``s`` the codes it does not already cover; None when it covers
    them all."""
    new = [c for c in codes if not any(c.startswith(i.prefix) for i in s.items)]
    if not new:
        return None
    return Edit(s.end, s.end, "," + ",".join(new))


def _ordered(codes: Iterable[str]) -> list[str]:
    return sorted(set(codes))


def add_noqa(source: Source, script: Script | None, diags: list[Diagnostic]) -> list[Edit]:
    """Edits that suppress every finding in ``diags`` (a lint's result): one ``disable=``
    comment above each top-level command or directive line that holds findings (merged into
    one already there), ``disable-file=`` for findings on the first line. SB001 and SB003 are
    left alone (an unused suppression and a bug are never silenced). Edits do not overlap."""
    by_line: dict[int, set[str]] = {}
    file_codes: set[str] = set()
    for d in diags:
        if d.code in UNSUPPRESSIBLE:
            continue
        at = anchor_line(source, script, source.line_of(d.start))
        if at == 0:
            file_codes.add(d.code)
        else:
            by_line.setdefault(at, set()).add(d.code)
    first = add_file_edit(source, script, file_codes) if file_codes else None
    edits = [first] if first is not None else []
    for at in sorted(by_line):
        e = add_line_edit(source, script, at, by_line[at])
        if e is not None:
            edits.append(e)
    return _joined(edits)


def _joined(edits: list[Edit]) -> list[Edit]:
    """Insertions at one offset (the file comment and a line comment both below the ``#!``
    line) become one edit, in the order given; the result is sorted and does not overlap."""
    out: list[Edit] = []
    for e in sorted(edits, key=lambda e: e.start):  # stable: keeps the given order at one offset
        if out and out[-1].start == out[-1].end == e.start == e.end:
            out[-1] = Edit(e.start, e.end, out[-1].new_text + e.new_text)
        else:
            out.append(e)
    return out
