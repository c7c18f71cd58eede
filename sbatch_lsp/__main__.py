"""``python -m sbatch_lsp``: the sbatch-lint CLI."""
import sys

from .cli import main

sys.exit(main())
