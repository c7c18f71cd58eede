"""Site profiles from saved Slurm output (``sbatch-lint profile import FILE...``).

Data flows one way: text -> :mod:`.readers` (what each file says) -> :mod:`.site` (partitions
and their nodes) -> :mod:`.writer` (the configuration TOML). :mod:`.cli` is the subcommand.
"""
from __future__ import annotations

from .readers import ProfileInputError, SlurmText, read_text
from .site import Site, build
from .writer import to_toml

__all__ = ["ProfileInputError", "SlurmText", "Site", "build", "read_text", "to_toml"]
