"""Files the batch script sources from disk: ``source ./env.sh``, ``. "$SCRIPT_DIR/common.sh"``,
``source ${SLURM_SUBMIT_DIR}/vars.sh``.

``source FILE`` (``. FILE``) reads FILE and runs its commands in the current shell (bash(1)
"SHELL BUILTIN COMMANDS", ``source``): its assignments, exports and ``set -a`` are the script's
own from that line on. What is read, and what is assumed:

- Where the file is. sbatch sends the script's text with the job, and slurmstepd writes it
  to the job's spool folder as ``slurm_script`` and runs that copy (src/slurmd/slurmstepd/
  mgr.c ``_make_batch_script``, Slurm 22.05), so
  ``$0`` and ``${BASH_SOURCE[0]}`` of the batch script name the spool copy at run time, and a
  relative path is read from the working directory, the submit folder unless ``--chdir`` says
  otherwise (sbatch(1) ``--chdir``: "The default ... is the current working directory of the
  sbatch process"). We assume the job is submitted from the folder the script lives in, and
  read ``$SLURM_SUBMIT_DIR``, ``$PWD``, ``$(pwd)``, ``$(dirname "$0")``,
  ``$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)`` and relative paths as that folder (in a
  sourced file, ``BASH_SOURCE`` names the sourced file, so its forms are that file's folder).
  A path that needs anything else (``$HOME``, ``~``, an absolute path, an unknown variable) is
  not read: a file outside the script's tree is the site's (``/etc/profile``, a module system)
  and may differ between the submit host and the compute node.
- What is read: a regular file of at most :data:`MAX_BYTES` bytes with no NUL byte, decoded as
  UTF-8 (undecodable bytes replaced); at most :data:`MAX_DEPTH` levels of files sourcing files,
  each file once per chain (no cycles). Nothing is run.
- What counts: the file's commands that change the shell's variables (standalone assignments,
  ``export``/``declare``/``typeset``/``readonly``/``unset``/``set``) at top level, not inside a
  function or a command substitution. Everything they hold is placed at the end of the
  ``source`` command (so the value reaches the commands after it, not the command itself or
  those before it) and carries its provenance (:class:`~sbatch_lsp.shell.model.Imported`):
  findings about the file's own text are not the script's (the linter drops them), and a fix
  never edits it.
  Functions the file defines and the commands it runs are not read.
- In the editor a document open for the file wins over the disk (:func:`documents`).
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from .. import elsewhere
from .masks import match_paren
from .model import (Assignment, Command, Expansion, Imported, Script, Sourcing, Word,
                    sort_commands)

#: the largest sourced file read, in bytes
MAX_BYTES = 256 * 1024
#: files sourcing files: the batch script's own ``source`` lines are depth 1
MAX_DEPTH = 3
#: commands of a sourced file that change the sourcing shell's variables
STATE_COMMANDS = frozenset({"export", "declare", "typeset", "readonly", "unset", "set"})
#: variables that name the submit folder (sbatch(1) OUTPUT ENVIRONMENT VARIABLES; bash PWD)
SUBMIT_FOLDER = frozenset({"SLURM_SUBMIT_DIR", "PWD"})
#: a command substitution that names a folder: ``dirname "$0"``, ``cd "$(dirname …)" && pwd``
FOLDER_WORDS = frozenset({"cd", "dirname", "pwd", "realpath", "readlink", "-f", "-e", "-m", "-P",
                          "-L", "--", "&&", ";"})
SELF_REF = re.compile(r"\$\{?BASH_SOURCE(?:\[0\]|\[@\])?\}?")
ZERO_REF = re.compile(r"\$\{?0\}?")
VAR = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")
DEV_NULL = re.compile(r"\d*&?>>?\s*/dev/null")

#: what an editor holds open: path -> text, or None for a file it does not hold
Documents = Callable[[str], "str | None"]
_documents: ContextVar[Documents | None] = ContextVar("sbatch_lsp_documents", default=None)


@contextmanager
def documents(lookup: Documents) -> Iterator[None]:
    """Inside the ``with`` block, a sourced file is read from ``lookup(path)`` (an absolute,
    normalised path) when it answers with a text, from the disk otherwise: the language server
    passes its open documents, which win over what is saved."""
    token = _documents.set(lookup)
    try:
        yield
    finally:
        _documents.reset(token)


def read_sourced(path: str) -> str | None:
    """The text of the sourced file at ``path`` (an open editor document's first), or None
    when it is absent, not a regular file, unreadable, over :data:`MAX_BYTES` or not text (a
    NUL byte). A file on disk is read through sbatch_lsp/elsewhere.py, so the lint's result
    (and the CLI cache entry) records its digest. Never raises."""
    lookup = _documents.get()
    text = lookup(path) if lookup is not None else None
    if text is None:
        text = elsewhere.read_text(path, MAX_BYTES)
    return text if text is not None and len(text) <= MAX_BYTES and "\0" not in text else None


@dataclass(frozen=True)
class Folders:
    """The folders a path may be relative to: ``submit`` (the job's working directory, assumed
    to be the batch script's folder) and ``own`` (the folder of the file holding the ``source``
    line, which ``BASH_SOURCE`` names)."""

    submit: str
    own: str


def resolve(word: Word, script: Script, at: int, folders: Folders, depth: int = 0) -> str | None:
    """The absolute path ``source WORD`` reads, or None when it rests on anything but the
    script's folder (see the module docstring). ``at`` is where the word is (variables are read
    as assigned before it)."""
    text = _resolve_text(word.text, script, at, folders, depth)
    if text is None or not text or "\n" in text:
        return None
    if not os.path.isabs(text):
        if text.startswith("~"):
            return None
        text = os.path.join(folders.submit, text)
    elif not any(_inside(text, f) for f in (folders.submit, folders.own)):
        return None  # an absolute path written in the script: the site's file, not read
    return os.path.normpath(text)


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or below it (``/a/bc`` is not below ``/a/b``)."""
    path, folder = os.path.normpath(path), os.path.normpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _resolve_text(text: str, script: Script, at: int, folders: Folders,
                  depth: int) -> str | None:
    """``text`` (a word as written) with quotes removed and each expansion replaced by the
    folder it names; None when an expansion names anything else."""
    if depth > 8:
        return None
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
        elif c == "'":
            k = text.find("'", i + 1)
            if k < 0:
                return None
            out.append(text[i + 1:k])
            i = k + 1
        elif c == "\\":
            out.append(text[i + 1:i + 2])
            i += 2
        elif c == "`" or text.startswith("$((", i):
            return None
        elif text.startswith("$(", i):
            k = match_paren(text, i + 1, len(text))
            if k < 0:
                return None
            folder = _folder_command(text[i + 2:k], folders)
            if folder is None:
                return None
            out.append(folder)
            i = k + 1
        elif c == "$":
            m = VAR.match(text, i)
            if m is None:
                return None
            name = m.group(1) or m.group(2)
            if name in SUBMIT_FOLDER:
                out.append(folders.submit)
            else:
                a = script.value_at(name, at)
                if a is None or a.value is None or a.origin is not None:
                    return None
                value = _resolve_text(a.value.text, script, a.start, folders, depth + 1)
                if value is None:
                    return None
                out.append(value)
            i = m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _folder_command(inner: str, folders: Folders) -> str | None:
    """The folder a command substitution's text names: ``dirname "$0"``, ``pwd``,
    ``cd "$(dirname "${BASH_SOURCE[0]}")" && pwd``, ``dirname "$(readlink -f "$0")"`` (None
    for any other command)."""
    t = DEV_NULL.sub(" ", inner.replace('"', " ").replace("'", " "))
    own = SELF_REF.search(t) is not None
    zero = ZERO_REF.search(t) is not None
    t = ZERO_REF.sub(" ", SELF_REF.sub(" ", t))
    words = t.replace("$(", " ").replace(")", " ").split()
    if not words or not set(words) <= FOLDER_WORDS:
        return None
    if own or zero:
        return (folders.own if own else folders.submit) if "dirname" in words else None
    return folders.submit if words[-1] == "pwd" else None


def import_sourced(script: Script, path: str | None, parse: Callable[[str], Script],
                   depth: int = 1, chain: frozenset[str] = frozenset(),
                   folders: Folders | None = None) -> None:
    """Read the files ``script``'s top-level ``source`` commands name (``path`` is the script's
    own file; nothing is read without one) and put their variable-changing commands and
    assignments into ``script`` at each ``source`` command's first character, with their
    provenance; recorded in ``script.imports``. ``parse`` builds a file's shell model."""
    if path is None or path.startswith("<") or depth > MAX_DEPTH:
        return
    here = os.path.dirname(os.path.abspath(path))
    folders = Folders(here, here) if folders is None else Folders(folders.submit, here)
    # (the name test in place, not in a call per command: most commands are no `source`)
    for cmd in [c for c in script.commands
                if len(c.words) >= 2 and c.words[0].value in ("source", ".") and _reads_here(c)]:
        target = resolve(cmd.words[1], script, cmd.start, folders)
        if target is None or target in chain or target == os.path.abspath(path):
            continue
        text = read_sourced(target)
        if text is None:
            continue
        inner = parse(text)
        import_sourced(inner, target, parse, depth + 1, chain | {target}, folders)
        _splice(script, inner, cmd, target, text)


def _reads_here(cmd: Command) -> bool:
    """Whether the file a ``source`` command ``cmd`` reads changes the script's own state as
    the script runs: the command is outside a command substitution and a function body
    (including one whose calls hold it), in the script itself, not in a nested string."""
    return not cmd.in_substitution and cmd.function is None and cmd.calls is None and \
        (cmd.script is None or cmd.script.parent is None)


def _splice(script: Script, inner: Script, at_cmd: Command, path: str, text: str) -> None:
    """Copy ``inner``'s variable-changing commands and their assignments into ``script``,
    every offset moved to ``at_cmd.end`` (values keep their own text and offsets in
    ``Assignment.origin`` for expansion)."""
    at = at_cmd.end
    keep = [c for c in inner.commands if not c.in_substitution and c.function is None and
            (not c.words or c.words[0].value in STATE_COMMANDS)]
    kept = {id(c) for c in keep}
    moved: dict[int, Command] = {}
    for c in keep:
        moved[id(c)] = Command([_word(w, at) for w in c.words], [], at, at + 1, script=script)
    for a in inner.assignments:
        if a.command is not None and id(a.command) not in kept or a.local:
            continue
        owner = moved.get(id(a.command)) if a.command is not None else None
        new_a = Assignment(a.name, _word(a.value, at) if a.value is not None else None, at,
                           at + 1, a.exported, a.local, a.append, owner,
                           a.origin or Imported(path, text, a.value))
        if owner is not None and not owner.words:
            owner.assignments.append(new_a)
        script.assignments.append(new_a)
    script.commands.extend(moved.values())
    script.imports.append(Sourcing(at_cmd.start, at_cmd.end, path))
    sort_commands(script.commands)
    script.assignments.sort(key=lambda a: a.start)


def _word(w: Word, at: int) -> Word:
    """``w`` with every offset at ``at`` (its text and literal value kept)."""
    return Word(w.text, at, at + 1, w.value, [_exp(e, at) for e in w.expansions],
                [_exp(e, at) for e in w.early])


def _exp(e: Expansion, at: int) -> Expansion:
    return replace(e, start=at, end=at + 1, early=_exp(e.early, at) if e.early else None)
