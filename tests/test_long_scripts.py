"""Scripts far longer than real ones lint without an internal error and find what short ones do.
A blow-up (exponential expansion, a cycle) fails by the timeout below, not by hanging CI; the
bound is far above a normal run (under 10 s on a shared CI core), so it measures no speed."""
import pytest

from sbatch_lsp.lint import lint

pytestmark = pytest.mark.timeout(120)


def _codes(text):
    return [d.code for d in lint(text).diagnostics]


def test_a_long_chain_of_assignments_carries_a_per_task_variable_to_srun():
    # V0 holds the batch shell's $SLURM_PROCID; 3,000 assignments later srun receives it
    lines = ["#!/bin/bash", "#SBATCH --nodes=2", "V0=$SLURM_PROCID"]
    lines += [f"V{i}=$V{i - 1}" for i in range(1, 3000)]
    lines += ["srun python train.py --rank $V2999"]
    codes = _codes("\n".join(lines) + "\n")
    assert "SB003" not in codes
    assert "SB301" in codes


def test_value_at_reads_the_latest_assignment_before_the_point_among_thousands():
    lines = ["#!/bin/bash", "#SBATCH --nodes=2"]
    lines += [f"A=plain{i}" for i in range(2000)]
    lines += ["A=$SLURM_NODEID", "srun python train.py --node $A"]
    lines += [f"A=plain{i}" for i in range(2000)]
    text = "\n".join(lines) + "\n"
    result = lint(text)
    [hit] = [d for d in result.diagnostics if d.code == "SB301"]
    assert text[hit.start:hit.end] == "$SLURM_NODEID"


def test_values_that_double_at_each_level_stay_opaque_instead_of_exploding():
    lines = ["#!/bin/bash", "#SBATCH --nodes=2", "V0=x"]
    lines += [f'V{i}="$V{i - 1} $V{i - 1}"' for i in range(1, 60)]
    lines += ['srun bash -c "echo $V59"']
    assert "SB003" not in _codes("\n".join(lines) + "\n")
