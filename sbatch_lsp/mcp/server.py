"""The MCP server: :mod:`.tools` registered on the ``mcp`` SDK's ``MCPServer``, served over
standard input/output (``sbatch-mcp`` and ``python -m sbatch_lsp.mcp`` start it through
:func:`sbatch_lsp.mcp.main`).

Each tool's input schema comes from its signature (types and descriptions below). A result is
the CLI face's JSON as text content (the ``--format json`` array for ``lint``, an object for
``convert``, ``triage`` and ``show``, which are also given as structured content); ``explain``
answers with the page's Markdown. Bad input (binary text, an unknown rule, an unreadable log or
configuration) is a tool error with a one-line message, never a traceback; an unexpected fault
is reported by the SDK as ``Error executing tool NAME`` and logged on standard error.
"""
from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from .. import __version__
from . import tools

INSTRUCTIONS = (
    "sbatch-lint checks Slurm batch scripts for the launch mistakes sbatch accepts silently "
    "(torchrun under srun, unexported variables, directive typos, Megatron sizes). Lint a script "
    "before submitting it; explain a finding's code for its page; convert a torchrun-under-srun "
    "launch to one Slurm task per GPU; show how Slurm will lay the job out; triage a failed "
    "job's log. Every tool is offline and read-only: nothing is submitted or run.")

Text = Annotated[str, Field(description="the job script's text (never read from path)")]
PathArg = Annotated[str | None, Field(
    description="the script's file name: for finding its configuration (.sbatch-lint.toml or "
                "pyproject.toml at or above it) and in messages; never read")]
ConfigArg = Annotated[str | None, Field(
    description="a configuration file to use instead of the one found from path")]
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)


def _json(value: Any) -> CallToolResult:
    """The CLI's JSON as text, and as structured content when it is an object."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return CallToolResult(content=[TextContent(text=text)],
                          structured_content=value if isinstance(value, dict) else None)


def _call(fn, *args: Any) -> Any:
    try:
        return fn(*args)
    except tools.ToolInputError as exc:
        raise ToolError(str(exc)) from None


def build() -> MCPServer:
    """The server with its five tools registered (not started)."""
    server = MCPServer("sbatch-lint", version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING")

    @server.tool(annotations=READ_ONLY, structured_output=False)
    def lint(text: Text, path: PathArg = None, config: ConfigArg = None) -> CallToolResult:
        """Lint a Slurm batch script: the findings as `sbatch-lint --format json` prints them
        (code, name, severity, message, 1-based line/column range, related notes, fixes)."""
        return _json(_call(tools.lint, text, path, config))

    @server.tool(annotations=READ_ONLY, structured_output=False)
    def explain(code: Annotated[str, Field(
            description="a rule code (SB201) or name (torchrun-per-task)")]) -> str:
        """The page of a rule, in Markdown: what it catches, why, examples, the fix, sources."""
        return str(_call(tools.explain, code))

    @server.tool(annotations=READ_ONLY, structured_output=False)
    def convert(text: Text, path: PathArg = None, config: ConfigArg = None) -> CallToolResult:
        """Convert torchrun-under-srun launches to srun-native ones (one Slurm task per GPU), as
        `sbatch-lint --convert srun-native`: {converted, text (the script as left, unmasked),
        diff, refusals: [{line, reason}]}. Nothing is written."""
        return _json(_call(tools.convert, text, path, config))

    @server.tool(annotations=READ_ONLY, structured_output=False)
    def triage(log: Annotated[str | None, Field(
                   description="a log file's path (.gz accepted); or give log_text")] = None,
               log_text: Annotated[str | None, Field(
                   description="the log's text itself; or give log")] = None,
               script: Annotated[str | None, Field(
                   description="the job script's path: its findings that explain the failure")
               ] = None) -> CallToolResult:
        """Triage a failed Slurm job's log as `sbatch-lint triage --format json`: the root-cause
        line, the first failing rank and node, the cascade, exit codes, the script's findings."""
        return _json(_call(tools.triage, log, log_text, script))

    @server.tool(annotations=READ_ONLY, structured_output=False)
    def show(text: Text, path: PathArg = None, config: ConfigArg = None) -> CallToolResult:
        """The job as Slurm will run it, as `sbatch-lint show --format json`: per component its
        resources; per srun step its nodes, tasks, GPUs, launcher, world size, placement and the
        variables that reach its tasks (null when unknown, never guessed)."""
        return _json(_call(tools.show, text, path, config))

    return server


def serve() -> int:
    """Serve :func:`build`'s server over standard input/output until the client closes it;
    returns the exit code."""
    try:
        build().run("stdio")
    except KeyboardInterrupt:
        return 130
    return 0
