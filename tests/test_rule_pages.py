"""Every rule page's examples are tests: bad ones fire, good ones stay clean, fixes produce the
exact text the page shows."""
import json

import pytest

from sbatch_lsp.fixer import fix_text
from sbatch_lsp.lint import lint
from sbatch_lsp.rules import RULES

from rule_pages import examples, examples_with_findings, line_col, pages
from sbatch_lsp.config import Config, Profile, from_table
from sbatch_lsp.diagnostics import Severity

CASES = []
for page in pages():
    code = page.stem
    ex = examples_with_findings(page)
    for i, (kind, text, keys, at) in enumerate(ex):
        if kind in ("bad", "good"):
            CASES.append(pytest.param(code, kind, text, at, keys, id=f"{code}-{i}-{kind}"))
        elif kind == "fix-before" and i + 1 < len(ex) and ex[i + 1][0] == "fix-after":
            CASES.append(pytest.param(code, "fix", text, ex[i + 1][1], keys,
                                      id=f"{code}-{i}-fix"))


def _config(keys: dict[str, str]) -> Config:
    """The profile an example names after its kind (``slurm-version=22.05``, ``pyxis=false``,
    ``megatron-core=0.9``, ``enroot=3.5``, ``gpus-per-node=8``, ``constrain-devices=true``,
    ``home-shared=false``), or its page's ``toml profile``
    table (``config``)."""
    if "config" in keys:
        return from_table(json.loads(keys["config"]), "page profile")
    pyxis = {"true": True, "false": False}.get(keys.get("pyxis", ""), keys.get("pyxis"))
    gpus = keys.get("gpus-per-node")
    return Config(profile=Profile(slurm_version=keys.get("slurm-version", Profile().slurm_version),
                                  pyxis=pyxis, megatron_core=keys.get("megatron-core"),
                                  enroot=keys.get("enroot"),
                                  gpus_per_node=int(gpus) if gpus else None,
                                  constrain_devices={"true": True, "false": False}.get(
                                      keys.get("constrain-devices", "")),
                                  home_shared={"true": True, "false": False}.get(
                                      keys.get("home-shared", ""))))


def test_every_rule_has_a_page_with_examples():
    have = {p.stem for p in pages()}
    missing = sorted(c for c, r in RULES.items() if r.check is not None and c not in have)
    assert not missing, f"rules without a page: {missing}"
    for p in pages():
        kinds = [k for k, _ in examples(p)]
        # SB003 (internal error) cannot be caused by a script, and SB790 (live check) comes
        # from the controller, never from lint alone: their pages have good examples only
        bad_needed = 0 if p.stem in ("SB003", "SB790") else 3
        assert kinds.count("bad") >= bad_needed and kinds.count("good") >= 3, p.name


def test_every_rule_with_a_fix_shows_one():
    """A rule whose registration says it offers fixes shows one on its page (fix-before and
    fix-after); one that says ``none`` shows none."""
    for p in pages():
        shown = any(k == "fix-before" for k, _ in examples(p))
        assert shown == (RULES[p.stem].fix != "none"), (p.name, RULES[p.stem].fix)


def test_every_bad_example_states_its_findings():
    """Every bad example says ``at=LINE:COL:SEVERITY`` for each finding of its page's rule."""
    missing = [f"{p.stem}-{i}" for p in pages()
               for i, (kind, _, _, at) in enumerate(examples_with_findings(p))
               if kind == "bad" and not at]
    assert not missing, f"bad examples without at=LINE:COL:SEVERITY: {missing}"


@pytest.mark.parametrize("code,kind,text,after,keys", CASES)
def test_page_example(code, kind, text, after, keys):
    """``after`` is the fix-after text for a fix example, the ``at=`` findings for a bad one."""
    config = _config(keys)
    diags = lint(text, f"{code}.sbatch", config).diagnostics
    codes = [d.code for d in diags]
    # every fix any finding carries has an applicability its rule's registration declares
    for d in diags:
        offered = {f.applicability for f in d.fixes}
        assert offered <= RULES[d.code].fix_applicabilities, (d.code, offered, RULES[d.code].fix)
    if kind == "bad":
        assert code in codes, f"{code} did not fire; got {codes}"
        assert after, "a bad example states its findings with at=LINE:COL:SEVERITY"
        got = sorted((*line_col(text, d.start), d.severity.label) for d in diags if d.code == code)
        assert got == sorted(after), f"{code} found {got}; the page states {after}"
    elif kind == "good":
        assert code not in codes, f"{code} fired on a good example"
        loud = [(d.code, *line_col(text, d.start), d.severity.label, d.message) for d in diags
                if d.severity >= Severity.WARNING]
        assert not loud, f"a good example raises findings at warning or above: {loud}"
    else:
        out = fix_text(text, f"{code}.sbatch", unsafe=True, codes={code}, config=config)
        assert out.text == after
        assert code not in [d.code for d in out.result.diagnostics
                            if d.severity >= RULES[code].severity]
