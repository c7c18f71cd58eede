"""The partitions a job may run in, read from its ``--partition`` directive against the site
profile's ``partitions`` (``sbatch-lint profile import`` writes them): the fact the site-limit
rules (SB7xx) and the port rules read. Without ``--partition`` the profile's default partition is
assumed (slurm.conf(5) ``Default=YES``); the command line or ``SBATCH_PARTITION`` may still
choose another, which is why ``Target.use`` is then None."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..directives import OptionUse

if TYPE_CHECKING:
    from ..config import Partition


@dataclass
class Target:
    """The partitions that may take the job (known to the profile, in the user's order) and the
    ``--partition`` directive that names them (None when the profile's default is assumed)."""

    names: list[str]
    parts: list[Partition]
    use: OptionUse | None


def located(job, use: OptionUse, names: list[str]) -> list[tuple[str, int, int]]:
    """``names`` (pieces of the directive's value, in order) with their spans in the file: each
    found in the raw text of the value, so quotes around it (``-C "a&b"``) do not shift it."""
    start = use.value_start if use.value_start is not None else use.start
    end = use.value_end if use.value_end is not None else use.end
    raw = job.source.text[start:end]
    out, pos = [], 0
    for name in names:
        at = raw.find(name, pos)
        if at < 0:  # written with escapes: the whole value
            out.append((name, start, end))
            continue
        out.append((name, start + at, start + at + len(name)))
        pos = at + len(name)
    return out


def listed(job, use: OptionUse) -> list[tuple[str, int, int]]:
    """The names of a ``--partition`` value with their spans (offsets in the file)."""
    return located(job, use, [n.strip() for n in (use.value or "").split(",") if n.strip()])


def target(job) -> Target | None:
    """The job's partitions, or None when the profile has none or the script names them through
    something the linter cannot read (``$PART``)."""
    parts = job.profile.partitions
    if not parts:
        return None
    use = job.directives.get("partition")
    if use is None:
        name = job.profile.default_partition()
        return Target([name], [parts[name]], None) if name else None
    if not use.value or any(c in use.value for c in "$`{<"):
        return None
    names = [n for n, _, _ in listed(job, use) if n in parts]
    if not names:
        return None
    return Target(names, [parts[n] for n in names], use)
