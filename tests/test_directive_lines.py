"""Which lines the directive reader finds below the block (directives.read_directives reads
every line down to the first command, then only the lines a search of the text finds)."""
from __future__ import annotations

from sbatch_lsp.directives import read_directives
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
