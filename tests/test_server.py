"""The language server end to end: pytest-lsp starts `python -m sbatch_lsp.server --stdio` and
talks to it as VS Code (1.65 capabilities) and Neovim do. Push diagnostics, versions, UTF-16
ranges, code actions, robustness."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from lsp_support import (CASES, PROFILES, apply, config, edits_of, initialize, open_doc,
                         publish_for, replace_all, utf16)
from sbatch_lsp.fixer import fix_text
from sbatch_lsp.lint import lint

#: SB101: a directive below the first command (its fix, moving it up, is unsafe)
JOB = "#!/bin/bash\n#SBATCH --nodes=1\nsrun hostname\n#SBATCH --time=10\n"
#: SB100: no #! line (its fix, inserting one, is safe)
NO_SHEBANG = "#SBATCH --nodes=1\nsrun hostname\n"


@pytest_lsp.fixture(config=config(), params=PROFILES)
async def client(lsp_client: LanguageClient, request, tmp_path):
    lsp_client.profile = request.param
    lsp_client.root = tmp_path
    await initialize(lsp_client, request.param, tmp_path)
    yield
    await lsp_client.shutdown_session()


def uri_in(client, name: str) -> str:
    return (client.root / name).as_uri()


async def test_initialize_advertises_features(client: LanguageClient):
    caps = client.init_result.capabilities
    assert caps.text_document_sync.change == t.TextDocumentSyncKind.Incremental
    assert caps.diagnostic_provider.identifier == "sbatch-lint"
    assert {"quickfix", "source.fixAll.sbatch-lint"} <= set(caps.code_action_provider.code_action_kinds)


async def test_case_file_diagnostics_match_the_engine(client: LanguageClient):
    path = CASES / "F001.sbatch"
    text = path.read_text()
    uri = path.as_uri()
    open_doc(client, uri, text, version=7)
    pub = await publish_for(client, uri, 7)
    engine = lint(text, str(path)).diagnostics
    assert [d.code for d in pub.diagnostics] == [d.code for d in engine]
    assert {"SB201", "SB301"} <= {d.code for d in pub.diagnostics}
    d201 = next(d for d in pub.diagnostics if d.code == "SB201")
    assert d201.source == "sbatch-lint"
    assert d201.severity == t.DiagnosticSeverity.Error
    # the link is the page installed with the package (no web site to point at)
    href = d201.code_description.href
    assert href.startswith("file:///") and href.endswith("/SB201.md")
    from urllib.parse import unquote, urlparse
    from pathlib import Path
    assert Path(unquote(urlparse(href).path)).read_text().startswith("# SB201")
    # the torchrun token on line 17 (0-based 16), columns 2..10
    assert d201.range == t.Range(t.Position(16, 2), t.Position(16, 10))
    related = {r.location.range.start.line for r in d201.related_information}
    assert related == {3, 14} and all(r.location.uri == uri for r in d201.related_information)


async def test_a_helper_script_gets_no_diagnostics(client: LanguageClient):
    uri = uri_in(client, "run.sh")
    open_doc(client, uri, "#!/bin/bash\nset -e\necho $SLURM_PROCID\n")
    pub = await publish_for(client, uri, 1)
    assert list(pub.diagnostics) == []


async def test_ranges_after_a_non_bmp_character_count_utf16_units(client: LanguageClient):
    line = 'export TAG="\U0001F600" NODE_RANK=$SLURM_PROCID'
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
            f"{line}\nsrun torchrun --nnodes=2 --nproc-per-node=8 --node_rank=$NODE_RANK "
            "--master_addr=$MASTER_ADDR --master_port=29500 train.py\n")
    uri = uri_in(client, "emoji.sbatch")
    open_doc(client, uri, text)
    pub = await publish_for(client, uri, 1)
    d = next(d for d in pub.diagnostics if d.code == "SB301")
    col = line.index("$SLURM_PROCID")
    assert d.range.start == t.Position(4, utf16(line[:col]))
    assert d.range.start.character == col + 1  # the emoji is two UTF-16 units
    assert d.range.end == t.Position(4, utf16(line))


async def test_unnecessary_suppression_is_tagged(client: LanguageClient):
    uri = uri_in(client, "supp.sbatch")
    open_doc(client, uri, "#!/bin/bash\n#SBATCH --nodes=1\n# sbatch-lint: disable=SB201\nsrun hostname\n")
    pub = await publish_for(client, uri, 1)
    d = next(d for d in pub.diagnostics if d.code == "SB001")
    assert list(d.tags) == [t.DiagnosticTag.Unnecessary]


async def test_rapid_changes_publish_the_final_version_last(client: LanguageClient):
    uri = uri_in(client, "rapid.sbatch")
    text = JOB
    open_doc(client, uri, text)
    for v in range(2, 22):  # 20 incremental edits: each appends a line
        at = t.Position(text.count("\n"), 0)
        new = f"echo {v}\n" if v < 21 else "#SBATCH --gpu-per-node=1\n"
        client.text_document_did_change(t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=v),
            content_changes=[t.TextDocumentContentChangePartial(range=t.Range(at, at), text=new)]))
        text += new
    final = await publish_for(client, uri, 21)
    await code_actions(client, uri, t.Range(t.Position(0, 0), t.Position(0, 0)))
    mine = [p for p in client.published if p.uri == uri]
    assert mine[-1] is final
    versions = [p.version for p in mine]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    # the final publish is about the final text: the late directive (after srun) is SB101
    assert [d.code for d in final.diagnostics] == [d.code for d in lint(text, "rapid.sbatch").diagnostics]
    assert "SB101" in [d.code for d in final.diagnostics]


async def code_actions(client, uri, rng, only=None):
    return await client.text_document_code_action_async(t.CodeActionParams(
        text_document=t.TextDocumentIdentifier(uri), range=rng,
        context=t.CodeActionContext(diagnostics=[], only=only)))


async def test_quick_fix_from_the_servers_own_lint(client: LanguageClient):
    uri = uri_in(client, "fix.sbatch")
    open_doc(client, uri, NO_SHEBANG)
    pub = await publish_for(client, uri, 1)
    d = next(d for d in pub.diagnostics if d.code == "SB100")
    # the client sends no diagnostics in the context: the server uses its own lint
    acts = await code_actions(client, uri, t.Range(d.range.start, d.range.start))
    fixes = [a for a in acts if a.kind == "quickfix" and not a.title.startswith("Disable")]
    assert [a.title for a in fixes] == ["insert `#!/bin/bash` as the first line"]
    assert fixes[0].is_preferred and fixes[0].diagnostics[0].code == "SB100"
    fixed = apply(NO_SHEBANG, edits_of(fixes[0].edit, uri))
    assert fixed == "#!/bin/bash\n" + NO_SHEBANG
    replace_all(client, uri, fixed, 2)
    after = await publish_for(client, uri, 2)
    assert list(after.diagnostics) == []


async def test_unsafe_fix_is_offered_but_not_preferred(client: LanguageClient):
    uri = uri_in(client, "unsafe.sbatch")
    open_doc(client, uri, JOB)
    pub = await publish_for(client, uri, 1)
    d = next(d for d in pub.diagnostics if d.code == "SB101")
    acts = await code_actions(client, uri, d.range)
    move = next(a for a in acts if a.title.startswith("move the directive"))
    assert move.title.endswith("(unsafe fix)") and not move.is_preferred
    fixed = apply(JOB, edits_of(move.edit, uri))
    assert fixed.index("#SBATCH --time=10") < fixed.index("srun hostname")


async def test_disable_for_line_and_file(client: LanguageClient):
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n"
            "srun \\\n  torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d \\\n"
            "  --rdzv-endpoint=$MASTER_ADDR:29500 train.py\n")
    uri = uri_in(client, "dis.sbatch")
    open_doc(client, uri, text)
    pub = await publish_for(client, uri, 1)
    d = next(d for d in pub.diagnostics if d.code == "SB201")
    assert d.range.start.line == 5  # torchrun, on a continuation line
    acts = await code_actions(client, uri, d.range)
    by_title = {a.title: a for a in acts}
    line_fix = by_title["Disable SB201 for this line"]
    fixed = apply(text, edits_of(line_fix.edit, uri))
    # above the command's first line, not inside the continued command
    assert "#SBATCH --gpus-per-node=8\n# sbatch-lint: disable=SB201\nsrun \\\n" in fixed
    file_fix = by_title["Disable SB201 for this file"]
    fixed_file = apply(text, edits_of(file_fix.edit, uri))
    assert fixed_file.startswith("#!/bin/bash\n# sbatch-lint: disable-file=SB201\n#SBATCH")
    for n, new in enumerate([fixed, fixed_file], start=2):
        replace_all(client, uri, new, n)
        after = await publish_for(client, uri, n)
        codes = [x.code for x in after.diagnostics]
        assert "SB201" not in codes and "SB001" not in codes
        assert [x.code for x in lint(new, "dis.sbatch").diagnostics] == codes


async def test_disable_merges_into_an_existing_comment(client: LanguageClient):
    text = "#!/bin/bash\n# sbatch-lint: disable-file=SB4 \n" + JOB.split("\n", 1)[1]
    uri = uri_in(client, "merge.sbatch")
    open_doc(client, uri, text)
    pub = await publish_for(client, uri, 1)
    d = next(d for d in pub.diagnostics if d.code == "SB101")
    acts = await code_actions(client, uri, d.range)
    a = next(a for a in acts if a.title == "Disable SB101 for this file")
    merged = apply(text, edits_of(a.edit, uri))
    assert "# sbatch-lint: disable-file=SB4,SB101 \n" in merged
    line = next(a for a in acts if a.title == "Disable SB101 for this line")
    assert "srun hostname\n# sbatch-lint: disable=SB101\n#SBATCH --time=10" in apply(text, edits_of(line.edit, uri))
    assert [d.code for d in lint(merged, "merge.sbatch").diagnostics] == ["SB001"]  # SB4 is unused


async def test_fix_all_applies_safe_fixes_like_the_cli(client: LanguageClient):
    text = "#SBATCH --nodes=1\r\nsrun hostname\r\n" + "echo ok\r\n" * 3
    uri = uri_in(client, "all.sbatch")
    open_doc(client, uri, text)
    await publish_for(client, uri, 1)
    acts = await code_actions(client, uri, t.Range(t.Position(0, 0), t.Position(0, 0)),
                              only=["source.fixAll"])
    assert [a.kind for a in acts] == ["source.fixAll.sbatch-lint"]
    fixed = apply(text, edits_of(acts[0].edit, uri))
    assert fixed == fix_text(text, "all.sbatch").text == "#!/bin/bash\n" + text.replace("\r\n", "\n")
    only_quick = await code_actions(client, uri, t.Range(t.Position(0, 0), t.Position(0, 0)),
                                    only=["quickfix"])
    assert only_quick and all(a.kind == "quickfix" for a in only_quick)


async def test_bad_input_never_kills_the_server(client: LanguageClient):
    # binary content
    uri = uri_in(client, "bin.sbatch")
    open_doc(client, uri, "\x00\x01\x02#SBATCH\x00\xff" * 100)
    pub = await publish_for(client, uri, 1)
    assert "SB100" in [d.code for d in pub.diagnostics]
    # an edit far past the end, and one whose start lies after its end
    uri2 = uri_in(client, "edits.sbatch")
    open_doc(client, uri2, JOB)
    await publish_for(client, uri2, 1)
    for v, rng in [(2, t.Range(t.Position(500, 3), t.Position(900, 0))),
                   (3, t.Range(t.Position(3, 5), t.Position(1, 0)))]:
        client.text_document_did_change(t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri2, version=v),
            content_changes=[t.TextDocumentContentChangePartial(range=rng, text="echo x\n")]))
    await publish_for(client, uri2, 3)
    # a request about a document never opened (its file does not exist) answers with an error
    with pytest.raises(Exception):  # noqa: B017  (pytest-lsp raises the JSON-RPC error as it is)
        await code_actions(client, uri_in(client, "missing.sbatch"),
                           t.Range(t.Position(0, 0), t.Position(0, 0)))
    # ... and the server still answers
    acts = await code_actions(client, uri2, t.Range(t.Position(0, 0), t.Position(0, 0)))
    assert acts is not None


async def test_incremental_edits_after_a_form_feed_land_where_the_client_meant(client: LanguageClient):
    # str.splitlines also breaks at \x0c: the server must count lines as LSP does (\n)
    text = "#!/bin/bash\n#SBATCH --nodes=1\n# page\x0cbreak\nsrun hostname\n"
    uri = uri_in(client, "ff.sbatch")
    open_doc(client, uri, text)
    await publish_for(client, uri, 1)
    at = t.Position(4, 0)
    client.text_document_did_change(t.DidChangeTextDocumentParams(
        text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[t.TextDocumentContentChangePartial(range=t.Range(at, at),
                                                            text="#SBATCH --time=10\n")]))
    pub = await publish_for(client, uri, 2)
    late = next(d for d in pub.diagnostics if d.code == "SB101")  # below srun: a late directive
    assert late.range.start.line == 4


async def test_closing_a_document_clears_its_diagnostics(client: LanguageClient):
    uri = uri_in(client, "close.sbatch")
    open_doc(client, uri, JOB)
    pub = await publish_for(client, uri, 1)
    assert pub.diagnostics
    client.text_document_did_close(t.DidCloseTextDocumentParams(t.TextDocumentIdentifier(uri)))
    cleared = await publish_for(client, uri, None)
    assert list(cleared.diagnostics) == []


# ---- pull diagnostics ---------------------------------------------------------------------

def pull_caps(refresh: bool = True) -> t.ClientCapabilities:
    caps = pytest_lsp.client_capabilities("visual-studio-code")
    caps.text_document.diagnostic = t.DiagnosticClientCapabilities(related_document_support=False)
    caps.workspace.diagnostics = t.DiagnosticWorkspaceClientCapabilities(refresh_support=refresh)
    return caps


@pytest_lsp.fixture(config=config(), params=["neovim", "visual-studio-code+pull"])
async def pull_client(lsp_client: LanguageClient, request, tmp_path):
    lsp_client.root = tmp_path
    caps = pull_caps() if request.param.endswith("+pull") else None
    await initialize(lsp_client, request.param, tmp_path, caps=caps)
    yield
    await lsp_client.shutdown_session()


async def test_pull_client_gets_pull_only(pull_client: LanguageClient):
    client = pull_client
    uri = uri_in(client, "pull.sbatch")
    open_doc(client, uri, JOB)
    report = await client.text_document_diagnostic_async(
        t.DocumentDiagnosticParams(text_document=t.TextDocumentIdentifier(uri)))
    assert report.kind == "full" and "SB101" in [d.code for d in report.items]
    again = await client.text_document_diagnostic_async(t.DocumentDiagnosticParams(
        text_document=t.TextDocumentIdentifier(uri), previous_result_id=report.result_id))
    assert again.kind == "unchanged"
    replace_all(client, uri, JOB.replace("#SBATCH --time=10\n", ""), 2)
    changed = await client.text_document_diagnostic_async(t.DocumentDiagnosticParams(
        text_document=t.TextDocumentIdentifier(uri), previous_result_id=report.result_id))
    assert changed.kind == "full" and list(changed.items) == []
    replace_all(client, uri, JOB, 3)
    # a push would have been sent before these answers: none was
    assert client.published == []
    # a configuration change asks the client to pull again
    client.workspace_did_change_configuration(t.DidChangeConfigurationParams(
        settings={"sbatchLsp": {"ignore": ["SB1"]}}))
    ignored = await client.text_document_diagnostic_async(
        t.DocumentDiagnosticParams(text_document=t.TextDocumentIdentifier(uri)))
    ws = client.capabilities.workspace
    refresh = bool(ws.diagnostics and ws.diagnostics.refresh_support)
    assert client.diagnostic_refresh_count == (1 if refresh else 0)
    assert not [d for d in ignored.items if d.code.startswith("SB1")]


async def test_a_cancelled_pull_leaves_the_lint_for_the_next_pull(pull_client: LanguageClient):
    """VS Code's client cancels a pull still running when it pulls the document again (an
    edit, a save; vscode-languageclient 9 lib/common/diagnostic.js, pull) and pulls again after
    the answer. The cancel stops that request only: the lint it waited for is shared, and the
    next pull of the same version must get its result. It got the cancelled lint instead, on
    every later pull: the VS Code test, now and then, saw no diagnostics after a restart."""
    client = pull_client
    uri = uri_in(client, "cancelled.sbatch")
    # long enough that the lint is still running when the cancel arrives
    steps = "".join(f"export STEP{i}=$((SLURM_NNODES + {i}))\nsrun -N1 python step.py $STEP{i}\n"
                    for i in range(1500))
    open_doc(client, uri, JOB + steps)
    doc = t.TextDocumentIdentifier(uri)
    first = asyncio.ensure_future(client.protocol.send_request_async(
        t.TEXT_DOCUMENT_DIAGNOSTIC, t.DocumentDiagnosticParams(text_document=doc), msg_id="first"))
    # answered after the server has started the first pull (requests are taken in order)
    await client.text_document_hover_async(t.HoverParams(doc, t.Position(1, 3)))
    client.protocol.notify(t.CANCEL_REQUEST, t.CancelParams(id="first"))
    again = await client.text_document_diagnostic_async(t.DocumentDiagnosticParams(doc))
    assert again.kind == "full" and "SB101" in [d.code for d in again.items]
    await asyncio.gather(first, return_exceptions=True)  # cancelled, or answered before


async def test_pull_positions_follow_the_negotiated_encoding(pull_client: LanguageClient):
    client = pull_client
    encoding = client.init_result.capabilities.position_encoding or "utf-16"
    line = 'export TAG="\u00e9\U0001F600" NODE_RANK=$SLURM_PROCID'
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
            f"{line}\nsrun torchrun --nnodes=2 --nproc-per-node=8 --node_rank=$NODE_RANK "
            "--master_addr=$MASTER_ADDR --master_port=29500 train.py\n")
    uri = uri_in(client, "enc.sbatch")
    open_doc(client, uri, text)
    report = await client.text_document_diagnostic_async(
        t.DocumentDiagnosticParams(text_document=t.TextDocumentIdentifier(uri)))
    d = next(d for d in report.items if d.code == "SB301")
    head = line[:line.index("$SLURM_PROCID")]
    units = {"utf-8": len(head.encode()), "utf-16": utf16(head), "utf-32": len(head)}[encoding]
    assert d.range.start == t.Position(4, units)


# ---- process level ----------------------------------------------------------------------

def _frame(obj) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_shutdown_and_exit_are_clean_even_mid_lint(tmp_path):
    big = "#!/bin/bash\n#SBATCH --nodes=1\n" + "echo $X\n" * 20000
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": (tmp_path / "big.sbatch").as_uri(), "languageId": "sh", "version": 1,
            "text": big}}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    # the client keeps its end of stdin open, as editors do: exit must not wait for it
    proc = subprocess.Popen([sys.executable, "-m", "sbatch_lsp.server"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(b"".join(map(_frame, msgs)))
    proc.stdin.flush()
    try:
        proc.wait(timeout=120)  # a hang guard, not a timing check
    finally:
        proc.kill()
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.stdin.close()
    assert proc.returncode == 0, err.decode()
    assert b'"id": 2' in out or b'"id":2' in out
    assert b"Traceback" not in err
    # exit without shutdown: exit code 1 (LSP)
    early = subprocess.run([sys.executable, "-m", "sbatch_lsp.server"],
                           input=b"".join(map(_frame, [msgs[0], msgs[1], msgs[4]])),
                           capture_output=True, timeout=120)
    assert early.returncode == 1


def test_command_line():
    out = subprocess.run([sys.executable, "-m", "sbatch_lsp.server", "--version"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("sbatch-lsp ")
    bad = subprocess.run([sys.executable, "-m", "sbatch_lsp.server", "--tcp", "nonsense"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr


async def test_srun_native_conversion_is_a_refactoring(client: LanguageClient):
    from sbatch_lsp.convert import convert_srun_native

    path = CASES / "F001.sbatch"
    text = path.read_text()
    uri = uri_in(client, "F001.sbatch")
    open_doc(client, uri, text)
    await publish_for(client, uri, 1)
    acts = await code_actions(client, uri, t.Range(t.Position(0, 0), t.Position(0, 0)),
                              only=["refactor"])
    assert [a.kind for a in acts] == ["refactor.rewrite"]
    converted = apply(text, edits_of(acts[0].edit, uri))
    assert converted == convert_srun_native(text).new_text != text
    assert "torchrun" not in converted.split("srun", 1)[1]
    # nothing to convert: no refactoring offered
    plain = uri_in(client, "plain.sbatch")
    open_doc(client, plain, JOB)
    await publish_for(client, plain, 1)
    assert await code_actions(client, plain, t.Range(t.Position(0, 0), t.Position(0, 0)),
                              only=["refactor.rewrite"]) in ([], ())


def test_bad_json_is_one_log_line_not_a_traceback():
    message = b"Content-Length: 10\r\n\r\n{not json}"
    r = subprocess.run([sys.executable, "-m", "sbatch_lsp.server"], input=message,
                       capture_output=True, timeout=60)
    err = r.stderr.decode()
    assert "Unable to handle message (JSONDecodeError:" in err
    assert "Traceback" not in err
    assert r.returncode == 1  # stdin closed without a shutdown request (LSP: exit code 1)
