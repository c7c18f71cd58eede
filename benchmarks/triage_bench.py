"""Benchmark: triage a generated 1 GB log (issue 12: ≤ 30 s, ≤ 200 MiB peak).

    python benchmarks/triage_bench.py [--size-mb 1024] [--keep PATH]

Writes a log of the given size made of tests/triage_synth.py's real noise lines (srun-labelled,
ANSI colour, progress bars with carriage returns, NCCL INFO chatter: about one line in ten
contains a trigger word such as "error" or "timeout") with the CUDA OOM scenario's failure in
the middle, then runs ``sbatch-lint triage --format json`` on it in a child process and prints
the wall and CPU time, the child's peak RSS (getrusage ru_maxrss) and whether the root line was found.
No assertion: the figures go in the report.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from triage_synth import render, scenarios  # noqa: E402

MIB = 1 << 20


def write_log(path: Path, size: int) -> int:
    """Write about ``size`` bytes; return the 1-based line of the root cause."""
    s = next(x for x in scenarios() if x.name == "cuda-oom-rank13")
    noise = [ln for ln in render(s, 40000, seed=1) if "rank13" not in ln and "Watchdog" not in ln
             and "srun:" not in ln and "exitcode" not in ln and "Root Cause" not in ln]
    noise = [ln for ln in noise if not ln.lstrip(" 0123456789:").startswith(
        ("Traceback", "torch.", "[", "  File", "=", "-", "Failures", "train.py", "Exception",
         "frame", "  "))]
    block = ("\n".join(noise) + "\n").encode()
    failure = ("\n".join(ln for ln in render(s, 0)) + "\n").encode()
    lines_per_block = block.count(b"\n")
    blocks = max(1, size // len(block))
    root_line = None
    with open(path, "wb") as f:
        for i in range(blocks):
            if i == blocks // 2:
                first = failure.split(b"\n").index(next(
                    ln for ln in failure.split(b"\n") if b"CUDA out of memory" in ln))
                root_line = i * lines_per_block + first + 1
                f.write(failure)
            f.write(block)
    assert root_line is not None
    return root_line


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--keep", type=Path, help="write the log here and keep it")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        path = args.keep or Path(d) / "slurm-1.out"
        t0 = time.monotonic()
        root = write_log(path, args.size_mb * MIB)
        gen = time.monotonic() - t0
        size = path.stat().st_size
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-c", ("import sys; from sbatch_lsp.triage.cli import "
                            "main; sys.exit(main(sys.argv[1:]))"), str(path), "--format", "json"],
                           capture_output=True, text=True)
        wall = time.monotonic() - t0
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak = usage.ru_maxrss / 1024  # KiB → MiB
        cpu = usage.ru_utime + usage.ru_stime
        obj = json.loads(r.stdout) if r.returncode == 0 else None
        found = obj is not None and obj["root_cause"] is not None and \
            obj["root_cause"]["line"] == root
        print(json.dumps({"log_bytes": size, "generate_s": round(gen, 1),
                          "triage_s": round(wall, 1), "triage_cpu_s": round(cpu, 1),
                          "peak_rss_mib": round(peak, 1),
                          "root_line_found": found, "exit": r.returncode,
                          "cpus": os.cpu_count(), "load": os.getloadavg()[0]}))
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
