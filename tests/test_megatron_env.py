"""rules/megatron_env.py: SB607's reading of an installer command (which argv count as a package
install, and how many words name it), SB401's home case, SB609-SB611, and the MG cases' info findings."""
import json
from pathlib import Path

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


# ---- SB609-SB611 ---------------------------------------------------------------------------
JOB = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n" \
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
MLM = "torchrun --nproc-per-node=8 /w/Megatron-LM/pretrain_gpt.py --tensor-model-parallel-size 2"
RECIPE = "python /w/Megatron-Bridge/scripts/training/run_recipe.py model.tensor_model_parallel_size=2"


def _codes(text: str, code: str) -> list[tuple[str, str]]:
    """(severity, the source text under the finding) of each ``code`` finding."""
    return [(d.severity.label, text[d.start:d.end])
            for d in lint(text, "x.sbatch").diagnostics if d.code == code]


@pytest.mark.parametrize("body,expected", [
    (f"srun --container-image=nvcr.io#nvidia/nemo:24.09 {MLM}\n",
     [("info", "/w/Megatron-LM/pretrain_gpt.py")]),
    ((f"export PYTHONPATH=/w/3rdparty/Megatron-LM:$PYTHONPATH\n"
     f"srun --container-image=nvcr.io/nvidia/nemo-rl:v0.5.0 {RECIPE}\n"),
     [("info", "PYTHONPATH=/w/3rdparty/Megatron-LM:$PYTHONPATH")]),
    # near-misses: an image without megatron-core, no container, PYTHONPATH not exported,
    # the checkout installed, a Bridge run without a checkout on PYTHONPATH
    (f"srun --container-image=nvcr.io#nvidia/pytorch:24.01-py3 {MLM}\n", []),
    (f"srun {MLM}\n", []),
    ((f"PYTHONPATH=/w/3rdparty/Megatron-LM\nsrun --container-image=nvcr.io#nvidia/nemo:25.02 "
     f"{RECIPE}\n"), []),
    ((f"srun -n1 -N1 --container-image=nvcr.io#nvidia/nemo:24.09 pip install -e /w/Megatron-LM\n"
     f"srun --container-image=nvcr.io#nvidia/nemo:24.09 {MLM}\n"), []),
    (f"srun --container-image=nvcr.io#nvidia/nemo:25.02 {RECIPE}\n", []),
    # the image's own copy under /opt, unless a mount puts a checkout there
    (("srun --container-image=nvcr.io#nvidia/nemo:25.09 torchrun --nproc-per-node=8 "
     "/opt/megatron-lm/pretrain_gpt.py --tensor-model-parallel-size 2\n"), []),
    (("srun --container-image=nvcr.io#nvidia/nemo:25.09 --container-mounts=/l/mlm:/opt/megatron-lm "
     "torchrun --nproc-per-node=8 /opt/megatron-lm/pretrain_gpt.py --tensor-model-parallel-size 2\n"),
     [("info", "/opt/megatron-lm/pretrain_gpt.py")]),
])
def test_sb609_checkout_over_the_images_megatron_core(body, expected):
    assert _codes(JOB + body, "SB609") == expected


@pytest.mark.parametrize("body,reported", [
    ("srun --container-image=nvcr.io#nvidia/pytorch:24.01-py3 uv run --no-sync python t.py\n",
     True),
    ('IMG=/lustre/pt.sqsh\nsrun --container-image="$IMG" uv sync\n', True),
    ("srun --container-image=nvcr.io#nvidia/nemo:25.11 uv run --no-sync python t.py\n", True),
    ("srun --container-image=nvcr.io#nvidia/nemo:26.04 uv run --no-sync python t.py\n", False),
    ("srun --container-image=nvcr.io/nvidia/nemo-rl:v0.5.0 uv run --no-sync python t.py\n",
     False),
    ('srun --container-image="$IMAGE" uv run --no-sync python t.py\n', False),
    ('IMG=""\nsrun --container-image="$IMG" uv run --no-sync python t.py\n', False),
    ("srun uv run --no-sync python t.py\n", False),
    # the script builds the image itself (its recipe decides whether uv is in it)
    (("enroot import -o /lustre/img/train.sqsh docker://ghcr.io#me/train:1\n"
     "srun --container-image=/lustre/img/train.sqsh uv run --no-sync python t.py\n"), False),
    ("docker build -t train:1 .\nsrun --container-image=train:1 uv sync\n", False),
    (("enroot import -o /lustre/img/other.sqsh docker://ghcr.io#me/other:1\n"
     "srun --container-image=/lustre/img/train.sqsh uv sync\n"), True),
    (("srun --container-image=nvcr.io#nvidia/pytorch:24.01-py3 bash -c "
     "'curl -LsSf https://astral.sh/uv/install.sh | sh; uv run --no-sync python t.py'\n"), False),
])
def test_sb610_uv_in_an_image_that_may_not_have_it(body, reported):
    found = _codes(JOB + body, "SB610")
    assert [(s, t) for s, t in found] == ([("info", "uv")] if reported else [])


NEMO1 = ("python /opt/NeMo/examples/nlp/language_modeling/megatron_gpt_pretraining.py "
         "trainer.num_nodes=2 trainer.devices=8")


@pytest.mark.parametrize("head,body,expected", [
    ("", f"srun {NEMO1}\n", ["info"]),
    ("#SBATCH --array=0-3\n", f"srun {NEMO1}\n", ["warning"]),
    ("", f"srun {RECIPE}\n", ["info"]),
    ("", f"srun {NEMO1} exp_manager.exp_dir=/l/exp\n", []),
    ("", f"srun {NEMO1} exp_manager.resume_if_exists=false\n", []),
    ("", f"srun {RECIPE} checkpoint.save=/l/c checkpoint.load=/l/c\n", []),
    ("", f"srun {RECIPE} $EXTRA_ARGS\n", []),
    ("", f"cd /scratch/$SLURM_JOB_ID\nsrun {RECIPE}\n", []),
    # pyxis: the image's WORKDIR unless the step names a work directory or container
    ("", f"srun --container-image=nvcr.io#nvidia/nemo:25.09 {RECIPE}\n", []),
    ("", (f'srun --container-image=nvcr.io#nvidia/nemo:25.09 --container-mounts="$PWD":/w '
          f"--container-workdir=/w {RECIPE}\n"), ["info"]),
    ("", (f'srun --container-image=nvcr.io#nvidia/nemo:25.09 --container-workdir="$PWD" '
          f"{RECIPE}\n"), []),  # $PWD mounted? the step does not say
    ("", (f"srun --container-image=nvcr.io#nvidia/nemo:25.09 --container-mounts=/fsx:/fsx "
          f"bash -c 'cd /opt/NeMo; {NEMO1}'\n"), []),  # the container's own /opt/NeMo
    ("", (f"srun --container-image=nvcr.io#nvidia/nemo:25.09 --container-mounts=/fsx:/fsx "
          f"bash -c 'cd /fsx/run; {NEMO1}'\n"), ["info"]),
    ("", f"srun {NEMO1} --config-path=/fsx/conf --config-name=gpt.yaml\n", []),
    ("", ("srun python /w/Megatron-Bridge/scripts/training/prepare_gpt_sft_packed_data.py "
         "model.tensor_model_parallel_size=1\n"), []),
])
def test_sb611_resume_from_the_working_directory(head, body, expected):
    text = JOB.replace("#SBATCH --nodes=2\n", "#SBATCH --nodes=2\n" + head) + body
    assert [s for s, _ in _codes(text, "SB611")] == expected


# ---- the MG cases' information findings (test_cases.py matches warnings and errors only) ---
CASES = Path(__file__).resolve().parent / "cases"


@pytest.mark.parametrize("name,code", [
    ("MG10", "SB609"), ("MG11", "SB609"), ("MG12", "SB610"), ("MG13", "SB610"),
    ("MG14", "SB608"), ("MG15", "SB608"), ("MG16", "SB611"), ("MG17", "SB611"),
])
def test_mg_case_findings_of_the_rule(name, code):
    """Each case's findings of its rule are exactly the expected ones (code, line, severity),
    info included; a negative near-miss gets none at any severity."""
    case = json.loads((CASES / f"{name}.json").read_text())
    result = lint((CASES / f"{name}.sbatch").read_text(), f"{name}.sbatch")
    got = sorted((d.code, result.source.line_of(d.start) + 1, d.severity.label)
                 for d in result.diagnostics if d.code == code)
    assert got == sorted((e["code"], e["line"], e["severity"]) for e in case["expected"]
                         if e["code"] == code)


def test_mg14_arithmetic():
    result = lint((CASES / "MG14.sbatch").read_text(), "MG14.sbatch")
    (msg,) = [d.message for d in result.diagnostics if d.code == "SB608"]
    assert "8 experts / EP 4 = 2 expert(s)" in msg and "1.41 B expert parameters" in msg


@pytest.mark.parametrize("image", ["docker://bob:Xk9sPq2Lm7Zt@registry.example.com#team/train:1",
                                   "bob:Xk9sPq2Lm7Zt@nvcr.io#nvidia/nemo:24.09"])
def test_image_credentials_are_not_printed(image):
    text = (JOB + f"srun --container-image={image} bash -c "
            f"'PYTHONPATH=/w/Megatron-LM uv run --no-sync python pretrain_gpt.py "
            f"--tensor-model-parallel-size 2'\n")
    found = [d for d in lint(text, "x.sbatch").diagnostics if d.code in ("SB609", "SB610")]
    assert found and all("Xk9sPq2Lm7Zt" not in d.message and "bob" not in d.message
                         for d in found)


def test_a_command_without_an_installer_word_is_not_unwrapped(monkeypatch):
    """SB607 asks for every task command of every step: one holding none of ``install``,
    ``sync``, ``run`` is no installer, known without unwrapping it (tests/test_prefilters.py
    compares the answers with and without this test for every command of every sample)."""
    import sbatch_lsp.rules.megatron_env as m

    def unwrap(words):
        raise AssertionError("unwrapped")
    monkeypatch.setattr(m, "unwrap", unwrap)
    assert installer(_first("timeout 1h python prepare.py --part 3\n")) is None
