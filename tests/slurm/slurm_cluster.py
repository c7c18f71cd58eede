"""A real two-node Slurm 22.05 cluster for the ``slurm`` test tier, each host in its own namespaces.

Layout (all state under one temporary directory, nothing touches /etc/slurm or the host network):

- three *holder* processes (``sleep infinity`` under ``unshare --net --uts --mount``) each own a
  network, UTS and mount namespace: ``ctl`` (slurmctld), ``node1`` and ``node2`` (one slurmd each);
- in ``ctl`` a bridge ``br0`` carries the controller's address; each node gets one end of a veth
  pair created inside ``ctl`` (so no interface ever appears in the host's namespace), with its own
  address on the bridge's /24;
- each namespace has its own hostname (``ctl``, ``node1``, ``node2``) and its own hosts file
  bind-mounted over ``/etc/hosts`` inside its private mount namespace, so ``node1`` resolves,
  ``localhost`` is the node itself, and ``scontrol show hostnames`` names real, distinct hosts;
- ``slurm.conf``: ``CPUs=4`` per node with ``SlurmdParameters=config_overrides``, ``GresTypes=gpu``
  with a File-less ``Name=gpu Count=2`` per node (so ``--gpus-per-node=2`` can be requested),
  ``auth/none`` + ``cred/none`` (no munged), ``proctrack/linuxproc``; the default partition
  ``debug`` has no time limit, ``short`` a ``MaxTime`` of 10 minutes, and partition limits are
  enforced at submission (``EnforcePartLimits=ALL``, so ``sbatch --test-only`` refuses a breach);
  a ``job_submit/lua`` filter refuses only jobs marked ``--comment=sbl-live-filter``, as a site's
  filter does, with its own message (both for tests/slurm/test_live_cluster.py).

The addresses come from 198.18.0.0/15 (RFC 2544, reserved for benchmarking network devices) and
exist only inside these namespaces: the host, and any network beyond it, never sees them.

Every process is started here, by PID, and :meth:`Cluster.stop` ends them by PID: the daemons
first (TERM, then KILL after a bound), then anything a job left inside the namespaces (a
``slurmstepd`` or a task), then the holders, after which the namespaces, the veth pairs and the
bridge vanish with them. ``stop`` returns the PIDs still alive (none, unless something is wrong).
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SUBNET = "198.18.0"
HOSTS = {"ctl": f"{SUBNET}.1", "node1": f"{SUBNET}.11", "node2": f"{SUBNET}.12"}
NODES = ("node1", "node2")
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
            "BOOT_FAIL", "DEADLINE", "PREEMPTED"}

SLURM_CONF = """\
# Two-node test cluster (sbatch-lsp slurm tier); every path is under {dir}.
ClusterName=sbl
SlurmctldHost=ctl({ctl})
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool/slurmd-%n
SlurmctldPidFile={dir}/run/slurmctld.pid
SlurmdPidFile={dir}/run/slurmd-%n.pid
SlurmctldLogFile={dir}/log/slurmctld.log
SlurmdLogFile={dir}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=2
Waittime=0
MaxJobCount=10000
GresTypes=gpu
SlurmdParameters=config_overrides
EnforcePartLimits=ALL
JobSubmitPlugins=lua
NodeName=node1 NodeAddr={node1} CPUs=4 RealMemory=1000 Gres=gpu:2 State=UNKNOWN
NodeName=node2 NodeAddr={node2} CPUs=4 RealMemory=1000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP
PartitionName=short Nodes=node[1-2] MaxTime=00:10:00 State=UP
"""

# slurmd 22.05 drops a File-less gpu line ("Removing file-less GPU gpu:(null) from final GRES
# list") and the controller then drains the node ("gres/gpu count reported lower than configured
# (0 < 2)"): each fake GPU is a character device with /dev/null's numbers, under the state folder.
GRES_CONF = "NodeName=node[1-2] Name=gpu File={dir}/dev/nvidia[0-1]\n"

# a site job_submit filter (job_submit/lua reads job_submit.lua beside slurm.conf): it refuses
# only jobs marked --comment=sbl-live-filter, with its own message (tests/slurm/test_live_cluster.py)
JOB_SUBMIT_LUA = """\
function slurm_job_submit(job_desc, part_list, submit_uid)
   if job_desc.comment == "sbl-live-filter" then
      slurm.log_user("site policy: --comment=sbl-live-filter is refused on this cluster")
      return slurm.ERROR
   end
   return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   return slurm.SUCCESS
end

return slurm.SUCCESS
"""

HOSTS_FILE = "127.0.0.1\tlocalhost\n" + "".join(f"{a}\t{h}\n" for h, a in HOSTS.items())


class ClusterError(RuntimeError):
    """The cluster could not be built or did not come up; the message names the step and log."""


@dataclass
class Job:
    """A finished (or cancelled) batch job: its id, final state, exit code and standard output."""

    job_id: str
    state: str
    exit_code: str
    output: str
    cancelled_after: float | None = None  # seconds, when the test cut it with scancel


@dataclass
class Cluster:
    """Two slurmd and one slurmctld, each in its own namespaces, state under ``directory``."""

    directory: Path
    env: dict = field(default_factory=dict)
    holders: dict = field(default_factory=dict)  # name -> Popen of the namespace holder
    daemons: dict = field(default_factory=dict)  # name -> Popen of slurmctld / slurmd
    netns: dict = field(default_factory=dict)  # name -> "net:[inode]" of its network namespace
    timings: dict = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.directory / "etc" / "slurm.conf"

    # -- namespaces -------------------------------------------------------------------------

    def _enter(self, name: str) -> list[str]:
        """The ``nsenter`` prefix that runs a command inside host *name*'s namespaces."""
        return ["nsenter", f"--target={self.holders[name].pid}", "--net", "--uts", "--mount", "--"]

    def sh(self, name: str, *argv: str, check: bool = True, timeout: float = 30, **kw):
        """Run *argv* inside host *name* (``ctl``, ``node1``, ``node2``); return the CompletedProcess."""
        r = subprocess.run([*self._enter(name), *argv], capture_output=True, text=True,
                           timeout=timeout, env=self.env, **kw)
        if check and r.returncode != 0:
            raise ClusterError(f"{name}: {' '.join(argv)} exited {r.returncode}: {r.stderr.strip()}")
        return r

    def _make_host(self, name: str) -> None:
        holder = subprocess.Popen(["unshare", "--net", "--uts", "--mount", "--propagation", "private",
                                   "--", "sleep", "infinity"], stdin=subprocess.DEVNULL,
                                  preexec_fn=_die_with_parent)
        self.holders[name] = holder
        hosts = self.directory / "etc" / f"hosts.{name}"
        hosts.write_text(HOSTS_FILE)
        for _ in range(100):  # unshare has exec'd sleep once its namespaces differ from ours
            ns = os.readlink(f"/proc/{holder.pid}/ns/net")
            if ns != os.readlink("/proc/self/ns/net"):
                self.netns[name] = ns
                break
            time.sleep(0.01)
        else:
            raise ClusterError(f"unshare for {name} did not create a network namespace")
        self.sh(name, "hostname", name)
        self.sh(name, "mount", "--bind", str(hosts), "/etc/hosts")
        self.sh(name, "ip", "link", "set", "lo", "up")

    def _wire(self) -> None:
        self.sh("ctl", "ip", "link", "add", "br0", "type", "bridge")
        self.sh("ctl", "ip", "addr", "add", f"{HOSTS['ctl']}/24", "dev", "br0")
        self.sh("ctl", "ip", "link", "set", "br0", "up")
        for node in NODES:
            port = f"v{node}"
            self.sh("ctl", "ip", "link", "add", port, "type", "veth", "peer", "name", "eth0",
                    "netns", str(self.holders[node].pid))
            self.sh("ctl", "ip", "link", "set", port, "master", "br0", "up")
            self.sh(node, "ip", "addr", "add", f"{HOSTS[node]}/24", "dev", "eth0")
            self.sh(node, "ip", "link", "set", "eth0", "up")

    # -- life cycle -------------------------------------------------------------------------

    def start(self, timeout: float = 60) -> "Cluster":
        """Build the namespaces, write the configuration, start the daemons, wait until idle.

        Raises ClusterError (after stopping what was started) when a step fails or the nodes are
        not idle within *timeout* seconds.
        """
        t0 = time.monotonic()
        d = self.directory
        for sub in ("etc", "run", "state", "log", "dev", *(f"spool/slurmd-{n}" for n in NODES)):
            (d / sub).mkdir(parents=True, exist_ok=True)
        for i in range(2):
            os.mknod(d / "dev" / f"nvidia{i}", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        self.conf.write_text(SLURM_CONF.format(dir=d, **HOSTS))
        (d / "etc" / "gres.conf").write_text(GRES_CONF.format(dir=d))
        (d / "etc" / "job_submit.lua").write_text(JOB_SUBMIT_LUA)
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        try:
            for name in ("ctl", *NODES):
                self._make_host(name)
            self._wire()
            self.timings["network_s"] = time.monotonic() - t0
            self._daemon("ctl", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
            for node in NODES:
                self._daemon(node, ["slurmd", "-D", "-N", node, "-f", str(self.conf)])
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                r = self.sh("ctl", "sinfo", "-h", "-N", "-o", "%N %T", check=False)
                states = dict(line.split() for line in r.stdout.splitlines() if line.strip())
                if r.returncode == 0 and set(states) == set(NODES) and set(states.values()) == {"idle"}:
                    break
                for name, p in self.daemons.items():
                    if p.poll() is not None:
                        raise ClusterError(f"{name}'s daemon exited {p.returncode}: {self.log_tail()}")
                time.sleep(0.1)
            else:
                raise ClusterError(f"nodes not idle after {timeout} s: {r.stdout}{r.stderr}"
                                   f"{self.log_tail()}")
        except BaseException:
            self.stop()
            raise
        self.timings["start_s"] = time.monotonic() - t0
        return self

    def _daemon(self, name: str, argv: list[str]) -> None:
        log = open(self.directory / "log" / f"{name}.out", "ab")
        self.daemons[name] = subprocess.Popen([*self._enter(name), *argv], stdin=subprocess.DEVNULL,
                                              stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                              preexec_fn=_die_with_parent)
        log.close()

    def log_tail(self, lines: int = 15) -> str:
        out = []
        for f in sorted((self.directory / "log").glob("*")):
            text = f.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"\n--- {f.name}\n" + "\n".join(text))
        return "".join(out)

    def namespace_pids(self) -> list[int]:
        """PIDs of every process inside one of this cluster's network namespaces (holders too).

        A namespace lives as long as one process is in it, so an empty list after :meth:`stop`
        also means the namespaces, their veth pairs, bridge and addresses are gone."""
        ours = set(self.netns.values())
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.readlink(f"/proc/{entry}/ns/net") in ours:
                    pids.append(int(entry))
            except OSError:
                continue
        return pids

    def stop(self, grace: float = 10) -> list[int]:
        """End every process of the cluster by PID; return the PIDs still alive afterwards.

        Daemons get SIGTERM and, after *grace* seconds, SIGKILL; what jobs left inside the
        namespaces (``slurmstepd``, tasks) is then killed by PID; the holders go last, taking the
        namespaces, the veth pairs and the bridge with them.
        """
        t0 = time.monotonic()
        _terminate(list(self.daemons.values()), grace)
        leftovers = [p for p in self.namespace_pids()
                     if p not in {h.pid for h in self.holders.values()}]
        for pid in leftovers:
            _kill(pid, signal.SIGKILL)
        _wait_gone(leftovers, 5)
        _terminate(list(self.holders.values()), grace)
        alive = [pid for pid in [*(p.pid for p in self.daemons.values()),
                                 *(p.pid for p in self.holders.values()), *leftovers]
                 if _alive(pid)]
        self.timings["stop_s"] = time.monotonic() - t0
        return alive

    # -- jobs -------------------------------------------------------------------------------

    def submit(self, script: Path, workdir: Path, extra_env: dict | None = None) -> str:
        """``sbatch`` *script* from the controller host, running in *workdir*; return the job id."""
        env = {**self.env, **(extra_env or {})}
        r = subprocess.run([*self._enter("ctl"), "sbatch", "--parsable", f"--chdir={workdir}",
                            f"--output={workdir}/slurm-%j.out", str(script)],
                           capture_output=True, text=True, env=env, timeout=30)
        if r.returncode != 0:
            raise ClusterError(f"sbatch {script.name} exited {r.returncode}: {r.stderr.strip()}")
        return r.stdout.strip().split(";")[0]

    def job_info(self, job_id: str) -> dict:
        r = self.sh("ctl", "scontrol", "show", "job", job_id)
        return dict(re.findall(r"(\w+)=(\S+)", r.stdout))

    def run(self, script: Path, workdir: Path, bound: float, *, until=None,
            extra_env: dict | None = None) -> Job:
        """Submit *script*, wait until it ends; after *bound* seconds cut it with ``scancel``.

        *until*, a predicate on the output so far, may cut the job earlier (once the output shows
        the failure). Returns the :class:`Job` with its final state, exit code and output.
        """
        job_id = self.submit(script, workdir, extra_env)
        out = workdir / f"slurm-{job_id}.out"
        t0 = time.monotonic()
        cancelled = None
        while True:
            info = self.job_info(job_id)
            if info.get("JobState") in TERMINAL:
                break
            text = out.read_text(errors="replace") if out.exists() else ""
            elapsed = time.monotonic() - t0
            if cancelled is None and (elapsed > bound or (until is not None and until(text))):
                self.sh("ctl", "scancel", job_id)
                cancelled = elapsed
            if cancelled is not None and elapsed > cancelled + 30:
                raise ClusterError(f"job {job_id} still {info.get('JobState')} 30 s after scancel")
            time.sleep(0.2)
        # the batch step's output file is complete once the job has ended
        return Job(job_id, info["JobState"], info.get("ExitCode", "?"),
                   out.read_text(errors="replace") if out.exists() else "", cancelled)


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the test process dies without calling stop()
    (an interrupted pytest-xdist worker), so no daemon or namespace holder outlives the run.
    prctl(PR_SET_PDEATHSIG) survives the exec of nsenter, unshare, slurmd and sleep."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of ours that nobody reaped yet is gone for every purpose but the table
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _wait_gone(pids: list[int], bound: float) -> None:
    deadline = time.monotonic() + bound
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def _terminate(procs: list[subprocess.Popen], grace: float) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def available() -> str | None:
    """None when this machine can build the cluster, else why not (a missing tool)."""
    for tool in ("unshare", "nsenter", "ip", "slurmctld", "slurmd", "sbatch"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (.ci/setup.d/40-slurm.sh installs it)"
    return None
