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
- SB211: two background steps under one bare ``wait``; one exits 3 at once, the other (standing
  for a peer blocked in a collective) runs on until the time limit: TIMEOUT. With ``wait -n``,
  the others killed and ``exit`` with its status, the job ends at the first failure: FAILED, 3:0.
- SB214: ``--requeue`` and a ``scontrol requeue`` half-way through the work: the requeued job
  runs the script from its first line and redoes the work from the start; with a marker file
  the step writes and the script reads, the second run resumes after the last finished item.
- SB222 / SB223: ``srun … (exit 3)`` then ``echo`` and ``exit $?``, or only echo footers: the
  job is COMPLETED, 0:0; after the unsafe fixes (the status saved right after the step) FAILED,
  3:0.

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


PEERS = """#!/bin/bash
#SBATCH --ntasks=2
#SBATCH --time=1
srun --ntasks=1 --exact bash -c 'sleep 2; exit 3' &
srun --ntasks=1 --exact sleep 300 &
wait
"""

#: the fix the SB211 page gives: wait for the first step to end, end the others, keep its status
PEERS_FIXED = PEERS.replace("wait\n", 'wait -n\nrc=$?\nkill $(jobs -p) 2>/dev/null\nwait\n'
                            'exit "$rc"\n')


def test_sb211_a_crashed_component_leaves_the_other_running(cluster, tmp_path):  # noqa: F811
    codes = _codes(PEERS)
    assert codes.get("SB211") == "info", codes
    fixed_codes = _codes(PEERS_FIXED)
    assert "SB211" not in fixed_codes and "SB209" not in fixed_codes, fixed_codes
    t0 = time.monotonic()
    job, _ = _run(cluster, tmp_path, "sb211-bad", PEERS)
    assert job.state == "TIMEOUT", (job.state, job.output)  # the survivor ran to the limit
    # (slurmctld keeps start and end times in whole seconds, time_t, and ends a job at its
    # end_time: a job that started late in a second is killed up to a second short of its
    # minute; one CI run measured 59.98 s)
    assert time.monotonic() - t0 >= 59
    t0 = time.monotonic()
    job, _ = _run(cluster, tmp_path, "sb211-fixed", PEERS_FIXED)
    assert (job.state, job.exit_code) == ("FAILED", "3:0"), job.output
    assert time.monotonic() - t0 < 45, "the job did not end at the first failure"


REQUEUE = """#!/bin/bash
#SBATCH --ntasks=1
#SBATCH --requeue
#SBATCH --open-mode=append
srun --ntasks=1 bash -c 'for i in 1 2 3 4; do
  echo "item $i" >> progress.log
  if [ "$i" = 2 ] && [ ! -e requeued_once ]; then
    touch requeued_once; scontrol requeue "$SLURM_JOB_ID"; sleep 120
  fi
done'
"""

#: the same work resuming after the last item a marker file records
REQUEUE_RESUMED = """#!/bin/bash
#SBATCH --ntasks=1
#SBATCH --requeue
#SBATCH --open-mode=append
FIRST=1
if [ -e checkpoint.txt ]; then FIRST=$(( $(cat checkpoint.txt) + 1 )); fi
srun --ntasks=1 bash -c 'for i in $(seq "$0" 4); do
  echo "item $i" >> progress.log; echo "$i" > checkpoint.txt
  if [ "$i" = 2 ] && [ ! -e requeued_once ]; then
    touch requeued_once; scontrol requeue "$SLURM_JOB_ID"; sleep 120
  fi
done' "$FIRST"
"""

#: a requeued job waits out the credential lifetime (AuthInfo cred_expire, 120 s) before it
#: starts again (slurm.conf(5)), then for the scheduler
REQUEUE_BOUND = 420


def test_sb214_requeue_restarts_from_scratch(cluster, tmp_path):  # noqa: F811
    assert _codes(REQUEUE).get("SB214") == "info"
    assert "SB214" not in _codes(REQUEUE_RESUMED)
    for name, text, items in (("sb214-bad", REQUEUE, ["1", "2", "1", "2", "3", "4"]),
                              ("sb214-fixed", REQUEUE_RESUMED, ["1", "2", "3", "4"])):
        work = tmp_path / name
        work.mkdir(parents=True)
        script = work / "job.sbatch"
        script.write_text(text)
        job = cluster.run(script, work, REQUEUE_BOUND)
        assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), (job.state, job.output)
        assert (work / "requeued_once").exists(), job.output
        done = (work / "progress.log").read_text().split()
        assert done[1::2] == items, done


FOOTER = """#!/bin/bash
#SBATCH --ntasks=1
srun --ntasks=1 bash -c 'echo training; exit 3'
echo "----------------------------------"
exit $?
"""

FOOTERS_ONLY = """#!/bin/bash
#SBATCH --ntasks=1
srun --ntasks=1 bash -c 'echo training; exit 3'
echo "----------------------------------"
echo "done at $(date)"
"""


def test_sb222_sb223_status_lost_after_the_step(cluster, tmp_path):  # noqa: F811
    assert _codes(FOOTER).get("SB222") == "warning"
    assert _codes(FOOTERS_ONLY).get("SB223") == "warning"
    for name, text, code in (("sb222", FOOTER, "SB222"), ("sb223", FOOTERS_ONLY, "SB223")):
        job, _ = _run(cluster, tmp_path, f"{name}-bad", text)
        assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output
        job, _ = _run(cluster, tmp_path, f"{name}-fixed", _fixed(text, code))
        assert (job.state, job.exit_code) == ("FAILED", "3:0"), job.output
