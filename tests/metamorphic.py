"""Meaning-preserving rewrites of batch scripts, for the metamorphic tests (DESIGN.md "Tests").

Each rewrite takes a script's text and returns a :class:`Variant` (the new text plus a map from
offsets of the original to the offsets they moved to), or None when it does not apply to that
script. A rewrite changes how the script is *spelled*, never what bash, sbatch, srun or the
launcher do with it; where that would not hold (positional parameters inside a moved command,
a here-document on the moved line, a quote the rewrite cannot follow) it does not apply.

The facts each rewrite rests on:

- ``$V`` and ``${V}`` are the same parameter expansion (bash(1), "Parameter Expansion").
- getopt_long accepts ``--opt=value`` and ``--opt value`` for an option with a required argument
  (glibc getopt(3)); srun and sbatch read their options with it (src/common/slurm_opt.c), and
  torchrun's argparse parser accepts both too.
- torchrun registers each multi-word option under both spellings, ``--nproc-per-node`` and
  ``--nproc_per_node`` (torch/distributed/run.py, ``get_args_parser``, since torch 2.0);
  ``torchrun`` is the console script of ``torch.distributed.run:main`` (torch's setup.py).
- ``timeout DURATION CMD``, ``nohup CMD`` and ``env CMD`` exec CMD with the same arguments and
  environment (coreutils manual); a function runs in the calling shell (bash(1), "FUNCTIONS");
  ``NAME='…'; bash -c "$NAME"`` hands bash -c the same string as ``bash -c '…'``; an array
  expansion ``"${A[@]}"`` yields its elements as separate words; a backslash-newline outside
  quotes is removed before the line is split into words; ``export N=V``, ``N=V; export N`` and
  ``declare -x N=V`` give the same exported variable (bash(1), "SHELL BUILTIN COMMANDS").
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from sbatch_lsp.options import resolve_long, srun_options

# -- the variant and its offset map ------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """A stretch of the variant: ``length`` characters at ``new_start``. A copy holds original
    ``[orig_start, orig_end)`` verbatim; new text (``copy=False``) stands for that range of the
    original when ``orig_start`` is not None (what it replaced), for nothing otherwise."""

    new_start: int
    length: int
    orig_start: int | None
    orig_end: int | None
    copy: bool


@dataclass
class Variant:
    """A rewritten script: its text and where each original offset went; ``files`` are the
    files the variant needs next to it (name -> text), and ``moved`` the original ranges whose
    text now lives in one of them (a finding there moves out of the script with its text)."""

    text: str
    pieces: list[Piece]
    files: dict[str, str] = field(default_factory=dict)
    moved: list[tuple[int, int]] = field(default_factory=list)

    def targets(self, offset: int) -> list[tuple[int, int]]:
        """The ranges ``[lo, hi]`` of variant offsets that original *offset* may have become: one
        point for copied text (several when the text was copied twice), the whole new text for a
        replaced stretch."""
        out = []
        for p in self.pieces:
            if p.orig_start is None or p.orig_end is None:
                continue
            if p.orig_start <= offset <= p.orig_end:
                if p.copy:
                    at = p.new_start + offset - p.orig_start
                    out.append((at, at))
                else:
                    out.append((p.new_start, p.new_start + p.length))
        return out


@dataclass
class Builder:
    """Builds a Variant piece by piece from the original text."""

    original: str
    parts: list[str] = field(default_factory=list)
    pieces: list[Piece] = field(default_factory=list)
    size: int = 0

    def copy(self, start: int, end: int) -> Builder:
        if end > start:
            self.pieces.append(Piece(self.size, end - start, start, end, True))
            self.parts.append(self.original[start:end])
            self.size += end - start
        return self

    def put(self, text: str, replaces: tuple[int, int] | None = None) -> Builder:
        start, end = replaces if replaces is not None else (None, None)
        self.pieces.append(Piece(self.size, len(text), start, end, False))
        self.parts.append(text)
        self.size += len(text)
        return self

    def done(self) -> Variant | None:
        text = "".join(self.parts)
        return None if text == self.original else Variant(text, self.pieces)


def with_edits(text: str, edits: list[tuple[int, int, str]]) -> Variant | None:
    """Apply non-overlapping ``(start, end, new_text)`` edits; None when there are none."""
    if not edits:
        return None
    b, at = Builder(text), 0
    for start, end, new in sorted(edits):
        if start < at:
            return None  # overlapping edits: the rewrite does not apply
        b.copy(at, start)
        b.put(new, (start, end) if end > start else None)
        at = end
    return b.copy(at, len(text)).done()


# -- reading the script well enough to rewrite it ----------------------------------------------

HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
LOOKALIKE = re.compile(r"^\s*#+\s*sbatch", re.IGNORECASE)


@dataclass(frozen=True)
class Line:
    """A logical line: ``start``/``end`` offsets (end at its newline), its text, and whether it
    continues the previous one's command list (after ``&&``, ``||`` or ``|``)."""

    start: int
    end: int
    text: str
    continues: bool


@dataclass
class Reading:
    """Where the code is: logical lines outside here-document bodies, the bodies themselves
    (``(start, end, quoted)``), and for each code offset whether it sits inside quotes."""

    text: str
    lines: list[Line]
    heredocs: list[tuple[int, int, bool]]
    quoted: list[bool]

    def in_heredoc(self, offset: int) -> bool:
        return any(s <= offset < e for s, e, _ in self.heredocs)

    def in_quoted_heredoc(self, offset: int) -> bool:
        return any(s <= offset < e for s, e, q in self.heredocs if q)

    def code(self, offset: int) -> bool:
        """Outside here-document bodies and comments (a ``#SBATCH`` line is a comment)."""
        if self.in_heredoc(offset):
            return False
        line_start = self.text.rfind("\n", 0, offset) + 1
        return not self.text[line_start:offset + 1].lstrip().startswith("#")


def read(text: str) -> Reading:
    """Split *text* into logical lines (backslash-newlines and quoted newlines joined), skipping
    here-document bodies, and note for every offset whether it is inside quotes."""
    quoted = [False] * (len(text) + 1)
    lines: list[Line] = []
    heredocs: list[tuple[int, int, bool]] = []
    i, n = 0, len(text)
    start, quote, pending, prev_open = 0, "", [], False
    while i < n:
        c = text[i]
        quoted[i] = bool(quote)
        if quote == "'":
            if c == "'":
                quote = ""
        elif c == "\\" and i + 1 < n:
            quoted[i + 1] = bool(quote)
            i += 2
            continue
        elif quote == '"':
            if c == '"':
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;"):
            eol = text.find("\n", i)
            i = n if eol < 0 else eol
            continue
        elif c == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
            m = HEREDOC.match(text, i)
            if m:
                pending.append((m.group(2), bool(m.group(1)), text.startswith("<<-", i)))
                i = m.end()
                continue
        if c == "\n" and not quote:
            body = text[start:i]
            lines.append(Line(start, i, body, prev_open))
            stripped = body.rstrip()
            prev_open = stripped.endswith(("&&", "||", "|")) and not stripped.lstrip().startswith("#")
            i += 1
            for delim, q, dash in pending:  # the bodies follow this line
                body_start = i
                while i < n:
                    eol = text.find("\n", i)
                    eol = n if eol < 0 else eol
                    if (text[i:eol].lstrip("\t") if dash else text[i:eol]) == delim:
                        heredocs.append((body_start, i, q))
                        i = eol + 1
                        break
                    i = eol + 1
                else:
                    heredocs.append((body_start, n, q))
            pending = []
            start = i
            continue
        i += 1
    if start < n:
        lines.append(Line(start, n, text[start:n], prev_open))
    return Reading(text, lines, heredocs, quoted)


def first_word(line: Line) -> str:
    words = line.text.split()
    return words[0] if words else ""


def is_launch_line(line: Line) -> bool:
    """A logical line whose command is srun or a torch launcher."""
    return first_word(line) in ("srun", "torchrun") or bool(
        re.match(r"\s*python3?\s+-m\s+torch\.distributed\.(run|launch)\b", line.text))


def above_comments(text: str, line_start: int) -> int:
    """Where a line inserted before the command at *line_start* goes: above the suppression
    comments (``# sbatch-lint: disable=…``) that sit right over it, which cover the command."""
    at = line_start
    while at > 0:
        prev = text.rfind("\n", 0, at - 1) + 1
        if not re.match(r"\s*#\s*sbatch-lint:", text[prev:at]):
            break
        at = prev
    return at


#: names that programs read from the environment, or that bash or Slurm set: never renamed
SPECIAL = re.compile(
    r"^(SLURM|SRUN|SBATCH|MASTER_|RANK$|LOCAL_|WORLD_|NODE_RANK|GROUP_|OMP_|CUDA|NCCL|TORCH|HF_|"
    r"HUGGING|TRANSFORMERS|WANDB|TRITON|NVTE|UCX|FI_|PMI|OMPI|MPI|I_MPI|GLOO|PATH|LD_|PYTHON|"
    r"HOME$|TMPDIR|USER$|CONDA|VIRTUAL_ENV|PET_|LOGLEVEL|XDG|NEMO|UV_|PIP_|DS_|ACCELERATE|"
    r"NVIDIA|ENROOT|PYXIS|SINGULARITY|APPTAINER|IFS$|PS4$|BASH|SHELL$|HOSTNAME$|RANDOM$|PWD$|"
    r"OLDPWD$|SECONDS$|LINENO$|PPID$|UID$|TERM$|LANG|LC_)"
    r"|CACHE|_DIR$|_HOME$|TOKEN|KEY|SECRET|PASS|AUTH|CRED")
ASSIGN = re.compile(r"(?:^|(?<=[\s;&|(]))([A-Za-z_][A-Za-z0-9_]*)\+?=")
FOR_VAR = re.compile(r"\bfor\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\b")
EXPORTED = re.compile(r"\b(?:export|declare\s+-[a-zA-Z]*x[a-zA-Z]*|typeset\s+-x)\s+([^;&|\n]*)")


def _word_end(text: str, i: int) -> int:
    """The end of the shell word starting at *i* (quotes, ``$(…)`` and backslashes followed)."""
    depth, quote = 0, ""
    while i < len(text):
        c = text[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            i += 1
        elif quote == '"':
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif text.startswith("$(", i):
            depth += 1
            i += 1
        elif c == "(" and depth:
            depth += 1  # `$((a + b))`, `$(f (x))`: the parentheses inside nest
        elif c == ")" and depth:
            depth -= 1
        elif c in " \t\n;&|<>()" and not depth:
            return i
        i += 1
    return i


def assigned_names(reading: Reading) -> dict[str, bool]:
    """Names the script assigns in its code, mapped to whether one of those assignments only
    prefixes a command (``NAME=v cmd``: the command's environment, not a shell variable)."""
    text = reading.text
    names: dict[str, bool] = {}
    for m in ASSIGN.finditer(text):
        if not reading.code(m.start()):
            continue
        end = _word_end(text, m.end())
        rest = text[end:text.find("\n", end) if "\n" in text[end:] else len(text)].lstrip(" \t")
        prefix = bool(rest) and not rest.startswith(("#", ";", "&", "|", ")", "\\"))
        before = text[text.rfind("\n", 0, m.start()) + 1:m.start()].split()
        if before and before[-1] in ("export", "local", "readonly") or \
                (before and before[0] in ("declare", "typeset", "local", "export")):
            prefix = False
        names[m.group(1)] = names.get(m.group(1), False) or prefix
    for m in FOR_VAR.finditer(text):
        if reading.code(m.start()):
            names.setdefault(m.group(1), False)
    return names


def exported_names(text: str) -> set[str]:
    out = set()
    for m in EXPORTED.finditer(text):
        out.update(re.findall(r"(?:^|\s)-?-?([A-Za-z_][A-Za-z0-9_]*)(?:\+?=|\s|$)", m.group(1)))
    return out


# -- the rewrites --------------------------------------------------------------------------------

def rename_variables(text: str) -> Variant | None:
    """Give every shell-local variable a neutral name (``NNODES`` -> ``RENAMED1``): assigned in
    the script, never exported, never a command's prefix environment, no name a program or
    Slurm reads, and every mention of it an expansion or an assignment."""
    reading = read(text)
    exported = exported_names(text)
    edits: list[tuple[int, int, str]] = []
    k = 0
    for name, prefix in assigned_names(reading).items():
        if prefix or name in exported or SPECIAL.search(name):
            continue
        spots = []
        for m in re.finditer(rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])", text):
            s = m.start()
            if reading.in_quoted_heredoc(s):
                break
            before, after = text[max(0, s - 3):s], text[m.end():m.end() + 2]
            assigns = after.startswith(("=", "+=")) and not reading.quoted[s] and \
                (s == 0 or text[s - 1] in " \t\n;&|({")
            ok = (before.endswith(("$", "${", "${#", "${!")) or assigns
                  or re.search(rf"\bfor\s+{name}\s+in\b", text[max(0, s - 8):m.end() + 4]))
            if not ok:
                break
            spots.append(s)
        else:
            if spots:
                k += 1
                new = f"RENAMED{k}"
                if new in text:
                    return None
                edits += [(s, s + len(name), new) for s in spots]
    return with_edits(text, edits)


SHELL_KNOWN = re.compile(r"SLURM_\w+|HOME|USER|PWD|HOSTNAME|TMPDIR|PATH")


def brace_expansions(text: str) -> Variant | None:
    """``$V`` -> ``${V}`` for the script's own variables and Slurm's, in code and directives
    (not in quoted here-documents, whose text is data)."""
    reading = read(text)
    names = set(assigned_names(reading))
    edits = []
    for m in re.finditer(r"\$([A-Za-z_][A-Za-z0-9_]*)", text):
        name = m.group(1)
        if reading.in_quoted_heredoc(m.start()):
            continue
        if name in names or SHELL_KNOWN.fullmatch(name):
            edits.append((m.start(), m.end(), f"${{{name}}}"))
    return with_edits(text, edits)


LAUNCHER_WORD = re.compile(r"(?<![\w/.$={-])(torchrun|python3?\s+-m\s+torch\.distributed\.(?:run|launch))"
                           r"(?=[\s'\"]|$)")
NOT_A_RUN = ("which", "echo", "type", "-v", "command", "printf", "hash")


def launcher_spots(text: str) -> list[re.Match]:
    """Where a torch launcher is the command word, in code."""
    reading = read(text)
    out = []
    for m in LAUNCHER_WORD.finditer(text):
        if not reading.code(m.start()):
            continue
        before = text[text.rfind("\n", 0, m.start()) + 1:m.start()].split()
        if before and before[-1] in NOT_A_RUN:
            continue
        out.append(m)
    return out


TORCHRUN_MULTIWORD = ("nproc-per-node", "rdzv-backend", "rdzv-endpoint", "rdzv-id", "rdzv-conf",
                      "node-rank", "master-addr", "master-port", "max-restarts",
                      "monitor-interval", "start-method", "local-addr", "log-dir", "no-python",
                      "run-path", "local-ranks-filter")


def _launch_line_spans(text: str) -> list[tuple[int, int]]:
    """Code spans of the logical lines that start a torch launcher (directly or through srun)."""
    reading = read(text)
    spots = launcher_spots(text)
    out = []
    for line in reading.lines:
        if any(line.start <= m.start() < line.end for m in spots):
            out.append((line.start, line.end))
    return out


def swap_separators(text: str) -> Variant | None:
    """torchrun's options in the other spelling: ``--nproc_per_node`` <-> ``--nproc-per-node``."""
    edits = []
    for start, end in _launch_line_spans(text):
        for m in re.finditer(r"(?<=\s|['\"])--([a-z]+(?:[-_][a-z]+)+)(?=[=\s'\"]|$)",
                             text[start:end]):
            name = m.group(1)
            dashed = name.replace("_", "-")
            if dashed not in TORCHRUN_MULTIWORD:
                continue
            other = dashed if "_" in name else name.replace("-", "_")
            s = start + m.start(1)
            edits.append((s, s + len(name), other))
    return with_edits(text, edits)


def _required_arg(option: str, launcher: bool) -> bool:
    if launcher:
        return option.replace("_", "-") in TORCHRUN_MULTIWORD + ("nnodes", "rdzv-endpoint")
    r = resolve_long(option, srun_options())
    return r.option is not None and r.option.arg == "required"


def option_spacing(text: str) -> Variant | None:
    """``--opt=value`` -> ``--opt value`` on srun and torchrun command lines, for options that
    take a required argument (never an optional one: ``--exclusive=user`` would change)."""
    reading = read(text)
    edits = []
    for line in reading.lines:
        if not reading.code(line.start) or ("srun" not in line.text and
                                              not LAUNCHER_WORD.search(line.text)):
            continue
        launcher_at = LAUNCHER_WORD.search(line.text)
        srun_at = SRUN_WORD.search(line.text)
        program = _srun_program(text, line.start + srun_at.end()) if srun_at else None
        # a value that is literal, or a double-quoted expansion (`--nproc-per-node="$N"` ->
        # `--nproc-per-node "$N"`: the parsers take a non-literal next word as the value)
        # (not a value starting with `~`: bash expands a tilde that starts a word, not one
        # after `--opt=`, bash(1) "Tilde Expansion", so the split would change the value)
        for m in re.finditer(r"(?<=[\s'\"])--([a-z][a-z0-9_-]*)=(?=[^\s'\"~-]|\"\$)", line.text):
            launcher = launcher_at is not None and m.start() > launcher_at.start()
            if not launcher and (srun_at is None or m.start() < srun_at.start() or
                                 program is None or line.start + m.start() > program):
                continue  # not one of srun's own options: a program's argument, left alone
            if _required_arg(m.group(1), launcher):
                eq = line.start + m.end() - 1
                edits.append((eq, eq + 1, " "))
    return with_edits(text, edits)


def launcher_spelling(text: str) -> Variant | None:
    """``torchrun`` <-> ``python -m torch.distributed.run`` (the console script and its module)."""
    edits = []
    for m in launcher_spots(text):
        word = m.group(1)
        if word == "torchrun":
            edits.append((m.start(), m.end(), "python -m torch.distributed.run"))
        elif word.endswith(".run"):
            edits.append((m.start(), m.end(), "torchrun"))
    return with_edits(text, edits)


def interpreter_options(text: str) -> Variant | None:
    """``torchrun`` and ``python -m torch.distributed.run`` -> ``python -u -W ignore -m
    torch.distributed.run`` (CPython's -u and -W change buffering and warnings, not the module
    run or its arguments: Python/getopt.c reads -W's argument as its own)."""
    edits = []
    for m in launcher_spots(text):
        word = m.group(1)
        if word == "torchrun":
            edits.append((m.start(), m.end(), "python -u -W ignore -m torch.distributed.run"))
        else:  # python3 -m torch.distributed.launch: the options go after the interpreter
            at = m.start() + len(word.split()[0])
            edits.append((at, at, " -u -W ignore"))
    return with_edits(text, edits)


SRUN_WORD = re.compile(r"(?<![\w/.$={-])srun(?=\s)")


def _srun_program(text: str, at: int) -> int | None:
    """The offset of the program word of the srun command whose ``srun`` ends at *at*: the
    first word after srun's options (a long option without ``=`` that takes an argument, and a
    short option alone, take the next word). None when a word cannot be read (a variable that
    may hold options, the end of the line)."""
    table = srun_options()
    i = at
    while True:
        while i < len(text) and text[i] in " \t":
            i += 1
        if text.startswith("\\\n", i):
            i += 2
            continue
        if i >= len(text) or text[i] in "\n;&|":
            return None
        end = _word_end(text, i)
        word = text[i:end]
        if "$" in word and not word.startswith("-"):
            return None
        if not word.startswith("-"):
            return i
        if word.startswith("--") and "=" not in word:
            r = resolve_long(word[2:], table)
            if r.option is None:
                return None
            if r.option.arg == "required":
                i = _skip_word(text, end)
                continue
        elif not word.startswith("--") and len(word) == 2:
            from sbatch_lsp.options import SRUN_SHORT
            if SRUN_SHORT.get(word[1]) is True:
                i = _skip_word(text, end)
                continue
        i = end


def _skip_word(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t":
        i += 1
    return _word_end(text, i)


def _program_spots(text: str) -> list[int]:
    """Offsets where a launched program starts: the program of each srun in code, and each torch
    launcher word that no srun starts directly."""
    reading = read(text)
    spots = set()
    for m in SRUN_WORD.finditer(text):
        if not reading.code(m.start()):
            continue
        before = text[text.rfind("\n", 0, m.start()) + 1:m.start()].split()
        if before and before[-1] in NOT_A_RUN:
            continue
        p = _srun_program(text, m.end())
        if p is not None and text[p:p + 1] not in "'\"":
            spots.add(p)
    spots.update(m.start() for m in launcher_spots(text))
    return sorted(spots)


def wrapper(prefix: str) -> Callable[[str], Variant | None]:
    def rewrite(text: str) -> Variant | None:
        return with_edits(text, [(p, p, prefix) for p in _program_spots(text)])
    rewrite.__doc__ = f"``{prefix.strip()}`` in front of every launched program (srun's and " \
                      "a launcher's)."
    return rewrite


POSITIONAL = re.compile(r"\$(?:[0-9@*#]|\{[0-9@*#])|\bshift\b|\breturn\b|\bexit\b|<<|\blocal\b")


def into_function(text: str) -> Variant | None:
    """Each srun or torch-launcher command line becomes the body of a function called at once:
    ``launch_1() {`` / the line / ``}`` / ``launch_1``."""
    reading = read(text)
    b, at, k = Builder(text), 0, 0
    for line in reading.lines:
        if not is_launch_line(line) or line.continues or POSITIONAL.search(line.text) or \
                line.text.rstrip().endswith(("&&", "||", "|")) or not reading.code(line.start):
            continue
        k += 1
        indent = line.text[:len(line.text) - len(line.text.lstrip())]
        b.copy(at, line.start).put(f"{indent}launch_{k}() {{\n").copy(line.start, line.end)
        b.put(f"\n{indent}}}\n{indent}launch_{k}")
        at = line.end
    return b.copy(at, len(text)).done() if k else None


def srun_in_function(text: str) -> Variant | None:
    """Each srun command line's ``srun`` moves into a function that runs ``srun "$@"``, called
    once with the rest of the line as its arguments: ``launch_args_1() {`` / ``srun "$@"`` /
    ``}`` / ``launch_args_1 --ntasks=2 torchrun …`` (bash(1) "FUNCTIONS": ``"$@"`` expands to
    the call's arguments, each one word, so srun gets the same argv)."""
    reading = read(text)
    b, at, k = Builder(text), 0, 0
    for line in reading.lines:
        if first_word(line) != "srun" or line.continues or POSITIONAL.search(line.text) or \
                line.text.rstrip().endswith(("&&", "||", "|")) or not reading.code(line.start):
            continue
        s0 = line.start + line.text.index("srun")
        if text[s0 + 4:s0 + 5] not in (" ", "\t"):
            continue
        k += 1
        indent = line.text[:len(line.text) - len(line.text.lstrip())]
        top = above_comments(text, line.start)  # suppression comments stay over the call
        b.copy(at, top).put(f"{indent}launch_args_{k}() {{\n{indent}  ")
        b.copy(s0, s0 + 4).put(f' "$@"\n{indent}}}\n')
        b.copy(top, s0).put(f"launch_args_{k}", (s0, s0 + 4))  # the call stands for srun too
        at = s0 + 4
    return b.copy(at, len(text)).done() if k else None


def srun_in_shared_function(text: str) -> Variant | None:
    """Every srun command line's ``srun`` becomes a call of one function defined above the
    first line of code, ``run_step() { srun "$@"; }``, so the function is called several
    times, each call with its own arguments (bash(1) "FUNCTIONS": the body runs once per call,
    ``"$@"`` the call's words). Only where two or more srun lines apply."""
    reading = read(text)
    spots = []
    for line in reading.lines:
        if first_word(line) != "srun" or line.continues or POSITIONAL.search(line.text) or \
                line.text.rstrip().endswith(("&&", "||", "|")) or not reading.code(line.start):
            continue
        s0 = line.start + line.text.index("srun")
        if text[s0 + 4:s0 + 5] in (" ", "\t"):
            spots.append(s0)
    if len(spots) < 2:
        return None
    line_start = text.rfind("\n", 0, spots[0]) + 1
    if line_start != spots[0]:
        return None  # the first srun line is indented (a branch): define the function at top
    b = Builder(text)
    top = above_comments(text, line_start)
    b.copy(0, top).put('run_step() { srun "$@"; }\n')
    at = top
    for s0 in spots:
        b.copy(at, s0).put("run_step", (s0, s0 + 4))  # the call stands for srun
        at = s0 + 4
    return b.copy(at, len(text)).done()


def _quoted_end(text: str, i: int) -> int | None:
    """The offset after the closing quote of the quoted string opening at *i*."""
    q = text[i]
    j = i + 1
    while j < len(text):
        if q == '"' and text[j] == "\\":
            j += 2
            continue
        if text[j] == q:
            return j + 1
        if q == '"' and text.startswith("$(", j):
            return None  # a command substitution may hold quotes of its own: not followed
        j += 1
    return None


def _hoist(b: Builder, text: str, line: Line, at: int, span: tuple[int, int], define: str,
           reference: str) -> int:
    """Move ``text[span]`` of *line* into a definition on the line above (``define`` holds
    ``{}`` where the moved text goes, e.g. ``"A=({})"``) and put *reference* in its place;
    return the offset the builder has copied up to."""
    start, end = span
    indent = line.text[:len(line.text) - len(line.text.lstrip())]
    top = above_comments(text, line.start)
    head, tail = define.split("{}")
    b.copy(at, top).put(f"{indent}{head}").copy(start, end).put(f"{tail}\n")
    b.copy(top, start).put(reference, (start, end))
    return end


def command_string_variable(text: str) -> Variant | None:
    """``srun … bash -c '<body>'`` -> ``TASK_CMD_1='<body>'`` on the line before and
    ``srun … bash -c "$TASK_CMD_1"`` (the same string reaches bash -c; double-quoted bodies keep
    their double quotes, so the batch shell expands them once, as before)."""
    reading = read(text)
    b, at, k = Builder(text), 0, 0
    for line in reading.lines:
        if first_word(line) != "srun" or line.continues or not reading.code(line.start):
            continue
        m = re.search(r"\bbash\s+-c\s+(?=['\"])", line.text)
        if not m:
            continue
        q = line.start + m.end()
        end = _quoted_end(text, q)
        if end is None or end > line.end:
            continue
        k += 1
        at = _hoist(b, text, line, at, (q, end), f"TASK_CMD_{k}={{}}", f'"$TASK_CMD_{k}"')
    return b.copy(at, len(text)).done() if k else None


def launcher_arguments_array(text: str) -> Variant | None:
    """The launcher's leading ``--opt=value``/``--flag`` words move into an array defined on the
    line before: ``LAUNCH_ARGS_1=(--nnodes=2 …)`` and ``torchrun "${LAUNCH_ARGS_1[@]}" …`` (only
    for a launcher the batch-script line runs, so the array is in scope)."""
    reading = read(text)
    b, at, k = Builder(text), 0, 0
    spots = launcher_spots(text)
    for line in reading.lines:
        m = next((m for m in spots if line.start <= m.start() < line.end
                  and not reading.quoted[m.start()]), None)
        if m is None or line.continues or not reading.code(line.start):
            continue
        i, words = m.end(), []
        while True:
            j = i
            while j < line.end and text[j] in " \t":
                j += 1
            if j >= line.end or not text.startswith("--", j):
                break
            e = _word_end(text, j)
            if "=" not in text[j:e] and text[j:e] != "--standalone":
                break
            words.append((j, e))
            i = e
        if not words:
            continue
        k += 1
        at = _hoist(b, text, line, at, (words[0][0], words[-1][1]), f"LAUNCH_ARGS_{k}=({{}})",
                    f'"${{LAUNCH_ARGS_{k}[@]}}"')
    return b.copy(at, len(text)).done() if k else None


def srun_options_array(text: str) -> Variant | None:
    """srun's options move into an array: ``SRUN_ARGS_1=(--nodes=2 …)`` and
    ``srun "${SRUN_ARGS_1[@]}" prog …``."""
    reading = read(text)
    b, at, k = Builder(text), 0, 0
    for line in reading.lines:
        if first_word(line) != "srun" or line.continues or not reading.code(line.start):
            continue
        s0 = line.start + line.text.index("srun") + 4
        prog = _srun_program(text, s0)
        if prog is None or prog > line.end:
            continue
        opts = text[s0:prog].strip()
        if not opts or "\\\n" in text[s0:prog]:
            continue
        first = s0 + text[s0:prog].index(opts[0])
        last = first + len(opts)
        k += 1
        at = _hoist(b, text, line, at, (first, last), f"SRUN_ARGS_{k}=({{}})",
                    f'"${{SRUN_ARGS_{k}[@]}}"')
    return b.copy(at, len(text)).done() if k else None


def continuation_lines(text: str) -> Variant | None:
    """Long srun/launcher lines broken before each option, outside quotes: `` \\``+newline."""
    reading = read(text)
    edits = []
    for line in reading.lines:
        if not is_launch_line(line) or not reading.code(line.start):
            continue
        for m in re.finditer(r"[ \t]+(?=--?[A-Za-z])", line.text):
            s = line.start + m.start()
            if m.start() and not reading.quoted[s] and text[s - 1] != "\\":
                edits.append((s, line.start + m.end(), " \\\n    "))
    return with_edits(text, edits)


def heredoc_script(text: str) -> Variant | None:
    """The body after the directive block is written by a quoted here-document to a file that
    the batch shell then execs with the same arguments (``exec bash "$BODY" "$@"``)."""
    lines = text.splitlines(keepends=True)
    head = 0
    for n, ln in enumerate(lines):
        if n == 0 or not ln.strip() or ln.lstrip().startswith("#"):
            head += len(ln)
            continue
        break
    body = text[head:]
    if not body.strip() or "EOF_BODY" in body or re.search(r"\$0|BASH_SOURCE|\$\{0", body) or \
            any(LOOKALIKE.match(ln) for ln in body.splitlines()) or \
            re.search(r"sbatch-lint:", body):
        return None
    b = Builder(text).copy(0, head)
    b.put('BODY_SCRIPT=$(mktemp)\ncat > "$BODY_SCRIPT" <<\'EOF_BODY\'\n').copy(head, len(text))
    b.put(("" if text.endswith("\n") else "\n") + 'EOF_BODY\nexec bash "$BODY_SCRIPT" "$@"\n')
    return b.done()


EXPORT_LINE = re.compile(r"^([ \t]*)export[ \t]+([A-Za-z_][A-Za-z0-9_]*)=", re.MULTILINE)


def _unexported(text: str, before: Callable[[str], str],
                after: Callable[[str], str]) -> Variant | None:
    """Each single-assignment ``export N=V`` line as ``N=V`` with ``before(N)`` on a line of its
    own above it and ``after(N)`` below it (each skipped when empty)."""
    reading = read(text)
    b, at, k = Builder(text), 0, 0
    for line in reading.lines:
        m = EXPORT_LINE.match(line.text)
        if not m or line.continues or not reading.code(line.start):
            continue
        if _word_end(text, line.start + m.end()) != line.end:
            continue  # more than one assignment, or a command after it
        k += 1
        kw, name = line.start + len(m.group(1)), m.group(2)
        b.copy(at, kw)
        if before(name):
            b.put(f"{before(name)}\n{m.group(1)}")
        b.put("", (kw, line.start + m.start(2))).copy(line.start + m.start(2), line.end)
        if after(name):
            b.put(f"\n{m.group(1)}{after(name)}")
        at = line.end
    return b.copy(at, len(text)).done() if k else None


def split_exports(text: str) -> Variant | None:
    """``export N=V`` -> ``N=V`` then ``export N`` on the next line (one assignment per line)."""
    return _unexported(text, lambda n: "", lambda n: f"export {n}")


def export_first(text: str) -> Variant | None:
    """``export N=V`` -> ``export N`` then ``N=V`` (bash(1): the attribute is the variable's)."""
    return _unexported(text, lambda n: f"export {n}", lambda n: "")


def allexport(text: str) -> Variant | None:
    """``export N=V`` -> ``set -a``, ``N=V``, ``set +a`` (bash(1) set -a: every variable
    assigned while it is on is exported, and stays exported)."""
    return _unexported(text, lambda n: "set -a", lambda n: "set +a")


def sourced_exports(text: str) -> Variant | None:
    """Each unindented single-assignment ``export N=V`` line moves into a file next to the
    script, ``env_K.sh``, sourced on its line: ``source ./env_K.sh`` (bash(1) ``source``: the
    file's commands run in the current shell, with the caller's positional parameters when
    none are given). Not for values that name the script itself (``$0``, ``BASH_SOURCE``,
    ``LINENO``), which differ in the other file."""
    reading = read(text)
    b, at, files, moved = Builder(text), 0, {}, []
    for line in reading.lines:
        m = EXPORT_LINE.match(line.text)
        if not m or m.group(1) or line.continues or not reading.code(line.start):
            continue
        if _word_end(text, line.start + m.end()) != line.end or \
                re.search(r"\$\{?0|BASH_SOURCE|LINENO", line.text):
            continue
        name = f"env_{len(files) + 1}.sh"
        files[name] = line.text + "\n"
        b.copy(at, line.start).put(f"source ./{name}", (line.start, line.end))
        moved.append((line.start, line.end))
        at = line.end
    variant = b.copy(at, len(text)).done() if files else None
    if variant is not None:
        variant.files, variant.moved = files, moved
    return variant


def declare_exports(text: str) -> Variant | None:
    """``export N=V`` -> ``declare -x N=V``."""
    reading = read(text)
    edits = []
    for line in reading.lines:
        m = EXPORT_LINE.match(line.text)
        if m and reading.code(line.start) and not line.continues:
            kw = line.start + len(m.group(1))
            edits.append((kw, kw + len("export"), "declare -x"))
    return with_edits(text, edits)


#: name -> (kind of rewrite, the rewrite); DESIGN.md "Tests" lists the kinds
REWRITES: dict[str, tuple[str, Callable[[str], Variant | None]]] = {
    "rename": ("renamed variables", rename_variables),
    "braces": ("$V / ${V}", brace_expansions),
    "opt-space": ("--opt=v / --opt v", option_spacing),
    "separators": ("_ / - spellings", swap_separators),
    "launcher": ("launcher spellings", launcher_spelling),
    "interpreter-options": ("launcher spellings", interpreter_options),
    "timeout": ("wrappers", wrapper("timeout 3h ")),
    "nohup": ("wrappers", wrapper("nohup ")),
    "env": ("wrappers", wrapper("env ")),
    # an option value that is not literal: the wrapper takes it as the value (facts/argv.py)
    "nsys-var": ("wrappers", wrapper('nsys profile -o "$NSYS_OUT" ')),
    "function": ("the launch moved into a function", into_function),
    "function-args": ("the launch moved into a function", srun_in_function),
    "function-twice": ("the launch moved into a function", srun_in_shared_function),
    "bash-c-var": ("a variable run by bash -c", command_string_variable),
    "launch-array": ("an array of options", launcher_arguments_array),
    "srun-array": ("an array of options", srun_options_array),
    "continuation": ("continuation lines", continuation_lines),
    "heredoc": ("a heredoc-generated script", heredoc_script),
    "export-split": ("other export forms", split_exports),
    "export-first": ("other export forms", export_first),
    "allexport": ("other export forms", allexport),
    "declare-x": ("other export forms", declare_exports),
    "sourced-env": ("assignments moved into a sourced file", sourced_exports),
}
