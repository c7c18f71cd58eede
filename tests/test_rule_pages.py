"""Every rule page's examples are tests: bad ones fire, good ones stay clean, fixes produce the
exact text the page shows."""
import pytest

from sbatch_lsp.fixer import fix_text
from sbatch_lsp.lint import lint
from sbatch_lsp.rules import RULES

from rule_pages import examples, pages

CASES = []
for page in pages():
    code = page.stem
    ex = examples(page)
    for i, (kind, text) in enumerate(ex):
        if kind in ("bad", "good"):
            CASES.append(pytest.param(code, kind, text, None, id=f"{code}-{i}-{kind}"))
        elif kind == "fix-before" and i + 1 < len(ex) and ex[i + 1][0] == "fix-after":
            CASES.append(pytest.param(code, "fix", text, ex[i + 1][1], id=f"{code}-{i}-fix"))


def test_every_rule_has_a_page_with_examples():
    have = {p.stem for p in pages()}
    missing = sorted(c for c, r in RULES.items() if r.check is not None and c not in have)
    assert not missing, f"rules without a page: {missing}"
    for p in pages():
        kinds = [k for k, _ in examples(p)]
        # SB003 (internal error) cannot be caused by a script: its page has good examples only
        bad_needed = 0 if p.stem == "SB003" else 3
        assert kinds.count("bad") >= bad_needed and kinds.count("good") >= 3, p.name


@pytest.mark.parametrize("code,kind,text,after", CASES)
def test_page_example(code, kind, text, after):
    codes = [d.code for d in lint(text, f"{code}.sbatch").diagnostics]
    if kind == "bad":
        assert code in codes, f"{code} did not fire; got {codes}"
    elif kind == "good":
        assert code not in codes, f"{code} fired on a good example"
    else:
        out = fix_text(text, f"{code}.sbatch", unsafe=True, codes={code})
        assert out.text == after
        assert code not in [d.code for d in out.result.diagnostics
                            if d.severity >= RULES[code].severity]
