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
    ("uv run python train.py", ("uv run", 2)),
    ("uv run --frozen --locked python train.py", ("uv run", 2)),
    ("uv run --no-sync python train.py", None),
    ("uv run --no-project python train.py", None),
    ('uv run $UV_ARGS python train.py', None),
    ("env UV_NO_SYNC=1 uv run python train.py", None),
    ("UV_NO_SYNC=1 uv run python train.py", None),
    ("uv run --with rich python train.py --no-sync", ("uv run", 2)),
    ("uv run pip install foo", ("pip install", 2)),
    ("pipx install foo", None),
    ("python -m pip --version", None),
    ('"$PIP" install foo', None),
    ("timeout 1h pip install foo", ("pip install", 2)),
    ("env UV_CACHE_DIR=/lustre/uv uv sync", ("uv sync", 2)),
])
def test_installer(line, expected):
    found = installer(_first(line + "\n"))
    assert (found[0], len(found[1])) == expected if expected else found is None


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


@pytest.mark.parametrize("body,reported", [
    ("srun uv run python train.py\n", True),
    ("UV_NO_SYNC=1\nsrun uv run python train.py\n", True),  # not exported: uv does not see it
    ("export UV_NO_SYNC=1\nsrun uv run python train.py\n", False),
    ("srun bash -c 'export UV_NO_SYNC=1; uv run python train.py'\n", False),
    ("srun --ntasks=1 --nodes=1 uv sync\nsrun uv run python train.py\n", False),
    ("srun uv run python train.py\nsrun --ntasks=1 --nodes=1 uv sync\n", True),  # sync after
])
def test_uv_run_syncs_in_every_task(body, reported):
    found = _sb607(HEAD + body)
    assert [d.severity.label for d in found] == (["info"] if reported else [])
    if reported:
        assert "uv run --no-sync" in found[0].message


def test_a_hidden_option_word_is_not_judged():
    assert _sb607(HEAD + 'srun $SRUN_ARGS pip install foo\n') == []


HOME_JOB = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
{directive}
export HF_HOME={path}
srun --container-image=nvcr.io#nvidia/nemo:25.04 {flag} --container-mounts={mounts} \\
  python finetune.py --model_name_or_path meta-llama/Llama-3.1-8B
"""


def _sb401(**kw):
    keys = {"directive": "", "path": "$HOME/.cache/huggingface", "flag": "--no-container-mount-home",
            "mounts": "/lustre:/lustre"} | kw
    return [d for d in lint(HOME_JOB.format(**keys), "x.sbatch").diagnostics if d.code == "SB401"]


@pytest.mark.parametrize("path", ["$HOME/.cache/huggingface", "${HOME}/hf", "~/hf"])
def test_sb401_home_cache_without_home_mount_is_an_error(path):
    (d,) = _sb401(path=path)
    assert d.severity.label == "error" and "home directory" in d.message


def test_sb401_home_cache_directive_only_is_a_warning():
    (d,) = _sb401(flag="", directive="#SBATCH --no-container-mount-home")
    assert d.severity.label == "warning"


@pytest.mark.parametrize("kw", [
    {"mounts": "/lustre:/lustre,$HOME/.cache:$HOME/.cache"},  # the home cache is mounted
    {"flag": ""},                                             # home is mounted (pyxis default)
    {"path": "/home2/cache/hf"},                              # not spelled as home
])
def test_sb401_home_cache_near_misses(kw):
    assert not any("home directory, which" in d.message for d in _sb401(**kw))
