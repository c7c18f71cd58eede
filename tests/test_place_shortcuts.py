"""Shortcuts of the per-edit parse (shell/parse.py, shell/fragments.py) against what they
stand for."""
from hypothesis import given, settings
from hypothesis import strategies as st

from sbatch_lsp.shell import chunker, parse


def test_every_shell_name_ends_with_the_quick_tests_ending():
    """shell_string_index passes over a word whose value does not end with SHELL_ENDING: no
    name in SHELLS may end otherwise."""
    assert all(name.endswith(parse.SHELL_ENDING) for name in parse.SHELLS)


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
