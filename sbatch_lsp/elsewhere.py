"""Files other than the script: the one door through which the engine reads another file.

A script's findings can depend on files beside it: a sibling launcher that passes ``sbatch``
options (facts/provenance.py), a file it sources, a template's generator. Every read of such a
file's content, and every folder listing that chose which files to read, goes through
:func:`read_text` and :func:`list_files` here, so that

- the limits are the same everywhere: never more than ``limit`` bytes per file (default
  :data:`MAX_BYTES`), text decoded as UTF-8 with undecodable bytes replaced, nothing executed;
- each file is read and hashed once per process for each (path, modification time, size), and a
  folder listed once for each (folder, modification time): linting every file of a folder costs
  one listing, not one per file;
- what one lint read is known: inside :func:`recording`, each call adds a dependency (the file's
  SHA-256, or ``-`` when it was absent, unreadable or over its limit; the listing's names) to the
  recorder, and :func:`~sbatch_lsp.lint.lint` hands them back on its result
  (``LintResult.elsewhere``). The result cache (sbatch_lsp/cache.py) stores them with an entry
  and serves the entry only while :func:`current` gives the same answers.

Errors: none escape; an unreadable file reads as None and a folder that cannot be listed as no
names, and both are recorded as such (so the file appearing later changes the answer).
"""
from __future__ import annotations

import hashlib
import os
import re
from collections import namedtuple
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from stat import S_ISREG

# typing.TYPE_CHECKING without importing typing (the result cache checks an entry's reads
# through this module, on a run that loads little else: no dataclasses either):
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

#: the default byte limit of one file read (a launcher, a sourced file)
MAX_BYTES = 1024 * 1024
#: the digest recorded for a file that is absent, unreadable or larger than its limit
MISSING = "-"


class FileRead(namedtuple("FileRead", "path limit digest")):
    """One file read: its ``path`` (str) as the engine named it (absolute when the script's
    path was), the byte ``limit`` (int) it was read under, and ``digest``: the SHA-256 (hex)
    of its bytes, or :data:`MISSING`."""

    __slots__ = ()


class FolderListing(namedtuple("FolderListing", "folder pattern digest")):
    """One folder listing that chose which files to read: the ``folder`` (str), the
    ``pattern`` (a regular expression searched in each name) and ``digest``: the SHA-256 (hex)
    of the sorted matching names of regular files, NUL-separated (:data:`MISSING` when it
    cannot be listed)."""

    __slots__ = ()


class Reads:
    """What one lint read besides its script, in first-read order and without repeats:
    ``files`` by (path, limit) and ``listings`` by (folder, pattern)."""

    def __init__(self) -> None:
        self.files: dict[tuple[str, int], FileRead] = {}
        self.listings: dict[tuple[str, str], FolderListing] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reads) and (self.files, self.listings) == (other.files,
                                                                           other.listings)

    def __repr__(self) -> str:
        return f"Reads(files={self.files!r}, listings={self.listings!r})"

    def __bool__(self) -> bool:
        return bool(self.files or self.listings)


_recorder: ContextVar[Reads | None] = ContextVar("sbatch_lsp_elsewhere", default=None)


@contextmanager
def recording() -> Iterator[Reads]:
    """Record every :func:`read_text` and :func:`list_files` made inside the ``with`` block
    (in this thread or task) into the :class:`Reads` it yields. Nested blocks record into
    their own recorder only."""
    reads = Reads()
    token = _recorder.set(reads)
    try:
        yield reads
    finally:
        _recorder.reset(token)


def read_text(path: str | os.PathLike[str], limit: int = MAX_BYTES) -> str | None:
    """The text of the file at ``path`` (UTF-8, undecodable bytes replaced), or None when it
    is absent, not a regular file, unreadable or larger than ``limit`` bytes. Memoised by
    (path, modification time, size); recorded (:func:`recording`) either way."""
    name = os.fspath(path)
    text, dep = _read(name, limit)
    reads = _recorder.get()
    if reads is not None:
        reads.files.setdefault((name, limit), dep)
    return text


def list_files(folder: str | os.PathLike[str], pattern: str) -> tuple[str, ...]:
    """The names, sorted, of the regular files (symbolic links followed) in ``folder`` in whose
    name the regular expression ``pattern`` is found; empty when the folder cannot be listed.
    Memoised by (folder, modification time: adding, removing or renaming a file changes it);
    recorded (:func:`recording`)."""
    name = os.fspath(folder)
    names = _matching(name, pattern)
    reads = _recorder.get()
    if reads is not None:
        reads.listings.setdefault((name, pattern), FolderListing(
            name, pattern, MISSING if names is None else _names_digest(names)))
    return names or ()


def current(dep: FileRead | FolderListing) -> str:
    """The digest ``dep``'s file or listing has now (compare with ``dep.digest``): one
    ``stat`` when the file or folder is unchanged since this process last read it."""
    if isinstance(dep, FileRead):
        return _read(dep.path, dep.limit)[1].digest
    names = _matching(dep.folder, dep.pattern)
    return MISSING if names is None else _names_digest(names)


def _read(path: str, limit: int) -> tuple[str | None, FileRead]:
    """(text or None, the read as recorded) of ``path`` read under ``limit``."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None, FileRead(path, limit, MISSING)
    if st.st_size > limit or not S_ISREG(st.st_mode):
        return None, FileRead(path, limit, MISSING)
    return _read_memo(path, st.st_mtime_ns, st.st_size, limit)


@lru_cache(maxsize=1024)
def _read_memo(path: str, mtime_ns: int, size: int, limit: int) -> tuple[str | None, FileRead]:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except (OSError, ValueError):
        return None, FileRead(path, limit, MISSING)
    if len(data) > limit:  # grew past the limit since the stat
        return None, FileRead(path, limit, MISSING)
    return (data.decode("utf-8", errors="replace"),
            FileRead(path, limit, hashlib.sha256(data).hexdigest()))


def _matching(folder: str, pattern: str) -> tuple[str, ...] | None:
    """The sorted names of the regular files in ``folder`` matching ``pattern``; None when the
    folder cannot be listed."""
    try:
        mtime = os.stat(folder).st_mtime_ns
    except (OSError, ValueError):
        return None
    return _matching_memo(folder, mtime, pattern)


@lru_cache(maxsize=256)
def _matching_memo(folder: str, mtime_ns: int, pattern: str) -> tuple[str, ...] | None:
    found = re.compile(pattern).search
    names = []
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if not found(entry.name):
                    continue
                try:
                    if entry.is_file():
                        names.append(entry.name)
                except OSError:
                    continue
    except (OSError, ValueError):
        return None
    return tuple(sorted(names))


@lru_cache(maxsize=256)
def _names_digest(names: tuple[str, ...]) -> str:
    return hashlib.sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()
