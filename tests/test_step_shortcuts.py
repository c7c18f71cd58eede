"""The shortcuts that skip work for most commands give what the full reading gives: a command
is an srun step when its first word is srun, a wrapper that runs srun, or an array whose first
element is one of those (Job.step_for's test on the first word before arrays are expanded);
``unwrap`` without a wrapper; the control facts' shared default for a command the walk did not
place."""
from sbatch_lsp.facts.control import CommandControl, job_control
from sbatch_lsp.facts.wrappers import unwrap, unwrap_all
from sbatch_lsp.lint import job_of
from sbatch_lsp.shell.model import Command

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n"


def _steps(body: str) -> list[tuple[str, int | None]]:
    """(the srun word's text, tasks per node) of each step of a script with ``body``."""
    job = job_of(HEAD + body)
    return [(s.srun.text, s.tasks_per_node) for s in job.steps]


def test_an_array_whose_first_element_is_srun_is_a_step():
    assert _steps('CMD=(srun --ntasks-per-node=3)\n"${CMD[@]}" python x.py\n') == \
        [("srun", 3)]
    assert _steps('CMD=(timeout 1h srun -n 6)\n"${CMD[@]}" python x.py\n') == [("srun", 3)]


def test_a_wrapper_before_srun_and_plain_commands():
    assert _steps("timeout 2h srun --ntasks-per-node=2 python x.py\n") == [("srun", 2)]
    assert _steps("nohup srun python x.py\n") == [("srun", 1)]
    assert _steps("echo srun\npython srun.py\n'${A[@]}' srun\n") == []
    assert _steps('A=(echo hi)\n"${A[@]}" srun\n') == []


def test_unwrap_without_a_wrapper_is_a_copy_of_the_words():
    job = job_of(HEAD + "python x.py --y 1\ntimeout 5 python z.py\n")
    plain, wrapped = [c for c in job.script.commands if c.words]
    argv = unwrap(plain.words)
    assert argv == plain.words and argv is not plain.words
    assert argv == unwrap_all(plain.words).argv
    assert [w.text for w in unwrap(wrapped.words)] == ["python", "z.py"]


def test_an_unplaced_command_gets_the_default_control_facts_unchanged():
    job = job_of(HEAD + "srun python x.py &\nwait\n")
    ctl = job_control(job)
    stranger = Command([], [], 0, 0)
    assert ctl.at(stranger) == CommandControl()
    assert ctl.at(job.script.commands[0]).background
    assert ctl.at(stranger) == CommandControl()
