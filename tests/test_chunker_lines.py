"""The chunker's plain line reading (``chunker._plain_alone``) is the scanner's: on every line it
reads, it finds what a fresh :class:`~sbatch_lsp.shell.chunker.Scanner` finds (whether the line is
a whole chunk by itself, and where its comment starts); the other lines it leaves to the
scanner."""
import re

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


def _script_lines() -> set[str]:
    """Every line of the sample scripts and of the real corpus (when CORPUS_DIR is set)."""
    texts = [p.values[0] for p in sample_scripts()] + [text for _, text in real_corpus()]
    return {line for text in texts for line in text.split("\n")}


def test_the_plain_reading_is_the_scanners_on_every_line_of_the_scripts():
    lines = _script_lines()
    assert all(_agrees(line) for line in lines), [x for x in lines if not _agrees(x)][:5]
    assert sum(chunker._plain_alone(line) is not None for line in lines) > len(lines) // 2


# ---- the scan's shortcuts (plain lines inside a chunk, the memoised first line) against the
# scanner alone ----

def _scanner_chunks(text: str) -> tuple[list[tuple], list[tuple[int, int]]]:
    """The chunks (start, end, text, unterminated) and comments of ``text`` as the
    :class:`~sbatch_lsp.shell.chunker.Scanner` alone reads them: a fresh scanner for each chunk,
    :meth:`~sbatch_lsp.shell.chunker.Scanner.scan_line` on every line of it, no memo and no
    plain reading (the reference for ``chunker.scan``)."""
    lines = text.split("\n")
    chunks: list[tuple] = []
    comments: list[tuple[int, int]] = []
    cur: list[str] = []
    start = None
    sc = chunker.Scanner()
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if start is None:
            if not line.strip() or line.strip().startswith("#"):
                if line.strip():
                    comments.append((i, len(line) - len(line.lstrip())))
                i += 1
                continue
            start, sc = i, chunker.Scanner()
        cur.append(line)
        cont = sc.scan_line(line)
        if sc.comment_at is not None:
            comments.append((i, sc.comment_at))
        i += 1
        while sc.heredocs and i < n:
            delim, strip = sc.heredocs[0]
            cur.append(lines[i])
            if (lines[i].lstrip("\t") if strip else lines[i]) == delim:
                sc.heredocs.pop(0)
            i += 1
        if not cont and sc.balanced():
            chunks.append((start + 1, i, "\n".join(cur), False))
            cur, start = [], None
    if start is not None:
        chunks.append((start + 1, i, "\n".join(cur), True))
    return chunks, comments


def _scans_as_the_scanner(text: str) -> bool:
    chunks, comments = chunker.scan(text)
    return ([(c.start, c.end, c.text, c.unterminated) for c in chunks], comments) \
        == _scanner_chunks(text)


@pytest.mark.parametrize("text", [
    "if a; then\n  srun x  # c\n  b &&\n  c\nfi", "for i in 1 2\ndo\n  echo $i\ndone\nx",
    "f() {\n  local a=1\n}\n", "a && \\\n  b\nc", "a |\n\n  # c\n  b", "case $x in\n  a) b;;\nesac",
    "if a\nthen\n  fi=1\nfi", "while a\ndo\n  b\n  done\n", "{\n  a\n} > log", "function\nf\n{ a; }",
    "x=$(\n  a\n  b)\nc", 'a "\n  b\n" c', "if a; then\n  cat <<EOF\nb\nEOF\nfi", "if a; then\n  b",
    "srun \\\n  a\nb", "(\n  a\n)", "if a; then\n  x='\n'\n  b\nfi", "if a; then\n  a |;\n  b\nfi",
    # (`function` ending its line: the name on the next line puts `x` in command position)
    "if a; then\n  function\n  f\n  x fi\n  { b; }\nc"])
def test_the_scan_is_the_scanners_on_tricky_texts(text):
    assert _scans_as_the_scanner(text)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(ATOMS + ["\n", "\n", "\n  ", "\\\n"]), min_size=1, max_size=24))
def test_the_scan_is_the_scanners_on_random_texts(atoms):
    text = "".join(atoms)
    assert _scans_as_the_scanner(text), text


def test_the_scan_is_the_scanners_on_the_scripts():
    texts = [p.values[0] for p in sample_scripts()] + [text for _, text in real_corpus()]
    assert [t[:60] for t in texts if not _scans_as_the_scanner(t)] == []


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(ATOMS + ["\n"]), min_size=1, max_size=14))
def test_a_scanner_state_round_trips(atoms):
    """``Scanner.state`` holds every field of a scanner, and ``Scanner.at`` restores them."""
    sc = chunker.Scanner()
    for line in "".join(atoms).split("\n"):
        sc.scan_line(line)
    assert tuple(vars(chunker.Scanner())) == chunker._State._fields
    assert vars(chunker.Scanner.at(sc.state())) == vars(sc)


# ---- the compound-word test of a plain line against the look-behind pattern it replaced ----
#: the reference: a compound-command word with a break (or the line's start) before it and a
#: break (or the end) after it, found by a look-behind pattern (tried at every position)
_COMPOUND_REFERENCE = re.compile(
    r"(?<![^ \t;&|()<>'\"`$\\])(?:if|case|do|fi|esac|done|for|while|until|select|function)"
    r"(?![^ \t;&|()<>'\"`$\\])")


def _finds_as_the_reference(line: str) -> bool:
    return all(chunker._compound_word(line, end) ==
               (_COMPOUND_REFERENCE.search(line, 0, end) is not None)
               for end in {len(line), len(line) // 2, max(len(line) - 1, 0)})


@pytest.mark.parametrize("line", [
    "if", "xif", "ifx", "elif a", "a;if b", "a|do", "(fi)", "sudo x", "done;", "a done-x",
    "echo for", "$for", "'do'", "\\fi", "a\tesac", "do\\", "ffi fi", "function_x", "x function",
    "doneif", "a <do> b", "case$x", "", " ", "whileuntil while"])
def test_the_compound_word_test_is_the_reference_on_tricky_lines(line):
    assert _finds_as_the_reference(line)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(ATOMS + ["i", "f", "o", "d", "xdo", "done_", "-"]),
                min_size=0, max_size=14))
def test_the_compound_word_test_is_the_reference_on_random_lines(atoms):
    line = "".join(atoms)
    assert _finds_as_the_reference(line), line


def test_the_compound_word_test_is_the_reference_on_every_line_of_the_scripts():
    assert [x for x in _script_lines() if not _finds_as_the_reference(x)][:5] == []
