"""The ``slurm`` tier for how jobs end and preemption (SB208–SB213): each bad script fails on the
real two-node Slurm 22.05 the way its rule says, and the script the rule's fix produces works.

- SB208: a background step nobody waits for is killed when the script ends; the job still ends
  COMPLETED, 0:0, and the step's work never finished.
- SB209: a bare ``wait`` after a failing background step: the job ends COMPLETED, 0:0; the fix
  (each PID waited for) makes it FAILED with the step's status.
- SB210: ``srun … | tee`` as the last command: COMPLETED, 0:0 although the step exited 3; with
  ``set -o pipefail`` the job is FAILED, 3:0.
- SB212: ``--signal=USR1@T`` without ``B:``: the step receives SIGUSR1, the batch shell's trap
  never runs; with ``B:`` the trap runs (and the step is not signalled).
- SB213: ``--signal=B:USR1@T`` with the work in a foreground ``srun``: the trap runs only after the
  step ends; with ``srun … &`` and ``wait`` it runs as soon as the signal arrives.

Slurm sends the ``--signal`` warning up to 60 s before the time given (sbatch(1)); the jobs use
``--time=2`` and ``@90`` so the signal arrives within the first minute. Run this file alone
(``pytest tests/slurm/test_lifecycle.py``): it builds its own cluster (see test_slurm.py).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from test_slurm import cluster  # noqa: E402,F401  (the session's cluster fixture)

from sbatch_lsp.fixer import fix_text  # noqa: E402
from sbatch_lsp.lint import lint  # noqa: E402

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(1200)]
#: a job that must finish gets this long before scancel (the signal jobs run about 60-100 s)
RUN_BOUND = 200


def _codes(text: str) -> dict[str, str]:
    return {d.code: d.severity.name.lower() for d in lint(text, "job.sbatch").diagnostics}


def _fixed(text: str, code: str) -> str:
    out = fix_text(text, "job.sbatch", unsafe=True, codes={code})
    assert out.text != text, f"{code} offered no fix"
    assert code not in _codes(out.text), out.text
    return out.text


def _run(cluster, tmp_path: Path, name: str, text: str):  # noqa: F811
    work = tmp_path / name
    work.mkdir(parents=True)
    script = work / "job.sbatch"
    script.write_text(text)
    return cluster.run(script, work, RUN_BOUND), work


BACKGROUND = """#!/bin/bash
#SBATCH --ntasks=1
srun --ntasks=1 bash -c 'sleep 4; touch step_done' &
echo started
"""


def test_sb208_background_step_is_killed(cluster, tmp_path):  # noqa: F811
    assert _codes(BACKGROUND)["SB208"] == "error"
    job, work = _run(cluster, tmp_path, "sb208-bad", BACKGROUND)
    time.sleep(6)  # longer than the step would have taken
    assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output
    assert not (work / "step_done").exists(), "the background step finished after all"
    job, work = _run(cluster, tmp_path, "sb208-fixed", _fixed(BACKGROUND, "SB208"))
    assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output
    assert (work / "step_done").exists()


BARE_WAIT = """#!/bin/bash
#SBATCH --ntasks=2
set -e
srun --ntasks=1 --exact bash -c 'sleep 1; exit 3' &
srun --ntasks=1 --exact bash -c 'sleep 2' &
wait
"""


def test_sb209_bare_wait_hides_a_failed_step(cluster, tmp_path):  # noqa: F811
    assert _codes(BARE_WAIT)["SB209"] == "warning"
    job, _ = _run(cluster, tmp_path, "sb209-bad", BARE_WAIT)
    assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output
    job, _ = _run(cluster, tmp_path, "sb209-fixed", _fixed(BARE_WAIT, "SB209"))
    assert (job.state, job.exit_code) == ("FAILED", "3:0"), job.output


TEE = """#!/bin/bash
#SBATCH --ntasks=1
srun --ntasks=1 bash -c 'echo training; exit 3' 2>&1 | tee train.log
"""


def test_sb210_tee_hides_the_step_status(cluster, tmp_path):  # noqa: F811
    assert _codes(TEE)["SB210"] == "warning"
    job, work = _run(cluster, tmp_path, "sb210-bad", TEE)
    assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output
    assert "training" in (work / "train.log").read_text()
    job, _ = _run(cluster, tmp_path, "sb210-fixed", _fixed(TEE, "SB210"))
    assert (job.state, job.exit_code) == ("FAILED", "3:0"), job.output


SIGNAL_STEPS = """#!/bin/bash
#SBATCH --ntasks=1
#SBATCH --time=2
#SBATCH --signal=USR1@90
trap 'touch batch_trap; exit 0' USR1
srun --ntasks=1 bash -c 'trap "touch step_got_usr1; exit 0" USR1; for i in $(seq 100); do sleep 1; done' &
wait
"""


def test_sb212_signal_without_b_misses_the_batch_trap(cluster, tmp_path):  # noqa: F811
    assert _codes(SIGNAL_STEPS)["SB212"] == "error"
    job, work = _run(cluster, tmp_path, "sb212-bad", SIGNAL_STEPS)
    # the step got the signal and ended; the batch shell's trap never ran
    assert (work / "step_got_usr1").exists(), job.output
    assert not (work / "batch_trap").exists(), job.output
    assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output
    job, work = _run(cluster, tmp_path, "sb212-fixed", _fixed(SIGNAL_STEPS, "SB212"))
    assert (work / "batch_trap").exists(), job.output
    assert not (work / "step_got_usr1").exists(), "with B: only the batch shell is signalled"


FOREGROUND = """#!/bin/bash
#SBATCH --ntasks=1
#SBATCH --time=2
#SBATCH --signal=B:USR1@90
date +%s > started
trap 'date +%s > trapped; exit 0' USR1
srun --ntasks=1 sleep 75
"""


def test_sb213_foreground_step_defers_the_trap(cluster, tmp_path):  # noqa: F811
    assert _codes(FOREGROUND)["SB213"] == "warning"
    job, work = _run(cluster, tmp_path, "sb213-bad", FOREGROUND)
    started = int((work / "started").read_text())
    # the signal came within the first minute, but the trap ran only when the step returned
    assert int((work / "trapped").read_text()) - started >= 74, job.output
    job, work = _run(cluster, tmp_path, "sb213-fixed", _fixed(FOREGROUND, "SB213"))
    started = int((work / "started").read_text())
    assert int((work / "trapped").read_text()) - started <= 62, job.output
