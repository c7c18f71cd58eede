"""JSON Schemas of sbatch-lint's JSON outputs, one file per output: ``NAME.schema.json``
(``lint`` for ``--format json``, ``gitlab`` for ``--format gitlab``; each subcommand's owner adds
its own). Printed by ``sbatch-lint --schema NAME``; the tests validate every output against them.
"""
from __future__ import annotations

import json
from importlib import resources

SUFFIX = ".schema.json"


def names() -> list[str]:
    """The schema names shipped with the package, sorted (``["gitlab", "lint", ...]``)."""
    folder = resources.files(__name__)
    return sorted(f.name.removesuffix(SUFFIX) for f in folder.iterdir()
                  if f.name.endswith(SUFFIX))


def schema_text(name: str) -> str:
    """The text of schema ``name``; KeyError (naming the known ones) for an unknown name."""
    if name not in names():
        raise KeyError(f"unknown schema {name!r} (known: {', '.join(names())})")
    return resources.files(__name__).joinpath(name + SUFFIX).read_text("utf-8")


def schema(name: str) -> dict:
    """Schema ``name`` parsed; KeyError as :func:`schema_text`."""
    return json.loads(schema_text(name))
