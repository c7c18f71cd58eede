"""shell/words.py: the literal value and expansions :func:`scan_word` reads from a word, and
:func:`expand_heredoc`'s reading of an unquoted here-document body, for words that mix plain
runs with quotes, escapes and expansions (the scanner copies the plain runs between them)."""
import random

import pytest
from rule_pages import sample_scripts
from shell_models import real_corpus

from sbatch_lsp.shell import parse as parse_module
from sbatch_lsp.shell.words import TextMap, _scan, expand_heredoc, scan_word


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


@pytest.mark.parametrize("text, refs", [
    ("$(echo '$A' $B \\$C)", [("B", "unquoted", True)]),  # (single quotes hide, \\ skips)
    ("$((A + b2*$C - 3x))", [("A", "unquoted", True), ("b2", "unquoted", True),
                             ("C", "unquoted", True)]),  # (a name after a digit is none)
    ("${X:-$Y}", [("X", "unquoted", False), ("Y", "unquoted", True)]),
    ('$(a "$(b $D)")', [("D", "unquoted", True)]),
    ("$((é1+N))", [("N", "unquoted", True)]),
    ("'a$B$C'", [("B", "single", False), ("C", "single", False)]),
])
def test_scan_word_references_inside_substitutions_and_single_quotes(text, refs):
    """The references the scanner finds between the characters it passes over (inside
    ``$( )``, ``$(( ))``, a ``${ }`` operand, single quotes)."""
    word = scan_word(TextMap(" " + text + " "), 1, 1 + len(text))
    assert [(e.name, e.quoting, e.nested) for e in word.refs()] == refs


def test_tilde_only_at_the_start_makes_a_word_not_literal():
    assert scan_word(TextMap("a~b"), 0, 3).value == "a~b"


def test_heredoc_body_keeps_quotes_and_expands_references():
    body = 'echo "$HOST" \'x\' \\$KEEP a\\b\n'
    out = expand_heredoc(TextMap(body), 0, len(body), lambda name, at: None)
    assert out.text == 'echo "_HOST_" \'x\' $KEEP a\\b\n'
    assert [e.name for _, _, e in out.early] == ["HOST"]


# ---- scan_word's readings without the scanner against the scanner's (words._scan) ----
#: words whose reading is easy to get wrong: a ``$NAME`` at the end of a word that a name
#: character follows in the text, quotes left open, ``$`` forms the scanner alone reads
TRICKY_WORDS = ['"$X"', '"${X}"', '$X"$Y"', '"a"$B"c"', '"$"', "$", "a$", "$1", "$@", "$$",
                "${X:-a}", "${#X}", "${!X}", "${X", "${}", '"unclosed $X', '"$X', '~"$X"',
                "~/x", "a~b", '"${X}y"', "${X}${Y}", "$X_y", "${X}_", "$é", '"é$X"', "$Xé",
                '"a b"', '""', '"', '--opt="$A $B"', "$X-$Y.log", "${X}}", "$_", "${_1}",
                "$(a)", "`a`", "'$X'", "\\$X", '"\\$X"', "$'x'", '$"x"', "a=$X", "$9X"]
#: what random words are made of
WORD_ATOMS = ["a", "Z", "_", "1", "é", "-", "/", ".", "=", ":", "{", "}", "(", ")", "~", " ",
              '"', "'", "\\", "`", "$", "$X", "${X}", "$Y1", "${A_b}", "${X:-y}", "$1", "$("]


def _same_reading(text: str, start: int, end: int) -> bool:
    tmap = TextMap(text)
    return scan_word(tmap, start, end) == _scan(tmap, start, end)


@pytest.mark.parametrize("word", TRICKY_WORDS)
@pytest.mark.parametrize("before, after", [("", ""), (" ", " "), ("x", "y"), ("", "_"),
                                           ("", "1"), ("", "é"), ("", "}")])
def test_scan_word_reads_tricky_words_as_the_scanner(word, before, after):
    assert _same_reading(before + word + after, len(before), len(before) + len(word))


def test_scan_word_reads_random_words_as_the_scanner():
    rng = random.Random(1414)
    for _ in range(20_000):
        atoms = rng.choices(WORD_ATOMS, k=rng.randint(1, 8))
        text = "".join(rng.choices(WORD_ATOMS, k=rng.randint(0, 2)) + atoms +
                       rng.choices(WORD_ATOMS, k=rng.randint(0, 2)))
        start = rng.randint(0, len(text))
        end = rng.randint(start, len(text))
        assert _same_reading(text, start, end), (text, start, end)


def _differing_words(text: str, monkeypatch) -> list[tuple[str, int, int]]:
    """The words of ``text``'s shell model (its own and its command strings') that scan_word
    reads otherwise than the scanner: (text, start, end) of each."""
    differing = []

    def compared(tmap: TextMap, start: int, end: int):
        word = scan_word(tmap, start, end)
        if word != _scan(tmap, start, end):
            differing.append((tmap.text, start, end))
        return word

    with monkeypatch.context() as m:
        m.setattr(parse_module, "scan_word", compared)
        parse_module.parse_script(text)
    return differing


def test_scan_word_reads_page_examples_and_cases_as_the_scanner(monkeypatch):
    differing = [d for p in sample_scripts() for d in _differing_words(p.values[0], monkeypatch)]
    assert differing == []


def test_scan_word_reads_real_corpus_as_the_scanner(monkeypatch):
    """Off unless CORPUS_DIR names a folder of real job scripts (never committed)."""
    differing = {name: d for name, text in real_corpus()
                 if (d := _differing_words(text, monkeypatch))}
    assert differing == {}
