"""What ``sbatch-lint`` imports to start (issue 11: cold start): ``--version`` and ``--help``
import no other module of the package, and a run whose every file is in the cache imports only
the cache and what it checks (its quick keys: sbatch_lsp/cache.py), not the argument parser, the
configuration, the readers or the TOML parser, nor typing and dataclasses.

Behavioural, not timed: each case runs in a fresh interpreter and lists the modules the command
added to ``sys.modules`` (those the interpreter's own start loaded are not counted)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import json, sys
before = set(sys.modules)
from sbatch_lsp.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("MODULES " + json.dumps(sorted(set(sys.modules) - before)), file=sys.stderr)
"""

#: modules a start never needs: the standard library's heavier ones (dataclasses brings
#: inspect, ast and dis), the TOML parser, the data-file reader and the engine's parsers
HEAVY = {"dataclasses", "inspect", "typing", "tomllib", "importlib.resources", "tempfile",
         "hostlist", "bashlex", "tree_sitter", "pygls", "pathspec", "packaging"}


ROOT = Path(__file__).resolve().parents[1]


def added(*argv: str, cwd: Path | None = None, site: bool = True) -> set[str]:
    """The modules ``sbatch-lint ARGV`` imports, from ``from sbatch_lsp.cli import main`` on;
    with ``site`` false, in an interpreter started without the site module (``-S``, the
    package found through PYTHONPATH), so that modules an editable install's finder loads
    at start (pathlib) are counted as a regular install counts them."""
    flags, env = ([], None) if site else (["-S"], {**os.environ, "PYTHONPATH": str(ROOT)})
    run = subprocess.run([sys.executable, *flags, "-c", PROBE, *argv], capture_output=True,
                         text=True, cwd=cwd, env=env)
    line = [x for x in run.stderr.splitlines() if x.startswith("MODULES ")]
    assert line, run.stderr
    return set(json.loads(line[-1][len("MODULES "):]))


def package(mods: set[str]) -> set[str]:
    return {m for m in mods if m == "sbatch_lsp" or m.startswith("sbatch_lsp.")}


def test_importing_the_cli_imports_no_other_module_of_the_package():
    code = ("import json, sys; b = set(sys.modules); import sbatch_lsp.cli; "
            "print(json.dumps(sorted(set(sys.modules) - b)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    mods = set(json.loads(out))
    assert package(mods) <= {"sbatch_lsp", "sbatch_lsp.cli"}, package(mods)
    assert not mods & HEAVY, mods & HEAVY


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_only_the_cli(flag):
    mods = added(flag)
    assert package(mods) <= {"sbatch_lsp", "sbatch_lsp.cli"}, package(mods)
    assert not mods & (HEAVY | {"json", "hashlib"}), mods & HEAVY
    assert "pathlib" not in added(flag, site=False)


@pytest.mark.parametrize("config", [
    None,
    (".sbatch-lint.toml", "ignore = ['SB301']\n"),
    ("pyproject.toml", "[project]\nname = 'x'\n[tool.sbatch-lint]\nignore = ['SB301']\n"),
])
def test_a_cached_file_loads_the_cache_only(tmp_path, config):
    """A file linted once, then again (pre-commit on an unchanged file): the second run is
    answered through its quick key, before the argument parser, the configuration (neither
    its classes nor the TOML parser, whatever file configures it) and the engine load."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", "utf-8")
    if config:
        (tmp_path / config[0]).write_text(config[1], "utf-8")
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --nodes=2\nsrun hostname\n", "utf-8")
    args = ["--format", "concise", str(job)]
    first = added(*args, cwd=tmp_path)
    assert "sbatch_lsp.lint" in first  # the first run lints (the probe sees the engine)
    mods = added(*args, cwd=tmp_path)
    assert package(mods) <= {"sbatch_lsp", "sbatch_lsp.cli", "sbatch_lsp.cache",
                             "sbatch_lsp.config_files", "sbatch_lsp.elsewhere"}, package(mods)
    assert not mods & (HEAVY | {"argparse"}), mods & (HEAVY | {"argparse"})
    assert not added(*args, cwd=tmp_path, site=False) & {"pathlib", "argparse"}


@pytest.mark.parametrize("text, ours", [
    ("[project]\nname = 'x'\n", False),
    ("[tool.sbatch-lint]\nselect = ['SB2']\n", True),
    ("[tool.\"sbatch\\u002dlint\"]\nselect = ['SB2']\n", True),  # the key spelt with an escape
    ("[tool.sbatch-lint\nbroken", True),  # broken, but it names the table: load_file reports it
    ("[tool.other]\nx = 'sbatch-lint'\n", False),
])
def test_a_pyproject_is_parsed_only_when_it_may_hold_the_table(tmp_path, text, ours):
    """find_config skips parsing a pyproject.toml whose text cannot hold [tool.sbatch-lint]
    (the prefilter that keeps tomllib out of most runs) and finds the table however written."""
    from sbatch_lsp.config import find_config

    (tmp_path / "pyproject.toml").write_text(text, "utf-8")
    found = find_config(tmp_path / "job.sbatch")
    assert (found == (tmp_path / "pyproject.toml").resolve()) is ours
