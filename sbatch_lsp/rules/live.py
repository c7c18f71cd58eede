"""SB790 live-check: the controller's own answer to ``sbatch --test-only`` (issue 15 item 3).

The finding is made by :mod:`sbatch_lsp.live`, only when asked (``sbatch-lint --live``, the
editor's ``sbatch-lsp.liveCheck`` command): no script text alone produces it, so the rule has no
check function.
"""
from __future__ import annotations

from . import meta
from ..diagnostics import Severity

meta("SB790", "live-check", Severity.ERROR,
     "the cluster's controller refuses the job (sbatch --test-only, asked with --live); "
     "info when it would accept it")
