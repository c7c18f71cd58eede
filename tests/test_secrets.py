"""Secret detection: the cheap prefilter never hides a format detect-secrets knows."""
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbatch_lsp import secrets
from sbatch_lsp.lint import lint
from sbatch_lsp.secrets import PLUGIN_PREFILTER, _detectors, find_secrets

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


def _codes(text):
    from sbatch_lsp.lint import lint
    return [d.code for d in lint("#!/bin/bash\n#SBATCH -N 1\n" + text).diagnostics]


def test_names_that_only_contain_token_are_not_credentials():
    assert _codes('MAX_NEW_TOKENS=256\nTOKENIZER=x\nsrun python g.py --m "$MAX_NEW_TOKENS" '
                  '--t "$TOKENIZER"\n') == []
    assert _codes('docker login -p "$DOCKER_PASSWD" r.io\n') == ["SB502"]


def test_a_builtin_test_shows_nothing_unless_xtrace_is_on():
    assert _codes('if [ -n "$HF_TOKEN" ]; then echo ok; fi\n') == []
    assert _codes('set -Eeuxo pipefail\nif [ -n "$HF_TOKEN" ]; then echo ok; fi\n') == ["SB502"]


@pytest.mark.parametrize("on", ["set -o xtrace\n", "set -ex\n"])
def test_xtrace_forms(on):
    assert _codes(on + 'export HF_TOKEN="$(< ~/.hf)"\n') == ["SB502"]
    assert _codes(on + 'set +o xtrace\nexport HF_TOKEN="$(< ~/.hf)"\n') == []


def test_xtrace_from_the_shebang():
    from sbatch_lsp.lint import lint
    text = '#!/bin/bash -x\n#SBATCH -N 1\nexport HF_TOKEN="$(< ~/.hf)"\n'
    assert [d.code for d in lint(text).diagnostics] == ["SB502"]


def test_a_key_handed_to_a_wandb_option():
    """OpenRLHF's ``--use_wandb <key>`` (tests/cases/C026): a 40-hex value after a W&B option
    is a key; a run or project name after one is not."""
    key = "0123456789abcdef0123456789abcdef01234567"
    for text in (f"--use_wandb {key}", f"--wandb-key={key}", f"--use_wandb '{key}'"):
        assert [text[s.start:s.end] for s in find_secrets(text)] == [key], text
    for text in ("--wandb_run_name my_very_long_run_name_with_more_than_forty_chars",
                 f"--wandb_project {key}_v2", f"--use_wandb True --save {key}"):
        assert find_secrets(text) == [], text


@pytest.mark.parametrize("text,found", [
    ("srun --container-image=docker://alice:S3cretPassw0rd@registry.example.com/img:1 x",
     "S3cretPassw0rd"),
    ("export DB=postgres://bob:hunter2xyz@db.example.com:5432/x", "hunter2xyz"),
    ("pip install git+https://me:pw-12345@git.example.com/a/b.git", "pw-12345"),
    ('--container-image="docker://alice:$PASS@reg.io/img"', None),  # a variable: not literal
    ("https://user:<password>@host/x", None),  # a placeholder
    ("ssh://git@github.com:22/a/b", None),  # no password: the user name only
    ("curl http://host:8080/x", None),  # a port, not a password
])
def test_password_in_a_url(text, found):
    """RFC 3986 §3.2.1 user information ``user:password@host``: the password is a secret."""
    assert [text[s.start:s.end] for s in find_secrets(text)] == ([found] if found else [])


def test_a_url_password_never_reaches_the_output(tmp_path):
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=1\n"
            "srun --container-image=docker://alice:S3cretPassw0rd@reg.example.com/img python t.py\n")
    result = lint(text, "job.sbatch")
    assert "SB501" in [d.code for d in result.diagnostics]
    assert all("S3cretPassw0rd" not in d.message for d in result.diagnostics)


def _lines_to_prefilter():
    from rule_pages import sample_scripts

    lines = {line for p in sample_scripts() for line in p.values[0].split("\n")}
    lines |= {"x AWS y", "hooks.SLACK.com", "awſ", "XOX", "Hf_", "WANDB", "HTTPS://h",
              "12345678:", "1234567:", "x１２３４５６７８:", "a.abcdef.b", "ſk-", "K_live_"}
    return sorted(lines)


def test_the_split_prefilter_answers_as_the_two_prefilters():
    """find_secrets asks prefiltered() instead of OWN_PREFILTER and PLUGIN_PREFILTER: the same
    verdict on every line the project holds, and on case-folding and digit corner cases."""
    from sbatch_lsp.secrets import OWN_PREFILTER, prefiltered

    for line in _lines_to_prefilter():
        assert prefiltered(line) == (OWN_PREFILTER.search(line) is not None,
                                     PLUGIN_PREFILTER.search(line) is not None), line


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("awsxohkl.cAWSXOHKLCſK_:/-0123456789fndb "
                                               "ABIGRPTYeyJS")), max_size=30))
def test_the_split_prefilter_answers_as_the_two_prefilters_on_random_lines(line):
    from sbatch_lsp.secrets import OWN_PREFILTER, prefiltered

    assert prefiltered(line) == (OWN_PREFILTER.search(line) is not None,
                                 PLUGIN_PREFILTER.search(line) is not None)


def _passing(text):
    from sbatch_lsp.secrets import prefiltered

    return [n for n, line in enumerate(text.split("\n")) if any(prefiltered(line))]


def test_candidate_lines_hold_every_line_a_prefilter_passes():
    """find_secrets reads only the lines candidate_lines names: every line that passes a
    prefilter must be one, whatever comes before it (case-folding that lengthens the text,
    ``ſ``, several matches on one line, a match at the very start or end)."""
    from sbatch_lsp.secrets import candidate_lines

    lines = _lines_to_prefilter()
    for text in ["\n".join(lines), "\n".join(reversed(lines)), "ßßß\nﬃ aws\nx://y://z\n\nhf_",
                 "awſ", "", "\n\n12345678:\n"]:
        passing = _passing(text)
        assert set(passing) <= set(candidate_lines(text)), text
    assert candidate_lines("a\nﬀ ß x\nb AWS\nc\nd.abcdef.e") == [2, 4]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("awsxohkl.cAWSXOHKLCſßﬃK_:/-0123456789fndb "
                                               "ABIGRPTYeyJS\n")), max_size=60))
def test_candidate_lines_hold_every_line_a_prefilter_passes_on_random_texts(text):
    from sbatch_lsp.secrets import candidate_lines

    assert set(_passing(text)) <= set(candidate_lines(text))


def test_alternatives_grouped_by_first_character_find_the_same_spans():
    import re

    from sbatch_lsp.secrets import _by_first_character

    alternatives = ["A3T", "AC[a-z0-9]{4}", "ACCA", r"\.[a-z]{2}\.", "sk-", r"\.x", "AKC"]
    grouped = re.compile(_by_first_character(alternatives))
    assert grouped.pattern == r"A(?:3T|C[a-z0-9]{4}|CCA|KC)|\.(?:[a-z]{2}\.|x)|sk-"
    plain = re.compile("|".join(alternatives))
    for text in [*_lines_to_prefilter(), "ACCAbb ACcdef .ab. .x sk-A3T", "AKC.xx.x"]:
        assert [m.span() for m in grouped.finditer(text)] == \
            [m.span() for m in plain.finditer(text)], text


def test_the_formats_file_holds_the_installed_detect_secrets_formats():
    # secrets.py reads the formats from data/secret_formats.json instead of importing
    # detect-secrets (~0.12 s per process); after an upgrade, write the file again from
    # plugin_formats() (its _meta says how)
    from sbatch_lsp.secrets import plugin_formats

    assert [(kind, rx.pattern, rx.flags) for kind, rx in _detectors()] == plugin_formats()
    assert len(_detectors()) >= 30


def test_finding_secrets_does_not_import_detect_secrets():
    import subprocess
    import sys

    code = ("import sys; from sbatch_lsp.secrets import find_secrets; "
            "print(len(find_secrets('k=AKIAABCDEFGHIJKLMNOP')), "
            "any(m.startswith('detect_secrets') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["1", "False"]


_PLAIN_ALTERNATIVES = [
    alt for alt in re.split(r"\|(?![^()]*\))", secrets.PLUGIN_PREFILTER.pattern)
    if alt not in (secrets._PLUGIN_FOLDED.pattern, r"\d{8,10}:")]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_PLAIN_ALTERNATIVES).flatmap(
    lambda alt: st.from_regex(alt, fullmatch=True)))
def test_every_plain_match_starts_with_a_needle_or_is_dotted(example):
    # candidate_lines finds _PLUGIN_PLAIN's matches by str.find of _PLAIN_NEEDLES (and
    # _PLUGIN_DOTTED): a match that starts with no needle would be missed
    assert example.startswith(secrets._PLAIN_NEEDLES) or \
        secrets._PLUGIN_DOTTED.fullmatch(example), example


def _plain_lines(text: str) -> set[int]:
    """The lines in which the search of _PLUGIN_PLAIN (the reference) finds a match."""
    return set(secrets._lines_of(text, [m.start() for m in secrets._PLUGIN_PLAIN.finditer(text)]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.sampled_from(_PLAIN_ALTERNATIVES).flatmap(lambda alt: st.from_regex(alt, fullmatch=True)),
    st.text(alphabet=st.sampled_from(list("AaCcGgSsKkPpeyJ_.-u3TIB:=\n x")), max_size=12)),
    max_size=8))
def test_needle_scan_finds_the_lines_the_alternation_finds(parts):
    text = "".join(parts)
    found = secrets._needle_starts(text, secrets._PLAIN_NEEDLES, secrets._PLUGIN_PLAIN.match)
    found += [m.start() for m in secrets._PLUGIN_DOTTED.finditer(text)]
    assert set(secrets._lines_of(text, found)) == _plain_lines(text)


def test_needle_scan_on_sample_scripts():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from lsp_bench import script

    texts = [script(300), *_lines_to_prefilter(), "x.abcdef.y\nAKIA\nSK" + "a1" * 16]
    corpus = os.environ.get("CORPUS_DIR")
    if corpus:
        texts += [p.read_text("utf-8", "replace") for p in sorted(Path(corpus).iterdir())]
    for text in texts:
        found = secrets._needle_starts(text, secrets._PLAIN_NEEDLES, secrets._PLUGIN_PLAIN.match)
        found += [m.start() for m in secrets._PLUGIN_DOTTED.finditer(text)]
        assert set(secrets._lines_of(text, found)) == _plain_lines(text)
        assert _plain_lines(text) <= set(secrets.candidate_lines(text))
    assert len(texts[0]) >= secrets.NEEDLES_FROM  # (candidate_lines searched it by the needles)


def test_sb501_says_an_before_a_vowel_sound():
    """The finding's article follows how the kind is read: "an AWS Access Key", "an OpenAI
    Token", "a GitHub Token", "a W&B API key", "a JSON Web Token" (a new user saw "a AWS")."""
    from sbatch_lsp.rules.credentials import article

    an = ("AWS Access Key", "OpenAI Token", "Azure Storage Account access key", "NPM tokens",
          "HF token")
    a = ("GitHub Token", "W&B API key", "JSON Web Token", "Hugging Face token", "PyPI Token",
         "password in a URL", "SendGrid API Key")
    assert [article(k) for k in an + a] == ["an"] * len(an) + ["a"] * len(a)
    key = "AKIA" + "Z7QX4LMNB2KV9WTR"
    messages = [d.message for d in lint(f"#!/bin/bash\n#SBATCH -N1\nexport AWS_ACCESS_KEY_ID={key}\n"
                                        "srun python t.py\n").diagnostics if d.code == "SB501"]
    assert messages and messages[0].startswith("an AWS Access Key is written"), messages
    assert all(key not in m for m in messages)
