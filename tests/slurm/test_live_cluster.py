"""``sbatch-lint --live`` against the real controller of the slurm tier (issue 15 item 3).

Four answers of Slurm 22.05's ``sbatch --test-only``, each turned into one SB790 finding at the
directive it is about: the job is accepted (info, the controller's start line); an unknown
partition (error at ``--partition``); a time limit above the ``short`` partition's ``MaxTime`` of
10 minutes with ``EnforcePartLimits=ALL`` (error at ``--time``); a site ``job_submit`` filter's
refusal in its own words (error at the option it names). Each script's body holds a
token that must appear in no output, and the job queue stays empty: nothing was submitted.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from test_slurm import cluster  # noqa: E402,F401  (the session's cluster fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

#: a made-up token of a known format: it must reach neither the controller nor any output
TOKEN = "hf_" + "Q7vXk2LmN9pR4sT6uW8yZ1aB3cD5eF7gH9"
BODY = f"export HF_TOKEN={TOKEN}\nsrun hostname\n"

SCENARIOS = {
    "accepted": ("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --time=00:05:00\n", "info", 1,
                 "would accept", "to start at"),
    "unknown-partition": ("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --partition=gpu-nope\n",
                          "error", 3, "refuses", "Invalid partition name specified"),
    "time-above-maxtime": ("#!/bin/bash\n#SBATCH --partition=short\n#SBATCH --time=01:00:00\n",
                           "error", 3, "refuses", "Requested time limit is invalid"),
    # the cluster's job_submit/lua filter refuses this marker with its own words, which name
    # the option: the finding is at that directive
    "site-filter": ("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --comment=sbl-live-filter\n",
                    "error", 3, "refuses", "site policy: --comment=sbl-live-filter is refused"),
}


def _live(cluster, script: Path):  # noqa: F811
    """``sbatch-lint --live --format json`` run on the controller host (where sbatch reaches
    slurmctld through SLURM_CONF)."""
    return cluster.sh("ctl", sys.executable, "-m", "sbatch_lsp", "--live", "--no-cache",
                      "--format", "json", "--select", "SB790", str(script), check=False,
                      timeout=120)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_live_answer(cluster, tmp_path, name):  # noqa: F811
    head, severity, line, verb, answer = SCENARIOS[name]
    script = tmp_path / f"{name}.sbatch"
    script.write_text(head + BODY)
    run = _live(cluster, script)
    assert run.returncode in (0, 1), run.stderr
    found = json.loads(run.stdout)
    assert [f["code"] for f in found] == ["SB790"], found
    f = found[0]
    assert (f["severity"], f["line"]) == (severity, line), f
    assert verb in f["message"] and answer in f["message"], f["message"]
    assert run.returncode == (1 if severity == "error" else 0)
    assert TOKEN not in run.stdout + run.stderr
    queue = cluster.sh("ctl", "squeue", "-h", "-o", "%i %j", check=False)
    assert name not in queue.stdout, f"a job was queued: {queue.stdout}"
