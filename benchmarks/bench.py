"""Speed of sbatch-lint (numbers for the issue notes; nothing here asserts a time).

    python benchmarks/bench.py [CORPUS_DIR]

1. in-process lint of 100-line multi-node scripts (median, p95), with parse time separately;
2. a cold `sbatch-lint one.sbatch` (process start included);
3. with CORPUS_DIR: one CLI call over the whole corpus, next to ShellCheck on the same files.
"""
from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sbatch_lsp.lint import lint
from sbatch_lsp.shell.parse import parse_script

ROOT = Path(__file__).resolve().parents[1]


def script_100() -> str:
    base = (ROOT / "examples" / "bad" / "legacy-torchrun-8-tasks.sbatch").read_text()
    lines = base.splitlines()
    body = [f'echo "step {i}: $SLURM_JOB_ID" >> "$LOG"' for i in range(100 - len(lines))]
    return "\n".join(lines[:12] + body + lines[12:]) + "\n"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def main() -> None:
    text = script_100()
    for _ in range(5):
        lint(text)
    lt, pt = [], []
    for _ in range(200):
        t0 = time.perf_counter()
        parse_script(text)
        t1 = time.perf_counter()
        lint(text)
        t2 = time.perf_counter()
        pt.append(t1 - t0)
        lt.append(t2 - t1)
    print(f"in-process lint, {len(text.splitlines())}-line script: median "
          f"{1000 * statistics.median(lt):.2f} ms, p95 {1000 * pct(lt, 0.95):.2f} ms "
          f"(parse alone: median {1000 * statistics.median(pt):.2f} ms)")
    exe = shutil.which("sbatch-lint") or str(Path(sys.executable).with_name("sbatch-lint"))
    with tempfile.NamedTemporaryFile("w", suffix=".sbatch", delete=False) as f:
        f.write(text)
    cold = []
    for _ in range(10):
        t0 = time.perf_counter()
        subprocess.run([exe, f.name], capture_output=True)
        cold.append(time.perf_counter() - t0)
    print(f"cold `sbatch-lint one.sbatch`: median {1000 * statistics.median(cold):.0f} ms, "
          f"min {1000 * min(cold):.0f} ms")
    if len(sys.argv) > 1:
        corpus = Path(sys.argv[1])
        files = sorted(str(p) for p in corpus.iterdir() if not p.name.startswith("_"))
        t0 = time.perf_counter()
        subprocess.run([exe, "--format", "concise", *files], capture_output=True)
        ours = time.perf_counter() - t0
        sc = shutil.which("shellcheck")
        if sc:
            t0 = time.perf_counter()
            subprocess.run([sc, "-s", "bash", "-f", "gcc", *files], capture_output=True)
            theirs = time.perf_counter() - t0
            print(f"corpus ({len(files)} files): sbatch-lint {ours:.1f} s, shellcheck "
                  f"{theirs:.1f} s, ratio {ours / theirs:.2f}")
        else:
            print(f"corpus ({len(files)} files): sbatch-lint {ours:.1f} s (shellcheck not found)")


if __name__ == "__main__":
    main()
