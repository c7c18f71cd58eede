"""A value set in a branch of an ``if``/``case`` or in a loop body may or may not be the one the
script sees after the compound (shell/model.Script.certain, Script.settled): a framework size or
a count read from it is unknown there, so no error rests on it (DESIGN.md "Findings"); inside the
compound, after the assignment, it is known.
Found in the corpus review: a BigScience script picks its layer count in an
``if [[ $MSIZE == … ]]`` chain, and the lexically last or first branch was taken as the value."""
import pytest

import sbatch_lsp.lint  # noqa: F401  (registers every rule)
from sbatch_lsp.lint import job_of, lint

HEAD = ("#!/bin/bash\n#SBATCH --nodes=16\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:4\n"
        "export MASTER_ADDR=$(scontrol show hostnames | head -n 1)\n")
RUN = ('ARGS="--num-layers $NLAYERS --pipeline-model-parallel-size 64 '
       '--tensor-model-parallel-size 1 --hidden-size 1024 --num-attention-heads 16"\n'
       'srun bash -c "torchrun --nnodes 16 --nproc_per_node 4 --node_rank \\$SLURM_NODEID '
       '--master_addr $MASTER_ADDR --master_port 29500 pretrain_gpt.py $ARGS"\n')


def _codes(text: str) -> list[str]:
    return [d.code for d in lint(text, "t.sbatch").diagnostics if d.severity.name in
            ("ERROR", "WARNING")]


def test_an_unconditional_value_is_judged():
    assert "SB602" in _codes(HEAD + "NLAYERS=32\n" + RUN)


@pytest.mark.parametrize("choice", [
    ("if [[ $MSIZE == 14 ]]; then\n    NLAYERS=32\nelif [[ $MSIZE == 206 ]]; then\n"
     "    NLAYERS=64\nfi\n"),
    "case $MSIZE in\n  14) NLAYERS=32 ;;\n  206) NLAYERS=64 ;;\nesac\n",
    "if [ -n \"$SMALL\" ]; then NLAYERS=32; fi\n",
    "for n in 64 32; do\n    NLAYERS=$n\ndone\n",
    "NLAYERS=64\nwhile read -r line; do NLAYERS=32; done < sizes.txt\n",
])
def test_a_value_chosen_in_a_branch_or_loop_is_unknown_after_it(choice):
    assert "SB602" not in _codes(HEAD + "MSIZE=206\n" + choice + RUN)


def test_inside_the_compound_after_the_assignment_the_value_is_known():
    body = "if [ -n \"$SMALL\" ]; then\n    NLAYERS=32\n    " + RUN.replace("\n", "\n    ") + \
        "\nfi\n"
    assert "SB602" in _codes(HEAD + body)


def test_certain_reads_the_compound_around_the_assignment():
    text = "#!/bin/bash\nA=1\nif true; then B=2; fi\nC=3\necho $A $B $C\n"
    job = job_of(text)
    use = text.index("echo")
    a, b, c = (job.script.value_at(n, use) for n in "ABC")
    assert a is not None and b is not None and c is not None
    assert job.script.certain(a, use) and job.script.certain(c, use)
    assert not job.script.certain(b, use)
    assert job.script.certain(b, text.index("fi"))  # inside the compound: the script's order
