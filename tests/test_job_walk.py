"""The job model's one walk over the commands (job.py ``_steps``), the launcher pre-test it
uses (launchers.may_launch) and the step facts' per-request layouts (facts/steps.py): each
gives what reading every command in full gives, at the edges of its shortcuts."""
import pytest

from sbatch_lsp.facts.steps import facts_of
from sbatch_lsp.launchers import find_launch, may_launch
from sbatch_lsp.lint import job_of
from sbatch_lsp.shell.parse import parse_script

HEAD = "#!/bin/bash\n#SBATCH --nodes=2 --ntasks-per-node=4\n"


def launches(body: str) -> list[tuple[str, str, bool]]:
    """(the launch's flavour, the command's first word, whether a step runs it) per launch."""
    job = job_of(HEAD + body)
    return [(s.launch.flavour, s.command.words[0].text, s.step is not None)
            for s in job.launches]


@pytest.mark.parametrize("line", [
    "echo hi", "cp a b", "python train.py", "python3.11 -m torch.distributed.run x.py",
    "/opt/bin/torchrun --nproc_per_node 8 x.py", "timeout 2h torchrun x.py",
    "env A=1 deepspeed x.py", "mpirun -np 8 ./a.out", "accelerate launch x.py",
    '"$LAUNCHER" x.py', 'CMD=(torchrun x.py); "${CMD[@]}"', "nohup sleep 1",
])
def test_may_launch_is_false_only_where_find_launch_finds_nothing(line):
    script = parse_script(HEAD + line + "\n")
    for cmd in script.walk():
        if cmd.words and not may_launch(cmd.words[0]):
            assert find_launch(cmd.words) is None


def test_a_launcher_held_in_an_array_is_found():
    # the first word is the array: only its elements name the launcher
    assert launches('CMD=(torchrun --nproc_per_node 4)\n"${CMD[@]}" train.py\n') == [
        ("torchrun", '"${CMD[@]}"', False)]
    assert launches('CMD=(torchrun --nproc_per_node 4)\nsrun "${CMD[@]}" train.py\n') == [
        ("torchrun", "srun", True)]


def test_launches_in_command_strings_belong_to_the_step_that_runs_them():
    assert launches("srun bash -c 'cd /w && torchrun --nproc_per_node 4 x.py'\n") == [
        ("torchrun", "torchrun", True)]
    # a wrapper's string inside a step is not what its tasks run
    assert launches("echo start\nsrun --ntasks=1 timeout 1h bash -c 'torchrun x.py'\n") == [
        ("torchrun", "torchrun", True)]
    # a launcher in a batch-shell string is no step's
    assert launches("bash -c 'torchrun x.py'\n") == [("torchrun", "torchrun", False)]


def test_steps_alike_in_text_but_not_in_value_get_their_own_layouts():
    job = job_of(HEAD + "N=2\nsrun --ntasks=$N a.out\nN=8\nsrun --ntasks=$N a.out\n"
                 "srun --ntasks=8 b.out\n")
    layouts = [sf.layout for sf in facts_of(job).steps]
    assert [x.tasks for x in layouts] == [2, 8, 8]
