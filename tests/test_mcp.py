"""The MCP server (issue 15 item 4) through the SDK's own client over standard input/output: one
``python -m sbatch_lsp.mcp`` process for the module. Every tool answers for a script written
here (held out: no case, page or example holds it) exactly as the CLI face it stands for, its
result validates against the shipped schema, bad input is a tool error in words, and no detected
secret appears in any result but ``convert``'s script text."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from mcp import Client  # the mcp extra, which the test extra includes
from mcp.client.stdio import StdioServerParameters

from sbatch_lsp.cli import main as cli
from sbatch_lsp.schemas import schema

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "hf_" + "Zp3Lq8Vw2Nx6Ry1Tb5Kc9Hd4Mf7Gj0Ss2"
#: torchrun under a one-task-per-GPU srun on two nodes, with a token in the body
HELD_OUT = f"""#!/bin/bash
#SBATCH --job-name=held-out
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-node=4
#SBATCH --time=01:00:00

export WANDB_API_KEY={TOKEN}
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
export MASTER_PORT=29500
srun torchrun --nnodes=2 --nproc-per-node=4 --rdzv-backend=c10d \\
    --rdzv-endpoint=$MASTER_ADDR:$MASTER_PORT finetune.py --lr 3e-4
"""
REFUSED = HELD_OUT.replace("--nnodes=2", "--nnodes=1:4")  # elastic: no Slurm equivalent
LOG = ROOT / "tests" / "logs" / "L008.log"  # EADDRINUSE: SB201 explains it


class Session:
    """One MCP client session on its own event-loop thread; :meth:`call` runs a tool."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.requests: asyncio.Queue | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._run(),),
                                       daemon=True)
        self.thread.start()
        if not self.ready.wait(60) or self.error:
            raise RuntimeError(f"the MCP server did not start: {self.error!r}")

    async def _run(self) -> None:
        self.requests = asyncio.Queue()
        params = StdioServerParameters(command=sys.executable, args=["-m", "sbatch_lsp.mcp"],
                                       cwd=str(ROOT))
        try:
            async with Client(params) as client:
                self.client = client
                self.ready.set()
                while (item := await self.requests.get()) is not None:
                    coro, done = item
                    try:
                        done.set_result(await coro(client))
                    except BaseException as exc:  # noqa: BLE001  (handed to the test thread)
                        done.set_exception(exc)
        except BaseException as exc:  # noqa: BLE001
            self.error = exc
            self.ready.set()

    def run(self, coro):
        import concurrent.futures

        done: concurrent.futures.Future = concurrent.futures.Future()
        self.loop.call_soon_threadsafe(self.requests.put_nowait, (coro, done))  # type: ignore[union-attr]
        return done.result(60)

    def call(self, tool: str, **arguments):
        return self.run(lambda c: c.call_tool(tool, arguments))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.requests.put_nowait, None)  # type: ignore[union-attr]
        self.thread.join(30)


@pytest.fixture(scope="module")
def mcp() -> Iterator[Session]:
    s = Session()
    yield s
    s.close()


def _text(result) -> str:
    assert not result.is_error, result.content
    return result.content[0].text


def _cli_json(capsys, *argv: str):
    code = cli(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_five_tools_and_their_input_schemas(mcp):
    tools = {t.name: t for t in mcp.run(lambda c: c.list_tools()).tools}
    assert set(tools) == {"lint", "explain", "convert", "triage", "show"}
    for name in ("lint", "convert", "show"):
        s = tools[name].input_schema
        assert s["required"] == ["text"] and set(s["properties"]) == {"text", "path", "config"}
    assert tools["explain"].input_schema["required"] == ["code"]
    assert set(tools["triage"].input_schema["properties"]) == {"log", "log_text", "script"}
    assert all(t.annotations and t.annotations.read_only_hint for t in tools.values())


def test_lint_answers_as_the_cli_json(mcp, tmp_path, capsys):
    job = tmp_path / "held.sbatch"
    job.write_text(HELD_OUT)
    code, out, _ = _cli_json(capsys, "--format", "json", "--no-cache", str(job))
    got = json.loads(_text(mcp.call("lint", text=HELD_OUT, path=str(job))))
    assert got == json.loads(out) and code == 1
    assert {"SB201"} <= {f["code"] for f in got}
    jsonschema.Draft202012Validator(schema("lint")).validate(got)
    assert TOKEN not in json.dumps(got)


def test_lint_never_reads_path_and_finds_its_configuration(mcp, tmp_path):
    (tmp_path / ".sbatch-lint.toml").write_text('ignore = ["SB201"]\n')
    job = tmp_path / "sub" / "job.sbatch"
    job.parent.mkdir()
    job.write_text("#!/bin/bash\n#SBATCH --nodes=1\nsrun hostname\n")  # clean: must not be read
    found = json.loads(_text(mcp.call("lint", text=HELD_OUT, path=str(job))))
    codes = {f["code"] for f in found}
    assert "SB201" not in codes and codes, codes  # the text was linted, with that configuration
    assert {f["path"] for f in found} == {str(job)}
    other = tmp_path / "strict.toml"
    other.write_text('select = ["SB201"]\n')
    found = json.loads(_text(mcp.call("lint", text=HELD_OUT, path=str(job), config=str(other))))
    assert {f["code"] for f in found} == {"SB201"}


def test_explain_is_the_page_the_cli_prints(mcp, capsys):
    _, out, _ = _cli_json(capsys, "--explain", "SB201")
    assert _text(mcp.call("explain", code="SB201")) + "\n" == out
    assert _text(mcp.call("explain", code="torchrun-per-task")) + "\n" == out
    bad = mcp.call("explain", code="SB999")
    assert bad.is_error and "unknown rule 'SB999'" in bad.content[0].text


def test_convert_answers_as_the_cli(mcp, tmp_path, capsys):
    job = tmp_path / "held.sbatch"
    job.write_text(HELD_OUT)
    code, diff, _ = _cli_json(capsys, "--convert", "srun-native", str(job))
    res = mcp.call("convert", text=HELD_OUT, path=str(job))
    got = json.loads(_text(res))
    jsonschema.Draft202012Validator(schema("convert")).validate(got)
    assert res.structured_content == got
    assert got["converted"] is True and got["refusals"] == [] and code == 0
    assert got["diff"] == diff and TOKEN not in got["diff"]
    cli(["--convert", "srun-native", "--write", str(job)])
    capsys.readouterr()
    assert got["text"] == job.read_text() and TOKEN in got["text"]  # the script, unmasked


def test_convert_refusals_have_the_cli_lines_and_reasons(mcp, tmp_path, capsys):
    job = tmp_path / "elastic.sbatch"
    job.write_text(REFUSED)
    code, _, err = _cli_json(capsys, "--convert", "srun-native", str(job))
    got = json.loads(_text(mcp.call("convert", text=REFUSED, path=str(job))))
    assert code == 1 and got["converted"] is False and got["diff"] == ""
    assert got["text"] == REFUSED
    want = [line.split(": cannot convert: ", 1) for line in err.splitlines()
            if ": cannot convert: " in line]
    assert [(r["line"], r["reason"]) for r in got["refusals"]] == \
        [(int(where.split(":")[-2]), reason) for where, reason in want]
    assert got["refusals"]


def test_show_answers_as_the_cli(mcp, tmp_path, capsys):
    job = tmp_path / "held.sbatch"
    job.write_text(HELD_OUT)
    _, out, _ = _cli_json(capsys, "show", "--format", "json", str(job))
    res = mcp.call("show", text=HELD_OUT, path=str(job))
    got = json.loads(_text(res))
    assert got == json.loads(out) == res.structured_content
    jsonschema.Draft202012Validator(schema("show")).validate(got)
    assert got["steps"][0]["launcher"] == "torchrun" and TOKEN not in _text(res)


def test_triage_of_a_log_file_and_of_log_text_answers_as_the_cli(mcp, tmp_path, capsys):
    _, out, _ = _cli_json(capsys, "triage", "--format", "json", str(LOG))
    got = json.loads(_text(mcp.call("triage", log=str(LOG))))
    assert got == json.loads(out)
    jsonschema.Draft202012Validator(schema("triage")).validate(got)
    job = tmp_path / "held.sbatch"
    job.write_text(HELD_OUT)
    log = tmp_path / "slurm-1.out"
    log.write_text(LOG.read_text("utf-8", "replace"))
    _, out, _ = _cli_json(capsys, "triage", "--format", "json", "--script", str(job), str(log))
    got = json.loads(_text(mcp.call("triage", log=str(log), script=str(job))))
    assert got == json.loads(out)
    # the same log as text: the same answer, its lines named <log> instead of the file
    text = _text(mcp.call("triage", log_text=log.read_text(), script=str(job)))
    assert json.loads(text.replace('"<log>"', json.dumps(str(log)))) == got
    assert got["root_cause"]["category"] == "address-in-use" and TOKEN not in text
    assert "SB201" in {f["code"] for f in got["rules"]}


@pytest.mark.parametrize("tool,arguments,words", [
    ("lint", {"text": "\0\0\0\0binary"}, "not a script: binary"),
    ("show", {"text": "#!/bin/bash\n\0\0\0\0"}, "not a script: binary"),
    ("triage", {"log": "/nonexistent/slurm-1.out"}, "no such file"),
    ("triage", {}, "give one of log"),
    ("lint", {"text": "#!/bin/bash\n", "config": "/nonexistent/site.toml"},
     "configuration error"),
])
def test_bad_input_is_a_tool_error_in_words(mcp, tool, arguments, words):
    res = mcp.call(tool, **arguments)
    assert res.is_error
    text = res.content[0].text
    assert words in text and "Traceback" not in text, text


def test_the_cli_never_imports_the_sdk():
    code = ("import sys, sbatch_lsp.cli as c; c.main(['--format', 'json', '--explain', 'SB201']); "
            "assert not [m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')], 'mcp'")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr


def test_readme_snippets_name_the_real_entry_point_and_tools(mcp):
    import re
    import tomllib

    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## MCP server for coding agents"):]
    section = section[:section.index("\n## ", 1)]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["sbatch-mcp"] == "sbatch_lsp.mcp:main"
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", section, re.S)]
    assert [next(iter(b)) for b in blocks] == ["servers", "mcpServers"]
    for b in blocks:
        entry = next(iter(b.values()))["sbatch-lint"]
        assert entry["command"] == "sbatch-mcp" and entry["args"] == []
    assert "claude mcp add --transport stdio sbatch-lint -- sbatch-mcp" in section
    listed = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    assert listed == {t.name for t in mcp.run(lambda c: c.list_tools()).tools}


def test_without_the_sdk_the_server_says_how_to_install_it():
    code = ("import sys; sys.modules['mcp'] = None; from sbatch_lsp.mcp import main; "
            "sys.exit(main())")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.startswith("sbatch-mcp: the MCP SDK is not installed") and \
        "'.[mcp]'" in run.stderr
