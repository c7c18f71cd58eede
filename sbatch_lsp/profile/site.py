"""The site as saved Slurm output describes it: partitions with their limits, and what their
nodes hold (GPUs, GPU types, memory, features), mapped through the nodes' ``Partitions=``.

Slurm facts read here (slurm.conf(5) and scontrol(1), 22.05 to 25.05):

- ``MaxTime`` is ``UNLIMITED`` or ``[D-]HH:MM:SS``; ``MaxNodes`` ``UNLIMITED`` or a count;
  ``TotalNodes`` the partition's node count; ``Default=YES`` marks the default partition.
- Exclusivity: ``OverSubscribe=EXCLUSIVE`` (16.05 on; ``Shared=EXCLUSIVE`` before) allocates
  whole nodes; ``ExclusiveUser=YES`` (15.08 on) gives a node to one user's jobs only; 25.05's
  records may also print ``Exclusive=``/``ExclusiveTopo=`` (read when ``YES``/``USER``).
- ``Gres=gpu:h100:8(S:0-1)``: name, optional type, count, optional socket binding; a node may list
  several GPU types (``gpu:a100:2,gpu:v100:2``). ``CfgTRES=...,gres/gpu=8,gres/gpu:h100=8``
  says the same when accounting tracks GPUs. ``RealMemory`` is megabytes.
- A partition's ``TRES=cpu=..,mem=..,node=..,gres/gpu=..`` is the sum over its nodes: used only
  when no node data is given, as an average per node, and marked as derived. Node records for
  only some of a partition's ``TotalNodes`` give per-node figures marked derived too, and no
  GPU types or features (the other nodes may have others).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import hostlist

from ..config import Partition
from ..values import mbytes, time_seconds
from .readers import ProfileInputError, SlurmText, split_list, value


@dataclass
class Node:
    """One node: its GPUs by type (``None`` for untyped), memory (MB), features, partitions."""

    name: str
    gpus: dict[str | None, int] = field(default_factory=dict)
    memory_mb: int | None = None
    features: list[str] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)

    @property
    def gpu_count(self) -> int:
        return sum(self.gpus.values())


@dataclass(frozen=True)
class ReadPartition(Partition):
    """One partition as the saved output describes it: the profile's facts
    (:class:`sbatch_lsp.config.Partition`, what the written file holds) and how they were read:
    its ``name``, ``node_names`` (``Nodes=`` expanded), ``tres`` (its ``TRES=`` sum),
    ``heterogeneous`` (keys whose value differs between its nodes: the largest is kept) and
    ``partial`` ((node records read, TotalNodes) when the node data covers only some of its
    nodes)."""

    name: str = ""
    node_names: tuple[str, ...] = ()
    tres: dict[str, str] = field(default_factory=dict)
    heterogeneous: tuple[str, ...] = ()
    partial: tuple[int, int] | None = None


@dataclass
class Site:
    """Everything the given files say, and which file said it."""

    partitions: dict[str, ReadPartition] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    release: str | None = None
    enforce_part_limits: str | None = None
    max_array_size: int | None = None
    #: cgroup.conf ConstrainDevices as ``scontrol show config`` prints it under "Cgroup Support
    #: Configuration:" (src/api/config_info.c, the controller's cgroup_conf key pairs)
    constrain_devices: bool | None = None
    pyxis: bool | None = None
    sources: list[tuple[str, str]] = field(default_factory=list)  # (file, kind)


def gres_gpus(text: str | None) -> dict[str | None, int]:
    """GPUs by type in a ``Gres=`` value (``gpu:h100:8(S:0-1)``, ``gpu:4``,
    ``gpu:a100:2,gpu:v100:2,mps:200``); untyped GPUs under None. Non-GPU GRES are left out."""
    out: dict[str | None, int] = {}
    for item in split_list(text):
        item = re.sub(r"\(.*\)$", "", item.strip())
        parts = item.split(":")
        if parts[0] != "gpu":
            continue
        count = 1
        if len(parts) > 1 and re.fullmatch(r"\d+[KMG]?", parts[-1]):
            count = _count(parts.pop())
        kinds = [p for p in parts[1:] if p and p != "no_consume"]
        kind = kinds[0] if kinds else None
        out[kind] = out.get(kind, 0) + count
    return out


def _count(text: str) -> int:
    n = int(re.match(r"\d+", text).group())  # type: ignore[union-attr]
    return n * {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(text[-1], 1)


def tres(text: str | None) -> dict[str, str]:
    """A TRES list (``cpu=8,mem=2000M,node=2,gres/gpu=4``) as a table."""
    out: dict[str, str] = {}
    for item in split_list(text):
        k, _, v = item.partition("=")
        out[k.strip()] = v.strip()
    return out


def _tres_gpus(t: dict[str, str]) -> dict[str | None, int]:
    """GPUs by type in a TRES table: typed ``gres/gpu:TYPE=N`` entries when present, else the
    untyped ``gres/gpu=N`` total."""
    typed: dict[str | None, int] = {k.split(":", 1)[1]: int(v) for k, v in t.items()
                                    if k.startswith("gres/gpu:") and v.isdigit()}
    if typed:
        return dict(typed)
    if t.get("gres/gpu", "").isdigit():
        return {None: int(t["gres/gpu"])}
    return {}


def _partition(rec: dict[str, str]) -> ReadPartition:
    name = rec["PartitionName"]
    got: dict[str, Any] = {"name": name}
    mt = value(rec, "MaxTime")
    if mt is not None:
        secs = time_seconds(mt)
        if secs is None:
            raise ValueError(f"partition {name}: MaxTime={mt} is not a Slurm time")
        if secs >= 0:
            got.update(max_time=secs, max_time_text=mt)
    mn = value(rec, "MaxNodes")
    if mn is not None and mn.isdigit():
        got["max_nodes"] = int(mn)
    tn = value(rec, "TotalNodes")
    if tn is not None and tn.isdigit():
        got["total_nodes"] = int(tn)
    got["default"] = (value(rec, "Default") or "").upper() == "YES"
    over = (value(rec, "OverSubscribe") or value(rec, "Shared") or "").upper()
    if over.startswith("EXCLUSIVE") or (value(rec, "Exclusive") or "").upper() == "YES":
        got["exclusive"] = True
    elif (value(rec, "ExclusiveUser") or "").upper() == "YES" or \
            (value(rec, "Exclusive") or "").upper() == "USER":
        got["exclusive"] = "user"
    nodes = value(rec, "Nodes")
    if nodes:
        try:
            got["node_names"] = tuple(hostlist.expand_hostlist(nodes))
        except hostlist.BadHostlist:
            raise ValueError(f"partition {name}: Nodes={nodes} is not a host list") from None
    got["tres"] = tres(value(rec, "TRES"))
    return ReadPartition(**got)


def _node(rec: dict[str, str]) -> Node:
    n = Node(rec["NodeName"])
    n.gpus = gres_gpus(value(rec, "Gres")) or _tres_gpus(tres(value(rec, "CfgTRES")))
    mem = value(rec, "RealMemory")
    if mem is not None and mem.isdigit():
        n.memory_mb = int(mem)
    n.features = split_list(value(rec, "AvailableFeatures"))
    n.partitions = split_list(value(rec, "Partitions"))
    return n


def build(texts: list[SlurmText]) -> Site:
    """The site the files describe. Raises ProfileInputError naming the file for a record whose
    values scontrol never prints (a damaged file), and when no file gives partitions or nodes."""
    site = Site()
    for t in texts:
        site.sources.append((t.name, t.kind))
        try:
            if t.kind == "partitions":
                for rec in t.records:
                    site.partitions[rec["PartitionName"]] = _partition(rec)
            elif t.kind == "nodes":
                for rec in t.records:
                    site.nodes[rec["NodeName"]] = _node(rec)
            elif t.kind == "config":
                site.release = t.settings["SLURM_VERSION"]
                epl = t.settings.get("EnforcePartLimits")
                site.enforce_part_limits = epl.upper() if epl else None
                mas = t.settings.get("MaxArraySize")
                site.max_array_size = int(mas) if mas and mas.isdigit() else None
                cd = (t.settings.get("ConstrainDevices") or "").lower()
                site.constrain_devices = {"yes": True, "no": False}.get(cd)
            elif t.kind == "srun-help":
                site.pyxis = t.pyxis
        except ValueError as exc:
            raise ProfileInputError(f"{t.name}: {exc}") from None
    if not site.partitions and not site.nodes:
        raise ProfileInputError("no partitions or nodes: give the saved output of `scontrol "
                                "show partition` (and `scontrol show node` for GPUs, memory "
                                "and features)")
    if not site.partitions:  # nodes alone: their Partitions= names the partitions
        for n in site.nodes.values():
            for name in n.partitions:
                site.partitions.setdefault(name, ReadPartition(name=name))
    site.partitions = {name: _fill(p, site) for name, p in site.partitions.items()}
    return site


def _fill(p: ReadPartition, site: Site) -> ReadPartition:
    """A partition with its per-node facts from its nodes, else (no node data) from its TRES
    sum."""
    nodes = [n for n in site.nodes.values() if p.name in n.partitions or n.name in p.node_names]
    if site.nodes:
        total = p.total_nodes if p.total_nodes is not None else len(nodes)
        if not nodes:
            return replace(p, total_nodes=total)
        # `scontrol show node n1` saved for a larger partition: the others may hold more, or
        # other kinds
        partial = (len(nodes), total) if len(nodes) < total else None
        counts = {n.gpu_count for n in nodes}
        mems = {n.memory_mb for n in nodes if n.memory_mb is not None}
        gpus, mem = max(counts), (max(mems) if mems else None)
        mixed = tuple(k for k, n in (("gpus-per-node", len(counts)),
                                     ("mem-per-node", len(mems))) if n > 1)
        return replace(
            p, total_nodes=total, partial=partial, gpus_per_node=gpus, mem_per_node=mem if mem is not None else p.mem_per_node,
            heterogeneous=p.heterogeneous + mixed,
            gpu_types=tuple(sorted({k for n in nodes for k in n.gpus if k is not None}))
            if gpus and not partial else p.gpu_types,
            features=tuple(sorted({f for n in nodes for f in n.features}))
            if not partial else p.features,
            derived=p.derived + tuple(k for k, v in (("gpus-per-node", gpus),
                                                     ("mem-per-node", mem)) if v is not None)
            if partial else p.derived)
    count = p.total_nodes or (int(p.tres["node"]) if p.tres.get("node", "").isdigit() else 0)
    if not count:
        return p
    gpus_by_type = _tres_gpus(p.tres)  # absent unless accounting tracks GPUs: unknown, not 0
    total_gpus = sum(gpus_by_type.values())
    mem_sum = mbytes(p.tres["mem"]) if "mem" in p.tres else None
    derived = p.derived
    if gpus_by_type and total_gpus % count == 0:
        p = replace(p, gpus_per_node=total_gpus // count)
        derived += ("gpus-per-node",)
    if any(k is not None for k in gpus_by_type):  # typed entries: the types; untyped: nothing
        p = replace(p, gpu_types=tuple(sorted(k for k in gpus_by_type if k is not None)))
    if mem_sum is not None and mem_sum % count == 0:
        p = replace(p, mem_per_node=mem_sum // count)
        derived += ("mem-per-node",)
    return replace(p, derived=derived)
