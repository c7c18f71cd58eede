"""Shortcuts of the per-edit parse (shell/parse.py, shell/fragments.py) against what they
stand for."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbatch_lsp.shell import chunker, generated, parse
from sbatch_lsp.shell.model import Word
from sbatch_lsp.shell.words import TextMap
from test_incremental import deep_key


def test_every_shell_name_ends_with_the_quick_tests_letter():
    """shell_string_index passes over a word whose value does not end with SHELL_LAST: no
    name in SHELLS may end otherwise."""
    assert all(name.endswith(parse.SHELL_LAST) for name in parse.SHELLS)


_TEXTS = st.lists(st.sampled_from([
    "echo a", "x=1", "cat <<EOF", "EOF", "if true; then", "fi", "'", '"', "\\", "  # c",
    "for i in 1; do", "done", "", "srun a &&", "b", "f() {", "}", "$(", ")"]), max_size=14)


@settings(max_examples=500, deadline=None)
@given(_TEXTS, _TEXTS)
def test_a_chunks_text_is_its_lines_of_the_script(before, after):
    """_Builder.build keys the fragment memo by the chunker's ``Chunk.text`` (when the script
    has no carriage return): it is the text of the chunk's lines, after a scan and after a
    rescan of an edited version."""
    for lines in (before, after):
        text = "\n".join(lines)
        for chunks in (chunker.scan(text)[0], chunker.rescan(text)[0]):
            rows = text.split("\n")
            assert [c.text for c in chunks] == \
                ["\n".join(rows[c.start - 1:c.end]) for c in chunks], text


@pytest.mark.parametrize("text", [
    "#!/bin/bash\nsrun hostname\necho a\n",
    "#!/bin/bash\nsrun bash <<EOF\necho $X\nEOF\nbash -s <<'E'\nx\nE\ncat <<EOF\nx\nEOF\n",
    ("#!/bin/bash\ncat > run.sh <<EOF\necho hi\nEOF\nchmod +x run.sh\nsrun ./run.sh\n"
     "srun bash run.sh\nbash <<EOF\ny\nEOF\nsource run.sh\n"),
    "#!/bin/bash\ntee job.sh <<EOF >/dev/null\nsrun x\nEOF\nexec bash job.sh\n$(bash <<EOF\nz\nEOF\n)\n",
])
def test_runs_asks_only_the_commands_that_can_run_a_script(text):
    """generated.runs asks stdin_run only about commands with a here-document when the script
    writes no file: the same runs as asking every command."""
    script = parse.parse(TextMap(text))
    files = generated.written_files(script, text)
    reference = [r for c in script.commands
                 for r in ((generated.run_of(c, files, script) if files else None)
                           or generated.stdin_run(c, text),) if r is not None]
    assert generated.runs(script, text) == reference


def _reference_shell_string_index(words: list[Word]) -> int | None:
    """shell_string_index as it read before its quick test: the first word but the last
    whose basename is a shell (asking every one) starts the reading of the flags after it
    (shell_string_index's own, unchanged: asked here from that word on)."""
    k = next((k for k in range(len(words) - 1) if words[k].value is not None
              and words[k].value.rsplit("/", 1)[-1] in parse.SHELLS), None)
    found = parse.shell_string_index(words[k:]) if k is not None else None
    return k + found if k is not None and found is not None else None


_VALUES = st.sampled_from([None, "", "bash", "/bin/sh", "zsh", "dash", "ksh", "fish", "h", "sh/",
                           "-c", "-lc", "--c", "-l", "-", "x", "srun", "-x", "cmd", "bash -c"])


@settings(max_examples=3000, deadline=None)
@given(st.lists(_VALUES, max_size=7))
def test_shell_string_index_is_the_reference_on_random_words(values):
    """The quick test (the last letter of the value) and the loop over every word give what
    asking every word but the last gives."""
    words = [Word(v or "$X", k, k + 1, v) for k, v in enumerate(values)]
    assert parse.shell_string_index(words) == _reference_shell_string_index(words), values


_COMMAND_WORDS = st.lists(st.sampled_from([
    "srun", "bash", "sh", "/bin/bash", "-c", "-lc", "-x", "eval", "env", "time", "$CMD",
    "${CMD}", '"$CMD"', "$ONE", "'echo a b'", '"srun python x.py"', "echo", "x", "--", "$"]),
    min_size=1, max_size=6)


@settings(max_examples=400, deadline=None)
@given(_COMMAND_WORDS)
def test_a_command_with_inert_words_nests_nothing(words):
    """attach_nested passes over a placed command whose words a fragment found inert
    (parse.inert_words, ``Command.inert``): read in place (no fragment, no shortcut), such a
    command has no nested script, whatever the values its words could read; and the model
    placed from fragments is the one read in place."""
    text = 'CMD="srun python a.py"\nONE=x\n' + " ".join(words) + "\n"
    script = parse.parse_script(text)  # (fragments off: every command read in place)
    for cmd in script.commands:
        assert cmd.inert is None
        if parse.inert_words(cmd.words):
            assert not cmd.nested, text
    before = parse.use_fragments(True)
    try:
        placed = parse.parse_script(text)
    finally:
        parse.use_fragments(before)
    assert deep_key(placed) == deep_key(script)
    assert all(c.inert is c.words for c in placed.commands if parse.inert_words(c.words))
