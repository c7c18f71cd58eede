"""bashlex nests the second ``elif`` of an ``if`` and all that follows it (further elifs,
``else``) inside a reserved-word node; the shell model must still hold those commands."""
from sbatch_lsp.shell.parse import parse
from sbatch_lsp.shell.words import TextMap

IF_CHAIN = """\
if [ "$A" = 1 ]; then
  echo one
elif [ "$A" = 2 ]; then
  echo two
elif [ "$A" = 3 ]; then
  srun three
elif [ "$A" = 4 ]; then
  srun four
else
  srun five
fi
"""


def _names(text: str, **kwargs) -> list[str]:
    script = parse(TextMap(text), **kwargs)
    return [cmd.words[0].text for cmd in script.commands if cmd.words]


def test_every_branch_of_an_elif_chain_is_in_the_model():
    names = _names(IF_CHAIN, read_simple=False)
    assert names == ["[", "echo", "[", "echo", "[", "srun", "[", "srun", "srun"]


def test_lines_of_later_branches_are_their_own():
    script = parse(TextMap(IF_CHAIN), read_simple=False)
    lines = IF_CHAIN.splitlines()
    for cmd in script.commands:
        assert IF_CHAIN[cmd.start:cmd.end] in "\n".join(lines)
    srun = [IF_CHAIN[c.start:c.end] for c in script.commands if c.words[0].text == "srun"]
    assert srun == ["srun three", "srun four", "srun five"]
