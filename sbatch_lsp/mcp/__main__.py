"""``python -m sbatch_lsp.mcp``: the MCP server over standard input/output."""
import sys

from . import main

sys.exit(main())
