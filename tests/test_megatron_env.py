"""SB607's reading of an installer command (rules/megatron_env.py ``installer``): which argv
count as a package install, and how many words name it."""
import pytest

from sbatch_lsp.lint import lint
from sbatch_lsp.rules.megatron_env import installer
from sbatch_lsp.shell.parse import parse_script


def _first(text: str):
    return next(iter(parse_script(text).walk()))


@pytest.mark.parametrize("line,expected", [
    ("pip install -r requirements.txt", ("pip install", 2)),
    ("pip3.11 install foo", ("pip install", 2)),
    ("/opt/venv/bin/pip install -e .", ("pip install", 2)),
    ("python3 -m pip install foo", ("pip install", 4)),
    ("uv sync --frozen", ("uv sync", 2)),
    ("uv pip install torch", ("uv pip install", 3)),
    ("uv pip sync requirements.lock", ("uv pip sync", 3)),
    ("pip download foo", None),
    ("pip list", None),
    ("uv run python train.py", None),
    ("pipx install foo", None),
    ("python -m pip --version", None),
    ('"$PIP" install foo', None),
])
def test_installer(line, expected):
    assert installer(_first(line + "\n")) == expected


def _sb607(text: str):
    return [d for d in lint(text, "x.sbatch").diagnostics if d.code == "SB607"]


HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n"


def test_pip_on_a_shared_node_warns_and_names_no_argument():
    text = HEAD + "srun pip install --index-url https://u:s3cr3t@example.org/simple foo\n"
    (d,) = _sb607(text)
    assert d.severity.label == "warning"
    assert "4 of them on one node" in d.message and "s3cr3t" not in d.message


def test_uv_is_info_and_one_task_is_clean():
    (d,) = _sb607(HEAD + "srun uv sync\n")
    assert d.severity.label == "info"
    assert _sb607(HEAD + "srun --ntasks=1 --nodes=1 uv sync\n") == []


def test_a_hidden_option_word_is_not_judged():
    assert _sb607(HEAD + 'srun $SRUN_ARGS pip install foo\n') == []
