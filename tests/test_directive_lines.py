"""Which lines the directive reader finds below the block (directives.read_directives reads
every line down to the first command, then only the lines a search of the text finds)."""
from __future__ import annotations

import random
import re

import pytest

from sbatch_lsp.directives import _directive_like_lines, read_directives, tokenize
from sbatch_lsp.source import Source

TEXT = ("#!/bin/bash\n"
        "#SBATCH -N 2\n"
        "\n"
        "  # a comment\n"
        "#SBATCH --time=1:00\n"
        "echo start\n"            # line 5: the first command
        "#SBATCH -n 4\n"          # late
        "cat <<EOF\n"
        "#SBATCH -n 8\n"          # data (a here-document body)
        "EOF\n"
        "  # SBATCH --mem=1G\n"   # a lookalike
        "\f#sbatch -c 2\r\n"      # a lookalike after a form feed, CRLF
        "##SBATCH -G 1\n"         # doubled: not reported as a lookalike
        "#SLURM -p x\n"           # the old magic word, late
        "echo '#SBATCH -N 9'\n"   # inside a command: nothing
        "#SBATCH -A last")        # late, on the last line with no newline


def test_lines_below_the_block():
    block = read_directives(Source(TEXT), data_lines=frozenset({8}))
    assert block.scan_end_line == 5
    assert [dl.line for dl in block.lines] == [1, 4]
    assert [(dl.line, dl.magic) for dl in block.late_lines] == [
        (6, "#SBATCH"), (13, "#SLURM"), (15, "#SBATCH")]
    assert [n for n, _, _ in block.lookalikes] == [10, 11]


def test_no_command_reads_every_line_as_the_block():
    block = read_directives(Source("#!/bin/bash\n#SBATCH -N 1\n\n# x\n#SBATCH -n 2"))
    assert block.scan_end_line is None
    assert [dl.line for dl in block.lines] == [1, 4]
    assert block.late_lines == []


def test_a_command_on_the_last_line():
    block = read_directives(Source("#SBATCH -N 1\necho x"))
    assert block.scan_end_line == 1
    assert block.late_lines == [] and block.lookalikes == []


def test_the_uses_of_an_option_by_component_in_order():
    # all() and get() answer from an index of the accepted uses; each answer is the block's own
    # reading (refused and other components' uses left out) and all() a list the caller owns
    block = read_directives(Source("#!/bin/bash\n#SBATCH -N 1 --nodes=3 --ntasks=x\n"
                                   "#SBATCH --nodes --bogus\n#SBATCH hetjob\n#SBATCH -N 2\n"))
    assert [u.value for u in block.all("nodes")] == ["1", "3", "--bogus"]
    assert [u.value for u in block.all("nodes", 1)] == ["2"]
    assert block.get("nodes") is block.all("nodes")[-1] and block.get("mem") is None
    for name in {u.name for u in block.options if u.name}:
        for component in (0, 1):
            assert block.all(name, component) == [
                u for u in block.options if u.name == name and u.ok and u.component == component]
    block.all("nodes").clear()
    assert len(block.all("nodes")) == 3



@pytest.mark.parametrize("line, tokens, fatal", [
    ("#SBATCH  --time=1:00\t-N\v2 ", [("--time=1:00", 9, 20), ("-N", 21, 23), ("2", 24, 25)],
     None),
    ("#SBATCH\xa0-N 2", [("\xa0-N", 7, 10), ("2", 11, 12)], None),  # only ASCII blanks split
    ("#SBATCH -N 2 :x y", [("-N", 8, 10), ("2", 11, 12)], "Unexpected `:`"),
    ("#SBATCH -J 'a b' # note", [("-J", 8, 10), ("a b", 11, 16)], None),  # (quotes, comment)
])
def test_directive_tokens(line, tokens, fatal):
    # a line without quotes, backslashes and `#` is read by a search for runs of non-blanks;
    # it must read as the character-by-character reader does
    dl = tokenize(Source(line), 0, len("#SBATCH"), len(line), True)
    assert [(t.text, t.start, t.end) for t in dl.tokens] == tokens
    assert dl.fatal == fatal


#: the search below the block as a ``^`` anchored at every line start (MULTILINE): the reference
#: the faster search from each line break (directives._MAYBE_DIRECTIVE) must agree with
_AT_LINE_STARTS = re.compile(r"^[^\S\n]*#+[^\S\n]*(?:sbatch|slurm)", re.IGNORECASE | re.MULTILINE)
#: the pieces random texts are made of: line breaks, blanks of every kind, `#`s, the magic
#: words in several cases and what is not one
_PIECES = ["\n", "\r\n", " ", "\t", "\f", "\v", "\xa0", "\u2003", "#", "##", "sbatch", "SBATCH",
           "SLURM", "Slurm", "sbatc", "x", "echo ", "-N 2", "\x1c"]


@pytest.mark.parametrize("seed", range(200))
def test_the_lines_below_the_block_are_those_a_line_start_search_finds(seed):
    rnd = random.Random(seed)
    text = "".join(rnd.choice(_PIECES) for _ in range(rnd.randint(0, 60)))
    source = Source(text)
    for line in range(1, source.line_count):
        want = [source.line_of(m.start())
                for m in _AT_LINE_STARTS.finditer(text, source.line_starts[line])]
        assert list(_directive_like_lines(source, line)) == want, (text, line)


def test_the_line_search_sample():
    source = Source(TEXT)
    assert list(_directive_like_lines(source, 6)) == [6, 8, 10, 11, 12, 13, 15]
    assert list(_directive_like_lines(source, 15)) == [15]
