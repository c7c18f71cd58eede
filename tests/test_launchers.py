"""Wrappers are looked through and launchers recognised with torchrun's option names."""
import pytest

from sbatch_lsp.launchers import find_launch, unwrap
from sbatch_lsp.shell.parse import parse_script


def words(line: str):
    return parse_script(line + "\n").commands[0].words


@pytest.mark.parametrize("line,first", [
    ("uv run --with x --no-sync python -m torch.distributed.run a", "python"),
    ("singularity exec -B /a:/b img.sif torchrun t.py", "torchrun"),
    ("apptainer run --nv img.sif python t.py", "python"),
    ("env A=1 B=2 numactl -C 0-3 python t.py", "python"),
    ("nsys profile -o out --stats=true python t.py", "python"),
    ("conda run -n e python t.py", "python"),
    ("nohup time python x", "python"),
    ("hostname", "hostname"),
    # coreutils timeout(1): timeout [OPTION] DURATION COMMAND
    ("timeout 3h torchrun t.py", "torchrun"),
    ("timeout -k 60 --signal=TERM 3h torchrun t.py", "torchrun"),
    ("sudo -E torchrun t.py", "torchrun"),
    ("sudo -u alice NCCL_DEBUG=INFO python t.py", "python"),
    # taskset(1): the mask (a CPU list with -c) comes before the command
    ("taskset -c 0-7 python t.py", "python"),
    ("taskset 0x3 python t.py", "python"),
    ("chrt -f 10 python t.py", "python"),
    ("timeout 3h nohup numactl --cpunodebind=0 torchrun t.py", "torchrun"),
])
def test_unwrap(line, first):
    assert unwrap(words(line))[0].value == first


def test_torchrun_arguments_normalised():
    la = find_launch(words("uv run python -m torch.distributed.run --nproc_per_node 8 "
                           "--node_rank=$SLURM_NODEID --rdzv-backend c10d train.py --lr 1"))
    assert (la.kind, la.flavour) == ("torchrun", "torchrun")
    assert la.arg("nproc-per-node") == "8" and la.arg("rdzv-backend") == "c10d"
    assert la.args["node-rank"].text == "$SLURM_NODEID"
    assert [w.value for w in la.program] == ["train.py", "--lr", "1"]


def test_accelerate_maps_to_torchrun_names():
    la = find_launch(words("accelerate launch --num_machines 2 --machine_rank 0 "
                           "--main_process_ip h t.py"))
    assert la.flavour == "accelerate"
    assert (la.arg("nnodes"), la.arg("node-rank"), la.arg("master-addr")) == ("2", "0", "h")


@pytest.mark.parametrize("backend", ["--rdzv-backend=$B", "--rdzv-backend $B"])
def test_unknown_backend_is_not_assumed_static(backend):
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n"
            f"srun torchrun --nnodes=2 --nproc-per-node=8 {backend} t.py\n")
    assert [d.code for d in lint(text).diagnostics] == []


def test_unknown_flags_do_not_swallow_the_next_option():
    la = find_launch(words("accelerate launch --use_fsdp --fsdp_sharding_strategy FULL_SHARD "
                           "--num_machines 2 --machine_rank $SLURM_NODEID "
                           "--main_process_ip $MASTER_ADDR --main_process_port 29500 train.py"))
    assert la.has("use-fsdp") and la.arg("fsdp-sharding-strategy") == "FULL_SHARD"
    assert la.arg("nnodes") == "2" and la.has("node-rank") and la.arg("master-port") == "29500"
    assert [w.value for w in la.program] == ["train.py"]


HEADER = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n"


def test_options_hidden_in_unknown_expansions_lower_the_severity():
    from sbatch_lsp.lint import lint
    text = HEADER + ("#SBATCH --ntasks-per-node=8\n"
                     "srun ${AUTO_RESUME} -l torchrun --nnodes=2 --nproc-per-node=8 "
                     "--rdzv-backend=c10d --rdzv-endpoint=h:29400 train.py\n")
    [d] = lint(text).diagnostics
    assert (d.code, d.severity.label) == ("SB201", "warning") and "${AUTO_RESUME}" in d.message
    text = HEADER + "#SBATCH --ntasks-per-node=1\nsrun torchrun \"${ARGS[@]}\" train.py\n"
    [d] = lint(text).diagnostics
    assert (d.code, d.severity.label) == ("SB202", "info")


def test_a_known_launcher_variable_after_srun_is_the_command():
    from sbatch_lsp.lint import lint
    text = HEADER + ("#SBATCH --ntasks-per-node=8\n"
                     "L=\"torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d "
                     "--rdzv-endpoint=h:29400\"\nsrun $L train.py\n")
    assert [(d.code, d.severity.label) for d in lint(text).diagnostics] == [("SB201", "error")]


def test_accelerate_builds_its_endpoint_and_is_named_in_its_own_spelling():
    from sbatch_lsp.lint import lint
    text = HEADER + ("#SBATCH --ntasks-per-node=1\nsrun accelerate launch --num_machines 2 "
                     "--num_processes 16 --rdzv_backend c10d --main_process_ip h "
                     "--main_process_port 29500 train.py\n")
    assert lint(text).diagnostics == []
    text = HEADER + "#SBATCH --ntasks-per-node=1\nsrun accelerate launch --num_processes 16 t.py\n"
    [d] = lint(text).diagnostics
    assert "--num_machines" in d.message and "--machine_rank" in d.message


def test_explicit_one_node_world():
    from sbatch_lsp.lint import lint
    batch = HEADER + "torchrun --nnodes=1 --nproc_per_node=8 train.py\n"
    assert [d.code for d in lint(batch).diagnostics] == ["SB205"]
    step = HEADER + "#SBATCH --ntasks-per-node=1\nsrun torchrun --nnodes=1 --nproc_per_node=8 t.py\n"
    [d] = lint(step).diagnostics
    assert d.code == "SB202" and "each node forms its own one-node world" in d.message


@pytest.mark.parametrize("wrapper", ["timeout 3h", "sudo -E", "nohup", "env A=1", "taskset -c 0-7",
                                     "stdbuf -oL"])
def test_srun_through_wrappers_is_a_step(wrapper):
    """The srun finder and the launcher finder read the same wrapper table: a wrapper before
    srun, and one between srun and torchrun, are both looked through."""
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
            f"{wrapper} srun {wrapper} torchrun --nproc-per-node=8 t.py\n")
    job = lint(text).job
    assert len(job.steps) == 1
    assert [s.launch.kind for s in job.launches] == ["torchrun"]
    assert job.launches[0].step is job.steps[0]


def test_every_wrapper_runs_a_command_line_for_the_shell_model():
    """The shell model word-splits an unquoted ``$CMD`` after a command that runs its arguments
    (shell/parse.py RUNNERS): every wrapper of the one table must be among them."""
    from sbatch_lsp.facts.wrappers import WRAPPER_NAMES
    from sbatch_lsp.shell.parse import RUNNERS
    assert WRAPPER_NAMES <= RUNNERS


@pytest.mark.parametrize("line,flavour,nproc,program", [
    # CPython's -W and -X take an argument, joined or as the next word (Python/getopt.c)
    ("python -W ignore -m torch.distributed.run --nproc-per-node 4 t.py", "torchrun", "4",
     ["t.py"]),
    ("python -Wignore -um torch.distributed.run --nproc_per_node=4 t.py", "torchrun", "4",
     ["t.py"]),
    (("python3 -X faulthandler -u -O -B -E -s -I -m torch.distributed.launch "
      "--nproc_per_node 2 t.py"), "launch", "2", ["t.py"]),
    ("python -OO -mtorch.distributed.run --nproc-per-node 8 t.py", "torchrun", "8", ["t.py"]),
    ("python --check-hash-based-pycs never -m torch.distributed.run --nproc-per-node 1 t.py",
     "torchrun", "1", ["t.py"]),
    # -W's argument is no script, and -c's command is no module
    ("python -W ignore train.py --lr 1", "python", None, ["train.py", "--lr", "1"]),
    ("python -X dev -c 'import torch.distributed.run'", "python", None,
     ["-c", "import torch.distributed.run"]),
])
def test_interpreter_options_before_the_module(line, flavour, nproc, program):
    la = find_launch(words(line))
    assert la.flavour == flavour
    assert la.arg("nproc-per-node") == nproc
    assert [w.value for w in la.program] == program


def test_python_w_ignore_torchrun_is_read_as_a_launcher():
    """`python -W ignore -m torch.distributed.run` was a plain `python ignore …` entry point:
    its --nproc-per-node over the node's GPUs went unseen (SB204 reads the launch spec)."""
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gpus-per-node=4\n"
            "srun --ntasks-per-node=1 python -W ignore -m torch.distributed.run "
            "--nproc-per-node=8 t.py\n")
    plain = text.replace("-W ignore ", "")
    codes = sorted(d.code for d in lint(plain).diagnostics)
    assert codes, "the plain form must raise something for the test to mean anything"
    assert sorted(d.code for d in lint(text).diagnostics) == codes


def _sb202_fix_text(body: str) -> str:
    from sbatch_lsp.lint import lint
    text = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n" + body
    d = next(d for d in lint(text).diagnostics if d.code == "SB202")
    assert d.fixes, d.message
    out = text
    for e in sorted(d.fixes[0].edits, key=lambda e: -e.start):
        out = out[:e.start] + e.new_text + out[e.end:]
    return out


def test_sb202_fix_exports_the_address_the_tasks_read_before_the_step():
    """SB202's fix reads the environment the launcher gets (LaunchSpec.env: the step's
    facts), not whether the script exports MASTER_ADDR anywhere: an export after the step does
    not reach it, so the fix still adds one above the step."""
    step = "srun bash -c 'torchrun --nproc-per-node=4 t.py'\n"
    fixed = _sb202_fix_text(step + "export MASTER_ADDR=late\nexport MASTER_PORT=1\n")
    assert fixed.index("export MASTER_ADDR=$(scontrol") < fixed.index("srun bash")
    assert "export MASTER_PORT=$((" in fixed
    # exported before the step: nothing added above it
    fixed = _sb202_fix_text("export MASTER_ADDR=h\nexport MASTER_PORT=1\n" + step)
    assert "scontrol" not in fixed and '--master-addr="$MASTER_ADDR"' in fixed


@pytest.mark.parametrize("line,np,per,program", [
    # Open MPI mpirun(1): single-dash long options are whole names, not -n + p
    ("mpirun -np 8 -npernode 4 ./a.out -n 3", "8", "4", ["./a.out", "-n", "3"]),
    ("mpirun -n 8 -N 4 --bind-to core ./a.out", "8", "4", ["./a.out"]),
    ("mpirun --np=16 --map-by ppr:8:node --report-bindings python x.py", "16", "ppr:8:node",
     ["python", "x.py"]),
    # two-word options and repeated -x: their words are no program
    ("mpirun -mca btl tcp,self -x NCCL_DEBUG -x LD_LIBRARY_PATH -H n1,n2 -np 2 ./a.out", "2",
     None, ["./a.out"]),
    # MPICH Hydra mpiexec(1): -genv NAME VALUE, -ppn
    ("mpiexec -genv OMP_NUM_THREADS 4 -ppn 2 -n 4 ./a.out", "4", "2", ["./a.out"]),
])
def test_mpirun_options_are_read_by_the_walker(line, np, per, program):
    la = find_launch(words(line))
    assert la.kind == "mpirun"
    assert la.arg("np") == np
    assert (la.arg("map-by") if per and per.startswith("ppr") else la.arg("npernode")) == per
    assert [w.value for w in la.program] == program
    if "-x" in line.split():
        assert la.arg("host") == "n1,n2" and la.arg("x") == "LD_LIBRARY_PATH"


def test_mpirun_world_and_ranks_per_node_in_show():
    from sbatch_lsp.facts.steps import facts_of
    from sbatch_lsp.lint import job_of
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
            "srun mpirun -mca btl tcp -np 8 --map-by ppr:4:node ./a.out -np 3\n")
    step = facts_of(job_of(text)).steps[0]
    assert (step.launcher, step.world_size, step.ranks_per_node) == ("mpirun", 8, 4)
