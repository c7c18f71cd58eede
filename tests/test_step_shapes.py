"""The step shapes memo (job._SHAPES): a step read from a memoised shape is the step read
afresh.

``Job.step_for`` keeps what it read from an srun command (where the options and the command
are, the layout) keyed by the words' texts and the job's counts, and rebuilds the next step
with the same key from it. Here the steps of many scripts, built one after the other with the
memo on (so later scripts meet shapes the earlier ones left, under other directives and at
other offsets), are compared field by field with the steps built with the memo off: tricky
cases written out, seeded random scripts, the project's sample scripts and the lint of every
sample script with random edits.
"""
from __future__ import annotations

import random

import pytest

from rule_pages import sample_scripts
from sbatch_lsp import job as job_module
from sbatch_lsp.lint import job_of
from sbatch_lsp.shell import parse

TRICKY = [
    "#!/bin/bash\n#SBATCH --nodes=2\nsrun --ntasks=4 python a.py\nsrun --ntasks=4 python a.py\n",
    "#!/bin/bash\n#SBATCH --nodes=4\nsrun --ntasks=4 python a.py\n",
    "#!/bin/bash\n#SBATCH --ntasks=8\nsrun --ntasks-per-node=2 hostname\n",
    "#!/bin/bash\n#SBATCH --ntasks-per-node=3\n#SBATCH -N 2\nsrun --ntasks-per-node=2 x\n",
    "#!/bin/bash\nsrun -lN2 -n4 x\nsrun -lN2 -n4 x\n",
    "#!/bin/bash\nARGS='--ntasks=2'\nsrun $ARGS x\nARGS='torchrun'\nsrun $ARGS x\n",
    "#!/bin/bash\nN=2\nsrun --ntasks=$N x\nN=3\nsrun --ntasks=$N x\n",
    "#!/bin/bash\nA=(--nodes=2 -n4)\nsrun \"${A[@]}\" x\nA=(-n1)\nsrun \"${A[@]}\" x\n",
    "#!/bin/bash\n#SBATCH --nodes=2\nsrun --ntasks=$SLURM_NNODES x\nsrun --ntasks=$SLURM_NNODES x\n",
    "#!/bin/bash\nsrun --export=ALL,X=1 -n 2 --cpu-bind=none x\nX=1 srun -n 2 x\n",
    "#!/bin/bash\ntimeout 2h srun -n2 bash -c 'hostname; torchrun a.py'\nnohup srun -n2 x &\n",
    "#!/bin/bash\nsrun --ntasks 2 --nodes 1 -- x\nsrun -n2 -n3 --ntasks=4 x\nsrun --nt=2 x\n",
    "#!/bin/bash\nsrun \"--ntasks=2\" x\nsrun '-n2' x\nsrun --ntasks=\"$N\"2 x\nsrun -n \"2\" x\n",
    "#!/bin/bash\nout=$(srun -n2 hostname)\nsrun --het-group=0 -n2 x\n",
    # a word split from $L has the text it was given as its value, quotes and all
    "#!/bin/bash\nsrun --ntasks='4' x\nL=\"srun --ntasks='4' x\"\n$L\nsrun --ntasks='4' x\n",
    "#!/bin/bash\nL=\"srun --ntasks='4' x\"\n$L\nsrun --ntasks='4' x\n$L\n",
]

#: pieces of random srun lines and of the job they run in
DIRECTIVES = ["--nodes=1", "--nodes=2", "--nodes=4", "--ntasks=1", "--ntasks=8",
              "--ntasks=3", "--ntasks-per-node=2", "--ntasks-per-node=$X",
              "--nodelist=a[1-3]", "--gpus-per-task=1", "--ntasks=$N"]
OPTIONS = ["--ntasks=4", "-n4", "-n 2", "--nodes=2", "-N1", "-N 2", "--ntasks-per-node=1",
           "--ntasks-per-node 4", "--ntasks=$SLURM_NNODES", "--nodes=$N", "--ntasks=$N",
           "$ARGS", "\"${ARR[@]}\"", "--export=ALL,X=1", "--export=NONE", "--gpus-per-task=1",
           "-lN2", "--cpu-bind=none", "--het-group=0", "--overcommit", "-c 4", "--nodes=2-4",
           "--ntasks=\"4\"", "--label", "--mpi=pmix", "-o log.%t"]
COMMANDS = ["python a.py", "torchrun --nproc_per_node=4 a.py", "bash -c 'hostname'",
            "hostname", "$CMD", "-- x"]
PREFIXES = ["srun", "srun", "srun", "timeout 2h srun", "X=1 srun", "nohup srun"]
ASSIGNMENTS = ["N=2", "N=$SLURM_NNODES", "ARGS='--ntasks=2'", "ARGS=torchrun",
               "ARR=(--nodes=2 -n4)", "ARR=(-n1)", "export SRUN_CPUS_PER_TASK=2"]


def random_script(rng: random.Random) -> str:
    lines = ["#!/bin/bash"]
    lines += [f"#SBATCH {d}" for d in rng.sample(DIRECTIVES, rng.randint(0, 3))]
    for _ in range(rng.randint(1, 8)):
        if rng.random() < 0.3:
            lines.append(rng.choice(ASSIGNMENTS))
        opts = " ".join(rng.choice(OPTIONS) for _ in range(rng.randint(0, 4)))
        lines.append(f"{rng.choice(PREFIXES)} {opts} {rng.choice(COMMANDS)}")
    return "\n".join(lines) + "\n"


def word_key(w) -> tuple | None:
    if w is None:
        return None
    return (w.text, w.start, w.end, w.value,
            tuple((e.start, e.end, e.name) for e in w.expansions), tuple(w.early))


def step_key(step) -> tuple:
    """Every field of a Step, its words by text, span, value and expansions."""
    return (step.command.start, step.command.end, word_key(step.srun),
            tuple((k, word_key(w)) for k, w in step.options.items()),
            tuple((k, word_key(w)) for k, w in step.option_words.items()),
            tuple(word_key(w) for w in step.argv), tuple(word_key(w) for w in step.hidden),
            tuple((c.start, c.end, tuple(word_key(w) for w in c.words))
                  for c in step.task_commands),
            tuple(s.kind for s in step.task_scripts), step.tasks_per_node, step.layout_note,
            tuple((u.name, u.value) for u in step.layout_evidence), step.nodes)


def steps_of(text: str) -> tuple:
    job = job_of(text, "job.sbatch")
    return tuple(step_key(s) for s in job.steps), tuple(len(s.task_scripts) for s in job.steps)


def reference_steps(text: str) -> tuple:
    """The steps built with the memo off (it follows the fragment memo's setting)."""
    before = parse.use_fragments(False)
    try:
        return steps_of(text)
    finally:
        parse.use_fragments(before)


def same_with_and_without_the_memo(texts: list[str]) -> int:
    """Build every text's steps with the memo on, one after the other, then each with the memo
    off, and compare; returns how many steps were rebuilt from a shape."""
    job_module._SHAPES.clear()
    hits = 0
    original = job_module.Job._reshaped

    def counted(self, *args):
        nonlocal hits
        hits += 1
        return original(self, *args)

    job_module.Job._reshaped = counted  # type: ignore[method-assign]
    try:
        warm = [steps_of(t) for t in texts]
    finally:
        job_module.Job._reshaped = original  # type: ignore[method-assign]
    for text, found in zip(texts, warm, strict=True):
        assert found == reference_steps(text), text
    return hits


@pytest.fixture(autouse=True)
def fragments():
    """As the server lints: the fragment memo on (words shared with an earlier placement)."""
    before = parse.use_fragments(True)
    yield
    parse.use_fragments(before)


def test_tricky_steps_are_the_same_with_and_without_the_memo():
    texts = TRICKY + [t.replace("srun", "\nsrun") for t in TRICKY] + TRICKY[::-1]
    assert same_with_and_without_the_memo(texts) > 20


def test_random_steps_are_the_same_with_and_without_the_memo():
    rng = random.Random(8)
    texts = [random_script(rng) for _ in range(400)]
    assert same_with_and_without_the_memo(texts) > 50


def test_sample_scripts_steps_are_the_same_with_and_without_the_memo():
    texts = [p.values[0] for p in sample_scripts()]
    same_with_and_without_the_memo(texts + texts)


def test_a_shape_holds_no_word_nor_script():
    job_module._SHAPES.clear()
    job_of(TRICKY[0], "job.sbatch")
    assert job_module._SHAPES
    for key, shape in job_module._SHAPES.items():
        assert all(isinstance(x, (str, int, bool, type(None))) for x in key)
        assert all(isinstance(x, (str, int, type(None)))
                   for part in shape.options + shape.option_words for x in part)


def test_the_memo_is_off_with_the_fragment_memo():
    job_module._SHAPES.clear()
    before = parse.use_fragments(False)
    try:
        job_of(TRICKY[0], "job.sbatch")
    finally:
        parse.use_fragments(before)
    assert not job_module._SHAPES


def test_the_memo_is_bounded():
    job_module._SHAPES.clear()
    rng = random.Random(3)
    for k in range(job_module._SHAPES_MAX + 50):
        job_of(f"#!/bin/bash\nsrun -n{k} x{rng.random()}\n", "job.sbatch")
    assert 0 < len(job_module._SHAPES) <= job_module._SHAPES_MAX
