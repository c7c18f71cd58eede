"""Whether anything in the batch script can put work on the allocation's other nodes.

Slurm runs the batch script once, on the first node of the allocation (sbatch(1), DESCRIPTION:
"Slurm runs a single copy of the batch script on the first node in the set of allocated
nodes"). The other nodes run only what a job step puts there (``srun``, and the MPI launchers,
which start their remote ranks through srun or ssh: Open MPI mpirun(1), MPICH mpiexec(1)), or a
command that logs into them (``ssh``, ``pdsh``, ``clush``) or submits more work (``sbatch``,
``salloc``). A command this reader cannot see into (a non-literal command name such as
``$LAUNCHER``, a shell script run by name or through ``bash FILE``, a ``source FILE`` whose file
was not read: shell/sourced.py reads the ones beside the script) may do any of these. A
program run by the batch shell after an MPI implementation is loaded into its environment
(``module load openmpi``) may start its ranks itself (``subprocess`` running ``mpirun``, which
starts them on every node of the allocation through Slurm): that is not in the script.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..job import Job
from ..shell.model import Command, Word
from .control import job_control
from .steps import facts_of
from .wrappers import WRAPPER_NAMES, base, unwrap

#: commands that start work on other nodes (or other jobs): Slurm's own, the MPI launchers and
#: the remote shells and fan-out tools built on them
REMOTE_STARTERS = frozenset({
    "srun", "sbatch", "salloc", "mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prun",
    "charmrun", "aprun", "jsrun", "flux", "ssh", "pdsh", "clush", "pbsdsh", "parallel",
    "horovodrun", "ipcluster", "ray", "dask-mpi"})
#: MPI implementations as environment modules name them (Lmod/Environment Modules, Spack):
#: the part of a module name before its first '/' or '-<digit>'
MPI_MODULES = frozenset({
    "openmpi", "open-mpi", "ompi", "mpich", "mvapich", "mvapich2", "intel-mpi", "intelmpi",
    "impi", "cray-mpich", "hpcx", "hpcx-mpi", "spectrum-mpi", "smpi", "platform-mpi"})
#: commands that load environment modules, and the subcommand that loads (None: every word)
MODULE_LOADERS = {"module": ("load", "add"), "ml": None, "spack": ("load",)}
#: shells and the builtins that run a file's commands
SHELLS = frozenset({"bash", "sh", "zsh", "ksh", "dash", "source", "."})


@dataclass(frozen=True)
class Reach:
    """``starter``: the first command that can start work on another node (None: none);
    ``opaque``: the first command whose commands this reader cannot see (None: none);
    ``mpi``: the first command that loads an MPI implementation's module (None: none)."""

    starter: Command | None
    opaque: Command | None
    mpi: Command | None = None


def job_reach(job: Job) -> Reach:
    """What in ``job``'s batch script (and the command strings it runs) can reach the other
    nodes; computed once per job."""
    result: Reach = job.derived(_build)
    return result


def _build(job: Job) -> Reach:
    starter = opaque = mpi = None
    read = {(s.start, s.end) for s in job.script.imports}  # sourced files read (shell/sourced.py)
    for cmd in job.script.walk():
        argv = unwrap(cmd.words)
        if not argv:
            continue
        name = base(argv[0])
        if name in REMOTE_STARTERS:
            starter = starter or cmd
        elif opaque is None and cmd.runs is None and (cmd.start, cmd.end) not in read and \
                _opaque(name, argv):
            opaque = cmd
        elif mpi is None and _loads_mpi(name, argv):
            mpi = cmd
    return Reach(starter, opaque, mpi)


def _loads_mpi(name: str, argv: list[Word]) -> bool:
    """``module load openmpi/4.1``, ``ml intel-mpi``, ``spack load mpich``: a loader whose
    module names (the part before the first ``/`` or ``-<digit>``) include an MPI implementation
    (:data:`MPI_MODULES`)."""
    if name not in MODULE_LOADERS:
        return False
    sub, args = MODULE_LOADERS[name], [w.value or w.text for w in argv[1:]]
    if sub is not None:
        if not args or args[0] not in sub:
            return False
        args = args[1:]
    return any(re.split(r"/|-(?=\d)", a.lower(), maxsplit=1)[0] in MPI_MODULES
               for a in args if not a.startswith("-"))


def opaque_command(words: list[Word]) -> bool:
    """Whether the command ``words`` run (through their wrappers) runs commands this reader
    does not have (:func:`_opaque`)."""
    argv = unwrap(words)
    return bool(argv) and _opaque(base(argv[0]), argv)


def _opaque(name: str, argv: list[Word]) -> bool:
    """A command that runs commands this reader does not have: a non-literal name, a script run
    by name (``./run.sh``, ``job.sh``), or a shell given a file (``bash run.sh``, ``source
    env.sh``; not ``bash -c``, whose string is read, nor a virtualenv/conda ``activate``)."""
    if not name:
        return True
    if name.endswith(".sh") or argv[0].text.startswith("./"):
        return True
    if name not in SHELLS:
        return False
    if any(w.value == "-c" for w in argv[1:]):
        return False
    files = [w for w in argv[1:] if not w.text.startswith("-")]
    return bool(files) and not files[0].text.rsplit("/", 1)[-1].startswith("activate")


@dataclass(frozen=True)
class Agent:
    """A per-node agent: a command that joins a cluster from the machine it runs on (``what``
    names it), so one must run on each node that should join."""

    command: Command
    what: str


#: the command names :func:`node_agent` answers for
AGENT_NAMES = frozenset({"ray", "dask", "dask-worker"})
#: the first words :func:`_agent_of` reads further (one set: one lookup per command)
AGENT_OR_WRAPPER = AGENT_NAMES | WRAPPER_NAMES


def node_agent(argv: list[Word]) -> str | None:
    """What per-node agent ``argv`` starts: a Ray worker (``ray start --address …`` without
    ``--head``: ray/scripts/scripts.py ``start`` connects this machine's raylet to the head) or
    a Dask worker (``dask worker``/``dask-worker SCHEDULER``: distributed/cli/dask_worker.py);
    None for anything else, including the Ray head."""
    if not argv:
        return None
    name = base(argv[0])
    sub = argv[1].value if len(argv) > 1 else None
    if name == "ray" and sub == "start":
        opts = [w.value or "" for w in argv[2:]]
        if "--head" not in opts and any(o == "--address" or o.startswith("--address=")
                                        for o in opts):
            return "a Ray worker (`ray start --address`)"
    if name == "dask-worker" or name == "dask" and sub == "worker":
        return "a Dask worker"
    return None


def node_agents(job: Job) -> tuple[list[Agent], list[Agent]]:
    """The per-node agents the job starts: (those the batch shell runs itself, on the first
    node only; those srun steps run in their tasks). A command in a step's command string, an
    srun line and a command substitution are not the batch shell's."""
    result: tuple[list[Agent], list[Agent]] = job.derived(_agents)
    return result


def _agents(job: Job) -> tuple[list[Agent], list[Agent]]:
    steps = [f.step for f in facts_of(job).steps]
    batch: list[Agent] = []
    tasks: list[Agent] = []
    for st in steps:  # `srun … ray start …` (the argv after srun's options) and `srun bash -c`
        own = _agent_of(st.argv)
        if own is not None:
            tasks.append(Agent(st.command, own))
        for c in st.task_commands:
            # (a plain step's one task command is a view of its argv: the answer just read)
            what = own if c.words is st.argv else _agent_of(c.words)
            if what is not None:
                tasks.append(Agent(c, what))
    in_tasks: set[int] | None = None  # (made for the first agent met: most scripts have none)
    for cmd in job.script.commands:  # (the batch script's own: walk()'s with cmd.script it)
        what = _agent_of(cmd.words)
        if what is None or cmd.in_substitution:
            continue
        if in_tasks is None:
            in_tasks = {id(c) for st in steps for c in st.task_commands}
        if id(cmd) not in in_tasks and job_control(job).tasks(cmd).in_batch_shell():
            batch.append(Agent(cmd, what))
    return batch, tasks


def _agent_of(words: list[Word]) -> str | None:
    """``node_agent(unwrap(words))``, with one test for what can be no agent (most commands:
    neither a wrapper nor an agent's name first)."""
    name = base(words[0]) if words else ""
    if name not in AGENT_OR_WRAPPER:
        return None
    return node_agent(unwrap(words))
