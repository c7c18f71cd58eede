"""``sbatch-lint triage LOG... [--script JOB] [--format text|json]`` (DESIGN.md "Interfaces":
exit 0 when the logs were analysed, 2 for unreadable input or usage errors)."""
from __future__ import annotations

import argparse
import os
import sys

from . import LogError, triage
from .report import format_json, format_text


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sbatch-lint triage",
        description="Find the first failing rank, the root-cause line and the script finding "
                    "behind a failed Slurm job, from its log.")
    p.add_argument("logs", nargs="+", metavar="LOG",
                   help="the job's output files (all one job's: %%j.out and %%j.err, or one "
                        "per rank); '-' reads standard input; .gz accepted")
    p.add_argument("--script", metavar="JOB",
                   help="the job script (default: the script beside the log whose "
                        "#SBATCH --output pattern names it)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--no-color", action="store_true", help="no ANSI colour in text output")
    return p


def main(argv: list[str]) -> int:
    """Run the subcommand; returns the exit code (0 analysed, 2 unreadable input or usage)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 2
    if args.logs.count("-") > 1:
        print("sbatch-lint triage: error: '-' (standard input) can be given once",
              file=sys.stderr)
        return 2
    try:
        report = triage(args.logs, args.script)
    except LogError as exc:
        print(f"sbatch-lint triage: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001  (a bug: one line, never a traceback)
        print(f"sbatch-lint triage: internal error ({type(exc).__name__}: {exc}); please "
              "report it", file=sys.stderr)
        return 2
    color = sys.stdout.isatty() and not args.no_color and "NO_COLOR" not in os.environ
    try:
        sys.stdout.write(format_json(report) + "\n" if args.format == "json"
                         else format_text(report, color))
    except BrokenPipeError:
        return 1
    return 0
