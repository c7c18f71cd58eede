"""Functions that wrap srun or a launcher (shell/parse._substitute_calls): a function called
once gets the call's arguments for ``"$@"`` and ``$1``…, so the call's words are the step's."""
from __future__ import annotations

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


def test_called_twice_or_shifting_is_left_alone() -> None:
    twice = 'run() { srun "$@"; }\nrun a\nrun b\n'
    body = next(c for c in parse_script(twice).commands if c.name == "srun")
    assert [w.text for w in body.words] == ["srun", '"$@"']
    shifting = 'run() { shift; srun "$@"; }\nrun a b\n'
    body = next(c for c in parse_script(shifting).commands if c.name == "srun")
    assert [w.text for w in body.words] == ["srun", '"$@"']


def test_missing_argument_is_not_invented() -> None:
    text = 'run() { srun -n "$2" "$1"; }\nrun hostname\n'
    body = next(c for c in parse_script(text).commands if c.name == "srun")
    assert [w.text for w in body.words] == ["srun", "-n", '"$2"', '"$1"']


def test_background_call_backgrounds_the_body() -> None:
    text = ("#!/bin/bash\n#SBATCH --ntasks=2\nrun() {\n  srun \"$@\"\n}\n"
            "run --ntasks=1 python a.py &\necho started\n")
    assert ("SB208", "error", "run --ntasks=1 python a.py") in _findings(text)
