"""The CLI's subcommand dispatch (DESIGN.md "Interfaces"): ``sbatch-lint [PATH…]`` lints,
``sbatch-lint NAME …`` runs a subcommand of the table with the rest of the words, each
subcommand has ``--help``, a file named like a subcommand is written ``./NAME``, and a
subcommand not built yet is simply absent (its name is an ordinary path)."""
from __future__ import annotations

import sys

import pytest

from sbatch_lsp import cli

JOB = "#!/bin/bash\n#SBATCH --nodes=1\nsrun hostname\n#SBATCH --time=10\n"  # SB101

FAKE = '''
import argparse
CALLS = []

def main(argv):
    p = argparse.ArgumentParser(prog="sbatch-lint show", description="the fake show")
    p.add_argument("file")
    args = p.parse_args(argv)
    CALLS.append(args.file)
    return 0
'''


@pytest.fixture
def fake_show(tmp_path, monkeypatch):
    """A subcommand ``show`` plugged in by one line of the table, as its owner will."""
    (tmp_path / "fake_show_cmd.py").write_text(FAKE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.SUBCOMMANDS, "show", ("fake_show_cmd", "the job as Slurm runs it"))
    yield sys.modules.get("fake_show_cmd")
    sys.modules.pop("fake_show_cmd", None)


def test_a_subcommand_gets_the_rest_of_the_words(fake_show, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["show", "job.sbatch"]) == 0
    assert sys.modules["fake_show_cmd"].CALLS == ["job.sbatch"]


def test_every_subcommand_has_help(fake_show, capsys):
    for name in cli.SUBCOMMANDS:  # the real table's entries, and the fake
        try:  # a subcommand's main(argv) returns its exit code or lets argparse exit
            code = cli.main([name, "--help"])
        except SystemExit as exc:
            code = exc.code
        assert code == 0, name
        assert f"sbatch-lint {name}" in capsys.readouterr().out, name


def test_the_main_help_lists_the_subcommands(fake_show, capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "sbatch-lint show …  the job as Slurm runs it" in out
    assert f"./{min(cli.SUBCOMMANDS)}" in out
    assert "exit codes:" in out


def test_a_file_named_like_a_subcommand_is_linted_as_dot_slash(fake_show, tmp_path, monkeypatch,
                                                                capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "show").write_text(JOB)
    assert cli.main(["./show"]) == 1
    assert "SB101" in capsys.readouterr().out
    assert "fake_show_cmd" not in sys.modules  # the subcommand never ran


def test_an_absent_subcommand_is_an_ordinary_path(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name in ("show", "triage", "profile"):
        if name in cli.SUBCOMMANDS:
            continue
        (tmp_path / name).write_text(JOB)
        assert cli.main([name]) == 1
        assert f"{name}:4:1: SB101" in capsys.readouterr().out


def test_options_before_a_subcommand_name_make_it_a_path(fake_show, tmp_path, monkeypatch, capsys):
    """Only the first word selects a subcommand: ``sbatch-lint --format json show`` lints a
    file named ``show``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "show").write_text(JOB)
    assert cli.main(["--format", "concise", "show"]) == 1
    assert "SB101" in capsys.readouterr().out
