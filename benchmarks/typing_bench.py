"""Typing latency of the language server next to a tree-sitter-bash parse, and its memory
(numbers for the issue notes; nothing here asserts a time).

    python benchmarks/typing_bench.py [--rounds R] [--lines 300,5000]

For each script length the server (``python -m sbatch_lsp.server``, a push client: no pull
diagnostics) opens a multi-node script (benchmarks/lsp_bench.py ``script()``) and receives R
one-character edits typed at the end of its middle line, each an incremental (range) change of
a new version; the time from sending a change to the publish of that version's diagnostics is
one sample. In the same run, between the edits, this process parses the same text with
tree-sitter-bash (the parse an editor's highlighter does on each keystroke); the report gives
p50/p95 of both and the ratios. Then a burst: ``--burst`` characters typed ``--interval``
seconds apart without waiting, and the time from the last one to the publish of its version
(what a lint that is not abandoned for the newer version costs a fast typist). Then 50 documents (100-296 lines) are opened and linted, and
the server's resident memory (VmRSS) is read. The load average is printed before and after:
on a shared machine the ratios, measured side by side, mean more than the times.

    python benchmarks/typing_bench.py --stages [--rounds R] [--lines 300,5000]

profiles the same edits in this process instead (no server): each edit's lint split into its
stages, each stage's own time (what it called through the other timed stages excluded): the
shell model (``parse_script``: chunks, the chunk cache, the model build, nested strings), the
directive block, the Job (steps, layouts), each fact computed through ``Job.derived`` (the first
rule asking for it pays it otherwise), each rule's own time, provenance, suppressions, the
secrets and masking, and the LSP conversion. The garbage collector runs as in the server
(no automatic collection, a full one between edits, untimed).
"""
from __future__ import annotations

import argparse
import asyncio
import functools
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


async def main(rounds: int, sizes: list[int], burst: int = 10, interval: float = 0.1) -> None:
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
        last = rounds + 1
        for v in range(last + 1, last + burst + 1):
            at = t.Position(line, len(rows[line]))
            rows[line] += "y"
            t0 = time.perf_counter()
            client.text_document_did_change(t.DidChangeTextDocumentParams(
                text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=v),
                content_changes=[t.TextDocumentContentChangePartial(range=t.Range(at, at),
                                                                    text="y")]))
            if v < last + burst:
                await asyncio.sleep(interval)
        print(f"{lines}-line script, {burst} characters {1000 * interval:.0f} ms apart: last "
              f"character -> its diagnostics {1000 * (await wait_for(uri, last + burst) - t0):.0f} ms")
    await open_documents(client, wait_for)
    print(f"server memory (VmRSS): {base_rss / 1024:.0f} MiB after initialize, "
          f"{rss_kib(pid) / 1024:.0f} MiB with {50 + len(sizes)} documents open and linted")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    print(f"end: {load()}")


class Stages:
    """Exclusive wall time per named stage: ``wrap(name, fn)`` times ``fn`` minus the time of
    the timed stages it calls (``gen``: ``fn`` returns a generator, consumed inside)."""

    def __init__(self) -> None:
        self.own: dict[str, float] = {}
        self._stack: list[float] = []

    def wrap(self, name: str, fn, gen: bool = False):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            self._stack.append(0.0)
            try:
                return list(fn(*args, **kwargs)) if gen else fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - t0
                self.own[name] = self.own.get(name, 0.0) + spent - self._stack.pop()
                if self._stack:
                    self._stack[-1] += spent
        return timed


def stages(rounds: int, sizes: list[int]) -> None:
    """The in-process stage profile (module docstring); monkeypatches the engine's stages."""
    from lsprotocol.types import PositionEncodingKind
    from pygls.workspace.position_codec import PositionCodec

    import sbatch_lsp.lint as lint_module
    from sbatch_lsp import job as job_module
    from sbatch_lsp import suppressions
    from sbatch_lsp.server.diagnostics import lsp_diagnostics
    from sbatch_lsp.server.positions import Positions
    from sbatch_lsp.shell.parse import use_fragments

    use_fragments(True)  # as the server lints (sbatch-lsp's main)
    st = Stages()
    for name in ("parse_script", "directives_of", "Job", "credential_values"):
        setattr(lint_module, name, st.wrap(name, getattr(lint_module, name)))
    lint_module.suppressions = type("Suppressions", (), {  # type: ignore[assignment]
        "apply": staticmethod(st.wrap("suppressions", suppressions.apply))})
    masker = lint_module.Masker
    masker.of = classmethod(lambda cls, *a, f=masker.of: st.wrap("masking", f)(*a))  # type: ignore[method-assign]
    masker.diagnostic = st.wrap("masking", masker.diagnostic)  # type: ignore[method-assign]
    for code, check in list(lint_module._CHECKS.items()):  # the checks lint() calls
        lint_module._CHECKS[code] = st.wrap(f"rule {code}", check, gen=True)
    derived = job_module.Job.derived

    def timed_derived(job, compute):
        if compute in job._derived:
            return job._derived[compute]
        return st.wrap(f"fact {compute.__module__.rsplit('.', 1)[-1]}.{compute.__qualname__}",
                       derived)(job, compute)

    job_module.Job.derived = timed_derived  # type: ignore[method-assign]
    convert = st.wrap("lsp conversion", lsp_diagnostics)
    codec = PositionCodec(PositionEncodingKind.Utf16)
    import gc

    from sbatch_lsp.server.documents import NEVER

    # the collector as the server's lint thread runs it (server/documents.py): no automatic
    # collection, the thread's own between lints (not timed here)
    gc.freeze()
    gc.set_threshold(NEVER, NEVER, NEVER)
    print(f"start: {load()}")
    for lines in sizes:
        text = script(lines)
        lint_module.lint(text, "/bench/typing.sbatch")  # the chunk cache is warm
        rows = text.split("\n")
        line = len(rows) // 2
        st.own.clear()
        spent = []
        for _ in range(rounds):
            rows[line] += "x"
            text = "\n".join(rows)
            gc.collect()
            t0 = time.perf_counter()
            result = lint_module.lint(text, "/bench/typing.sbatch")
            convert(result, "file:///bench/typing.sbatch", Positions(result.source, codec))
            spent.append(time.perf_counter() - t0)
        total = sum(spent)
        share = {k: v for k, v in st.own.items()}
        groups = {g: sum(v for k, v in share.items() if k.startswith(g)) for g in ("fact ", "rule ")}
        print(f"{lines}-line script, {rounds} one-character edits in process: lint + conversion "
              f"p50 {1000 * statistics.median(spent):.1f} ms; facts {100 * groups['fact '] / total:.0f}%, "
              f"rules' own time {100 * groups['rule '] / total:.0f}%")
        ranked = sorted(share.items(), key=lambda kv: -kv[1])
        always = ("directives_of", "fact job._provenance", "suppressions", "credential_values",
                  "masking", "lsp conversion")
        for name, own in ranked[:20] + [kv for kv in ranked[20:] if kv[0] in always]:
            print(f"  {name}: {1000 * own / rounds:.2f} ms per edit ({100 * own / total:.1f}%)")
    print(f"end: {load()}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--lines", default="300,5000", help="script lengths, comma-separated")
    ap.add_argument("--burst", type=int, default=10, help="characters typed in the burst")
    ap.add_argument("--interval", type=float, default=0.1,
                    help="seconds between the burst's characters")
    ap.add_argument("--stages", action="store_true",
                    help="profile the edits' lint stages in this process (no server)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.lines.split(",")]
    if args.stages:
        stages(args.rounds, sizes)
    else:
        asyncio.run(main(args.rounds, sizes, args.burst, args.interval))
