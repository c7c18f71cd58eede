"""The rule registry: the one source of every rule's metadata (DESIGN.md "Rule catalogue").

A rule is a code, a kebab-case name, a default severity, a one-line summary, the fixes it may
offer (:data:`FIX_KINDS`) and a ``check(job)`` that yields Diagnostics. Its page is
``rules/<code>.md``. The README's rule table, the page headers, ``--list-rules``, hover and the
SARIF rule descriptors all read :data:`RULES` (:mod:`sbatch_lsp.catalogue` renders them;
``tests/test_catalogue.py`` fails when they drift).

Adding a rule touches its module and its page only: a rule module is any module of this
package, and importing the package imports every one of them (:func:`_load_rule_modules`), so
a new ``rules/<family>.py`` needs no import line. Register a check with::

    @rule("SB2xx", "kebab-name", Severity.ERROR, "one-line summary", fix="unsafe")
    def check(job): ...

then regenerate the README table (``python -m sbatch_lsp.catalogue --write README.md``).
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from ..diagnostics import Diagnostic, Edit, Fix, Related, Severity

#: the rule pages ship inside the package (``--explain`` prints them); the project publishes no
#: web site, so every link the tool prints is to the installed page
PAGES = "rules_pages"

#: what a rule's fixes may be: none, only safe ones, only unsafe ones, or either (DESIGN.md
#: "Fixes"); the page header's ``**Fix:**`` starts with the same words
FIX_KINDS = ("none", "safe", "unsafe", "safe or unsafe")
#: the resources a rule's findings may rest on (:attr:`Rule.rests_on`)
RESOURCES = frozenset({"nodes", "ntasks", "ntasks-per-node", "gpus", "cpus-per-task",
                       "partition", "directives"})

Check = Callable[..., Iterable[Diagnostic]]
F = TypeVar("F", bound=Check)


@dataclass(frozen=True)
class Rule:
    """One rule's metadata and check. ``fix`` is one of :data:`FIX_KINDS`: the applicabilities
    its findings' fixes may have (``"none"``: it never offers one). ``check`` is None for the
    meta rules the engine reports itself (SB001-SB003)."""

    code: str
    name: str
    severity: Severity
    summary: str
    fix: str
    check: Check | None
    #: the resources (``nodes``, ``ntasks``, ``ntasks-per-node``, ``gpus``, ``cpus-per-task``,
    #: ``partition``) whose absence or value its findings rest on: when the file's provenance
    #: says another program supplies one (a template, a launcher next to it), they drop to info;
    #: ``directives``: the text of the #SBATCH lines as written (a generator's input fills it)
    rests_on: frozenset[str] = frozenset()

    @property
    def fix_applicabilities(self) -> frozenset[str]:
        """The ``Fix.applicability`` values this rule's fixes may take (empty for ``"none"``)."""
        return frozenset(self.fix.split(" or ")) - {"none"}

    @property
    def url(self) -> str:
        """A ``file:`` URI of this rule's page as installed with the package (for the LSP's
        code description); the page itself is what ``sbatch-lint --explain CODE`` prints."""
        return page_path(self.code).as_uri()


def page_path(code: str) -> Path:
    """The installed Markdown page of rule ``code`` (``…/sbatch_lsp/rules_pages/SB201.md``),
    absolute; it may be missing only from a broken install."""
    return _pages() / f"{code}.md"


@functools.cache
def _pages() -> Path:
    """The installed folder of the rule pages, absolute (resolved once: the server asks for
    every diagnostic of every lint)."""
    return (Path(__file__).resolve().parent.parent / PAGES).absolute()


RULES: dict[str, Rule] = {}


def _register(r: Rule) -> None:
    """Add ``r`` to :data:`RULES`; a code or name registered twice, or an unknown fix kind, is
    a programming error (ValueError at import time)."""
    if r.fix not in FIX_KINDS:
        raise ValueError(f"{r.code}: fix={r.fix!r} is not one of {FIX_KINDS}")
    if not r.rests_on <= RESOURCES:
        raise ValueError(f"{r.code}: rests_on names {sorted(r.rests_on - RESOURCES)}; known: "
                         f"{sorted(RESOURCES)}")
    if r.code in RULES or any(o.name == r.name for o in RULES.values()):
        raise ValueError(f"{r.code} {r.name}: code or name registered twice")
    RULES[r.code] = r


def rule(code: str, name: str, severity: Severity, summary: str, *,
         fix: str = "none", rests_on: Iterable[str] = ()) -> Callable[[F], F]:
    """Register the decorated ``check(job)`` generator as rule ``code`` (``fix``: one of
    :data:`FIX_KINDS`, the fixes its findings may carry; ``rests_on``: see :class:`Rule`)."""
    def deco(fn: F) -> F:
        _register(Rule(code, name, severity, summary, fix, fn, frozenset(rests_on)))
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
    _register(Rule(code, name, severity, summary, "none", None))


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



def _load_rule_modules() -> None:
    """Import every module of this package (in name order), so each registers its rules."""
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        importlib.import_module(f"{__name__}.{m.name}")


_load_rule_modules()

__all__ = ["RULES", "Rule", "rule", "finding", "Diagnostic", "Edit", "Fix", "Related", "Severity"]
