"""shell/words.py: the literal value and expansions :func:`scan_word` reads from a word, and
:func:`expand_heredoc`'s reading of an unquoted here-document body, for words that mix plain
runs with quotes, escapes and expansions (the scanner copies the plain runs between them)."""
import pytest

from sbatch_lsp.shell.words import TextMap, expand_heredoc, scan_word


@pytest.mark.parametrize("text, value, refs", [
    ("plain.txt", "plain.txt", []),
    ("~/data", None, []),  # (tilde expansion)
    ("a'b c'd", "ab cd", []),
    ('pre"in $X mid"post', None, [("X", "double")]),
    ('"${OUT}/run_1.log"', None, [("OUT", "double")]),
    ("x\\ y\\$Z", "x y$Z", [("Z", "escaped")]),
    ('"a\\"b\\c"', 'a"b\\c', []),
    ("'$A'$B\"c\"", None, [("A", "single"), ("B", "unquoted")]),
    ("cost$", "cost$", []),
    ("$'\\t'tab", "\\ttab", []),
])
def test_scan_word_value_and_references(text, value, refs):
    word = scan_word(TextMap(" " + text + " "), 1, 1 + len(text))
    assert (word.text, word.start, word.end) == (text, 1, 1 + len(text))
    assert word.value == value
    assert [(e.name, e.quoting) for e in word.refs()] == refs
    assert word.early == []


def test_tilde_only_at_the_start_makes_a_word_not_literal():
    assert scan_word(TextMap("a~b"), 0, 3).value == "a~b"


def test_heredoc_body_keeps_quotes_and_expands_references():
    body = 'echo "$HOST" \'x\' \\$KEEP a\\b\n'
    out = expand_heredoc(TextMap(body), 0, len(body), lambda name, at: None)
    assert out.text == 'echo "_HOST_" \'x\' $KEEP a\\b\n'
    assert [e.name for _, _, e in out.early] == ["HOST"]
