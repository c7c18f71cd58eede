"""The mechanisms the held-out cases RE01-RE14 showed missing, on shapes other than the cases':

- a child shell (``srun bash -c '$LAUNCHER …'``) inherits the batch shell's exported values, so
  a launcher kept in an exported variable is found in the tasks (RE05, RE08);
- a finding on a launcher option whose value is written elsewhere also points at the option
  (RE04, RE08);
- fairseq's/ParlAI's ``--distributed-world-size`` against the step's task count (RE01);
- Megatron-LM's hidden size % attention heads without ``--kv-channels`` (RE05);
- a per-node agent (Ray/Dask worker) that only the batch shell starts (RE03).
"""
import sbatch_lsp.lint  # noqa: F401  (registers every rule)
from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.lint import lint


def _found(text: str, code: str) -> list[tuple[int, Severity, list[int]]]:
    r = lint(text, "t.sbatch")
    return [(r.source.line_of(d.start) + 1, d.severity,
             sorted(r.source.line_of(x.start) + 1 for x in d.related))
            for d in r.diagnostics if d.code == code]


# -- the option word of a value written elsewhere -----------------------------------------------

def test_gpu_count_finding_points_at_the_option_too():
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
            "#SBATCH --gres=gpu:4\nGPUS=8\n"
            "LAUNCHER=\"torchrun --nnodes 2 --rdzv_backend c10d --rdzv_endpoint h:1 \\\n"
            "  --nproc_per_node $GPUS\"\nsrun bash -c \"$LAUNCHER train.py\"\n")
    assert _found(text, "SB204") == [(5, Severity.WARNING, [4, 7])]

