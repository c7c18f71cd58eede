"""``--format gitlab`` (GitLab Code Quality) and the JSON Schemas ``--schema NAME`` prints: every
JSON output validates against its shipped schema, and the schemas reject what they should."""
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import check_builtin_schema

from sbatch_lsp.schemas import names, schema

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT.parent / "shared" / "cases"
BAD = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=n1:29400 t.py
"""
TOKEN = "hf_" + "FAKE" * 8 + "42"


def run(args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "sbatch_lsp", *args], capture_output=True,
                          text=True, cwd=cwd, env=env)


def validator(name: str) -> jsonschema.Draft202012Validator:
    s = schema(name)
    jsonschema.Draft202012Validator.check_schema(s)
    return jsonschema.Draft202012Validator(s)


def errors(name: str, value) -> list[str]:
    return [f"{list(e.path)}: {e.message}" for e in validator(name).iter_errors(value)]


def test_schema_flag_prints_each_shipped_schema_and_refuses_unknown_names():
    assert {"lint", "gitlab"} <= set(names())
    for name in names():
        r = run(["--schema", name])
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout) == schema(name)
    r = run(["--schema", "nope"])
    assert r.returncode == 2 and "unknown schema 'nope'" in r.stderr and "lint" in r.stderr
    assert "Traceback" not in r.stderr


def test_schemas_ship_in_the_wheel_data():
    import tomllib
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "schemas/*.schema.json" in data["package-data"]["sbatch_lsp"]


def test_lint_json_of_every_case_matches_the_lint_schema():
    files = sorted(str(p) for p in CASES.glob("*.sbatch")) + [str(ROOT / "examples")]
    items = json.loads(run(["--format", "json", *files]).stdout)
    assert len(items) > 50 and any(i["fixes"] for i in items) and any(i["related"] for i in items)
    assert errors("lint", items) == []
    # the schema rejects what DESIGN.md's shape forbids
    bad = [dict(items[0], severity="fatal"), dict(items[0], column=0),
           {k: v for k, v in items[0].items() if k != "fixes"}, dict(items[0], extra=1)]
    for item in bad:
        assert errors("lint", [item]), item


def test_gitlab_report_fields_severities_and_paths(tmp_path):
    (tmp_path / ".git").mkdir()  # the repository root
    sub = tmp_path / "jobs"
    sub.mkdir()
    (sub / "bad.sbatch").write_text(BAD)
    (sub / "late.sbatch").write_text("#!/bin/bash\n#SBATCH -N 1\necho hi\n#SBATCH --time=1:00\n"
                                     "#SBATCH -N 1 --ntasks-per-node=2\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "CI_PROJECT_DIR"}
    r = run(["--format", "gitlab", "bad.sbatch", "./late.sbatch"], cwd=sub, env=env)
    assert r.returncode == 1, r.stderr
    issues = json.loads(r.stdout)
    assert errors("gitlab", issues) == []
    by_check = {i["check_name"]: i for i in issues}
    sb201 = by_check["sbatch-lint/SB201"]
    assert sb201["severity"] == "major" and sb201["description"].startswith("SB201 srun starts 8")
    # paths are relative to the repository root (the folder holding .git), without ./
    assert sb201["location"] == {"path": "jobs/bad.sbatch", "lines": {"begin": 5, "end": 5}}
    assert {i["location"]["path"] for i in issues} == {"jobs/bad.sbatch", "jobs/late.sbatch"}
    # the severities follow the table: error -> major, warning -> minor, info -> info
    levels = {i["check_name"]: i["severity"] for i in issues}
    json_items = json.loads(run(["--format", "json", "bad.sbatch", "late.sbatch"], cwd=sub).stdout)
    expected = {"error": "major", "warning": "minor", "info": "info", "hint": "info"}
    assert levels == {f"sbatch-lint/{i['code']}": expected[i["severity"]] for i in json_items}
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    # in a GitLab job, paths are relative to $CI_PROJECT_DIR
    r = run(["--format", "gitlab", "bad.sbatch"], cwd=sub, env={**env, "CI_PROJECT_DIR": str(sub)})
    assert {i["location"]["path"] for i in json.loads(r.stdout)} == {"bad.sbatch"}


def fingerprints(tmp_path, text: str) -> dict:
    f = tmp_path / "job.sbatch"
    f.write_text(text)
    r = run(["--format", "gitlab", "job.sbatch"], cwd=tmp_path,
            env={**__import__("os").environ, "CI_PROJECT_DIR": str(tmp_path)})
    issues = json.loads(r.stdout)
    assert errors("gitlab", issues) == []
    return {i["fingerprint"]: (i["check_name"], i["location"]["lines"]["begin"]) for i in issues}


def test_fingerprints_survive_moved_lines_and_tell_twins_apart(tmp_path):
    twin = "srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d " \
           "--rdzv-endpoint=n1:29400 t.py\n"
    text = BAD + twin
    before = fingerprints(tmp_path, text)
    codes = [c for c, _ in before.values()]
    assert codes.count("sbatch-lint/SB201") == 2  # two identical findings, two fingerprints
    # lines added above move every finding down; the fingerprints stay
    moved = text.replace("#SBATCH --gpus-per-node=8\n",
                         "#SBATCH --gpus-per-node=8\n# a comment\necho start\n\n")
    after = fingerprints(tmp_path, moved)
    assert set(after) == set(before)
    assert all(after[f][1] == before[f][1] + 3 for f in before if before[f][1] >= 5)
    # editing the faulty line itself makes a new finding
    edited = fingerprints(tmp_path, text.replace("t.py\n", "train.py\n", 1))
    assert set(edited) != set(before)


def test_gitlab_report_never_holds_a_secret(tmp_path):
    f = tmp_path / "s.sbatch"
    f.write_text(f"#!/bin/bash\n#SBATCH -N 1\nexport HF_TOKEN={TOKEN}\npython x.py --token {TOKEN}\n")
    r = run(["--format", "gitlab", str(f)], cwd=tmp_path)
    assert TOKEN not in r.stdout + r.stderr
    issues = json.loads(r.stdout)
    assert any(i["check_name"] == "sbatch-lint/SB501" for i in issues)
    assert errors("gitlab", issues) == []


@pytest.mark.parametrize("bad", [
    {"location": {"path": "./x.sbatch", "lines": {"begin": 1}}},
    {"location": {"path": "x.sbatch", "lines": {"begin": 0}}},
    {"severity": "error"},
    {"fingerprint": "not-hex"},
])
def test_gitlab_schema_rejects_what_gitlab_does_not_read(bad):
    good = {"description": "SB201 x", "check_name": "sbatch-lint/SB201", "fingerprint": "a" * 64,
            "severity": "major", "location": {"path": "x.sbatch", "lines": {"begin": 1}}}
    assert errors("gitlab", [good]) == []
    assert errors("gitlab", [good | bad])


def test_readme_gitlab_ci_snippet_is_valid_and_its_report_validates(tmp_path):
    import os
    import re
    import shlex

    import yaml

    readme = (ROOT / "README.md").read_text()
    text = next(b for b in re.findall(r"```yaml\n(.*?)```", readme, re.S)
                if b.startswith("# .gitlab-ci.yml"))
    ci = tmp_path / ".gitlab-ci.yml"
    ci.write_text(text)
    check_builtin_schema("vendor.gitlab-ci", ci)
    job = yaml.safe_load(text)["sbatch-lint"]
    report = job["artifacts"]["reports"]["codequality"]
    lint = next(line for line in job["script"] if line.startswith("sbatch-lint"))
    # run the job's lint line on a repository holding the examples, as the runner would
    import shutil
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples", repo / "examples")
    env = {**os.environ, "CI_PROJECT_DIR": str(repo),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    r = subprocess.run(shlex.split(lint), cwd=repo, env=env, capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    issues = json.loads((repo / report).read_text())
    assert issues and errors("gitlab", issues) == []
    assert all(i["location"]["path"].startswith("examples/bad/") for i in issues)
