"""A step's env read one name at a time (facts/steps.py LazyEnv, what rules do: ``env.get(
"WORLD_SIZE")``) gives exactly what the whole mapping (what ``show`` prints) holds, for every
step of every script the project holds: present names with equal facts, absent ones absent."""
import pytest

from rule_pages import sample_scripts
from sbatch_lsp.facts.steps import LazyEnv, facts_of
from sbatch_lsp.lint import job_of


@pytest.mark.parametrize("text", sample_scripts())
def test_one_name_equals_the_whole_mapping(text):
    job = job_of(text, "job.sbatch")
    facts = facts_of(job)
    for step in job.steps:
        whole = dict(LazyEnv(job, facts.evaluator, step))
        names = set(whole) | {a.name for a in job.script.assignments} | {
            "SLURM_EXPORT_ENV", "NOT_SET_BY_ANY_SCRIPT", "ALL", "NONE"}
        for name in sorted(names):
            one = LazyEnv(job, facts.evaluator, step)
            assert one.get(name) == whole.get(name), name
            assert (name in one) == (name in whole), name


def test_a_lookup_evaluates_one_name():
    text = "#!/bin/bash\n#SBATCH --nodes=2\n" + "".join(
        f"export V{k}=x{k}\n" for k in range(50)) + "export WORLD_SIZE=16\nsrun python t.py\n"
    job = job_of(text, "job.sbatch")
    facts = facts_of(job)
    env = LazyEnv(job, facts.evaluator, job.steps[0])
    assert env["WORLD_SIZE"].value == "16" and env["WORLD_SIZE"].exported
    assert env._full is None and list(env._one) == ["WORLD_SIZE"]
    assert len(env) == 51 and env._full is not None


def test_an_absent_name_needs_no_export_mode(monkeypatch):
    """A name the batch shell never sets before the step and its --export does not list is
    absent without working out the step's export mode (SB216 and SB206 ask every step for
    WORLD_SIZE and MASTER_ADDR); a listed or assigned one still reads it."""
    import sbatch_lsp.facts.steps as steps

    text = ("#!/bin/bash\n#SBATCH --nodes=2\nexport SLURM_EXPORT_ENV=NONE\nexport A=1\n"
            "srun --export=B=2 python t.py\n")
    job = job_of(text, "job.sbatch")
    facts = facts_of(job)
    asked = []
    real = steps._export_mode
    monkeypatch.setattr(steps, "_export_mode", lambda job, step: asked.append(1) or real(job, step))
    env = LazyEnv(job, facts.evaluator, job.steps[0])
    assert env.get("WORLD_SIZE") is None and not asked
    assert env["B"].value == "2" and env["B"].exported and len(asked) == 1
    assert env["A"].value == "1" and len(asked) == 2
