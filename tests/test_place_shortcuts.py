"""Shortcuts of the per-edit parse (shell/parse.py, shell/fragments.py) against what they
stand for."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbatch_lsp.shell import chunker, generated, parse
from sbatch_lsp.shell.words import TextMap


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
