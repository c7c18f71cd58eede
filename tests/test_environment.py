"""SB403's evidence: parallelism flags, FSDP flags, the GPU architecture."""
import pytest

from sbatch_lsp.lint import lint

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n"


def sb403(extra_directives: str, args: str, env: str = ""):
    text = (HEAD + extra_directives + env +
            f"srun python pretrain_gpt.py --tensor-model-parallel-size 4 {args}\n")
    return [(d.severity.label) for d in lint(text).diagnostics if d.code == "SB403"]


@pytest.mark.parametrize("directive,expected", [
    ("#SBATCH --partition=h100\n", ["error"]),
    ("#SBATCH --constraint=v100-32g\n", ["error"]),  # Volta is pre-Blackwell too
    ("#SBATCH --partition=hopper-cpu\n", ["warning"]),  # a CPU partition says nothing
    ("#SBATCH --partition=gb200\n", []),
])
def test_architecture(directive, expected):
    assert sb403(directive, "") == expected


def test_megatron_deepspeed_without_sequence_parallel_is_not_checked():
    assert sb403("#SBATCH --partition=h100\n", "--deepspeed --deepspeed_config ds.json") == []
    assert sb403("#SBATCH --partition=h100\n", "--deepspeed --sequence-parallel") == ["error"]


def test_fsdp_is_a_flag_not_a_path():
    env = "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
    assert sb403("", "--data-path /fsx/fsdp_runs/data", env) == []
    assert sb403("", "--use-torch-fsdp2", env) == ["error"]
    assert sb403("", "--strategy fsdp2", env) == ["warning"]


@pytest.mark.parametrize("body,expected", [
    ('srun rsync -a --exclude="datasets" ../p "$SLURM_TMPDIR"\nsrun python train.py\n', []),
    ("srun python -m trl.scripts.sft --dataset_name x\n", ["warning"]),
    ('srun --nodes=1 --ntasks=1 bash -c "uv sync"\n', []),  # one node fills one cache once
    ('srun bash -c "uv sync"\n', ["info"]),  # speed only, default under ~ (rules/SB401.md)
])
def test_sb401_evidence(body, expected):
    text = "#!/bin/bash\n#SBATCH --nodes=2\n" + body
    assert [d.severity.label for d in lint(text).diagnostics if d.code == "SB401"] == expected


@pytest.mark.parametrize("directives,body,expected", [
    ("", "srun torchrun --nproc-per-node=8 t.py\n", ["error"]),
    # whether a GPU-less step of an exclusive job can open the GPUs is the site's
    # ConstrainDevices: unknown without a profile (rules/SB203.md)
    ("#SBATCH --exclusive\n", "srun torchrun --nproc-per-node=8 t.py\n", ["info"]),
    ("#SBATCH --partition=cpu\n", "srun python /opt/Megatron-Bridge/prepare_packed_data.py\n", []),
    ("", "srun python /opt/Megatron-Bridge/scripts/prepare_gpt_sft_packed_data.py\n", []),
    ("", "srun --gpus-per-node=8 python pretrain_gpt.py\n", []),  # the step asks for them
    ("", "module load gcc cuda/11.7\nsrun --mpi=pmix ./solver\n", ["info"]),
    # --nv binds the GPUs the job has, and runs without any: evidence of GPU use only with
    # more than the flag (rules/SB203.md)
    ("", "singularity exec --nv img.sif python t.py\n", ["info"]),
])
def test_sb203_evidence(directives, body, expected):
    text = "#!/bin/bash\n#SBATCH --nodes=2\n" + directives + body
    assert [d.severity.label for d in lint(text).diagnostics if d.code == "SB203"] == expected


@pytest.mark.parametrize("directives,expected", [
    ("#SBATCH --nodes=1 --gpus-per-node=8 --ntasks-per-node=24\n", ["warning"]),
    ("#SBATCH --nodes=1 --gpus-per-node=8 --ntasks-per-node=24 --gpu-bind=single:3\n", []),
    ("#SBATCH --nodes=2 --gpus=16\n", ["info"]),  # splits evenly, no per-node launcher
    ("#SBATCH --nodes=2 --gpus=5\n", ["warning"]),  # cannot split evenly
])
def test_sb204(directives, expected):
    text = "#!/bin/bash\n" + directives + "srun python train.py\n"
    assert [d.severity.label for d in lint(text).diagnostics if d.code == "SB204"] == expected


def test_sb204_gpus_in_whole_nodes_with_a_profile():
    from sbatch_lsp.config import Config, Profile
    text = "#!/bin/bash\n#SBATCH --nodes=2 --gpus=16\nsrun python train.py\n"
    cfg = Config(profile=Profile(gpus_per_node=8))
    assert [d.code for d in lint(text, config=cfg).diagnostics if d.code == "SB204"] == []
