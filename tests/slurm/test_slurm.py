"""The ``slurm`` tier: every launch rule's bad script really fails on a real two-node Slurm 22.05,
and the script our fix produces really runs (issue 6; docs/cluster-proof.md records the results).

For each scenario: sbatch-lint flags the bad script; the bad script runs on the cluster and fails
as the rule says (EADDRINUSE, a rendezvous that never completes — cut with scancel after
HANG_BOUND seconds —, duplicate ranks, an empty variable); the fix is applied (the CLI's
``--fix --unsafe-fixes``, the engine's named alternative, ``--convert srun-native --write``, or
for the rules that offer no automated fix the rule page's recipe) and the diff is exactly the
expected change; the fixed script runs, every rank joins one world of 4 with distinct ranks,
and the job exits 0; lint again: no finding at all.

The cluster (slurm_cluster.py) is started once per session and stopped by PID; the session
asserts that nothing of it is left.
"""
from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conftest import require_tool  # noqa: E402  (tests/conftest.py)
from slurm_cluster import HOSTS, Cluster, Job  # noqa: E402

from sbatch_lsp.fixer import apply_edits  # noqa: E402
from sbatch_lsp.lint import lint  # noqa: E402

# the session fixture builds the cluster (minutes); each job has its own bound
pytestmark = [pytest.mark.slurm, pytest.mark.timeout(1200)]

JOBS = HERE / "jobs"
#: seconds a job that hangs is given before scancel; a healthy run of these jobs takes about 10 s
HANG_BOUND = 45
#: seconds a job that must finish is given; past this it is cut and the test fails
RUN_BOUND = 240
NODES, PER_NODE = 2, 2


# -- the cluster ------------------------------------------------------------------------------

def _require_torch() -> None:
    if importlib.util.find_spec("torch") is None:
        message = "torch is not installed (.ci/setup.d/40-slurm.sh installs the CPU build)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def cluster():
    """A started :class:`Cluster`, stopped by PID after the session; the teardown asserts that
    no process is left, inside the namespaces or out, and removes the state directory."""
    if os.geteuid() != 0:
        pytest.skip("the slurm tier creates network namespaces and runs slurmd as root")
    for tool in ("unshare", "nsenter", "ip", "slurmctld", "slurmd", "sbatch"):
        require_tool(tool)
    with tempfile.TemporaryDirectory(prefix="sbatch-lsp-slurm-") as d:
        c = Cluster(Path(d)).start()
        try:
            yield c
        finally:
            alive = c.stop()
            assert alive == [], f"cluster processes left after stop: {alive}"
            assert c.namespace_pids() == [], "a process is still inside the cluster's namespaces"
            assert not _processes_mentioning(d), "a process still names the cluster's directory"


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if text.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def check_hosts_are_distinct(cluster, tmp_path):
    """Each node has its own hostname, address and hosts file; the canonical MASTER_ADDR line
    names the first node, which resolves on the other; --gpus-per-node=2 is granted; none of
    the cluster's addresses exists in the host's own namespace."""
    tmp_path.mkdir(parents=True)
    script = tmp_path / "hosts.sbatch"
    script.write_text(
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n#SBATCH --gpus-per-node=2\n"
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)\n'
        "echo BATCH host=$(hostname) master=$MASTER_ADDR\n"
        "srun bash -c 'echo TASK $SLURM_PROCID host=$(hostname) addr=$(hostname -I | tr -d \" \")"
        " gpus=$SLURM_GPUS_ON_NODE localhost=$(getent hosts localhost | cut -d\" \" -f1)"
        " master=$(getent hosts node1 | cut -d\" \" -f1)'\n")
    job = cluster.run(script, tmp_path, RUN_BOUND)
    assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output
    assert "BATCH host=node1 master=node1" in job.output
    tasks = re.findall(r"TASK (\d) host=(\S+) addr=(\S+) gpus=(\d) localhost=(\S+) master=(\S+)",
                       job.output)
    assert sorted((t[0], t[1], t[2]) for t in tasks) == [
        ("0", "node1", HOSTS["node1"]), ("1", "node1", HOSTS["node1"]),
        ("2", "node2", HOSTS["node2"]), ("3", "node2", HOSTS["node2"])]
    assert {(t[3], t[4], t[5]) for t in tasks} == {("2", "127.0.0.1", HOSTS["node1"])}
    host_addrs = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    assert not any(a in host_addrs for a in HOSTS.values())


# -- lint, fix, diff ----------------------------------------------------------------------------

def lint_json(path: Path) -> list[dict]:
    r = subprocess.run([sys.executable, "-m", "sbatch_lsp", "--format", "json", str(path)],
                       capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sbatch_lsp", *args], capture_output=True,
                          text=True)


def changes(before: str, after: str) -> tuple[list[str], list[str]]:
    """The lines a fix removed and added (unified diff, no context)."""
    diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0))
    removed = [d[1:] for d in diff if d.startswith("-") and not d.startswith("---")]
    added = [d[1:] for d in diff if d.startswith("+") and not d.startswith("+++")]
    return removed, added


# -- what a run shows ---------------------------------------------------------------------------

PROBE = re.compile(r"PROBE rank=(\d+) local_rank=(\d+|\?) world_size=(\d+) host=(node\d) sum=(\d+)")


def probes(job: Job) -> list[dict]:
    return [dict(rank=int(r), local_rank=lr, world=int(w), host=h, sum=int(s))
            for r, lr, w, h, s in PROBE.findall(job.output)]


def assert_one_world(job: Job) -> None:
    """Every rank joined one world of NODES*PER_NODE with distinct ranks, and the job exited 0."""
    world = NODES * PER_NODE
    got = probes(job)
    assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output[-4000:]
    assert sorted(p["rank"] for p in got) == list(range(world)), job.output[-4000:]
    assert {(p["world"], p["sum"]) for p in got} == {(world, world)}
    for host in ("node1", "node2"):
        assert sorted(p["local_rank"] for p in got if p["host"] == host) == ["0", "1"]


def first_line(job: Job, pattern: str) -> str:
    m = re.search(rf"^.*(?:{pattern}).*$", job.output, re.M)
    assert m, f"{pattern!r} not in the output:\n{job.output[-4000:]}"
    return m.group(0).strip()


def hung(job: Job) -> str:
    """The job was still running at HANG_BOUND (cut by scancel) and no worker got past
    init_process_group."""
    assert job.cancelled_after is not None and job.state == "CANCELLED", (job.state, job.output)
    assert not probes(job) and "Rendezvous complete" not in job.output, job.output[-4000:]
    return f"still waiting in the rendezvous after {HANG_BOUND} s: cut with scancel"


LABEL = re.compile(r"^\s*(\d+): ", re.M)  # srun's task label (SLURM_LABELIO=1 in job_env)


def _node_of(job: Job, line: str) -> str:
    """Where an output line came from: ``node1``/``node2`` for a task of an srun step (block
    distribution over NODES nodes, the steps here spread their tasks evenly), ``batch`` for
    the batch shell (its lines carry no label)."""
    m = LABEL.match(line)
    if m is None:
        return "batch"
    per_node = max(1, len({int(t) for t in LABEL.findall(job.output)}) // NODES)
    return f"node{int(m.group(1)) // per_node + 1}"


def agents(job: Job) -> dict[str, int]:
    """How many torchrun agents started where (each logs ``Starting elastic_operator``)."""
    out: dict[str, int] = {}
    for line in job.output.splitlines():
        if "Starting elastic_operator" in line:
            where = _node_of(job, line)
            out[where] = out.get(where, 0) + 1
    return out


def agent_values(job: Job, pattern: str) -> dict[str, list[str]]:
    """The values an agent logs in its launch configuration (``pattern`` has one group), by
    where the agent runs, in output order."""
    out: dict[str, list[str]] = {}
    for line in job.output.splitlines():
        m = re.search(pattern, line)
        if m:
            out.setdefault(_node_of(job, line), []).append(m.group(1))
    return out


def fails_eaddrinuse(job: Job) -> list[str]:
    """The mechanism, not just the symptom: both agents of node1 got node rank 0, so both tried
    to host the store on the master port, and one of them (on node1) lost it. The job is cut
    once the error is seen, so node2's agents may not have logged yet: only node1 is counted."""
    assert agents(job).get("node1") == PER_NODE, (agents(job), job.output[-4000:])
    ranks = agent_values(job, r"rdzv_configs\s*: \{'rank': (\d+)")
    assert ranks.get("node1") == ["0", "0"], ranks
    lost = [ln.strip() for ln in job.output.splitlines() if "EADDRINUSE" in ln and "29500" in ln]
    assert lost and {_node_of(job, ln) for ln in lost} == {"node1"}, job.output[-4000:]
    return [f"{PER_NODE} agents per node; both on node1 have node rank 0", lost[0]]


def fails_surplus_launchers(job: Job) -> list[str]:
    """srun ignored the step's --ntasks-per-node=1 and started 4 launchers for a 2-node c10d
    rendezvous: the surplus ones lose the store when the admitted ones finish, or wait on."""
    assert (job.state, job.exit_code) != ("COMPLETED", "0:0"), job.output[-4000:]
    started = agents(job)
    assert started == {"node1": PER_NODE, "node2": PER_NODE}, (started, job.output[-4000:])
    evidence = [first_line(job, "can't honor --ntasks-per-node"),
                f"{PER_NODE} torchrun agents started on each node for --nnodes=2"]
    m = re.search(r"^.*RendezvousConnectionError: .*$", job.output, re.M)
    evidence.append(m.group(0).strip() if m else
                    f"the surplus agents still waiting after {HANG_BOUND} s: cut with scancel")
    return evidence


def fails_two_worlds(job: Job) -> list[str]:
    got = probes(job)
    assert len(got) == NODES * PER_NODE and {p["world"] for p in got} == {PER_NODE}, job.output
    ranks = sorted(p["rank"] for p in got)
    assert ranks == [0, 0, 1, 1], ranks
    return [f"job {job.state} {job.exit_code}, but: " + "; ".join(
        f"rank {p['rank']} of world_size {p['world']} on {p['host']}"
        for p in sorted(got, key=lambda p: (p["host"], p["rank"])))]


def fails_alone_in_batch_shell(job: Job) -> list[str]:
    """SB205: exactly one agent started, in the batch shell (node1 only), and it waits for a
    second node that never comes."""
    assert agents(job) == {"batch": 1}, (agents(job), job.output[-4000:])
    return ["one torchrun agent, started by the batch shell",
            first_line(job, "Rendezvous'ing worker group"), hung(job)]


def fails_own_loopback(job: Job) -> list[str]:
    """SB206: every agent (one per node) points the rendezvous at its own loopback."""
    assert agents(job) == {"node1": 1, "node2": 1}, (agents(job), job.output[-4000:])
    endpoints = agent_values(job, r"rdzv_endpoint\s*: (\S+)")
    assert endpoints == {"node1": ["localhost:29500"], "node2": ["localhost:29500"]}, endpoints
    return ["both agents: " + first_line(job, r"rdzv_endpoint\s*: localhost:29500"), hung(job)]


def fails_all_rank_zero(job: Job) -> list[str]:
    ranks = re.findall(r"rdzv_configs\s*: \{'rank': (\d+)", job.output)
    assert ranks == ["0", "0"], ranks
    return ["both agents: " + first_line(job, r"rdzv_configs\s*: \{'rank': 0"), hung(job)]


def fails_empty_address(job: Job) -> list[str]:
    assert job.state == "FAILED", job.output[-4000:]
    return [first_line(job, r"ValueError: The hostname of the rendezvous endpoint ':")]


# -- the scenarios ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scenario:
    """A bad script in jobs/, the rule that flags it, how it fails, and how it is fixed.

    ``fix`` is ``"cli"`` (``--fix --unsafe-fixes``), ``"engine:<message>"`` (the offered fix of
    that name, as an editor applies it), ``"convert"`` (``--convert srun-native --write``) or
    ``"page"`` (no automated fix: jobs/<name>.fixed.sbatch follows the rule page's recipe).
    ``removed``/``added`` are the exact lines the fix changes. A bad run that ``may_hang`` is cut
    with scancel after HANG_BOUND seconds (others after RUN_BOUND), or as soon as its output
    matches ``cut_when`` (the failure has shown; what is left would only wait).
    """

    name: str
    code: str
    bad: str
    fails: object
    fix: str
    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    cut_when: str | None = None
    may_hang: bool = False

    def __str__(self) -> str:
        return self.name


LAYOUT = '--nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1'
RANKS = ("RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID WORLD_SIZE=$SLURM_NTASKS "
         "LOCAL_WORLD_SIZE=$SLURM_NTASKS_PER_NODE OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}")
SCENARIOS = [
    Scenario(
        "SB201-static", "SB201", "sb201-static", fails_eaddrinuse,
        "engine:run one task per node in this step",
        (("srun bash -c 'torchrun --nnodes=2 --node-rank=$SLURM_NODEID --nproc-per-node=2 "
         "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT probe.py'"),),
        ((f"srun {LAYOUT} bash -c 'torchrun --nnodes=2 --node-rank=$SLURM_NODEID "
         "--nproc-per-node=2 --master-addr=$MASTER_ADDR --master-port=$MASTER_PORT probe.py'"),),
        cut_when="EADDRINUSE"),
    Scenario(
        "SB201-c10d", "SB201", "sb201", fails_surplus_launchers,
        "engine:run one task per node in this step",
        (('srun --ntasks-per-node=1 torchrun --nnodes=2 --nproc-per-node=2 --rdzv-backend=c10d '
         '--rdzv-endpoint="$MASTER_ADDR:29400" probe.py'),),
        ((f'srun {LAYOUT} torchrun --nnodes=2 --nproc-per-node=2 --rdzv-backend=c10d '
         '--rdzv-endpoint="$MASTER_ADDR:29400" probe.py'),),
        cut_when="RendezvousConnectionError: ",
        may_hang=True),
    Scenario(
        "SB202", "SB202", "sb202", fails_two_worlds, "cli",
        ("srun bash -c 'torchrun --nproc-per-node=2 probe.py'",),
        ('export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)',
         "export MASTER_PORT=$((20000 + SLURM_JOB_ID % 10000))",
         ("""srun bash -c 'torchrun --nnodes="$SLURM_JOB_NUM_NODES" --node-rank="$SLURM_NODEID" """
         """--master-addr="$MASTER_ADDR" --master-port="$MASTER_PORT" --nproc-per-node=2 """
         """probe.py'"""))),
    Scenario(
        "SB205", "SB205", "sb205", fails_alone_in_batch_shell, "page",
        ("torchrun --nnodes=2 --node_rank=0 --nproc_per_node=2 \\",
         "  --master_addr=$MASTER_ADDR --master_port=29500 probe.py"),
        (("srun --ntasks-per-node=1 bash -c 'torchrun --nnodes=2 --node_rank=$SLURM_NODEID "
         "--nproc_per_node=2 \\"),
         "  --master_addr=$MASTER_ADDR --master_port=29500 probe.py'"),
        may_hang=True),
    Scenario(
        "SB206", "SB206", "sb206", fails_own_loopback, "page",
        (("srun bash -c 'torchrun --nnodes=2 --node-rank=$SLURM_NODEID --master-addr=localhost "
         "--master-port=29500 --nproc-per-node=2 probe.py'"),),
        (("srun bash -c 'torchrun --nnodes=2 --node-rank=$SLURM_NODEID --master-addr=$MASTER_ADDR "
         "--master-port=29500 --nproc-per-node=2 probe.py'"),),
        may_hang=True),
    Scenario(
        "SB301", "SB301", "sb301", fails_all_rank_zero, "cli",
        ('srun bash -c "torchrun --nnodes=2 --nproc-per-node=2 --node-rank=$SLURM_NODEID \\',),
        ('srun bash -c "torchrun --nnodes=2 --nproc-per-node=2 --node-rank=\\$SLURM_NODEID \\',),
        may_hang=True),
    Scenario(
        "SB302", "SB302", "sb302", fails_empty_address, "cli",
        ('MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)',),
        ('export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)',)),
    Scenario(
        "convert-c10d", "SB201", "sb201", fails_surplus_launchers, "convert",
        (('srun --ntasks-per-node=1 torchrun --nnodes=2 --nproc-per-node=2 --rdzv-backend=c10d '
         '--rdzv-endpoint="$MASTER_ADDR:29400" probe.py'),),
        ("export MASTER_PORT=$((SLURM_JOB_ID % 4536 + 61000))",
         f"srun bash -c 'export {RANKS}; exec \"$@\"' bash python probe.py"),
        cut_when="RendezvousConnectionError: ",
        may_hang=True),
    Scenario(
        "convert-static", "SB201", "sb201-static", fails_eaddrinuse, "convert",
        (("srun bash -c 'torchrun --nnodes=2 --node-rank=$SLURM_NODEID --nproc-per-node=2 "
         "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT probe.py'"),),
        (f"srun bash -c '{RANKS} python probe.py'",),
        cut_when="EADDRINUSE"),
    # the conversion also takes the launches of SB202, SB205 and SB206 to the srun-native shape
    # (SB205 and SB206 have no fix of their own: this is the CLI's automated way out for them)
    Scenario(
        "convert-SB202", "SB202", "sb202", fails_two_worlds, "convert",
        ("#SBATCH --ntasks-per-node=1", "srun bash -c 'torchrun --nproc-per-node=2 probe.py'"),
        ("#SBATCH --ntasks-per-node=2",
         'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)',
         "export MASTER_PORT=$((SLURM_JOB_ID % 4536 + 61000))",
         f"srun bash -c '{RANKS} python probe.py'")),
    Scenario(
        "convert-SB205", "SB205", "sb205", fails_alone_in_batch_shell, "convert",
        ("#SBATCH --ntasks-per-node=1", "torchrun --nnodes=2 --node_rank=0 --nproc_per_node=2 \\",
         "  --master_addr=$MASTER_ADDR --master_port=29500 probe.py"),
        ("#SBATCH --ntasks-per-node=2", "export MASTER_PORT=$((SLURM_JOB_ID % 4536 + 61000))",
         f"srun bash -c 'export {RANKS}; exec \"$@\"' bash python probe.py"),
        may_hang=True),
    Scenario(
        "convert-SB206", "SB206", "sb206", fails_own_loopback, "convert",
        ("#SBATCH --ntasks-per-node=1",
         ("srun bash -c 'torchrun --nnodes=2 --node-rank=$SLURM_NODEID --master-addr=localhost "
         "--master-port=29500 --nproc-per-node=2 probe.py'")),
        ("#SBATCH --ntasks-per-node=2", "export MASTER_PORT=$((SLURM_JOB_ID % 4536 + 61000))",
         f"srun bash -c '{RANKS} python probe.py'"),
        may_hang=True),
]

#: bad runs by script, shared by the scenarios that start from the same script
_BAD_RUNS: dict[str, tuple[Job, list[str]]] = {}


def job_env(workdir: Path) -> dict:
    tmp = workdir / "tmp"
    tmp.mkdir(exist_ok=True)
    return {"PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "LOGLEVEL": "INFO",  # torchrun says which rendezvous it waits in
            "SLURM_LABELIO": "1",  # srun labels each task's lines (which node said what)
            "TMPDIR": str(tmp)}  # torchelastic's log folders stay in the test's directory


def run(cluster: Cluster, script_text: str, workdir: Path, bound: float,
        cut_when: str | None = None) -> Job:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "probe.py").write_text((HERE / "probe.py").read_text())
    script = workdir / "job.sbatch"
    script.write_text(script_text)
    until = (lambda text: re.search(cut_when, text) is not None) if cut_when else None
    return cluster.run(script, workdir, bound, until=until, extra_env=job_env(workdir))


def apply_fix(s: Scenario, bad: str, path: Path) -> str:
    """The fixed script, written to *path* (which holds the bad script on entry)."""
    if s.fix == "cli":
        r = cli("--fix", "--unsafe-fixes", str(path))
        assert r.returncode == 0, r.stdout + r.stderr
    elif s.fix == "convert":
        r = cli("--convert", "srun-native", "--write", str(path))
        assert r.returncode == 0, r.stdout + r.stderr
    elif s.fix.startswith("engine:"):
        wanted = s.fix.split(":", 1)[1]
        fixes = [f for d in lint(bad, str(path)).diagnostics if d.code == s.code
                 for f in d.fixes if f.message == wanted]
        assert len(fixes) == 1, f"{s.code} offers no single fix named {wanted!r}"
        path.write_text(apply_edits(bad, list(fixes[0].edits)))
    else:  # page: no automated fix exists; the CLI must leave the finding in place
        assert not [f for d in lint(bad, str(path)).diagnostics if d.code == s.code
                    for f in d.fixes], f"{s.code} now has a fix: test it instead of the recipe"
        path.write_text((JOBS / f"{s.bad}.fixed.sbatch").read_text())
    return path.read_text()


def record(s: Scenario, bad: Job, evidence: list[str], fixed: Job, diff: tuple) -> None:
    """With SBATCH_LSP_SLURM_RECORD=path, append what was observed (docs/cluster-proof.md)."""
    path = os.environ.get("SBATCH_LSP_SLURM_RECORD")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({
                "scenario": s.name, "code": s.code,
                "bad": {"state": bad.state, "exit": bad.exit_code, "cut_after": bad.cancelled_after,
                        "evidence": evidence},
                "fixed": {"state": fixed.state, "exit": fixed.exit_code,
                          "probes": sorted(PROBE.findall(fixed.output))},
                "removed": diff[0], "added": diff[1]}) + "\n")


def test_on_the_cluster(cluster, subtests, tmp_path):
    """One test item, so that one worker runs every job on one cluster (pytest-xdist cannot
    group items under pytest 9): the cluster's own shape, then each scenario as a subtest."""
    _require_torch()
    with subtests.test("hosts"):
        check_hosts_are_distinct(cluster, tmp_path / "hosts")
    for s in SCENARIOS:
        with subtests.test(s.name):
            prove(s, cluster, tmp_path / s.name)


def prove(s: Scenario, cluster: Cluster, tmp_path: Path) -> None:
    """The five steps of the module docstring for one scenario."""
    tmp_path.mkdir(parents=True)
    bad = (JOBS / f"{s.bad}.sbatch").read_text()
    path = tmp_path / f"{s.bad}.sbatch"
    path.write_text(bad)

    # 1. sbatch-lint flags it, at error
    assert [f["severity"] for f in lint_json(path) if f["code"] == s.code] == ["error"]

    # 2. it really fails on the cluster, by the mechanism the rule names; only a scenario that
    #    hangs gets the short bound (the others must end by themselves)
    if s.bad not in _BAD_RUNS:
        job = run(cluster, bad, tmp_path / "bad", HANG_BOUND if s.may_hang else RUN_BOUND,
                  s.cut_when)
        _BAD_RUNS[s.bad] = (job, s.fails(job))
    bad_job, evidence = _BAD_RUNS[s.bad]

    # 3. the fix, and nothing but the fix
    fixed = apply_fix(s, bad, path)
    removed, added = changes(bad, fixed)
    assert (tuple(removed), tuple(added)) == (s.removed, s.added)

    # 4. the fixed script runs: one world, distinct ranks, exit 0
    fixed_job = run(cluster, fixed, tmp_path / "fixed", RUN_BOUND)
    assert_one_world(fixed_job)

    # 5. and lints clean
    assert lint_json(path) == []
    record(s, bad_job, evidence, fixed_job, (removed, added))


def test_sb201_preferred_fix_is_the_proven_conversion(tmp_path):
    """``--fix --unsafe-fixes`` on the SB201 scripts applies the srun-native conversion, whose
    output the convert-* scenarios ran on the cluster."""
    for name in ("sb201", "sb201-static"):
        fixed, converted = tmp_path / f"fix-{name}.sbatch", tmp_path / f"convert-{name}.sbatch"
        for path in (fixed, converted):
            path.write_text((JOBS / f"{name}.sbatch").read_text())
        assert cli("--fix", "--unsafe-fixes", str(fixed)).returncode == 0
        assert cli("--convert", "srun-native", "--write", str(converted)).returncode == 0
        assert fixed.read_text() == converted.read_text() != (JOBS / f"{name}.sbatch").read_text()
