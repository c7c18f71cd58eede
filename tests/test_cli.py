"""The sbatch-lint CLI as a user runs it: exit codes, formats, stdin, --fix, bad input."""
import json
import os
import subprocess
import sys
from pathlib import Path


import pytest

from sbatch_lsp.cli import main

BAD = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=n1:29400 t.py
"""
GOOD = """#!/bin/bash
#SBATCH --nodes=1
#SBATCH --gpus-per-node=8
torchrun --standalone --nproc-per-node=8 train.py
"""
TOKEN = "hf_" + "FAKE" * 8 + "42"


def run(args, stdin=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "sbatch_lsp", *args], input=stdin,
                          capture_output=True, text=True, cwd=cwd)


def test_exit_codes(tmp_path):
    bad, good = tmp_path / "bad.sbatch", tmp_path / "good.sbatch"
    bad.write_text(BAD)
    good.write_text(GOOD)
    assert run([str(good)]).returncode == 0
    r = run([str(bad)])
    assert r.returncode == 1
    assert "SB201" in r.stdout and "bad.sbatch:5:6:" in r.stdout
    assert run([str(tmp_path / "missing.sbatch")]).returncode == 2
    assert run(["--select", "XY1", str(good)]).returncode == 2


def test_json_shape_is_design_md(tmp_path):
    bad = tmp_path / "bad.sbatch"
    bad.write_text(BAD)
    items = json.loads(run(["--format", "json", str(bad)]).stdout)
    d = next(i for i in items if i["code"] == "SB201")
    assert set(d) == {"code", "name", "severity", "message", "path", "line", "column",
                      "end_line", "end_column", "related", "fixes"}
    assert (d["line"], d["column"], d["end_line"], d["end_column"]) == (5, 6, 5, 14)
    assert d["path"] == str(bad) and d["severity"] == "error" and d["name"] == "torchrun-per-task"
    assert {"line", "column", "end_line", "end_column", "message"} == set(d["related"][0])
    fix = d["fixes"][0]
    assert fix["applicability"] == "unsafe" and set(fix["edits"][0]) == {
        "line", "column", "end_line", "end_column", "new_text"}


def test_stdin_with_filename():
    r = run(["--format", "concise", "--stdin-filename", "job.sbatch", "-"], stdin=BAD)
    assert r.returncode == 1 and r.stdout.startswith("job.sbatch:5:6: SB201")


def test_secret_never_printed(tmp_path):
    f = tmp_path / "s.sbatch"
    f.write_text(f"#!/bin/bash\n#SBATCH -N 1\nexport HF_TOKEN={TOKEN}\npython x.py\n")
    for fmt in ("text", "json", "concise", "github"):
        r = run(["--format", fmt, str(f)])
        assert "SB501" in r.stdout and TOKEN not in r.stdout + r.stderr
    r = run(["--diff", "--unsafe-fixes", str(f)])
    assert TOKEN not in r.stdout and "hf_****" in r.stdout


def test_fix_writes_atomically_and_keeps_mode(tmp_path):
    f = tmp_path / "crlf.sbatch"
    f.write_bytes(b"#!/bin/bash\r\n#SBATCH -N 1\r\necho hi\r\n")
    os.chmod(f, 0o750)
    r = run(["--fix", str(f)])
    assert f.read_bytes() == b"#!/bin/bash\n#SBATCH -N 1\necho hi\n"
    assert r.returncode == 0 and (f.stat().st_mode & 0o777) == 0o750
    assert [p.name for p in tmp_path.iterdir()] == ["crlf.sbatch"]


def test_diff_changes_nothing(tmp_path):
    f = tmp_path / "crlf.sbatch"
    data = b"#!/bin/bash\r\n#SBATCH -N 1\r\necho hi\r\n"
    f.write_bytes(data)
    r = run(["--diff", str(f)])
    assert f.read_bytes() == data and "-#!/bin/bash" in r.stdout


def test_binary_and_non_utf8_input(tmp_path):
    b = tmp_path / "blob.sbatch"
    b.write_bytes(bytes(range(256)) * 8)
    r = run([str(b)])
    assert r.returncode == 2 and "binary" in r.stderr and "Traceback" not in r.stderr
    latin = tmp_path / "latin.sbatch"
    latin.write_bytes(b"#!/bin/bash\n#SBATCH -J caf\xe9\necho ok\n")
    r = run([str(latin)])
    assert r.returncode == 0 and "Traceback" not in r.stderr


def test_directory_discovery_honours_gitignore(tmp_path):
    (tmp_path / ".gitignore").write_text("ignored/\n")
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "x.sbatch").write_text(BAD)
    (tmp_path / "job").write_text(BAD)  # no extension, but a job script
    (tmp_path / "notes.txt").write_text("hello\n")
    items = json.loads(run(["--format", "json", str(tmp_path)]).stdout)
    assert {Path(i["path"]).name for i in items} == {"job"}


def test_bad_config_names_the_key(tmp_path):
    (tmp_path / ".sbatch-lint.toml").write_text("[profile]\nslurm-versio = '22.05'\n")
    (tmp_path / "j.sbatch").write_text(GOOD)
    r = run([str(tmp_path / "j.sbatch")])
    assert r.returncode == 2 and "slurm-versio" in r.stderr and "Traceback" not in r.stderr


def test_a_broken_pyproject_that_holds_our_table_is_an_error_not_ignored(tmp_path):
    (tmp_path / "j.sbatch").write_text(BAD)
    (tmp_path / "pyproject.toml").write_text('[tool.sbatch-lint]\nignore = ["SB201"\n')
    r = run([str(tmp_path / "j.sbatch")])
    assert r.returncode == 2 and "pyproject.toml: invalid TOML" in r.stderr
    # broken elsewhere but naming our table: still ours, still an error
    (tmp_path / "pyproject.toml").write_text('[tool.ruff\n[tool.sbatch-lint]\nignore = ["SB201"]\n')
    assert run([str(tmp_path / "j.sbatch")]).returncode == 2
    # a broken pyproject.toml without our table is someone else's: linted with the defaults
    (tmp_path / "pyproject.toml").write_text("[tool.ruff\n")
    assert run([str(tmp_path / "j.sbatch")]).returncode == 1


def test_the_summary_counts_named_files_that_are_not_job_scripts(tmp_path):
    (tmp_path / "build.sh").write_text("#!/bin/bash\nset -x\necho hi\n")
    (tmp_path / "j.sbatch").write_text(BAD)
    r = run([str(tmp_path / "build.sh"), str(tmp_path / "j.sbatch")])
    assert r.stdout.rstrip().endswith(
        "Linted 2 file(s): 1 finding(s); 1 file(s) not job scripts (no `#SBATCH` line, not "
        "*.sbatch/*.slurm), so no rule applied.")
    assert run([str(tmp_path / "j.sbatch")]).stdout.rstrip().endswith(
        "Linted 1 file(s): 1 finding(s).")


def test_select_and_ignore_take_rule_names(tmp_path):
    (tmp_path / "j.sbatch").write_text(BAD)
    r = run(["--format", "json", "--ignore", "torchrun-per-task", str(tmp_path / "j.sbatch")])
    assert "SB201" not in {i["code"] for i in json.loads(r.stdout)}
    r = run(["--select", "torchrun-per-task", "--format", "json", str(tmp_path / "j.sbatch")])
    assert {i["code"] for i in json.loads(r.stdout)} == {"SB201"}
    r = run(["--ignore", "no-such-rule", str(tmp_path / "j.sbatch")])
    assert r.returncode == 2 and "'no-such-rule' is not a rule code or name" in r.stderr


@pytest.mark.parametrize("version,ok", [("22.05", True), ("25.11", True), ("26.05", True),
                                        ("99.1", False), ("22.06", False), ("27.05", False)])
def test_slurm_version_must_be_a_release_the_table_knows(tmp_path, version, ok):
    (tmp_path / ".sbatch-lint.toml").write_text(f'[profile]\nslurm-version = "{version}"\n')
    (tmp_path / "j.sbatch").write_text(GOOD)
    r = run([str(tmp_path / "j.sbatch")])
    assert (r.returncode == 0) == ok, r.stderr
    assert ok or "is not a Slurm release the option table knows" in r.stderr


def test_config_ignore_and_severity(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.sbatch-lint]\nignore = ['SB201']\n[tool.sbatch-lint.severity]\nSB202 = 'info'\n")
    (tmp_path / "j.sbatch").write_text(BAD)
    items = json.loads(run(["--format", "json", str(tmp_path / "j.sbatch")]).stdout)
    assert "SB201" not in {i["code"] for i in items}


def test_explain_and_list_rules(capsys):
    assert main(["--list-rules"]) == 0
    assert "SB201" in capsys.readouterr().out
    assert main(["--explain", "SB201"]) == 0
    assert "SB201" in capsys.readouterr().out
    assert main(["--explain", "SB999"]) == 2


def test_cli_does_not_import_pygls():
    code = ("import sys; from sbatch_lsp.cli import main; main(['--list-rules']); "
            "print('pygls' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert out.strip().endswith("False")


def test_suppression_and_unused_suppression():
    from sbatch_lsp.lint import lint
    text = BAD.replace("srun torchrun", "# sbatch-lint: disable=SB201\nsrun torchrun")
    codes = [d.code for d in lint(text).diagnostics]
    assert "SB201" not in codes
    text = GOOD.replace("torchrun", "# sbatch-lint: disable=SB201\ntorchrun")
    assert [d.code for d in lint(text).diagnostics] == ["SB001"]


def test_diff_reports_the_file_as_it_is(tmp_path):
    f = tmp_path / "crlf.sbatch"
    f.write_bytes(b"#!/bin/bash\r\n#SBATCH -N 1\r\necho hi\r\n")
    r = run(["--diff", str(f)])
    assert r.returncode == 1  # the file still has the fault
    assert r.stdout.startswith("---") and "SB100" in r.stderr and "SB100" not in r.stdout


def test_fix_stdin_prints_only_the_fixed_script():
    r = run(["--fix", "--stdin-filename", "j.sbatch", "-"],
            stdin="#!/bin/bash\r\n#SBATCH -N 1\r\necho hi\r\n")
    assert r.stdout == "#!/bin/bash\n#SBATCH -N 1\necho hi\n"
    assert "Fixed 1" in r.stderr and r.returncode == 0


def test_summary_counts_only_linted_files(tmp_path):
    good = tmp_path / "good.sbatch"
    good.write_text(GOOD)
    r = run([str(good), str(tmp_path / "missing.sbatch")])
    assert r.returncode == 2 and "Linted 1 file(s)" in r.stdout


def test_select_options_repeat_and_must_name_rules(tmp_path):
    bad = tmp_path / "bad.sbatch"
    bad.write_text(BAD)
    r = run(["--format", "json", "--ignore", "SB201", "--ignore", "SB203", str(bad)])
    assert not {"SB201", "SB203"} & {i["code"] for i in json.loads(r.stdout)}
    r = run(["--select", "SB9", str(bad)])
    assert r.returncode == 2 and "matches no rule" in r.stderr


def test_terminal_control_characters_are_not_echoed(tmp_path):
    f = tmp_path / "esc.sbatch"
    f.write_text("#!/bin/bash\n#SBATCH --nodes=2\ntorchrun --nnodes=2 t.py \x1b]0;pwned\x07\n")
    r = run([str(f)])
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout and "SB205" in r.stdout


def test_random_bytes_are_binary(tmp_path):
    import random
    rnd = random.Random(1)
    f = tmp_path / "noise.sbatch"
    f.write_bytes(bytes(rnd.choice(range(1, 256)) for _ in range(4096)))
    r = run([str(f)])
    assert r.returncode == 2 and "binary" in r.stderr


def test_directory_skips_other_languages(tmp_path):
    (tmp_path / "NOTES.md").write_text("# Sbatch tips\n")
    (tmp_path / "gen.py").write_text("# sbatch options below\nprint(1)\n")
    (tmp_path / "job").write_text(GOOD)
    r = run(["--format", "json", str(tmp_path)])
    assert json.loads(r.stdout) == [] and r.returncode == 0


def test_caret_matches_the_masked_token(tmp_path):
    f = tmp_path / "s.sbatch"
    f.write_text(f"#!/bin/bash\n#SBATCH -N 1\nexport HF_TOKEN={TOKEN}\npython x.py\n")
    out = run([str(f)]).stdout.splitlines()
    i = next(k for k, line in enumerate(out) if "export HF_TOKEN=hf_****" in line)
    shown, caret = out[i].split("| ", 1)[1], out[i + 1].split("| ", 1)[1]
    lead = len(caret) - len(caret.lstrip(" "))
    assert lead == shown.index("hf_****") and caret.strip() == "^" * len("hf_****")


def test_explain_accepts_a_rule_name(capsys):
    assert main(["--explain", "torchrun-per-task"]) == 0
    assert "SB201" in capsys.readouterr().out


def test_binary_stdin_is_an_input_error():
    r = subprocess.run([sys.executable, "-m", "sbatch_lsp", "-"], input=b"\0\1\2" * 100,
                       capture_output=True)
    assert r.returncode == 2 and b"binary" in r.stderr and b"Traceback" not in r.stderr


def test_fix_keeps_the_encoding_and_symbolic_links(tmp_path):
    target = tmp_path / "real.sbatch"
    target.write_bytes(b"#!/bin/bash\r\n#SBATCH -J caf\xe9\r\necho ok\r\n")
    link = tmp_path / "link.sbatch"
    link.symlink_to(target)
    assert run(["--fix", str(link)]).returncode == 0
    assert link.is_symlink() and target.read_bytes() == b"#!/bin/bash\n#SBATCH -J caf\xe9\necho ok\n"
    r = subprocess.run([sys.executable, "-m", "sbatch_lsp", "--fix", "-"],
                       input=b"#!/bin/bash\n#SBATCH -J caf\xe9\n", capture_output=True)
    assert r.stdout == b"#!/bin/bash\n#SBATCH -J caf\xe9\n"


@pytest.mark.parametrize("comment,left", [
    ("disable=SB201", []),
    ("disable=SB2", []),
    ("disable=torchrun-per-task", []),
    ("disable=SB999", ["SB001", "SB201"]),
    ("disable=SB205", ["SB001", "SB201"]),
])
def test_suppression_forms(comment, left):
    from sbatch_lsp.lint import lint
    text = BAD.replace("srun torchrun", f"# sbatch-lint: {comment}\nsrun torchrun")
    assert sorted(d.code for d in lint(text).diagnostics) == left


def test_empty_selections_are_usage_errors(tmp_path):
    good = tmp_path / "good.sbatch"
    good.write_text(GOOD)
    for flag in ("--select=", "--ignore=", "--extend-select= , "):
        assert run([flag, str(good)]).returncode == 2


def test_a_helper_script_that_is_not_a_job_gets_nothing(tmp_path):
    (tmp_path / "helper.sh").write_text("echo hi\n")
    (tmp_path / "job.sh").write_text("echo hi\n#SBATCH -N 1\n")
    items = json.loads(run(["--format", "json", str(tmp_path)]).stdout)
    assert {(Path(i["path"]).name, i["code"]) for i in items} == {("job.sh", "SB100"),
                                                                    ("job.sh", "SB101")}


@pytest.mark.parametrize(("name", "text"), [
    ("Makefile", ("all: submit\n\n# sbatch the training job on the cluster\nsubmit:\n"
                 "\tsbatch train.sbatch\n")),
    ("setup.py", "# sbatch-lint: disable=SB101\nprint('hi')\n"),
    ("run.sh", "#!/bin/bash\n# Submit with: sbatch job.sbatch\necho hi\n"),
])
def test_a_comment_that_mentions_sbatch_makes_no_job_script(tmp_path, name, text):
    """Prose about sbatch in a comment is not a directive: --fix leaves the file alone (it once
    put a #! line at the top of such a Makefile: found by a fresh user)."""
    path = tmp_path / name
    path.write_text(text)
    assert json.loads(run(["--format", "json", str(path)]).stdout) == []
    assert run(["--fix", "--unsafe-fixes", str(path)]).returncode == 0
    assert path.read_text() == text


@pytest.mark.parametrize("line", ["#SBATCH <SLURM OPTIONS> --nodes=2", "# SBATCH --nodes=2",
                                  "#sbatch -N 2", "  #SBATCH --time=1:00:00", "# SBATCH"])
def test_a_directive_or_a_lookalike_makes_a_job_script(tmp_path, line):
    path = tmp_path / "job.sh"
    path.write_text(f"#!/bin/bash\n{line}\nsrun hostname\n")
    assert run(["--format", "json", str(path)]).returncode in (0, 1)
    assert "not job scripts" not in run([str(path)]).stdout


def test_a_subcommand_lookalike_gets_the_option_it_means(tmp_path, monkeypatch, capsys):
    """`sbatch-lint explain SB201` names files "explain" and "SB201": the missing "explain"
    says which option does that."""
    from sbatch_lsp.cli import main
    monkeypatch.chdir(tmp_path)
    assert main(["explain", "SB201"]) == 2
    err = capsys.readouterr().err
    assert "explain: cannot read: no such file (to explain a rule, use `sbatch-lint --explain " \
        "CODE`)" in err
    assert "SB201: cannot read: no such file\n" in err


def test_a_file_named_through_a_symbolic_link_and_dotdot_gets_its_real_folders_config(
        tmp_path, monkeypatch):
    """``link/../job.sbatch`` opens the file in the folder above the link's target (the kernel
    resolves ``..`` after the link), and the configuration found for it is that folder's: the
    run's per-folder memo must not hand it the configuration of the folder the path reads as
    (before, it was keyed by the lexical absolute path, and the file named second got the
    first file's configuration)."""
    (tmp_path / "real" / "inner").mkdir(parents=True)
    (tmp_path / "real" / ".sbatch-lint.toml").write_text('ignore = ["SB"]\n')
    (tmp_path / "real" / "job.sbatch").write_text(BAD)
    (tmp_path / "job.sbatch").write_text(BAD)
    (tmp_path / "link").symlink_to(tmp_path / "real" / "inner")
    monkeypatch.chdir(tmp_path)
    for names in (["job.sbatch", "link/../job.sbatch"], ["link/../job.sbatch", "job.sbatch"]):
        r = run(["--no-cache", "--format", "json", *names])
        found = {item["path"] for item in json.loads(r.stdout)}
        assert found == {"job.sbatch"}, names  # the real folder's configuration ignores all
    # a link to a file is in the link's folder (find_config starts from the link's parent)
    (tmp_path / "real" / "to-top.sbatch").symlink_to(tmp_path / "job.sbatch")
    (tmp_path / "to-real.sbatch").symlink_to(tmp_path / "real" / "job.sbatch")
    for names, linted in ((["real/job.sbatch", "to-real.sbatch"], "to-real.sbatch"),
                          (["job.sbatch", "real/to-top.sbatch"], "job.sbatch")):
        r = run(["--no-cache", "--format", "json", *names])
        assert {item["path"] for item in json.loads(r.stdout)} == {linted}, names
