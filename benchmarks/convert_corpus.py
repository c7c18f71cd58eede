"""Run the srun-native conversion over a local copy of the real-script corpus (see
../shared/corpus/README.md; never commit it) and check its invariants on every file that starts
torchrun: the conversion never raises, a converted script passes ``bash -n``, lints free of
SB201 and SB202 findings at warning or above and has no more such findings of any other rule
(SB301 included, unless a note says the program's own arguments expand a rank variable in the
batch shell, as they did under torchrun), and converting it again changes nothing.

    python benchmarks/convert_corpus.py /path/to/corpus [--show-refusals]
"""
from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sbatch_lsp.convert import convert_srun_native
from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.lint import lint

TORCHRUN = re.compile(r"torchrun|torch\.distributed\.(run|launch)")


def check(text: str, path: str = "x.sbatch") -> tuple[str, list[str]]:
    """(status, problems) for one script: problems are broken invariants."""
    problems = []
    conv = convert_srun_native(text, path=path)
    if conv.status != "converted":
        return conv.status, problems
    new = conv.new_text
    r = subprocess.run(["bash", "-n"], input=new, text=True, capture_output=True)
    if r.returncode:
        problems.append("bash -n: " + r.stderr.strip()[:200])
    def loud(t):
        return collections.Counter(d.code for d in lint(t, path).diagnostics
                                   if d.severity >= Severity.WARNING)

    before, after = loud(text), loud(new)
    explained = {"SB301"} if any("see SB301" in n for n in conv.notes) else set()
    for code in after:
        if code in ("SB201", "SB202") or after[code] > before[code] and code not in explained:
            problems.append(f"{code}: {after[code]} finding(s) after, {before[code]} before")
    again = convert_srun_native(new, path=path)
    if again.status != "unchanged":
        problems.append(f"not idempotent: second conversion {again.status} "
                        f"{[r.message for r in again.refusals]}")
    return "converted", problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--show-refusals", action="store_true")
    args = ap.parse_args()
    files = sorted(p for p in args.corpus.iterdir() if p.is_file())
    counts = collections.Counter()
    reasons = collections.Counter()
    bad = 0
    t0 = time.perf_counter()
    for p in files:
        text = p.read_text("utf-8", "replace")
        if not TORCHRUN.search(text):
            continue
        try:
            status, problems = check(text, p.name)
        except Exception as exc:  # noqa: BLE001  (the invariant: never a traceback)
            status, problems = "crashed", [f"{type(exc).__name__}: {exc}"]
        counts[status] += 1
        if status == "refused":
            conv = convert_srun_native(text, path=p.name)
            for r in conv.refusals:
                reasons[re.sub(r"[-\w.]*=\S+|\$\S+|\d+", "…", r.message)[:90]] += 1
                if args.show_refusals:
                    print(f"{p.name}: refused: {r.message}")
        for prob in problems:
            bad += 1
            print(f"{p.name}: {prob}")
    dt = time.perf_counter() - t0
    print(f"{sum(counts.values())} files with torchrun: " +
          ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) +
          f"; {bad} broken invariant(s); {dt:.1f} s")
    for reason, k in reasons.most_common():
        print(f"  {k:3d}  {reason}")
    return 1 if bad or counts["crashed"] else 0


if __name__ == "__main__":
    sys.exit(main())
