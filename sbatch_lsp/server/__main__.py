"""``python -m sbatch_lsp.server``: the language server."""
import sys

from . import main

sys.exit(main())
