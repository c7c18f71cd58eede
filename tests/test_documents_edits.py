"""The server's incremental edits (server/documents.py ``LspLinesDocument``): its splice at
ASCII positions gives exactly the text pygls' own line-by-line edit gives (the reference), on
tricky, seeded random and generated edits."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types as t
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import PositionCodec

from sbatch_lsp.server.documents import LspLinesDocument

TEXTS = ["", "x", "a\n", "#!/bin/bash\n#SBATCH -N 1\nsrun hostname\n",
         "no newline at end", "crlf\r\nlines\r\nhere", "\n\n\n", "page\x0cbreak\nnext\n",
         "ünïcode line\nascii line\n😋 emoji\n", "a\rb\nc\r\n\r\n", "tab\there\n"]
ENCODINGS = [t.PositionEncodingKind.Utf16, t.PositionEncodingKind.Utf8,
             t.PositionEncodingKind.Utf32]


def edited(text: str, change: t.TextDocumentContentChangePartial, encoding, fast: bool) -> str:
    """``text`` after ``change``, by the fast path (``fast``) or pygls' own edit."""
    doc = LspLinesDocument("file:///x.sbatch", text, 1, position_codec=PositionCodec(encoding))
    if fast:
        doc._apply_incremental_change(change)
    else:
        TextDocument._apply_incremental_change(doc, change)
    return doc.source


def change(sl: int, sc: int, el: int, ec: int, new: str) -> t.TextDocumentContentChangePartial:
    return t.TextDocumentContentChangePartial(
        range=t.Range(t.Position(sl, sc), t.Position(el, ec)), text=new)


def assert_same(text: str, sl: int, sc: int, el: int, ec: int, new: str, encoding) -> None:
    # pygls' conversion may mutate the positions it is given: each side gets its own change
    fast = edited(text, change(sl, sc, el, ec, new), encoding, True)
    ref = edited(text, change(sl, sc, el, ec, new), encoding, False)
    assert fast == ref, (text, (sl, sc, el, ec), new, encoding)


def test_tricky_edits_match_pygls():
    for text in TEXTS:
        n = text.count("\n") + 2
        for encoding in ENCODINGS:
            for sl in range(n):
                for el in range(n):
                    for sc in (0, 1, 2, 3, 11, 40):
                        for ec in (0, 1, 3, 12, 40):
                            for new in ("", "x", "\n", "y\r\nz"):
                                assert_same(text, sl, sc, el, ec, new, encoding)


def test_seeded_random_typing_matches_pygls():
    rng = random.Random(11)
    alphabet = "ab #$\n\r\té😋-="
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60)))
        n = text.count("\n") + 2
        sl, el = rng.randrange(n), rng.randrange(n)
        sc, ec = rng.randrange(25), rng.randrange(25)
        new = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 4)))
        assert_same(text, sl, sc, el, ec, new, rng.choice(ENCODINGS))


@settings(max_examples=400, deadline=None)
@given(text=st.text(st.sampled_from("ab\n\r\x0cé😋 "), max_size=40),
       pos=st.tuples(*[st.integers(0, 12)] * 4), new=st.text(max_size=3),
       encoding=st.sampled_from(ENCODINGS))
def test_generated_edits_match_pygls(text, pos, new, encoding):
    assert_same(text, *pos, new, encoding)
