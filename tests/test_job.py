"""Step layouts as Slurm 22.05.8 computes them (slurm-facts.md §14)."""
import pytest

from sbatch_lsp.lint import lint


def layout(directives: str, srun: str):
    text = "#!/bin/bash\n" + directives + "\n" + srun + " hostname\n"
    step = lint(text).job.steps[0]
    return step.tasks_per_node


@pytest.mark.parametrize("directives,srun,expected", [
    ("#SBATCH --nodes=2 --ntasks-per-node=2", "srun", 2),
    # a lone --ntasks-per-node=1 is ignored: the inherited task count wins
    ("#SBATCH --nodes=2 --ntasks-per-node=2", "srun --ntasks-per-node=1", 2),
    ("#SBATCH --nodes=2 --ntasks-per-node=2",
     'srun --nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1', 1),
    # the same, with a node count only known at submit time
    ("#SBATCH --ntasks-per-node=8",
     'srun --nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1', 1),
    ("#SBATCH --ntasks-per-node=8", 'srun -N "$N" -n "$N"', 1),
    ("#SBATCH --ntasks-per-node=8", 'srun -n "$TASKS"', None),
    ("#SBATCH --nodes=4 --ntasks=4", "srun", 1),
    ("#SBATCH --nodes=2", "srun", 1),
    ("#SBATCH --nodes=2", "srun --ntasks-per-node=4", 4),
    # the Megatron-LM template: a variable that holds the node count is the node count
    ("#SBATCH --nodes=2 --ntasks-per-node=8\nNNODES=${SLURM_NNODES}",
     "srun --ntasks=${NNODES} --ntasks-per-node=1", 1),
    ("#SBATCH --ntasks-per-node=8\nN=$SLURM_JOB_NUM_NODES\nM=$N",
     'srun --ntasks="$M" --ntasks-per-node=1', 1),
    # a variable that holds something else is not
    ("#SBATCH --ntasks-per-node=8\nNNODES=$1", "srun --ntasks=${NNODES}", None),
])
def test_step_layout(directives, srun, expected):
    assert layout(directives, srun) == expected


def test_taint_follows_the_value_not_a_later_bare_export():
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n"
            "NODE_RANK=$SLURM_PROCID\nexport NODE_RANK\n"
            "srun --ntasks-per-node=1 torchrun --nnodes=2 --nproc-per-node=8 "
            "--node-rank=$NODE_RANK --master-addr=h --master-port=29500 t.py\n")
    found = [(d.code, d.severity.label) for d in lint(text).diagnostics]
    assert ("SB301", "error") in found


def test_command_built_by_appending_to_itself():
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
            "#SBATCH --gpus-per-node=8\nCMD=\"torchrun\"\n"
            "CMD=\"$CMD --nnodes=2 --nproc_per_node=8 --node_rank=\\$SLURM_NODEID "
            "--master_addr=h --master_port=1 t.py\"\nsrun bash -c \"$CMD\"\n")
    assert [d.code for d in lint(text).diagnostics] == ["SB201"]


def test_a_launcher_variable_echoed_is_not_run():
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n"
            "L=\"torchrun --nnodes 2 --nproc_per_node 8 --rdzv_backend c10d "
            "--rdzv_endpoint h:29500\"\necho $L\nsrun --ntasks-per-node=1 bash -c \"$L train.py\"\n")
    assert lint(text).diagnostics == []


def test_unparsed_chunks():
    from sbatch_lsp.lint import lint
    # a continuation backslash before a blank line is valid bash, and is read
    ok = "#!/bin/bash\n#SBATCH -N 1\necho start\nsrun python train.py \\\n    --lr 0.1 \\\n\n"
    assert [d.code for d in lint(ok).diagnostics] == []
    bad = "#!/bin/bash\n#SBATCH -N 1\necho \"unterminated\nfoo\n"
    [d] = lint(bad).diagnostics
    assert d.code == "SB002" and "lines 3-4 " in d.message


@pytest.mark.parametrize("launch,expected", [
    ("--master-addr=h --master-port=29500", "error"),  # static: the node rank is used
    ("--rdzv-backend=c10d --rdzv-endpoint=h:29400", "info"),  # c10d ignores it
])
def test_sb301_node_rank_matters_only_for_the_static_rendezvous(launch, expected):
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n"
            "srun --ntasks-per-node=1 torchrun --nnodes=2 --nproc-per-node=8 "
            f"--node-rank=$SLURM_NODEID {launch} t.py\n")
    assert [(d.code, d.severity.label) for d in lint(text).diagnostics] == [("SB301", expected)]


def test_sb301_batch_host_name_as_the_rendezvous_address_is_right():
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n"
            "export MASTER_ADDR=$SLURMD_NODENAME\nsrun --ntasks-per-node=1 torchrun --nnodes=2 "
            "--nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=$MASTER_ADDR:29500 t.py\n")
    assert lint(text).diagnostics == []


@pytest.mark.parametrize("step,expected", [
    ("srun bash -c 'echo $MASTER_ADDR'", ["SB302"]),
    ("MASTER_ADDR=$MASTER_ADDR srun bash -c 'echo $MASTER_ADDR'", []),
    ("srun --export=ALL,MASTER_ADDR=$MASTER_ADDR bash -c 'echo $MASTER_ADDR'", []),
    ("srun --export=ALL bash -c 'echo $PATH $SLURM_CPUS_PER_TASK'", []),
])
def test_sb302_what_reaches_the_task(step, expected):
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH -N 1\nMASTER_ADDR=$(hostname)\nPATH=/opt/bin:$PATH\n"
            "SLURM_CPUS_PER_TASK=4\n" + step + "\n")
    assert [d.code for d in lint(text).diagnostics] == expected


@pytest.mark.parametrize("export", ["NONE", "PATH"])
def test_sb302_a_step_export_keeps_exports_out(export):
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH -N 1\nexport MASTER_ADDR=$(hostname)\n"
            f"srun --export={export} bash -c 'echo $MASTER_ADDR'\n")
    [d] = lint(text).diagnostics
    assert d.code == "SB302" and f"--export={export}" in d.message


def test_srun_held_in_a_variable_is_a_step():
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n"
            "#SBATCH --ntasks-per-node=8\n"
            "L=\"torchrun --nnodes=2 --nproc-per-node=8 --node-rank=\\$SLURM_NODEID "
            "--master-addr=h --master-port=1\"\nS=\"srun --mpi=pmix\"\n"
            "$S bash -c \"$L train.py\"\n")
    result = lint(text)
    assert [d.code for d in result.diagnostics] == ["SB201"]
    assert result.job.steps[0].tasks_per_node == 8


def test_word_splitting_passes_escaped_variables_literally():
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n"
            "CMD=\"python train.py --rank \\$SLURM_PROCID\"\nsrun --ntasks-per-node=8 $CMD\n")
    step = lint(text).job.steps[0]
    [task] = step.task_commands
    assert [w.value for w in task.words] == ["python", "train.py", "--rank", "$SLURM_PROCID"]


def test_a_spaced_pyxis_value_does_not_end_the_directive_block():
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --container-image /img.sqsh\n#SBATCH --nodes=2\n"
            "#SBATCH --gpus-per-node=8\nsrun --ntasks-per-node=1 hostname\n")
    job = lint(text).job
    assert job.nodes.value == 2 and job.gpus_per_node.value == 8


@pytest.mark.parametrize("setup,srun", [
    ("export MASTER_ADDR=localhost\n", "srun"),
    ("", "srun --export=ALL,MASTER_ADDR=localhost"),
])
def test_sb206_a_loopback_address_from_outside_the_task(setup, srun):
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
            "#SBATCH --gpus-per-node=8\n" + setup + srun + " bash -c 'torchrun --nnodes=2 "
            "--nproc-per-node=8 --node-rank=$SLURM_NODEID --master-addr=$MASTER_ADDR "
            "--master-port=29500 train.py'\n")
    assert [d.code for d in lint(text).diagnostics] == ["SB206"]


def test_one_command_string_run_twice_is_one_finding():
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
            "#SBATCH --gpus-per-node=8\nCMD=\"torchrun --nnodes=2 --nproc-per-node=8 "
            "--rdzv-backend=c10d --rdzv-endpoint=h:1 t.py\"\n"
            "srun bash -c \"$CMD\"\nsrun bash -c \"$CMD --resume\"\n")
    [d] = lint(text).diagnostics
    assert d.code == "SB201" and {lint(text).source.line_of(r.start) + 1
                                  for r in d.related} >= {6, 7}


# ---- the first-word gate of Job._steps --------------------------------------------------------
def _first_words():
    """First words of commands: tricky ones, seeded random ones and those of every case and
    example script (and of the real corpus when CORPUS_DIR names it)."""
    import random
    from pathlib import Path

    from sbatch_lsp.job import STEP_OR_LAUNCH
    from sbatch_lsp.shell.model import Word
    from sbatch_lsp.shell.parse import parse_script
    from tests.shell_models import real_corpus

    def word(text, value):
        return Word(text, 0, len(text), value)

    tricky = ["srun", "/usr/bin/srun", "python", "python3", "python3.11", "pythonx", "python3.1.2",
              "/opt/conda/bin/python3", "torchrun", "mpirun", "timeout", "nohup", "env", "", "/",
              "srun/", "echo", "bash", "py", "Python", "$CMD", '"${CMD[@]}"', "${A[@]}x", "'[@]'"]
    tricky += sorted(STEP_OR_LAUNCH)
    for t in tricky:
        yield word(t, t if "$" not in t else None)
        yield word(t, None)
    rng = random.Random(11)
    alphabet = ["s", "r", "u", "n", "p", "y", "t", "h", "o", "3", ".", "/", "[@]", "$", "{", "}",
                '"', "x", "1"]
    for _ in range(5000):
        t = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 9)))
        yield word(t, None if "$" in t else t)
    root = Path(__file__).parent.parent
    texts = [p.read_text() for p in sorted((root / "tests" / "cases").glob("*.sbatch"))]
    texts += [p.read_text() for p in sorted((root / "examples").rglob("*.sbatch"))]
    texts += [text for _, text in real_corpus()]
    for text in texts:
        for cmd in parse_script(text).walk():
            if cmd.words:
                yield cmd.words[0]


def test_the_step_or_launch_gate_passes_every_step_and_launch_start():
    """may_step_or_launch is False only where step_for's own first test and may_launch both
    answer no: Job._steps skips those commands without asking either."""
    from sbatch_lsp.facts.wrappers import base
    from sbatch_lsp.job import SRUN_OR_WRAPPER, may_step_or_launch
    from sbatch_lsp.launchers import may_launch

    seen = 0
    for w in _first_words():
        step = base(w) in SRUN_OR_WRAPPER or "[@]" in w.text  # (step_for's first test)
        if step or may_launch(w):
            assert may_step_or_launch(w), w
        seen += 1
    assert seen > 5000
