"""The language server honours the project file's ``exclude``, ``per-file-ignores`` and nested
configuration files as the CLI does, says when ``required-version`` is not met, and refuses path
patterns in editor settings (they have no folder to be relative to)."""
from __future__ import annotations

import asyncio

import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from lsp_support import config, initialize, open_doc, publish_for

BAD = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=n1:29400 t.py
"""


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient, tmp_path):
    lsp_client.root = tmp_path
    await initialize(lsp_client, "visual-studio-code", tmp_path)
    yield
    await lsp_client.shutdown_session()


async def codes_of(client: LanguageClient, rel: str, text: str = BAD) -> set[str]:
    path = client.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    uri = path.as_uri()
    open_doc(client, uri, text)
    return {d.code for d in (await publish_for(client, uri, 1)).diagnostics}


async def test_exclude_per_file_ignores_and_nested_files(client: LanguageClient):
    root = client.root
    (root / ".sbatch-lint.toml").write_text(
        'exclude = ["vendor/"]\n[per-file-ignores]\n"legacy/*.sbatch" = ["SB2"]\n')
    (root / "team").mkdir()
    (root / "team" / ".sbatch-lint.toml").write_text('ignore = ["torchrun-per-task"]\n')
    assert "SB201" in await codes_of(client, "jobs/a.sbatch")
    assert await codes_of(client, "vendor/kit/a.sbatch") == set()
    assert not {c for c in await codes_of(client, "legacy/a.sbatch") if c.startswith("SB2")}
    # the nested file wins for its subtree; the root's exclude does not reach into it
    team = await codes_of(client, "team/vendor/a.sbatch", BAD + "#SBATCH --time=10\n")
    assert team == {"SB101"}


async def test_required_version_mismatch_is_shown(client: LanguageClient):
    (client.root / "pyproject.toml").write_text(
        '[tool.sbatch-lint]\nrequired-version = ">=99"\n')
    await codes_of(client, "a.sbatch")

    async def shown():
        while not any("requires sbatch-lint >=99" in m.message for m in client.messages):
            await asyncio.sleep(0.05)
    await asyncio.wait_for(shown(), 30)
    message = next(m for m in client.messages if "requires sbatch-lint" in m.message)
    assert message.type == t.MessageType.Warning and "required-version" in message.message \
        and "pip install" not in message.message


async def test_path_patterns_in_editor_settings_are_refused(client: LanguageClient):
    client.workspace_did_change_configuration(t.DidChangeConfigurationParams(
        settings={"sbatchLsp": {"exclude": ["vendor/"]}}))
    # the document is still linted (with the defaults), and the user is told why
    assert "SB201" in await codes_of(client, "vendor/a.sbatch")

    async def shown():
        while not any("exclude: set it in a configuration file" in m.message
                      for m in client.messages):
            await asyncio.sleep(0.05)
    await asyncio.wait_for(shown(), 30)
