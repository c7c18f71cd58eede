"""The command line's result cache: a repeat run over unchanged files costs a hash and a read.

One entry per (file content, effective configuration, tool, output format, shown path), held
as a small JSON file in ``.sbatch-lint-cache/`` beside the configuration file the linted file
found (else the current directory), or in ``--cache-dir``. The folder holds a ``.gitignore``
of ``*``, so git ignores it; deleting it clears the cache.

- The key is a SHA-256 of the file's bytes (never its modification time), a digest of its
  :class:`~sbatch_lsp.config.Config`, the tool's version and a digest of the package's own
  files' names, sizes and modification times (so an edited development checkout never serves
  results of older code), the output format and colour, and the path as shown (the report
  names it).
- An entry also holds what the lint read besides the script (sbatch_lsp/elsewhere.py: a
  sibling launcher whose sbatch options demote findings, the folder listing that chose the
  launchers), each as a path relative to the script's folder with its SHA-256 (``-``: absent,
  unreadable or too large). A lookup serves the entry only while every one of them gives the
  same digest (:func:`sbatch_lsp.elsewhere.current`, checked once per file and listing per
  run), so an edited launcher or a new one is a miss and an unrelated new file a hit.
- An entry holds only what the output layer shows: the formatted text or JSON/SARIF objects,
  built from findings whose secrets are already masked (:class:`sbatch_lsp.secrets.Masker`),
  the worst severity and the finding count. Fix edits with the script's own text (``--fix``,
  ``--diff``, ``--convert``) never pass through here: those runs, and standard input, bypass
  the cache.
- A run of named files first looks each up by a quick key (:meth:`Cache.quick`), before the
  argument parser and the configuration load: a SHA-256 of the file's bytes, its paths, the
  tool, the view, the command line's selection options and the path, real path and bytes of
  every file that may configure it (sbatch_lsp/config_files.py), never parsed. A link file
  (``KEY.link``) maps it to the entry the full key stored, with the configuration's
  ``fail-on``. Links are written only when none of those files changed during the run that
  made the entry and the configuration extends no other file; any miss falls back to the full
  key, so a link never serves what the full key would not.
- Entries are written to a temporary file in the same folder and renamed over the target
  (:func:`os.replace`), so concurrent runs (pre-commit, CI jobs) never leave a torn entry; an
  entry that does not parse, has another key or has fields of the wrong type is ignored (and
  replaced by the next run). Any I/O error reading or writing the cache is ignored: a cache
  never fails a lint.
"""
from __future__ import annotations

import hashlib
import json
import os

from . import __version__

# typing.TYPE_CHECKING without importing typing, and pathlib where it is used (a run of hits
# imports little else):
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from .config import Config
    from .elsewhere import Reads

#: the cache folder's name (beside the configuration file, or in the current directory)
FOLDER = ".sbatch-lint-cache"
#: bump when an entry's layout changes
SCHEMA = 3
#: the fields of a report an entry holds, with their types
FIELDS: dict[str, type | tuple[type, ...]] = {
    "text_out": str, "items": (list, type(None)), "worst": int, "remaining": int,
    "job_script": bool}
#: the ending of a link file: a quick key's pointer to an entry (:meth:`Cache.quick`)
LINK = ".link"
#: files larger than this are linted, never cached (the CLI refuses 64 MiB and more anyway)
MAX_BYTES = 64 * 1024 * 1024

_tool: str | None = None


def tool_digest() -> str:
    """Hex SHA-256 of the version and of every file of the installed package (path, size and
    modification time in nanoseconds; ``__pycache__`` excluded): installing another release or
    editing any code, rule data or page changes it. Computed once per process from one
    ``stat`` per file (about 200), not from their bytes (1 MB read per run otherwise)."""
    global _tool
    if _tool is None:
        root = os.path.dirname(os.path.abspath(__file__))
        parts = [f"sbatch-lint {__version__}\0"]
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            # each file's path relative to root (os.path.relpath once per folder, not per file)
            folder = os.path.relpath(dirpath, root)
            prefix = "" if folder == os.curdir else folder + os.sep
            for name in sorted(filenames):
                if name.endswith((".pyc", ".pyo")):
                    continue
                try:
                    st = os.stat(os.path.join(dirpath, name))
                    stamp = f"{st.st_size}:{st.st_mtime_ns}"
                except OSError:
                    stamp = "unreadable"
                parts.append(f"{prefix}{name}\0{stamp}\0")
        _tool = hashlib.sha256("".join(parts).encode("utf-8", "surrogateescape")).hexdigest()
    return _tool


def dependencies(reads: Reads, script: str) -> dict[str, list[list]]:
    """What a lint read besides ``script`` (the path it was linted as), JSON-ready: ``files``
    as [path relative to the script's folder, byte limit, digest] and ``listings`` as [folder
    relative to it, name pattern, digest] (:mod:`sbatch_lsp.elsewhere`)."""
    base = os.path.dirname(os.path.abspath(script))
    return {"files": [[os.path.relpath(os.path.abspath(r.path), base), r.limit, r.digest]
                      for r in reads.files.values()],
            "listings": [[os.path.relpath(os.path.abspath(r.folder), base), r.pattern, r.digest]
                         for r in reads.listings.values()]}


def _plain(obj: Any) -> Any:
    """``obj`` as JSON-ready data with a stable order (sets sorted, dataclasses as dicts)."""
    import dataclasses  # (a run served by quick keys never builds a configuration)
    import enum

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return _plain(obj.value)
    if isinstance(obj, dict):
        return sorted([_plain(k), _plain(v)] for k, v in obj.items())
    if isinstance(obj, (set, frozenset)):
        return sorted(_plain(v) for v in obj)
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return repr(obj)


def config_digest(cfg: object) -> str:
    """Hex SHA-256 of a configuration (a :class:`~sbatch_lsp.config.Config`): equal for equal
    settings, whatever order sets and tables were written in."""
    return hashlib.sha256(json.dumps(_plain(cfg), sort_keys=True).encode()).hexdigest()


def folder_for(cfg: object, cache_dir: str | None) -> Path:
    """The cache folder for a file linted with ``cfg``: ``cache_dir`` when given, else
    ``.sbatch-lint-cache`` beside the configuration file it came from (``cfg.source``), else in
    the current directory."""
    from pathlib import Path

    if cache_dir:
        return Path(cache_dir)
    source = getattr(cfg, "source", None)
    return (Path(source).resolve().parent if source else Path.cwd()) / FOLDER


def _bytes(path: str, limit: int | None = None) -> bytes | None:
    """The bytes of the file at ``path``; None when it cannot be read or is larger than
    ``limit`` bytes (None: any size)."""
    try:
        with open(path, "rb") as fh:
            if limit is not None and os.fstat(fh.fileno()).st_size > limit:
                return None
            return fh.read()
    except (OSError, ValueError):
        return None


def _digest(path: str, limit: int) -> str | None:
    """Hex SHA-256 of the bytes of the file at ``path``; None when it cannot be read or is
    larger than ``limit`` bytes."""
    data = _bytes(path, limit)
    return None if data is None else hashlib.sha256(data).hexdigest()


def _sha256(*parts: str) -> str:
    """Hex SHA-256 of ``parts`` joined by NULs (no path, view or digest holds a NUL)."""
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def _read_json(path: str) -> Any:
    """The JSON value in the file at ``path``; None when it cannot be read or parsed."""
    try:
        with open(path, "rb") as fh:
            return json.loads(fh.read())
    except (OSError, ValueError):
        return None


def _matched_as(display: str, cfg: object) -> str:
    """The real path the configuration's path patterns (``exclude``, ``per-file-ignores``)
    are matched against for a file shown as ``display`` (lint() matches ``display`` from the
    working directory), when it has any; else "" (nothing then depends on where it sits). Two
    runs from different folders may show different files by the same path."""
    if getattr(cfg, "exclude", None) or getattr(cfg, "per_file_ignores", None):
        return os.path.realpath(display)
    return ""


class Cache:
    """The entries of one run: :meth:`get` before linting a file, :meth:`put` after.

    ``view`` names how reports are shown (output format and colour): entries of another view
    are other keys. ``cache_dir`` (``--cache-dir``) overrides :func:`folder_for`."""

    def __init__(self, view: str, cache_dir: str | None = None, settings: str = "",
                 config: str | None = None) -> None:
        self.view = view
        self.cache_dir = cache_dir
        #: for quick keys: the command line's other options that change results, as a
        #: string, and its ``--config`` (None: each file's nearest configuration file)
        self.settings = settings
        self.config = config
        self._keys: dict[tuple[str, str], str] = {}
        # the quick keys that missed, computed before the configuration was loaded, by
        # (path, display)
        self._quick: dict[tuple[str, str], tuple[str, str]] = {}
        self._made: set[Path] = set()
        # the digest each file or listing an entry depends on has in this run, by (kind,
        # script folder, relative path, limit or pattern)
        self._now: dict[tuple[str, str, str, int | str], str] = {}
        # per configuration object (kept alive here, so its id stays its own): digest, folder
        self._configs: dict[int, tuple[object, str, Path]] = {}

    def _key(self, path: str, display: str, cfg: object) -> tuple[Path, str] | None:
        """(folder, key) of a file as it is now; None when it cannot be read or is too large."""
        data = _digest(path, MAX_BYTES)
        if data is None:
            return None
        known = self._configs.get(id(cfg))
        if known is None or known[0] is not cfg:
            known = self._configs[id(cfg)] = (cfg, config_digest(cfg),
                                               folder_for(cfg, self.cache_dir))
        _, digest, folder = known
        # NUL-separated: no path, view or digest holds a NUL
        return folder, _sha256(str(SCHEMA), tool_digest(), digest, self.view, display, data,
                               _matched_as(display, cfg))

    def get(self, path: str, display: str, cfg: object) -> dict | None:
        """The stored report fields (:data:`FIELDS`) of ``path`` shown as ``display`` and
        linted with ``cfg``, or None (a miss: absent, unreadable, corrupt or foreign entry, or
        standard input ``-``)."""
        if path == "-":
            return None
        found = self._key(path, display, cfg)
        if found is None:
            return None
        folder, key = found
        self._keys[(path, display)] = key
        return self._entry(str(folder), key, display)

    def _entry(self, folder: str, key: str, display: str) -> dict | None:
        """The report fields of entry ``key`` in ``folder`` for a file shown as ``display``;
        None when it is absent, corrupt, foreign or no longer holds (:meth:`_still`)."""
        entry = _read_json(os.path.join(folder, key + ".json"))
        if not isinstance(entry, dict) or entry.get("schema") != SCHEMA or \
                entry.get("key") != key or not isinstance(entry.get("report"), dict):
            return None
        report = entry["report"]
        if set(report) != set(FIELDS) or not all(isinstance(report[k], t)
                                                 for k, t in FIELDS.items()):
            return None
        if isinstance(report["worst"], bool) or isinstance(report["remaining"], bool):
            return None
        if not self._still(entry.get("elsewhere"), display):
            return None
        return report

    def _still(self, deps: object, display: str) -> bool:
        """Whether every file and listing in an entry's ``elsewhere`` (:func:`dependencies`,
        relative to the folder of ``display``, the path the lint read them from) gives the
        digest stored; False for a malformed list. Each is checked once per run."""
        if not isinstance(deps, dict) or set(deps) != {"files", "listings"}:
            return False
        base = os.path.dirname(os.path.abspath(display))
        for kind, arg_type in (("files", int), ("listings", str)):
            rows = deps[kind]
            if not isinstance(rows, list):
                return False
            for row in rows:
                if not (type(row) is list and len(row) == 3 and type(row[0]) is str
                        and type(row[1]) is arg_type and type(row[2]) is str):
                    return False
                rel, arg, digest = row
                now = self._now.get((kind, base, rel, arg))
                if now is None:
                    # (the reader of other files: imported only for an entry that has some)
                    from .elsewhere import FileRead, FolderListing, current

                    make = FileRead if kind == "files" else FolderListing
                    now = self._now[(kind, base, rel, arg)] = current(
                        make(os.path.normpath(os.path.join(base, rel)), arg, ""))
                if now != digest:
                    return False
        return True

    def quick(self, path: str, display: str) -> tuple[dict, int] | None:
        """The stored report fields of ``path`` shown as ``display`` and the ``fail-on``
        level (an int) its configuration had, found through its quick key (:meth:`_quick_key`)
        without loading the configuration; None when there is no such link or its entry
        misses (:meth:`get` then decides). Remembers the key for :meth:`link`."""
        if path == "-":
            return None
        found = self._quick_key(path, display)
        if found is None:
            return None
        folder, key = found
        link = _read_json(os.path.join(folder, key + LINK))
        report = None
        if isinstance(link, dict) and link.get("schema") == SCHEMA and \
                link.get("key") == key and type(link.get("entry")) is str and \
                type(link.get("fail_on")) is int:
            report = self._entry(folder, link["entry"], display)
        if report is None:
            self._quick[(path, display)] = found
            return None
        return report, link["fail_on"]

    def link(self, path: str, display: str, cfg: Config) -> None:
        """After :meth:`get` hit or :meth:`put` stored the entry of ``path`` linted with
        ``cfg``, store the link from its quick key (computed by :meth:`quick`, which missed,
        before ``cfg`` was loaded) to that entry, unless a file the key covers changed since,
        ``cfg`` extends another file (whose bytes the key does not cover), or ``cfg``'s cache
        folder is not the one the key guessed. Atomic, silent on any I/O error."""
        before = self._quick.get((path, display))
        entry = self._keys.get((path, display))
        if before is None or entry is None or cfg.extends or \
                os.path.normpath(folder_for(cfg, self.cache_dir)) != before[0] or \
                self._quick_key(path, display) != before:
            return
        from pathlib import Path

        folder, key = before
        self._write(Path(folder), key + LINK, {"schema": SCHEMA, "key": key, "entry": entry,
                                               "fail_on": int(cfg.fail_on)})

    def _quick_key(self, path: str, display: str) -> tuple[str, str] | None:
        """(folder, quick key) of a file as it is now, from what decides its configuration
        rather than the configuration itself: the file's bytes, absolute path and shown path,
        the tool, :attr:`view` and :attr:`settings`, and the path, real path and bytes of
        each file that may configure it (``--config``, else every candidate from its folder
        upward: :func:`sbatch_lsp.config_files.candidates`). The folder is the one the
        entry's configuration file would give (:func:`folder_for`): ``--cache-dir``, else
        beside the nearest candidate that may be a configuration file, else the current
        directory. None when the file cannot be read or is too large."""
        data = _digest(path, MAX_BYTES)
        if data is None:
            return None
        from .config_files import OWN_FILE, candidates, may_hold_own_table

        if self.config is not None:
            files = [self.config]
        else:
            files = list(candidates(os.path.realpath(os.path.dirname(path) or os.curdir)))
        parts = ["quick", str(SCHEMA), tool_digest(), self.view, display,
                 os.path.abspath(path), data, self.settings]
        home = None if self.config is None else os.path.realpath(self.config)
        for name in files:
            real = os.path.realpath(name)
            text = _bytes(name)
            if text is None:
                parts += [name, real, "-"]
                continue
            parts += [name, real, hashlib.sha256(text).hexdigest()]
            if home is None and (os.path.basename(name) == OWN_FILE or
                                 may_hold_own_table(text)):
                home = real
        folder = self.cache_dir or os.path.join(
            os.path.dirname(home) if home else os.getcwd(), FOLDER)
        return os.path.normpath(folder), _sha256(*parts)

    def put(self, path: str, display: str, cfg: object, report: dict,
            elsewhere: dict[str, list[list]]) -> None:
        """Store the report fields of ``path`` (after :meth:`get` missed) with what the lint
        read besides it (:func:`dependencies`), unless the file changed since :meth:`get`
        read it; atomic, and silent on any I/O error."""
        before = self._keys.get((path, display))
        found = self._key(path, display, cfg) if before else None
        if found is None or found[1] != before:
            return
        folder, key = found
        self._write(folder, key + ".json", {"schema": SCHEMA, "key": key,
                                            "report": {k: report[k] for k in FIELDS},
                                            "elsewhere": elsewhere})

    def _write(self, folder: Path, name: str, obj: dict) -> None:
        """Write ``obj`` as JSON to ``folder/name`` atomically; silent on any I/O error."""
        from .atomic import replace_file  # (tempfile: a run of hits writes nothing)

        try:
            data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
            self._ensure(folder)
            replace_file(folder / name, data)
        except (OSError, TypeError, ValueError):
            return

    def _ensure(self, folder: Path) -> None:
        """Create the folder with its ``.gitignore`` (``*``: git ignores the whole cache)."""
        if folder in self._made:
            return
        folder.mkdir(parents=True, exist_ok=True)
        from .atomic import replace_file

        ignore = folder / ".gitignore"
        if not ignore.exists():
            replace_file(ignore, b"# created by sbatch-lint: the whole cache folder is ignored\n*\n")
        self._made.add(folder)
