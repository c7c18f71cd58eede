"""The server's fixed cost per keystroke, for callgrind (instruction counts, not times).

    python benchmarks/cgserver.py client LINES K OUT [--real] [-- valgrind args...]

runs ``python benchmarks/cgserver.py serve LINES`` (the real server, ``sbatch_lsp.server``'s
``main``) as a child over stdio, prefixed by the arguments after ``--`` (e.g. ``valgrind
--tool=callgrind``), and drives it as a push client: initialize, open a LINES-line script
(benchmarks/lsp_bench.py ``script()``; the first LINES lines of it when it is longer), then K
one-character edits at the end of its middle line (incremental changes), each waiting for the
publish of its version; then shutdown and exit. The publish messages' JSON bodies go to OUT, one
a line. Per keystroke = (count at K - count at 0) / K.

``serve`` lints the 40 edited texts before it starts serving (in every run, so the runs differ
only by the keystrokes) and the server's ``lint`` returns those results: the count is then the
server's own cost, JSON-RPC to publish, without the lint. ``--real`` (given to ``client``) lints
for real instead.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lsp_bench import script

URI = "file:///bench/cgserver.sbatch"
PATH = "/bench/cgserver.sbatch"
MAX_K = 40


def document(lines: int) -> str:
    """The LINES-line text the client opens."""
    rows = script(lines).split("\n")[:lines]
    return "\n".join(rows) + "\n"


def edits(lines: int, k: int):
    """The K (line, column, text after the edit) of typing ``x`` at the end of the middle line."""
    rows = document(lines).split("\n")
    line = len(rows) // 2
    for _ in range(k):
        col = len(rows[line])
        rows[line] += "x"
        yield line, col, "\n".join(rows)


def serve(lines: int, real: bool) -> None:
    """Run the server of the tree this file is in; unless ``real``, its lint answers from the
    40 edits' lints made first."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from sbatch_lsp.lint import lint
    from sbatch_lsp.server import main
    from sbatch_lsp.server import documents
    from sbatch_lsp.shell.parse import use_fragments

    if not real:
        use_fragments(True)
        made = {text: lint(text, PATH) for text in
                [document(lines)] + [e[2] for e in edits(lines, MAX_K)]}

        def memo(text, path, config=None, superseded=None):
            return made[text] if text in made else lint(text, path, config, superseded)

        documents.lint = memo  # type: ignore[assignment]
    sys.exit(main(["--stdio"]))


def frame(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_message(stream) -> bytes:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            raise EOFError
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
        elif line in (b"\r\n", b"\n"):
            return stream.read(length)


def client(lines: int, k: int, out: str, real: bool, prefix: list[str]) -> None:
    cmd = prefix + [sys.executable, __file__, "serve", str(lines)] + (["--real"] if real else [])
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    send = proc.stdin.write
    published: list[bytes] = []

    def wait(want_id=None, version=None) -> None:
        while True:
            body = read_message(proc.stdout)
            msg = json.loads(body)
            if want_id is not None and msg.get("id") == want_id and "method" not in msg:
                return
            if msg.get("method") == "textDocument/publishDiagnostics":
                published.append(body)
                if msg["params"].get("version") == version:
                    return

    send(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"processId": None, "rootUri": None, "capabilities": {}}}))
    proc.stdin.flush()
    wait(want_id=1)
    send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    send(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": URI, "languageId": "shellscript", "version": 1, "text": document(lines)}}}))
    proc.stdin.flush()
    wait(version=1)
    for v, (line, col, _) in enumerate(edits(lines, k), start=2):
        at = {"line": line, "character": col}
        send(frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": URI, "version": v},
            "contentChanges": [{"range": {"start": at, "end": at}, "text": "x"}]}}))
        proc.stdin.flush()
        wait(version=v)
    send(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None}))
    proc.stdin.flush()
    wait(want_id=2)
    send(frame({"jsonrpc": "2.0", "method": "exit", "params": None}))
    proc.stdin.close()
    proc.wait()
    Path(out).write_bytes(b"\n".join(published) + b"\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[0] == "serve":
        serve(int(args[1]), "--real" in args)
    else:
        rest = args[args.index("--") + 1:] if "--" in args else []
        head = args[:args.index("--")] if "--" in args else args
        client(int(head[1]), int(head[2]), head[3], "--real" in head, rest)
