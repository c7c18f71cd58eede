"""SB220–SB221: the ports a rendezvous binds (and SB206's master address outside the
allocation, whose logic lives here).

Facts: Linux hands out local ports for outgoing connections from
``net.ipv4.ip_local_port_range``, 32768–60999 by default (Documentation/networking/
ip-sysctl.rst); a listening port inside that range may already be held by any connection on the
node, so the bind fails now and then (``EADDRINUSE``). torchrun's static rendezvous binds a
TCPStore on ``--master-port`` on the node-rank-0 agent (torch/distributed/run.py; without a
port a multi-node launch binds 29500, a single-node one a free port in torch 2.13). enroot's PyTorch hook set ``MASTER_PORT`` to
``SLURM_JOB_ID % 16384 + 49152`` before 4.0.0 (inside the range) and ``% 4536 + 61000`` from
4.0.0 (NVIDIA/enroot commit 29541a8, ``conf/hooks/extra/50-slurm-pytorch.sh``).
"""
from __future__ import annotations

import ipaddress
import re

import hostlist

from ..facts.containers import literal_of
from ..facts.ports import PortRange, port_range
from ..values import host_count
from ..facts.partitions import target
from . import Edit, Fix, Severity, finding, rule

#: a port every job computes differently, outside the default ephemeral range
JOB_PORT = "$((20000 + SLURM_JOB_ID % 10000))"
LOOPBACK = re.compile(r"^(localhost|127\.\d+\.\d+\.\d+|0\.0\.0\.0|::1)$")
HOSTNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*$")
PORT_LAUNCHERS = ("torchrun", "launch", "accelerate", "deepspeed", "colossalai")


def _sites(job):
    """(range, the launch site or None) of every port a rendezvous binds that the script
    spells: launcher options and MASTER_PORT assignments."""
    seen: set[int] = set()
    for site in job.launches:
        la = site.launch
        if la.flavour not in PORT_LAUNCHERS or la.has("standalone"):
            continue
        script = site.command.script or job.script
        at = site.step.command.start if site.step is not None else site.command.start
        w = la.args.get("master-port")
        endpoint = la.args.get("rdzv-endpoint")
        if w is not None:
            r = port_range(w, script, job.script, at)
        elif endpoint is not None:
            value = endpoint.value or ""
            port = value.rsplit(":", 1)[1] if ":" in value else ""
            r = PortRange(int(port), int(port), True, endpoint) if port.isdigit() else None
        else:
            # no port: multi-node static launches bind 29500 (SB202's info); a single-node
            # torchrun picks a free port itself in recent releases (torch 2.13 run.py: static,
            # no --master-port and --nnodes max 1 becomes c10d on localhost:0)
            r = None
        if r is not None and r.word.start not in seen:
            seen.add(r.word.start)
            yield r, site
    scripts = [job.script] + [s for st in job.steps for s in st.task_scripts]
    for script in scripts:
        for a in script.assignments:
            if a.name != "MASTER_PORT" or a.value is None or a.value.start in seen:
                continue
            if script is job.script and not a.exported and not any(
                    job.exported("MASTER_PORT", st.command.start) for st in job.steps
                    if st.command.start > a.start):
                continue  # never reaches a step's tasks
            r = port_range(a.value, script, job.script, a.start)
            if r is not None:
                seen.add(r.word.start)
                yield r, None


def _literal_port(job, r: PortRange) -> bool:
    """Whether the port's word is the port's digits as written in the file, so the fix can
    replace exactly them: not a ``host:port`` endpoint, nor a value resolved through a variable
    or a command string (its span is where the variable is used, not the digits)."""
    return r.word.value is not None and r.word.value.isdigit() and \
        job.source.text[r.word.start:r.word.end] == r.word.value


def _span(r: PortRange) -> str:
    return str(r.low) if r.low == r.high else f"{r.low}–{r.high}"


@rule("SB220", "master-port-ephemeral", Severity.WARNING,
      "a master port inside the kernel's ephemeral port range: EADDRINUSE now and then",
      fix="unsafe")
def master_port_ephemeral(job):
    """The port (or every port an expression such as ``$((RANDOM % N + base))`` can give) must
    lie outside ``profile.ip-local-port-range`` (default 32768–60999)."""
    first, last = job.profile.ip_local_port_range
    for r, _ in _sites(job):
        n = r.overlap(first, last)
        if n == 0:
            continue
        part = ("is inside" if n == r.size else
                f"can take {n} of its {r.size} values inside" if r.size > 1 else "is inside")
        what = f"port {_span(r)}" if r.fixed else f"this port ({_span(r)})"
        fixes = []
        if r.fixed and _literal_port(job, r):
            fixes.append(Fix(f"derive the port from the job id, outside {first}–{last}",
                             (Edit(r.word.start, r.word.end, JOB_PORT),), safe=False))
        yield finding(
            "SB220", r.word.start, r.word.end,
            f"{what} {part} the kernel's ephemeral range {first}–{last}: any outgoing "
            "connection on the node may already hold it, and the rendezvous store fails now "
            "and then (\"EADDRINUSE\", \"address already in use\"); pick a port below "
            f"{first}, e.g. `{JOB_PORT}`", fixes=fixes)


def _shares_nodes(job) -> str | None:
    """Why another job may run on this job's nodes, or None when nothing says so."""
    if job.directives.get("exclusive") is not None:
        return None
    if job.directives.get("oversubscribe") is not None:
        return "the job allows --oversubscribe"
    t = target(job)
    if t is not None and t.parts and not any(p.exclusive for p in t.parts):
        return (f"the profile says {', '.join(t.names)} shares nodes between jobs "
                "(OverSubscribe is not EXCLUSIVE)")
    have = job.profile.gpus_per_node
    want = job.gpus_per_node.value
    if have and want is not None and 0 < want < have:
        return f"the job takes {want} of the node's {have} GPUs"
    return None


@rule("SB221", "fixed-port-shared-node", Severity.INFO,
      "a fixed master port that two jobs on one node would both bind (EADDRINUSE)", fix="unsafe")
def fixed_port_shared_node(job):
    """A literal port is the same for every job: a second job placed on the same node fails to
    bind it. An info unless the script or profile shows that
    the node is shared (``--oversubscribe``, fewer GPUs than the node has), then a warning;
    nothing with ``--exclusive`` or in partitions the profile says are exclusive, nor for a
    multi-node job without such evidence."""
    t = target(job)
    if job.directives.get("exclusive") is not None or (
            t is not None and t.parts and all(p.exclusive for p in t.parts)):
        return  # whole nodes: no other job beside it
    why = _shares_nodes(job)
    if why is None and job.multi_node():
        return  # whole-node multi-node jobs rarely share a node: nothing shows a co-tenant
    for r, _ in _sites(job):
        if not r.fixed:
            continue
        fixes = []
        if _literal_port(job, r):
            fixes.append(Fix("derive the port from the job id",
                             (Edit(r.word.start, r.word.end, JOB_PORT),), safe=False))
        yield finding(
            "SB221", r.word.start, r.word.end,
            f"port {r.low} is fixed, the same for every job: a second job on the same node "
            "fails to bind it (\"EADDRINUSE\", \"The server socket has failed to listen on any "
            f"local network address\"){'; ' + why if why else ''}; derive it from the job id: "
            f"`{JOB_PORT}`", severity=Severity.WARNING if why else None, fixes=fixes)


def address_outside_allocation(job, w, script) -> str | None:
    """SB206's check for a literal master address: why the host ``w`` names (a literal, or a
    ``$NAME`` with a literal assignment in ``script``) lies outside the allocation, or None.
    A loopback address is SB206's own case; a host that ``#SBATCH --nodelist`` does not name
    is outside it (sbatch(1) ``--nodelist``: the job runs on those nodes). Without a
    ``--nodelist`` nothing is said: the nodes may be given on sbatch's command line."""
    text = literal_of(w, script)
    if text is None:
        return None
    host = text.value.strip()
    if not host or LOOPBACK.match(host) or "$" in host:
        return None
    try:
        ipaddress.ip_address(host)
        is_ip = True
    except ValueError:
        is_ip = False
        if not HOSTNAME.match(host):
            return None
    nodelist = job.directives.value("nodelist")
    if not nodelist or is_ip:
        return None  # the nodes may come from `sbatch -w` on the command line
    names = _hosts(nodelist)
    if names is None or host.split(".")[0] in names:
        return None
    return f"{host} is not among the job's nodes (--nodelist={nodelist})"


def _hosts(nodelist: str) -> set[str] | None:
    """The host names of a Slurm host list (``node[1-3],gpu7``), or None when it cannot be
    expanded (python-hostlist)."""
    if host_count(nodelist) is None:
        return None  # a list sbatch would refuse: SB105's
    return {h.split(".")[0] for h in hostlist.expand_hostlist(nodelist)}
