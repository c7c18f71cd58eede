"""The real-failure cases of ../shared/cases, matched as DESIGN.md says: each expected finding is
matched one-to-one by a finding with the same code, a severity of at least warning, and the
expected line as its primary line or a related location; negatives get no error or warning."""
import json
from pathlib import Path

import pytest

from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.lint import lint

#: the project's shared reference folder sits beside the clone (as in CI): ../shared/cases
CASES_DIR = Path(__file__).resolve().parents[2] / "shared" / "cases"
if not (CASES_DIR / "expected.json").is_file():
    raise RuntimeError(f"the failure cases are missing: expected {CASES_DIR} (a copy of the "
                       "project's shared/ folder beside this clone; see README.md)")
#: codes this engine implements so far; cases needing others wait for their issue
IMPLEMENTED = {"SB100", "SB101", "SB102", "SB103", "SB104", "SB105", "SB106", "SB107", "SB108",
               "SB109", "SB110", "SB111", "SB112", "SB113", "SB201", "SB202", "SB203", "SB204",
               "SB205", "SB206", "SB207", "SB301", "SB302", "SB401", "SB402", "SB403", "SB501",
               "SB502", "SB601"}


#: the project's own cases, one per file (DESIGN.md "Tests"): <ID>.sbatch with <ID>.json
OWN_CASES_DIR = Path(__file__).resolve().parent / "cases"


def _cases():
    data = json.loads((CASES_DIR / "expected.json").read_text())
    for c in data:
        missing = sorted({e["code"] for e in c["expected"]} - IMPLEMENTED)
        marks = [pytest.mark.skip(reason=f"needs {', '.join(missing)}, not built yet")] \
            if missing else []
        yield pytest.param(c, id=c["file"], marks=marks)


def _own_cases():
    for f in sorted(OWN_CASES_DIR.glob("*.json")):
        c = json.loads(f.read_text())
        c["dir"] = OWN_CASES_DIR
        yield pytest.param(c, id=f"tests/cases/{c['file']}")


def _lines(result, d):
    src = result.source
    return {src.line_of(d.start) + 1} | {src.line_of(r.start) + 1 for r in d.related}


@pytest.mark.parametrize("case", list(_cases()) + list(_own_cases()))
def test_case(case):
    text = (case.get("dir", CASES_DIR) / case["file"]).read_bytes().decode("utf-8")
    result = lint(text, case["file"])
    serious = [d for d in result.diagnostics if d.severity >= Severity.WARNING]
    assert not [d for d in result.diagnostics if d.code == "SB003"]
    if case["kind"] == "negative":
        assert serious == [], [(d.code, d.message) for d in serious]
        return
    pool = list(serious)
    for exp in case["expected"]:
        if exp["severity"] == "info":
            continue
        match = next((d for d in pool if d.code == exp["code"] and exp["line"] in
                      _lines(result, d)), None)
        assert match is not None, (exp, [(d.code, sorted(_lines(result, d))) for d in serious])
        pool.remove(match)


def test_every_case_is_collected():
    data = json.loads((CASES_DIR / "expected.json").read_text())
    assert len(list(_cases())) == len(data) >= 32


def test_own_cases_are_complete():
    """Every project case has its script, a public source and the shared schema's keys."""
    for f in sorted(OWN_CASES_DIR.glob("*.json")):
        c = json.loads(f.read_text())
        assert {"file", "kind", "expected", "fix", "notes", "source"} <= c.keys(), f.name
        assert c["source"].startswith("https://"), f.name
        assert (OWN_CASES_DIR / c["file"]).is_file(), f.name
        assert c["kind"] in ("failure", "negative") and (c["kind"] == "negative") == \
            (c["expected"] == []), f.name
