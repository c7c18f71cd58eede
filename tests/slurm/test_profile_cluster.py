"""The ``slurm`` tier for site profiles (issue 15): ``sbatch-lint profile import --from-cluster`` on
the running two-node Slurm 22.05.8 cluster, then scripts that breach its limits are flagged, and
the real controller does what each finding says: an unknown partition, more GPUs than a node
has and an unknown feature are refused with the quoted text; a time or node count over the
partition's limit is refused with the quoted text where the cluster enforces partition limits
at submission (EnforcePartLimits=ALL or ANY, as the tier's slurm.conf sets it), and accepted
and left pending with the quoted reason where it does not (NO: the finding says which, from the
imported profile). A fitting script is accepted and raises nothing.

A partition ``site1`` (node2 only, MaxTime=00:10:00, MaxNodes=1) is made with ``scontrol
create`` and node1 gets the features ``ib,h100`` (``scontrol update``) for the test; both are
undone after it. A feature no node has is refused with "Invalid feature specification", one
only another partition's nodes have with "Requested node configuration is not available".
"""
from __future__ import annotations

import sys
import time
import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from test_slurm import cluster  # noqa: E402,F401  (the session's cluster fixture)

from sbatch_lsp.config import from_table  # noqa: E402
from sbatch_lsp.diagnostics import Severity  # noqa: E402
from sbatch_lsp.lint import lint  # noqa: E402

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(600)]

SCRIPTS = {
    "fits": "#!/bin/bash\n#SBATCH --partition=site1\n#SBATCH --time=5\n#SBATCH --nodes=1\nsleep 1\n",
    "time": "#!/bin/bash\n#SBATCH --partition=site1\n#SBATCH --time=20\nsleep 1\n",
    "nodes": "#!/bin/bash\n#SBATCH --partition=site1\n#SBATCH --nodes=2\nsleep 1\n",
    "partition": "#!/bin/bash\n#SBATCH --partition=shrot\nsleep 1\n",
    "gpus": "#!/bin/bash\n#SBATCH --partition=debug\n#SBATCH --gpus-per-node=4\nsleep 1\n",
    "feature": "#!/bin/bash\n#SBATCH --partition=debug\n#SBATCH -C \"ib&nvlink\"\nsleep 1\n",
    "feature-elsewhere": "#!/bin/bash\n#SBATCH --partition=site1\n#SBATCH --constraint=h100\n"
                         "sleep 1\n",
}
#: script -> (the code that must flag it, the pending reason, or None when sbatch refuses it)
EXPECTED = {
    "time": ("SB702", "PartitionTimeLimit"),
    "nodes": ("SB703", "PartitionNodeLimit"),
    "partition": ("SB701", None),
    "gpus": ("SB704", None),
    "feature": ("SB707", None),
    "feature-elsewhere": ("SB707", None),
}
PENDING_BOUND_S = 20


@pytest.fixture(scope="module")
def site(cluster):  # noqa: F811
    cluster.sh("ctl", "scontrol", "create", "PartitionName=site1", "Nodes=node2",
               "MaxTime=00:10:00", "MaxNodes=1", "State=UP")
    cluster.sh("ctl", "scontrol", "update", "NodeName=node1", "AvailableFeatures=ib,h100",
               "ActiveFeatures=ib,h100")
    try:
        r = cluster.sh("ctl", sys.executable, "-m", "sbatch_lsp", "profile", "import",
                       "--from-cluster", check=False, timeout=120)
        assert r.returncode == 0, r.stderr
        yield r.stdout
    finally:
        cluster.sh("ctl", "scontrol", "delete", "PartitionName=site1", check=False)
        cluster.sh("ctl", "scontrol", "update", "NodeName=node1", "AvailableFeatures=",
                   "ActiveFeatures=", check=False)


def test_from_cluster_describes_the_cluster(site):
    prof = tomllib.loads(site)["profile"]
    assert prof["slurm-version"] == "22.05" and prof["enforce-part-limits"] in ("ALL", "ANY", "NO")
    assert prof["pyxis"] is False
    site1, debug = prof["partitions"]["site1"], prof["partitions"]["debug"]
    assert (site1["max-time"], site1["max-nodes"], site1["total-nodes"]) == ("00:10:00", 1, 1)
    assert debug["default"] is True and debug["total-nodes"] == 2
    assert (debug["gpus-per-node"], debug["gpu-types"], debug["mem-per-node"]) == (2, [], 1000)
    assert debug["features"] == ["h100", "ib"] and site1["features"] == []


def _submit(cluster, tmp_path: Path, name: str, *extra: str):  # noqa: F811
    script = tmp_path / f"{name}.sbatch"
    script.write_text(SCRIPTS[name])
    return cluster.sh("ctl", "sbatch", "--parsable", f"--chdir={tmp_path}",
                      f"--output={tmp_path}/%j.out", *extra, str(script), check=False)


def _reason(cluster, job_id: str, want: str) -> str:  # noqa: F811
    """The job's pending reason once it is ``want`` (or the last one seen after the bound)."""
    deadline = time.monotonic() + PENDING_BOUND_S
    reason = ""
    while time.monotonic() < deadline:
        reason = cluster.sh("ctl", "squeue", "-h", "-j", job_id, "-o", "%T %r").stdout.strip()
        if reason == f"PENDING {want}":
            break
        time.sleep(0.5)
    return reason


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_breach_is_flagged_and_the_controller_agrees(cluster, site, tmp_path, name):  # noqa: F811
    code, reason = EXPECTED[name]
    config = from_table(tomllib.loads(site), "the imported profile")
    found = [d for d in lint(SCRIPTS[name], f"{name}.sbatch", config).diagnostics
             if d.code == code]
    assert [d.severity for d in found] == [Severity.ERROR], found
    enforced = config.profile.enforce_part_limits in ("ALL", "ANY")
    if reason is None or enforced:  # the finding says sbatch refuses it: it does, as quoted
        assert "refuses the job" in found[0].message
        test_only = _submit(cluster, tmp_path, name, "--test-only")
        assert test_only.returncode != 0, test_only.stderr
        real = _submit(cluster, tmp_path, name)
        assert real.returncode != 0
        error = real.stderr.strip().splitlines()[-1].removeprefix("sbatch: error: ")
        assert error in found[0].message, (error, found[0].message)
        return
    # EnforcePartLimits=NO: accepted, then pending for ever with the reason. --test-only agrees
    # for the time limit; for the node count it answers "allocation failure: Requested node
    # configuration is not available" although the real submission is accepted (22.05.8)
    assert f"pending with reason {reason}" in found[0].message
    test_only = _submit(cluster, tmp_path, name, "--test-only")
    if name == "nodes":
        assert test_only.returncode != 0 and "node configuration" in test_only.stderr
    else:
        assert test_only.returncode == 0 and "to start at" in test_only.stderr, test_only.stderr
    real = _submit(cluster, tmp_path, name)
    assert real.returncode == 0, real.stderr
    job_id = real.stdout.strip().split(";")[0]
    try:
        assert _reason(cluster, job_id, reason) == f"PENDING {reason}"
    finally:
        cluster.sh("ctl", "scancel", job_id, check=False)


def test_a_fitting_script_is_clean_and_accepted(cluster, site, tmp_path):  # noqa: F811
    config = from_table(tomllib.loads(site), "the imported profile")
    serious = [d for d in lint(SCRIPTS["fits"], "fits.sbatch", config).diagnostics
               if d.severity >= Severity.WARNING or d.code.startswith("SB7")]
    assert serious == []
    r = _submit(cluster, tmp_path, "fits", "--test-only")
    assert r.returncode == 0 and "to start at" in r.stderr, r.stderr
