"""``Facts.of(step)``: the facts of one step by a dictionary lookup (facts/steps.py), which the
rules use instead of searching the step list for each step; the same answer as the search."""
import pytest

from rule_pages import sample_scripts
from sbatch_lsp.facts.steps import facts_of
from sbatch_lsp.lint import job_of


@pytest.mark.parametrize("text", sample_scripts())
def test_of_finds_what_the_search_finds(text):
    job = job_of(text, "job.sbatch")
    facts = facts_of(job)
    for step in job.steps:
        assert facts.of(step) is next(sf for sf in facts.steps if sf.step is step)


def test_of_none_and_a_step_of_another_job():
    text = "#!/bin/bash\n#SBATCH --nodes=2\nsrun hostname\nsrun -N1 python t.py\n"
    job, other = job_of(text, "job.sbatch"), job_of(text, "job.sbatch")
    facts = facts_of(job)
    assert [facts.of(s).line for s in job.steps] == [3, 4]
    assert facts.of(None) is None
    assert facts.of(other.steps[0]) is None
