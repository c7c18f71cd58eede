"""The live check without a cluster (issue 15 item 3): what is sent, how answers are read and
anchored, and the clear messages when sbatch is missing or silent. A stand-in ``sbatch`` on PATH
records its standard input and prints a canned answer; tests/slurm/test_live_cluster.py asks the real
controller."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from sbatch_lsp import live
from sbatch_lsp.config import Config
from sbatch_lsp.lint import directives_of, outline
from sbatch_lsp.source import Source

TOKEN = "hf_" + "Q7vXk2LmN9pR4sT6uW8yZ1aB3cD5eF7gH9"
SCRIPT = f"""#!/bin/bash
# a comment the controller need not see
#SBATCH --nodes=2
#SBATCH --partition=gpu   # trailing comment
#SBATCH --time=2-00:00:00

export HF_TOKEN={TOKEN}
srun python train.py
#SBATCH --late=ignored
"""


def _fake_sbatch(folder: Path, status: int, answer: str, sleep: float = 0) -> Path:
    """An ``sbatch`` that writes its arguments and standard input to ``folder/seen`` and prints
    ``answer`` on standard error, exiting ``status``."""
    exe = folder / "sbatch"
    exe.write_text(f"""#!{sys.executable}
import json, sys, time
from pathlib import Path
Path({str(folder / 'seen')!r}).write_text(json.dumps([sys.argv[1:], sys.stdin.read()]))
time.sleep({sleep})
sys.stderr.write({answer!r})
sys.exit({status})
""")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


@pytest.fixture
def fake(tmp_path, monkeypatch):
    def make(status: int, answer: str, sleep: float = 0) -> Path:
        _fake_sbatch(tmp_path, status, answer, sleep)
        monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
        return tmp_path / "seen"
    return make


def test_header_is_the_shebang_and_the_directives_sbatch_reads():
    source = Source(SCRIPT)
    block = directives_of(source, outline(source), Config())
    assert live.header(SCRIPT, block) == ("#!/bin/bash\n#SBATCH --nodes=2\n"
                                          "#SBATCH --partition=gpu   # trailing comment\n"
                                          "#SBATCH --time=2-00:00:00\n")


def test_only_the_header_reaches_sbatch_and_the_answer_is_read(fake, tmp_path):
    seen = fake(0, "sbatch: Job 7 to start at 2026-12-01T13:00:00 using 8 processors on nodes "
                   "n[1-2] in partition gpu\n")
    d = live.check(SCRIPT, str(tmp_path / "job.sbatch"))
    argv, stdin = json.loads(seen.read_text())
    assert argv == ["--test-only"]
    assert TOKEN not in stdin and "train.py" not in stdin and "--late" not in stdin
    assert stdin.startswith("#!/bin/bash\n#SBATCH --nodes=2\n")
    assert (d.code, int(d.severity), d.start) == ("SB790", 2, 0)  # info, on line 1
    assert "would accept" in d.message and "Job 7 to start at" in d.message


@pytest.mark.parametrize("answer,anchor", [
    (("sbatch: error: invalid partition specified: gpu\nallocation failure: Invalid partition "
     "name specified\n"), "--partition=gpu"),
    (("sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or "
     "exceeds some limit)\n"), "--time=2-00:00:00"),
    # a site job_submit filter's own words, naming the option
    (("sbatch: error: --nodes above 1 needs an allocation, see the user guide\nsbatch: error: "
     "Batch job submission failed: Unspecified error\n"), "--nodes=2"),
    # an ambiguous reason names no directive: line 1
    ("allocation failure: Requested node configuration is not available\n", "#!/bin/bash"),
])
def test_refusals_are_errors_at_the_directive_they_name(fake, tmp_path, answer, anchor):
    fake(1, answer)
    d = live.check(SCRIPT, str(tmp_path / "job.sbatch"))
    assert d.code == "SB790" and d.severity.label == "error"
    assert SCRIPT[d.start:d.end] == anchor, SCRIPT[d.start:d.end]
    assert "refuses" in d.message


def test_the_site_message_comes_first_and_secrets_are_masked(fake, tmp_path):
    fake(1, f"sbatch: error: token {TOKEN} is not an account\nsbatch: error: Batch job "
            "submission failed: Invalid account or account/partition combination specified\n")
    d = live.check(SCRIPT, str(tmp_path / "job.sbatch"))
    assert TOKEN not in d.message and "hf_" in d.message
    assert d.message.endswith("is not an account; Invalid account or account/partition "
                              "combination specified")


def test_missing_sbatch_is_a_clear_message(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(live.LiveError, match="sbatch is not on PATH"):
        live.check(SCRIPT, "job.sbatch")


def test_sbatch_lint_sbatch_names_the_sbatch_to_run(fake, tmp_path, monkeypatch):
    seen = fake(0, "sbatch: Job 1 to start at 2026-12-01T13:00:00 using 1 processors on nodes "
                   "n1 in partition gpu\n")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("SBATCH_LINT_SBATCH", str(tmp_path / "sbatch"))
    assert live.check(SCRIPT, str(tmp_path / "job.sbatch")).severity.label == "info"
    assert seen.exists()
    monkeypatch.setenv("SBATCH_LINT_SBATCH", str(tmp_path / "no-such-sbatch"))
    with pytest.raises(live.LiveError, match="SBATCH_LINT_SBATCH is .*not an executable"):
        live.check(SCRIPT, str(tmp_path / "job.sbatch"))


def test_a_silent_controller_times_out(fake, tmp_path):
    fake(0, "", sleep=10)
    with pytest.raises(live.LiveError, match="no answer within 0.5 s"):
        live.check(SCRIPT, str(tmp_path / "job.sbatch"), timeout=0.5)


def _cli(*args: str, env: dict | None = None, cwd: Path | None = None):
    return subprocess.run([sys.executable, "-m", "sbatch_lsp", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=60)


def test_cli_never_asks_unless_told(fake, tmp_path):
    seen = fake(1, "allocation failure: Invalid partition name specified\n")
    job = tmp_path / "job.sbatch"
    job.write_text(SCRIPT)
    run = _cli("--format", "json", "--no-cache", str(job), env=dict(os.environ))
    assert not seen.exists() and "SB790" not in run.stdout
    run = _cli("--format", "json", "--no-cache", "--live", str(job), env=dict(os.environ))
    assert seen.exists() and run.returncode == 1
    found = [f for f in json.loads(run.stdout) if f["code"] == "SB790"]
    assert [(f["line"], f["severity"]) for f in found] == [(4, "error")]
    assert TOKEN not in run.stdout + run.stderr


def test_cli_asks_nothing_about_a_file_that_is_not_a_job_script(fake, tmp_path):
    seen = fake(0, "")
    helper = tmp_path / "helper.sh"
    helper.write_text("#!/bin/bash\necho hi\n")
    run = _cli("--live", "--no-cache", str(helper), env=dict(os.environ))
    assert run.returncode == 0 and not seen.exists()
    run = _cli("--live", "--convert", "srun-native", str(helper), env=dict(os.environ))
    assert run.returncode == 2 and "--live asks the controller" in run.stderr


def test_cli_without_sbatch_exits_2_with_one_line(tmp_path):
    job = tmp_path / "job.sbatch"
    job.write_text(SCRIPT)
    env = {**os.environ, "PATH": str(tmp_path)}
    run = _cli("--live", str(job), env=env)
    assert run.returncode == 2
    assert "live check: sbatch is not on PATH" in run.stderr and "Traceback" not in run.stderr


#: what an installed sbatch with no slurm.conf and no DNS SRV record prints (Slurm 22.05.8)
UNCONFIGURED = ("sbatch: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"
                "sbatch: error: fetch_config: DNS SRV lookup failed\n"
                "sbatch: error: _establish_config_source: failed to fetch config\n"
                "sbatch: fatal: Could not establish a configuration source\n")


@pytest.mark.parametrize("answer", [
    UNCONFIGURED,
    "sbatch: error: Unable to contact slurm controller (connect failure)\n",
])
def test_an_unreached_controller_is_no_answer_about_the_job(fake, tmp_path, answer):
    """sbatch that reached no controller says nothing about the job: the check stops (exit 2
    in the CLI) instead of reporting a refusal on line 1."""
    fake(1, answer)
    with pytest.raises(live.LiveError, match="reached no controller"):
        live.check(SCRIPT, str(tmp_path / "job.sbatch"))
    job = tmp_path / "job.sbatch"
    job.write_text(SCRIPT)
    run = _cli("--live", "--no-cache", str(job), env=dict(os.environ))
    assert run.returncode == 2 and "reached no controller" in run.stderr
    assert "SB790" not in run.stdout and "Traceback" not in run.stderr


def test_a_refusal_naming_the_controller_is_still_a_refusal():
    """A controller that answers "Batch job submission failed: …" did answer."""
    a = live.read_answer(1, "sbatch: error: Batch job submission failed: Invalid partition name "
                            "specified\n")
    assert not a.accepted and a.reason == "Invalid partition name specified"


def test_an_unreached_controller_message_is_masked(fake, tmp_path):
    """The "reached no controller" message quotes sbatch's last line, which may echo a
    directive's value: a token there is masked like every other output."""
    token = "hf_" + "Zx9Wv8Ut7Sr6Qp5On4Ml3Kj2Ih1Gf0EdCb"
    fake(1, f"sbatch: error: Unable to contact slurm controller (connect failure) {token}\n")
    script = SCRIPT.replace("#SBATCH --nodes=2", f"#SBATCH --nodes=2\n#SBATCH --comment={token}")
    with pytest.raises(live.LiveError, match="reached no controller") as err:
        live.check(script, str(tmp_path / "job.sbatch"))
    assert token not in str(err.value)
