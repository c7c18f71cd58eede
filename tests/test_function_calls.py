"""Functions that wrap srun or a launcher (shell/parse._substitute_calls): the body gets each
call's arguments for ``"$@"`` and ``$1``…, so the call's words are the step's; a function
called several times has one copy of its body per call."""
from __future__ import annotations

from sbatch_lsp.facts.control import job_control
from sbatch_lsp.lint import lint
from sbatch_lsp.shell.parse import parse_script

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gres=gpu:4\n"
LAUNCH = ("torchrun --nnodes=2 --nproc_per_node=4 --rdzv-endpoint=node1:29500 "
          "--rdzv-backend=c10d train.py")


def _findings(text: str) -> list[tuple[str, str, str]]:
    return [(d.code, d.severity.name.lower(), text[d.start:d.end])
            for d in lint(text, "job.sbatch").diagnostics]


def test_call_arguments_reach_the_srun_in_the_body() -> None:
    text = HEAD + 'run() {\n  srun "$@"\n}\nrun ' + LAUNCH + "\n"
    assert ("SB201", "error", "torchrun") in _findings(text)
    d = next(d for d in lint(text).diagnostics if d.code == "SB201")
    assert text.count("\n", 0, d.start) + 1 == 8  # the call's torchrun, the user's text
    # the call itself is no launcher in the batch shell (no SB205)
    assert not [f for f in _findings(text) if f[0] == "SB205"]


def test_numbered_parameters() -> None:
    text = HEAD + 'go() { srun -n "$1" "$2" train.py; }\ngo 2 python\n'
    step = lint(text).job.steps[0]
    assert step.tasks_per_node == 1
    assert [w.value for w in step.argv] == ["python", "train.py"]


def _sruns(text: str) -> list[list[str]]:
    return [[w.text for w in c.words] for c in parse_script(text).commands if c.name == "srun"]


def test_each_call_of_a_function_called_several_times_is_its_own_step() -> None:
    """bash runs the body once per call with that call's arguments: two calls, two steps."""
    text = (HEAD + 'step() {\n  srun "$@"\n}\nstep --ntasks-per-node=1 ' + LAUNCH + "\n"
            "step --nodes=1 --ntasks=1 python prep.py\n")
    assert _sruns(text) == [["srun", "--ntasks-per-node=1", *LAUNCH.split()],
                            ["srun", "--nodes=1", "--ntasks=1", "python", "prep.py"]]
    steps = lint(text).job.steps
    # (a step's lone --ntasks-per-node=1 under the job's 4 is ignored on 22.05: DESIGN.md)
    assert [(s.nodes, s.tasks_per_node) for s in steps] == [(2, 4), (1, 1)]
    # the same launch through two calls: one finding per call, on each call's own words
    twice = HEAD + 'run() { srun "$@"; }\nrun ' + LAUNCH + "\nrun " + LAUNCH + "\n"
    lines = sorted(twice.count("\n", 0, d.start) + 1 for d in lint(twice).diagnostics
                   if d.code == "SB201")
    assert lines == [6, 7]


def test_shift_and_set_move_the_positions() -> None:
    assert _sruns('run() { local tag=$1; shift; srun "$@"; }\nrun a python x\n') == \
        [["srun", "python", "x"]]
    assert _sruns('run() { shift 2; srun "$1"; }\nrun a b c\nrun d e f\n') == \
        [["srun", "c"], ["srun", "f"]]
    assert _sruns('run() { set -- -n 2 "$@"; srun "$@"; }\nrun python x\n') == \
        [["srun", "-n", "2", '"$@"']]  # `set --` words are the body's: "$@" is not re-read
    # positions this reading cannot follow: left as written
    assert _sruns('run() { shift "$N"; srun "$@"; }\nrun a b\n') == [["srun", '"$@"']]
    assert _sruns('run() { set a b; srun "$1"; }\nrun x\n') == [["srun", '"$1"']]


def test_each_copy_takes_its_call_s_control() -> None:
    """Only the call in the background puts its step there (SB208 is about the first)."""
    text = ("#!/bin/bash\n#SBATCH --ntasks=2\nrun() {\n  srun \"$@\"\n}\n"
            "run --ntasks=1 python a.py &\nrun --ntasks=1 python b.py\n")
    found = [f for f in _findings(text) if f[0] == "SB208"]
    assert [f[2] for f in found] == ["run --ntasks=1 python a.py"]
    job = lint(text).job
    ctl = job_control(job)
    assert [ctl.at(c).background for c in job.script.commands if c.name == "srun"] == \
        [True, False]


def test_missing_argument_is_not_invented() -> None:
    text = 'run() { srun -n "$2" "$1"; }\nrun hostname\n'
    body = next(c for c in parse_script(text).commands if c.name == "srun")
    assert [w.text for w in body.words] == ["srun", "-n", '"$2"', '"$1"']


def test_background_call_backgrounds_the_body() -> None:
    text = ("#!/bin/bash\n#SBATCH --ntasks=2\nrun() {\n  srun \"$@\"\n}\n"
            "run --ntasks=1 python a.py &\necho started\n")
    assert ("SB208", "error", "run --ntasks=1 python a.py") in _findings(text)
