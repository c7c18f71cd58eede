"""``sbatch-mcp``: the engine's faces as Model Context Protocol tools, for coding agents
(DESIGN.md "Interfaces", MCP; issue 15 item 4).

:mod:`.tools` holds the tools as plain functions over the same engine calls the CLI makes (no
MCP import: they are tested and read without the SDK); :mod:`.server` registers them on the
official ``mcp`` SDK's ``MCPServer`` and serves them over standard input/output. The SDK is an
optional dependency (the ``mcp`` extra: ``pip install '.[mcp]'`` from the clone); ``sbatch-lint``
never imports it.
"""
from __future__ import annotations

import sys

INSTALL = ("the MCP SDK is not installed: install sbatch-lsp with its mcp extra from the clone "
           "(pipx install '.[mcp]', or pip install '.[mcp]' in its virtual environment)")


def main() -> int:
    """Entry point of ``sbatch-mcp`` and ``python -m sbatch_lsp.mcp``: serve over standard
    input/output until the client closes it; exit 2 with a one-line message when the SDK is
    missing."""
    try:
        from .server import serve
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "pydantic"):
            raise
        print(f"sbatch-mcp: {INSTALL}", file=sys.stderr)
        return 2
    return serve()
