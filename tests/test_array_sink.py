"""SB301 through an array of launcher options (the metamorphic ``launch-array`` rewrite of the
held-out case RD05): the sink of a per-task variable is the option inside the array element,
not the array's name."""
import pytest

import sbatch_lsp.lint  # noqa: F401  (registers every rule)
from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.lint import lint

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"


def _sb301(text: str) -> list[Severity]:
    return [d.severity for d in lint(text, "t.sbatch").diagnostics if d.code == "SB301"]


@pytest.mark.parametrize("elements", [
    "--nnodes=2 --node_rank=$SLURM_PROCID --master_addr=$M --master_port=29500",
    '--nnodes 2 --node_rank "$SLURM_NODEID" --master_addr=$M --master_port=29500',
    "--nnodes=2\n   --node-rank=${SLURM_NODEID}\n   --master-addr=$M --master-port=29500",
])
def test_a_rank_option_in_an_array_is_an_error(elements):
    text = HEAD + f"ARGS=({elements})\nsrun torchrun \"${{ARGS[@]}}\" --nproc_per_node=4 t.py\n"
    assert _sb301(text) == [Severity.ERROR]


@pytest.mark.parametrize(("elements", "program"), [
    ("--seed $SLURM_PROCID", "python train.py"),  # not a rank, device or rendezvous setting
    ("--nnodes=2 --node_rank=$SLURM_NODEID --rdzv_backend=c10d --rdzv_endpoint=$H:29400",
     "torchrun --nproc_per_node=4"),              # c10d ignores the node rank
])
def test_other_sinks_stay_info(elements, program):
    text = HEAD + f"ARGS=({elements})\nsrun {program} \"${{ARGS[@]}}\" t.py\n"
    assert _sb301(text) == [Severity.INFO]


def test_inside_the_task_it_is_not_reported():
    text = HEAD + ("srun bash -c 'ARGS=(--node_rank=$SLURM_NODEID --nnodes=2 --master_addr=$M "
                   "--master_port=1); torchrun \"${ARGS[@]}\" --nproc_per_node=4 t.py'\n")
    assert _sb301(text) == []
