"""Speed of sbatch-lint (numbers for the issue notes; nothing here asserts a time).

    python benchmarks/bench.py [CORPUS_DIR]

1. in-process lint of 100-line multi-node scripts (median, p95; CPU time, which other processes
   on a busy machine disturb less, and wall time), with parse time separately; with CORPUS_DIR
   also on its real multi-node scripts of 80-120 lines;
2. a cold `sbatch-lint one.sbatch` (process start included, bytecode already compiled);
3. with CORPUS_DIR: one CLI call over the whole corpus, next to ShellCheck on the same files.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsp_bench import pct
from sbatch_lsp.lint import lint
from sbatch_lsp.shell.parse import parse_script

ROOT = Path(__file__).resolve().parents[1]


def script_100() -> str:
    base = (ROOT / "examples" / "bad" / "legacy-torchrun-8-tasks.sbatch").read_text()
    lines = base.splitlines()
    body = [f'echo "step {i}: $SLURM_JOB_ID" >> "$LOG"' for i in range(100 - len(lines))]
    return "\n".join(lines[:12] + body + lines[12:]) + "\n"


def real_scripts(corpus: Path) -> list[str]:
    """Multi-node scripts of 80-120 lines from a folder of real job scripts."""
    chosen = []
    for path in sorted(corpus.iterdir()):
        text = path.read_bytes().decode("utf-8", "replace")
        if (80 <= len(text.splitlines()) <= 120 and "srun" in text
                and re.search(r"#SBATCH\s+(--nodes|-N)[ =]?\s*([2-9]|\d\d)", text)):
            chosen.append(text)
    return chosen


def time_lint(scripts: list[str], rounds: int) -> None:
    """Print median and p95 of lint() per script, wall and CPU, with parse_script() alone."""
    for text in scripts:
        lint(text)
    wall, cpu, parse_cpu = [], [], []
    for _ in range(rounds):
        for text in scripts:
            c0 = time.process_time()
            parse_script(text)
            c1, t1 = time.process_time(), time.perf_counter()
            lint(text)
            wall.append(time.perf_counter() - t1)
            cpu.append(time.process_time() - c1)
            parse_cpu.append(c1 - c0)
    ms = lambda xs, p=0.5: f"{1000 * pct(xs, p):.1f} ms"  # noqa: E731
    print(f"  lint: CPU median {ms(cpu)}, p95 {ms(cpu, 0.95)}; wall median {ms(wall)}, "
          f"p95 {ms(wall, 0.95)}; parse alone: CPU median {ms(parse_cpu)}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", type=Path, metavar="CORPUS_DIR",
                    help="a folder of real job scripts (also times the CLI over all of them "
                         "next to ShellCheck)")
    corpus = ap.parse_args(argv).corpus
    if corpus is not None and not corpus.is_dir():
        ap.error(f"{corpus}: not a folder")
    text = script_100()
    print(f"in-process, one {len(text.splitlines())}-line multi-node script (examples/ + echo lines):")
    time_lint([text], 200)
    if corpus:
        scripts = real_scripts(corpus)
        print(f"in-process, {len(scripts)} real multi-node scripts of 80-120 lines from {corpus}:")
        time_lint(scripts, 5)
    exe = shutil.which("sbatch-lint") or str(Path(sys.executable).with_name("sbatch-lint"))
    with tempfile.NamedTemporaryFile("w", suffix=".sbatch", delete=False) as f:
        f.write(text)
    # An installed package has its bytecode compiled; a shell with PYTHONDONTWRITEBYTECODE=1 would
    # time the compiler instead. The first run (not counted) writes the bytecode.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([exe, f.name], capture_output=True, env=env)
    wall, cpu = [], []
    for _ in range(20):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([exe, f.name], capture_output=True, env=env)
        wall.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    print(f"cold `sbatch-lint one.sbatch`: wall median {1000 * statistics.median(wall):.0f} ms "
          f"(min {1000 * min(wall):.0f} ms), CPU median {1000 * statistics.median(cpu):.0f} ms")
    if corpus:
        files = sorted(str(p) for p in corpus.iterdir() if not p.name.startswith("_"))
        t0 = time.perf_counter()
        subprocess.run([exe, "--format", "concise", *files], capture_output=True, env=env)
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
