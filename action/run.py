"""The script the composite action (``action.yml``) runs, with the Python sbatch-lint is
installed in.

Inputs arrive as environment variables (``INPUT_PATHS``, ``INPUT_FAIL_ON``, ``INPUT_CONFIG``,
``INPUT_SARIF_FILE``, ``INPUT_ANNOTATIONS``) next to the runner's own (``GITHUB_EVENT_NAME``,
``GITHUB_EVENT_PATH``, ``GITHUB_OUTPUT``). It writes the SARIF log, prints the findings as
workflow commands, and records ``exit-code`` and ``sarif-file`` in ``$GITHUB_OUTPUT``; it exits 0
itself so that the upload step runs before the action's last step fails with that exit code.

With no ``paths``, a pull request lints the job-script candidates it changes (``git diff`` from
the base commit named in the event to ``HEAD``; the base is fetched when the checkout is shallow)
and any other event lints the whole repository.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

#: the files the pre-commit hooks pass (.pre-commit-hooks.yaml): sbatch-lint then reports only
#: on job scripts among them
CANDIDATE = re.compile(r"(\.(sbatch|slurm|job|sh|bash)|(^|/)[^/.]+)$")
PR_EVENTS = {"pull_request", "pull_request_target"}


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=False)


def _text_file(path: str) -> bool:
    """An existing regular file without a NUL byte in its first 8 KiB (pre-commit's ``text``)."""
    try:
        with open(path, "rb") as f:
            return b"\0" not in f.read(8192)
    except OSError:
        return False


def changed_scripts(event: dict) -> list[str] | None:
    """The job-script candidates a pull request changes (added, copied, modified or renamed),
    relative to the working directory; None when the base commit cannot be read (then the
    caller lints everything)."""
    base = ((event.get("pull_request") or {}).get("base") or {}).get("sha")
    if not base:
        return None
    if _git("cat-file", "-e", f"{base}^{{commit}}").returncode != 0:
        _git("fetch", "--no-tags", "--quiet", "--depth=1", "origin", base)
    r = _git("diff", "--name-only", "--no-renames", "--diff-filter=ACMR", "-z", base, "HEAD")
    if r.returncode != 0:
        return None
    top = _git("rev-parse", "--show-toplevel").stdout.strip() or "."
    names = [n for n in r.stdout.split("\0") if n]
    out = []
    for name in names:
        path = os.path.relpath(os.path.join(top, name))
        if CANDIDATE.search(name) and _text_file(path):
            out.append(path)
    return out


def targets(env: dict[str, str]) -> tuple[list[str], str]:
    """What to lint and why: the ``paths`` input, a pull request's changed scripts, or ``.``."""
    given = shlex.split(env.get("INPUT_PATHS", ""))
    if given:
        return given, "the given paths"
    if env.get("GITHUB_EVENT_NAME") in PR_EVENTS and env.get("GITHUB_EVENT_PATH"):
        try:
            event = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text("utf-8"))
        except (OSError, ValueError):
            event = {}
        changed = changed_scripts(event)
        if changed is not None:
            return changed, "the job scripts this pull request changes"
        print("::notice title=sbatch-lint::the pull request's base commit could not be read; "
              "linting the whole repository")
    return ["."], "the whole repository"


def lint_args(env: dict[str, str]) -> list[str]:
    """The options every sbatch-lint run of the action shares."""
    args = []
    if env.get("INPUT_FAIL_ON", "").strip():
        args += ["--fail-on", env["INPUT_FAIL_ON"].strip()]
    if env.get("INPUT_CONFIG", "").strip():
        args += ["--config", env["INPUT_CONFIG"].strip()]
    return args


def _empty_sarif(path: str) -> None:
    """A SARIF log with no results (code scanning then closes the alerts of fixed files)."""
    from sbatch_lsp import __version__
    from sbatch_lsp.output import format_sarif

    Path(path).write_text(format_sarif([], [], __version__) + "\n", "utf-8")


def run(env: dict[str, str]) -> int:
    """Lint as the inputs say; returns sbatch-lint's exit code (0, 1 or 2)."""
    sarif = env.get("INPUT_SARIF_FILE", "").strip() or "sbatch-lint.sarif"
    paths, why = targets(env)
    print(f"sbatch-lint: linting {why}")
    if not paths:
        print("sbatch-lint: no job scripts to lint")
        _empty_sarif(sarif)
        return 0
    cli = [sys.executable, "-m", "sbatch_lsp"]
    shared = lint_args(env)
    code = subprocess.run([*cli, "--format", "sarif", "--output-file", sarif, *shared,
                           "--", *paths], check=False).returncode
    if env.get("INPUT_ANNOTATIONS", "true").strip().lower() != "false":
        subprocess.run([*cli, "--format", "github", *shared, "--", *paths], check=False)
    return code if Path(sarif).is_file() else max(code, 2)


def main() -> int:
    """Entry point: run, then record the outputs; always 0 (the action's last step fails)."""
    env = dict(os.environ)
    code = run(env)
    sarif = env.get("INPUT_SARIF_FILE", "").strip() or "sbatch-lint.sarif"
    outputs = {"exit-code": str(code), "sarif-file": sarif if Path(sarif).is_file() else ""}
    if env.get("GITHUB_OUTPUT"):
        with open(env["GITHUB_OUTPUT"], "a", encoding="utf-8") as f:
            f.writelines(f"{k}={v}\n" for k, v in outputs.items())
    else:
        print(json.dumps(outputs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
