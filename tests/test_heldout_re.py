"""The mechanisms the held-out cases RE01-RE14 showed missing, on shapes other than the cases':

- a child shell (``srun bash -c '$LAUNCHER …'``) inherits the batch shell's exported values, so
  a launcher kept in an exported variable is found in the tasks (RE05, RE08);
- a finding on a launcher option whose value is written elsewhere also points at the option
  (RE04, RE08);
- fairseq's/ParlAI's ``--distributed-world-size`` against the step's task count (RE01);
- Megatron-LM's hidden size % attention heads without ``--kv-channels`` (RE05);
- a per-node agent (Ray/Dask worker) that only the batch shell starts (RE03).
"""
import pytest

import sbatch_lsp.lint  # noqa: F401  (registers every rule)
from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.facts.reach import node_agent
from sbatch_lsp.lint import lint
from sbatch_lsp.shell.parse import parse_script


def _found(text: str, code: str) -> list[tuple[int, Severity, list[int]]]:
    r = lint(text, "t.sbatch")
    return [(r.source.line_of(d.start) + 1, d.severity,
             sorted(r.source.line_of(x.start) + 1 for x in d.related))
            for d in r.diagnostics if d.code == code]


# -- a child shell inherits exported values ---------------------------------------------------

LAUNCH = """#!/bin/bash
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
NNODES=8
{export}LAUNCHER="torchrun --nproc_per_node 4 --nnodes $NNODES --rdzv_backend c10d \\
  --rdzv_endpoint $(hostname):29500"
{later}srun {opts}bash -c '$LAUNCHER train.py'
"""


def test_an_exported_launcher_is_found_in_the_tasks_shell():
    text = LAUNCH.format(export="export ", later="", opts="")
    assert _found(text, "SB216") == [(5, Severity.ERROR, [6, 8])]


def test_export_after_the_assignment_counts_too():
    text = LAUNCH.format(export="", later="export LAUNCHER\n", opts="")
    assert [ln for ln, _, _ in _found(text, "SB216")] == [5]


@pytest.mark.parametrize(("export", "later", "opts"), [
    ("", "", ""),                              # not exported: empty in the child shell
    ("export ", "", "--export=NONE "),          # srun hands the task no environment
    ("export ", "", "--export=HOME,PATH "),
])
def test_no_inherited_value_no_launcher(export, later, opts):
    text = LAUNCH.format(export=export, later=later, opts=opts)
    assert _found(text, "SB216") == []


def test_the_child_shells_own_expansions_are_not_early():
    """`$SLURM_PROCID` beside `$LAUNCHER` in single quotes is the task's own expansion."""
    text = LAUNCH.format(export="export ", later="", opts="").replace(
        "bash -c '$LAUNCHER train.py'", "bash -c '$LAUNCHER --node_rank $SLURM_PROCID train.py'")
    assert _found(text, "SB301") == []


def test_the_child_reads_its_own_assignment_first():
    script = parse_script("export X='python a.py'\nsrun bash -c 'X=\"torchrun b.py\"; $X'\n")
    inner = script.commands[-1].nested[0]
    split = [c for c in inner.walk() if c.script is not None and c.script.kind == "split"]
    assert [w.value for w in split[0].words] == ["torchrun", "b.py"]


# -- the option word of a value written elsewhere -----------------------------------------------

def test_gpu_count_finding_points_at_the_option_too():
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
            "#SBATCH --gres=gpu:4\nGPUS=8\n"
            "LAUNCHER=\"torchrun --nnodes 2 --rdzv_backend c10d --rdzv_endpoint h:1 \\\n"
            "  --nproc_per_node $GPUS\"\nsrun bash -c \"$LAUNCHER train.py\"\n")
    assert _found(text, "SB204") == [(5, Severity.WARNING, [4, 7])]


# -- --distributed-world-size -------------------------------------------------------------------

WORLD = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node={tpn}\n"
         "#SBATCH --gpus-per-node=8\nsrun python -m fairseq_cli.train data --distributed-world-size {n}\n")


@pytest.mark.parametrize(("tpn", "n", "lines"), [
    (8, 2, [5]),     # 16 ranks (SLURM_PROCID), a world of 2
    (8, 16, []),
    (1, 16, []),     # one task per node: fairseq spawns a process per GPU and sizes the world
    (1, 2, []),
])
def test_distributed_world_size_against_the_tasks(tpn, n, lines):
    assert [ln for ln, _, _ in _found(WORLD.format(tpn=tpn, n=n), "SB216")] == lines


# -- hidden size % heads --------------------------------------------------------------------

MEGATRON = ("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n"
            "#SBATCH --gpus-per-node=8\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
            "srun torchrun --nproc-per-node=8 pretrain_gpt.py --tensor-model-parallel-size 2 "
            "--num-layers 24 {shape} --micro-batch-size 1 --global-batch-size 64\n")


@pytest.mark.parametrize(("shape", "fires"), [
    ("--hidden-size 2000 --num-attention-heads 16", False),   # 125 per head
    ("--hidden-size 2050 --num-attention-heads 16", True),
    ("--hidden-size 2050 --num-attention-heads 16 --kv-channels 128", False),
    ("--hidden-size=1000 --num-attention-heads=24", True),
])
def test_hidden_size_over_heads(shape, fires):
    got = [d.message for d in lint(MEGATRON.format(shape=shape), "t.sbatch").diagnostics
           if d.code == "SB601" and "attention heads" in d.message and "hidden size" in d.message]
    assert bool(got) is fires


def test_a_hydra_config_is_not_checked():
    """NeMo/Bridge configs reach TransformerConfig, which floors the per-head size."""
    text = MEGATRON.format(shape="").replace(
        "pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 24",
        "megatron_gpt_pretraining.py model.tensor_model_parallel_size=2 model.num_layers=24 "
        "model.hidden_size=2050 model.num_attention_heads=16").replace(
        " --micro-batch-size 1 --global-batch-size 64", "")
    assert not [d for d in lint(text, "t.sbatch").diagnostics
                if d.code == "SB601" and "hidden size" in d.message]


# -- per-node agents ------------------------------------------------------------------------

@pytest.mark.parametrize(("line", "what"), [
    ("ray start --address head:6379 --block", "Ray worker"),
    ("ray start --address=head:6379", "Ray worker"),
    ("ray start --head --port 6379", None),
    ("ray start --head --address head:6379", None),
    ("dask worker tcp://head:8786", "Dask worker"),
    ("dask-worker tcp://head:8786", "Dask worker"),
    ("ray status", None),
])
def test_node_agent(line, what):
    words = parse_script(line + "\n").commands[0].words
    got = node_agent(words)
    assert (got is not None and what in got) if what else got is None


AGENT = ("#!/bin/bash\n#SBATCH --nodes={nodes}\n#SBATCH --ntasks-per-node=1\n"
         "srun -N1 -n1 -w \"$H\" ray start --head --block &\nsleep 5\n{body}python driver.py\n")


@pytest.mark.parametrize(("nodes", "body", "lines"), [
    (2, "ray start --address \"$H:6379\" --block &\nsleep 5\n", [6]),
    (2, "srun -N1 -n1 -w \"$W\" pip install ray; ray start --address \"$H:6379\" &\n", [6]),
    (1, "ray start --address \"$H:6379\" --block &\n", []),          # one node
    (2, "srun -N1 -n1 -w \"$W\" ray start --address \"$H:6379\" --block &\n", []),
    (2, ("srun -N1 -n1 -w \"$W\" bash -c 'pip install ray && ray start --address "
         "\"$H:6379\"' &\n"), []),
    # the batch shell joins the first node on purpose while a step starts the others
    (3, ("srun -N2 -n2 -x \"$H\" ray start --address \"$H:6379\" --block &\n"
         "ray start --address \"$H:6379\"\n"), []),
    (2, "$(ray start --address \"$H:6379\")\n", []),                  # not the batch shell's
])
def test_agent_only_in_the_batch_shell(nodes, body, lines):
    got = [ln for ln, sev, _ in _found(AGENT.format(nodes=nodes, body=body), "SB205")
           if sev is Severity.ERROR]
    assert got == lines


# -- a task that exports the per-task value itself ------------------------------------------

RANKS = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n"
         "#SBATCH --gpus-per-node=4\nexport RANK=$SLURM_PROCID\n{step}\n")


@pytest.mark.parametrize(("step", "severity"), [
    # the srun-native form SB201's fix writes (held-out RE07): each task exports its own RANK
    ("srun bash -c 'export RANK=$SLURM_PROCID; exec \"$@\"' bash python train.py", Severity.INFO),
    ("srun bash -c 'export RANK=$SLURM_PROCID; python train.py'", Severity.INFO),
    ("srun bash -c 'python train.py; export RANK=$SLURM_PROCID'", Severity.ERROR),  # too late
    ("srun python train.py", Severity.ERROR),
])
def test_batch_value_replaced_in_every_task(step, severity):
    assert [s for _, s, _ in _found(RANKS.format(step=step), "SB301")] == [severity]
