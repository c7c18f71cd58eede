"""Readers of saved Slurm output: each file is recognised by its content, never by its name.

- ``scontrol show partition`` and ``scontrol show node``, in the multi-line form and the
  one-line form of ``scontrol -o``: records of ``Key=Value`` words, each record starting with
  ``PartitionName=`` or ``NodeName=`` (src/api/partition_info.c ``slurm_sprint_partition_info``
  and src/api/node_info.c ``slurm_sprint_node_table``, Slurm 22.05 to 25.05). A value may hold
  spaces (``OS=Linux 5.15.0 #64-Ubuntu SMP ...``, ``Reason=...``): words without ``=`` belong to
  the value before them.
- ``scontrol show config``: ``Key = value`` lines after ``Configuration data as of ...``
  (src/api/config_info.c); ``SLURM_VERSION`` and ``EnforcePartLimits`` are read.
- ``srun --help``: its "Options provided by plugins:" section (src/common/spank.c
  ``spank_print_options``) lists pyxis' options, each help text tagged ``[pyxis]``.

Every reader raises :class:`ProfileInputError` with a message that names the file when the text
is not what it claims to be.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

#: a ``Key=Value`` word of scontrol's record output
WORD = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)=(.*)$", re.S)
#: a line of ``scontrol show config``: ``Key   = value`` (keys may carry ``[0]``)
CONFIG_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*(?:\[\d+\])?)\s*=\s?(.*)$")
#: scontrol prints these for an absent value
NULL = {"(null)", "N/A", "NONE", "n/a", ""}


class ProfileInputError(ValueError):
    """A file given to ``profile import`` is unreadable or not Slurm output we know; the message
    names the file."""


@dataclass
class SlurmText:
    """What one file says: its kind and the records or settings read from it.

    ``kind`` is ``partitions``, ``nodes``, ``config`` or ``srun-help``; ``records`` the
    partition or node records (``{Key: value}``, values as printed); ``settings`` the config's
    ``Key -> value``; ``pyxis`` whether srun lists pyxis' options (srun-help only).
    """

    name: str
    kind: str
    records: list[dict[str, str]] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)
    pyxis: bool | None = None


def read_text(name: str, text: str) -> SlurmText:
    """Recognise ``text`` (the content of file ``name``) and read it.

    Raises ProfileInputError for empty text, binary data, or output of another command."""
    if "\0" in text:
        raise ProfileInputError(f"{name}: binary data, not the text output of a Slurm command")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise ProfileInputError(f"{name}: the file is empty (expected the saved output of "
                                "`scontrol show partition`, `scontrol show node`, "
                                "`scontrol show config` or `srun --help`)")
    first = lines[0].strip()
    if first.startswith("PartitionName="):
        return SlurmText(name, "partitions", records=_records(name, text, "PartitionName"))
    if first.startswith("NodeName="):
        return SlurmText(name, "nodes", records=_records(name, text, "NodeName"))
    if first.startswith("Configuration data as of") or \
            any(ln.startswith("SLURM_VERSION") for ln in lines):
        return SlurmText(name, "config", settings=_config(name, lines))
    if first.startswith("Usage: srun"):
        return SlurmText(name, "srun-help", pyxis=_has_pyxis(text))
    if first.startswith(("No partitions", "No nodes")):
        raise ProfileInputError(f"{name}: the output says {first!r}: nothing to import")
    raise ProfileInputError(
        f"{name}: not output that profile import knows (its first line is "
        f"{_excerpt(first)!r}); give the saved output of `scontrol show partition`, `scontrol "
        "show node` (either with or without -o), `scontrol show config` or `srun --help`")


def _excerpt(line: str, width: int = 60) -> str:
    return line if len(line) <= width else line[:width] + "..."


def _records(name: str, text: str, head: str) -> list[dict[str, str]]:
    """The records of scontrol's ``show partition|node`` output (both forms), in order."""
    records: list[dict[str, str]] = []
    current: dict[str, str] = {}  # the caller saw the text start with ``head=``
    key: str | None = None
    for line in text.splitlines():
        for word in line.split():
            m = WORD.match(word)
            if m and m.group(1) == head:
                current = {}
                records.append(current)
            if m:
                key = m.group(1)
                current[key] = m.group(2)
            elif key is not None:
                current[key] = f"{current[key]} {word}"
    for rec in records:
        if not rec.get(head):
            raise ProfileInputError(f"{name}: a record with an empty {head}=")
    return records


def _config(name: str, lines: list[str]) -> dict[str, str]:
    """``scontrol show config``'s ``Key = value`` settings (the first of a repeated key)."""
    out: dict[str, str] = {}
    for line in lines:
        m = CONFIG_LINE.match(line.strip())
        if m:
            out.setdefault(m.group(1), m.group(2).strip())
    if "SLURM_VERSION" not in out:
        raise ProfileInputError(f"{name}: `scontrol show config` output without its "
                                "SLURM_VERSION line (cut short?)")
    return out


def _has_pyxis(text: str) -> bool:
    """Whether ``srun --help`` lists pyxis' options: its plugin section holds
    ``--container-image`` (pyxis tags each help text ``[pyxis]``)."""
    _, sep, plugins = text.partition("Options provided by plugins:")
    return bool(sep) and re.search(r"^\s*--container-image\b", plugins, re.M) is not None


def value(rec: dict[str, str], key: str) -> str | None:
    """A record's value, None when absent or printed as ``(null)``/``N/A``/``NONE``."""
    v = rec.get(key)
    if v is None:
        return None
    v = v.strip()
    return None if v in NULL else v


def split_list(text: str | None) -> list[str]:
    """A comma list as scontrol prints it (``a,b``), without commas inside parentheses
    (``gpu:a100:2(S:0,2),mps:100``)."""
    if not text:
        return []
    return [t for t in re.split(r",(?![^()]*\))", text) if t]
