"""The CLI over a corpus: cold (``--no-cache``), warm cache, and ShellCheck, at one process count.

    python benchmarks/cache_bench.py [--jobs N] [--rounds R] [CORPUS_DIR]

Writes the generated corpus (tests/sbatch_corpus.py) to a temporary folder and, with
CORPUS_DIR, also takes its files. For each corpus, R rounds each run, in turn: ``sbatch-lint
--no-cache --jobs N``, ``sbatch-lint --jobs N`` with a cache filled beforehand, and (when
``shellcheck`` is on PATH) ShellCheck on the same files split over N processes at once. It
prints the median wall time of each and the ratios ShellCheck / sbatch-lint, all measured in
this one run (nothing here asserts a time), and the start-up (``--version``, ``--help`` and a
one-file lint served from the cache, alone and with a pyproject.toml configuring it) next to a
bare interpreter (:func:`startup`). The package's bytecode
is compiled first (as a pip install does), so that no run pays for compiling it even when
PYTHONDONTWRITEBYTECODE is set. Whole-command timings for a note: farm-bench.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def generated(folder: Path) -> list[str]:
    """The generated corpus written as files under ``folder``."""
    import sbatch_corpus

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, (_, data) in enumerate(sbatch_corpus.cases()):
        f = folder / f"g{i:05d}.sbatch"
        f.write_bytes(data)
        out.append(str(f))
    return out


def timed(cmds: list[list[str]]) -> float:
    """Wall seconds of running ``cmds`` at once (each a process), until the last one ends."""
    t0 = time.perf_counter()
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for c in cmds]
    for p in procs:
        p.wait()
    return time.perf_counter() - t0


def bench(name: str, files: list[str], jobs: int, rounds: int) -> None:
    """Print cold, warm and ShellCheck medians over ``files`` at ``jobs`` processes."""
    exe = [sys.executable, "-m", "sbatch_lsp", "--format", "concise", "--jobs", str(jobs)]
    with tempfile.TemporaryDirectory(prefix="sbatch-lint-cache-") as store:
        warm_cmd = exe + ["--cache-dir", store, *files]
        subprocess.run(warm_cmd, capture_output=True)  # fills the cache (and compiles bytecode)
        cold_cmd = exe + ["--no-cache", *files]
        sc = shutil.which("shellcheck")
        chunks = [files[k::jobs] for k in range(jobs)]
        sc_cmds = [[sc, "-s", "bash", "-f", "gcc", *c] for c in chunks if c] if sc else []
        times: dict[str, list[float]] = {"cold": [], "warm": [], "shellcheck": []}
        for _ in range(rounds):
            times["cold"].append(timed([cold_cmd]))
            times["warm"].append(timed([warm_cmd]))
            if sc_cmds:
                times["shellcheck"].append(timed(sc_cmds))
    med = {k: statistics.median(v) for k, v in times.items() if v}
    print(f"{name}: {len(files)} files, {jobs} process(es), median of {rounds} rounds")
    print(f"  sbatch-lint cold (--no-cache): {med['cold']:.2f} s")
    print(f"  sbatch-lint warm cache:        {med['warm']:.2f} s "
          f"(cold / warm {med['cold'] / med['warm']:.1f}x)")
    if "shellcheck" in med:
        s = med["shellcheck"]
        print(f"  shellcheck:                    {s:.2f} s")
        print(f"  shellcheck / cold {s / med['cold']:.2f}x, shellcheck / warm "
              f"{s / med['warm']:.2f}x")
    else:
        print("  shellcheck: not on PATH")


def startup() -> None:
    """Print the cold start (issue 11) of three commands next to a bare interpreter of the same
    environment (``python -I -c pass``; in an editable install its start includes the editable
    finder's imports, so measure a regular ``pip install .`` too): ``sbatch-lint --version``,
    ``--help``, and a one-file lint whose result is in the cache (what pre-commit runs on an
    unchanged file), alone and in a project whose pyproject.toml configures sbatch-lint. Each ratio is the median of 10 interleaved pairs (the machine's speed
    drifts less within a pair)."""
    script = Path(sys.executable).with_name("sbatch-lint")
    exe = [str(script)] if script.exists() else [sys.executable, "-m", "sbatch_lsp"]
    bare = [sys.executable, "-I", "-c", "pass"]
    with tempfile.TemporaryDirectory(prefix="sbatch-start-") as tmp:
        job = Path(tmp) / "job.sbatch"
        job.write_text((ROOT / "examples" / "bad" / "legacy-torchrun-8-tasks.sbatch").read_text())
        lint = exe + ["--cache-dir", str(Path(tmp) / "cache"), str(job)]
        project = Path(tmp) / "project"
        project.mkdir()
        (project / "pyproject.toml").write_text(
            "[project]\nname = 'jobs'\n\n[tool.sbatch-lint]\nignore = ['SB301']\n")
        (project / "job.sbatch").write_text(job.read_text())
        configured = exe + [str(project / "job.sbatch")]
        timed([lint])  # fills the cache
        timed([configured])
        for name, cmd in (("--version", exe + ["--version"]), ("--help", exe + ["--help"]),
                          ("one cached file", lint),
                          ("one cached file, pyproject.toml configured", configured)):
            pairs = [(timed([cmd]), timed([bare])) for _ in range(10)]
            ours = statistics.median(a for a, _ in pairs)
            base = statistics.median(b for _, b in pairs)
            ratio = statistics.median(a / b for a, b in pairs)
            print(f"start-up: sbatch-lint {name} {ours * 1000:.0f} ms, bare interpreter "
                  f"{base * 1000:.0f} ms ({ratio:.2f}x, median of 10 pairs)")


def main() -> None:
    import compileall

    import sbatch_lsp
    from sbatch_lsp.cli import cpus

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", type=Path, help="a folder of real job scripts")
    ap.add_argument("--jobs", type=int, default=cpus(), help="processes (default: the CPUs)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    compileall.compile_dir(str(Path(sbatch_lsp.__file__).parent), quiet=1)
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    startup()
    with tempfile.TemporaryDirectory(prefix="sbatch-corpus-") as tmp:
        bench("generated corpus (tests/sbatch_corpus.py)", generated(Path(tmp)), args.jobs,
              args.rounds)
    corpus = args.corpus or (Path(os.environ["CORPUS_DIR"]) if os.environ.get("CORPUS_DIR")
                             else None)
    if corpus:
        files = sorted(str(p) for p in corpus.iterdir()
                       if p.is_file() and not p.name.startswith(("_", ".")))
        bench(f"corpus {corpus}", files, args.jobs, args.rounds)


if __name__ == "__main__":
    main()
