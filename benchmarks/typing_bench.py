"""Typing latency of the language server next to a tree-sitter-bash parse, and its memory
(numbers for the issue notes; nothing here asserts a time).

    python benchmarks/typing_bench.py [--rounds R] [--lines 300,5000]

For each script length the server (``python -m sbatch_lsp.server``, a push client: no pull
diagnostics) opens a multi-node script (benchmarks/lsp_bench.py ``script()``) and receives R
one-character edits typed at the end of its middle line, each an incremental (range) change of
a new version; the time from sending a change to the publish of that version's diagnostics is
one sample. In the same run, between the edits, this process parses the same text with
tree-sitter-bash (the parse an editor's highlighter does on each keystroke); the report gives
p50/p95 of both and the ratios. Then 50 documents (100-296 lines) are opened and linted, and
the server's resident memory (VmRSS) is read. The load average is printed before and after:
on a shared machine the ratios, measured side by side, mean more than the times.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types as t

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lsp_bench import open_documents, pct, rss_kib, script, started_client


def load() -> str:
    """The 1-, 5- and 15-minute load averages and the CPU count, for the report."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def ts_parser():
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


async def main(rounds: int, sizes: list[int]) -> None:
    print(f"start: {load()}")
    client, wait_for, pid = await started_client("typing-bench", 600)
    client.initialized(t.InitializedParams())
    base_rss = rss_kib(pid)
    parser = ts_parser()
    for lines in sizes:
        uri = f"file:///bench/typing-{lines}.sbatch"
        text = script(lines)
        client.text_document_did_open(t.DidOpenTextDocumentParams(t.TextDocumentItem(
            uri=uri, language_id="shellscript", version=1, text=text)))
        await wait_for(uri, 1)
        rows = text.split("\n")
        line = len(rows) // 2
        typing, parsing = [], []
        for v in range(2, rounds + 2):
            col = len(rows[line])
            rows[line] += "x"
            text = "\n".join(rows)
            at = t.Position(line, col)  # ASCII: UTF-16 columns are characters
            t0 = time.perf_counter()
            client.text_document_did_change(t.DidChangeTextDocumentParams(
                text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=v),
                content_changes=[t.TextDocumentContentChangePartial(range=t.Range(at, at),
                                                                    text="x")]))
            typing.append(await wait_for(uri, v) - t0)
            data = text.encode("utf-8")
            p0 = time.perf_counter()
            parser.parse(data)
            parsing.append(time.perf_counter() - p0)
        ts50, ts95 = statistics.median(parsing), pct(parsing, 0.95)
        p50, p95 = statistics.median(typing), pct(typing, 0.95)
        print(f"{lines}-line script, {rounds} one-character edits: typing -> diagnostics "
              f"p50 {1000 * p50:.1f} ms, p95 {1000 * p95:.1f} ms; tree-sitter-bash parse "
              f"p50 {1000 * ts50:.2f} ms, p95 {1000 * ts95:.2f} ms; ratio p50 {p50 / ts50:.1f}x, "
              f"p95 {p95 / ts50:.1f}x (of the parse's p50)")
    await open_documents(client, wait_for)
    print(f"server memory (VmRSS): {base_rss / 1024:.0f} MiB after initialize, "
          f"{rss_kib(pid) / 1024:.0f} MiB with {50 + len(sizes)} documents open and linted")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    print(f"end: {load()}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--lines", default="300,5000", help="script lengths, comma-separated")
    args = ap.parse_args()
    asyncio.run(main(args.rounds, [int(x) for x in args.lines.split(",")]))
