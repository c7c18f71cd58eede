"""The ``slurm`` tier for family 4 (ports): two jobs that the scheduler places on one node and
that bind the same fixed master port fail as SB221 says, and pass after its fix.

The job takes one of node1's two GPUs (the profile says the node has two), so a second copy is
placed beside it. Both run ``torchrun --nproc-per-node=1 --master-port=29400``: each agent's static
rendezvous binds a TCPStore on 29400 (torch/distributed/run.py), and the second one fails with
EADDRINUSE while the first holds it. SB221 warns on the port; its fix (``$((20000 +
SLURM_JOB_ID % 10000))``, below the ephemeral range, SB220 silent) gives each job its own port,
and both jobs complete. (Without ``--master-port`` torch 2.13 picks a free port for a
single-node launch, which is why SB221 does not report a launch without one.)
"""
from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from slurm_cluster import TERMINAL, Cluster  # noqa: E402
from test_slurm import _require_torch, changes, cli, cluster, job_env  # noqa: E402,F401

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(900)]

#: seconds each job holds its port after joining (long enough for the other job to start)
HOLD = 12
#: seconds both jobs together may take; past this they are cut and the test fails
BOUND = 180

BAD = """\
#!/bin/bash
#SBATCH --nodes=1
#SBATCH --nodelist=node1
#SBATCH --ntasks=1
#SBATCH --gpus-per-node=1

torchrun --nproc-per-node=1 --master-port=29400 hold.py
"""

HOLD_PY = f"""\
import os, time
import torch.distributed as dist
dist.init_process_group("gloo")
print(f"JOINED port={{os.environ['MASTER_PORT']}} job={{os.environ['SLURM_JOB_ID']}}", flush=True)
time.sleep({HOLD})
dist.destroy_process_group()
"""

ADDR_IN_USE = re.compile(r"EADDRINUSE|[Aa]ddress already in use")


def run_pair(slurm: Cluster, script: Path, workdir: Path) -> list[tuple[str, str, str]]:
    """Submit ``script`` twice at once; (state, exit code, output) of each job once both end
    (cut with scancel after BOUND seconds)."""
    env = job_env(workdir)
    ids = [slurm.submit(script, workdir, env) for _ in range(2)]
    t0 = time.monotonic()
    states: dict[str, dict] = {}
    while len(states) < 2:
        for job_id in ids:
            info = slurm.job_info(job_id)
            if info.get("JobState") in TERMINAL:
                states[job_id] = info
        if time.monotonic() - t0 > BOUND:
            for job_id in ids:
                slurm.sh("ctl", "scancel", job_id)
            pytest.fail(f"the two jobs did not end within {BOUND} s")
        time.sleep(0.2)
    out = []
    for job_id in ids:
        log = workdir / f"slurm-{job_id}.out"
        out.append((states[job_id]["JobState"], states[job_id].get("ExitCode", "?"),
                    log.read_text(errors="replace") if log.exists() else ""))
    return out


def lint_codes(path: Path) -> list[tuple[str, str]]:
    r = cli("--format", "json", str(path))
    assert r.returncode in (0, 1), r.stderr
    return [(d["code"], d["severity"]) for d in json.loads(r.stdout)]


def test_fixed_port_on_a_shared_node(cluster, tmp_path):  # noqa: F811
    _require_torch()
    work = tmp_path / "sb221"
    work.mkdir()
    (work / ".sbatch-lint.toml").write_text("[profile]\ngpus-per-node = 2\n")
    (work / "hold.py").write_text(HOLD_PY)
    path = work / "job.sbatch"
    path.write_text(BAD)

    # 1. the linter warns: the job takes 1 of the node's 2 GPUs, so another job may share it
    assert ("SB221", "warning") in lint_codes(path)

    # 2. two copies on node1: the second agent cannot bind 29400 while the first holds it
    runs = run_pair(cluster, path, work)
    states = sorted(state for state, _, _ in runs)
    assert states == ["COMPLETED", "FAILED"], [(r[0], r[1], r[2][-1500:]) for r in runs]
    failed = next(out for state, _, out in runs if state == "FAILED")
    passed = next(out for state, _, out in runs if state == "COMPLETED")
    assert ADDR_IN_USE.search(failed), failed[-2000:]
    assert "JOINED port=29400" in passed

    # 3. the fix: a port derived from the job id, below the ephemeral range
    r = cli("--fix", "--unsafe-fixes", str(path))
    assert r.returncode == 0, r.stdout + r.stderr
    fixed = path.read_text()
    assert changes(BAD, fixed) == (
        ["torchrun --nproc-per-node=1 --master-port=29400 hold.py"],
        ["torchrun --nproc-per-node=1 --master-port=$((20000 + SLURM_JOB_ID % 10000)) hold.py"])
    assert not [c for c in lint_codes(path) if c[0] in ("SB220", "SB221")]

    # 4. both copies now complete, each on its own port
    runs = run_pair(cluster, path, work)
    assert [state for state, _, _ in runs] == ["COMPLETED", "COMPLETED"], \
        [(r[0], r[1], r[2][-1500:]) for r in runs]
    ports = {m.group(1) for _, _, out in runs for m in re.finditer(r"JOINED port=(\d+)", out)}
    assert len(ports) == 2 and all(20000 <= int(p) < 30000 for p in ports), ports
