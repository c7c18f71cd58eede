"""SB205's class "a multi-node job that starts no step runs its program on the first node only"
(held-out case RD01), on shapes other than the case's, and facts/reach.py's reading of what can
reach the other nodes."""
import pytest

import sbatch_lsp.lint  # noqa: F401  (registers every rule)
from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.facts.reach import job_reach
from sbatch_lsp.lint import job_of, lint

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n"


def _sb205(text: str) -> list[tuple[int, Severity]]:
    r = lint(text, "t.sbatch")
    return [(r.source.line_of(d.start) + 1, d.severity) for d in r.diagnostics if d.code == "SB205"]


@pytest.mark.parametrize(("body", "line"), [
    ("conda activate env\nfor s in 1 2; do\n  python3 -u main.py --seed \"$s\"\ndone\n", 6),
    ("main() {\n  python train.py \"$@\"\n}\nmain --epochs 3\n", 5),
    ("cd \"$WORK\" && python -m mypkg.train --cfg a.yaml\n", 4),
    ("python prep.py\npython train.py\n", 5),  # one finding, on the last program
])
def test_program_alone_in_a_multinode_job_with_tasks_is_a_warning(body, line):
    assert _sb205(HEAD + body) == [(line, Severity.WARNING)]


@pytest.mark.parametrize("body", [
    "bash setup.sh\npython train.py\n",       # a script not read here may start steps
    "source ./env.sh\npython train.py\n",
    "$PRE\npython train.py\n",
    "module load openmpi/4.0.5/amd\npython driver.py\n",  # may run mpirun itself
    "ml purge\nml intel-mpi-2021\npython driver.py\n",
    "spack load mpich\npython driver.py\n",
])
def test_commands_not_read_here_drop_it_to_info(body):
    assert [s for _, s in _sb205(HEAD + body)] == [Severity.INFO]


@pytest.mark.parametrize("body", [
    "module load cuda/12.1 python/3.11\npython train.py\n",   # no MPI among the modules
    "module show openmpi\npython train.py\n",                  # shows, does not load
    "module load openmpi-tools\npython train.py\n",
])
def test_modules_that_load_no_mpi_keep_the_warning(body):
    assert [s for _, s in _sb205(HEAD + body)] == [Severity.WARNING]


def test_no_task_count_is_info():
    assert [s for _, s in _sb205("#!/bin/bash\n#SBATCH -N 4\npython run.py\n")] == [Severity.INFO]


@pytest.mark.parametrize("body", [
    "mpirun -np 8 python sim.py\n",
    "srun hostname > hosts\npython driver.py\n",
    "ip=$(srun -N1 -n1 hostname -i)\npython driver.py --head \"$ip\"\n",
    "for h in $(scontrol show hostnames); do ssh \"$h\" ./worker & done\npython driver.py\n",
    "sbatch --dependency=afterok:$SLURM_JOB_ID next.sbatch\npython train.py\n",
    "python make_hostfile.py > hf\ndeepspeed --hostfile hf train.py\n",  # deepspeed fans out
])
def test_something_that_reaches_other_nodes_keeps_it_silent(body):
    assert _sb205(HEAD + body) == []


def test_a_single_node_job_is_silent():
    assert _sb205("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=4\n"
                  "python train.py\n") == []


def test_reach_reads_wrappers_and_activate_scripts():
    job = job_of("#!/bin/bash\nsource ~/venv/bin/activate\ntimeout 1h mpiexec ./a.out\n")
    reach = job_reach(job)
    assert reach.starter is not None and reach.starter.name == "timeout"
    assert reach.opaque is None


def test_a_sourced_file_that_is_read_is_not_opaque(tmp_path):
    (tmp_path / "env.sh").write_text("export DATA=/scratch/data\n")
    text = HEAD + "source ./env.sh\npython train.py\n"
    r = lint(text, str(tmp_path / "job.sbatch"))
    assert [d.severity for d in r.diagnostics if d.code == "SB205"] == [Severity.WARNING]


@pytest.mark.parametrize("line", [
    "ray start --address=head:6379 --block",
    "timeout 2h ray start --address head:6379",
    "nohup dask worker tcp://$SCHED:8786",
    "env X=1 dask-worker $SCHED",
    "ray start --head --port 6379",
    "python train.py",
    "/opt/bin/ray start --address=h:1",
])
def test_agent_test_agrees_with_node_agent_through_wrappers(line):
    """reach's one-test filter of the commands that can be no agent gives what node_agent
    gives on the unwrapped argv."""
    from sbatch_lsp.facts.reach import _agent_of, node_agent
    from sbatch_lsp.facts.wrappers import unwrap

    words = job_of(HEAD + line + "\n", "t.sbatch").script.commands[-1].words
    assert _agent_of(words) == node_agent(unwrap(words))
    assert (_agent_of(words) is not None) == ("--head" not in line and "python" not in line)


def test_node_agents_reads_control_only_for_an_agent(monkeypatch):
    """The batch shell's agents: the control facts (and the task commands' table) are read
    only for a command that starts one; a script without any needs neither, and one with a
    Ray worker in the batch shell and one in a step's tasks still finds both."""
    import sbatch_lsp.facts.reach as reach

    calm = job_of("#!/bin/bash\n#SBATCH --nodes=2\nsrun python t.py\necho done\n", "j.sbatch")

    def control(job):
        raise AssertionError("control read")
    with monkeypatch.context() as m:
        m.setattr(reach, "job_control", control)
        assert reach.node_agents(calm) == ([], [])
    job = job_of("#!/bin/bash\n#SBATCH --nodes=2\nray start --address=10.0.0.1:6379\n"
                 "srun bash -c 'ray start --address=10.0.0.1:6379 --block'\n", "j.sbatch")
    batch, tasks = reach.node_agents(job)
    assert [a.command.start for a in batch] == [30] and len(tasks) == 1
