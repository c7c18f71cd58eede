"""ruff and mypy, as configured in pyproject.toml, report nothing: a finding fails the test
with the tools' own output (the versions are pinned in the test extras)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("tool", [["ruff", "check", "--no-cache", "."], ["mypy"]],
                         ids=["ruff", "mypy"])
def test_clean(tool: list[str]) -> None:
    run = subprocess.run([sys.executable, "-m", *tool], cwd=ROOT, capture_output=True, text=True,
                         timeout=240)
    assert run.returncode == 0, f"{' '.join(tool)} reported:\n{run.stdout}{run.stderr}"
