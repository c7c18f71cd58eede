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

from dataclasses import dataclass, field
from pathlib import Path

from ..config import Config, ConfigError, find_config, from_table, load_file

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


def config_for(path: str | None, settings: Settings) -> tuple[Config, str | None]:
    """The Config for a document at ``path`` (None for an unsaved one): the project file's when
    one is found, else the editor's; with the error text of a broken project file (the editor's
    Config is used then)."""
    if path:
        try:
            found = find_config(Path(path))
            if found is not None:
                return load_file(found), None
        except ConfigError as exc:
            return settings.config, str(exc)
        except OSError:
            pass
    return settings.config, None
