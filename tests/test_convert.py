"""The srun-native conversion (issue 6, item 1): exact output on the launch shapes users write,
refusals with reasons, the invariants on every shipped case, the SB201 fix and the CLI."""
import collections
import subprocess
import sys
from pathlib import Path

import pytest

from sbatch_lsp.cli import main
from sbatch_lsp.config import Config, Profile
from sbatch_lsp.convert import convert_srun_native
from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.fixer import fix_text
from sbatch_lsp.lint import lint

from conftest import require_tool

CASES = Path(__file__).resolve().parents[2] / "shared" / "cases"
if not CASES.is_dir():
    CASES = Path("/work/shared/cases")
WRAP = ("bash -c 'export RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID WORLD_SIZE=$SLURM_NTASKS "
        "LOCAL_WORLD_SIZE=$SLURM_NTASKS_PER_NODE OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}; "
        "exec \"$@\"' bash")
PREFIX = ("RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID WORLD_SIZE=$SLURM_NTASKS "
          "LOCAL_WORLD_SIZE=$SLURM_NTASKS_PER_NODE OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}")
ADDR = 'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)\n'
PORT = "export MASTER_PORT=$((SLURM_JOB_ID % 4536 + 61000))\n"
HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n"


def converted(text: str, **profile) -> str:
    conv = convert_srun_native(text, Config(profile=Profile(**profile)), "t.sbatch")
    assert conv.status == "converted", (conv.refusals, conv.notes)
    return conv.new_text


def refused(text: str) -> list[str]:
    conv = convert_srun_native(text, path="t.sbatch")
    assert conv.status == "refused", conv.status
    assert conv.edits == ()
    return [r.message for r in conv.refusals]


# ---- exact output on the common shapes ----------------------------------------------------

def test_torchrun_under_srun_with_one_task_per_node():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n\n"
            "srun torchrun --nnodes=2 --nproc-per-node=8 --node-rank=$SLURM_NODEID "
            "train.py --lr 3e-4\n")
    assert converted(text) == (
        HEAD + "#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n\n" + ADDR + PORT +
        f"srun {WRAP} python train.py --lr 3e-4\n")


def test_sb201_layout_keeps_its_eight_tasks_and_loses_the_step_override():
    """The SB201 bad shape: the job already asks for 8 tasks per node; the lone
    --ntasks-per-node=1 (ignored by srun) goes, the existing MASTER_ADDR export stays."""
    text = (HEAD + "#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n\n" + ADDR +
            "srun --ntasks-per-node=1 torchrun --nnodes=2 --nproc-per-node=8 "
            "--rdzv-backend=c10d --rdzv-endpoint=\"$MASTER_ADDR:29400\" train.py\n")
    assert converted(text) == (
        HEAD + "#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n\n" + ADDR + PORT +
        f"srun {WRAP} python train.py\n")


def test_single_quoted_command_string_gets_prefix_assignments():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n" + ADDR +
            "srun bash -c 'cd /work && torchrun --nnodes=$SLURM_NNODES \\\n"
            "  --node_rank=$SLURM_NODEID --nproc_per_node=4 --master_addr=$MASTER_ADDR \\\n"
            "  train.py --config \"$CONFIG\"'\n")
    assert converted(text) == (
        HEAD + "#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n" + ADDR + PORT +
        f"srun bash -c 'cd /work && {PREFIX} python \\\n"
        "  train.py --config \"$CONFIG\"'\n")


def test_double_quoted_command_string_escapes_the_task_variables():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=2\n" + ADDR + PORT +
            'srun bash -c "torchrun --nnodes=2 --node_rank=\\$SLURM_NODEID --nproc_per_node=2 '
            '--master_addr=$MASTER_ADDR --master_port=$MASTER_PORT train.py"\n')
    escaped = PREFIX.replace("$", "\\$")
    out = converted(text)
    assert out == (HEAD + "#SBATCH --ntasks-per-node=2\n#SBATCH --gpus-per-node=2\n" + ADDR +
                   PORT + f'srun bash -c "{escaped} python train.py"\n')


def test_command_string_in_a_variable_is_rewritten_where_it_is_defined():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n" + ADDR + PORT +
            'CMD="torchrun --nnodes=2 --node_rank=\\${SLURM_NODEID} --nproc_per_node=8 '
            '--master_addr=$MASTER_ADDR --master_port=$MASTER_PORT train.py"\n'
            'srun bash -c "$CMD"\n')
    escaped = PREFIX.replace("$", "\\$")
    assert converted(text) == (
        HEAD + "#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n" + ADDR + PORT +
        f'CMD="{escaped} python train.py"\nsrun bash -c "$CMD"\n')


def test_uv_run_python_module_and_container_flags_are_kept():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n" + ADDR +
            "export MASTER_PORT=29500\n"
            "srun --container-image=nvcr.io/nvidia/pytorch:24.01-py3 --no-container-mount-home \\\n"
            "  uv run --no-sync python -u -m torch.distributed.run --nproc_per_node=8 \\\n"
            "  --nnodes=2 --node_rank=$SLURM_NODEID --master_addr=$MASTER_ADDR \\\n"
            "  --master_port=$MASTER_PORT \\\n"
            "  train.py --bf16\n")
    assert converted(text) == (
        HEAD + "#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n" + ADDR +
        "export MASTER_PORT=29500\n"
        "srun --container-image=nvcr.io/nvidia/pytorch:24.01-py3 --no-container-mount-home \\\n"
        f"  {WRAP} uv run --no-sync python -u \\\n"
        "  train.py --bf16\n")


def test_batch_shell_launcher_gets_srun_in_front():
    """A single-node torchrun in the batch shell (and SB205's multi-node one) becomes an srun
    step; `exec` stays in front."""
    text = ("#!/bin/bash\n#SBATCH --gpus-per-node=4\n#SBATCH --cpus-per-task=16\n"
            "exec uv run torchrun --standalone --nproc-per-node=4 train.py\n")
    assert converted(text) == (
        "#!/bin/bash\n#SBATCH --gpus-per-node=4\n#SBATCH --cpus-per-task=4\n"
        "#SBATCH --ntasks-per-node=4\n" + ADDR + PORT +
        f"exec srun {WRAP} uv run python train.py\n")


def test_launcher_in_a_variable_joined_with_the_program_elsewhere():
    """stas00/ml-engineering's torchrun-launcher.slurm shape: LAUNCHER and PROGRAM are separate
    variables joined in CMD and run by `srun bash -c "$CMD"`; the launcher is rewritten in
    LAUNCHER (escaped for its double quotes), the script's own MASTER_* are exported."""
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:8\n"
            "GPUS_PER_NODE=8\nMASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | "
            "head -n 1)\nMASTER_PORT=6000\n"
            'LAUNCHER="python -u -m torch.distributed.run \\\n'
            "    --nproc_per_node $GPUS_PER_NODE \\\n"
            "    --node_rank \\$SLURM_PROCID \\\n"
            "    --rdzv_endpoint $MASTER_ADDR:$MASTER_PORT \\\n"
            "    --rdzv_backend c10d \\\n"
            '    "\n'
            'PROGRAM="test.py --x"\n'
            'export CMD="$LAUNCHER $PROGRAM"\n'
            'srun --jobid $SLURM_JOB_ID bash -c "$CMD" 2>&1 | tee -a log.txt\n')
    escaped = PREFIX.replace("$", "\\$")
    out = converted(text)
    assert f'LAUNCHER="{escaped} python -u \\\n    "\n' in out
    assert "\nexport MASTER_ADDR\nexport MASTER_PORT\nsrun --jobid" in out
    assert "#SBATCH --ntasks-per-node=8\n" in out


def test_program_arguments_expanding_a_rank_early_get_a_note():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=2\n" + ADDR + PORT +
            "export LOCAL_RANK=$SLURM_LOCALID\n"
            "srun torchrun --nnodes=2 --nproc-per-node=2 --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT train.py "
            "--local_rank $LOCAL_RANK\n")
    conv = convert_srun_native(text, path="t.sbatch")
    assert conv.status == "converted"
    assert any("$LOCAL_RANK in the batch shell" in n for n in conv.notes), conv.notes


def test_torchrun_module_flag_becomes_python_m():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=2\n" + ADDR + PORT +
            "srun torchrun --nnodes=2 --nproc-per-node=2 --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT -m pkg.train --x 1\n")
    assert converted(text).endswith(f"srun {WRAP} python -m pkg.train --x 1\n")


def test_torch_distributed_launch_with_use_env_converts():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=2\n" + ADDR + PORT +
            "srun python -m torch.distributed.launch --use-env --nnodes=2 --nproc_per_node=2 "
            "--node_rank=$SLURM_NODEID --master_addr=$MASTER_ADDR train.py\n")
    assert converted(text).endswith(f"srun {WRAP} python train.py\n")


def test_megatron_bridge_entry_point_gets_the_plain_form():
    """Bridge derives RANK/WORLD_SIZE/LOCAL_RANK and MASTER_ADDR/PORT from the SLURM variables
    (slurm-facts.md §10): no wrapper and no exports, only torchrun's OMP_NUM_THREADS."""
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
            "srun --mpi=pmix uv run python -m torch.distributed.run --nproc_per_node=8 "
            "--nnodes=$SLURM_JOB_NUM_NODES --node_rank=$SLURM_NODEID "
            "scripts/training/run_recipe.py --recipe llama3_8b\n")
    assert converted(text) == (
        HEAD + "#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n"
        "OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} srun --mpi=pmix uv run python "
        "scripts/training/run_recipe.py --recipe llama3_8b\n")


def test_one_process_per_node_sets_no_omp_threads():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=1\n" + ADDR + PORT +
            "srun torchrun --nnodes=2 --nproc-per-node=1 --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT train.py\n")
    out = converted(text)
    assert "OMP_NUM_THREADS" not in out
    assert "#SBATCH --ntasks-per-node=1\n" in out


def test_assigned_but_unexported_master_addr_is_exported_with_its_value():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=2\n"
            "MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)\n"
            "srun torchrun --nnodes=2 --nproc-per-node=2 --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR train.py\n")
    out = converted(text)
    assert "\nexport MASTER_ADDR\n" + PORT + "srun " in out


# ---- directives, resources and the other steps -------------------------------------------

def test_job_ntasks_becomes_ntasks_per_node_and_directive_is_added_when_missing():
    text = (HEAD + "#SBATCH --ntasks=2\n#SBATCH --gpus-per-node=4\n" + ADDR + PORT +
            "srun torchrun --nnodes=2 --nproc-per-node=4 --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT train.py\n")
    assert converted(text).startswith(HEAD + "#SBATCH --ntasks-per-node=4\n#SBATCH --gpus")
    bare = text.replace("#SBATCH --ntasks=2\n", "")
    assert converted(bare).startswith(HEAD + "#SBATCH --ntasks-per-node=4\n#SBATCH --gpus")


def test_single_task_job_without_nodes_becomes_one_node_of_n_tasks():
    text = ("#!/bin/bash\n#SBATCH --ntasks=1\n#SBATCH --gpus=4\n"
            "torchrun --standalone --nproc-per-node=4 train.py\n")
    assert converted(text) == ("#!/bin/bash\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus=4\n"
                               + ADDR + PORT + f"srun {WRAP} python train.py\n")
    assert any("without a --nodes count" in m
               for m in refused(text.replace("--ntasks=1", "--ntasks=2")))


def test_the_one_task_per_node_spelling_is_dropped_from_the_training_step():
    """SB201's second fix output converts like the original: the step inherits the job's
    new layout."""
    text = (HEAD + "#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n" + ADDR + PORT +
            'srun -l --nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" '
            "--ntasks-per-node=1 torchrun --nnodes=2 --nproc-per-node=8 "
            "--rdzv-backend=c10d --rdzv-endpoint=$MASTER_ADDR:29400 train.py\n")
    assert converted(text).endswith(f"\nsrun -l {WRAP} python train.py\n")
    short = text.replace('--nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" '
                         "--ntasks-per-node=1", "-N2 -n 2")
    assert converted(short).endswith(f"\nsrun -l {WRAP} python train.py\n")


def test_two_training_steps_share_one_set_of_exports():
    step = ("srun torchrun --nnodes=2 --nproc-per-node=4 --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR --master-port=29500 {}.py\n")
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n" +
            step.format("train") + step.format("evaluate"))
    out = converted(text)
    assert out.count("export MASTER_ADDR=") == 1 and out.count("export MASTER_PORT=") == 1
    assert out.endswith(f"{ADDR}{PORT}srun {WRAP} python train.py\n"
                        f"srun {WRAP} python evaluate.py\n")


def test_per_task_resources_are_rescaled_to_keep_the_node_total():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --cpus-per-task=64\n"
            "#SBATCH --gpus-per-task=8\n#SBATCH --mem-per-cpu=4G\n" + ADDR + PORT +
            "srun torchrun --nnodes=2 --nproc-per-node=8 --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT train.py\n")
    out = converted(text)
    assert "#SBATCH --cpus-per-task=8\n#SBATCH --gpus-per-task=1\n#SBATCH --mem-per-cpu=4G\n" \
        in out
    # 4 CPUs per node for 8 tasks: each task needs one CPU, so memory per CPU halves
    few = text.replace("--cpus-per-task=64", "--cpus-per-task=4")
    out = converted(few)
    assert "#SBATCH --cpus-per-task=1\n" in out and "#SBATCH --mem-per-cpu=2G\n" in out


def test_step_cpus_per_task_is_rescaled_or_follows_the_job():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --cpus-per-task=32\n" + ADDR + PORT +
            "srun --cpus-per-task=32 torchrun --nnodes=2 --nproc-per-node=4 "
            "--node-rank=$SLURM_NODEID --master-addr=$MASTER_ADDR --master-port=$MASTER_PORT "
            "train.py\n")
    assert f"srun --cpus-per-task=8 {WRAP} python train.py\n" in converted(text)
    var = text.replace("srun --cpus-per-task=32", 'srun --cpus-per-task="$SLURM_CPUS_PER_TASK"')
    assert f'srun --cpus-per-task="$SLURM_CPUS_PER_TASK" {WRAP} python' in converted(var)


def test_other_steps_keep_their_old_layout_explicitly():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n" + ADDR + PORT +
            "srun uv sync\n"
            "srun --nodes=1 --ntasks=1 python prepare.py\n"
            "srun --nodes=1 hostname\n"
            "HOSTS=$(srun hostname | sort -u)\n"
            "srun torchrun --nnodes=2 --nproc-per-node=8 --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT train.py\n")
    out = converted(text)
    one = '--nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1'
    assert f"srun {one} uv sync\n" in out
    assert "srun --nodes=1 --ntasks=1 python prepare.py\n" in out  # its own task count
    # a lone --nodes=1 inherited the job's 2 tasks (slurm-facts.md §14): both on one node
    assert "srun --nodes=1 --ntasks=2 --ntasks-per-node=2 hostname\n" in out
    assert f"HOSTS=$(srun {one} hostname | sort -u)\n" in out


def test_other_steps_in_variables_and_strings_get_unquoted_counts():
    """`S="srun …"; $S cmd` is split without being read again, so the counts expand where S is
    assigned; inside a `bash -c` string they are escaped for its quotes."""
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n" + ADDR + PORT +
            'S="srun --mpi=pmix"\n$S hostname\n'
            "bash -c \"srun nvidia-smi\"\n"
            "srun torchrun --nnodes=2 --nproc-per-node=8 --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT train.py\n")
    out = converted(text)
    one = "--nodes=$SLURM_JOB_NUM_NODES --ntasks=$SLURM_JOB_NUM_NODES --ntasks-per-node=1"
    assert f'S="srun {one} --mpi=pmix"\n' in out
    assert 'bash -c "srun ' + one.replace("$", "\\$") + ' nvidia-smi"\n' in out
    single = text.replace('S="srun --mpi=pmix"', "S='srun --mpi=pmix'")
    assert any("held in a variable" in m for m in refused(single))


def test_a_launch_the_model_misses_refuses_the_whole_conversion():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n" + ADDR + PORT +
            'srun bash -c "$PRE torchrun --nproc-per-node=8 eval.py"\n'
            "srun torchrun --nnodes=2 --nproc-per-node=8 --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT train.py\n")
    assert any("cannot follow" in m for m in refused(text))


LAUNCH = "torchrun --nnodes=2 --nproc-per-node=8 --node-rank=0 --master-addr=$MASTER_ADDR t.py"


def test_a_launcher_value_read_only_where_slurmstepd_sets_the_name_is_not_a_hidden_launch():
    """A batch value of SLURM_PROCID never reaches a task (slurmstepd sets its own there): the
    wrapper the conversion writes reads $SLURM_PROCID in the task, so converting the result
    again must find nothing to do (a hypothesis example found it refused)."""
    text = f'#!/bin/bash\nSLURM_PROCID="{LAUNCH}"\nsrun {LAUNCH}\n'
    conv = convert_srun_native(text, path="job.sbatch")
    assert conv.status == "converted"
    assert convert_srun_native(conv.new_text, path="job.sbatch").status == "unchanged"


@pytest.mark.parametrize("read", ["$SLURM_PROCID", "echo go; $SLURM_PROCID",
                                  "srun bash -c \"$SLURM_PROCID\"", "LAUNCHER=$SLURM_PROCID; $LAUNCHER"])
def test_a_launcher_value_the_batch_shell_reads_is_still_refused(read):
    """The batch shell reads its own value of SLURM_PROCID (and substitutes it into a
    double-quoted command string before srun runs it)."""
    text = f'#!/bin/bash\nSLURM_PROCID="{LAUNCH}"\n{read}\n'
    assert convert_srun_native(text, path="job.sbatch").status != "unchanged"


def test_other_steps_of_a_job_already_at_n_per_node_are_untouched():
    text = (HEAD + "#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n" + ADDR + PORT +
            "srun nvidia-smi\n"
            "srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d "
            "--rdzv-endpoint=$MASTER_ADDR:29400 train.py\n")
    assert "\nsrun nvidia-smi\n" in converted(text)


def test_other_steps_keep_their_cpus_when_the_job_rescales_them():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --cpus-per-task=16\n" + ADDR + PORT +
            "srun python prepare.py\n"
            "srun torchrun --nnodes=2 --nproc-per-node=4 --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT train.py\n")
    out = converted(text)
    assert "#SBATCH --cpus-per-task=4\n" in out
    assert ('srun --nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" '
            "--ntasks-per-node=1 --cpus-per-task=16 python prepare.py\n") in out


def test_nproc_auto_uses_the_gpu_count_from_directives_or_profile():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:4\n" + ADDR + PORT +
            "srun torchrun --nnodes=2 --nproc-per-node=auto --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT train.py\n")
    assert "#SBATCH --ntasks-per-node=4\n" in converted(text)
    no_gpus = text.replace("#SBATCH --gres=gpu:4\n", "")
    assert "#SBATCH --ntasks-per-node=2\n" in converted(no_gpus, gpus_per_node=2)
    assert any("counts the GPUs at run time" in m for m in refused(no_gpus))


def test_nproc_from_a_batch_variable():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n" + ADDR + PORT + "GPUS=4\n"
            "srun torchrun --nnodes=2 --nproc-per-node=$GPUS --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT train.py\n")
    assert "#SBATCH --ntasks-per-node=4\n" in converted(text)


# ---- refusals -------------------------------------------------------------------------------

BASE = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n" + ADDR + PORT +
        "srun {launcher} --nnodes=2 --nproc-per-node=8 --node-rank=$SLURM_NODEID "
        "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT {extra} train.py\n")


@pytest.mark.parametrize("launcher,extra,reason", [
    ("torchrun", "--max-restarts=3", "--max-restarts"),
    ("torchrun", "--nnodes=1:4", "elastic range"),
    ("torchrun", "--no-python", "--no-python"),
    ("python -m torch.distributed.launch", "", "--use-env"),
    ("torchrun", "$EXTRA", "may hold torchrun options"),
    ("accelerate launch", "", "accelerate"),
])
def test_refusals_name_the_reason(launcher, extra, reason):
    msgs = refused(BASE.format(launcher=launcher, extra=extra))
    assert any(reason in m for m in msgs), msgs


def test_max_restarts_zero_is_not_a_refusal():
    assert converted(BASE.format(launcher="torchrun", extra="--max-restarts=0"))


def test_refusals_for_what_cannot_be_rewritten():
    shell = HEAD + "#SBATCH --export=NONE\ntorchrun --nproc-per-node=8 train.py\n"
    assert any("--export=NONE" in m for m in refused(shell))
    deep = (HEAD + "#SBATCH --gpus-per-node=8\n" + ADDR + PORT +
            "srun bash -c \"bash -c 'torchrun --nproc-per-node=8 train.py'\"\n")
    assert any("more than one command string deep" in m for m in refused(deep))
    pieces = (HEAD + "#SBATCH --gpus-per-node=8\n" + ADDR + PORT +
              'L="torchrun --nproc-per-node=8"\n'
              'srun bash -c "$L --node-rank=\\$SLURM_NODEID train.py"\n')
    assert any("assembled from several variables" in m for m in refused(pieces))
    export_none = BASE.format(launcher="torchrun", extra="").replace(
        "#SBATCH --gpus", "#SBATCH --export=NONE\n#SBATCH --gpus")
    assert any("exports" in m for m in refused(export_none))
    subset = BASE.format(launcher="torchrun", extra="").replace("srun torchrun",
                                                                 "srun --nodes=1 torchrun")
    assert any("fewer nodes" in m for m in refused(subset))
    mixed = BASE.format(launcher="torchrun", extra="") + BASE.format(
        launcher="torchrun", extra="").splitlines()[-1].replace("=8", "=4") + "\n"
    assert any("different processes per node" in m for m in refused(mixed))


def test_srun_options_in_a_variable():
    base = BASE.format(launcher="torchrun", extra="")
    layout = base.replace("srun torchrun", 'SRUN_ARGS="--ntasks-per-node=1 -l"\n'
                                           "srun $SRUN_ARGS torchrun")
    assert refused(layout)  # the job model does not follow srun options held in a variable
    unknown = base.replace("srun torchrun", "srun $SRUN_ARGS torchrun")
    conv = convert_srun_native(unknown, path="t.sbatch")
    assert conv.status == "converted"
    assert any("$SRUN_ARGS is passed to srun" in n for n in conv.notes)


def test_nothing_to_convert_is_unchanged_not_refused():
    for text in (HEAD + "#SBATCH --ntasks-per-node=8\nsrun python train.py\n",
                 "echo hello\n"):
        conv = convert_srun_native(text, path="t.sbatch")
        assert conv.status in ("unchanged", "refused") and conv.new_text == text
    assert convert_srun_native("echo hi\n", path="t.sh").status == "refused"  # not a job script


# ---- invariants on every shipped case, and idempotence ---------------------------------------

def _loud(text):
    return collections.Counter(d.code for d in lint(text, "t.sbatch").diagnostics
                               if d.severity >= Severity.WARNING)


def _case_files():
    return sorted(CASES.glob("*.sbatch")) if CASES.is_dir() else []


@pytest.mark.parametrize("path", _case_files(), ids=lambda p: p.name)
def test_every_case_converts_cleanly_or_refuses(path):
    bash = require_tool("bash")
    text = path.read_text("utf-8")
    conv = convert_srun_native(text, path=path.name)
    assert conv.status in ("converted", "refused", "unchanged")
    if conv.status != "converted":
        assert conv.new_text == text
        return
    new = conv.new_text
    r = subprocess.run([bash, "-n"], input=new, text=True, capture_output=True)
    assert r.returncode == 0, r.stderr
    before, after = _loud(text), _loud(new)
    assert not after["SB201"] and not after["SB202"]
    assert all(after[c] <= before[c] for c in after), (before, after)
    assert convert_srun_native(new, path=path.name).status == "unchanged"


def test_the_cases_exercise_the_conversion():
    """The case suite is not vacuous: most torchrun cases convert."""
    files = _case_files()
    if not files:
        pytest.skip("../shared/cases not found")
    statuses = collections.Counter(
        convert_srun_native(p.read_text("utf-8"), path=p.name).status for p in files)
    assert statuses["converted"] >= 8, statuses


# ---- SB201's fix and the CLI ------------------------------------------------------------------

def test_sb201_offers_the_conversion_first_and_one_task_per_node_second():
    text = (HEAD + "#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n" + ADDR +
            "srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d "
            "--rdzv-endpoint=$MASTER_ADDR:29400 train.py\n")
    d = next(d for d in lint(text, "t.sbatch").diagnostics if d.code == "SB201")
    assert [f.safe for f in d.fixes] == [False, False]
    assert "srun-native" in d.fixes[0].message and "one task per node" in d.fixes[1].message
    out = fix_text(text, "t.sbatch", unsafe=True)
    assert out.text == convert_srun_native(text, path="t.sbatch").new_text
    assert fix_text(text, "t.sbatch").text == text  # unsafe: not applied by --fix alone
    # when the conversion refuses, the other fix remains
    restarts = text.replace("train.py", "--max-restarts=2 train.py")
    d = next(d for d in lint(restarts, "t.sbatch").diagnostics if d.code == "SB201")
    assert [f.message for f in d.fixes] == ["run one task per node in this step"]


def test_cli_prints_a_diff_and_writes_atomically(tmp_path, capsys):
    path = tmp_path / "job.sbatch"
    text = BASE.format(launcher="torchrun", extra="")
    path.write_text(text)
    path.chmod(0o750)
    assert main(["--convert", "srun-native", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"--- {path}\n+++ {path}\n")
    assert "-#SBATCH --ntasks-per-node=1\n+#SBATCH --ntasks-per-node=8\n" in out
    assert path.read_text() == text  # a diff changes nothing
    assert main(["--convert", "srun-native", "--write", str(path)]) == 0
    assert path.read_text() == convert_srun_native(text, path=str(path)).new_text
    assert path.stat().st_mode & 0o777 == 0o750
    assert main(["--convert", "srun-native", "--write", str(path)]) == 0  # idempotent
    err = capsys.readouterr().err
    assert "nothing to convert" in err


def test_cli_diff_masks_secrets(tmp_path, capsys):
    token = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"
    path = tmp_path / "job.sbatch"
    path.write_text(BASE.format(launcher="torchrun", extra="").replace(
        "srun torchrun", f"export HF_TOKEN={token}\nsrun torchrun"))
    assert main(["--convert", "srun-native", str(path)]) == 0
    out = capsys.readouterr().out
    assert "HF_TOKEN=hf_" in out and token not in out  # the context line, masked


def test_cli_refusal_exit_code_and_message(tmp_path, capsys):
    path = tmp_path / "job.sbatch"
    text = BASE.format(launcher="torchrun", extra="--max-restarts=3")
    path.write_text(text)
    assert main(["--convert", "srun-native", "--write", str(path)]) == 1
    err = capsys.readouterr().err
    line = text.splitlines().index(next(x for x in text.splitlines() if "max-restarts" in x)) + 1
    assert f"{path}:{line}:" in err and "cannot convert: --max-restarts" in err
    assert path.read_text() == text


@pytest.mark.parametrize("args", [["--write", "x.sbatch"],
                                  ["--convert", "srun-native", "--fix", "x.sbatch"],
                                  ["--convert", "srun-native", "--diff", "x.sbatch"]])
def test_cli_usage_errors(args, capsys):
    assert main(args) == 2
    assert "error" in capsys.readouterr().err


def test_cli_standard_input_is_diffed_never_written(monkeypatch, capsys):
    import io

    text = BASE.format(launcher="torchrun", extra="")
    stdin = io.TextIOWrapper(io.BytesIO(text.encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["--convert", "srun-native", "--write", "--stdin-filename", "job.sbatch",
                 "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("--- job.sbatch\n+++ job.sbatch\n") and "+#SBATCH --ntasks-per-node=8" in out


def test_cli_unreadable_file(tmp_path, capsys):
    assert main(["--convert", "srun-native", str(tmp_path / "missing.sbatch")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_cli_entry_point_runs(tmp_path):
    path = tmp_path / "job.sbatch"
    path.write_text(BASE.format(launcher="torchrun", extra=""))
    r = subprocess.run([sys.executable, "-m", "sbatch_lsp", "--convert", "srun-native",
                        str(path)], capture_output=True, text=True)
    assert r.returncode == 0 and "+srun bash -c 'export RANK=$SLURM_PROCID" in r.stdout


# ---- generated scripts ------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402

from test_property import script  # noqa: E402


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script())
def test_generated_scripts_convert_or_refuse_and_conversion_is_idempotent(text):
    """On scripts built from real constructs (then mutated) the conversion never raises; what
    it converts parses with bash -n (when the script did), starts no torchrun under srun, and
    converts to itself."""
    conv = convert_srun_native(text, path="gen.sbatch")
    assert conv.status in ("converted", "refused", "unchanged")
    if conv.status != "converted":
        assert conv.edits == () and conv.new_text == text
        return
    new = conv.new_text

    def bash_n(t):
        return subprocess.run(["bash", "-n"], input=t, text=True, capture_output=True)
    if bash_n(text).returncode == 0:  # a mutation may have broken the script already
        r = bash_n(new)
        assert r.returncode == 0, (new, r.stderr)
    assert not _loud(new)["SB201"]
    assert convert_srun_native(new, path="gen.sbatch").status == "unchanged"


def test_a_replaced_master_address_or_port_is_said():
    text = (HEAD + "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"
            'head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)\n'
            "srun torchrun --nnodes=2 --nproc-per-node=4 --node-rank=$SLURM_NODEID "
            "--master-addr=$MASTER_ADDR --master-port=29533 train.py\n")
    conv = convert_srun_native(text, path="t.sbatch")
    assert conv.status == "converted" and PORT in conv.new_text
    assert conv.notes.count("the launcher's --master-port=29533 is replaced by the exported "
                            "MASTER_PORT; set MASTER_PORT yourself if that value matters") == 1
    assert not any("--master-addr" in n for n in conv.notes)  # it named the variable itself


def test_word_index_gives_the_first_word_in_order_holding_an_offset():
    """srun_native's batch-word lookup (:class:`_WordIndex`): of the words spanning an offset,
    the first in the given order whose text is the source's there, whatever their starts."""
    from sbatch_lsp.shell.model import Word
    from sbatch_lsp.srun_native import _WordIndex

    text = 'export A="x y"; echo "$A" tail'
    whole = Word('A="x y"', 7, 14, None)   # the command's word
    value = Word('"x y"', 9, 14, "x y")    # the assignment's value inside it
    moved = Word("q", 22, 23, "q")         # not the source's text at its span: never given
    echo = Word('"$A"', 21, 25, None)
    index = _WordIndex([echo, moved, whole, value])
    assert index.holding(10, text) is whole
    assert _WordIndex([value, whole]).holding(10, text) is value
    assert index.holding(8, text) is whole and index.holding(7, text) is whole
    assert index.holding(22, text) is echo
    assert index.holding(14, text) is None and index.holding(40, text) is None
    assert _WordIndex([]).holding(0, text) is None


#: pieces of batch scripts for the batch-word lookup's equivalence test: launchers in command
#: strings and variables, nested substitutions, quotes of every kind, compound chunks,
#: here-documents, functions (the reference path), assignments holding commands
_PIECES = [
    'srun bash -c "torchrun --nnodes=$N --nproc-per-node=8 train.py --x \\"$Y\\""\n',
    "srun bash -c 'cd /w && torchrun --nproc-per-node=4 t.py'\n",
    'LAUNCHER="torchrun --nproc-per-node=2 --master-port=$PORT"\n',
    'srun $LAUNCHER train.py\n',
    'CMD="python -m torch.distributed.run --nproc-per-node=4 x.py"; srun bash -c "$CMD"\n',
    'export A="x y" B=$(hostname -s) C=`date`\n',
    'X=1 Y="$(echo "$(id -u) z")" srun --ntasks=2 python a.py\n',
    "echo $'a\\'b' \"c $D\" 'e'\"f\"g\n",
    'if [ -n "$A" ]; then\n  srun bash -c "echo $A; torchrun t.py"\nelse\n  B=2\nfi\n',
    'for i in 1 2; do srun --nodes=1 bash -c "python p.py $i" & done; wait\n',
    'cat > run.sh <<EOF\ntorchrun t.py\nEOF\n',
    'f() { srun "$@"; }\nf python x.py\n',
    'srun --export=ALL,V=1 bash -c "export Q=1; python q.py"\n',
    '# a comment with "quotes" and $(subst)\n',
    'S="srun --ntasks-per-node=1"; $S python s.py\n',
    'case "$X" in a) srun bash -c "torchrun a.py";; *) echo no;; esac\n',
    'srun bash -c "$(printf %s "torchrun") b.py"\n',
    'eval "srun python e.py"\n',
    # torchrun spelled through quotes, escapes and continuations, or joined by the batch shell
    "ssh node1 tor'ch'run t.py; nohup \"torch\"run x.py & env tor\\chrun y.py\n",
    'srun tor\\\nchrun z.py\n',
    "echo $'\\x74orchrun' $\"torchrun\"; mpirun -np 2 python -m torch.distributed.launch a.py\n",
    'A=tor; srun bash -c "${A}chrun b.py"; T=torchrun; srun $T c.py\n',
    'which torchrun || echo "no torch here"\n',
]


def _lookups_agree(text: str) -> bool:
    """Whether srun_native's batch-word lookup gives, for every offset of ``text``, the word
    of the reference index (all words gathered and sorted); returns whether the script took
    the by-chunk path."""
    from sbatch_lsp.lint import job_of
    from sbatch_lsp.srun_native import _BatchWords, _WordIndex, batch_words

    script = job_of(text, "t.sbatch").script
    fast = _BatchWords(script, text)
    reference = _WordIndex(batch_words(script))
    for offset in range(len(text) + 1):
        assert fast.holding(offset) is reference.holding(offset, text), (offset, text)
    return fast.by_chunk


@pytest.fixture(params=[False, True], ids=["whole", "fragments"])
def sample_scripts(request):
    """Scripts for srun_native's by-chunk searches (read with and without the fragment memo):
    each of :data:`_PIECES`, 60 seeded random scripts made of them, the shipped examples."""
    import random

    from sbatch_lsp.shell.parse import use_fragments

    texts = [HEAD + p for p in _PIECES]
    rng = random.Random(2026)
    texts += [HEAD + "".join(rng.choices(_PIECES, k=rng.randint(2, 9))) for _ in range(60)]
    examples = Path(__file__).resolve().parents[1] / "examples"
    texts += [p.read_text() for p in sorted(examples.glob("*/*.sbatch"))]
    before = use_fragments(request.param)
    yield texts
    use_fragments(before)


def test_batch_word_lookup_by_chunk_is_the_reference_index(sample_scripts):
    """_BatchWords looks a word up in the chunk holding the offset (scripts without
    functions, sourced files or run here-documents); the words and order it gives are those of
    one index of every batch-shell word, on every sample script."""
    paths = [_lookups_agree(t) for t in sample_scripts]
    assert any(paths) and not all(paths)  # both paths were taken


def _namings_agree(text: str) -> bool:
    """Whether the commands :func:`may_name_torchrun` gives hold every word naming torchrun
    that a walk of all commands finds, in the same order; returns whether the chunks were
    searched (not every command given)."""
    from sbatch_lsp.lint import job_of
    from sbatch_lsp.srun_native import _naming_torchrun, may_name_torchrun

    script = job_of(text, "t.sbatch").script
    given = may_name_torchrun(script, text)
    found = [(c, _naming_torchrun(c.words)) for c in given]
    reference = [(c, _naming_torchrun(c.words)) for c in script.walk()]
    assert [x for x in found if x[1]] == [x for x in reference if x[1]], text
    return isinstance(given, list)


def test_commands_that_may_name_torchrun_are_those_a_walk_finds(sample_scripts):
    """The unseen-launcher search of the plan reads only the chunks whose text may spell
    torchrun (and every nested command); it finds the words a walk of every command finds, on
    every sample script."""
    searched = [_namings_agree(t) for t in sample_scripts]
    assert any(searched) and not all(searched)  # both paths were taken


def test_a_module_launcher_whose_m_is_joined_to_other_options_is_refused():
    """``python -um torch.distributed.run``: the planner finds no ``-m`` word to rewrite; it
    refuses (it raised StopIteration, an SB003 finding for SB201, before)."""
    text = (HEAD + "#SBATCH --ntasks-per-node=4\n"
            "srun python -um torch.distributed.run --nproc-per-node=4 t.py\n")
    assert any("-m is joined" in m for m in refused(text))
    codes = {d.code for d in lint(text, "t.sbatch").diagnostics}
    assert "SB201" in codes and "SB003" not in codes
