"""One metadata source per rule: the registry (``sbatch_lsp.rules.RULES``). The README's rule
table, each page's header, ``--list-rules`` (text, JSON, Markdown), hover on a suppression and
the SARIF rule descriptors must say what the registry says; these tests fail when any drifts.

Fixing a failure: change the rule's registration (its ``@rule(...)``) or its page header, then
``python -m sbatch_lsp.catalogue --write README.md``."""
from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from sbatch_lsp import catalogue
from sbatch_lsp.cli import main
from sbatch_lsp.config import Config
from sbatch_lsp.output import sarif_rules
from sbatch_lsp.rules import FIX_KINDS, RULES, page_path
from sbatch_lsp.schemas import schema
from sbatch_lsp.server.hover import hover_text
from sbatch_lsp.source import Source

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "rules"
CODES = sorted(RULES)
HEADER = re.compile(r"\*\*Default severity:\*\* (error|warning|info|hint)\b.*?"
                    r"\*\*Fix:\*\* (safe or unsafe|none|safe|unsafe)\b", re.S)


def page_header(code: str) -> tuple[str, str, str]:
    """(title line, default severity word, fix word) of ``rules/<code>.md``: the first line and
    the first words after ``**Default severity:**`` and ``**Fix:**`` in the paragraph below it."""
    text = (PAGES / f"{code}.md").read_text("utf-8")
    title, rest = text.split("\n", 1)
    paragraph = rest.lstrip("\n").split("\n\n", 1)[0]
    m = HEADER.search(paragraph)
    assert m, f"{code}.md: the header paragraph lacks **Default severity:** … **Fix:** …"
    return title, m.group(1), m.group(2)


def test_pages_and_registry_name_the_same_rules():
    pages = sorted(p.stem for p in PAGES.glob("SB*.md"))
    assert pages == CODES, "a page without a rule, or a rule without a page"
    assert all(page_path(c).is_file() for c in CODES)  # the installed copies too


@pytest.mark.parametrize("code", CODES)
def test_page_header_follows_the_registry(code):
    r = RULES[code]
    assert r.fix in FIX_KINDS
    assert page_header(code) == (f"# {code} {r.name}", r.severity.label, r.fix)


def test_readme_table_is_the_generated_one():
    readme = (ROOT / "README.md").read_text("utf-8")
    assert catalogue.with_table(readme) == readme, (
        "README's rule table is stale: run python -m sbatch_lsp.catalogue --write README.md")
    rows = [ln for ln in readme.splitlines() if ln.startswith("| [SB")]
    assert [re.match(r"\| \[(SB\d+)\]", ln).group(1) for ln in rows] == CODES
    for ln, code in zip(rows, CODES, strict=True):
        cells = [c.strip() for c in ln.strip("|").split(" | ")]
        r = RULES[code]
        assert cells[1:] == [r.name, r.severity.label, r.fix, r.summary]


def test_catalogue_check_and_write(tmp_path, capsys):
    readme = (ROOT / "README.md").read_text("utf-8")
    stale = tmp_path / "README.md"
    stale.write_text(readme.replace("| torchrun-per-task | error |", "| torchrun-per-task | info |"))
    assert catalogue.main(["--check", str(stale)]) == 1
    assert "stale" in capsys.readouterr().err
    assert catalogue.main(["--write", str(stale)]) == 0
    assert stale.read_text() == readme
    assert catalogue.main(["--check", str(stale)]) == 0
    (tmp_path / "bare.md").write_text("# no table here\n")
    assert catalogue.main(["--check", str(tmp_path / "bare.md")]) == 2
    assert "marker" in capsys.readouterr().err


def test_list_rules_text(capsys):
    assert main(["--list-rules"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(CODES)
    for ln, code in zip(lines, CODES, strict=True):
        r = RULES[code]
        got = re.match(r"(SB\d+)\s+(\S+)\s+(\S+)\s+(safe or unsafe|\S+)\s+(.*)$", ln)
        assert got and got.groups() == (code, r.name, r.severity.label, r.fix, r.summary)


def test_list_rules_json_and_markdown(capsys):
    assert main(["--list-rules", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    jsonschema.validate(listed, schema("rules"))
    assert listed == [{"code": c, "name": RULES[c].name, "severity": RULES[c].severity.label,
                       "fix": RULES[c].fix, "summary": RULES[c].summary} for c in CODES]
    assert main(["--list-rules", "--format", "markdown"]) == 0
    table = capsys.readouterr().out
    assert table in (ROOT / "README.md").read_text("utf-8")
    assert main(["--list-rules", "--format", "sarif"]) == 2
    assert main(["--format", "markdown", "x.sbatch"]) == 2


def test_sarif_descriptors_follow_the_registry():
    level = {"error": "error", "warning": "warning", "info": "note", "hint": "note"}
    got = sarif_rules()
    assert [d["id"] for d in got] == CODES
    for d in got:
        r = RULES[d["id"]]
        assert (d["name"], d["shortDescription"]["text"], d["defaultConfiguration"]["level"],
                d["properties"]["fix"]) == (r.name, r.summary, level[r.severity.label], r.fix)


@pytest.mark.parametrize("code", CODES)
def test_hover_on_a_suppression_follows_the_registry(code):
    text = f"#!/bin/bash\n#SBATCH --nodes=1\n# sbatch-lint: disable={code}\necho hi\n"
    at = text.index(code) + 1
    found = hover_text(Source(text, "h.sbatch"), at, Config())
    r = RULES[code]
    assert found is not None
    assert found[0] == f"**{code}** `{r.name}` ({r.severity.label}; fix: {r.fix}): {r.summary}"


def test_registration_refuses_duplicates_and_unknown_fix_kinds():
    from sbatch_lsp.diagnostics import Severity
    from sbatch_lsp.rules import rule

    with pytest.raises(ValueError, match="registered twice"):
        rule("SB201", "another-name", Severity.ERROR, "s")(lambda job: [])
    with pytest.raises(ValueError, match="registered twice"):
        rule("SB999", "torchrun-per-task", Severity.ERROR, "s")(lambda job: [])
    with pytest.raises(ValueError, match="fix="):
        rule("SB998", "some-name", Severity.ERROR, "s", fix="maybe")(lambda job: [])
    assert "SB998" not in RULES and "SB999" not in RULES
