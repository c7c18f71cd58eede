"""The profile's keys come from one table each (config.PROFILE_TABLE, PARTITION_TABLE): the
validation reads them, its error messages say what the table says a value must be, and
docs/configuration-keys.md is generated from them (a drift fails here)."""
from __future__ import annotations

from pathlib import Path

import pytest

from sbatch_lsp.config import (
    PARTITION_KEYS,
    PARTITION_TABLE,
    PROFILE_KEYS,
    PROFILE_TABLE,
    ConfigError,
    from_table,
    keys_markdown,
)

DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration-keys.md"
#: a value no key accepts (a fraction: not a count, string, list, table or boolean)
NOTHING = 0.5
#: keys whose refusal of NOTHING is a message of their own rather than "expected …"
OWN_MESSAGE = {"slurm-version", "derived"}


def test_the_doc_is_generated_from_the_tables():
    assert DOC.read_text("utf-8") == keys_markdown(), \
        "run: python -m sbatch_lsp.config --write docs/configuration-keys.md"
    for key in (*PROFILE_TABLE, *PARTITION_TABLE):
        assert f"| `{key.name}` |" in DOC.read_text("utf-8")


def test_the_key_sets_are_the_tables():
    assert PROFILE_KEYS == {k.name for k in PROFILE_TABLE} and len(PROFILE_TABLE) == 13
    assert PARTITION_KEYS == {k.name for k in PARTITION_TABLE} and len(PARTITION_TABLE) == 12


@pytest.mark.parametrize("key", [k for k in PROFILE_TABLE if k.name not in OWN_MESSAGE],
                         ids=lambda k: k.name)
def test_a_refused_profile_value_says_what_the_table_expects(key):
    with pytest.raises(ConfigError) as exc:
        from_table({"profile": {key.name: NOTHING}}, "cfg")
    assert str(exc.value) == f"cfg: profile.{key.name}: expected {key.expected}"


@pytest.mark.parametrize("key", [k for k in PARTITION_TABLE if k.name not in OWN_MESSAGE],
                         ids=lambda k: k.name)
def test_a_refused_partition_value_says_what_the_table_expects(key):
    with pytest.raises(ConfigError) as exc:
        from_table({"profile": {"partitions": {"gpu": {key.name: NOTHING}}}}, "cfg")
    assert str(exc.value) == f"cfg: profile.partitions.gpu.{key.name}: expected {key.expected}"


def test_keys_with_their_own_messages():
    with pytest.raises(ConfigError, match=r"profile\.slurm-version: expected a string such as "
                       r"\"22\.05\" \(quoted: TOML reads 22\.05 as a float\)"):
        from_table({"profile": {"slurm-version": 22.05}}, "cfg")
    with pytest.raises(ConfigError, match=r"'22\.13' is not a Slurm release"):
        from_table({"profile": {"slurm-version": "22.13"}}, "cfg")
    with pytest.raises(ConfigError, match=r"derived: 'max-time' is not a derived key "
                       r"\(gpus-per-node, mem-per-node\)"):
        from_table({"profile": {"partitions": {"g": {"derived": ["max-time"]}}}}, "cfg")


def test_accepted_values_are_read_as_before():
    """One value of every key, read into the profile (the fields the rules use)."""
    p = from_table({"profile": {
        "slurm-version": "22.05", "pyxis": "v0.20", "gpus-per-node": 8,
        "gpu-arch": {"h100": "Hopper"}, "shared-prefixes": ["/lustre"], "megatron-core": "0.13",
        "enforce-part-limits": "no", "enroot": "v3.5", "ip-local-port-range": [1024, 65000],
        "constrain-devices": True, "max-array-size": 0,
        "partitions": {"gpu": {"max-time": "2-00:00:00", "max-nodes": 4, "total-nodes": 8,
                               "gpus-per-node": 8, "mem-per-node": 512000, "default": True,
                               "exclusive": "user", "gpu-type": "h100", "gpu-arch": "HOPPER",
                               "features": ["ib"], "derived": ["mem-per-node"]},
                       "cpu": {"max-time": "UNLIMITED", "gpu-types": []}}}}, "cfg").profile
    assert (p.slurm_version, p.pyxis, p.gpus_per_node, p.gpu_arch, p.shared_prefixes) == \
        ("22.05", "v0.20", 8, {"h100": "hopper"}, ("/lustre",))
    assert (p.megatron_core, p.enforce_part_limits, p.enroot, p.ip_local_port_range) == \
        ("0.13", "NO", "3.5", (1024, 65000))
    assert (p.constrain_devices, p.max_array_size) == (True, 0)
    gpu, cpu = p.partitions["gpu"], p.partitions["cpu"]
    assert (gpu.max_time, gpu.max_time_text, gpu.max_nodes, gpu.total_nodes) == \
        (172800, "2-00:00:00", 4, 8)
    assert (gpu.gpus_per_node, gpu.mem_per_node, gpu.default, gpu.exclusive) == \
        (8, 512000, True, "user")
    assert (gpu.gpu_type, gpu.gpu_types, gpu.gpu_arch, gpu.features, gpu.derived) == \
        ("h100", ("h100",), "hopper", ("ib",), ("mem-per-node",))
    assert (cpu.max_time, cpu.max_time_text, cpu.gpu_types) == (None, None, ())
