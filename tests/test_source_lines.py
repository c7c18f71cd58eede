"""Source.line_starts (summed line lengths) against a character-by-character reference, on
tricky texts and seeded random ones over an alphabet of newlines, carriage returns, non-ASCII
and plain characters."""
import random

import pytest

from sbatch_lsp.source import Source

TRICKY = ["", "\n", "\n\n", "a", "a\n", "\na", "a\nb", "a\r\nb\r\n", "\r", "é\n€\n\U0001f600\n",
          "#!/bin/bash\n#SBATCH -N 2\n\nsrun x\n", "\ufeff#!/bin/sh\nx"]


def reference(text: str) -> list[int]:
    """Offset 0 and the offset after every "\\n"."""
    return [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]


def random_texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice("ab \n\n\r\té€") for _ in range(rng.randrange(0, 60)))
            for _ in range(count)]


@pytest.mark.parametrize("text", TRICKY + random_texts(13, 300))
def test_line_starts_match_the_reference(text):
    src = Source(text)
    assert src.line_starts == reference(text)
    assert src.line_count == text.count("\n") + 1
