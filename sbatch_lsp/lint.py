"""The one engine every face calls: ``lint(text, path, config)``.

text -> Source -> (shell model, directives) -> Job -> rules -> suppressions -> diagnostics
(the suppressions themselves live in :mod:`sbatch_lsp.suppressions`).
"""
from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from . import suppressions
from .config import Config
from .diagnostics import Diagnostic, Severity
from .directives import DirectiveBlock, read_directives
from .elsewhere import Reads, recording
from .facts.provenance import Provenance
from .job import Job
from .rules import RULES, finding
from .secrets import Masker, Secret, credential_values, imported_secrets, mask
from .shell.model import Script
from .shell.parse import outline_script, parse_script
from .source import JOB_SCRIPT, Source, is_job_script


@dataclass
class LintResult:
    """What every face reads: the Source, the Job (None when the text is not a job script) and
    the diagnostics (sorted by position), already masked: no message, related note, fix title
    or fix edit holds a detected secret (DESIGN.md "Secrets"). ``secrets`` are the detected
    spans; :meth:`excerpt` and :meth:`mask` show source text and other strings (diffs) masked.

    ``unmasked`` holds the same findings with the fixes as the rules made them, for the fixer
    alone (``--fix`` writes the script's own text back); no face may print it."""

    source: Source
    diagnostics: list[Diagnostic]
    job: Job | None = None
    secrets: list[Secret] = field(default_factory=list)
    masker: Masker = field(default_factory=Masker)
    unmasked: list[Diagnostic] | None = None
    #: the files besides the script that the lint read, and the folder listings that chose
    #: them (sbatch_lsp/elsewhere.py): the result holds while each gives the same digest
    elsewhere: Reads = field(default_factory=Reads)

    @property
    def fixable(self) -> list[Diagnostic]:
        """The findings whose fixes the fixer applies (unmasked: see the class docstring)."""
        return self.unmasked if self.unmasked is not None else self.diagnostics

    def excerpt(self, start: int, end: int) -> str:
        """``source.text[start:end]`` with every secret touching it masked (``hf_****``)."""
        text = self.source.text[start:end]
        for sec in sorted(self.secrets, key=lambda s: -s.start):
            if sec.end <= start or sec.start >= end:
                continue
            s, e = max(sec.start, start) - start, min(sec.end, end) - start
            text = text[:s] + mask(self.source.text[sec.start:sec.end]) + text[e:]
        return text

    def mask(self, text: str) -> str:
        """``text`` (a diff, a log line) with this result's secret values and any token format
        masked."""
        return self.masker.text(text)


class Superseded(Exception):
    """Raised by :func:`lint` when its ``superseded()`` answers yes: the caller no longer
    wants the result (the language server's document moved on to a newer version)."""


def lint(text: str, path: str = "<stdin>", config: Config | None = None,
         superseded: Callable[[], bool] | None = None) -> LintResult:
    """Lint one script. Never raises for any text: a rule that raises becomes an SB003 finding
    naming the rule. Offsets in the result are character offsets into ``text``. A text that is
    not a job script (:func:`is_job_script`, e.g. a helper ``run.sh``), or a ``path`` the
    configuration's ``exclude`` names, gets no findings and no Job; ``per-file-ignores``
    matching ``path`` switch their rules off.

    ``superseded`` (the server's cancellation) is asked after the shell model and Job are built
    and before each rule; when it answers True the lint stops with :class:`Superseded` (the
    only exception it raises), leaving no partial state behind: every memo the lint fills is
    keyed by its own inputs (the chunk cache, the Job's derived facts).

    Every file read besides ``text`` (sibling launchers) is read through
    sbatch_lsp/elsewhere.py and listed in the result's ``elsewhere``."""
    with recording() as reads:
        result = _lint(text, path, config, superseded)
    result.elsewhere = reads
    return result


#: the check of each rule that has one, by code, in registry order
_CHECKS = {code: r.check for code, r in RULES.items() if r.check is not None}
_CHECKED = tuple(_CHECKS)


def _lint(text: str, path: str, config: Config | None,
          superseded: Callable[[], bool] | None) -> LintResult:
    config = config or Config()
    if config.exclude or config.per_file_ignores:
        if config.excluded(path):  # the configuration's exclude: every face leaves it alone
            return LintResult(Source(text, path), [])
        config = config.for_path(path)
    if not is_job_script(text, path):
        return LintResult(Source(text, path), [])
    job = job_of(text, path, config)  # (which builds the Source the result holds)
    source, script = job.source, job.script
    diags: list[Diagnostic] = []
    for code in config.enabled_among(_CHECKED):
        if superseded is not None and superseded():
            raise Superseded(path)
        try:
            diags.extend(_CHECKS[code](job))
        except Exception as exc:  # noqa: BLE001  (a bug in a rule must not hide the others)
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            if config.enabled("SB003"):
                diags.append(finding("SB003", 0, 0,
                                     f"internal error in rule {code} ({RULES[code].name}): "
                                     f"{type(exc).__name__} at {tb.filename.rsplit('/', 1)[-1]}:"
                                     f"{tb.lineno}; please report it"))
    if script.imports:  # about a sourced file's own text, not the script's (shell/sourced.py)
        diags = [_without_imported(d, script) for d in diags if not script.imported_at(d.start)]
    if config.enabled("SB003"):
        diags += [finding("SB003", 0, 0, f"internal error in the shell parser: {err}; please "
                          "report it") for err in script.internal_errors]
    if config.enabled("SB002"):
        for ch in script.chunks:
            if ch.parser == "none":
                # a chunk cut off by the end of the file ends on the file's last real line
                last = source.line_of(max(ch.start, ch.end - 1)) if ch.end >= len(text) else \
                    ch.end_line
                diags.append(finding("SB002", ch.start, source.line_end(last),
                                     f"lines {ch.start_line + 1}-{last + 1} could not be "
                                     "parsed as shell (bash -n would reject them, or they use a "
                                     "construct no parser here reads); rules skip them"))
    if any(d.severity > Severity.INFO and RULES[d.code].rests_on for d in diags):
        # (only such a finding changes with the provenance: without one, it is not looked for
        # unless a rule asked, and the siblings it would read are no dependency of the result)
        prov = job.provenance
        if prov is not None:
            diags = [_completed_elsewhere(d, prov) for d in diags]
    diags = suppressions.apply(source, script, _merge_repeats(diags), config)
    for d in diags:
        if d.code in config.severity:
            d.severity = config.severity[d.code]
        if not d.name:
            d.name = RULES[d.code].name
    diags.sort(key=Diagnostic.sort_key)
    secrets = credential_values(job)
    masker = Masker.of(text, secrets, imported_secrets(job) if script.imports else ())
    shown = [masker.diagnostic(d, text) for d in diags]
    return LintResult(source, shown, job, secrets, masker, diags)


def job_of(text: str, path: str = "<stdin>", config: Config | None = None) -> Job:
    """The Job model of one script (shell model, directives, steps), whether or not it looks
    like a job script; the linter and ``show`` both start here."""
    config = config or Config()
    source = Source(text, path)
    script = parse_script(text, path)
    return Job(source, directives_of(source, script, config), script, config.profile)


def _without_imported(d: Diagnostic, script: Script) -> Diagnostic:
    """``d`` without what points into a sourced file's text (shell/sourced.py): its fixes that
    edit there (they would change the ``source`` line, not the other file) are dropped, and a
    related location there becomes the ``source`` command, naming the file."""
    if any(script.imported_at(e.start) or script.imported_at(e.end)
           for f in d.fixes for e in f.edits):
        d.fixes = [f for f in d.fixes if not any(
            script.imported_at(e.start) or script.imported_at(e.end) for e in f.edits)]
    for k, r in enumerate(d.related):
        found = script.imported_at(r.start)
        if found is not None:
            d.related[k] = replace(r, start=found.start, end=found.end,
                                   message=f"{r.message} (in {os.path.basename(found.path)}, "
                                           "sourced here)")
    return d


def _completed_elsewhere(d: Diagnostic, prov: Provenance) -> Diagnostic:
    """``d`` as info, its message naming the reason, when its rule rests on a resource that
    the file's provenance says another program supplies (facts/provenance.py)."""
    if d.severity > Severity.INFO and RULES[d.code].rests_on & prov.supplies:
        d.severity = Severity.INFO
        d.message += f" (info only: {prov.reason})"
    return d


def _merge_repeats(diags: list[Diagnostic]) -> list[Diagnostic]:
    """One finding per code and range: a command string defined once and run by two srun
    lines is one fault at one place (the worst severity wins, related locations are merged)."""
    kept: dict[tuple, Diagnostic] = {}
    for d in diags:
        key = (d.code, d.start, d.end)
        first = kept.setdefault(key, d)
        if first is not d:
            if d.severity > first.severity:
                first.severity, first.message = d.severity, d.message
            first.related += [r for r in d.related if r not in first.related]
    return list(kept.values())


def directives_of(source: Source, script: Script, config: Config) -> DirectiveBlock:
    """The ``#SBATCH`` block as sbatch reads it under the configured profile, with the script's
    here-document bodies and multi-line strings (from ``script``, the full model or an
    :func:`outline`) as data, not directives."""
    profile = config.profile
    return read_directives(source, _data_lines(source, script), profile.slurm_version,
                           profile.pyxis)


def outline(source: Source) -> Script:
    """The shell model's outline that :func:`directives_of` and the suppressions need, without
    reading every command: only the chunks holding a directive-like line are parsed."""
    return outline_script(source.text, JOB_SCRIPT)


def _data_lines(source: Source, script: Script) -> frozenset[int]:
    lines: set[int] = set()
    for s, e in [(h.start, h.end) for h in script.heredocs] + list(script.data_spans):
        a, b = source.line_of(s), source.line_of(max(s, e - 1))
        lines.update(range(a + (0 if s == source.line_starts[a] else 1), b + 1))
    return frozenset(lines)


__all__ = ["lint", "LintResult", "Superseded", "is_job_script", "Severity"]
