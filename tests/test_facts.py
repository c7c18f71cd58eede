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


@pytest.mark.parametrize("text,expected", [
    ("ARGS=(--nnodes $N)\ntorchrun \"${ARGS[@]}\" t.py\n", [("--nnodes", "--nnodes"), ("$N", None)]),
    ("ARGS=(--nnodes 2)\nARGS+=($X)\ntorchrun \"${ARGS[@]}\" t.py\n",
     [("--nnodes", "--nnodes"), ("2", "2"), ("$X", None)]),
])
def test_elements_that_are_not_literal_are_words_with_expansions(text, expected):
    """An element holding an expansion is a word of its own whose value the values layer
    resolves (None here: not literal), at its place in the assignment."""
    script = parse_script(text)
    elements = array_elements(script.commands[-1].words[1], script)
    assert [(w.text, w.value) for w in elements] == expected
    assert all(text[w.start:w.end] == w.text for w in elements)


def test_a_string_is_not_an_array():
    text = "ARGS=\"--nnodes 2\"\ntorchrun \"${ARGS[@]}\" t.py\n"
    script = parse_script(text)
    assert array_elements(script.commands[-1].words[1], script) is None


def test_literal_appends_extend_the_array():
    """bash(1) Arrays: ``+=`` appends elements; a later append does not count."""
    text = "ARGS=(--nnodes 2)\nARGS+=(--x)\ntorchrun \"${ARGS[@]}\" t.py\nARGS+=(--y)\n"
    script = parse_script(text)
    elements = array_elements(script.commands[2].words[1], script)
    assert [w.value for w in elements] == ["--nnodes", "2", "--x"]
    assert text[elements[2].start:elements[2].end] == "--x"


def test_launcher_options_in_an_array_are_read():
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
            "#SBATCH --gpus-per-node=8\nTORCHRUN_ARGS=(--nproc-per-node 8 --master-port 29500)\n"
            'srun torchrun "${TORCHRUN_ARGS[@]}" t.py\n')
    la = lint(text).job.launches[0].launch
    assert la.arg("nproc-per-node") == "8" and not la.hidden
    found = [(d.code, d.severity.label) for d in lint(text).diagnostics]
    # the array holds no --nnodes: a real error now, not an "unless the array supplies it"
    assert ("SB202", "error") in found


HEAD = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
        "#SBATCH --gpus-per-node=8\n")
ADDR = '$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)'


def findings(body: str) -> set[tuple[str, str]]:
    text = body if body.startswith("#!") else HEAD + body
    return {(d.code, d.severity.label) for d in lint(text).diagnostics}


@pytest.mark.parametrize("body,present,absent", [
    # the address computed in a container with a local fallback is each node's own
    (("srun --container-image=img bash -c 'MASTER_ADDR=$(scontrol show hostnames "
     "\"$SLURM_JOB_NODELIST\" | head -n1 || echo localhost); torchrun --nnodes=2 "
     "--nproc-per-node=8 --node-rank=$SLURM_NODEID --master-addr=$MASTER_ADDR "
     "--master-port=29500 t.py'\n"), {("SB206", "error")}, set()),
    # the submit host is outside the allocation
    (("srun bash -c 'torchrun --nnodes=2 --nproc-per-node=8 --node-rank=$SLURM_NODEID "
     "--master-addr=$SLURM_SUBMIT_HOST --master-port=29500 t.py'\n"), {("SB206", "error")},
     set()),
    # $(hostname) on the srun line is the batch shell's: the first node, the right one
    (("srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d "
     "--rdzv-endpoint=$(hostname):29400 t.py\n"), set(), {("SB206", "error")}),
    # ... but inside the task it is each node's own
    (("srun bash -c 'torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d "
     "--rdzv-endpoint=$(hostname):29400 t.py'\n"), {("SB206", "error")}, set()),
    # a node rank from a script argument: one value for both nodes of a one-agent-per-node step
    (("NODE_RANK=$1\nsrun torchrun --nnodes=2 --nproc-per-node=8 --node-rank=$NODE_RANK "
     f"--master-addr={ADDR} --master-port=29500 t.py\n"), {("SB202", "error")}, set()),
    # ... an assumption when the step's layout is not known
    (("NODE_RANK=$1\nsrun --ntasks=$N torchrun --nnodes=2 --nproc-per-node=8 "
     f"--node-rank=$NODE_RANK --master-addr={ADDR} --master-port=29500 t.py\n"),
     {("SB202", "info")}, {("SB202", "error")}),
    # an exported rank variable that torchrun overwrites for its workers reaches nothing
    (("export RANK=$SLURM_PROCID\nsrun torchrun --nnodes=2 --nproc-per-node=8 "
     "--rdzv-backend=c10d --rdzv-endpoint=h:29400 t.py\n"), {("SB301", "info")},
     {("SB301", "error")}),
    # ... while an srun-native program reads it
    ("export RANK=$SLURM_PROCID\nsrun python t.py\n", {("SB301", "error")}, set()),
    # the wrappers of the one table
    (HEAD.replace("=1", "=8") + "srun timeout 3h torchrun --nnodes=2 --nproc-per-node=8 "
     "--rdzv-backend=c10d --rdzv-endpoint=h:29400 t.py\n", {("SB201", "error")}, set()),
    (HEAD.replace("=1", "=8") + "srun sudo -E torchrun --nnodes=2 --nproc-per-node=8 "
     "--rdzv-backend=c10d --rdzv-endpoint=h:29400 t.py\n", {("SB201", "error")}, set()),
])
def test_rules_read_the_facts(body, present, absent):
    got = findings(body)
    assert present <= got, got
    assert not (absent & got), got


def test_rules_read_the_facts_hub_evidence():
    """A local model and local data: no Hub download, no shared HF cache needed; a repo id
    (or a value not known, or data left to the framework) is."""
    base = "srun --ntasks-per-node=1 python t.py --model_name_or_path "
    assert ("SB401", "warning") not in findings(
        base + "/lustre/models/llama --dataset_name=/lustre/data/train.json\n")
    assert ("SB401", "warning") in findings(base + "/lustre/models/llama\n")
    assert ("SB401", "warning") in findings(base + "meta-llama/Llama-2-7b-hf\n")
    assert ("SB401", "warning") in findings("M=$1\n" + base + "$M\n")
