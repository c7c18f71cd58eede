"""Gitignore-style path patterns anchored at a folder: the configuration's ``exclude``,
``extend-exclude`` and ``per-file-ignores`` keys (pathspec's ``GitIgnoreSpec``, Git's own
matching rules: ``vendor/`` a folder at any depth, ``/top.sbatch`` only beside the
configuration file, ``gen/**/*.sbatch``, ``!keep.sbatch`` to re-include).

A pattern set written in a configuration file is relative to that file's folder, so a site
profile pulled in with ``extend`` keeps matching what it meant, and a nested configuration's
patterns cover only its own subtree.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec


@functools.lru_cache(maxsize=256)
def _spec(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    import pathspec  # on first match only: a run whose configuration has no patterns never pays it

    return pathspec.GitIgnoreSpec.from_lines(patterns)


def check_patterns(value: object, where: str) -> tuple[str, ...]:
    """``value`` as a tuple of patterns: a list of non-empty strings; ValueError naming
    ``where`` (the configuration file and key) otherwise."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"{where}: expected a list of gitignore-style patterns such as "
                         "[\"vendor/\", \"generated/*.sbatch\"]")
    return tuple(value)


@dataclass(frozen=True)
class PatternSet:
    """Patterns anchored at ``base``, an absolute folder (the configuration file's)."""

    base: str
    patterns: tuple[str, ...]

    def matches(self, path: str | Path, is_dir: bool = False) -> bool:
        """Whether ``path`` (a file, or a folder when ``is_dir``; relative paths are taken from
        the working directory) matches; a path outside ``base`` never does."""
        try:
            rel = Path(path).resolve().relative_to(self.base).as_posix()
        except ValueError:
            return False
        if rel == ".":
            return False
        return _spec(self.patterns).match_file(rel + "/" if is_dir else rel)


def anchored(folder: Path, patterns: tuple[str, ...]) -> PatternSet:
    """A PatternSet for patterns written in a configuration file in ``folder``."""
    return PatternSet(str(folder.resolve()), patterns)
