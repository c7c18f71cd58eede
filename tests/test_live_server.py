"""The editor's live check (issue 15 item 3) end to end with pytest-lsp: the
``sbatch-lsp.liveCheck`` command runs ``sbatch --test-only`` (a stand-in on the server's PATH
that records what it was sent) on an open job script and returns the SB790 finding in the CLI's
JSON shape; only the ``#!`` line and the directives are sent; the check never runs on its own;
bad requests get an error in words. One server for the module."""
from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_support import SERVER, initialize, open_doc, publish_for

FAKE = Path(tempfile.mkdtemp(prefix="sbatch-lsp-live-"))
SEEN = FAKE / "seen"
(FAKE / "sbatch").write_text(f"""#!{sys.executable}
import sys
from pathlib import Path
head = sys.stdin.read()
with open({str(SEEN)!r}, "a") as f:
    f.write(head + "\\0")
if "--partition=nope" in head:
    sys.stderr.write("sbatch: error: invalid partition specified: nope\\n"
                     "allocation failure: Invalid partition name specified\\n")
    sys.exit(1)
sys.stderr.write("sbatch: Job 3 to start at 2026-12-01T13:00:00 using 4 processors on nodes "
                 "node1 in partition debug\\n")
""")
(FAKE / "sbatch").chmod(0o755 | stat.S_IXUSR)
ENV = {**os.environ, "PATH": f"{FAKE}{os.pathsep}{os.environ.get('PATH', '')}"}
TOKEN = "hf_" + "Wm4Ns8Pq2Rt6Vx1Yz5Ab9Cd3Ef7Gh0Jk2"
SCRIPT = f"#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --partition=nope\n\nexport HF_TOKEN={TOKEN}\nsrun hostname\n"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=ENV),
                    scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("live")
    lsp_client.root = root
    await initialize(lsp_client, "visual-studio-code", root)
    yield
    await lsp_client.shutdown_session()


async def run(client: LanguageClient, *arguments):
    return await client.workspace_execute_command_async(t.ExecuteCommandParams(
        command="sbatch-lsp.liveCheck", arguments=list(arguments)))


@pytest.mark.asyncio(loop_scope="module")
async def test_the_command_is_advertised_and_never_runs_on_its_own(client: LanguageClient):
    commands = client.init_result.capabilities.execute_command_provider.commands
    assert "sbatch-lsp.liveCheck" in commands
    asked = SEEN.read_text() if SEEN.exists() else ""
    uri = (client.root / "quiet.sbatch").as_uri()
    open_doc(client, uri, SCRIPT)
    got = await publish_for(client, uri, 1)
    assert "SB790" not in {d.code for d in got.diagnostics}
    assert (SEEN.read_text() if SEEN.exists() else "") == asked  # sbatch was not run


@pytest.mark.asyncio(loop_scope="module")
async def test_a_refusal_is_an_error_at_the_directive(client: LanguageClient):
    path = client.root / "job.sbatch"
    uri = path.as_uri()
    open_doc(client, uri, SCRIPT)
    result = await run(client, uri)
    f = result["finding"]
    assert (f["code"], f["severity"], f["line"], f["column"]) == ("SB790", "error", 3, 9)
    assert "Invalid partition name specified" in f["message"]
    sent = SEEN.read_text().split("\0")[-2]
    assert sent == "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --partition=nope\n"
    assert TOKEN not in json.dumps(result)


@pytest.mark.asyncio(loop_scope="module")
async def test_an_accepted_job_is_information_on_line_1(client: LanguageClient):
    uri = (client.root / "ok.sbatch").as_uri()
    open_doc(client, uri, SCRIPT.replace("nope", "debug"))
    f = (await run(client, uri))["finding"]
    assert (f["severity"], f["line"]) == ("info", 1) and "to start at" in f["message"]


@pytest.mark.asyncio(loop_scope="module")
async def test_bad_requests_get_words(client: LanguageClient):
    assert (await run(client))["error"] == "no document given"
    assert "is not open" in (await run(client, (client.root / "x.sbatch").as_uri()))["error"]
    uri = (client.root / "helper.sh").as_uri()
    open_doc(client, uri, "#!/bin/bash\necho hi\n")
    assert "not a job script" in (await run(client, uri))["error"]
