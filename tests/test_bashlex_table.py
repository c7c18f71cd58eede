"""The stored LALR table (shell/_bashlex_lalr.py) is the one bashlex builds, and bashlex uses it."""
import subprocess
import sys

from sbatch_lsp.shell import _bashlex_lalr, bashlex_table


def test_stored_table_equals_the_one_bashlex_builds():
    signature, action, goto = bashlex_table.build_table()
    assert signature == _bashlex_lalr.SIGNATURE, "bashlex changed: run python -m sbatch_lsp.shell.bashlex_table"
    assert action == _bashlex_lalr.ACTION
    assert goto == _bashlex_lalr.GOTO


def test_importing_the_parser_takes_the_stored_table():
    code = ("import sbatch_lsp.shell.parse, bashlex.yacc as y; "
            "print(type(y.LRTable).__name__, y.LRTable.__name__); "
            "import bashlex; print(bashlex.parse('srun echo hi')[0].kind)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["type", "StoredLRTable", "command"]


def test_unclosed_brace_in_a_word_bashlex_expands_does_not_hang(tmp_path):
    """bashlex loops for ever on a word holding ``${`` and no ``}`` that it expands (here in
    single quotes, after a chunk the fast reader leaves to bashlex): the lint ends, the chunk
    read by tree-sitter (a subprocess, so a hang fails the test instead of stalling the suite)."""
    import subprocess
    import sys

    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -N 1\ncd ~$(whoami)/x; X='${a'\nsrun hostname\n")
    code = ("from sbatch_lsp.lint import lint\n"
            "from sbatch_lsp.shell.parse import read_chunk\n"
            "r = read_chunk(\"cd ~$(whoami)/x; X='${a'\\n\")\n"
            "print(r.commands is None, r.nodes is None, r.parse_error)\n"
            f"lint(open({str(script)!r}).read(), {str(script)!r})\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.startswith("True True ParsingError: bad substitution: no closing '}'")
