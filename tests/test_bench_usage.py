"""The benchmark scripts say their usage instead of reading an option as a folder or a count."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parent.parent / "benchmarks"


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True,
                          text=True, timeout=60, cwd=BENCH)


@pytest.mark.parametrize("script, words", [("bench.py", "CORPUS_DIR"), ("lsp_bench.py", "rounds")])
def test_help(script: str, words: str) -> None:
    done = run(script, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith(f"usage: {script}") and words in done.stdout


@pytest.mark.parametrize("script, arg", [("bench.py", "/no/such/folder"), ("lsp_bench.py", "x")])
def test_bad_argument(script: str, arg: str) -> None:
    done = run(script, arg)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "error:" in done.stderr
