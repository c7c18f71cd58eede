"""Which configuration files a folder sees, without reading any (sbatch_lsp/config.py reads
them): the walk :func:`sbatch_lsp.config.find_config` makes, on its own so that the result
cache's quick key (sbatch_lsp/cache.py) can name the same files without loading the
configuration's classes. Only ``os`` at import.
"""
from __future__ import annotations

import os

# typing.TYPE_CHECKING without importing typing:
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

#: a configuration file of its own: the nearest one ends the walk
OWN_FILE = ".sbatch-lint.toml"
#: a configuration file when it holds ``[tool.sbatch-lint]``
PYPROJECT = "pyproject.toml"


def candidates(folder: str) -> Iterator[str]:
    """The files that may configure a file in ``folder`` (a resolved absolute path), nearest
    first: in ``folder`` and each folder above it, its :data:`OWN_FILE` when that is a regular
    file (symbolic links followed; the walk ends there), else its :data:`PYPROJECT` when that
    is. Paths as ``folder`` joined with the name."""
    while True:
        own = os.path.join(folder, OWN_FILE)
        if os.path.isfile(own):
            yield own
            return
        py = os.path.join(folder, PYPROJECT)
        if os.path.isfile(py):
            yield py
        above = os.path.dirname(folder)
        if above == folder:
            return
        folder = above


def may_hold_own_table(data: bytes) -> bool:
    """Whether a pyproject.toml's bytes (UTF-8) can hold ``[tool.sbatch-lint]``: the key is
    written, or the text has escapes that could spell it. False means it surely does not (no
    need to parse it)."""
    return b"sbatch-lint" in data or b"\\u" in data or b"\\U" in data
