"""The site as a configuration file (TOML): the ``profile`` table DESIGN.md "Configuration"
describes, usable as ``--config FILE`` and as an ``extend`` target.

Keys this sbatch-lint does not know are written as comments, never as keys (configuration
validation refuses unknown keys), so the file always loads.
"""
from __future__ import annotations

import tomlkit
from tomlkit.items import Table

from ..config import PARTITION_KEYS, PROFILE_KEYS
from .site import ReadPartition, Site


def release_key(release: str) -> str:
    """``22.05.8`` -> ``22.05`` (the ``slurm-version`` form)."""
    return ".".join(release.split(".")[:2])


def _partition_table(p: ReadPartition) -> Table:
    t = tomlkit.table()
    rows: list[tuple[str, object, str | None]] = []
    if p.max_time_text:
        rows.append(("max-time", p.max_time_text, None))
    if p.max_nodes is not None:
        rows.append(("max-nodes", p.max_nodes, None))
    if p.total_nodes is not None:
        rows.append(("total-nodes", p.total_nodes, None))
    if p.default:
        rows.append(("default", True, None))
    if p.exclusive:
        rows.append(("exclusive", p.exclusive, "OverSubscribe=EXCLUSIVE" if p.exclusive is True
                     else "ExclusiveUser=YES: a node runs one user's jobs only"))
    if p.gpus_per_node is not None:
        rows.append(("gpus-per-node", p.gpus_per_node, _note(p, "gpus-per-node")))
    if p.gpu_types is not None and len(p.gpu_types) == 1:
        rows.append(("gpu-type", p.gpu_types[0], None))
    if p.gpu_types is not None:
        rows.append(("gpu-types", list(p.gpu_types), None if p.gpu_types else
                     "untyped GPUs (Gres=gpu:N): a request that names a type cannot be met"))
    if p.mem_per_node is not None:
        rows.append(("mem-per-node", p.mem_per_node, _note(p, "mem-per-node") or "MB"))
    if p.features is not None:
        rows.append(("features", list(p.features), None))
    if p.derived:
        rows.append(("derived", list(p.derived), None))
    for key, val, note in rows:
        if key not in PARTITION_KEYS:
            t.add(tomlkit.comment(f"{key} = {tomlkit.item(val).as_string()} (this sbatch-lint "
                                  "does not know the key)"))
            continue
        t.add(key, _item(val, note))
    return t


def _item(val: object, note: str | None):
    """A TOML value with its trailing comment."""
    it = tomlkit.item(val)
    if note:
        it.comment(note)
    return it


def _note(p: ReadPartition, key: str) -> str | None:
    if key in p.derived and p.partial:
        return f"derived: the largest of the {p.partial[0]} of its {p.partial[1]} nodes given"
    if key in p.derived:
        return "derived: the partition's TRES sum over its nodes, as an average per node"
    if key in p.heterogeneous:
        return "the largest of its nodes (they differ)"
    return None


def to_toml(site: Site) -> str:
    """The configuration text for ``site`` (ends with a newline)."""
    doc = tomlkit.document()
    doc.add(tomlkit.comment("sbatch-lint site profile, written by `sbatch-lint profile import` "
                            "from:"))
    for name, kind in site.sources:
        doc.add(tomlkit.comment(f"  {name} ({kind})"))
    doc.add(tomlkit.comment("Use it with `sbatch-lint --config FILE` or `extend = \"FILE\"`."))
    doc.add(tomlkit.nl())
    prof = tomlkit.table()
    rows: list[tuple[str, object, str | None]] = []
    if site.release:
        rows.append(("slurm-version", release_key(site.release), f"Slurm {site.release}"))
    if site.pyxis is not None:
        rows.append(("pyxis", site.pyxis, "from srun --help"))
    if site.enforce_part_limits:
        rows.append(("enforce-part-limits", site.enforce_part_limits,
                     "EnforcePartLimits in scontrol show config"))
    if site.max_array_size is not None:
        rows.append(("max-array-size", site.max_array_size,
                     "MaxArraySize in scontrol show config"))
    if site.constrain_devices is not None:
        rows.append(("constrain-devices", site.constrain_devices,
                     "ConstrainDevices in scontrol show config (cgroup.conf)"))
    for key, val, note in rows:
        if key in PROFILE_KEYS:
            prof.add(key, _item(val, note))
        else:
            prof.add(tomlkit.comment(f"{key} = {tomlkit.item(val).as_string()} (this "
                                     "sbatch-lint does not know the key)"))
    parts = tomlkit.table(is_super_table=True)
    for name in sorted(site.partitions):
        parts.add(name, _partition_table(site.partitions[name]))
    prof.add("partitions", parts)
    doc.add("profile", prof)
    return tomlkit.dumps(doc)
