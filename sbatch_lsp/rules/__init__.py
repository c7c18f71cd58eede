"""The rule registry. A rule is a code, a kebab-case name, a default severity, a one-line
summary and a ``check(job)`` that yields Diagnostics (DESIGN.md "Rule catalogue").

Rule modules register themselves with :func:`rule`; importing this package loads them all.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from ..diagnostics import Diagnostic, Edit, Fix, Related, Severity

#: the rule pages ship inside the package (``--explain`` prints them); the project publishes no
#: web site, so every link the tool prints is to the installed page
PAGES = "rules_pages"


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str
    check: Callable[..., Iterable[Diagnostic]] | None

    @property
    def url(self) -> str:
        """A ``file:`` URI of this rule's page as installed with the package (for the LSP's
        code description); the page itself is what ``sbatch-lint --explain CODE`` prints."""
        return page_path(self.code).as_uri()


def page_path(code: str) -> Path:
    """The installed Markdown page of rule ``code`` (``…/sbatch_lsp/rules_pages/SB201.md``),
    absolute; it may be missing only from a broken install."""
    return (Path(__file__).resolve().parent.parent / PAGES / f"{code}.md").absolute()


RULES: dict[str, Rule] = {}


def rule(code: str, name: str, severity: Severity, summary: str):
    """Register the decorated ``check(job)`` generator as rule ``code``."""
    def deco(fn):
        RULES[code] = Rule(code, name, severity, summary, fn)
        return fn
    return deco


def code_of(typed: str) -> str:
    """The code of the rule named ``typed`` (``torchrun-per-task`` -> ``SB201``); anything else
    comes back stripped and upper-cased (a code or prefix such as ``SB2``, for the caller to
    check). Suppression comments, --select/--ignore, --explain and hover all read names so."""
    typed = typed.strip()
    for code, r in RULES.items():
        if r.name == typed.lower():
            return code
    return typed.upper()


def meta(code: str, name: str, severity: Severity, summary: str) -> None:
    """Register a meta rule produced by the engine itself (no check function)."""
    RULES[code] = Rule(code, name, severity, summary, None)


def finding(code: str, start: int, end: int, message: str, severity: Severity | None = None,
            related: list[Related] | None = None, fixes: list[Fix] | None = None) -> Diagnostic:
    """A Diagnostic for rule ``code`` (default severity unless ``severity`` is given)."""
    r = RULES[code]
    return Diagnostic(code, severity or r.severity, message, start, end, related or [],
                      fixes or [], name=r.name)


def insert_line_before(job, cmd, line: str) -> Edit:
    """An edit that inserts ``line`` (with its newline) above the batch-script command that
    runs ``cmd``."""
    at = job.source.line_start_at(cmd.top().start)
    return Edit(at, at, line + "\n")


meta("SB001", "unused-suppression", Severity.WARNING,
     "a `# sbatch-lint: disable=` comment that suppresses nothing")
meta("SB002", "unparsed-chunk", Severity.INFO,
     "a part of the script that no shell parser could read; rules skip it")
meta("SB003", "internal-error", Severity.ERROR,
     "a rule raised an exception (a bug in sbatch-lint: please report it)")

from . import directives, option_values, launch, expansion, environment, framework, credentials, containers, ports  # noqa: E402,F401

__all__ = ["RULES", "Rule", "rule", "finding", "Diagnostic", "Edit", "Fix", "Related", "Severity"]
