"""SB222 and SB223 (the step's status lost before the script reads or returns it): the forms the
rules leave to SB209/SB210 or to the script's own handling, and the fixes applied together."""
import subprocess

import pytest

from sbatch_lsp.fixer import fix_text
from sbatch_lsp.lint import lint

HEAD = "#!/bin/bash\n#SBATCH --nodes=1\n"


def _codes(text: str) -> list[str]:
    return [d.code for d in lint(text, "job.sbatch").diagnostics if d.code in ("SB222", "SB223")]


@pytest.mark.parametrize("body", [
    "srun python t.py | tee log\necho done\n",  # a pipeline: SB210's
    "srun python t.py &\nwait\necho done\n",  # a bare wait: SB209's
    "set -e\nsrun python t.py\necho done\n",  # set -e ends the script at the failure
    "srun python t.py || exit 1\necho done\n",  # the script handles the failure
    "srun python t.py\nrc=$?\necho done\nexit $rc\n",
    "srun python t.py\npython upload.py\necho done\n",  # the last work is not the step
    "echo start\nsrun python t.py\n",  # the step is the last command
    "if srun python t.py; then echo ok; fi\necho done\n",  # a condition reads the status
    "python t.py\necho done\n",  # a plain batch-shell program: maybe a helper
])
def test_left_alone(body):
    assert _codes(HEAD + body) == []


def test_errexit_in_the_shebang():
    assert _codes("#!/bin/bash -e\n#SBATCH --nodes=1\nsrun python t.py\necho done\n") == []


def test_both_fixes_together_save_the_status_once(tmp_path):
    text = (HEAD + "srun python t.py\necho '-----'\necho \"exit code: $?\"\n"
            "echo '-----'\nexit $?\n")
    assert sorted(_codes(text)) == ["SB222", "SB223"]
    out = fix_text(text, "job.sbatch", unsafe=True).text
    assert out == (HEAD + "srun python t.py\nrc=$?\necho '-----'\necho \"exit code: $rc\"\n"
                   "echo '-----'\nexit \"$rc\"\n")
    assert _codes(out) == []
    script = tmp_path / "job.sh"
    script.write_text(out)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


def test_a_step_in_a_function_is_saved_after_the_call():
    text = HEAD + "run() {\n  srun python t.py\n}\nrun\necho done\n"
    found = [d for d in lint(text, "job.sbatch").diagnostics if d.code == "SB223"]
    assert len(found) == 1 and text[found[0].start:].startswith("srun python t.py")
    out = fix_text(text, "job.sbatch", unsafe=True, codes={"SB223"}).text
    assert out == HEAD + "run() {\n  srun python t.py\n}\nrun\nrc=$?\necho done\nexit \"$rc\"\n"


def test_a_used_name_is_not_reused():
    text = HEAD + "rc=7\nsrun python t.py\necho done\n"
    out = fix_text(text, "job.sbatch", unsafe=True, codes={"SB223"}).text
    assert "step_rc=$?" in out and out.endswith('exit "$step_rc"\n')


def test_no_fix_inside_a_generated_body():
    """`exec bash FILE` never returns: an `exit` appended to the file would never run."""
    text = (HEAD + "BODY=$(mktemp)\ncat > \"$BODY\" <<'EOF'\nsrun python t.py\necho done\nEOF\n"
            "exec bash \"$BODY\"\n")
    found = [d for d in lint(text, "job.sbatch").diagnostics if d.code == "SB223"]
    assert len(found) == 1 and found[0].fixes == []
