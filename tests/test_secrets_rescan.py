"""secrets.script_secrets with the fragment memo on (the language server: only the lines an
edit changed are searched for candidate lines) against find_secrets of the whole text, over
seeded random edit sequences of texts holding tokens, near-tokens and prefilter bait."""
from __future__ import annotations

import random

import pytest

from sbatch_lsp import secrets
from sbatch_lsp.shell import parse

#: pieces the edits insert: whole tokens (built here, none is real), their halves, prefilter
#: bait that is no token, newlines that split or join lines, and blank lines
PIECES = ["hf_" + "a1B2c3" * 6, "ghp_" + "a1B2" * 9, "AKIA" + "ABCDEFGHIJ234567",
          "hf_", "a1B2c3" * 6, "ghp_", "wandb login " + "0123456789abcdef" * 3,
          "docker://alice:s3cr3tpw@registry/img", "sk-", "eyJ", "AWS", "xox", "://", "\n",
          "\n\n", "x", " ", "12345678:", "-us1", ".abcdef.", "#SBATCH --comment=x\n"]


@pytest.fixture(autouse=True)
def fragments():
    """The server's setting, and no last text from another test."""
    before = parse.use_fragments(True)
    secrets._last[0] = None
    yield
    parse.use_fragments(before)
    secrets._last[0] = None


def _edit(rng: random.Random, text: str) -> str:
    """An insertion of a piece, a deletion (across lines too) or a paste of a part of the
    text, at a random place."""
    at = rng.randint(0, len(text))
    kind = rng.randrange(3)
    if kind == 0 or not text:
        return text[:at] + rng.choice(PIECES) + text[at:]
    if kind == 1:
        return text[:at] + text[min(len(text), at + rng.randint(1, 60)):]
    a = rng.randint(0, len(text) - 1)
    return text[:at] + text[a:a + rng.randint(1, 120)] + text[at:]


@pytest.mark.parametrize("seed", range(40))
def test_rescan_matches_a_fresh_search(seed):
    rng = random.Random(seed)
    text = "\n".join(rng.choice(PIECES + ["srun python train.py", ""]) for _ in range(20))
    for _ in range(60):
        text = _edit(rng, text)
        assert secrets.script_secrets(text) == secrets.find_secrets(text)


def test_documents_in_turn_and_the_memo_off():
    # two documents linted in turn (the last text is the other one), and the CLI's setting
    one = "#!/bin/bash\nexport HF_TOKEN=" + PIECES[0] + "\nsrun x\n"
    two = "#!/bin/bash\nsrun y\n" + PIECES[1] + "\n"
    for text in [one, two, one + "x", two, "", one]:
        assert secrets.script_secrets(text) == secrets.find_secrets(text)
    parse.use_fragments(False)
    assert secrets.script_secrets(one) == secrets.find_secrets(one)
