"""Document symbols, inlay hints and configuration end to end: initializationOptions,
workspace/didChangeConfiguration (re-lints open documents), project files winning over editor
settings, the inlayHints switch, bad settings reported, not fatal."""
from __future__ import annotations

import asyncio

import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from lsp_support import CASES, PROFILES, config, initialize, open_doc, publish_for

JOB = "#!/bin/bash\n#SBATCH --nodes=1\nsrun hostname\n#SBATCH --time=10\n"  # SB101


@pytest_lsp.fixture(config=config(), params=PROFILES)
async def client(lsp_client: LanguageClient, request, tmp_path):
    lsp_client.root = tmp_path
    await initialize(lsp_client, request.param, tmp_path,
                     options={"ignore": ["SB2"], "inlayHints": True})
    yield
    await lsp_client.shutdown_session()


async def test_symbols_and_inlay_hints(client: LanguageClient):
    text = (CASES / "F001.sbatch").read_text()
    uri = (client.root / "F001.sbatch").as_uri()
    open_doc(client, uri, text)
    syms = await client.text_document_document_symbol_async(
        t.DocumentSymbolParams(text_document=t.TextDocumentIdentifier(uri)))
    block, step = syms
    assert block.name == "#SBATCH directives"
    assert block.detail == "16 node(s), 8 task(s)/node, 8 GPU(s)/node, time 04:00:00"
    assert block.range.start == t.Position(1, 0) and block.range.end.line == 6
    assert [c.name for c in block.children][:3] == ["--job-name=gpt3-multinode", "--nodes=16",
                                                    "--ntasks-per-node=8"]
    assert step.name.startswith("srun torchrun") and step.range.start == t.Position(14, 0)
    # the step's facts, as `sbatch-lint show` prints them: 8 torchrun agents per node start
    # 64 processes on each node, and no world of the declared 16 x 8 forms (world unknown)
    summary = ("16 node(s) × 8 task(s)/node = 128 task(s) · 8 GPU(s)/node · container "
               "/lustre/proj/images/pytorch.sqsh · torchrun: world ?, 64 rank(s)/node")
    assert step.detail == summary
    lenses = await client.text_document_code_lens_async(
        t.CodeLensParams(text_document=t.TextDocumentIdentifier(uri)))
    assert [(lens.range.start, lens.command.title) for lens in lenses] == [
        (t.Position(14, 0), summary)]
    hints = await client.text_document_inlay_hint_async(t.InlayHintParams(
        text_document=t.TextDocumentIdentifier(uri),
        range=t.Range(t.Position(0, 0), t.Position(20, 0))))
    assert [h.label for h in hints] == ["128 GPUs (16 × 8), 512 GPU-hours at --time=04:00:00"]
    assert hints[0].position == t.Position(6, len("#SBATCH --time=04:00:00"))
    # switched off by the editor
    client.workspace_did_change_configuration(t.DidChangeConfigurationParams(
        settings={"sbatchLsp": {"inlayHints": False}}))
    hints = await client.text_document_inlay_hint_async(t.InlayHintParams(
        text_document=t.TextDocumentIdentifier(uri),
        range=t.Range(t.Position(0, 0), t.Position(20, 0))))
    assert list(hints or []) == []


async def next_publish(client, uri, after: int, timeout=60):
    async def wait():
        while True:
            mine = [p for p in client.published if p.uri == uri]
            if len(mine) > after:
                return mine[after]
            await client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return await asyncio.wait_for(wait(), timeout)


async def test_editor_settings_and_their_changes(client: LanguageClient):
    uri = (client.root / "a.sbatch").as_uri()
    f001 = (client.root / "f.sbatch").as_uri()
    open_doc(client, uri, JOB)
    open_doc(client, f001, (CASES / "F001.sbatch").read_text())
    first = await publish_for(client, f001, 1)
    # initializationOptions ignore SB2: F001's SB201 is not reported, its SB301 is
    assert "SB301" in [d.code for d in first.diagnostics]
    assert not [d for d in first.diagnostics if d.code.startswith("SB2")]
    assert "SB101" in [d.code for d in (await publish_for(client, uri, 1)).diagnostics]
    # a change re-lints every open document (same version, new settings)
    client.workspace_did_change_configuration(t.DidChangeConfigurationParams(
        settings={"sbatchLsp": {"ignore": ["SB101"], "severity": {"SB301": "warning"}}}))
    again = await next_publish(client, uri, 1)
    assert again.version == 1 and list(again.diagnostics) == []
    f_again = await next_publish(client, f001, 1)
    assert "SB201" in [d.code for d in f_again.diagnostics]  # no longer ignored
    assert next(d for d in f_again.diagnostics if d.code == "SB301").severity == \
        t.DiagnosticSeverity.Warning
    # a bad setting is reported to the user, and the server keeps the defaults
    client.workspace_did_change_configuration(t.DidChangeConfigurationParams(
        settings={"sbatchLsp": {"select": ["nonsense"]}}))
    third = await next_publish(client, uri, 2)
    assert "SB101" in [d.code for d in third.diagnostics]
    assert any("not a rule code" in m.message for m in client.messages)


async def test_a_project_file_wins_over_editor_settings(client: LanguageClient):
    project = client.root / "proj"
    (project / "jobs").mkdir(parents=True)
    (project / ".sbatch-lint.toml").write_text('ignore = ["SB3"]\n')
    uri = (project / "jobs" / "f.sbatch").as_uri()
    open_doc(client, uri, (CASES / "F001.sbatch").read_text())
    pub = await publish_for(client, uri, 1)
    codes = [d.code for d in pub.diagnostics]
    # the editor's ignore = SB2 does not apply here; the project's ignore = SB3 does
    assert "SB201" in codes and "SB301" not in codes
    # a broken project file: reported once, and the editor settings are used instead
    (project / ".sbatch-lint.toml").write_text("ignore = [\n")
    client.text_document_did_save(t.DidSaveTextDocumentParams(t.TextDocumentIdentifier(uri)))
    broken = await next_publish(client, uri, 1)
    codes = [d.code for d in broken.diagnostics]
    assert "SB301" in codes and "SB201" not in codes
    assert any("invalid TOML" in m.message for m in client.messages)


def test_the_kept_configuration_lookup_sees_every_change_of_the_project_files(tmp_path):
    """server/settings.config_for keeps a folder's lookup while its configuration files are
    unchanged: a file written, a new nearer file, a deleted one, other editor settings and a
    change of a file the project file extends each give what a fresh lookup gives."""
    import os

    from sbatch_lsp.config import find_config, load_file
    from sbatch_lsp.server import settings as s

    editor, other = s.Settings(), s.parse_settings({"ignore": ["SB113"]})[0]
    sub = tmp_path / "jobs"
    sub.mkdir()
    doc = str(sub / "train.sbatch")

    def fresh(settings):
        found = find_config(sub / "train.sbatch")
        return load_file(found) if found is not None else settings.config

    def check(settings=editor):
        got = s.config_for(doc, settings)
        assert got == (fresh(settings), None)
        assert s.config_for(doc, settings) == got  # kept, or read again: the same

    def write(path, text):
        path.write_text(text)
        st = path.stat()  # a later mtime even on a coarse clock
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000_000))

    check()
    write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n")
    check()
    write(tmp_path / "pyproject.toml", "[tool.sbatch-lint]\nignore = ['SB113']\n")
    check()
    assert s.config_for(doc, editor)[0].ignore
    check(other)
    write(sub / ".sbatch-lint.toml", "select = ['SB1']\n")
    check()
    write(sub / ".sbatch-lint.toml", "select = ['SB2']\n")
    check()
    (sub / ".sbatch-lint.toml").unlink()
    check()
    write(tmp_path / "base.toml", "ignore = ['SB104']\n")
    write(sub / ".sbatch-lint.toml", "extend = '../base.toml'\n")
    check()
    write(tmp_path / "base.toml", "ignore = ['SB105']\n")  # the project file itself unchanged
    check()
    assert s.config_for(doc, editor)[0].ignore == fresh(editor).ignore
    write(sub / ".sbatch-lint.toml", "profile = 'x'\n")  # broken: the editor's, and why
    got = s.config_for(doc, editor)
    assert got[0] == editor.config and "profile" in (got[1] or "")
    assert s.config_for(doc, editor) == got
    write(sub / ".sbatch-lint.toml", "ignore = ['SB104']\n")  # mended
    check()
