"""A dropped lint is freed by reference counting alone (sbatch_lsp/backref.py): its shell model
and facts form no reference cycle, so the language server's lint thread has no full garbage
collection to run between keystrokes (server/documents.py)."""
import gc
import weakref

from sbatch_lsp.facts.launches import launch_specs
from sbatch_lsp.facts.resources import gpu_resources
from sbatch_lsp.facts.steps import facts_of
from sbatch_lsp.lint import lint

#: functions (one called twice: per-call copies of its body), prefix and bare assignments,
#: nested command strings, a word-split launcher, a container step, GPUs, a here-document run
SCRIPT = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-node=4
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
PORT=29500
LAUNCHER="torchrun --nnodes=2 --nproc-per-node=4"
run() { OMP_NUM_THREADS=2 srun "$@"; }
stage() { local out=$1; X=1 srun --ntasks=1 cp data "$1"; }
run python prepare.py
run python check.py
stage /tmp/a
stage /tmp/b
srun --container-image=nvcr.io/nvidia/pytorch:24.01-py3 bash -c 'echo $SLURM_PROCID; python t.py'
srun $LAUNCHER train.py --port $PORT
cat > job.sh <<END
hostname
END
bash job.sh
NCCL_DEBUG=INFO srun python -c 'import torch'
"""


def _lint_and_read():
    result = lint(SCRIPT, "job.sbatch")
    job = result.job
    for sf in facts_of(job).steps:
        dict(sf.env)  # the lazily computed parts too
    assert gpu_resources(job).uses is not None
    launch_specs(job)
    return result


def test_a_dropped_lint_leaves_nothing_to_the_cyclic_collector():
    _lint_and_read()  # warm the caches
    gc.collect()
    gc.disable()
    try:
        result = _lint_and_read()
        assert result.diagnostics and len(facts_of(result.job).steps) >= 5
        # per-call copies of the function bodies, whose originals the prefix assignments name
        assert sum(c.call is not None for c in result.job.script.commands) == 6
        script, job = weakref.ref(result.job.script), weakref.ref(result.job)
        del result
        assert script() is None and job() is None  # freed at once, by reference counting
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_recording_a_chunk_makes_no_cycle():
    """The control facts' chunk memo (facts/control.py chunk_events) records each new chunk's
    walk: a document just opened records thousands, which the collector had to free."""
    from sbatch_lsp.facts.control import chunk_events

    chunk = 'if [ "$SLURM_PROCID" -eq 0 ]; then\n  srun python a.py &\nfi\n'
    chunk_events.__wrapped__(chunk)
    gc.collect()
    gc.disable()
    try:
        assert chunk_events.__wrapped__(chunk) is not None
        assert gc.collect() == 0
    finally:
        gc.enable()
