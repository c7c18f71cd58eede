"""No output of any kind carries a detected secret (DESIGN.md "Secrets"): every CLI format,
``--diff``, ``--convert``, and every server feature (diagnostics, related notes, code actions
and their edits, hover, completion, symbols, inlay hints, the log), over scripts holding tokens
in every place a value can sit; and a property test over generated placements."""
from __future__ import annotations

import json
import logging
import re

import pytest
import pytest_lsp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_support import apply, config, edits_of, initialize, open_doc, publish_for
from lsprotocol import converters
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from sbatch_lsp import output
from sbatch_lsp.cli import main
from sbatch_lsp.fixer import fix_text
from sbatch_lsp.lint import lint

#: (token, its body: the part a mask hides, which must appear nowhere)
HF = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bD1fH3"
GH = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
AWS = "AKIA" + "QWERTYUIOP234567"
WANDB = "0123456789abcdef0123456789abcdef01234567"
LITERAL = "Zq8vLm3Np7Rt2Wx6Yb"  # only a secret because of the name it is assigned to
TOKENS = [HF, GH, AWS]

#: a script with the token ``{T}`` wherever a value can sit: directive values (refused, glued,
#: quoted, repeated so a related note names it, unknown option, look-alike, late directive whose
#: fix moves it), stray directive words, assignments, a launcher argument, a comment, a heredoc
SCRIPT = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --mail-type={T}
#SBATCH -N 2 extra {T}
#SBATCH --comment "{T}"
#SBATCH --comment=x{T}
#SBATCH --job-name=key={T}
#SBATCH --coment={T}
#SBATCH --gres=gpu:{T}
# SBATCH --account={T}
# a note: {T}
export HF_TOKEN={T}
export WANDB_API_KEY={W}
export MY_API_KEY={L}
OPTS="--token={T}"
srun --ntasks-per-node=8 torchrun --nproc-per-node=8 train.py --hub-token {T} $OPTS
cat > job2.sh <<EOF
#SBATCH --comment={T}
EOF
#SBATCH --comment=late{T}
"""


def script(token: str) -> str:
    return SCRIPT.replace("{T}", token).replace("{W}", WANDB).replace("{L}", LITERAL)


def bodies(token: str) -> list[str]:
    """What must never appear: the token's every 12-character slice after its kept prefix
    (so a partial quote is caught too), and the other fixed secrets."""
    body = token[4:]
    return [body[i:i + 12] for i in range(len(body) - 11)] + [WANDB[:12], LITERAL[:12]]


def assert_clean(out: str, token: str) -> None:
    for piece in bodies(token):
        assert piece not in out, f"{piece!r} leaked: ...{out[max(0, out.find(piece) - 80):out.find(piece) + 40]!r}"


def test_the_script_raises_findings_that_quote_values():
    """The placements are not idle: the findings that would quote a token are there."""
    codes = {d.code for d in lint(script(HF), "job.sbatch").diagnostics}
    assert {"SB101", "SB102", "SB103", "SB105", "SB106", "SB108", "SB501"} <= codes


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize("args", [
    ["--format", "text"], ["--format", "concise"], ["--format", "json"], ["--format", "github"],
    ["--format", "sarif"], ["--diff"], ["--diff", "--unsafe-fixes"], ["--diff", "--format", "json"],
    ["--convert", "srun-native"], ["--fix", "--unsafe-fixes"], ["--select", "SB1", "--format", "json"],
])
def test_cli_outputs_hold_no_secret(tmp_path, capsys, token, args):
    path = tmp_path / "job.sbatch"
    path.write_text(script(token))
    main([*args, str(path)])
    captured = capsys.readouterr()
    assert_clean(captured.out + captured.err, token)


def test_output_file_holds_no_secret(tmp_path, capsys):
    path = tmp_path / "job.sbatch"
    path.write_text(script(HF))
    report = tmp_path / "report.sarif"
    assert main(["--format", "sarif", "--output-file", str(report), str(path)]) == 1
    assert_clean(report.read_text() + capsys.readouterr().out, HF)


def test_fix_writes_the_scripts_own_text_back(tmp_path, capsys):
    """Masking is for what is shown: ``--fix`` keeps the user's token intact (never
    ``hf_****`` in the file), and ``--fix -`` prints the fixed script unmasked (documented)."""
    path = tmp_path / "job.sbatch"
    path.write_text(script(HF))
    main(["--fix", "--unsafe-fixes", str(path)])
    fixed = path.read_text()
    assert "****" not in fixed and HF in fixed
    assert fix_text(script(HF), "job.sbatch", unsafe=True).text == fixed


def test_a_fix_that_moves_a_secret_is_applied_but_not_shown():
    """SB101's fix moves the late directive, token and all, above the first command: the
    shown result leaves it out (its edit would carry the token), the fixer still has it."""
    result = lint(script(HF), "job.sbatch")
    late = [d for d in result.diagnostics if d.code == "SB101"]
    raw = [d for d in result.fixable if d.code == "SB101"]
    assert late and all(not d.fixes for d in late)
    assert any(f.edits for d in raw for f in d.fixes)


def test_a_fix_that_only_copies_a_secret_is_split_around_it():
    """SB108's quoting fix rewrites a span holding the token: the shown edits are the
    characters it changes, and applying them gives the same text as the unmasked fix."""
    text = f"#!/bin/bash\n#SBATCH --comment=a {HF}\nsrun hostname\n"
    result = lint(text, "job.sbatch")
    from sbatch_lsp.fixer import apply_edits
    pairs = [(d, r) for d, r in zip(result.diagnostics, result.fixable, strict=True) if d.code == "SB108"]
    assert pairs
    for shown, raw in pairs:
        assert len(shown.fixes) == len(raw.fixes)
        for fs, fr in zip(shown.fixes, raw.fixes, strict=True):
            assert all(HF[4:16] not in e.new_text for e in fs.edits)
            assert apply_edits(text, list(fs.edits)) == apply_edits(text, list(fr.edits))


def test_tokens_inside_longer_words_are_found():
    from sbatch_lsp.secrets import find_secrets
    for text in (f"extra{HF}", f"key={HF}", f"--comment=x{HF}_tail", f"x{GH}", f"id{AWS}"):
        found = find_secrets(text)
        assert found, text
        assert any(HF[4:20] in text[s.start:s.end] or GH[4:20] in text[s.start:s.end]
                   or AWS[4:] in text[s.start:s.end] for s in found), text


# ---- the property: any placement, any format -------------------------------------------------

LINES = [
    "#SBATCH --comment={x}", "#SBATCH --mail-type={x}", "#SBATCH -N 1 {x}", "#SBATCH --{x}",
    "#SBATCH --job-name \"{x}\"", "#SBATCH --gres=gpu:{x}", "#SBATCH --time={x}",
    "# SBATCH --comment={x}", "#sbatch --partition={x}", "export TOKEN={x}", "X={x}",
    "srun --comment={x} torchrun --nnodes=2 train.py", "srun python t.py --key {x}",
    "echo {x}", "# {x}", "srun bash -c 'echo {x}'", "torchrun --master-addr={x} t.py",
]
GLUE = st.sampled_from(["", "x", "a-", "key=", "\"", "'", ":", "_", "1", "$", "/"])


@st.composite
def placements(draw):
    token = draw(st.sampled_from(TOKENS))
    rows = draw(st.lists(st.tuples(st.sampled_from(LINES), GLUE, GLUE), min_size=1, max_size=5))
    head = draw(st.sampled_from(["#!/bin/bash\n#SBATCH --nodes=2\n", "#!/bin/bash\n"]))
    body = "\n".join(line.replace("{x}", pre + token + post) for line, pre, post in rows)
    tail = draw(st.sampled_from(["\nsrun hostname\n", "\n", "\nsrun torchrun t.py\n#SBATCH -c 4\n"]))
    return token, head + body + tail


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(placements())
def test_no_format_shows_a_generated_placement(case):
    import difflib

    token, text = case
    result = lint(text, "job.sbatch")
    shown = [output.format_text(result, "job.sbatch"), output.format_concise(result, "job.sbatch"),
             output.format_github(result, "job.sbatch"),
             json.dumps(output.to_json_obj(result, "job.sbatch")),
             json.dumps(output.to_sarif_results(result, "job.sbatch"))]
    outcome = fix_text(text, "job.sbatch", unsafe=True)
    diff = "".join(difflib.unified_diff(text.splitlines(True), outcome.text.splitlines(True)))
    shown.append(outcome.before.mask(outcome.result.mask(diff)))
    for out in shown:
        assert_clean(out, token)


# ---- the server ------------------------------------------------------------------------------

@pytest_lsp.fixture(config=config(), params=["visual-studio-code", "neovim@v0.7.0"])
async def client(lsp_client: LanguageClient, request, tmp_path):
    lsp_client.root = tmp_path
    await initialize(lsp_client, request.param, tmp_path)
    yield
    await lsp_client.shutdown_session()


def _json(value) -> str:
    return json.dumps(converters.get_converter().unstructure(value))


@pytest.mark.parametrize("token", [HF, GH])
async def test_no_server_feature_shows_a_secret(client: LanguageClient, token):
    text = script(token)
    uri = (client.root / "job.sbatch").as_uri()
    open_doc(client, uri, text)
    pub = await publish_for(client, uri, 1)
    assert pub.diagnostics
    seen = [_json(pub)]
    doc = t.TextDocumentIdentifier(uri)
    lines = text.split("\n")
    everything = t.Range(t.Position(0, 0), t.Position(len(lines), 0))
    actions = await client.text_document_code_action_async(t.CodeActionParams(
        text_document=doc, range=everything, context=t.CodeActionContext(diagnostics=[])))
    assert any(a.kind == "source.fixAll.sbatch-lint" for a in actions) or actions
    seen.append(_json(actions))
    for a in actions:  # an edit the client applies never writes a mask into the script
        if a.edit is not None:
            assert "****" not in apply(text, edits_of(a.edit, uri))
    for n, line in enumerate(lines):
        for col in sorted({0, len(line)} | {m.start() + 1 for m in re.finditer(r"[\s=\"':-]", line)}):
            pos = t.Position(n, col)
            seen.append(_json(await client.text_document_hover_async(
                t.HoverParams(text_document=doc, position=pos))))
        seen.append(_json(await client.text_document_completion_async(
            t.CompletionParams(text_document=doc, position=t.Position(n, len(line))))))
    seen.append(_json(await client.text_document_document_symbol_async(
        t.DocumentSymbolParams(text_document=doc))))
    seen.append(_json(await client.text_document_inlay_hint_async(
        t.InlayHintParams(text_document=doc, range=everything))))
    assert_clean("\n".join(seen), token)


def test_the_servers_log_masks_secrets():
    """A log line holding a token format, or a value only the lint knows (a literal assigned to
    a credential name), is masked; the document's lint is what tells the second."""
    from sbatch_lsp.server import _Formatter
    from sbatch_lsp.server.app import server
    from sbatch_lsp.server.documents import Linted

    result = lint(script(HF), "job.sbatch")
    server.documents._last["file:///job.sbatch"] = Linted(
        "file:///job.sbatch", 1, 0, script(HF), result, None, None, [])
    try:
        fmt = _Formatter("%(message)s", tracebacks=False)
        for msg in (f"Sending data: {script(HF)}", f"value {LITERAL} here"):
            record = logging.LogRecord("pygls", logging.DEBUG, __file__, 1, msg, None, None)
            assert_clean(fmt.format(record), HF)
        try:
            raise ValueError(f"bad {HF}")
        except ValueError:
            import sys
            record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", None,
                                       sys.exc_info())
        assert_clean(fmt.format(record), HF)
    finally:
        server.documents._last.pop("file:///job.sbatch", None)
