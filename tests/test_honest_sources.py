"""Honesty to users: install instructions that work without a package index, rule pages that
cite public sources (not files users never see), links the tool prints that the project
controls, and a run that finds no job script saying so."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sbatch_lsp.cli import main
from sbatch_lsp.output import SARIF_SCHEMA
from sbatch_lsp.rules import RULES, page_path

ROOT = Path(__file__).resolve().parents[1]
JOB = "#!/bin/bash\n#SBATCH --nodes=1\nsrun hostname\n#SBATCH --time=10\n"  # SB101
#: files a user of the tool never has (the project's reference notes and design)
PRIVATE = re.compile(r"slurm-facts|DESIGN\.md|\.\./shared|shared/(?:notes|data|cases)|"
                     r"notes/\w+\.md|anchors\.md|real-clients|parsing\.md|"
                     r"\[(?:slurm|exp|ctld|man22|torch|MLM|MB|NeMo|pyxis|enroot)\]")


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_pages_cite_only_what_users_can_read(code):
    page = page_path(code).read_text("utf-8")
    assert not PRIVATE.search(page), PRIVATE.search(page).group(0)
    assert "## References" in page or code in ("SB002",), code


def test_no_install_text_names_a_package_index_release():
    texts = {p: (ROOT / p).read_text("utf-8") for p in (
        "README.md", "vscode-extension/README.md", "vscode-extension/src/extension.ts",
        ".pre-commit-hooks.yaml")}
    for path, text in texts.items():
        assert not re.search(r"pipx? install sbatch-lsp\b|pip install -U sbatch-lsp", text), path
        assert "v0.1.0" not in text, path  # no such tag exists
    assert "pipx install ." in texts["README.md"] and "pipx install ." in \
        texts["vscode-extension/src/extension.ts"]


def test_every_url_the_tool_prints_is_the_projects(tmp_path, capsys):
    """SARIF, JSON and text output carry no web link but the SARIF schema's own; rule links
    are the pages installed with the package."""
    job = tmp_path / "job.sbatch"
    job.write_text(JOB)
    outs = []
    for fmt in ("sarif", "json", "text", "github", "concise"):
        main(["--format", fmt, str(job)])
        outs.append(capsys.readouterr().out)
    main(["--explain", "SB101"])
    outs.append(capsys.readouterr().out)
    urls = {u for out in outs for u in re.findall(r"https?://[^\s\"')\]]+", out)}
    assert urls <= {SARIF_SCHEMA}, urls
    sarif = json.loads(outs[0])
    assert sarif["$schema"] == SARIF_SCHEMA
    for code, rule in RULES.items():
        assert rule.url.startswith("file:///") and page_path(code).is_file(), code


def test_an_empty_folder_fails_and_says_so(tmp_path, capsys):
    (tmp_path / "jobs").mkdir()
    assert main([str(tmp_path / "jobs")]) == 2
    err = capsys.readouterr().err
    assert f"no job script found in {tmp_path / 'jobs'}: no file to read" in err


def test_a_folder_of_helper_scripts_fails_and_says_so(tmp_path, capsys):
    (tmp_path / "run.sh").write_text("#!/bin/bash\necho hi\n")
    assert main(["--format", "json", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out) == []
    assert "no job script found" in captured.err and "1 file(s) read, none a job script" in \
        captured.err


def test_named_helper_files_pass_with_a_note(tmp_path, capsys):
    """What pre-commit does: every candidate file is named; a commit of helpers passes."""
    (tmp_path / "run.sh").write_text("#!/bin/bash\necho hi\n")
    assert main([str(tmp_path / "run.sh")]) == 0
    assert "no job script found" in capsys.readouterr().err


def test_a_folder_with_a_job_script_says_nothing_of_the_kind(tmp_path, capsys):
    (tmp_path / "run.sh").write_text("#!/bin/bash\necho hi\n")
    (tmp_path / "job.sbatch").write_text(JOB)
    assert main([str(tmp_path)]) == 1
    assert "no job script found" not in capsys.readouterr().err
