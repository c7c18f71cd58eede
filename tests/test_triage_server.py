"""The server's log feature end to end (pytest-lsp, VS Code and Neovim 0.7 profiles): a Slurm
log gets its root line as an error, the cascade as information and the script's finding as
related information; a log recognised by content alone too; the triage command's report."""
from __future__ import annotations

from pathlib import Path

import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from lsp_support import PROFILES, config, initialize, open_doc, publish_for

ROOT = Path(__file__).resolve().parent.parent
LOG = (ROOT / "tests" / "logs" / "slurm-tier-sb201-static.log").read_text()
SCRIPT = (ROOT / "tests" / "slurm" / "jobs" / "sb201-static.sbatch").read_text()


@pytest_lsp.fixture(config=config(), params=PROFILES)
async def client(lsp_client: LanguageClient, request, tmp_path):
    lsp_client.root = tmp_path
    await initialize(lsp_client, request.param, tmp_path)
    yield
    await lsp_client.shutdown_session()


async def diagnostics(client: LanguageClient, uri: str, text: str) -> list[t.Diagnostic]:
    open_doc(client, uri, text)
    return list((await publish_for(client, uri, 1)).diagnostics)


async def test_log_beside_its_script(client: LanguageClient):
    (client.root / "train.sbatch").write_text(SCRIPT)
    log = client.root / "slurm-1.out"
    log.write_text(LOG)
    got = await diagnostics(client, log.as_uri(), LOG)
    errors = [d for d in got if d.severity == t.DiagnosticSeverity.Error]
    assert len(errors) == 1
    root = errors[0]
    assert root.range.start.line == 100 and root.range.start.character == 0  # line 101, 1-based
    assert root.code == "address-in-use" and root.source == "sbatch-lint triage"
    assert "EADDRINUSE" in root.message
    related = root.related_information or []
    assert [r.message.split(":")[0] for r in related][:1] == ["SB201"]
    assert related[0].location.uri == (client.root / "train.sbatch").resolve().as_uri()
    srun_line = SCRIPT.split("\n").index(next(x for x in SCRIPT.split("\n") if x.startswith("srun")))
    assert related[0].location.range.start.line == srun_line
    info = [d for d in got if d.severity == t.DiagnosticSeverity.Information]
    assert info and {d.code for d in info} >= {"cancelled", "srun-exit", "sigterm"}
    assert all(d.range.start.line != 100 for d in info)


async def test_log_recognised_by_content(client: LanguageClient):
    text = ("step 1 loss 2.3\n[rank3]: Traceback (most recent call last):\n"
            '[rank3]:   File "/w/train.py", line 9, in <module>\n'
            "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
            "srun: error: gpu-01: task 3: Exited with exit code 1\n")
    uri = (client.root / "output.txt").as_uri()
    got = await diagnostics(client, uri, text)
    assert [(d.range.start.line, d.code) for d in got
            if d.severity == t.DiagnosticSeverity.Error] == [(3, "cuda-oom")]
    assert "rank 3" in next(d.message for d in got if d.code == "cuda-oom")


async def test_job_scripts_are_still_linted(client: LanguageClient):
    uri = (client.root / "job.sbatch").as_uri()
    got = await diagnostics(client, uri, SCRIPT)
    assert "SB201" in {d.code for d in got}


async def test_triage_command(client: LanguageClient):
    log = client.root / "slurm-2.out"
    log.write_text(LOG)
    open_doc(client, log.as_uri(), LOG)
    await publish_for(client, log.as_uri(), 1)
    text = await client.workspace_execute_command_async(t.ExecuteCommandParams(
        command="sbatch-lsp.triage", arguments=[log.as_uri()]))
    assert text.startswith("root cause (address-in-use, certain) at ")
    assert "EADDRINUSE" in text and "exit codes:" in text


async def test_binary_log_has_no_diagnostics(client: LanguageClient):
    uri = (client.root / "slurm-3.out").as_uri()
    assert await diagnostics(client, uri, "\x00\x01\x02 binary") == []
