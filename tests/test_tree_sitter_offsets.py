"""tree_sitter_parse's byte-to-character conversion, against a character-by-character
reference, on texts mixing 1-, 2-, 3- and 4-byte UTF-8 characters."""
from __future__ import annotations

import random

import pytest

from sbatch_lsp.shell.parse import tree_sitter_parse


def reference(text: str) -> list[int]:
    """The character offset of each byte of ``text``'s UTF-8 form, then ``len(text)``."""
    out = [ci for ci, ch in enumerate(text) for _ in ch.encode("utf-8")]
    return out + [len(text)]


ALPHABET = "ab $\n\"é中😀\u0080\u07ff\u0800\uffff\U00010000"
TRICKY = ["", "a", "é", "😀", "echo é\n", 'X="中文"; echo "$X"\n', "\u07ff\u0800\U0010ffff"]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky(text: str) -> None:
    _, at = tree_sitter_parse(text)
    assert [at(b) for b in range(len(text.encode()) + 1)] == reference(text)


def test_seeded_random() -> None:
    rng = random.Random(7)
    for _ in range(500):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(1, 30)))
        _, at = tree_sitter_parse(text)
        assert [at(b) for b in range(len(text.encode()) + 1)] == reference(text), repr(text)


def test_node_offsets_are_character_offsets() -> None:
    text = 'echo "héllo 😀"; srun python train.py\n'
    root, at = tree_sitter_parse(text)
    second = root.children[2] if root.children[1].type == ";" else root.children[1]
    assert text[at(second.start_byte):at(second.end_byte)] == "srun python train.py"
