"""The job script behind a log, and the findings in it that explain the failure.

The script is the one given with ``--script``, or the one job script beside the log whose
``#SBATCH --output``/``--error`` filename pattern matches the log's name (sbatch(1) "filename
pattern": ``%j`` job id, ``%A``/``%a`` array master/task, ``%x`` job name, ``%N`` node, ``%u``
user, ``%%`` a percent sign; the default is ``slurm-%j.out``, ``slurm-%A_%a.out`` for arrays).
"""
from __future__ import annotations

import re
from pathlib import Path

from ..config import Config, ConfigError, find_config, load_file
from ..diagnostics import Severity
from ..lint import LintResult, lint
from ..source import decode, is_job_script

#: which rules can explain a root-cause category; the script's own findings (from its facts)
#: decide which of them apply. Order: most specific first.
EXPLAINS: dict[str | None, tuple[str, ...]] = {
    "address-in-use": ("SB201", "SB206", "SB202"),
    "rendezvous-error": ("SB302", "SB206", "SB202", "SB201", "SB205", "SB301"),
    "cancelled": ("SB205", "SB301", "SB206", "SB202", "SB201", "SB302"),
    "time-limit": ("SB205", "SB301", "SB206", "SB202", "SB201", "SB302"),
    "hang": ("SB205", "SB301", "SB206", "SB202", "SB201"),
    "file-not-found": ("SB401",),
    "import-error": ("SB401", "SB302"),
    "command-not-found": ("SB401", "SB302"),
    "cuda-oom": ("SB204", "SB201"),
    "cuda-error": ("SB204", "SB201", "SB203"),
    "nccl-error": ("SB201", "SB204", "SB403", "SB203"),
    "python-exception": ("SB302", "SB301", "SB601"),
    None: ("SB205", "SB301", "SB206", "SB202", "SB201", "SB302"),  # only the waiting side
}
PATTERN_TOKEN = re.compile(r"%(%|\d*[AajJsNntuxb])")
MAX_SCRIPTS = 200


def pattern_regex(pattern: str, name: str | None) -> re.Pattern:
    """A regex for the file names sbatch would make from ``pattern`` (basename only)."""
    base = pattern.rsplit("/", 1)[-1]
    out, pos = [], 0
    for m in PATTERN_TOKEN.finditer(base):
        out.append(re.escape(base[pos:m.start()]))
        c = m.group(1)[-1]
        if c == "%":
            out.append("%")
        elif c == "x":
            out.append(re.escape(name) if name else r".+")
        elif c in "Nu":
            out.append(r"[^/]+")
        elif c == "J":
            out.append(r"\d+(?:\.\d+)?")
        else:
            out.append(r"\d+")
        pos = m.end()
    out.append(re.escape(base[pos:]))
    return re.compile("".join(out) + "$")


def _patterns(result: LintResult) -> list[tuple[str, bool]]:
    """(pattern, explicit) for the script's output and error files."""
    job = result.job
    if job is None:
        return []
    d = job.directives
    array = d.value("array") is not None
    default = "slurm-%A_%a.out" if array else "slurm-%j.out"
    out = [(d.value("output") or default, d.value("output") is not None)]
    if d.value("error"):
        out.append((d.value("error") or "", True))
    return out


def read_script(path: Path) -> str:
    """The script's text (sbatch's decoding); raises OSError."""
    return decode(path.read_bytes())


def find_script(log: Path) -> Path | None:
    """The one job script in ``log``'s folder whose output pattern names ``log``; None when no
    script or more than one matches."""
    folder = log.parent
    explicit: list[Path] = []
    implicit: list[Path] = []
    try:
        candidates = sorted(p for p in folder.iterdir() if p.is_file() and p != log and
                            p.stat().st_size < 1 << 20)[:MAX_SCRIPTS * 5]
    except OSError:
        return None
    seen = 0
    for p in candidates:
        if p.suffix in (".out", ".err", ".log", ".gz", ".json"):
            continue
        try:
            text = read_script(p)
        except (OSError, ValueError):
            continue
        if not is_job_script(text, str(p)):
            continue
        seen += 1
        if seen > MAX_SCRIPTS:
            break
        result = lint(text, str(p))
        name = result.job.directives.value("job-name") if result.job else None
        for pattern, is_explicit in _patterns(result):
            if pattern_regex(pattern, name or p.name).match(log.name):
                (explicit if is_explicit else implicit).append(p)
                break
    if len(explicit) == 1:
        return explicit[0]
    if not explicit and len(implicit) == 1:
        return implicit[0]
    return None


def config_for(script: Path) -> Config:
    """The script's project configuration (as the linter finds it), or the defaults."""
    found = find_config(script.resolve().parent)
    if found is None:
        return Config()
    try:
        return load_file(found)
    except ConfigError:
        return Config()


def explaining(result: LintResult, category: str | None) -> list:
    """The script's findings (errors and warnings) whose rules can explain ``category``, most
    specific rule first; when several apply, each is kept."""
    wanted = EXPLAINS.get(category, EXPLAINS[None])
    found = [d for d in result.diagnostics if d.code in wanted and d.severity >= Severity.WARNING]
    return sorted(found, key=lambda d: (wanted.index(d.code), d.start))
