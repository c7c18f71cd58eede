"""Hover and completion end to end (pytest-lsp, VS Code and Neovim 0.7 capability profiles):
every option of the table, SLURM_* variables, suppression codes, and a hover answered while a
100k-line document is still being linted."""
from __future__ import annotations

import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from lsp_support import PROFILES, config, initialize, open_doc, publish_for, utf16
from sbatch_lsp.options import (NEWEST_RELEASE, option_docs, pyxis_options, sbatch_options,
                                sbatch_table)


@pytest_lsp.fixture(config=config(), params=PROFILES)
async def client(lsp_client: LanguageClient, request, tmp_path):
    lsp_client.root = tmp_path
    lsp_client.profile = request.param
    await initialize(lsp_client, request.param, tmp_path)
    yield
    await lsp_client.shutdown_session()


async def hover(client, uri, line, character):
    return await client.text_document_hover_async(t.HoverParams(
        text_document=t.TextDocumentIdentifier(uri), position=t.Position(line, character)))


async def complete(client, uri, line, character):
    return await client.text_document_completion_async(t.CompletionParams(
        text_document=t.TextDocumentIdentifier(uri), position=t.Position(line, character)))


async def test_hover_over_every_option_in_the_table(client: LanguageClient):
    table = {**sbatch_options(), **pyxis_options()}
    lines = [f"#SBATCH --{n}" + ("=x" if o.arg == "required" else "") for n, o in table.items()]
    uri = (client.root / "all.sbatch").as_uri()
    open_doc(client, uri, "#!/bin/bash\n" + "\n".join(lines) + "\nsrun hostname\n")
    current = {**sbatch_table(NEWEST_RELEASE, None), **pyxis_options()}
    for i, (name, o) in enumerate(table.items(), start=1):
        h = await hover(client, uri, i, 10)
        assert h is not None, name
        text = h.contents.value
        if name not in current:  # gone from the newest release: getopt may read it otherwise
            continue
        assert f"**--{name}**" in text and option_docs()[name] in text, name
        if o.arg == "required":
            assert f"`{o.arg_format or '<value>'}`" in text, name
        assert h.range.start.line == i


async def test_hover_tells_the_effective_value_and_abbreviations(client: LanguageClient):
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-n=8\n#SBATCH -N 4\n"
            "# sbatch-lint: disable=SB201\nsrun torchrun train.py\n"
            "srun bash -c 'echo $SLURM_PROCID'\necho \"\U0001F600\" $SLURM_NNODES\n")
    uri = (client.root / "h.sbatch").as_uri()
    open_doc(client, uri, text)
    first = (await hover(client, uri, 1, 10)).contents.value
    assert "Overridden: line 4 sets `--nodes=4`" in first
    assert "Effective: `--nodes=4`" in (await hover(client, uri, 3, 9)).contents.value
    abbrev = (await hover(client, uri, 2, 12)).contents.value
    assert "**--ntasks-per-node**" in abbrev and "abbreviation" in abbrev
    code = (await hover(client, uri, 4, 24)).contents.value
    assert "SB201" in code and "torchrun-per-task" in code
    var = await hover(client, uri, 6, 22)
    assert "**$SLURM_PROCID**" in var.contents.value and "task to task" in var.contents.value
    assert "In the batch shell: 0" in var.contents.value
    # a variable after a non-BMP character: the range is in UTF-16 units
    line = 'echo "\U0001F600" $SLURM_NNODES'
    col = utf16(line[:line.index("$")])
    h = await hover(client, uri, 7, col + 3)
    assert "srun overwrites it" in h.contents.value
    assert h.range == t.Range(t.Position(7, col), t.Position(7, utf16(line)))
    assert await hover(client, uri, 5, 2) is None  # nothing to say about srun itself
    # a heterogeneous job: each component has its own effective --nodes
    het = (client.root / "het.sbatch").as_uri()
    open_doc(client, het, "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH hetjob\n#SBATCH --nodes=4\nsrun hostname\n")
    assert "Effective: `--nodes=2`" in (await hover(client, het, 1, 10)).contents.value


async def test_completion_offers_every_option_with_a_value_snippet(client: LanguageClient):
    uri = (client.root / "c.sbatch").as_uri()
    open_doc(client, uri, "#!/bin/bash\n#SBATCH --\n#SBATCH --mail-type=END,\n"
                          "#SBATCH --output=logs/%\necho $SLURM_\n")
    result = await complete(client, uri, 1, 10)
    by_label = {i.label: i for i in result.items}
    wanted = {f"--{n}" for n, o in sbatch_table(NEWEST_RELEASE, None).items()
              if not o.ignored_in_batch_script}
    assert wanted <= set(by_label)
    assert "--wrap" not in by_label  # has no effect in a script
    nodes = by_label["--nodes"]
    assert nodes.detail == option_docs()["nodes"]
    assert nodes.text_edit.range == t.Range(t.Position(1, 8), t.Position(1, 10))
    snippets = client.profile == "visual-studio-code"
    if snippets:
        # the placeholder is a valid value (the synopsis is in the documentation)
        assert nodes.text_edit.new_text == "--nodes=${1:1}"
        assert "<minnodes>[-maxnodes]" in nodes.documentation.value
        assert by_label["--account"].text_edit.new_text == "--account=${1:account}"
        assert by_label["--open-mode"].text_edit.new_text == "--open-mode=${1|append,truncate|}"
    else:  # Neovim 0.7 declares no snippet support
        assert nodes.text_edit.new_text == "--nodes="
        assert all(i.insert_text_format != t.InsertTextFormat.Snippet for i in result.items)
    assert by_label["-N"].detail == option_docs()["nodes"]
    assert by_label["--exclusive"].text_edit.new_text == "--exclusive"
    mail = await complete(client, uri, 2, 24)
    labels = [i.label for i in mail.items]
    assert {"FAIL", "TIME_LIMIT_90", "ARRAY_TASKS"} <= set(labels)
    assert mail.items[0].text_edit.range.start == t.Position(2, 24)
    pct = await complete(client, uri, 3, 23)
    assert {"%j", "%x", "%A", "%a"} <= {i.label for i in pct.items}
    assert pct.items[0].text_edit.range.start == t.Position(3, 22)
    env = await complete(client, uri, 4, 12)
    names = {i.label for i in env.items}
    assert {"SLURM_PROCID", "SLURM_NODEID", "SLURM_JOB_NODELIST"} <= names
    assert all(n.startswith("SLURM") for n in names)


async def test_hover_is_answered_while_a_long_document_is_linted(client: LanguageClient):
    big = ("#!/bin/bash\n#SBATCH --nodes=2\n" + "# filler\n" * 90000
           + "echo $SLURM_PROCID\n" * 10000)
    assert big.count("\n") > 100000
    uri = (client.root / "big.sbatch").as_uri()
    open_doc(client, uri, big)
    h = await hover(client, uri, 1, 10)
    assert "**--nodes**" in h.contents.value
    # ordering, not timing: the hover's answer came before the lint's publish
    assert [p for p in client.published if p.uri == uri] == []
    pub = await publish_for(client, uri, 1, timeout=300)
    assert pub.version == 1
