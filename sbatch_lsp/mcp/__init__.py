"""``sbatch-mcp``: the engine's faces as Model Context Protocol tools, for coding agents
(DESIGN.md "Interfaces", MCP; issue 15 item 4).

:mod:`.tools` holds the tools as plain functions over the same engine calls the CLI makes (no
MCP import: they are tested and read without the SDK); :mod:`.server` registers them on the
official ``mcp`` SDK's ``MCPServer`` and serves them over standard input/output. The SDK is an
optional dependency (``pip install 'sbatch-lsp[mcp]'``): ``sbatch-lint`` never imports it.
"""
