"""``sbatch-lint profile import [FILE...] [--from-cluster] [-o FILE]``: a site profile from saved
Slurm output (exit 0 written, 2 for unreadable or unknown input, usage errors, or a cluster
that cannot be asked)."""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from ..atomic import replace_file
from ..config import ConfigError, from_table
from ..source import InputTooLarge, read_bounded
from .readers import ProfileInputError, SlurmText, read_text
from .site import build
from .writer import to_toml

#: the largest file read (saved scontrol output of a large site is a few MiB)
MAX_BYTES = 64 * 1024 * 1024
#: what --from-cluster runs: (label, argv); srun --help only when srun is installed
CLUSTER_COMMANDS = (
    ("scontrol show partition", ["scontrol", "show", "partition"]),
    ("scontrol show node", ["scontrol", "show", "node"]),
    ("scontrol show config", ["scontrol", "show", "config"]),
    ("srun --help", ["srun", "--help"]),
)
TIMEOUT_S = 60


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sbatch-lint profile",
        description="Write a site profile (a configuration file with the cluster's partitions, "
                    "limits, GPUs and memory) for the SB7xx site-limit rules.")
    sub = p.add_subparsers(dest="action", required=True, metavar="import")
    imp = sub.add_parser(
        "import", prog="sbatch-lint profile import",
        help="read saved Slurm output and write the profile",
        description="Each FILE is recognised by its content: the saved output of `scontrol "
                    "show partition`, `scontrol show node` (with or without -o), `scontrol "
                    "show config` or `srun --help`. The profile goes to standard output, or "
                    "to -o FILE; use it with `sbatch-lint --config FILE` or `extend = "
                    "\"FILE\"`.")
    imp.add_argument("files", nargs="*", metavar="FILE", help="saved Slurm output ('-' reads "
                     "standard input)")
    imp.add_argument("--from-cluster", action="store_true",
                     help="run scontrol show partition|node|config and srun --help on this "
                          "machine (needs scontrol on PATH; talks to the Slurm controller)")
    imp.add_argument("-o", "--output", metavar="FILE", help="write the profile here")
    return p


def _read(path: str) -> str:
    try:
        data = read_bounded(path, MAX_BYTES)
    except InputTooLarge as exc:
        raise ProfileInputError(f"{path}: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ProfileInputError(f"{path}: not UTF-8 text (binary data?)") from None


def from_cluster() -> list[SlurmText]:
    """The cluster's own answers, read like saved files (named by their command).

    Raises ProfileInputError when scontrol is not on PATH or a command fails."""
    if shutil.which("scontrol") is None:
        raise ProfileInputError("--from-cluster: scontrol is not on PATH (run it on a login "
                                "node of the cluster, or give saved output as files)")
    texts = []
    for label, argv in CLUSTER_COMMANDS:
        if shutil.which(argv[0]) is None:
            continue
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ProfileInputError(f"--from-cluster: `{label}` failed: {exc}") from None
        if argv[0] == "srun":  # optional: only says whether pyxis is loaded
            if r.returncode == 0 and r.stdout.startswith("Usage: srun"):
                texts.append(read_text(f"`{label}`", r.stdout))
            continue
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
            raise ProfileInputError(f"--from-cluster: `{label}` failed: {why}")
        if not r.stdout.strip() or r.stdout.lstrip().startswith("No "):
            continue  # "No nodes in the system": what the other commands say is still read
        texts.append(read_text(f"`{label}`", r.stdout))
    return texts


def run(files: list[str], cluster: bool) -> str:
    """The profile text for ``files`` (and the cluster's answers with ``cluster``).

    Raises ProfileInputError (naming the file) for unreadable or unknown input, and OSError
    from reading."""
    texts = []
    for f in files:
        try:
            texts.append(read_text(f, _read(f)))
        except OSError as exc:
            raise ProfileInputError(f"{f}: cannot read: {exc.strerror or exc}") from None
    if cluster:
        texts += from_cluster()
    text = to_toml(build(texts))
    try:  # the file must load as the configuration it claims to be
        from_table(tomllib.loads(text), "the imported profile")
    except (ConfigError, tomllib.TOMLDecodeError) as exc:  # pragma: no cover - a bug
        raise ProfileInputError(f"the written profile does not load ({exc}): please report "
                                "this as a bug with the input files") from None
    return text


def main(argv: list[str]) -> int:
    """Run the subcommand; returns the exit code (0 written, 2 bad input or usage)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if not args.files and not args.from_cluster:
        print("sbatch-lint profile import: error: give FILE... (saved Slurm output) or "
              "--from-cluster", file=sys.stderr)
        return 2
    if args.files.count("-") > 1:
        print("sbatch-lint profile import: error: '-' (standard input) can be given once",
              file=sys.stderr)
        return 2
    try:
        text = run(args.files, args.from_cluster)
    except ProfileInputError as exc:
        print(f"sbatch-lint profile import: error: {exc}", file=sys.stderr)
        return 2
    if args.output:
        try:
            replace_file(Path(args.output), text.encode("utf-8"))
        except OSError as exc:
            print(f"sbatch-lint profile import: error: cannot write {args.output}: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
