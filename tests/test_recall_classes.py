"""The classes the recall cases (tests/cases/RC*) showed missing, each checked on shapes other
than the case's own: a here-document on a shell's standard input, a global batch that the micro
batch does not divide, and exported runtime settings that --export=NONE keeps from the tasks."""
from __future__ import annotations

from sbatch_lsp.lint import lint

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:4\n"
TORCHRUN = ("torchrun --nnodes=2 --nproc_per_node=4 --node_rank=$SLURM_NODEID "
            "--master_addr=node1 --master_port=29500 train.py\n")


def _found(text: str) -> list[tuple[str, str, str]]:
    """(code, severity, the text the finding spans) of every finding."""
    return [(d.code, d.severity.name.lower(), text[d.start:d.end])
            for d in lint(text, "job.sbatch").diagnostics]


# ---- a here-document on a shell's standard input ----------------------------------------------
def test_srun_bash_stdin_heredoc_runs_in_every_task() -> None:
    # srun(1) "IO Redirection": srun's stdin goes to all tasks, so each task's bash runs the body
    quoted = HEAD + "PORT=29500\nsrun bash <<'EOF'\necho \"$PORT\"\n" + TORCHRUN + "EOF\n"
    assert ("SB302", "error", "$PORT") in _found(quoted)
    assert not [f for f in _found(quoted) if f[0] == "SB301"]  # expanded in each task


def test_unquoted_stdin_heredoc_freezes_the_task_variable() -> None:
    # the batch shell expands an unquoted here-document before srun forwards it
    for shell in ("bash", "bash -s", "sh -e", "/bin/bash -l"):
        text = HEAD + f"srun --ntasks-per-node=1 {shell} <<EOF\n" + TORCHRUN + "EOF\n"
        assert ("SB301", "error", "$SLURM_NODEID") in _found(text), shell


def test_stdin_heredoc_to_a_shell_with_a_script_is_no_script() -> None:
    # with a script operand or -c, the here-document is that program's input, not its commands
    for shell in ("bash run.sh", "bash -c 'cat'"):
        text = HEAD + f"srun {shell} <<EOF\n" + TORCHRUN + "EOF\n"
        assert not [f for f in _found(text) if f[0] == "SB301"], shell


def test_heredoc_on_another_descriptor_is_no_script() -> None:
    text = HEAD + "srun bash 3<<EOF\n" + TORCHRUN + "EOF\n"
    assert not [f for f in _found(text) if f[0] == "SB301"]


# ---- a global batch the micro batch does not divide --------------------------------------------
MEGATRON = ("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
            "export CUDA_DEVICE_MAX_CONNECTIONS=1\n")


def _sb604(text: str) -> list[tuple[str, str, str]]:
    return [f for f in _found(text) if f[0] == "SB604"]


def test_gbs_not_a_multiple_of_mbs_fails_whatever_the_unknown_sizes() -> None:
    # TP from the submitting environment: DP is unknown, but 30 % 4 fails for every DP
    text = MEGATRON + ("srun torchrun --nproc-per-node=8 pretrain_gpt.py "
                       "--tensor-model-parallel-size $TP --num-layers 24 --hidden-size 2048 "
                       "--num-attention-heads 16 --micro-batch-size 4 --global-batch-size 30\n")
    assert _sb604(text) == [("SB604", "error", "30")]
    # a multiple of the micro batch: whether it divides micro × DP depends on the unknown TP
    assert _sb604(text.replace("size 30", "size 32")) == []


def test_gbs_check_keeps_its_exemptions_when_sizes_are_unknown() -> None:
    base = MEGATRON + ("srun torchrun --nproc-per-node=8 pretrain_gpt.py "
                       "--tensor-model-parallel-size $TP --num-layers 24 --hidden-size 2048 "
                       "--num-attention-heads 16 --micro-batch-size 4 --global-batch-size 30")
    assert _sb604(base + " --decrease-batch-size-if-needed\n") == []
    assert _sb604(base + " --rampup-batch-size 16 16 5000000 --train-samples 100000\n") == []


# ---- exported runtime settings kept out of the tasks --------------------------------------------
NONE_HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --export=NONE\n"


def _sb302(text: str) -> list[tuple[str, str, str]]:
    return [f for f in _found(text) if f[0] == "SB302"]


def test_runtime_setting_under_export_none_is_a_warning_at_its_export() -> None:
    text = NONE_HEAD + "export NCCL_DEBUG=INFO\nexport I_MPI_PIN=1\nsrun ./solver\n"
    assert _sb302(text) == [("SB302", "warning", "NCCL_DEBUG=INFO"),
                            ("SB302", "warning", "I_MPI_PIN=1")]


def test_runtime_setting_that_reaches_the_tasks_is_not_reported() -> None:
    for fix in ("export SLURM_EXPORT_ENV=ALL\n", ""):
        srun = "srun ./solver\n" if fix else "srun --export=ALL ./solver\n"
        assert _sb302(NONE_HEAD + fix + "export OMP_NUM_THREADS=4\n" + srun) == [], (fix, srun)
    named = NONE_HEAD + "export OMP_NUM_THREADS=4\nsrun --export=OMP_NUM_THREADS ./solver\n"
    assert _sb302(named) == []
    # without --export=NONE the export reaches every step
    assert _sb302(NONE_HEAD.replace("#SBATCH --export=NONE\n", "") +
                  "export OMP_NUM_THREADS=4\nsrun ./solver\n") == []


def test_srun_export_list_without_the_setting_keeps_it_out() -> None:
    text = ("#!/bin/bash\n#SBATCH --nodes=2\nexport OMP_NUM_THREADS=4\n"
            "srun --export=PATH,HOME ./solver\n")
    assert _sb302(text) == [("SB302", "warning", "OMP_NUM_THREADS=4")]


def test_other_exported_names_need_a_read_in_the_task() -> None:
    # nothing shows that the tasks read WORKDIR: no finding (the read must be in the script)
    assert _sb302(NONE_HEAD + "export WORKDIR=/scratch/run\nsrun ./solver\n") == []


# ---- SB201's explanation follows the rendezvous -------------------------------------------------
def test_standalone_copies_form_separate_worlds_not_a_port_clash() -> None:
    head = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=4\n#SBATCH --gres=gpu:4\n"
    standalone = lint(head + "srun torchrun --standalone --nproc_per_node=4 train.py\n", "j").diagnostics
    static = lint(head + "srun torchrun --nnodes=1 --nproc_per_node=4 --master_addr=localhost "
                  "--master_port=29500 train.py\n", "j").diagnostics
    (s,) = [d for d in standalone if d.code == "SB201"]
    (t,) = [d for d in static if d.code == "SB201"]
    assert "separate trainings" in s.message and "EADDRINUSE" not in s.message
    assert "EADDRINUSE" in t.message


# ---- a loopback MASTER_ADDR reaching srun-native tasks on several nodes ---------------------------
MULTI = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gres=gpu:4\n"


def _sb206(text: str) -> list[tuple[str, str, str]]:
    return [f for f in _found(text) if f[0] == "SB206"]


def test_exported_loopback_reaching_srun_native_tasks() -> None:
    for addr in ("localhost", "127.0.0.1"):
        env = MULTI + f"export MASTER_ADDR={addr}\nsrun python train.py --init-method env://\n"
        assert _sb206(env) == [("SB206", "error", f"MASTER_ADDR={addr}")], addr
    # no env:// word: the program's read is not shown, the export is for nothing else
    plain = MULTI + "export MASTER_ADDR=localhost\nsrun python train.py\n"
    assert _sb206(plain) == [("SB206", "warning", "MASTER_ADDR=localhost")]


def test_loopback_that_no_srun_native_task_reads_on_another_node() -> None:
    one_node = MULTI.replace("--nodes=2", "--nodes=1") + \
        "export MASTER_ADDR=localhost\nsrun python train.py --init-method env://\n"
    assert _sb206(one_node) == []
    unexported = MULTI + "MASTER_ADDR=localhost\nsrun python train.py --init-method env://\n"
    assert _sb206(unexported) == []
    first_host = MULTI + ('export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" '
                          "| head -n1)\nsrun python train.py --init-method env://\n")
    assert _sb206(first_host) == []


def test_stdin_heredoc_through_a_wrapper_or_a_container_runtime() -> None:
    for pre in ('nsys profile -o "$OUT" ', "singularity exec --nv img.sif ", "numactl -N 0 "):
        text = HEAD + f"srun --ntasks-per-node=1 {pre}bash <<EOF\n" + TORCHRUN + "EOF\n"
        assert ("SB301", "error", "$SLURM_NODEID") in _found(text), pre
