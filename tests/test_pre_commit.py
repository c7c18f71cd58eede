"""The pre-commit hooks of .pre-commit-hooks.yaml, run by the real pre-commit in a throw-away git
repository: a commit with a broken job script is blocked with readable findings, a good one goes
through, non-job scripts are passed over, and sbatch-lint-fix repairs what it safely can."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import require_tool

ROOT = Path(__file__).resolve().parents[1]
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
HELPER = "#!/bin/bash\nset -eu\necho \"preparing $1\"\n"
# Markdown that quotes a directive: not a candidate file at all
NOTES = "# Notes\n\n```\n#SBATCH --ntasks-per-node=8\nsrun torchrun t.py\n```\n"


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=ENV)


ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
       "GIT_CONFIG_NOSYSTEM": "1", "NO_COLOR": "1"}


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """A one-commit snapshot of this working tree (tracked and new files, as they are now), so
    the hooks under test are the ones on disk, committed or not. Returns (path, sha, env)."""
    require_tool("git")
    base = tmp_path_factory.mktemp("precommit")
    # HOME stays: pip's cache there saves the hook environment's downloads
    env = {**ENV, "PRE_COMMIT_HOME": str(base / "cache"), "GIT_CONFIG_GLOBAL": os.devnull}
    ENV.update(env)
    snap = base / "hooks"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (snap / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, snap / rel)
    git(snap, "init", "-q")
    git(snap, "add", "-A")
    assert git(snap, "commit", "-qm", "snapshot").returncode == 0
    sha = git(snap, "rev-parse", "HEAD").stdout.strip()
    return snap, sha, env


def pre_commit(cwd, *args):
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd,
                          capture_output=True, text=True, env=ENV)


def readme_config() -> dict:
    """The README's .pre-commit-config.yaml snippet."""
    text = (ROOT / "README.md").read_text()
    return yaml.safe_load(next(b for b in re.findall(r"```yaml\n(.*?)```", text, re.S)
                               if b.startswith("# .pre-commit-config.yaml")))


def user_repo(path: Path, hook_repo, hook_id: str) -> Path:
    """A git repository with pre-commit installed, configured by the README's snippet (its repo
    and rev pointing at the snapshot, with ``hook_id``)."""
    snap, sha, _ = hook_repo
    path.mkdir()
    git(path, "init", "-q")
    config = readme_config()
    entry = config["repos"][0]
    assert entry["hooks"] == [{"id": "sbatch-lint"}]
    entry.update(repo=str(snap), rev=sha, hooks=[{"id": hook_id}])
    (path / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    git(path, "add", ".pre-commit-config.yaml")
    r = pre_commit(path, "install")
    assert r.returncode == 0, r.stdout + r.stderr
    return path


def test_bad_commit_is_blocked_and_good_one_goes_through(tmp_path, hook_repo):
    repo = user_repo(tmp_path / "user", hook_repo, "sbatch-lint")
    (repo / "train.sbatch").write_text(GOOD)
    (repo / "prepare.sh").write_text(HELPER)
    (repo / "NOTES.md").write_text(NOTES)
    git(repo, "add", "-A")
    r = git(repo, "commit", "-m", "good job, helper, notes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sbatch-lint" in r.stdout + r.stderr and "Passed" in r.stdout + r.stderr

    (repo / "train.sbatch").write_text(BAD)
    git(repo, "add", "-A")
    head = git(repo, "rev-parse", "HEAD").stdout
    r = git(repo, "commit", "-m", "broken launch")
    out = r.stdout + r.stderr
    assert r.returncode != 0 and git(repo, "rev-parse", "HEAD").stdout == head
    # readable: the hook failed, where, which rule, why, and the source line under a caret
    assert "sbatch-lint" in out and "Failed" in out
    assert "train.sbatch:5:6: SB201 error" in out and "EADDRINUSE" in out
    assert "srun torchrun" in out and "^^^^^^^^" in out


def test_try_repo_passes_over_non_job_scripts(tmp_path, hook_repo):
    snap, _, _ = hook_repo
    repo = tmp_path / "user"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "prepare.sh").write_text(HELPER)
    (repo / "NOTES.md").write_text(NOTES)
    (repo / "logo.bin").write_bytes(bytes(range(256)))
    (repo / "bad.slurm").write_text(BAD)
    git(repo, "add", "-A")
    r = pre_commit(repo, "try-repo", str(snap), "sbatch-lint", "--verbose",
                   "--files", "prepare.sh", "NOTES.md", "logo.bin")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Linted 1 file(s): 0 finding(s)" in r.stdout  # prepare.sh only
    r = pre_commit(repo, "try-repo", str(snap), "sbatch-lint", "--all-files")
    assert r.returncode == 1 and "bad.slurm:5:6: SB201" in r.stdout
    assert "NOTES.md" not in r.stdout


def test_fix_hook_repairs_and_reports_what_remains(tmp_path, hook_repo):
    repo = user_repo(tmp_path / "user", hook_repo, "sbatch-lint-fix")
    crlf = b"#!/bin/bash\r\n#SBATCH --nodes=1\r\necho hi\r\n"
    (repo / "dos.sbatch").write_bytes(crlf)
    git(repo, "add", "-A")
    r = git(repo, "commit", "-m", "dos line endings")
    assert r.returncode != 0 and "files were modified by this hook" in r.stdout + r.stderr
    assert (repo / "dos.sbatch").read_bytes() == crlf.replace(b"\r\n", b"\n")
    assert "Fixed 1" in r.stdout + r.stderr
    git(repo, "add", "-A")
    r = git(repo, "commit", "-m", "dos line endings, fixed")
    assert r.returncode == 0, r.stdout + r.stderr


def test_non_job_scripts_do_not_load_the_engine(tmp_path):
    helper = tmp_path / "prepare.sh"
    helper.write_text(HELPER)
    code = ("import sys; from sbatch_lsp.cli import main; rc = main([sys.argv[1]]); "
            "print(rc, 'bashlex' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(helper)], capture_output=True,
                         text=True).stdout
    assert out.strip().endswith("0 False")


def test_hook_honours_exclude_and_per_file_ignores(tmp_path, hook_repo):
    repo = user_repo(tmp_path / "user", hook_repo, "sbatch-lint")
    (repo / ".sbatch-lint.toml").write_text(
        'exclude = ["vendor/"]\n[per-file-ignores]\n"legacy/**" = ["SB201"]\n')
    for rel in ("vendor/kit/run.sbatch", "legacy/old/run.sbatch"):
        (repo / rel).parent.mkdir(parents=True)
        (repo / rel).write_text(BAD)
    git(repo, "add", "-A")
    r = git(repo, "commit", "-m", "vendored and legacy scripts")
    assert r.returncode == 0, r.stdout + r.stderr  # pre-commit named both; neither fails
    (repo / "jobs").mkdir()
    (repo / "jobs" / "new.sbatch").write_text(BAD)
    git(repo, "add", "-A")
    r = git(repo, "commit", "-m", "a new script")
    assert r.returncode != 0 and "jobs/new.sbatch:5:6: SB201" in r.stdout + r.stderr
