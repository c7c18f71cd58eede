"""facts/slurm_names.known_names is made once per process: the same names as the tables it
unites, and SB219 reads it so on every lint."""
from sbatch_lsp.facts.slurm_names import MAN_PAGE_NAMES, UNDOCUMENTED, known_names
from sbatch_lsp.lint import lint
from sbatch_lsp.options import slurm_env_vars


def test_known_names_is_the_union_of_its_tables():
    direct = MAN_PAGE_NAMES | UNDOCUMENTED | frozenset(slurm_env_vars())
    assert known_names() == direct
    assert known_names() is known_names()


def test_sb219_is_the_same_on_each_lint_of_an_edited_script():
    text = "#!/bin/bash\n#SBATCH --nodes=1\necho $SLURM_TASK_ARRAY_ID $SLURM_JOB_ID\n"
    first = [(d.code, d.start, d.message) for d in lint(text, "a.sbatch").diagnostics
             if d.code == "SB219"]
    edited = text.replace("echo ", "echo x ")
    again = [(d.code, d.start - 2, d.message) for d in lint(edited, "a.sbatch").diagnostics
             if d.code == "SB219"]
    assert first and first == again


def test_sb219_reports_each_read_of_a_name_once_judged():
    """SB219 judges a name once per lint (its advice memo): every read of a misspelt name is a
    finding, and a name the script assigns is none, wherever it is read."""
    text = ("#!/bin/bash\n#SBATCH --nodes=1\necho $SLURM_TASK_ARRAY_ID\n"
            "bash -c \"echo $SLURM_TASK_ARRAY_ID\"\nSLURM_JOB_NUMNODES=2\n"
            "echo $SLURM_JOB_NUMNODES $SLURM_TASK_ARRAY_ID\n")
    found = [text[d.start:d.end] for d in lint(text, "a.sbatch").diagnostics
             if d.code == "SB219"]
    assert found == ["$SLURM_TASK_ARRAY_ID"] * 3
