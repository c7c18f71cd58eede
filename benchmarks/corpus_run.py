"""Lint a local copy of the real-script corpus (see ../shared/corpus/README.md; never commit it)
and report: crashes, SB003, chunk coverage of bash-valid chunks, per-rule counts, time.

    python benchmarks/corpus_run.py /path/to/corpus [--samples N]
"""
from __future__ import annotations

import argparse
import collections
import random
import subprocess
import sys
import time
from pathlib import Path

from sbatch_lsp.lint import lint
from sbatch_lsp.source import BinaryInputError, decode


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--samples", type=int, default=0, help="print N findings per rule")
    ap.add_argument("--bash-check", action="store_true", help="count only bash -n valid chunks")
    args = ap.parse_args()
    files = sorted(p for p in args.corpus.iterdir() if p.is_file() and not p.name.startswith("_"))
    counts = collections.Counter()
    files_per_rule = collections.Counter()
    samples = collections.defaultdict(list)
    chunks = parsed = 0
    unparsed = []
    crashes = []
    times = []
    for f in files:
        try:
            text = decode(f.read_bytes())
        except BinaryInputError:
            continue
        t0 = time.perf_counter()
        try:
            r = lint(text, f.name)
        except Exception as exc:  # noqa: BLE001  (the engine must never raise)
            crashes.append((f.name, repr(exc)))
            continue
        times.append(time.perf_counter() - t0)
        seen = set()
        for d in r.diagnostics:
            counts[(d.code, d.severity.label)] += 1
            seen.add(d.code)
            if len(samples[d.code]) < 400:
                line = r.source.line_of(d.start) + 1
                samples[d.code].append(f"{f.name}:{line}: {d.severity.label}: {d.message[:160]}")
        for c in seen:
            files_per_rule[c] += 1
        for ch in (r.job.script.chunks if r.job else []):
            chunks += 1
            if ch.parser != "none":
                parsed += 1
            else:
                unparsed.append((f.name, ch.start_line + 1, text))
    valid_unparsed = 0
    if args.bash_check:
        for _name, _line, text in unparsed:
            ok = subprocess.run(["bash", "-n"], input=text, text=True,
                                capture_output=True).returncode == 0
            valid_unparsed += ok
    times.sort()
    n = len(times)
    print(f"files: {len(files)}  crashes: {len(crashes)}  SB003: "
          f"{sum(v for (c, _), v in counts.items() if c == 'SB003')}")
    print(f"chunks: {chunks}  parsed: {parsed} ({100 * parsed / max(chunks, 1):.2f}%)  "
          f"unparsed: {len(unparsed)}" + (f" (in bash-valid files: {valid_unparsed})"
                                          if args.bash_check else ""))
    print(f"lint time per file: median {1000 * times[n // 2]:.2f} ms, p95 "
          f"{1000 * times[int(n * 0.95)]:.2f} ms, total {sum(times):.2f} s")
    print("findings (code severity: count) / files:")
    for (code, sev), v in sorted(counts.items()):
        print(f"  {code} {sev}: {v}  (files: {files_per_rule[code]})")
    for name, err in crashes[:10]:
        print("CRASH", name, err)
    if args.samples:
        rnd = random.Random(0)
        for code, items in sorted(samples.items()):
            print(f"\n== {code}")
            for s in rnd.sample(items, min(args.samples, len(items))):
                print("  " + s)
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
