"""Scripts a here-document writes and the script then runs (sbatch_lsp/shell/generated.py):
where the body runs decides what it sees, and findings point into the body."""
from __future__ import annotations

from sbatch_lsp.lint import lint
from sbatch_lsp.shell.parse import parse_script

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:4\n"
TORCHRUN = ("torchrun --nnodes=2 --nproc_per_node=4 --node_rank=$SLURM_NODEID "
            "--master_addr=node1 --master_port=29500 train.py\n")


def _codes(text: str) -> list[tuple[str, str, str]]:
    """(code, severity, the text the finding spans) of every finding."""
    return [(d.code, d.severity.name.lower(), text[d.start:d.end])
            for d in lint(text, "job.sbatch").diagnostics]


def test_unquoted_heredoc_run_by_srun_freezes_the_task_variable() -> None:
    # the writing (batch) shell expands $SLURM_NODEID: every task's file holds 0
    text = HEAD + "cat > run.sh <<EOF\n" + TORCHRUN + "EOF\nsrun bash run.sh\n"
    assert ("SB301", "error", "$SLURM_NODEID") in _codes(text)


def test_quoted_heredoc_run_by_srun_expands_in_each_task() -> None:
    text = HEAD + "cat > run.sh <<'EOF'\n" + TORCHRUN + "EOF\nsrun bash run.sh\n"
    assert [c for c in _codes(text) if c[0] == "SB301"] == []


def test_direct_execution_needs_chmod() -> None:
    body = "cat > run.sh <<EOF\n" + TORCHRUN + "EOF\n"
    run = HEAD + body + "chmod +x run.sh\nsrun --ntasks=2 ./run.sh\n"
    assert ("SB301", "error", "$SLURM_NODEID") in _codes(run)
    # without the execute bit the file does not run: nothing in it is a task's
    assert _codes(HEAD + body + "srun --ntasks=2 ./run.sh\n") == []


def test_exec_bash_body_is_the_batch_shells_work() -> None:
    # every task of the job runs 4 torchruns per node: SB201 points at the body's torchrun
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gres=gpu:4\n"
            "F=$(mktemp)\ncat > \"$F\" <<'EOF'\nsrun torchrun --nnodes=2 --nproc_per_node=4 "
            "--rdzv-endpoint=node1:29500 --rdzv-backend=c10d train.py\nEOF\nexec bash \"$F\" \"$@\"\n")
    found = _codes(text)
    assert ("SB201", "error", "torchrun") in found
    d = next(d for d in lint(text, "job.sbatch").diagnostics if d.code == "SB201")
    assert text.count("\n", 0, d.start) + 1 == 7  # the body's line, not the exec line


def test_written_but_never_run_is_data() -> None:
    text = HEAD + "cat > run.sh <<'EOF'\nsrun torchrun --nnodes=2 train.py\nEOF\ncat run.sh\n"
    script = parse_script(text)
    assert script.bodies == []
    assert [c.name for c in script.walk()] == ["cat", "cat"]


def test_a_file_given_to_an_option_is_data() -> None:
    # `cplex -f FILE` reads a command file: not a script the batch shell runs, chmod or not
    text = ("#!/bin/bash\ncat > cmds.lst <<EOF\nread model.mps\nEOF\nchmod +x cmds.lst\n"
            "cplex -f cmds.lst\n")
    assert parse_script(text).bodies == []
    timed = text.replace("cplex -f cmds.lst", "timeout 1h ./cmds.lst")
    assert [b.place for b in parse_script(timed).bodies] == ["child"]


def test_appended_file_is_not_a_script() -> None:
    text = HEAD + "cat >> run.sh <<'EOF'\nsrun hostname\nEOF\nbash run.sh\n"
    assert parse_script(text).bodies == []


def test_child_shell_sees_only_exported_values() -> None:
    text = ("#!/bin/bash\nA=1\nexport B=2\ncat > run.sh <<'EOF'\necho $A $B\nEOF\n"
            "bash run.sh\n")
    script = parse_script(text)
    assert [b.place for b in script.bodies] == ["child"]
    at = text.index("echo")
    assert script.value_at("A", at) is None  # not exported: empty in the child
    b = script.value_at("B", at)
    assert b is not None and b.value is not None and b.value.value == "2"


def test_sourced_body_sees_the_shells_variables() -> None:
    text = "#!/bin/bash\nA=1\ncat > env.sh <<'EOF'\nN=$A\nEOF\nsource env.sh\necho $N\n"
    script = parse_script(text)
    assert [b.place for b in script.bodies] == ["source"]
    a = script.value_at("A", text.index("N=$A"))
    assert a is not None and a.value is not None and a.value.value == "1"
    n = script.value_at("N", text.index("echo"))
    assert n is not None and n.value is not None and n.value.text == "$A"
    runner = next(c for c in script.commands if c.name == "source")
    assert runner.runs is script.bodies[0]


def test_background_step_in_exec_body_not_waited() -> None:
    # the exec line is not foreground work after the step: the body ends with the `&`
    text = ("#!/bin/bash\n#SBATCH --nodes=1\ncat > run.sh <<'EOF'\nsrun python a.py &\nEOF\n"
            "exec bash run.sh\n")
    assert ("SB208", "error", "srun python a.py") in _codes(text)
