"""The real-failure cases, matched as DESIGN.md ("Tests") says: each expected finding is matched
one-to-one by a finding with the same code, a severity of at least warning, and the expected line
as its primary line or a related location; negatives get no error or warning.

Two sets run through the same matching:

- ``../shared/cases`` (``expected.json``, the project's shared reference folder beside the clone);
- ``tests/cases/<ID>.sbatch`` with ``<ID>.json``, one case per file (the shared schema plus
  ``source``, the public report it is taken from). Optional fields: ``config``, a table as in
  ``[tool.sbatch-lint]`` (e.g. ``{"profile": {"slurm-version": "17.11"}}``) for the site facts a
  case depends on; ``open``, the mechanism the engine lacks -- the case is then a strict xfail,
  so the day the engine learns it the test fails and the marker must be removed.
"""
import json
import re
from pathlib import Path

import pytest

import sbatch_lsp.lint  # noqa: F401  (registers every rule)
from sbatch_lsp.config import Config, from_table
from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.lint import lint
from sbatch_lsp.rules import RULES

#: the project's shared reference folder sits beside the clone (as in CI): ../shared/cases
SHARED_DIR = Path(__file__).resolve().parents[2] / "shared" / "cases"
if not (SHARED_DIR / "expected.json").is_file():
    raise RuntimeError(f"the failure cases are missing: expected {SHARED_DIR} (a copy of the "
                       "project's shared/ folder beside this clone; see README.md)")
#: the project's own cases, one per file
LOCAL_DIR = Path(__file__).resolve().parent / "cases"
CASE_KEYS = {"file", "kind", "expected", "fix", "notes", "source", "config", "open"}
SEVERITIES = {"error", "warning", "info"}


def _shared() -> list[dict]:
    return json.loads((SHARED_DIR / "expected.json").read_text())


def _local() -> list[dict]:
    """Every tests/cases/*.json, in ID order, with ``file`` checked against its name."""
    return [json.loads(p.read_text()) for p in sorted(LOCAL_DIR.glob("*.json"))]


def _param(case: dict, folder: Path):
    missing = sorted({e["code"] for e in case["expected"]} - set(RULES))
    marks = []
    if missing:
        marks.append(pytest.mark.skip(reason=f"needs {', '.join(missing)}, not built yet"))
    elif case.get("open"):
        marks.append(pytest.mark.xfail(strict=True, reason=case["open"]))
    return pytest.param(case, folder, id=case["file"], marks=marks)


def _cases():
    for c in _shared():
        yield _param(c, SHARED_DIR)
    for c in _local():
        yield _param(c, LOCAL_DIR)


def _lines(result, d):
    src = result.source
    return {src.line_of(d.start) + 1} | {src.line_of(r.start) + 1 for r in d.related}


def _config(case: dict) -> Config | None:
    return from_table(case["config"], f"{case['file']}: config") if case.get("config") else None


@pytest.mark.parametrize(("case", "folder"), list(_cases()))
def test_case(case, folder):
    text = (folder / case["file"]).read_bytes().decode("utf-8")
    result = lint(text, case["file"], _config(case))
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
    assert len(_shared()) >= 32
    assert len(list(_cases())) == len(_shared()) + len(_local())


@pytest.mark.parametrize("case", _local(), ids=lambda c: c["file"])
def test_local_case_is_well_formed(case):
    """A case states what it claims precisely enough to be checked, and where it comes from."""
    name = case["file"]
    assert re.fullmatch(r"[A-Z]{1,2}\d{2,3}\.sbatch", name), name
    assert (LOCAL_DIR / name).is_file() and (LOCAL_DIR / name.replace(".sbatch", ".json")).is_file()
    assert set(case) <= CASE_KEYS, sorted(set(case) - CASE_KEYS)
    assert case["kind"] in {"failure", "negative"}
    assert re.match(r"https://\S+$", case["source"]), case["source"]
    assert case["notes"].strip() and (case["fix"].strip() or case["kind"] == "negative")
    lines = (LOCAL_DIR / name).read_text().splitlines()
    for exp in case["expected"]:
        assert set(exp) == {"code", "line", "severity", "why"}, exp
        assert exp["code"] in RULES and exp["severity"] in SEVERITIES and exp["why"].strip()
        assert 1 <= exp["line"] <= len(lines), exp
    if case["kind"] == "failure":
        assert [e for e in case["expected"] if e["severity"] != "info"], "nothing to match"
    else:
        assert all(e["severity"] == "info" for e in case["expected"])
    if "open" in case:
        assert case["open"].strip()
    _config(case)  # a bad table raises ConfigError


def test_local_case_counts():
    """Issue 10 item 6: at least 30 C cases from public reports, at least 10 of them negatives."""
    own = [c for c in _local() if c["file"].startswith("C")]
    assert len(own) >= 30
    assert len([c for c in own if c["kind"] == "negative"]) >= 10
    assert len({c["source"] for c in own}) >= 25  # many reports, not one report cut 30 ways
