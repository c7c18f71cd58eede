"""Every fix, applied to every example, case and rule-page script: removes its finding, adds no
new error or warning, leaves a file `bash -n` accepts, and fixing again changes nothing.
test_each_fix runs only on the samples that have a fix; test_fixable_sample_count says how
many (101 of 253 when this was written) and fails if the number falls below 90."""
import shutil
import subprocess
from pathlib import Path

import pytest

from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.fixer import apply_edits, fix_text
from sbatch_lsp.lint import lint

from rule_pages import sample_scripts

ROOT = Path(__file__).resolve().parents[1]


def _serious(result):
    """(code, text under the primary range): stable when a fix shifts lines."""
    text = result.source.text
    return {(d.code, text[d.start:d.end]) for d in result.diagnostics
            if d.severity >= Severity.WARNING}


def bash_ok(text: str) -> bool:
    return subprocess.run(["bash", "-n"], input=text, text=True,
                          capture_output=True).returncode == 0


SAMPLES = list(sample_scripts(("bad", "fix-before")))
#: the samples that have at least one fix (the others have nothing for test_each_fix to apply)
FIXABLE = [p for p in SAMPLES if any(d.fixes for d in lint(p.values[0]).diagnostics)]


def test_fixable_sample_count():
    """How many samples test_each_fix runs on: a fall means fixes went missing (or samples)."""
    print(f"test_each_fix runs on {len(FIXABLE)} of {len(SAMPLES)} samples (the rest have no fix)")
    assert len(FIXABLE) >= 90, f"only {len(FIXABLE)} of {len(SAMPLES)} samples have a fix"


@pytest.mark.parametrize("text", FIXABLE)
def test_each_fix(text):
    before = lint(text)
    base_ok = bash_ok(text.replace("\r", "")) if shutil.which("bash") else True
    assert any(d.fixes for d in before.diagnostics)  # the loop below runs
    for d in before.diagnostics:
        for fix in d.fixes:
            fixed = apply_edits(text, list(fix.edits))
            after = lint(fixed)
            same = [x for x in after.diagnostics if x.code == d.code and x.message == d.message]
            assert len(same) < len([x for x in before.diagnostics if x.code == d.code and
                                    x.message == d.message]), (d.code, fix.message)
            new = {s for s in _serious(after) if s[0] != d.code} - _serious(before)
            assert not new, (d.code, fix.message, new)
            if base_ok:
                assert bash_ok(fixed), (d.code, fix.message)


@pytest.mark.parametrize("text", SAMPLES)
def test_fixing_twice_changes_nothing(text):
    once = fix_text(text, unsafe=True)
    assert fix_text(once.text, unsafe=True).text == once.text
