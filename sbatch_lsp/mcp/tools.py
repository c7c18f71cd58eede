"""The MCP tools as plain functions: each takes the tool's arguments and returns the JSON value
the matching CLI face prints, or raises :class:`ToolInputError` with a message for the agent.

=========  ==============================================  ========================================
tool       arguments                                       result (the CLI face it equals)
=========  ==============================================  ========================================
lint       ``text``; ``path``, ``config`` optional          the ``--format json`` array
explain    ``code`` (a code or a rule name)                 the page ``--explain`` prints (Markdown)
convert    ``text``; ``path``, ``config`` optional          ``{converted, text, diff, refusals}``
triage     ``log`` (a path) or ``log_text``; ``script``     ``triage --format json``'s object
show       ``text``; ``path``, ``config`` optional          ``show --format json``'s object
=========  ==============================================  ========================================

``path`` names the script for configuration discovery (the nearest ``.sbatch-lint.toml`` or
``pyproject.toml`` at or above it, as the CLI finds it) and in messages; it is never read when
``text`` is given. ``config`` is a configuration file to use instead (``--config``). Every value
a detected secret touches is masked, as in every output, except ``convert``'s ``text``: the
converted script itself, as ``--fix -`` prints it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import Config, ConfigError, find_config, load_file
from ..source import BinaryInputError, decode_with_encoding

#: the name a script goes by when the agent gives no ``path`` (as ``-`` without
#: ``--stdin-filename``)
STDIN = "-"


class ToolInputError(Exception):
    """Input the tool cannot use (binary text, an unknown rule, an unreadable log or config);
    the message is for the agent, in words."""


def script_text(text: str) -> str:
    """``text`` as the CLI would read it from a file: refused (ToolInputError) when it looks
    binary, by the same test as a file's bytes (:func:`decode_with_encoding`)."""
    try:
        return decode_with_encoding(text.encode("utf-8", "surrogatepass"))[0]
    except BinaryInputError as exc:
        raise ToolInputError(f"not a script: {exc}") from None


def config_for(path: str | None, config: str | None) -> Config:
    """The configuration the CLI would use for a script named ``path``: ``config`` when given,
    else the nearest configuration file at or above ``path`` (the current folder when ``path``
    is None), else the defaults. ToolInputError when a file is unreadable or invalid."""
    try:
        if config:
            return load_file(Path(config))
        start = Path(path) if path and path != STDIN else Path(".")
        found = find_config(start if start.exists() else Path("."))
        return load_file(found) if found else Config()
    except (ConfigError, OSError) as exc:
        raise ToolInputError(f"configuration error: {exc}") from None


def lint(text: str, path: str | None = None, config: str | None = None) -> list[dict[str, Any]]:
    """``sbatch-lint --format json``'s findings for ``text`` named ``path``."""
    from ..lint import lint as run
    from ..output import to_json_obj

    shown = path or STDIN
    return to_json_obj(run(script_text(text), shown, config_for(path, config)), shown)


def explain(code: str) -> str:
    """The Markdown page of a rule, by code (``SB201``) or name (``torchrun-per-task``)."""
    from ..cli import rule_page

    try:
        return rule_page(code)
    except KeyError as exc:
        raise ToolInputError(exc.args[0].replace("--list-rules", "sbatch-lint --list-rules")
                             ) from None


def convert(text: str, path: str | None = None, config: str | None = None) -> dict[str, Any]:
    """``--convert srun-native`` on ``text``: ``converted`` (bool), ``text`` (the script as it
    is left: converted, else unchanged), ``diff`` (unified, masked; empty unless converted) and
    ``refusals`` (``[{line, reason}]``, masked)."""
    from ..cli import conversion

    shown = path or STDIN
    conv = conversion(script_text(text), shown, config_for(path, config))
    return {"converted": conv.status == "converted", "text": conv.text, "diff": conv.diff,
            "refusals": [{"line": line, "reason": reason} for line, _, reason in conv.refusals]}


def triage(log: str | None = None, log_text: str | None = None,
           script: str | None = None) -> dict[str, Any]:
    """``sbatch-lint triage --format json``: ``log`` a log file's path (``.gz`` accepted) or
    ``log_text`` the log itself; ``script`` the job script's path (its findings that explain the
    failure fill ``rules``; a log file's own script is found beside it as the CLI does)."""
    from .. import triage as tri

    if (log is None) == (log_text is None):
        raise ToolInputError("give one of log (a log file's path) or log_text (the log itself)")
    try:
        if log is not None:
            report = tri.triage([log], script)
        else:
            report = tri.triage_text(script_text(log_text or ""))
            if script:
                tri.link_script(report, Path(script))
    except tri.LogError as exc:
        raise ToolInputError(str(exc)) from None
    return report.to_json()


def show(text: str, path: str | None = None, config: str | None = None) -> dict[str, Any]:
    """``sbatch-lint show --format json``'s object for ``text`` named ``path``."""
    from ..facts.show import job_for, show_object

    return show_object(job_for(script_text(text), path or STDIN, config_for(path, config)))
