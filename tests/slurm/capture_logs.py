"""Record the logs the slurm tier's bad scripts really produce, for triage's test set (issue 12).

Run as root with the tier's tools (see docs/cluster-proof.md)::

    python tests/slurm/capture_logs.py tests/logs

Starts the two-node cluster once, runs each bad script in ``jobs/`` as the tier does (same
environment, same cut-off), and writes ``slurm-<name>.log`` (the job's ``slurm-%j.out``, with the
temporary directory replaced by ``/work``) and ``slurm-<name>.meta.json`` (state, exit code,
seconds after which it was cut) into the given folder. The expected triage of each log
(``<ID>.json``) is written by hand from the run, never from triage's own output.
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from slurm_cluster import Cluster  # noqa: E402
from test_slurm import HANG_BOUND, JOBS, RUN_BOUND, SCENARIOS, run  # noqa: E402


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0]) if argv else HERE.parent / "logs"
    out_dir.mkdir(parents=True, exist_ok=True)
    seen: dict[str, object] = {}
    for s in SCENARIOS:
        seen.setdefault(s.bad, s)
    with tempfile.TemporaryDirectory(prefix="sbatch-lsp-slurm-") as d:
        cluster = Cluster(Path(d)).start()
        try:
            for name, s in seen.items():
                workdir = Path(d) / "jobs" / name
                bound = HANG_BOUND if s.may_hang else RUN_BOUND  # type: ignore[attr-defined]
                job = run(cluster, (JOBS / f"{name}.sbatch").read_text(), workdir, bound,
                          s.cut_when)  # type: ignore[attr-defined]
                text = job.output.replace(str(workdir), "/work/job").replace(d, "/work")
                (out_dir / f"slurm-{name}.log").write_text(text)
                (out_dir / f"slurm-{name}.meta.json").write_text(json.dumps(
                    {"script": f"tests/slurm/jobs/{name}.sbatch", "job_id": job.job_id,
                     "state": job.state, "exit": job.exit_code,
                     "cut_after": job.cancelled_after}, indent=1) + "\n")
                print(name, job.state, job.exit_code, len(text), flush=True)
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
