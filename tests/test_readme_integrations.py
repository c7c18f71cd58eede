"""The README's VS Code settings and GitHub Actions workflow do what the README says (its
pre-commit snippet is exercised by tests/test_pre_commit.py)."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, re.S)


def block(lang: str, first_line: str | None = None) -> str:
    return next(b for lg, b in BLOCKS if lg == lang and (first_line is None or
                                                          b.startswith(first_line)))


def test_vscode_settings_snippet_matches_the_extension_settings():
    settings = json.loads(block("jsonc"))
    declared = json.loads((ROOT / "vscode-extension" / "package.json").read_text())[
        "contributes"]["configuration"]["properties"]
    for key, value in settings.items():
        assert key in declared, f"README names {key}, which the extension does not declare"
        schema = {k: v for k, v in declared[key].items()
                  if k not in ("markdownDescription", "description", "scope")}
        jsonschema.validate(value, schema)
    # and the schemas do reject a wrong value (a level that is not a level)
    try:
        jsonschema.validate({"SB204": "fatal"}, {k: v for k, v in declared[
            "sbatchLsp.severity"].items() if k != "markdownDescription"})
        raise AssertionError("an unknown severity passed the declared schema")
    except jsonschema.ValidationError:
        pass


def test_github_workflow_is_a_valid_workflow_and_its_lint_step_writes_sarif(tmp_path):
    text = block("yaml", "# .github/workflows/")
    wf = tmp_path / "sbatch-lint.yml"
    wf.write_text(text)
    r = subprocess.run([str(Path(sys.executable).with_name("check-jsonschema")),
                        "--builtin-schema", "vendor.github-workflows", str(wf)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    steps = yaml.safe_load(text)["jobs"]["sbatch-lint"]["steps"]
    upload = next(s for s in steps if "upload-sarif" in s.get("uses", ""))
    lint = next(s for s in steps if s.get("run", "").startswith("sbatch-lint"))
    assert upload["with"]["sarif_file"] in lint["run"]
    # run the lint step as the runner would, on a repository holding the example scripts
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples", repo / "examples")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    r = subprocess.run(shlex.split(lint["run"]), cwd=repo, env=env, capture_output=True, text=True)
    assert r.returncode == 1, r.stderr  # examples/bad has findings: the job fails, upload runs
    log = json.loads((repo / upload["with"]["sarif_file"]).read_text())
    uris = {res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for res in log["runs"][0]["results"]}
    assert uris and all(u.startswith("examples/bad/") for u in uris)
