"""Speed and memory of the language server, driven over stdio like an editor (numbers for the
issue notes; nothing here asserts a time).

    python benchmarks/lsp_bench.py [ROUNDS]

1. didChange -> publishDiagnostics on a 300-line and a 5,000-line multi-node script: each round
   sends one full-text change (a new version) and waits for the publish of that version;
   median and p95 of the wall time;
2. a hover sent right after each change of the 5,000-line script: its latency, and how often it
   was answered before that lint's publish;
3. server memory (VmRSS) after initialize, and after opening 50 documents (100-300 lines each)
   and receiving their diagnostics.
"""
from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types as t
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[1]
BASE = (ROOT / "examples" / "bad" / "legacy-torchrun-8-tasks.sbatch").read_text()


def script(lines: int, seed: int = 0) -> str:
    """A multi-node script of ``lines`` lines: a real example's header and launch, with
    exports, loops and srun steps between (what long production scripts hold)."""
    head = BASE.splitlines()
    body: list[str] = []
    i = 0
    while len(head) + len(body) < lines:
        body += [f'export STAGE_{seed}_{i}="/lustre/run/{i}"',
                 f'echo "stage {i} on $SLURM_JOB_ID" >> "$LOG"',
                 f'srun --ntasks-per-node=1 python prepare.py --part {i} --out "$STAGE_{seed}_{i}"',
                 f"for f in data/{i}/*; do cp \"$f\" /lustre/cache/; done"]
        i += 1
    body = body[:max(0, lines - len(head))]
    return "\n".join(head[:12] + body + head[12:]) + "\n"


def pct(xs, p):
    """The ``p`` quantile (0 < p <= 1) of the samples ``xs`` by the nearest-rank method: the
    smallest sample with at least ``p`` of them at or below it (p95 of 20 samples is the 19th,
    not the largest)."""
    xs = sorted(xs)
    return xs[max(0, math.ceil(len(xs) * p) - 1)]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def open_documents(client: LanguageClient, wait_for, count: int = 50) -> None:
    """Open ``count`` documents of 100 to 96 + 4 × ``count`` lines and wait until each one's
    diagnostics are published (``wait_for(uri, version)``): the load of the memory figure."""
    uris = []
    for k in range(count):
        uri = f"file:///bench/doc{k}.sbatch"
        uris.append(uri)
        client.text_document_did_open(t.DidOpenTextDocumentParams(t.TextDocumentItem(
            uri=uri, language_id="shellscript", version=1, text=script(100 + 4 * k, seed=k))))
    for uri in uris:
        await wait_for(uri, 1)


async def started_client(name: str, timeout: float):
    """A client of a fresh ``sbatch-lsp`` over stdio, initialised: (client, ``wait_for(uri,
    version)`` -> the ``perf_counter()`` time that version's diagnostics arrived (waiting at most
    ``timeout`` seconds for each publish), the server's pid)."""
    client = LanguageClient(name, "1")
    published: dict[tuple[str, int], float] = {}
    arrived = asyncio.Event()

    @client.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _on_publish(params: t.PublishDiagnosticsParams):
        published[(params.uri, params.version)] = time.perf_counter()
        arrived.set()

    async def wait_for(uri: str, version: int) -> float:
        while (uri, version) not in published:
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), timeout)
        return published[(uri, version)]

    await client.start_io(sys.executable, "-m", "sbatch_lsp.server")
    pid = client._server.pid  # type: ignore[union-attr]
    await client.initialize_async(t.InitializeParams(capabilities=t.ClientCapabilities(),
                                                     root_uri=ROOT.as_uri()))
    return client, wait_for, pid


async def main(rounds: int) -> None:
    client, wait_for, pid = await started_client("lsp-bench", 300)
    client.initialized(t.InitializedParams())
    base_rss = rss_kib(pid)
    for lines in (300, 5000):
        uri = f"file:///bench/{lines}.sbatch"
        text = script(lines)
        client.text_document_did_open(t.DidOpenTextDocumentParams(t.TextDocumentItem(
            uri=uri, language_id="shellscript", version=1, text=text)))
        await wait_for(uri, 1)
        times = []
        for v in range(2, rounds + 2):
            edited = text.replace("stage 0 on", f"stage 0 (edit {v}) on")
            t0 = time.perf_counter()
            client.text_document_did_change(t.DidChangeTextDocumentParams(
                text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=v),
                content_changes=[t.TextDocumentContentChangeWholeDocument(text=edited)]))
            times.append(await wait_for(uri, v) - t0)
        print(f"didChange -> diagnostics, {lines}-line script ({rounds} changes): "
              f"median {1000 * statistics.median(times):.0f} ms, p95 {1000 * pct(times, 0.95):.0f} ms")
    # a hover sent right after a change of the 5,000-line script, while it is linted
    hovers, before_publish = [], 0
    for v in range(rounds + 2, 2 * rounds + 2):
        client.text_document_did_change(t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=v),
            content_changes=[t.TextDocumentContentChangeWholeDocument(
                text=text.replace("stage 1 on", f"stage 1 (edit {v}) on"))]))
        t0 = time.perf_counter()
        await client.text_document_hover_async(t.HoverParams(
            text_document=t.TextDocumentIdentifier(uri), position=t.Position(6, 10)))
        answered = time.perf_counter()
        hovers.append(answered - t0)
        before_publish += answered < await wait_for(uri, v)
    print(f"hover during a 5,000-line lint: median {1000 * statistics.median(hovers):.0f} ms, "
          f"p95 {1000 * pct(hovers, 0.95):.0f} ms; answered before that lint's publish "
          f"{before_publish}/{rounds} times")
    await open_documents(client, wait_for)
    print(f"server memory (VmRSS): {base_rss / 1024:.0f} MiB after initialize, "
          f"{rss_kib(pid) / 1024:.0f} MiB with 52 documents open and linted")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rounds", nargs="?", type=int, default=30,
                    help="changes per script size, and hovers (default: 30)")
    asyncio.run(main(ap.parse_args().rounds))
