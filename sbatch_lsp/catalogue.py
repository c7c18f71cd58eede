"""The rule catalogue as people read it, rendered from the registry (:data:`rules.RULES`, the
one source of each rule's code, name, default severity, summary and fix kind): the README's
rule table, ``sbatch-lint --list-rules`` (text, JSON, Markdown).

``python -m sbatch_lsp.catalogue --write README.md`` rewrites the README's table between its
two marker lines; ``--check README.md`` exits 1 when the table is stale. ``tests/test_catalogue.py``
fails when the README, the page headers, ``--list-rules``, hover or SARIF drift from the registry.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .rules import RULES, Rule

BEGIN = ("<!-- rule table: generated from the rule registry by "
         "`python -m sbatch_lsp.catalogue --write README.md`; edit the rules, not this table -->")
END = "<!-- end of rule table -->"
HEADER = ("| code | name | default | fix | what it catches |\n"
          "|---|---|---|---|---|")


def rules() -> list[Rule]:
    """Every registered rule, sorted by code."""
    return [RULES[c] for c in sorted(RULES)]


def markdown_table() -> str:
    """The rule table in Markdown (one row per rule, code linked to ``rules/<code>.md``), with
    a trailing newline."""
    rows = [f"| [{r.code}](rules/{r.code}.md) | {r.name} | {r.severity.label} | {r.fix} | "
            f"{_cell(r.summary)} |" for r in rules()]
    return "\n".join([HEADER, *rows]) + "\n"


def _cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell (a ``|`` would end the cell)."""
    return text.replace("|", "\\|")


def text_listing() -> str:
    """``--list-rules`` as text: one line per rule (code, name, severity, fix kind, summary)."""
    return "".join(f"{r.code}  {r.name:<32} {r.severity.label:<8} {r.fix:<15} {r.summary}\n"
                   for r in rules())


def json_listing() -> str:
    """``--list-rules --format json``: an array of ``{code, name, severity, fix, summary}``."""
    return json.dumps([{"code": r.code, "name": r.name, "severity": r.severity.label,
                        "fix": r.fix, "summary": r.summary} for r in rules()], indent=2) + "\n"


def with_table(readme: str) -> str:
    """``readme`` with the text between the :data:`BEGIN` and :data:`END` lines replaced by
    :func:`markdown_table`. ValueError when either marker line is missing or out of order."""
    lines = readme.splitlines(keepends=True)
    try:
        first = next(i for i, ln in enumerate(lines) if ln.rstrip("\n") == BEGIN)
        last = next(i for i, ln in enumerate(lines) if ln.rstrip("\n") == END and i > first)
    except StopIteration:
        raise ValueError("the README has no rule-table marker lines (BEGIN … END, in that "
                         "order): see sbatch_lsp/catalogue.py") from None
    return "".join(lines[:first + 1]) + markdown_table() + "".join(lines[last:])


def main(argv: list[str] | None = None) -> int:
    """Print the table (no option), rewrite a README's table (``--write PATH``) or check it
    (``--check PATH``: exit 1 when stale). Exit 2 for an unreadable README or missing markers."""
    p = argparse.ArgumentParser(prog="python -m sbatch_lsp.catalogue",
                                description="The README rule table, from the rule registry.")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", metavar="README", help="rewrite the table in this file")
    g.add_argument("--check", metavar="README", help="exit 1 when the table here is stale")
    args = p.parse_args(argv)
    target = args.write or args.check
    if target is None:
        sys.stdout.write(markdown_table())
        return 0
    path = Path(target)
    try:
        old = path.read_text("utf-8")
        new = with_table(old)
    except (OSError, ValueError) as exc:
        print(f"{p.prog}: {target}: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if new != old:
            print(f"{target}: the rule table is stale; run {p.prog} --write {target}",
                  file=sys.stderr)
            return 1
        return 0
    if new != old:
        path.write_text(new, "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
