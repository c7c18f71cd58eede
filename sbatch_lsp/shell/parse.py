"""Build the shell model: chunks, bashlex behind masks, tree-sitter-bash as the fallback.

notes/parsing.md §7: bashlex per top-level chunk behind the line-preserving masks covers 99.8%
of chunks of 1,255 real scripts; tree-sitter-bash reads the rest of the bash-valid ones. Every
exception a parser raises is caught; a chunk that no parser reads is recorded (SB002).
"""
from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache
from itertools import accumulate
from typing import Any, NamedTuple

from . import bashlex_table, chunker, fast, generated, masks, sourced
from .fragments import Fragment

from .model import (
    CONDITIONAL,
    UNQUOTED,
    Assignment,
    Body,
    Chunk,
    Command,
    Heredoc,
    Redirect,
    Script,
    Word,
    allexport_toggles,
    sort_commands,
)
from .words import TextMap, expand_for_shell, expand_heredoc, scan_word

bashlex_table.install()
import bashlex  # noqa: E402  (after install(): bashlex then skips building its parse table)
import bashlex.subst  # noqa: E402


def _refuse_unclosed_brace(expand: Callable) -> Callable:
    """bashlex 0.18's ``subst._paramexpand`` wrapped so that a ``${`` with no ``}`` after it
    in the word raises :class:`bashlex.errors.ParsingError` (the chunk goes to tree-sitter)
    instead of looping for ever: bashlex takes ``string.find('}')`` (-1) as the end and restarts
    the word at 0 (``X='${a'``, where it expands inside single quotes). Only words that hung
    change; every other word is expanded by bashlex as before."""
    def guarded(parserobj, string: str, sindex: int):
        if string.startswith("${", sindex) and string.find("}", sindex + 2) < 0:
            raise bashlex.errors.ParsingError("bad substitution: no closing '}'", string, sindex)
        return expand(parserobj, string, sindex)
    return guarded


bashlex.subst._paramexpand = _refuse_unclosed_brace(bashlex.subst._paramexpand)

ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")
#: a word before a command's name that is an assignment as bashlex reads one: ``NAME=`` or
#: ``NAME+=`` (:data:`ASSIGN` without an index); ``A[1]=x`` is a word to bashlex (the command's
#: name), so the fast path's model takes it as one too
PREFIX_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
DECLARE = {"export", "declare", "typeset", "local", "readonly"}
#: a redirection's descriptor number and operator, and the blanks before its target
REDIRECT_HEAD = re.compile(r"(\d*)(>>|>\||<>|>&|<&|&>>|&>|<<<|>|<)[ \t]*")
SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
#: the last letter of every name in SHELLS: a word that ends otherwise names no shell (a quick
#: test for most words: an index, cheaper than a slice or ``str.endswith``, which parses its
#: arguments the slow way) (tests/test_place_shortcuts.py checks it)
SHELL_LAST = "h"
#: commands that run their arguments as a command: an unquoted ``$CMD`` among their arguments
#: is a command line (``srun $LAUNCHER train.py``); elsewhere it is data (``echo $LAUNCHER``)
RUNNERS = {"srun", "exec", "time", "nohup", "env", "numactl", "taskset", "stdbuf", "nice",
           "timeout", "command", "singularity", "apptainer", "uv", "conda", "nsys", "xargs",
           "mpirun", "mpiexec", "sudo", "chrt", "ionice", "mamba", "micromamba"}
MAX_BASHLEX_CHUNK = 40_000  # characters; longer chunks go straight to tree-sitter
MAX_NESTING = 4
#: chunks whose readings the chunk cache keeps (least recently used go first): the chunks of
#: some 50 open documents of a few hundred lines, or a few long ones
CHUNK_CACHE_SIZE = 8192


@lru_cache(maxsize=1)
def _ts_parser():
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def tree_sitter_parse(text: str) -> tuple[Any, Callable[[int], int]]:
    """tree-sitter-bash's tree of ``text`` (its root node) and the conversion of its byte
    offsets to character offsets into ``text``."""
    data = text.encode("utf-8")
    root = _ts_parser().parse(data).root_node
    if len(data) == len(text):
        return root, int
    # byte k belongs to the character whose first byte is the last one at or before k: the
    # running count of first bytes (every byte but UTF-8's continuation bytes 0x80-0xBF) less one
    idx = list(accumulate(data.translate(_FIRST_BYTES), initial=-1))
    idx[0:1] = []
    idx.append(len(text))
    return root, idx.__getitem__


#: bytes.translate table: 1 for a byte that starts a UTF-8 character, 0 for a continuation byte
_FIRST_BYTES = bytes(0 if 0x80 <= b <= 0xBF else 1 for b in range(256))


class ChunkReading(NamedTuple):
    """What the parsers make of one chunk's text, before it is placed in a script: the fast
    path's commands (:mod:`.fast`), else bashlex's nodes (offsets relative to the chunk), else
    why not."""

    commands: fast.Reading | None
    nodes: tuple | None
    mask_error: str | None  # a mask raised (a bug, SB003); bashlex was not tried
    parse_error: str | None  # bashlex refused the chunk (tree-sitter is tried next)


@lru_cache(maxsize=CHUNK_CACHE_SIZE)
def read_chunk(chunk_text: str, read_simple: bool = True) -> ChunkReading:
    """The chunk cache: :class:`ChunkReading` of ``chunk_text`` (a top-level chunk, carriage
    returns already blanked), memoised by its text. A pure function of the text: the fast
    reader (on the text, else on the masked text bashlex would be given), the masks and
    bashlex see nothing else, and positions are relative to the chunk, so an edit re-reads
    only the chunks whose text it changed (the server lints every version of a document
    through here). Callers must not mutate what it returns (bashlex's nodes are
    shared between hits)."""
    commands = fast.read(chunk_text) if read_simple else None
    if len(chunk_text) > MAX_BASHLEX_CHUNK:
        # (a here-document in a chunk this long went to tree-sitter before the fast reader
        # read any; it still does)
        if commands is None or commands.refusal or any(c.heredocs for c in commands.commands):
            return ChunkReading(None, None, None, None)
    if commands is not None and commands.refusal is None:
        return ChunkReading(commands, None, None, None)
    try:
        masked = masks.apply_all(chunk_text)
    except masks.MaskError as mask_error:
        return ChunkReading(None, None, str(mask_error), None)
    if len(masked) != len(chunk_text):
        masked = chunk_text
    if read_simple and masked != chunk_text:
        # bashlex reads the masked text (a `case` as a `{ … }` group, `(( … ))` as `:`): where
        # the fast path reads that text, its reading is bashlex's (tests/test_fast_reader.py)
        commands = fast.read(masked)
    if commands is not None and commands.refusal is None:
        return ChunkReading(commands, None, None, None)
    if commands is not None and (masked != chunk_text
                                 or not masks.rewrites_besides_loops(chunk_text)):
        # (a refusal holds for the text bashlex is given: the masked one, or this one when the
        # masks leave it, or only their `while` mask, which changes the length, rewrites it)
        return ChunkReading(None, None, None, commands.refusal)
    try:
        return ChunkReading(None, tuple(bashlex.parse(masked)), None, None)
    except RecursionError:
        return ChunkReading(None, None, None, "RecursionError")
    except Exception as exc:  # noqa: BLE001  (bashlex raises many types)
        return ChunkReading(None, None, None, f"{type(exc).__name__}: {exc}"[:200])


#: top-level chunks whose models the fragment memo keeps (least recently used go first): the
#: chunks of the document being typed in (a 5,000-line script has about 5,000: below the bound,
#: or every edit would miss them all) and of the documents linted last. An entry holds about
#: 2.3 KiB: the language server with 52 documents open holds 6,144 of them (typing_bench)
FRAGMENT_CACHE_SIZE = 6144
#: whether builds place memoised fragments: the language server turns it on (it lints every
#: version of a document); a one-off lint (the CLI) reads each chunk in place, which costs no
#: copy. The other memos kept across lints are asked only while it is on, for the same reason
#: (job.step_for's shapes, facts/exports._changes, facts/nodelocal._prepares_nothing,
#: secrets.carries_format, attach_nested's Command.inert)
USE_FRAGMENTS = False


def use_fragments(on: bool) -> bool:
    """Turn the fragment memo on (the language server: it lints every version of a document)
    or off; returns the previous setting. The models are the same either way
    (tests/test_incremental.py)."""
    global USE_FRAGMENTS
    before, USE_FRAGMENTS = USE_FRAGMENTS, on
    return before


@lru_cache(maxsize=FRAGMENT_CACHE_SIZE)
def chunk_fragment(chunk_text: str) -> Fragment | None:
    """The fragment memo (shell/fragments.py): the model of one top-level chunk of a script's
    own text (``chunk_text`` as it stands, carriage returns included), offsets relative to its
    start, read as :class:`_Builder` reads it in place (with ``read_simple``: a build without
    it reads in place). None when its reading met a mask bug (an SB003 message naming the
    chunk's lines: it is read in place instead). (One argument: lru_cache keys a lone string
    by itself, with its hash cached, where two arguments cost a key tuple a lookup.)"""
    builder = _Builder(TextMap(chunk_text), "batch")
    builder.reader = getattr(read_chunk, "__wrapped__", read_chunk)  # the fragment keeps it
    chunk = Chunk(0, chunk_text.count("\n"), 0, len(chunk_text), parser="none",
                  conditional=CONDITIONAL.match(chunk_text) is not None)
    builder._read(chunk, builder.text, 0)
    if builder.script.internal_errors:
        return None
    return Fragment.of(builder.script, chunk, inert_words)


class _Builder:
    """Turns one text (the script or a nested string) into a Script."""

    def __init__(self, tmap: TextMap, kind: str, read_simple: bool = True):
        self.tmap = tmap
        self.read_simple = read_simple
        self.script = Script(kind=kind)
        #: the chunk cache (looked up now: tests bypass it)
        self.reader: Callable[[str, bool], ChunkReading] = read_chunk
        # the parsers never see carriage returns (sbatch refuses them anyway; SB100 reports)
        self.text = tmap.text.replace("\r", " ")
        #: whether the commands are in the order :func:`parse` sorts them: a script placed
        #: from fragments only is (each fragment's are, and its chunks follow each other)
        self.ordered = True

    # ---- chunks -------------------------------------------------------------------------
    def build(self) -> Script:
        text = self.text
        # (each line's start: the running sum of the lengths, newline included, of the lines
        # before it; cheaper than a match object per newline)
        line_starts = list(accumulate((len(line) + 1 for line in text.split("\n")), initial=0))
        line_starts.pop()  # (the start of the line after the last one)
        # in the script's own text (no nested string) a chunk's model is a function of its
        # text placed at its start: the fragment memo reads each distinct chunk once; the
        # chunker re-scans only what changed since the text it read last (a version before)
        memo = self.tmap.offsets is None and not self.tmap.early and USE_FRAGMENTS \
            and self.read_simple
        chunks, comments = (chunker.rescan if memo else chunker.scan)(text)
        spans = [(line_starts[ln] + col,
                  line_starts[ln + 1] - 1 if ln + 1 < len(line_starts) else len(text))
                 for ln, col in comments]
        self.script.comments = spans if self.tmap.offsets is None else \
            [self.tmap.orig_span(cs, ce) for cs, ce in spans]
        ref = weakref.ref(self.script)
        # a chunk's text as the chunker holds it is the script's own when the script has no
        # carriage return (the fragment memo is keyed by the latter); and it is the same
        # string object from version to version for a chunk the edit did not touch, so its
        # hash is not computed again at each lookup
        own_text = "\r" not in self.tmap.text
        for ch in chunks:
            s = line_starts[ch.start - 1]
            e = line_starts[ch.end] - 1 if ch.end < len(line_starts) else len(text)
            fragment = chunk_fragment(ch.text if own_text else self.tmap.text[s:e]) \
                if memo else None
            if fragment is not None:  # (memo: this text's offsets are the original ones)
                fragment.place(self.script, ref, s, ch.start - 1)
                continue
            self.ordered = False
            os_, oe = self.tmap.orig_span(s, e) if self.tmap.offsets is not None else (s, e)
            conditional = CONDITIONAL.match(self.tmap.text, s, e) is not None
            # (the fields in order, not by keyword: cheaper, as a Command's in _command)
            chunk = Chunk(ch.start - 1, ch.end - 1, os_, oe, "none", None, conditional)
            self.script.chunks.append(chunk)
            self._read(chunk, text[s:e], s)
        return self.script

    def _read(self, chunk: Chunk, chunk_text: str, s: int) -> None:
        """Read one top-level chunk (``chunk_text``, at offset ``s`` of this text) into the
        script: the fast path, else bashlex behind the masks, else tree-sitter; how it was
        read (or why not) goes into ``chunk``."""
        reading = self.reader(chunk_text, self.read_simple)
        if reading.commands is not None:
            for name, fs, fe in reading.commands.functions:
                self.script.functions[name] = self.tmap.orig_span(s + fs, s + fe)
            for command in reading.commands.commands:
                self._simple_command(command, s)
            chunk.parser = "simple"
            return
        err = None
        before = len(self.script.commands)
        n_assign, n_docs = len(self.script.assignments), len(self.script.heredocs)
        if reading.mask_error is not None:  # a bug: reported (SB003), tree-sitter reads it
            self.script.internal_errors.append(
                f"{reading.mask_error} on lines {chunk.start_line + 1}-{chunk.end_line + 1}")
        err = reading.parse_error
        if reading.nodes is not None:
            try:
                for node in reading.nodes:
                    self._bl_walk(node, s, None, False)
                chunk.parser = "bashlex"
                return
            except RecursionError:
                err = "RecursionError"
            except Exception as exc:  # noqa: BLE001  (a node shape the walk does not read)
                err = f"{type(exc).__name__}: {exc}"[:200]
            del self.script.commands[before:]
            del self.script.assignments[n_assign:]
            del self.script.heredocs[n_docs:]
        try:
            if self._ts_chunk(chunk_text, s):
                chunk.parser = "tree-sitter"
                return
        except Exception as exc:  # noqa: BLE001  # pragma: no cover - tree-sitter does not raise
            err = f"{type(exc).__name__}: {exc}"[:200]
        chunk.error = err or "syntax error"

    def _simple_command(self, command: fast.Command, base: int) -> None:
        words: list[Word] = []
        prefix: list[tuple[int, int]] = []
        redirects: list[Redirect] = []
        tokens = command.tokens
        # (most commands have none: no comprehension, a function call of its own, for them)
        heredocs = [self._heredoc(base + op, base + bs, base + be)
                    for op, bs, be in command.heredocs] if command.heredocs else []
        for start, end, redirect, heredoc in tokens:
            if heredoc:
                continue
            if redirect:
                redirects.append(self._redirect_at(base + start, base + end))
                continue
            if not words and PREFIX_ASSIGN.match(self.text, base + start):
                prefix.append((base + start, base + end))
            else:
                words.append(self._word(base + start, base + end))
        self._command(words, prefix, base + tokens[0].start, base + tokens[-1].end, heredocs,
                      command.function, command.in_substitution, redirects, command.background)

    # ---- bashlex ------------------------------------------------------------------------
    def _bl_walk(self, node, base: int, function: str | None, subst: bool) -> None:
        kind = node.kind
        if kind == "command":
            self._bl_command(node, base, function, subst)
            return
        if kind == "function":
            name = node.name.word if hasattr(node, "name") else None
            self.script.functions[name] = self.tmap.orig_span(base + node.pos[0], base + node.pos[1])
            self._bl_walk(node.body, base, name, subst)
            return
        if kind == "list":
            parts = node.parts
            for k, part in enumerate(parts):
                if part.kind == "operator" and part.op == "&" and k > 0:
                    self._mark_background(parts[k - 1], base)
                self._bl_walk(part, base, function, subst)
            return
        if kind == "reservedword" and isinstance(node.word, list):
            # bashlex 0.18 puts the second elif of an if and everything after it (its
            # condition, body, further elifs, else) in a reservedword node's word
            for child in node.word:
                self._bl_walk(child, base, function, subst)
            return
        for attr in ("parts", "list"):
            for child in getattr(node, attr, None) or []:
                self._bl_walk(child, base, function, subst)
        if kind == "commandsubstitution":
            self._bl_walk(node.command, base, function, True)

    def _mark_background(self, node, base: int) -> None:
        s, e = self.tmap.orig_span(base + node.pos[0], base + node.pos[1])
        for cmd in self.script.commands:
            if s <= cmd.start and cmd.end <= e:
                cmd.background = True

    def _bl_command(self, node, base: int, function: str | None, subst: bool) -> Command:
        words: list[Word] = []
        prefix: list[tuple[int, int]] = []
        heredocs: list[Heredoc] = []
        redirects: list[Redirect] = []
        inner = []
        for part in node.parts:
            k = part.kind
            if k == "word":
                words.append(self._word(base + part.pos[0], base + part.pos[1]))
                inner.append(part)
            elif k == "assignment" and not words:
                prefix.append((base + part.pos[0], base + part.pos[1]))
                inner.append(part)
            elif k == "assignment":
                words.append(self._word(base + part.pos[0], base + part.pos[1]))
                inner.append(part)
            elif k == "redirect":
                hd = getattr(part, "heredoc", None)
                if hd is not None:
                    heredocs.append(self._heredoc(base + part.pos[0], base + hd.pos[0],
                                                  base + hd.pos[1]))
                out = getattr(part, "output", None)
                if out is not None and getattr(out, "kind", "") == "word":
                    inner.append(out)
                if hd is None and part.type not in ("<<", "<<-"):
                    redirects.append(self._redirect_at(base + part.pos[0], base + part.pos[1]))
        cmd = self._command(words, prefix, base + node.pos[0], base + node.pos[1], heredocs,
                            function, subst, redirects)
        for part in inner:
            for sub in getattr(part, "parts", None) or []:
                if sub.kind == "commandsubstitution":
                    self._bl_walk(sub.command, base, function, True)
        return cmd

    # ---- tree-sitter --------------------------------------------------------------------
    def _ts_chunk(self, chunk_text: str, base: int) -> bool:
        root, conv = tree_sitter_parse(chunk_text)
        if root.has_error:
            return False
        self._ts_walk(root, base, conv, None, False)
        return True

    def _ts_walk(self, node, base, conv, function, subst) -> None:
        t = node.type
        if t == "function_definition":
            name_node = node.child_by_field_name("name")
            name = name_node.text.decode("utf-8", "replace") if name_node else None
            self.script.functions[name] = self.tmap.orig_span(base + conv(node.start_byte),
                                                              base + conv(node.end_byte))
            for c in node.named_children:
                self._ts_walk(c, base, conv, name, subst)
            return
        if t in ("command", "declaration_command"):
            self._ts_command(node, base, conv, function, subst)
            return
        if t == "variable_assignment":
            self._command([], [(base + conv(node.start_byte), base + conv(node.end_byte))],
                          base + conv(node.start_byte), base + conv(node.end_byte), [],
                          function, subst, [])
            for c in node.named_children:
                self._ts_walk(c, base, conv, function, subst)
            return
        if t == "redirected_statement":
            before = len(self.script.commands)
            for c in node.named_children:
                if c.type != "heredoc_redirect":
                    self._ts_walk(c, base, conv, function, subst)
            docs = [c for c in node.named_children if c.type == "heredoc_redirect"]
            if len(self.script.commands) > before:
                self.script.commands[before].redirects.extend(
                    self._ts_redirect(c, base, conv) for c in node.named_children
                    if c.type in ("file_redirect", "herestring_redirect"))
            if docs and len(self.script.commands) > before:
                cmd = self.script.commands[before]
                for d in docs:
                    body = next((c for c in d.named_children if c.type == "heredoc_body"), None)
                    if body is not None:
                        cmd.heredocs.append(self._heredoc(base + conv(d.start_byte),
                                                          base + conv(body.start_byte),
                                                          base + conv(body.end_byte)))
                        self.script.heredocs.append(cmd.heredocs[-1])
            return
        sub = subst or t in ("command_substitution", "process_substitution")
        for c in node.named_children:
            self._ts_walk(c, base, conv, function, sub)

    def _ts_command(self, node, base, conv, function, subst) -> None:
        words: list[Word] = []
        prefix: list[tuple[int, int]] = []
        redirects: list[Redirect] = []
        for c in node.named_children:
            s, e = base + conv(c.start_byte), base + conv(c.end_byte)
            if c.type in ("file_redirect", "herestring_redirect"):
                redirects.append(self._ts_redirect(c, base, conv))
            elif c.type == "variable_assignment" and not words and node.type == "command":
                prefix.append((s, e))
            elif c.type not in ("file_redirect", "herestring_redirect", "heredoc_redirect",
                                "comment"):
                words.append(self._word(s, e))
        if node.type == "declaration_command":
            kw = node.children[0]
            words.insert(0, self._word(base + conv(kw.start_byte), base + conv(kw.end_byte)))
        self._command(words, prefix, base + conv(node.start_byte), base + conv(node.end_byte),
                      [], function, subst, redirects)
        for c in node.named_children:
            self._ts_walk_subst(c, base, conv, function)

    def _ts_redirect(self, node, base, conv) -> Redirect:
        """A file or here-string redirection node; its target ends with its first destination
        word (tree-sitter-bash lets later words of the command join the node)."""
        dest = node.child_by_field_name("destination")
        end = dest.end_byte if dest is not None else node.end_byte
        return self._redirect_at(base + conv(node.start_byte), base + conv(end))

    def _ts_walk_subst(self, node, base, conv, function) -> None:
        if node.type in ("command_substitution", "process_substitution"):
            for c in node.named_children:
                self._ts_walk(c, base, conv, function, True)
            return
        for c in node.named_children:
            self._ts_walk_subst(c, base, conv, function)

    # ---- shared -------------------------------------------------------------------------
    def _redirect_at(self, s: int, e: int) -> Redirect:
        """The redirection whose text is ``[s, e)`` of this text (descriptor number, operator,
        blanks, target word), read from the text itself so that every parser's reading is the
        same; a text with no operator (not expected) gets an empty operator and the whole span
        as its target."""
        m = REDIRECT_HEAD.match(self.text, s, e)
        head = m.end() if m else s
        fd = int(m.group(1)) if m and m.group(1) else None
        os_, oe = self.tmap.orig_span(s, e)
        return Redirect(m.group(2) if m else "", fd, self._word(head, e), os_, oe)

    def _word(self, s: int, e: int) -> Word:
        word = scan_word(self.tmap, s, e)
        if "\n" in word.text:
            self.script.data_spans.append((word.start, word.end))
        return word

    def _heredoc(self, redirect_start: int, body_start: int, body_end: int) -> Heredoc:
        t = self.tmap.text
        head = t[redirect_start:body_start].split("\n", 1)[0]
        quoted = bool(re.search(r"<<-?\s*(['\"]|\\)", head))
        body = t[body_start:body_end]
        lines = body.split("\n")
        # bashlex includes the delimiter line in the body; drop it
        if len(lines) > 1 and lines[-1].strip() and not body.endswith("\n"):
            body_end -= len(lines[-1])
        s, e = self.tmap.orig_span(body_start, body_end)
        doc = Heredoc(s, e, quoted, t[body_start:body_end])
        self.script.heredocs.append(doc)
        return doc

    def _command(self, words, prefix, start, end, heredocs, function, subst, redirects,
                 background=False) -> Command:
        """The command of ``words`` (its prefix assignments at the spans ``prefix``) spanning
        ``[start, end)`` of this text, added to the script with the assignments it makes."""
        s, e = self.tmap.orig_span(start, end) if self.tmap.offsets is not None else (start, end)
        # (the fields in order, not by keyword: a third of the cost of making a Command; given
        # up to the redirections, not set after: no default list made and replaced)
        cmd = Command(words, [], s, e, heredocs, function, subst, background, self.script, [],
                      None, None, redirects)
        for ps, pe in prefix:
            a = self._assignment(ps, pe, cmd, exported=False)
            if a:
                cmd.assignments.append(a)
        name = words[0].value if words else None
        if name in DECLARE:
            flags = "".join(w.value[1:] for w in words[1:] if w.value and w.value.startswith("-"))
            # export -n / export -f / declare +x do not export (bash(1) export, declare)
            plus = "".join(w.value[1:] for w in words[1:] if w.value and w.value.startswith("+"))
            exported = ("f" not in flags and "F" not in flags and "x" not in plus and
                        (name == "export" and "n" not in flags or "x" in flags))
            for w in words[1:]:
                ws = self.tmap.index_of(w.start)
                if ws is None:
                    continue
                m = ASSIGN.match(self.tmap.text, ws)
                if m and m.end() <= ws + len(w.text):
                    a = self._assignment(ws, ws + len(w.text), cmd, exported=exported)
                    if a:
                        a.local = name == "local"
                        self.script.assignments.append(a)
                elif w.value and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", w.value) and exported:
                    self.script.assignments.append(
                        Assignment(w.value, None, w.start, w.end, exported=True, command=cmd))
        if not words:
            self.script.assignments.extend(cmd.assignments)
        else:
            for a in cmd.assignments:
                a.exported = True  # VAR=x cmd: in cmd's environment only
        self.script.commands.append(cmd)
        return cmd

    def _assignment(self, s: int, e: int, cmd: Command, exported: bool) -> Assignment | None:
        m = ASSIGN.match(self.tmap.text, s)
        if not m or m.end() > e:
            return None
        value = scan_word(self.tmap, m.end(), e)
        os_, oe = self.tmap.orig_span(s, e) if self.tmap.offsets is not None else (s, e)
        # (the fields in order, not by keyword, as a Command's in _command)
        return Assignment(m[1], value, os_, oe, exported, False, m[3] == "+", cmd)


def parse(tmap: TextMap, kind: str = "batch", read_simple: bool = True) -> Script:
    """Parse ``tmap`` into a Script (commands, assignments, heredocs, chunks); never raises.

    With ``read_simple`` (the default) chunks holding lists of simple commands are read by
    :func:`.fast.read` instead of bashlex; the model is the same (tests/test_fast_reader.py),
    only faster.
    """
    builder = _Builder(tmap, kind, read_simple)
    script = builder.build()
    if not builder.ordered:
        sort_commands(script.commands)
    return script


def parse_script(text: str, path: str | None = None) -> Script:
    """Parse a whole batch script and attach the command strings its commands run, and the
    scripts it writes with a here-document and runs (shell/generated.py): a body the batch
    node runs (``source F``, ``bash F``, ``exec bash F``) is read as part of the script, at its
    place in the text; one that ``srun … bash F`` runs becomes the step's nested script.
    With the script's ``path``, the files it sources from its own folder are read too
    (shell/sourced.py): their assignments and exports count from the ``source`` line on."""
    tmap = TextMap(text)
    script = parse(tmap)
    sourced.import_sourced(script, path, _parse_sourced)
    found = generated.runs(script, text)
    _inline_bodies(script, tmap, [r for r in found if r.place != generated.TASKS])
    if script.bodies:
        # an inlined body's own `srun … bash <<EOF` (a generated script that starts a step so;
        # the script's other commands were asked in runs())
        seen = {id(r.command) for r in found}
        found += [r for c in script.commands if id(c) not in seen
                  for r in (generated.stdin_run(c, text),) if r is not None and
                  r.place == generated.TASKS]
    _substitute_calls(script)
    for r in found:
        doc = r.written.doc
        if r.place == generated.TASKS and not any(b.start == doc.start for b in script.bodies):
            script.bodies.append(Body(doc.start, doc.end, r.place, doc.quoted))
    attach_nested(script, tmap, depth=0,
                  files={id(r.command): r for r in found if r.place == generated.TASKS})
    script.seal()
    return script


def _parse_sourced(text: str) -> Script:
    """A sourced file's own shell model (its offsets are into its own text)."""
    return parse(TextMap(text))


#: a word that is one positional-parameter expansion: ``"$@"``, ``$*``, ``"${1}"``, ``$2``
POSITIONAL_WORD = re.compile(r'"?\$(?:([@*1-9])|\{([@*1-9])\})"?')


def _substitute_calls(script: Script) -> None:
    """Functions that run their arguments (``run() { srun "$@"; }; run python train.py``): in
    the commands of the body, a word that is ``"$@"``/``$*`` becomes the call's argument words
    and ``$1``… ``$9`` the argument at that place (bash(1) "FUNCTIONS": the positional
    parameters are the call's arguments), each keeping its span at the call site. ``shift
    [N]`` and ``set -- WORDS`` in the body move or replace the positions for the commands after
    them (read in text order). A function called once gets its body's commands rewritten in
    place; one called several times gets one copy of its body's commands per call, placed at
    the call (``Command.call`` names it; :func:`_copy_for`), so each call is its own command
    and an srun in it its own step. Not done for a ``$3`` the call does not pass, nor after a ``shift`` or
    ``set`` whose words are not literal."""
    copied = False
    for name, (start, end) in script.functions.items():
        if name is None:
            continue
        calls = [c for c in script.commands if c.name == name and c.start >= end
                 and not c.in_substitution and c.function != name]
        body = [c for c in script.commands if start <= c.start < end and c.function == name]
        if not calls or not body:
            continue
        copies = [_called_body(body, call) for call in calls]
        if not any(changed for _, changed in copies):
            continue
        for call, (_, changed) in zip(calls, copies, strict=True):
            if changed:
                call.calls = name
        if len(calls) == 1:
            for cmd, words in zip(body, copies[0][0], strict=True):
                cmd.words = words
            continue
        originals = {id(c) for c in body}
        script.commands[:] = [c for c in script.commands if id(c) not in originals]
        script.replaced += body
        for call, (words_list, _) in zip(calls, copies, strict=True):
            for cmd, words in zip(body, words_list, strict=True):
                script.commands.append(_copy_for(cmd, words, call))
        copied = True
    if copied:  # (the copies sit at their calls)
        sort_commands(script.commands)


def _copy_for(cmd: Command, words: list[Word], call: Command) -> Command:
    """Body command ``cmd`` as ``call`` runs it: at the call's place (what the shell has set
    and exported there, the call's control: background, guards) with ``words``; a command
    name the body wrote itself (``srun``) is reported at the call's name, which stands for
    it, so each call's step has a place of its own."""
    if words and cmd.words and words[0] is cmd.words[0] and call.words:
        w, at = words[0], call.words[0]
        words = [Word(w.text, at.start, at.end, w.value), *words[1:]]
    return replace(cmd, words=words, start=call.start, end=call.end, call=call, nested=[],
                   assignments=list(cmd.assignments), heredocs=list(cmd.heredocs),
                   redirects=list(cmd.redirects), background=cmd.background or call.background)


def _called_body(body: list[Command], call: Command) -> tuple[list[list[Word]], bool]:
    """The words of each body command for one ``call`` (positional expansions replaced, the
    positions moved by ``shift`` and ``set --``), and whether any word was replaced."""
    args: list[Word] | None = call.words[1:]
    out: list[list[Word]] = []
    changed = False
    for cmd in body:
        words = _positional(cmd.words, args) if args is not None else None
        out.append(words if words is not None else cmd.words)
        changed = changed or words is not None
        if args is None:
            continue
        if cmd.name == "shift":
            n = cmd.words[1].value if len(cmd.words) > 1 else "1"
            args = args[int(n):] if n is not None and n.isdigit() else None
        elif cmd.name == "set":
            rest = [w.value for w in cmd.words[1:]]
            if "--" in rest:
                args = cmd.words[rest.index("--") + 2:]
            elif any(v is None or not (v.startswith(("-", "+")) or
                                       (k and rest[k - 1] in ("-o", "+o")))
                     for k, v in enumerate(rest)):
                args = None  # `set a b` replaces the positions with words not read here
    return out, changed


def _positional(words: list[Word], args: list[Word]) -> list[Word] | None:
    """``words`` with each whole-word positional expansion replaced by the call's ``args``;
    None when there is none, or one names an argument the call does not pass."""
    out: list[Word] = []
    changed = False
    for w in words:
        m = POSITIONAL_WORD.fullmatch(w.text)
        if m is None or w.text.startswith('"') != w.text.endswith('"'):
            out.append(w)
            continue
        which = m.group(1) or m.group(2)
        if which in "@*":
            out.extend(args)
        elif int(which) <= len(args):
            out.append(args[int(which) - 1])
        else:
            return None
        changed = True
    return out if changed else None


def _body_map(doc: Heredoc, tmap: TextMap, lookup: "_Lookup") -> TextMap:
    """The text a here-document writes, mapped to the original offsets: its body as it stands
    when the delimiter is quoted, else as the writing shell expands it."""
    s, e = tmap.index_of(doc.start), tmap.index_of(doc.end - 1)
    if s is None or e is None:
        return TextMap("", [])
    if doc.quoted:
        return TextMap(tmap.text[s:e + 1], [tmap.orig(i) for i in range(s, e + 1)])
    return expand_heredoc(tmap, s, e + 1, lookup)


def _inline_bodies(script: Script, tmap: TextMap, found: list[generated.Run]) -> None:
    """Read each body the batch node runs into ``script`` itself (its commands, assignments,
    heredocs and functions, with original offsets), and record it in ``script.bodies``."""
    if not found:
        return
    lookup = _Lookup(script, tmap)
    done: set[int] = set()
    for run in found:
        doc = run.written.doc
        if id(doc) in done or doc.end <= doc.start:
            run.command.runs = next((b for b in script.bodies if b.start == doc.start), None)
            continue
        done.add(id(doc))
        inner = parse(_body_map(doc, tmap, lookup), "batch")
        for cmd in inner.commands:
            cmd.script = script
        script.commands.extend(inner.commands)
        script.assignments.extend(inner.assignments)
        script.heredocs.extend(inner.heredocs)
        script.data_spans.extend(inner.data_spans)
        script.internal_errors.extend(inner.internal_errors)
        for name, span in inner.functions.items():
            script.functions.setdefault(name, span)
        script.bodies.append(Body(doc.start, doc.end, run.place, doc.quoted))
        run.command.runs = script.bodies[-1]
    sort_commands(script.commands)
    script.assignments.sort(key=lambda a: a.start)


def outline_script(text: str, wanted: re.Pattern) -> Script:
    """The script's outline: the chunks and real comments of the whole text, with commands,
    heredocs and multi-line strings read (as :func:`parse_script` reads them) only in the
    top-level chunks that hold a line matching ``wanted``; the other chunks are blanked before
    parsing (offsets and lines kept) and have parser ``"none"``. Cheap on a long script whose
    matching lines sit in a few chunks: an editor's hover reads the directive block so."""
    lines = text.split("\n")
    chunks, comments = chunker.scan(text)
    keep = [False] * len(lines)
    for ch in chunks:
        if any(wanted.search(lines[ln]) for ln in range(ch.start - 1, ch.end)):
            keep[ch.start - 1:ch.end] = [True] * (ch.end - ch.start + 1)
    script = parse_script("\n".join(ln if k else " " * len(ln)
                                    for ln, k in zip(lines, keep, strict=True)))
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)
    parsed = {c.start_line: c for c in script.chunks}
    script.chunks = [parsed.get(ch.start - 1) or
                     Chunk(ch.start - 1, ch.end - 1, starts[ch.start - 1],
                           min(starts[ch.end] - 1, len(text)), parser="none")
                     for ch in chunks]
    script.comments = [(starts[ln] + col, starts[ln] + len(lines[ln])) for ln, col in comments]
    return script


def shell_string_index(words: list[Word]) -> int | None:
    """Index of the command-string argument of ``bash -c STR`` (or ``sh -lc STR``) in ``words``."""
    # (no range object and no copy of the list: it is read for every command; the last word,
    # a shell with no word after it, ends the loop as an earlier shell would: no string)
    for k, w in enumerate(words):
        name = w.value
        if not name or name[-1] != SHELL_LAST:  # (a quick test for most words)
            continue
        if name.rsplit("/", 1)[-1] not in SHELLS:
            continue
        j = k + 1
        while j < len(words) and (words[j].value or "").startswith("-"):
            flag = words[j].value or ""
            j += 1
            if not flag.startswith("--") and "c" in flag[1:]:
                return j if j < len(words) else None
        return None
    return None


def inert_words(words: list[Word]) -> bool:
    """Whether :func:`attach_nested` finds nothing to read in a command with ``words``,
    whatever the script's values: no word starts with ``$`` (a command in a variable, or an
    argument a runner splits), no shell reads a ``-c`` string and the command is no
    ``eval`` (a fragment asks once per command: ``Command.inert``)."""
    return not any(w.text[:1] == "$" for w in words) and shell_string_index(words) is None \
        and (not words or words[0].value != "eval")


def attach_nested(script: Script, tmap: TextMap, depth: int,
                  files: dict[int, generated.Run] | None = None,
                  outer: "_Outer | None" = None) -> None:
    """Find command strings (``bash -c``, ``eval``, unquoted ``$CMD`` words) in ``script`` and
    parse each into a nested Script mapped back to the original text; ``files`` maps (by id)
    the commands that run a here-document-written file in every task to that run. ``outer``:
    the shell that starts ``script`` as a child shell, whose exported variables it inherits."""
    if depth >= MAX_NESTING:
        return
    lookup = _Lookup(script, tmap, outer)
    # (only the batch script's own commands are placed from fragments, and only with the
    # memo on: a one-off lint asks no command whether it is inert)
    placed = USE_FRAGMENTS and depth == 0
    for cmd in list(script.commands):
        if cmd.in_substitution or not cmd.words or cmd.calls is not None:
            continue  # (a call's words are read in the function body that received them)
        run = files.get(id(cmd)) if files else None
        if run is not None:
            body = _body_map(run.written.doc, tmap, lookup)
            inner = parse(body, "file")
            inner.parent = cmd
            cmd.nested.append(inner)
            attach_nested(inner, body, depth + 1, outer=_child_of(lookup, cmd))
            continue
        words = cmd.words
        if placed and cmd.inert is words:  # (nothing to read: found once per chunk text)
            continue
        first = words[0]
        # `$SRUN bash -c "…"`: the command is in a variable (the `$` test first, as below)
        if first.text[:1] == "$" and _splits(first, lookup):
            _nest_split(cmd, 0, tmap, lookup, depth)
            continue
        idx = shell_string_index(words)
        if idx is not None:
            _nest(cmd, words[idx], tmap, lookup, "bash -c", depth)
            continue
        if first.value == "eval" and len(words) > 1:
            _nest(cmd, words[1], tmap, lookup, "eval", depth)
            continue
        name = first.value or ""
        if name in RUNNERS or ("/" in name and name.rsplit("/", 1)[-1] in RUNNERS):
            k = _split_argument(words, lookup)
            if k is not None:
                _nest_split(cmd, k, tmap, lookup, depth)


def _split_argument(words: list[Word], lookup) -> int | None:
    """The index of the first word after the first (a runner's arguments) that is an unquoted
    variable whose known value holds several words (:func:`_splits`), or None. (The `$` test
    first: most words are no variable, and a call of _splits per word cost more than the rest
    of attach_nested's loop; a loop, not a generator, which costs a resumption per word.)"""
    for k, w in enumerate(words):
        if k and w.text[:1] == "$" and _splits(w, lookup):
            return k
    return None


def _unquoted_variable(w: Word) -> str | None:
    """The name when ``w`` is exactly an unquoted ``$NAME`` or ``${NAME}`` (which the shell
    word-splits)."""
    e = w.expansions
    if len(e) == 1 and e[0].name and e[0].quoting == UNQUOTED and not e[0].nested \
            and w.text in ("$" + e[0].name, "${" + e[0].name + "}"):
        return e[0].name
    return None


def _splits(w: Word, lookup) -> bool:
    """Whether ``w`` is an unquoted variable whose known value holds several words."""
    name = _unquoted_variable(w) if w.text[:1] == "$" else None  # (most words: not one)
    val = lookup(name, w.start) if name else None
    return val is not None and re.search(r"\s", val.text.strip()) is not None


def _nest(cmd: Command, w: Word, tmap: TextMap, lookup, kind: str, depth: int) -> None:
    s = tmap.index_of(w.start)
    if s is None:
        return
    inner_map = expand_for_shell(w, tmap, s, s + len(w.text), lookup)
    inner = parse(inner_map, kind)
    inner.parent = cmd
    cmd.nested.append(inner)
    attach_nested(inner, inner_map, depth + 1,
                  outer=_child_of(lookup, cmd) if kind == "bash -c" else None)


def _nest_split(cmd: Command, k: int, tmap: TextMap, lookup, depth: int) -> None:
    """argv from word ``k`` on, as the batch shell hands it over: each unquoted ``$CMD`` with a
    known value is expanded and split on blanks into literal words (word splitting re-reads no
    quotes and expands nothing), the other words stay as they are."""
    words: list[Word] = []
    original: dict[int, Word] = {}  # expanded word -> the word it came from
    for w in cmd.words[k:]:
        s = tmap.index_of(w.start)
        if s is None:
            return
        name = _unquoted_variable(w)
        val = lookup(name, w.start) if name else None
        if val is None:
            # expanded by this shell but not split: one word holding the value it receives
            # (an unknown `"${ARGS[@]}"` stays a bare expansion: it may be any words)
            m = expand_for_shell(w, tmap, s, s + len(w.text), lookup)
            early = m.early_in(0, len(m.text))
            if cmd.script is not None and cmd.script.kind != "batch":
                # a child shell (`srun bash -c '$LAUNCHER --rank $SLURM_PROCID'`) expands its
                # own words itself: only values that flowed in from the batch shell are early
                own = {e.start for e in w.expansions}
                early = [e for e in early if e.start not in own]
            if w.bare_expansion:
                words.append(Word(w.text, w.start, w.end, None, [], early))
            else:
                words.append(Word(m.text, w.start, w.end, m.text, [], early))
            original[id(words[-1])] = w
            continue
        for part in re.finditer(r"\S+", val.text):
            start, end = val.orig_span(part.start(), part.end())
            words.append(Word(part.group(0), start, end, part.group(0), [],
                              val.early_in(part.start(), part.end())))
    inner = Script(kind="split", parent=cmd)
    split = Command(words, [], cmd.start, cmd.end, function=cmd.function, script=inner)
    inner.commands.append(split)
    cmd.nested.append(inner)
    # a command string inside can only be one of the words that were not split: word
    # splitting leaves quotes in place, so a split `bash -c 'x y'` is not one string
    idx = shell_string_index(words)
    if idx is not None and id(words[idx]) in original and depth + 1 < MAX_NESTING:
        _nest(split, original[id(words[idx])], tmap, lookup, "bash -c", depth + 1)


class _Outer(NamedTuple):
    """The shell that starts a child shell: its lookup and the offset of the starting command."""

    lookup: "_Lookup"
    at: int


def _child_of(lookup: "_Lookup", cmd: Command) -> _Outer | None:
    """``cmd``'s shell as the parent of the child shell ``cmd`` starts (``bash -c STR``,
    ``srun … bash FILE``), or None when ``cmd`` hands the child no environment: an
    ``--export=`` of srun (or ``env -i``) without ``ALL`` (srun(1) --export)."""
    for w in cmd.words:
        v = w.value or ""
        if v.startswith("--export=") and "ALL" not in v[9:].split(","):
            return None
        if v in ("-i", "--ignore-environment") and any(x.value == "env" for x in cmd.words):
            return None
    return _Outer(lookup, cmd.start)


def _exported_at(script: Script, name: str, at: int) -> bool:
    """Whether ``name`` is in the environment ``script`` hands a child started at ``at``:
    an ``export``/``declare -x`` of it before ``at``, or an assignment made while ``set -a``
    was on (bash(1), "ENVIRONMENT", ``set -a``). A prefix assignment (``N=v cmd``) exports to
    that command only and is not among the script's assignments."""
    mine = [a for a in script.assignments if a.name == name and a.start < at]
    if not mine:
        return False  # (most names a child reads: SLURM_*, never assigned here)
    if any(a.exported for a in mine):
        return True
    toggles = sorted(t for c in script.commands if c.words and c.words[0].value == "set"
                     and not c.in_substitution for t in allexport_toggles(c.words[1:]))
    return any(next((on for t, on in reversed(toggles) if t < a.start), False) for a in mine)


class _Lookup:
    """Value of a variable as the current shell would expand it at a given point.

    Values are memoised per assignment. One built from more than ``MAX_VALUE_DEPTH`` levels of
    variables, or longer than ``MAX_VALUE_CHARS`` once expanded, stays opaque (None), as an
    unknown value does: real scripts nest a few levels, generated ones can nest thousands.
    """

    MAX_VALUE_DEPTH = 32
    MAX_VALUE_CHARS = 65_536

    def __init__(self, script: Script, tmap: TextMap, outer: _Outer | None = None):
        self.script = script
        self.tmap = tmap
        #: the parent shell of a child shell (``bash -c '$LAUNCHER …'`` run by srun): a name
        #: the child does not set has the value the parent exported before starting it
        self.outer = outer
        self.active: set[int] = set()  # assignments being expanded (a guard against cycles)
        self.known: dict[int, TextMap | None] = {}

    def __call__(self, name: str, at: int) -> TextMap | None:
        best = self.script.value_at(name, at)
        if best is None and self.outer is not None \
                and not any(a.name == name for a in self.script.assignments) \
                and _exported_at(self.outer.lookup.script, name, self.outer.at):
            return self.outer.lookup(name, self.outer.at)
        if best is None or id(best) in self.active or len(self.active) >= self.MAX_VALUE_DEPTH:
            return None
        if id(best) in self.known:
            return self.known[id(best)]
        assert best.value is not None  # value_at() finds only assignments with a value
        if best.origin is not None:
            return self._imported(best)
        s = self.tmap.index_of(best.value.start)
        if s is None:
            return None
        self.active.add(id(best))
        try:
            value: TextMap | None = expand_for_shell(best.value, self.tmap, s,
                                                     s + len(best.value.text), self)
        finally:
            self.active.discard(id(best))
        if value is not None and len(value.text) > self.MAX_VALUE_CHARS:
            value = None
        self.known[id(best)] = value
        return value

    def _imported(self, best: Assignment) -> TextMap | None:
        """The value of an assignment a sourced file makes, expanded from the file's own text
        (the variables it reads take their values at the ``source`` line), every character
        mapped to the end of the ``source`` command (the script's text holds no part of
        it)."""
        origin = best.origin
        assert origin is not None
        word = origin.word
        if word is None:
            return None
        at = best.start
        carried: set[int] = set()  # the script's own early expansions inside looked-up values

        def script_value(name: str, _o: int) -> TextMap | None:
            # a value the script set keeps its positions (`$NNODES` in the file points at
            # `NNODES=8`): marked negative here to tell them from the file's own characters
            val = self(name, at)
            if val is None:
                return None
            carried.update(id(x) for _, _, x in val.early)
            offs = val.offsets if val.offsets is not None else list(range(len(val.text)))
            return TextMap(val.text, [-1 - o for o in offs], val.early)

        self.active.add(id(best))
        try:
            value = expand_for_shell(word, TextMap(origin.text), word.start, word.end,
                                     script_value)
        finally:
            self.active.discard(id(best))
        if len(value.text) > self.MAX_VALUE_CHARS:
            return None
        early = [(s, e, x if id(x) in carried else replace(x, start=at, end=at + 1))
                 for s, e, x in value.early]
        offsets = value.offsets if value.offsets is not None else []
        out = TextMap(value.text, [-1 - o if o < 0 else at for o in offsets] if offsets
                      else [at] * len(value.text), early)
        self.known[id(best)] = out
        return out
