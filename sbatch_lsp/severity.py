"""The severity of a finding, on its own: the configuration (``fail-on``, ``severity``) and the
command line read it without loading the findings' classes (:mod:`sbatch_lsp.diagnostics`, which
re-exports it)."""
from __future__ import annotations

from enum import IntEnum


class Severity(IntEnum):
    """Severity of a finding; larger is worse. Names match DESIGN.md's JSON values."""

    HINT = 1
    INFO = 2
    WARNING = 3
    ERROR = 4

    @classmethod
    def parse(cls, name: str) -> "Severity":
        """Map ``"error"|"warning"|"info"|"hint"`` (any case) to a Severity; ValueError otherwise."""
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {name!r} (use error, warning, info or hint)") from None

    @property
    def label(self) -> str:
        return self.name.lower()
