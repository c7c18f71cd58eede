"""Provenance of the file: is it the job as it will run, or something another program completes?

- a **template**: placeholders that a person or a tool fills in before submitting
  (``<ACCOUNT>``, ``{{ nodes }}``, ``${{ inputs.gpus }}``, ``@NODES@``), or a header that says so
  ("this file is a template");
- a **generator's input**: a file named as a template engine's input (``job.sbatch.j2``,
  ``run.slurm.in``, ``.tmpl``, ``.template``) or holding template-engine blocks (``{% … %}``);
- a script whose resources a **launcher next to it** passes on the ``sbatch`` command line
  (a ``submit.sh`` or ``launch.py`` in the same folder that runs ``sbatch --nodes 4 … FILE``):
  options given there override the file's ``#SBATCH`` lines (sbatch(1): "options on the command
  line take precedence over those in the script").

- a **template a program elsewhere in the repository fills**: a code file of the script's
  repository names the script's file name next to a fill call (``substitute_keys(params,
  os.path.join(src, 'jobsub'), out)``, ``Template(open("job.sh").read()).substitute(...)``,
  ``sed -e "s/@N@/4/" job.sh``, ``envsubst < job.sh``): the ``${name}`` in its ``#SBATCH``
  lines are the program's placeholders, not shell text sbatch receives.

Findings that rest on what the file does not say (a rule's ``rests_on`` options) are then only
info, and their message names the reason. Other files are read only when the linted file is on
disk, never executed, each through :func:`read_sibling` (at most :data:`MAX_SIBLING_BYTES`):
in its own folder only Python files and files named like a launcher (:data:`LAUNCHER_NAME`),
at most :data:`MAX_SIBLINGS`; in its repository (the nearest folder at most
:data:`REPO_LEVELS` levels up that holds ``.git``; none: no search) only code files
(:data:`FILLER_NAME`) at most :data:`REPO_DEPTH` folders below the root, skipping hidden and
vendored folders, at most :data:`MAX_REPO_ENTRIES` directory entries looked at,
:data:`MAX_REPO_FILES` files and :data:`MAX_REPO_BYTES` bytes in all.
"""
from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

from ..elsewhere import list_files, read_text

#: placeholders of a template, on a directive or a command line (not in a comment): the file
#: is a template when one of these appears (the one template detector; ``job`` reads
#: :func:`is_completed_elsewhere`, the value checks read :data:`VALUE_PLACEHOLDER`). ``${{…}}``
#: and ``{{…}}`` are two alternatives, not ``\$?\{\{``: the same matches, but an optional
#: first ``$`` made every ``$`` of a script a place to try (a search 4-5 times slower)
PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*>|\$\{\{.*?\}\}|\{\{.*?\}\}|@[A-Z][A-Z0-9_]*@|"
                         r"\{%.*?%\}")
#: the forms of :data:`PLACEHOLDER` without ``{``, each searched on its own
#: (:func:`_holds_placeholder`): in a text without ``{{`` and ``{%`` they tell whether it holds
#: a placeholder, and each starts with its own literal ``<`` or ``@``, which the search finds
#: five times faster than a look at every character for either
PLACEHOLDER_NO_BRACES = (re.compile(r"<[A-Z][A-Z0-9_]*>"), re.compile(r"@[A-Z][A-Z0-9_]*@"))
#: a value someone still fills in: a :data:`PLACEHOLDER` or a looser form that the corpus's
#: templates use inside one value (``<your account>``, ``{name}``, ``{ name }``, ``##NAME##``,
#: ``__NAME__``, ``NAME_PLACEHOLDER``, ``[your email]``, an unclosed ``{{``/``}}``/``{%``/``%}``
#: or ``<name``): never judged as a value, though alone it does not make the file a template
#: (``<`` and ``{}`` have other meanings in shell code)
VALUE_PLACEHOLDER = re.compile(PLACEHOLDER.pattern + r"|<[^<>\n]*>|\{\{|\}\}|\{%|%\}|"
                               r"\{ *[A-Za-z_][\w.]* *\}|##\w+##|__[A-Z][A-Z0-9_]*__|"
                               r"[A-Z][A-Z0-9_]*PLACEHOLDER|\[your [^]]*\]|<[A-Za-z_]")
#: a comment near the top that says the file is a template
TEMPLATE_HEADER = re.compile(r"\b(this|the)\s+(file|script)\s+is\s+a\s+template\b|"
                             r"^#+\s*template\b|\btemplate\s+(file|script)\b", re.IGNORECASE)
HEADER_LINES = 15
#: a prefix of the text that usually holds the header's lines (:func:`_head_lines`)
_HEAD_CHARS = 2048
#: file names of template-engine inputs (Jinja, autoconf/CMake configure_file, Go/mustache)
GENERATOR_SUFFIXES = (".j2", ".jinja", ".jinja2", ".in", ".tmpl", ".tpl", ".template",
                      ".mustache")
MAX_SIBLINGS = 16
MAX_SIBLING_BYTES = 256 * 1024
#: the sibling files read as possible launchers: Python files and scripts named like one
#: (a regular expression searched in each name: sbatch_lsp/elsewhere.list_files): the words
#: submit, start, sweep, schedul, launch, run, queue in any case, grouped by their first letter
#: (the same names; a folder of a thousand scripts is searched a third faster)
LAUNCHER_NAME = r"(?i:s(?:ubmit|tart|weep|chedul)|launch|run|queue)|.\.py$"
#: sbatch command-line options -> the resource they set (the names rules' ``rests_on`` use)
RESOURCE_OF = {"-N": "nodes", "--nodes": "nodes", "-n": "ntasks", "--ntasks": "ntasks",
               "--ntasks-per-node": "ntasks-per-node", "-c": "cpus-per-task",
               "--cpus-per-task": "cpus-per-task", "-G": "gpus", "--gpus": "gpus",
               "--gpus-per-node": "gpus", "--gpus-per-task": "gpus", "--gres": "gpus",
               "--exclusive": "gpus", "-p": "partition", "--partition": "partition"}
#: every resource (a template or a generator may fill in any of them)
ANY = frozenset(RESOURCE_OF.values())
#: what a generator's input leaves to the generator besides: the text of the directive lines
#: (CMake's configure_file, envsubst and string.Template replace ``${VAR}`` there too)
GENERATED = ANY | {"directives"}
#: a comment near the top that says the file is a generator's input
GENERATOR_HEADER = re.compile(r"\bgenerator\s+(script|input)\b|\binput\s+(for|to|of)\s+(the|a)\s+"
                              r"([\w-]+\s+)?generator\b", re.IGNORECASE)


@dataclass(frozen=True)
class Provenance:
    """Where the job's resources may come from besides this file: ``kind`` (``template``,
    ``generator input``, ``launcher``), ``reason`` (a clause for messages), the span of the
    evidence in this file (0, 0 when it is elsewhere) and the resources supplied
    (:data:`RESOURCE_OF` values)."""

    kind: str
    reason: str
    start: int
    end: int
    supplies: frozenset[str]


def is_placeholder(value: str) -> bool:
    """Whether ``value`` (a directive's value or line) holds a placeholder that is filled in
    before submission (:data:`VALUE_PLACEHOLDER`)."""
    return VALUE_PLACEHOLDER.search(value) is not None


def is_completed_elsewhere(prov: Provenance | None) -> bool:
    """Whether the file is a template or a generator's input: a program or a person fills it in
    before it is submitted, so what it leaves out may be supplied then."""
    return prov is not None and prov.kind in ("template", "generator input")


def provenance_of(text: str, path: str) -> Provenance | None:
    """The provenance of the script ``text`` linted as ``path`` (None: nothing says another
    program completes it). A sibling launcher is looked for only when ``path`` is a file on
    disk; unreadable siblings are skipped."""
    return _template(text) or _generator_input(text, path) or _launcher(path) or _filler(path)


def _template(text: str) -> Provenance | None:
    pos = 0
    braces = "{{" in text or "{%" in text
    if (not braces and "<" not in text and "@" not in text) or \
            not _holds_placeholder(text, braces):
        # (each form starts so: cheap tests first) no line holds a placeholder (none spans
        # lines): only a header comment can say so, and each form of that says "template"
        lines = _head_lines(text)
        if "template" not in "".join(lines).lower():
            return None
    else:
        lines = text.splitlines(keepends=True)
    for n, line in enumerate(lines):
        stripped = line.lstrip()
        comment = stripped.startswith("#") and not stripped.startswith("#SBATCH")
        if comment and n < HEADER_LINES and TEMPLATE_HEADER.search(stripped):
            return Provenance("template", "the file says it is a template", pos,
                              pos + len(line.rstrip("\n")), ANY)
        m = None if comment else PLACEHOLDER.search(line)
        if m is not None and not m.group(0).startswith("{%"):
            return Provenance("template", f"the file is a template (`{m.group(0)}` is a "
                              "placeholder filled in before submission)", pos + m.start(),
                              pos + m.end(), ANY)
        pos += len(line)
    return None


def _holds_placeholder(text: str, braces: bool) -> bool:
    """Whether :data:`PLACEHOLDER` finds a placeholder in ``text``; ``braces`` says whether the
    text holds ``{{`` or ``{%`` (without them the forms without braces are enough)."""
    if braces:
        return PLACEHOLDER.search(text) is not None
    return any(rx.search(text) is not None for rx in PLACEHOLDER_NO_BRACES)


def _generator_input(text: str, path: str) -> Provenance | None:
    if path.lower().endswith(GENERATOR_SUFFIXES):
        return Provenance("generator input", f"{Path(path).name} is a generator's input, not "
                          "the script that is submitted", 0, 0, GENERATED)
    m = re.search(r"\{%.*?%\}", text) if "{%" in text else None
    if m is not None:
        return Provenance("generator input", "the file holds template-engine blocks "
                          f"(`{m.group(0)[:40]}`): a generator's input", m.start(), m.end(),
                          GENERATED)
    pos = 0
    lines = _head_lines(text)
    if "generator" not in "".join(lines).lower():  # (each form of the header says it)
        return None
    for line in lines:
        if line.lstrip().startswith("#") and GENERATOR_HEADER.search(line):
            return Provenance("generator input", "the file says it is a generator's input",
                              pos, pos + len(line.rstrip("\n")), GENERATED)
        pos += len(line)
    return None


def _head_lines(text: str) -> list[str]:
    """The first :data:`HEADER_LINES` of ``text`` with their line breaks
    (``text.splitlines(keepends=True)[:HEADER_LINES]``), without splitting the rest of a long
    text."""
    lines = text[:_HEAD_CHARS].splitlines(keepends=True)
    if len(lines) > HEADER_LINES:  # (the next line starts in the prefix: these are whole)
        return lines[:HEADER_LINES]
    return text.splitlines(keepends=True)[:HEADER_LINES]


def _launcher(path: str) -> Provenance | None:
    mine = Path(path).name
    for sib in launcher_candidates(path):
        text = read_sibling(sib)
        if text is None or "sbatch" not in text or mine not in text:
            continue
        supplied = submitted_options(text, mine)
        if supplied:
            names = ", ".join(sorted(supplied))
            return Provenance("launcher", f"{os.path.basename(sib)} next to it submits it with "
                              f"its own sbatch options ({names})", 0, 0, frozenset(supplied))
    return None


def launcher_candidates(path: str) -> list[str]:
    """The paths of the sibling files of ``path`` read as possible launchers, each the ``str``
    of its Path (at most :data:`MAX_SIBLINGS`, in name order; empty when ``path`` is no file on
    disk or its folder cannot be listed). The folder is listed through sbatch_lsp/elsewhere.py
    (once per folder and modification time), which records the listing for the result cache."""
    me = Path(path)
    try:
        if not me.is_file():
            return []
    except (OSError, ValueError):
        return []
    folder, mine = me.parent, me.name
    # (the first MAX_SIBLINGS only: a folder of a thousand run_*.sh is not walked per file)
    first = list_files(folder, LAUNCHER_NAME)[:MAX_SIBLINGS + 1]
    return [p for n, p in _sibling_paths(str(folder), first) if n != mine][:MAX_SIBLINGS]


@lru_cache(maxsize=256)
def _sibling_paths(where: str, names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(name, path) of each of ``names`` in the folder ``where`` (``.``: the name alone);
    memoised: every script of a folder has the same first siblings."""
    return tuple((n, n if where == "." else os.path.join(where, n)) for n in names)


def read_sibling(path: Path | str) -> str | None:
    """The text of a file other than the script (a sibling launcher, a repository file), or
    None when it is unreadable or larger than
    :data:`MAX_SIBLING_BYTES` (read through sbatch_lsp/elsewhere.py: memoised and recorded)."""
    return read_text(path, MAX_SIBLING_BYTES)


def submitted_options(text: str, name: str) -> set[str]:
    """The resources (:data:`RESOURCE_OF` values) that ``sbatch`` command lines in ``text`` (a
    shell or Python launcher) set for the script named ``name``: the options between ``sbatch``
    and that name, read as shell words or as the string literals of a Python list."""
    out: set[str] = set()
    for line in _joined_lines(text):
        if "sbatch" not in line or name not in line:
            continue
        words = _words(line)
        for k, w in enumerate(words):
            if w.rsplit("/", 1)[-1] != "sbatch":
                continue
            rest = words[k + 1:]
            if not any(w.rsplit("/", 1)[-1] == name for w in rest):
                continue
            for opt in rest:
                if opt.rsplit("/", 1)[-1] == name:
                    break
                key = opt.split("=", 1)[0]
                if key in RESOURCE_OF:
                    out.add(RESOURCE_OF[key])
                elif re.fullmatch(r"-[NncGp]\S+", key):  # -N2
                    out.add(RESOURCE_OF[key[:2]])
    return out


def _joined_lines(text: str) -> list[str]:
    """The lines of ``text`` with backslash continuations joined."""
    return text.replace("\\\n", " ").splitlines()


def _words(line: str) -> list[str]:
    """A line as words: a Python call or list (``["sbatch", "-N", "2", f]``) by its string
    literals and bare names, anything else as shell words (unbalanced quotes: split on blanks)."""
    if re.search(r"[\[\](),]", line):
        return [a or b for a, b in re.findall(r"""["']([^"'\n]*)["']|([^\s"',\[\]()]+)""", line)]
    try:
        return shlex.split(line, comments=True)
    except ValueError:
        return line.split()


#: how far above the script's folder the repository root (a folder holding ``.git``) is looked for
REPO_LEVELS = 4
#: how many folders below the root the repository search goes
REPO_DEPTH = 3
MAX_REPO_FILES = 200
#: directory entries looked at in all (a data folder of a million files is not listed through)
MAX_REPO_ENTRIES = 5000
MAX_REPO_BYTES = 4 * 1024 * 1024
#: the code files read as possible fillers of a template (a Makefile too), as a name pattern
FILLER_NAME = r"\.(py|sh|bash|zsh|pl|rb|jl|r|R|mk)$|^Makefile$"
#: folders never searched: build output, environments, vendored packages
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", "env", "site-packages", "build",
                       "dist", "target"})
#: a call that fills a template's placeholders: string.Template.substitute /
#: safe_substitute (and helpers named after it), str.format / format_map, str.replace, Jinja's
#: render, sed's and perl's s///, envsubst, a fill_* helper
FILL = re.compile(r"\b(\w*substitute\w*|format(_map)?|replace|render|Template|sed|perl|"
                  r"envsubst|fill\w*)\b")
#: how many lines either side of the name a fill call may be
FILL_WINDOW = 5
#: an ``sbatch`` command (not ``sbatch_path``): a line that submits the file fills nothing
#: (``"sbatch {} job.sh".format(opts)`` builds a command line; the launcher search reads it)
SUBMIT = re.compile(r"\bsbatch\b")


def repository_root(folder: str) -> str | None:
    """The nearest of ``folder`` (a resolved path) and its :data:`REPO_LEVELS` ancestors that
    holds ``.git`` (a folder, or a file in a git worktree), or None."""
    for _ in range(REPO_LEVELS + 1):
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return None


def repository_files(path: str) -> list[str]:
    """The code files of the repository holding the file ``path`` that the filler search may
    read (see the module docstring for the bounds), breadth first in name order, ``path``
    itself left out, as path strings; empty when ``path`` is no file on disk or lies in no
    repository. Each folder's code files are listed through sbatch_lsp/elsewhere.py, which
    records the listing for the result cache (a code file added there is seen)."""
    try:  # (a symbolic link loop resolves as far as it goes, and is then no file)
        mine = os.path.realpath(path)
    except (OSError, ValueError):
        return []
    root = repository_root(os.path.dirname(mine)) if os.path.isfile(mine) else None
    if root is None:
        return []
    out: list[str] = []
    level = [root]
    budget = MAX_REPO_ENTRIES
    for _ in range(REPO_DEPTH + 1):
        below: list[str] = []
        for d in level:
            try:
                folders, entries = _subfolders(d, os.stat(d).st_mtime_ns)
            except (OSError, ValueError):
                continue
            budget -= entries
            if budget < 0:
                return out
            out += [f for f in (os.path.join(d, n) for n in list_files(d, FILLER_NAME))
                    if f != mine]
            if len(out) >= MAX_REPO_FILES:
                return out[:MAX_REPO_FILES]
            below += folders
        level = below
    return out


@lru_cache(maxsize=1024)
def _subfolders(folder: str, mtime_ns: int) -> tuple[tuple[str, ...], int]:
    """(the folders below ``folder`` the search enters, sorted; how many entries it holds,
    counted up to :data:`MAX_REPO_ENTRIES` + 1); memoised by its modification time."""
    names: list[str] = []
    n = 0
    try:
        with os.scandir(folder) as it:
            for e in it:
                n += 1
                if n > MAX_REPO_ENTRIES:
                    break
                try:
                    if e.is_dir(follow_symlinks=False) and not e.name.startswith(".") and \
                            e.name not in SKIP_DIRS:
                        names.append(e.name)
                except OSError:
                    continue
    except (OSError, ValueError):
        return (), 0
    return tuple(os.path.join(folder, x) for x in sorted(names)), n


def naming_files(path: str) -> list[tuple[Path, str]]:
    """The repository files (:func:`repository_files`) whose text names the file name of
    ``path``, with their text; reading stops after :data:`MAX_REPO_BYTES` bytes in all. Each
    file is read through :func:`read_sibling` (recorded for the result cache)."""
    name = Path(path).name
    out: list[tuple[Path, str]] = []
    budget = MAX_REPO_BYTES
    for f in repository_files(path):
        text = read_sibling(f)
        if text is None:
            continue
        budget -= len(text)
        if budget < 0:
            break
        if name in text:
            out.append((Path(f), text))
    return out


def fill_near(text: str, name: str) -> tuple[int, str] | None:
    """(1-based line, fill call) of the first fill call (:data:`FILL`) within
    :data:`FILL_WINDOW` lines of a line naming ``name`` as a whole file name (quoted, or the
    last part of a path), in ``text`` (a code file), the nearest first (after the name
    before before it at equal distance); lines that run
    ``sbatch`` count for neither; None when there is none."""
    named = re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?![\w.-])")
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if not named.search(line) or SUBMIT.search(line):
            continue
        for k in sorted(range(max(0, n - FILL_WINDOW), min(len(lines), n + FILL_WINDOW + 1)),
                        key=lambda k: (abs(k - n), k < n)):
            m = FILL.search(lines[k])
            if m is not None and not SUBMIT.search(lines[k]):
                return k + 1, m.group(0)
    return None


def _filler(path: str) -> Provenance | None:
    me = Path(path)
    for f, text in naming_files(path):
        found = fill_near(text, me.name)
        if found is None:
            continue
        try:
            where = f.relative_to(repository_root(os.path.dirname(os.path.realpath(path)))
                                  or f.parent)
        except ValueError:
            where = Path(f.name)
        line, call = found
        return Provenance("generator input", f"{where} in its repository fills it in "
                          f"(`{call}` on line {line}, next to its name): a template, not the "
                          "script that is submitted", 0, 0, GENERATED)
    return None



#: a commented-out assignment, with or without ``export``: ``# export HF_HOME="/path/..."``
COMMENTED_ASSIGNMENT = re.compile(r"^\s*#+\s*(?:export\s+)?([A-Z_][A-Z0-9_]*)=")
#: a comment that tells the user to set variables: ``Export HF_TOKEN, HF_HOME and UV_CACHE_DIR``,
#: ``set CONTAINER_IMAGE before running``; the names are the upper-case words after the verb
TELL = re.compile(r"\b(?:export|set|define|provide)\b(.*)", re.IGNORECASE)
#: an upper-case variable name in prose (two characters or more after the first)
NAME = re.compile(r"(?<![\w$])\$?\{?([A-Z_][A-Z0-9_]{2,})\b")
#: a submission with variables in its environment: ``PROMPT="..." sbatch job.sh``
SUBMIT_WITH = re.compile(r"^\s*#+\s*((?:[A-Z_][A-Z0-9_]*=(?:\"[^\"]*\"|'[^']*'|\S+)\s+)+)"
                         r"(?:\S*/)?sbatch\b")


@dataclass(frozen=True)
class Told:
    """A comment of the script that tells the user to set ``name`` before submitting: the
    span of the comment line (offsets into the script)."""

    name: str
    start: int
    end: int


def told_note(told: Told, line: int) -> str:
    """The clause a finding that rests on ``told.name`` being unset adds when it drops to info
    (``line``: the comment's 1-based line)."""
    return (f" (info only: the comment on line {line} tells you to set {told.name} before "
            "submitting, and sbatch passes your environment to the job)")


@lru_cache(maxsize=8)
def told_to_set(text: str) -> Mapping[str, Told]:
    """The variables the script's comments tell the user to set in the submitting environment,
    each with the first comment line that says so: a commented-out ``export NAME=...`` or
    ``NAME=...``, a sentence that tells to export or set upper-case names (``Export HF_TOKEN
    and HF_HOME on shared storage``), or a submission ``NAME=... sbatch ...``. sbatch passes
    the submitting environment to the job (its default ``--export=ALL``, sbatch(1)), so a
    finding that rests on such a variable being unset rests on what the user was told to do.
    ``#SBATCH`` lines are no comments here. Memoised by the text (several rules ask); the
    mapping is read-only."""
    out: dict[str, Told] = {}
    pos = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        stripped = body.lstrip()
        if stripped.startswith("#") and not stripped.startswith(("#SBATCH", "#!")):
            names: list[str] = []
            m = COMMENTED_ASSIGNMENT.match(body)
            if m is not None:
                names.append(m.group(1))
            m2 = SUBMIT_WITH.match(body)
            if m2 is not None:
                names += re.findall(r"([A-Z_][A-Z0-9_]*)=", m2.group(1))
            m3 = TELL.search(stripped)
            if m is None and m3 is not None:
                names += NAME.findall(m3.group(1))
            for n in names:
                out.setdefault(n, Told(n, pos, pos + len(body)))
        pos += len(line)
    return MappingProxyType(out)
