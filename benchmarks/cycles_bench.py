"""Objects of a lint that only the cyclic garbage collector frees (numbers for the issue notes;
nothing here asserts anything).

    python benchmarks/cycles_bench.py [--lines 300,5000] [--types N] [--server]

For each script length (the typing benchmark's script, benchmarks/lsp_bench.py ``script()``),
with automatic collection off, the script is linted twice and ``gc.collect()`` counts each
lint's own cyclic temporaries (the first fills the chunk memos, as a document just opened does);
the second's result is dropped and ``gc.collect()`` counts what it held in reference cycles: the
objects the language server's lint thread would leave to its full collections on every
keystroke. ``--types N`` lists the N most common types of those; ``--server`` lints as the
language server does (``Documents._lint``: the LSP diagnostics and positions too).
"""
from __future__ import annotations

import argparse
import collections
import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lsp_bench import script


def lint_once(text: str, server: bool):
    """A lint of ``text`` as the CLI (``lint``) or the language server (``Documents._lint``)."""
    if not server:
        from sbatch_lsp.lint import lint
        return lint(text, "/bench/typing.sbatch")
    from sbatch_lsp.server.documents import Documents
    from sbatch_lsp.server.settings import Settings
    from pygls.workspace.position_codec import PositionCodec
    return Documents._lint("file:///bench/typing.sbatch", text, 2, "/bench/typing.sbatch", 0,
                           Settings(), PositionCodec(), lambda path: None, lambda: False)


def measure(lines: int, types: int, server: bool) -> None:
    text = script(lines)
    gc.collect()
    gc.disable()
    try:
        lint_once(text, server)  # cold: the chunk memos are filled
        cold = gc.collect()
        result = lint_once(text, server)
        during = gc.collect()
        if types:
            gc.set_debug(gc.DEBUG_SAVEALL)
        del result
        dropped = gc.collect()
        gc.set_debug(0)
    finally:
        gc.enable()
    print(f"{lines:>5} lines: {cold:>7} cyclic temporaries of a first lint, {during:>7} of a "
          f"second, {dropped:>7} objects freed only by the collector after the drop")
    if types:
        counts = collections.Counter(type(o).__qualname__ for o in gc.garbage)
        for name, n in counts.most_common(types):
            print(f"      {n:>7}  {name}")
        gc.garbage.clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", default="300,5000", help="script lengths, comma-separated")
    ap.add_argument("--types", type=int, default=0, help="list the N commonest dropped types")
    ap.add_argument("--server", action="store_true", help="lint as the language server does")
    args = ap.parse_args()
    for lines in map(int, args.lines.split(",")):
        measure(lines, args.types, args.server)


if __name__ == "__main__":
    main()
