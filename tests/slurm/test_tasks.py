"""The ``slurm`` tier for the task rules (issue 13 families 2, 5 and 7, and SB106's
``--gpus-per-task`` arithmetic): on the real two-node Slurm 22.05 each bad script behaves as
its rule says, and the fixed script does not.

- SB215: ``--nodes=2 --ntasks=3 --ntasks-per-node=2`` runs 3 tasks, not 2 on each node;
  ``--nodes=2 --ntasks=1`` gets one node. With the counts made to agree, the layout is the one
  the directives spell.
- SB113 / SB218: two tasks of an array (one at a time, ``%1``, so the order is fixed) with the
  log ``%A`` alone and a ``tee`` file named by ``$SLURM_ARRAY_JOB_ID`` alone: the second task
  truncates both, the first task's lines are gone; with the task id each task keeps its own.
- SB217's mechanism (no CUDA here, so not the "invalid device ordinal" itself):
  ``--gpus-per-task=1`` with two tasks on a node gives each task one entry in
  ``CUDA_VISIBLE_DEVICES``, so a device index of 1 names nothing; with ``--gpu-bind=none`` no
  task is narrowed to one device (22.05 leaves ``CUDA_VISIBLE_DEVICES`` unset then).

- SB218 (redirections): two array tasks writing ``> "redir-${SLURM_ARRAY_JOB_ID}.txt"`` and
  ``> redir-%A.txt``: one file each, holding only the second task's line (bash never expands
  ``%A``: the file is literally ``redir-%A.txt``); with the task id each task keeps its own.
- SB224: ``--array`` indices against the cluster's MaxArraySize (read from ``scontrol show
  config``, the default 1001 here): sbatch refuses exactly the index lists SB224 reports as
  errors with that profile ("Invalid job array specification").
- SB106: ``--gpus-per-task`` in eleven directive sets; sbatch refuses exactly those SB106
  reports (no task count it can derive: a node range, ``--cpus-per-task`` without
  ``--ntasks-per-node``, no node or per-node count).

Each scenario also lints the scripts: the bad one has the finding, the fixed one has none of
the rule's findings. Run only this file (``pytest tests/slurm/test_tasks.py``).
"""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from slurm_cluster import ClusterError  # noqa: E402
from test_slurm import RUN_BOUND, cluster  # noqa: E402,F401  (the session's cluster fixture)

from sbatch_lsp.lint import lint  # noqa: E402

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(900)]

PLACE = "srun bash -c 'echo PLACE $SLURMD_NODENAME $SLURM_PROCID'\n"


def _codes(text: str, code: str) -> list[str]:
    return [d.message for d in lint(text, "job.sbatch").diagnostics if d.code == code]


def _run(cluster, text: str, workdir: Path):  # noqa: F811
    workdir.mkdir(parents=True, exist_ok=True)
    script = workdir / "job.sbatch"
    script.write_text(text)
    job = cluster.run(script, workdir, RUN_BOUND)
    assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output
    return job


def _per_node(output: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node, _ in re.findall(r"^PLACE (\S+) (\d+)$", output, re.M):
        counts[node] = counts.get(node, 0) + 1
    return counts


def test_sb215_ntasks_below_layout(cluster, tmp_path):  # noqa: F811
    """--ntasks wins over nodes × --ntasks-per-node, which becomes a maximum."""
    bad = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks=3\n#SBATCH --ntasks-per-node=2\n"
           "echo NTASKS=$SLURM_NTASKS\n" + PLACE)
    fixed = bad.replace("--ntasks=3", "--ntasks=4")
    assert _codes(bad, "SB215") and not _codes(fixed, "SB215")
    job = _run(cluster, bad, tmp_path / "bad")
    assert "NTASKS=3" in job.output
    assert sorted(_per_node(job.output).values()) == [1, 2], job.output  # not 2 + 2
    job = _run(cluster, fixed, tmp_path / "fixed")
    assert sorted(_per_node(job.output).values()) == [2, 2], job.output


def test_sb215_ntasks_below_nodes_shrinks_the_job(cluster, tmp_path):  # noqa: F811
    """sbatch: "can't run 1 processes on 2 nodes, setting nnodes to 1"."""
    bad = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks=1\n"
           "echo NODES=$SLURM_JOB_NUM_NODES\n" + PLACE)
    fixed = bad.replace("--ntasks=1", "--ntasks=2")
    assert _codes(bad, "SB215") and not _codes(fixed, "SB215")
    assert "NODES=1" in _run(cluster, bad, tmp_path / "bad").output
    job = _run(cluster, fixed, tmp_path / "fixed")
    assert "NODES=2" in job.output and sorted(_per_node(job.output).values()) == [1, 1]


def _run_array(cluster, text: str, workdir: Path) -> str:  # noqa: F811
    """Submit an array script with its own --output (Cluster.run imposes one), wait until
    every task has ended; return the array job id."""
    workdir.mkdir(parents=True, exist_ok=True)
    script = workdir / "job.sbatch"
    script.write_text(text)
    r = cluster.sh("ctl", "sbatch", "--parsable", f"--chdir={workdir}", str(script))
    assert r.returncode == 0, r.stderr
    job_id = r.stdout.strip().split(";")[0]
    deadline = time.monotonic() + RUN_BOUND
    while cluster.sh("ctl", "squeue", "-h", "-r", "-j", job_id, check=False).stdout.strip():
        if time.monotonic() > deadline:
            cluster.sh("ctl", "scancel", job_id, check=False)
            raise ClusterError(f"array {job_id} still running after {RUN_BOUND} s")
        time.sleep(0.5)
    return job_id


ARRAY = ("#!/bin/bash\n#SBATCH --array=0-1%1\n#SBATCH --output=log-%A.out\n"
         "echo \"log of task $SLURM_ARRAY_TASK_ID\"\n"
         "echo \"result of task $SLURM_ARRAY_TASK_ID\" | tee \"result-${SLURM_ARRAY_JOB_ID}.txt\"\n")


def test_sb113_sb218_array_tasks_share_files(cluster, tmp_path):  # noqa: F811
    """Two array tasks, one after the other: the second truncates the files the first wrote."""
    fixed = ARRAY.replace("log-%A.out", "log-%A_%a.out").replace(
        "result-${SLURM_ARRAY_JOB_ID}.txt", "result-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.txt")
    assert any("array" in m for m in _codes(ARRAY, "SB113")) and _codes(ARRAY, "SB218")
    assert not _codes(fixed, "SB113") and not _codes(fixed, "SB218")
    work = tmp_path / "bad"
    job_id = _run_array(cluster, ARRAY, work)
    log = (work / f"log-{job_id}.out").read_text()
    result = (work / f"result-{job_id}.txt").read_text()
    assert "log of task 1" in log and "log of task 0" not in log, log
    assert result.strip() == "result of task 1", result
    work = tmp_path / "fixed"
    job_id = _run_array(cluster, fixed, work)
    for k in (0, 1):
        assert f"log of task {k}" in (work / f"log-{job_id}_{k}.out").read_text()
        assert (work / f"result-{job_id}_{k}.txt").read_text().strip() == f"result of task {k}"


REDIRECT_ARRAY = ("#!/bin/bash\n#SBATCH --array=0-1%1\n#SBATCH --output=log-%A_%a.out\n"
                  "echo \"task $SLURM_ARRAY_TASK_ID\" > \"redir-${SLURM_ARRAY_JOB_ID}.txt\"\n"
                  "echo \"task $SLURM_ARRAY_TASK_ID\" > redir-%A.txt\n")


def test_sb218_array_tasks_share_redirected_files(cluster, tmp_path):  # noqa: F811
    """``>`` truncates: the second task's redirection replaces the first task's file."""
    found = [d for d in lint(REDIRECT_ARRAY, "job.sbatch").diagnostics if d.code == "SB218"]
    assert [d.severity.label for d in found] == ["warning", "warning"]
    fixed = REDIRECT_ARRAY.replace("redir-${SLURM_ARRAY_JOB_ID}.txt",
                                   "redir-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.txt")
    fixed = fixed.replace("redir-%A.txt", "redir2-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.txt")
    assert not _codes(fixed, "SB218")
    work = tmp_path / "bad"
    job_id = _run_array(cluster, REDIRECT_ARRAY, work)
    assert (work / f"redir-{job_id}.txt").read_text() == "task 1\n"
    assert (work / "redir-%A.txt").read_text() == "task 1\n"  # the literal name, shared
    work = tmp_path / "fixed"
    job_id = _run_array(cluster, fixed, work)
    for k in (0, 1):
        assert (work / f"redir-{job_id}_{k}.txt").read_text() == f"task {k}\n"
        assert (work / f"redir2-{job_id}_{k}.txt").read_text() == f"task {k}\n"


ARRAY_INDICES = ("0-1000", "0-1001", "1000-1001", "1-2000%40", "0-1200:4", "0-1203:4",
                 "5,1001", "1-10,998-1000:2")


def test_sb224_array_index_over_max_array_size(cluster, tmp_path):  # noqa: F811
    """SB224 (with the profile's max-array-size read from this cluster) reports exactly the
    --array values sbatch refuses."""
    from sbatch_lsp.config import from_table
    config = cluster.sh("ctl", "scontrol", "show", "config").stdout
    limit = int(re.search(r"^MaxArraySize\s*=\s*(\d+)", config, re.M).group(1))
    assert limit == 1001  # the tier's slurm.conf leaves Slurm's default
    profile = from_table({"profile": {"max-array-size": limit}}, "cluster")
    tmp_path.mkdir(parents=True, exist_ok=True)
    for k, value in enumerate(ARRAY_INDICES):
        text = f"#!/bin/bash\n#SBATCH --array={value}\n#SBATCH --output=a-%A_%a.out\nhostname\n"
        flagged = [d.severity.label for d in lint(text, "job.sbatch", profile).diagnostics
                   if d.code == "SB224"]
        script = tmp_path / f"arr{k}.sbatch"
        script.write_text(text)
        r = cluster.sh("ctl", "sbatch", "--parsable", "--hold", f"--chdir={tmp_path}",
                       str(script), check=False)
        if r.returncode == 0:
            cluster.sh("ctl", "scancel", r.stdout.strip().split(";")[0], check=False)
        else:
            assert "Invalid job array specification" in r.stderr, (value, r.stderr)
        assert flagged == (["error"] if r.returncode != 0 else []), (value, r.stderr)


def test_sb217_gpus_per_task_binds_one_device(cluster, tmp_path):  # noqa: F811
    """--gpus-per-task=1 with two tasks on a node: each task's CUDA_VISIBLE_DEVICES holds one
    device (ordinal 0 only), so the task with SLURM_LOCALID=1 selecting cuda:1 names nothing;
    with --gpu-bind=none no task is narrowed to one device."""
    bad = ("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=2\n"
           "#SBATCH --gpus-per-task=1\n"
           "srun bash -c 'echo BIND $SLURM_LOCALID [${CUDA_VISIBLE_DEVICES-unset}] "
           "[$SLURM_STEP_GPUS] --device cuda:$SLURM_LOCALID'\n")
    fixed = bad.replace("srun bash", "srun --gpu-bind=none bash")
    assert _codes(bad, "SB217") and not _codes(fixed, "SB217")
    pattern = r"^BIND (\d) \[([^\]]*)\] \[([^\]]*)\]"
    seen = re.findall(pattern, _run(cluster, bad, tmp_path / "bad").output, re.M)
    assert sorted(k for k, _, _ in seen) == ["0", "1"], seen
    assert all(len(devices.split(",")) == 1 for _, devices, _ in seen), seen
    # unbound: no task is narrowed to one device (on this 22.05 cluster CUDA_VISIBLE_DEVICES is
    # then left unset, which hides nothing of what the step holds)
    seen = re.findall(pattern, _run(cluster, fixed, tmp_path / "fixed").output, re.M)
    assert sorted(k for k, _, _ in seen) == ["0", "1"], seen
    assert all(d == "unset" or len(d.split(",")) == 2 for _, d, _ in seen), seen


#: --gpus-per-task with each way of giving (or not giving) a task count (SB106)
GPUS_PER_TASK_FORMS = (
    ("--gpus-per-task=1",), ("--nodes=1-2", "--gpus-per-task=1"),
    ("--nodes=2", "--cpus-per-task=2", "--gpus-per-task=1"), ("--nodes=2", "--gpus-per-task=1"),
    ("--nodes=1-2", "--ntasks=2", "--gpus-per-task=1"),
    ("--nodes=2", "--ntasks-per-node=2", "--cpus-per-task=2", "--gpus-per-task=1"),
    ("--nodes=1-2", "--ntasks-per-node=1", "--gpus-per-task=1"),
    ("--ntasks-per-node=2", "--gpus-per-task=1"),
    ("--nodes=2", "--cpus-per-task=2", "--gpus-per-task=1", "--gpus=2"),
    ("--nodes=1", "--cpus-per-task=2", "--gpus-per-task=1"),
    ("--cpus-per-task=2", "--gpus-per-task=1"),
)


def test_sb106_gpus_per_task_needs_a_task_count(cluster, tmp_path):  # noqa: F811
    """SB106 reports --gpus-per-task exactly for the directive sets sbatch refuses ("Failed to
    validate job spec. --gpus-per-task used without either --gpus or -n/--ntasks is not
    allowed.")."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    for k, form in enumerate(GPUS_PER_TASK_FORMS):
        text = "#!/bin/bash\n" + "".join(f"#SBATCH {o}\n" for o in form) + "srun hostname\n"
        flagged = any("--gpus-per-task" in d.message for d in
                      lint(text, "job.sbatch").diagnostics if d.code == "SB106")  # info too
        script = tmp_path / f"gpt{k}.sbatch"
        script.write_text(text)
        r = cluster.sh("ctl", "sbatch", "--parsable", "--hold", f"--chdir={tmp_path}",
                       f"--output={tmp_path}/gpt-%j.out", str(script), check=False)
        if r.returncode == 0:
            cluster.sh("ctl", "scancel", r.stdout.strip().split(";")[0], check=False)
        else:
            assert "--gpus-per-task used without" in r.stderr, (form, r.stderr)
        assert flagged == (r.returncode != 0), (form, r.stderr)
