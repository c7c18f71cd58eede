"""The chunker's plain line reading (``chunker._plain_alone``) is the scanner's: on every line it
reads, it finds what a fresh :class:`~sbatch_lsp.shell.chunker.Scanner` finds (whether the line is
a whole chunk by itself, and where its comment starts); the other lines it leaves to the
scanner."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbatch_lsp.shell import chunker

from rule_pages import sample_scripts
from shell_models import real_corpus

#: pieces of shell lines: words, blanks, quotes, expansions, operators and keywords
ATOMS = ["a", "x=1", "A[i]=", " ", "\t", "#", "'", '"', "`", "\\", "$", "(", ")", "{", "}",
         "<", ">", ";", "&", "|", "&&", "||", "$(", "${", "$((", "<<", "EOF", "=", "-", "!",
         "if", "then", "fi", "do", "done", "for", "in", "case", "esac", "while", "until",
         "select", "function", "time", "exec", "[[", "]]", "X", "echo", "srun", "\r"]


def _agrees(line: str) -> bool:
    plain = chunker._plain_alone(line)
    return plain is None or plain == chunker._scanned_alone(line)


def test_common_lines_are_read_without_the_scanner():
    assert chunker._plain_alone("srun python train.py --lr 1e-4  # go") == (True, 32)
    assert chunker._plain_alone('export X="${HOME}/a b" Y=$(date +%s)') == (True, None)
    assert chunker._plain_alone("echo 'it''s' `hostname` >> log 2>&1 &") == (True, None)
    assert chunker._plain_alone("a=1;#x") == (True, 4)
    # the scanner's: a compound command, an operator or continuation left open, a function
    # head, a here-document, a `#` inside double quotes
    for line in ["if true; then", "for i in 1 2; do echo $i; done", "srun a |", "a && \\",
                 "f() {", "cat <<EOF", 'echo "a # b', "echo $((1 + 2))", "echo ${A:-$B}"]:
        assert chunker._plain_alone(line) is None, line


@pytest.mark.parametrize("line", [
    "a |\\x", "a && \\;", "a &&&", "a |;", "a ;&", "echo $#", "a#b # c", '"x"#y', "$(a)#c",
    "echo $(date) if", "x=1 if", "exec done", "echo $(if)", "a < b", "a <<< b", "a <(b)",
    '"$(a "b" c)"', "`a\\`b`", "${A:-'x'}", "echo \\# x", "a\r# c"])
def test_the_plain_reading_is_the_scanners_on_tricky_lines(line):
    assert _agrees(line)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(ATOMS), min_size=1, max_size=14))
def test_the_plain_reading_is_the_scanners_on_random_lines(atoms):
    line = "".join(atoms)
    assert _agrees(line), line


def test_the_plain_reading_is_the_scanners_on_every_line_of_the_scripts():
    texts = [p.values[0] for p in sample_scripts()] + [text for _, text in real_corpus()]
    lines = {line for text in texts for line in text.split("\n")}
    assert all(_agrees(line) for line in lines), [x for x in lines if not _agrees(x)][:5]
    assert sum(chunker._plain_alone(line) is not None for line in lines) > len(lines) // 2
