"""The one option walker (sbatch_lsp/facts/argv.py): srun, the wrappers and the launchers read a
next word that is not literal the way their own parsers do."""
import pytest

from sbatch_lsp.facts.argv import looks_like_option, walk
from sbatch_lsp.launchers import find_launch, unwrap
from sbatch_lsp.lint import lint
from sbatch_lsp.shell.parse import parse_script


def words(line: str):
    return parse_script(line + "\n").commands[0].words


def step(line: str):
    text = "#!/bin/bash\n#SBATCH --nodes=2\n" + line + "\n"
    job = lint(text, "x.sbatch").job
    assert len(job.steps) == 1
    return job.steps[0]


@pytest.mark.parametrize("line,value,program", [
    # getopt_long: a required argument takes the next word, literal or not
    ('srun -n $X python t.py', "$X", "python"),
    ('srun --ntasks "$N" python t.py', '"$N"', "python"),
    ('srun -N "$NODES" --ntasks-per-node=1 python t.py', None, "python"),
    # a cluster of short options: -l is a flag, -n takes the rest of the word
    ('srun -ln4 python t.py', "4", "python"),
    # a required argument that starts with a dash is still the argument (getopt(3))
    ('srun --job-name -x python t.py', "-x", "python"),
])
def test_srun_takes_the_next_word(line, value, program):
    s = step(line)
    if value is not None:
        key = "job-name" if "job-name" in line else "ntasks"
        assert s.options[key].text == value
    assert s.argv[0].value == program


@pytest.mark.parametrize("line,value", [
    ('torchrun --nproc-per-node "$N" --nnodes 2 t.py', '"$N"'),
    ('torchrun --nproc_per_node $GPUS t.py', "$GPUS"),
    ('python -m torch.distributed.run --nproc-per-node=$GPUS t.py', "$GPUS"),
])
def test_torchrun_non_literal_value(line, value):
    la = find_launch(words(line))
    assert la.args["nproc-per-node"].text == value
    assert la.program[0].value == "t.py"


def test_argparse_does_not_take_an_option_as_value():
    # argparse: "--nnodes --standalone" is an error (expected one argument); the walk reads
    # --nnodes as a flag and keeps going, so --standalone is still seen
    la = find_launch(words("torchrun --nnodes --standalone t.py"))
    assert la.has("standalone") and la.program[0].value == "t.py"


def test_launchers_without_an_option_table():
    la = find_launch(words('deepspeed --num_gpus "$G" --num_nodes $N t.py --deepspeed'))
    assert la.args["nproc-per-node"].text == '"$G"' and la.args["nnodes"].text == "$N"
    assert la.program[0].value == "t.py"
    la = find_launch(words("accelerate launch --num_processes $P --multi_gpu t.py"))
    assert la.args["num-processes"].text == "$P" and la.program[0].value == "t.py"


@pytest.mark.parametrize("line,first", [
    # nsys's options are not listed: a non-literal next word is the option's value
    ('nsys profile -o "$OUT" torchrun t.py', "torchrun"),
    ("nsys profile --output $OUT -t cuda,nvtx python t.py", "python"),
    # a listed option of a getopt tool takes its next word whatever it is
    ('timeout --signal "$SIG" 3h torchrun t.py', "torchrun"),
    # getopt reads -10 as an option of nice (not a negative number)
    ("nice -n 10 python t.py", "python"),
    ("env -u X FOO=1 python t.py", "python"),
])
def test_wrappers(line, first):
    assert unwrap(words(line))[0].value == first


def test_looks_like_option():
    w = words('x "$N" -$F - -1 --a')[1:]
    assert [looks_like_option(x) for x in w] == [False, True, False, True, True]
    assert [looks_like_option(x, "argparse") for x in w] == [False, True, False, False, True]


def test_walk_stops_at_double_dash():
    ws = words("t --a 1 -- --b 2")
    o = walk(ws, 1, lambda name, long: (name, True), "getopt")
    assert list(o.values) == ["a"] and ws[o.end].value == "--b"
