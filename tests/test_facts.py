"""Facts: values with their scope and place, arrays of launcher options."""
import pytest

from sbatch_lsp.facts.values import Evaluator, Place, Scope, array_elements
from sbatch_lsp.lint import job_of, lint
from sbatch_lsp.shell.parse import parse_script


def last_word_scope(text: str, place: Place, exported=lambda name, before: True) -> Scope:
    script = parse_script(text)
    cmd = [c for c in script.walk() if not c.in_substitution][-1]
    return Evaluator(script, exported).scope(cmd.words[-1], place, cmd.script or script)


@pytest.mark.parametrize("text,place,scope", [
    ("echo x\n", Place.BATCH, Scope.CONST),
    ("echo $SLURM_JOB_ID\n", Place.BATCH, Scope.JOB),
    ("echo $1\n", Place.BATCH, Scope.SUBMIT),
    ("echo $SLURM_SUBMIT_HOST\n", Place.BATCH, Scope.SUBMIT),
    # the batch shell is task 0 on node 0: one value for the whole job
    ("echo $SLURM_PROCID\n", Place.BATCH, Scope.JOB),
    ("echo $SLURM_PROCID\n", Place.TASK, Scope.TASK),
    ("echo $SLURM_NODEID\n", Place.TASK, Scope.NODE),
    ("echo $(hostname)\n", Place.BATCH, Scope.JOB),
    ("echo $(hostname)\n", Place.TASK, Scope.NODE),
    ('echo $(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)\n', Place.TASK, Scope.JOB),
    # inside a container scontrol may be missing: the fallback is each node's own address
    ('echo $(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1 || echo localhost)\n',
     Place.TASK, Scope.NODE),
    ("echo $((29500 + SLURM_JOB_ID % 1000))\n", Place.BATCH, Scope.JOB),
    ("echo $((29500 + SLURM_LOCALID))\n", Place.TASK, Scope.TASK),
    ("echo $RANDOM\n", Place.TASK, Scope.TASK),
    ("echo $(shuf -i 20000-30000 -n 1)\n", Place.TASK, Scope.TASK),
    # through assignments, in order
    ("A=$1\nB=$A\necho $B\n", Place.BATCH, Scope.SUBMIT),
    ("A=$SLURM_NODEID\nA=3\necho $A\n", Place.BATCH, Scope.CONST),
    ("A=$B\nB=$A\necho $A\n", Place.BATCH, Scope.UNKNOWN),
    ("echo $SOMETHING_ELSE\n", Place.BATCH, Scope.UNKNOWN),
    # quoting: literal for the shell that reads the word
    ("echo '$SLURM_PROCID'\n", Place.TASK, Scope.CONST),
])
def test_scope(text, place, scope):
    assert last_word_scope(text, place) == scope


def test_a_nested_string_keeps_the_batch_shells_values():
    """``srun bash -c "… $X …"``: the batch shell substitutes X before any task runs."""
    text = ("#!/bin/bash\nexport R=$SLURM_PROCID\n"
            'srun bash -c "torchrun --node-rank=$R --master-addr=\\$(hostname) t.py"\n')
    job = job_of(text)
    torchrun = next(c for c in job.script.walk() if c.name == "torchrun")
    ev = Evaluator(job.script, job.exported)
    rank, addr = torchrun.words[1], torchrun.words[2]
    assert ev.scope(rank, Place.TASK, torchrun.script) == Scope.JOB
    assert ev.scope(addr, Place.TASK, torchrun.script) == Scope.NODE


def test_array_elements_keep_their_spans():
    text = "ARGS=(--nnodes 2 '--master-port' \"29500\")\ntorchrun \"${ARGS[@]}\" t.py\n"
    script = parse_script(text)
    ref = script.commands[-1].words[1]
    elements = array_elements(ref, script)
    assert [w.value for w in elements] == ["--nnodes", "2", "--master-port", "29500"]
    assert [text[w.start:w.end] for w in elements] == ["--nnodes", "2", "'--master-port'",
                                                      '"29500"']


@pytest.mark.parametrize("text", [
    "ARGS=(--nnodes $N)\ntorchrun \"${ARGS[@]}\" t.py\n",  # not literal
    "ARGS=(--nnodes 2)\nARGS+=(--x)\ntorchrun \"${ARGS[@]}\" t.py\n",  # appended
    "ARGS=\"--nnodes 2\"\ntorchrun \"${ARGS[@]}\" t.py\n",  # not an array
])
def test_arrays_that_are_not_literal_stay_unknown(text):
    script = parse_script(text)
    assert array_elements(script.commands[-1].words[1], script) is None


def test_launcher_options_in_an_array_are_read():
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
            "#SBATCH --gpus-per-node=8\nTORCHRUN_ARGS=(--nproc-per-node 8 --master-port 29500)\n"
            'srun torchrun "${TORCHRUN_ARGS[@]}" t.py\n')
    la = lint(text).job.launches[0].launch
    assert la.arg("nproc-per-node") == "8" and not la.hidden
    found = [(d.code, d.severity.label) for d in lint(text).diagnostics]
    # the array holds no --nnodes: a real error now, not an "unless the array supplies it"
    assert ("SB202", "error") in found
