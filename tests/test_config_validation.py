"""Loud configuration: every mistake in a configuration file or in editor settings is an error
naming the file (or "editor settings") and the key — never a setting that is silently off —
and the command line's --fail-on / --exit-zero."""
from __future__ import annotations

import pytest
import pytest_lsp
from lsp_support import config as lsp_config
from lsp_support import initialize, open_doc, publish_for
from pytest_lsp import LanguageClient

from sbatch_lsp.cli import main
from sbatch_lsp.server.settings import parse_settings

#: SB101 (error) and SB102 (warning)
JOB = "#!/bin/bash\n#SBATCH --nodes=1\n#sbatch --time=10\nsrun hostname\n#SBATCH --time=10\n"

BAD = [
    ('select = ["SB99"]', "select", "'SB99' matches no rule"),
    ('ignore = ["SB999"]', "ignore", "'SB999' matches no rule"),
    ('extend-select = ["SB8"]', "extend-select", "'SB8' matches no rule"),
    ('select = ["torchrun-per-tsk"]', "select", "is not a rule code or name"),
    ('select = "SB2,SB3"', "select", "is not a rule code or name"),
    ("select = [201]", "select", "expected a list of rule codes"),
    ('severity = {SB999 = "error"}', "severity", "'SB999' is not a rule code or name"),
    ('severity = {SB2 = "error"}', "severity", "'SB2' is not a rule code or name"),
    ('severity = {SB201 = "fatal"}', "severity.SB201", "unknown severity"),
    ("severity = {SB201 = 4}", "severity.SB201", "not int 4"),
    ('severity = "error"', "severity", "expected a table"),
    ("fail-on = 1", "fail-on", "not int 1"),
    ("selct = []", "unknown key 'selct'", ""),
    ("[profile]\nslurm-verison = \"22.05\"", "profile: unknown key 'slurm-verison'", ""),
    ("[profile]\nslurm-version = 22.05", "profile.slurm-version", "expected a string"),
    ("[profile]\ngpus-per-node = \"8\"", "profile.gpus-per-node", "whole number"),
    ("[profile]\ngpu-arch = { h100 = 9 }", "profile.gpu-arch", "expected a table"),
    ("[profile]\nshared-prefixes = \"/lustre\"", "profile.shared-prefixes", "absolute paths"),
    ("[profile]\npyxis = 1", "profile.pyxis", "expected true, false"),
    ("profile = 3", "profile", "expected a table"),
    ("extend = 3", "extend", "expected a path string"),
]


@pytest.mark.parametrize("text,key,why", BAD, ids=[b[0] for b in BAD])
def test_a_bad_file_exits_2_naming_file_and_key(tmp_path, capsys, text, key, why):
    (tmp_path / ".sbatch-lint.toml").write_text(text + "\n")
    (tmp_path / "job.sbatch").write_text(JOB)
    assert main([str(tmp_path / "job.sbatch")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / '.sbatch-lint.toml'}: {key}" in err and why in err, err


def test_the_same_in_pyproject(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.sbatch-lint]\nselect = ["SB99"]\n')
    (tmp_path / "job.sbatch").write_text(JOB)
    assert main([str(tmp_path / "job.sbatch")]) == 2
    assert f"{tmp_path / 'pyproject.toml'}: select: 'SB99' matches no rule" in \
        capsys.readouterr().err


@pytest.mark.parametrize("text", ['select = ["ALL"]', 'select = ["SB"]', 'ignore = ["SB0"]',
                                  'severity = { torchrun-per-task = "info", SB101 = "hint" }',
                                  'extend-select = ["directive-after-command"]'])
def test_good_entries_are_accepted(tmp_path, capsys, text):
    (tmp_path / ".sbatch-lint.toml").write_text(text + "\n")
    (tmp_path / "job.sbatch").write_text(JOB)
    assert main([str(tmp_path / "job.sbatch")]) in (0, 1)
    assert "configuration error" not in capsys.readouterr().err


def test_a_severity_by_name_applies(tmp_path, capsys):
    (tmp_path / ".sbatch-lint.toml").write_text(
        'severity = { directive-after-command = "info", directive-lookalike = "info" }\n')
    (tmp_path / "job.sbatch").write_text(JOB)
    assert main(["--format", "concise", str(tmp_path / "job.sbatch")]) == 0
    out = capsys.readouterr().out
    assert "SB101 [info]" in out and "SB102 [info]" in out


@pytest.mark.parametrize("select,args,runs", [
    (["SB101"], ["--ignore", "SB1"], True),     # the file's entry is more specific
    (["SB1"], ["--ignore", "SB101"], False),    # the command line's is
    (["SB101"], ["--ignore", "SB101"], True),   # a tie goes to the selection
    (["SB101"], ["--select", "SB102", "--ignore", "SB101"], False),  # --select replaced it
])
def test_how_ignore_and_a_project_select_combine(tmp_path, capsys, select, args, runs):
    """The README's table (section Configuration), with SB101 for SB201."""
    (tmp_path / ".sbatch-lint.toml").write_text(f"select = {select!r}\n".replace("'", '"'))
    (tmp_path / "job.sbatch").write_text(JOB)
    main(["--format", "concise", *args, str(tmp_path / "job.sbatch")])
    assert ("SB101" in capsys.readouterr().out) is runs


@pytest.mark.parametrize("args,code", [
    ([], 1), (["--fail-on", "error"], 1), (["--select", "SB102", "--fail-on", "error"], 0),
    (["--select", "SB102", "--fail-on", "warning"], 1), (["--exit-zero"], 0),
    (["--fail-on", "hint", "--exit-zero"], 0),
])
def test_fail_on_and_exit_zero(tmp_path, capsys, args, code):
    (tmp_path / "job.sbatch").write_text(JOB)
    assert main([*args, str(tmp_path / "job.sbatch")]) == code


def test_fail_on_beats_the_file(tmp_path, capsys):
    (tmp_path / ".sbatch-lint.toml").write_text('fail-on = "error"\nselect = ["SB102"]\n')
    (tmp_path / "job.sbatch").write_text(JOB)
    assert main([str(tmp_path / "job.sbatch")]) == 0  # a warning under fail-on = error
    assert main(["--fail-on", "warning", str(tmp_path / "job.sbatch")]) == 1


def test_exit_zero_keeps_errors_at_2(tmp_path, capsys):
    assert main(["--exit-zero", str(tmp_path / "missing.sbatch")]) == 2
    (tmp_path / ".sbatch-lint.toml").write_text('select = ["SB99"]\n')
    (tmp_path / "job.sbatch").write_text(JOB)
    assert main(["--exit-zero", str(tmp_path / "job.sbatch")]) == 2


def test_bad_fail_on_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "job.sbatch").write_text(JOB)
    with pytest.raises(SystemExit) as exc:
        main(["--fail-on", "fatal", str(tmp_path / "job.sbatch")])
    assert exc.value.code == 2


# ---- editor settings -------------------------------------------------------------------------

@pytest.mark.parametrize("value,key", [
    ({"select": ["SB99"]}, "select"), ({"ignore": ["SB999"]}, "ignore"),
    ({"extend-select": ["SB8"]}, "extend-select"), ({"severity": {"SB999": "error"}}, "severity"),
    ({"severity": {"SB201": 3}}, "severity.SB201"), ({"fail-on": "fatal"}, "fail-on"),
    ({"selectt": ["SB2"]}, "unknown key 'selectt'"),
    ({"profile": {"slurm_version": "22.05"}}, "profile: unknown key 'slurm_version'"),
    ({"profile": {"slurm-version": 22.05}}, "profile.slurm-version"),
    ({"inlayHints": "yes"}, "inlayHints"), ({"extend": "../site.toml"}, "extend"),
    ({"sbatchLsp": {"ignore": ["SB99"]}}, "ignore"), ("ignore SB2", "expected an object"),
])
def test_bad_editor_settings_are_an_error_and_the_defaults(value, key):
    settings, error = parse_settings(value)
    assert error is not None and error.startswith("editor settings") and key in error, error
    assert settings.config.select is None and not settings.config.ignore


def test_good_editor_settings():
    settings, error = parse_settings({"sbatchLsp": {"ignore": ["SB2"], "inlayHints": False,
                                                    "severity": {"SB301": "warning"}}})
    assert error is None and settings.config.ignore == {"SB2"} and not settings.inlay_hints


@pytest_lsp.fixture(config=lsp_config(), params=["visual-studio-code"])
async def client(lsp_client: LanguageClient, request, tmp_path):
    lsp_client.root = tmp_path
    await initialize(lsp_client, request.param, tmp_path, options={"select": ["SB99"]})
    yield
    await lsp_client.shutdown_session()


async def test_the_server_shows_a_bad_setting(client: LanguageClient):
    uri = (client.root / "a.sbatch").as_uri()
    open_doc(client, uri, JOB)
    pub = await publish_for(client, uri, 1)
    # the defaults apply (every rule), and the user is told why their selection did not
    assert "SB101" in [d.code for d in pub.diagnostics]
    assert any("editor settings: select: 'SB99' matches no rule" in m.message
               for m in client.messages)
