"""Editor settings and the configuration each document is linted with.

Editor settings arrive as ``initializationOptions`` and in ``workspace/didChangeConfiguration``,
either bare or under an ``"sbatchLsp"`` key. Their lint keys are those of ``[tool.sbatch-lint]``
(``select``, ``ignore``, ``extend-select``, ``severity``, ``fail-on``, ``profile``), validated as
strictly as a configuration file (a code that names no rule, an unknown key at any level or a
wrong type is an error the server shows); ``inlayHints`` (true/false) is the server's own. A project file (``.sbatch-lint.toml`` or ``pyproject.toml``
with ``[tool.sbatch-lint]``, found upward from the document as the CLI finds it) wins over the
editor's lint keys entirely, so the editor agrees with CI (DESIGN.md "Configuration").
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Config, ConfigError, find_config, from_table, load_file
from ..config_files import OWN_FILE, PYPROJECT

SECTION = "sbatchLsp"
SERVER_KEYS = {"inlayHints"}


@dataclass(frozen=True)
class Settings:
    """Parsed editor settings: the Config their lint keys make, and the server's own keys."""

    config: Config = field(default_factory=Config)
    inlay_hints: bool = True


def parse_settings(value) -> tuple[Settings, str | None]:
    """Settings from an editor's JSON value (bare or under ``"sbatchLsp"``). On a bad value —
    not an object, an unknown key, a code that names no rule, a wrong type — the defaults and
    the error text (``editor settings: KEY: …``), which the server shows to the user: a setting
    that is silently off would make the editor disagree with what the user asked for."""
    if isinstance(value, dict) and isinstance(value.get(SECTION), dict):
        value = value[SECTION]
    if value is None:
        return Settings(), None
    if not isinstance(value, dict):
        return Settings(), f"editor settings: expected an object, not {type(value).__name__}"
    inlay = value.get("inlayHints", True)
    if not isinstance(inlay, bool):
        return Settings(), "editor settings: inlayHints: expected true or false"
    if "extend" in value:
        return Settings(inlay_hints=inlay), ("editor settings: extend: only a configuration "
                                             "file (.sbatch-lint.toml, pyproject.toml) extends "
                                             "another")
    lint = {k: v for k, v in value.items() if k not in SERVER_KEYS}
    try:
        config = from_table(lint, "editor settings")
    except ConfigError as exc:
        return Settings(inlay_hints=inlay), str(exc)
    return Settings(config, inlay), None


#: folders whose configuration lookup is kept: at most this many (then all are forgotten)
MAX_FOLDERS = 256
#: folder -> (the settings, the signature of the configuration files at and above it, the
#: lookup's result): the lint thread asks for every version of a document
_found: dict[str, tuple[Settings, tuple, tuple[Config, str | None]]] = {}


def config_for(path: str | None, settings: Settings) -> tuple[Config, str | None]:
    """The Config for a document at ``path`` (None for an unsaved one): the project file's when
    one is found, else the editor's; with the error text of a broken project file (the editor's
    Config is used then). Kept per folder while the same ``settings`` are in force and every
    ``.sbatch-lint.toml`` and ``pyproject.toml`` at or above the folder has the same
    :func:`_signature` (a save, a new or a deleted file looks again); a project file that
    extends another file (whose changes the signature does not see) is read every time."""
    if not path:
        return settings.config, None
    try:
        # string operations, not pathlib's: this runs for every lint (pathlib parsed the path
        # and each folder above it again every time)
        folder = os.path.realpath(path if os.path.isdir(path) else os.path.dirname(path))
        signature = _signature(folder)
    except OSError:
        return _look_up(path, settings)[0]
    held = _found.get(folder)
    if held is not None and held[0] is settings and held[1] == signature:
        return held[2]
    result, keep = _look_up(path, settings)
    if keep:
        if len(_found) >= MAX_FOLDERS:
            _found.clear()
        _found[folder] = (settings, signature, result)
    return result


def _signature(folder: str) -> tuple:
    """(mode, size, modification time in ns, inode) of the ``.sbatch-lint.toml`` and the
    ``pyproject.toml`` of ``folder`` (absolute) and of each folder above it, None for a
    missing one: what :func:`sbatch_lsp.config.find_config` reads to choose the project
    file."""
    out: list[tuple[int, int, int, int] | None] = []
    for name in _candidates(folder):
        try:
            st = os.stat(name)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


@functools.lru_cache(maxsize=MAX_FOLDERS)
def _candidates(folder: str) -> tuple[str, ...]:
    """The paths of the ``.sbatch-lint.toml`` and the ``pyproject.toml`` of ``folder``
    (absolute) and of each folder above it, nearest first, whether they exist or not: every
    file :func:`sbatch_lsp.config_files.candidates` may look at (it stops at the nearest
    file of its own and skips missing ones; a signature must also see a file appear)."""
    out: list[str] = []
    while True:
        out += [os.path.join(folder, OWN_FILE), os.path.join(folder, PYPROJECT)]
        parent = os.path.dirname(folder)
        if parent == folder:
            return tuple(out)
        folder = parent


def _look_up(path: str, settings: Settings) -> tuple[tuple[Config, str | None], bool]:
    """The lookup :func:`config_for` keeps, and whether it may keep it: not when a file could
    not be read, nor when the project file names ``extend`` (the file it extends is not in
    the signature)."""
    try:
        found = find_config(Path(path))
        if found is None:
            return (settings.config, None), True
        keep = b"extend" not in found.read_bytes()
    except OSError:
        return (settings.config, None), False
    try:
        return (load_file(found), None), keep
    except ConfigError as exc:
        return (settings.config, str(exc)), keep
    except OSError:
        return (settings.config, None), False
