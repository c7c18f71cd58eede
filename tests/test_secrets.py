"""Secret detection: the cheap prefilter never hides a format detect-secrets knows."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbatch_lsp.rules.secrets import PLUGIN_PREFILTER, _detectors, find_secrets

PATTERNS = [pytest.param(rx, id=f"{kind}-{i}") for i, (kind, rx) in enumerate(_detectors())]


@pytest.mark.parametrize("rx", PATTERNS)
def test_prefilter_admits_every_plugin_format(rx):
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(rx, fullmatch=True))
    def check(sample):
        assert PLUGIN_PREFILTER.search(sample), sample
    check()


def test_formats_found_in_a_script():
    gh = "ghp_" + "a1B2" * 9
    aws = "AKIA" + "ABCDEFGHIJ234567"
    text = f"export GITHUB_TOKEN={gh}\naws configure set x {aws}\nexport HF_HOME=/x/hf_home\n"
    kinds = [s.kind for s in find_secrets(text)]
    assert kinds == ["GitHub Token", "AWS Access Key"]
