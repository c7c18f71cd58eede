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
