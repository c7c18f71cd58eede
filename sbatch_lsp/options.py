"""Option tables (sbatch, srun, pyxis) and getopt-style name resolution.

The tables are the package copies of ``shared/data/*.json`` (see data/README in the repository).
Facts encoded here: getopt_long accepts any unique prefix of a long option, an exact match wins,
and an ambiguous prefix is fatal (slurm-facts.md §2); aliases that share one getopt value
(``--cluster``/``--clusters``, ``--tasks-per-node``/``--ntasks-per-node``) are not ambiguous
with each other (glibc getopt_long compares has_arg/flag/val).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache

NEWEST_RELEASE = "26.05"

#: Hidden aliases that getopt treats as the same option (slurm_opt.c).
ALIASES = {"cluster": "clusters", "tasks-per-node": "ntasks-per-node"}

#: Options whose argument changed between releases: name -> (first release with the table's
#: ``arg``, the ``arg`` before it). Read from ``.has_arg`` in src/common/slurm_opt.c at every
#: x.y.0 tag from 19.05 (the JSON table holds master's): 22.05 refuses ``--requeue=expedite``
#: ("doesn't allow an argument") and accepts ``--get-user-env=10L``.
ARG_CHANGED = {"requeue": ("25.11", "none"), "get-user-env": ("25.05", "optional")}

#: srun-only options (slurm-facts.md §7.1), name -> takes a value ("required"/"optional"/"none").
SRUN_ONLY = {
    "mpi": "required", "pty": "optional", "label": "none", "kill-on-bad-exit": "optional",
    "overlap": "none", "exact": "none", "whole": "none", "cpu-bind": "required",
    "cpu_bind": "required", "multi-prog": "none", "unbuffered": "none", "het-group": "required",
    "pack-group": "required", "jobid": "required", "no-allocate": "none", "relative": "required",
    "prolog": "required", "epilog": "required", "task-prolog": "required",
    "task-epilog": "required", "bcast": "optional", "bcast-exclude": "required",
    "compress": "optional", "send-libs": "optional", "accel-bind": "required",
    "preserve-env": "none", "quit-on-interrupt": "none", "disable-status": "none",
    "threads": "required", "treewidth": "required", "async": "none",
    "wait-for-children": "none", "external-launcher": "none", "slurmd-debug": "required",
    "msg-timeout": "required", "debugger-test": "none", "ignore-signals": "none",
    "interactive": "none", "immediate": "optional", "x11": "optional", "wait": "required",
}
#: srun short options and whether they take a value (srun.1).
SRUN_SHORT = {
    "A": True, "B": True, "C": True, "D": True, "G": True, "I": False, "J": True, "K": False,
    "L": True, "M": True, "N": True, "O": False, "Q": False, "S": True, "T": True, "W": True,
    "X": False, "Z": False, "b": True, "c": True, "d": True, "e": True, "h": False, "i": True,
    "k": False, "l": False, "m": True, "n": True, "o": True, "p": True, "q": False, "r": True,
    "s": False, "t": True, "u": False, "v": False, "w": True, "x": True, "E": False, "H": False,
    "V": False,
}


@lru_cache(maxsize=256)  # (asked once per step of a script: the profile's release)
def version_key(version: str) -> tuple[int, int]:
    """``"22.05"`` -> (22, 5); ``"<=14.03"`` -> (14, 3); ``"master"`` -> (99, 0).

    Raises ValueError for anything else.
    """
    v = version.strip().lstrip("<=").lstrip("v")
    if v == "master":
        return (99, 0)
    parts = v.split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        raise ValueError(f"not a Slurm version: {version!r} (expected e.g. \"22.05\")")
    return int(parts[0]), int(parts[1])


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class Option:
    """One option of a command. ``arg`` is ``"none"``, ``"required"`` or ``"optional"``."""

    long: str
    short: str | None
    arg: str
    since: str = "<=14.03"
    removed_in: str | None = None
    absent_in: tuple[str, ...] = ()
    ignored_in_batch_script: bool = False
    also_srun: bool = True
    arg_format: str | None = None
    kind: str = "sbatch"  # "sbatch", "srun" or "pyxis"

    def present_in(self, version: str) -> bool:
        """Whether the option exists in Slurm ``version`` (per sbatch_options.json)."""
        v = version_key(version)
        if version_key(self.since) > v:
            return False
        if self.removed_in and version_key(self.removed_in) <= v:
            return False
        return version not in self.absent_in


def _load(name: str) -> dict:
    """A table of the package's data/ folder (importlib.resources: imported on the first load,
    not by the configuration, which needs only :func:`version_key`)."""
    from importlib import resources

    return json.loads(resources.files("sbatch_lsp").joinpath("data").joinpath(name).read_text("utf-8"))


@lru_cache(maxsize=1)
def sbatch_options() -> dict[str, Option]:
    """All sbatch options ever (145), by long name."""
    table = {}
    for o in _load("sbatch_options.json")["options"]:
        table[o["long"]] = Option(
            long=o["long"], short=o["short"], arg=o["arg"], since=o["since_version"],
            removed_in=o["removed_in"], absent_in=tuple(o["absent_in"] or ()),
            ignored_in_batch_script=o["ignored_in_batch_script"], also_srun=o["also_srun"],
            arg_format=o["arg_format"])
    return table


@lru_cache(maxsize=1)
def pyxis_options() -> dict[str, Option]:
    """pyxis (SPANK) options by long name; ``since`` holds the pyxis version (``"0.12.0"``)."""
    table = {}
    for o in _load("pyxis_options.json")["options"]:
        table[o["long"]] = Option(long=o["long"], short=None, arg=o["arg"],
                                  since=o["sbatch_since_pyxis"].lstrip("v"),
                                  arg_format=o.get("arg_format"), kind="pyxis")
    return table


@lru_cache(maxsize=1)
def slurm_env_vars() -> dict[str, dict]:
    """The SLURM_* output variables (slurm_env_vars.json) by name."""
    return {v["name"]: v for v in _load("slurm_env_vars.json")["variables"]}


@lru_cache(maxsize=1)
def srun_options() -> dict[str, Option]:
    """Options srun accepts: the shared sbatch/srun ones, srun-only ones, and pyxis ones."""
    table = {k: o for k, o in sbatch_options().items() if o.also_srun and not o.removed_in}
    for name, arg in SRUN_ONLY.items():
        table[name] = Option(long=name, short=None, arg=arg, kind="srun")
    for name, o in pyxis_options().items():
        table[name] = o
    return table


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class Resolution:
    """Result of resolving a long option name typed by the user.

    ``option`` is set when getopt would accept the name; ``abbreviated`` when it matched as a
    unique prefix; ``candidates`` lists the possibilities of an ambiguous prefix.
    """

    typed: str
    option: Option | None
    abbreviated: bool = False
    candidates: tuple[str, ...] = ()

    @property
    def canonical(self) -> str | None:
        if self.option is None:
            return None
        return ALIASES.get(self.option.long, self.option.long)


def resolve_long(name: str, table: dict[str, Option]) -> Resolution:
    """Resolve ``name`` (without ``--``) the way getopt_long does against ``table``."""
    if name in table:
        return Resolution(name, table[name])
    matches = [k for k in table if k.startswith(name)] if name else []
    if not matches:
        return Resolution(name, None)
    canon = {ALIASES.get(k, k) for k in matches}
    if len(canon) == 1:
        target = canon.pop()
        return Resolution(name, table.get(target) or table[matches[0]], abbreviated=True)
    return Resolution(name, None, candidates=tuple(sorted(matches)))


def short_table(table: dict[str, Option]) -> dict[str, Option]:
    """Short letter -> option for the options of ``table`` that have one."""
    return {o.short: o for o in table.values() if o.short}


@lru_cache(maxsize=16)
def sbatch_table(version: str, pyxis: bool | str | None) -> dict[str, Option]:
    """The options sbatch accepts in ``version``; pyxis options join when the plugin is loaded
    for sbatch (``pyxis`` true, or a version >= 0.12.0; slurm-facts.md §7.2). The table is
    cached and shared: callers must not change it."""
    table = {k: o for k, o in sbatch_options().items() if o.present_in(version)}
    for name, (since, before) in ARG_CHANGED.items():
        if name in table and version_key(version) < version_key(since):
            table[name] = replace(table[name], arg=before)
    if pyxis_enabled_for_sbatch(pyxis):
        for k, o in pyxis_options().items():
            if pyxis is True or _pyxis_key(str(pyxis)) >= _pyxis_key(o.since):
                table[k] = o
    return table


@lru_cache(maxsize=16)
def sbatch_short_table(version: str, pyxis: bool | str | None) -> dict[str, Option]:
    """``short_table(sbatch_table(version, pyxis))``, built once per (version, pyxis): the
    directive reader asks for it on every script. Cached and shared: callers must not change
    it."""
    return short_table(sbatch_table(version, pyxis))


def _pyxis_key(v: str) -> tuple[int, ...]:
    parts = []
    for p in v.lstrip("v").split("."):
        parts.append(int(p) if p.isdigit() else 0)
    return tuple(parts + [0] * (3 - len(parts)))


def pyxis_enabled_for_sbatch(pyxis: bool | str | None) -> bool:
    """True when the profile says pyxis handles sbatch options (``true`` or version >= 0.12)."""
    if pyxis is None or pyxis is False:
        return False
    if pyxis is True:
        return True
    return _pyxis_key(str(pyxis)) >= (0, 12, 0)


@lru_cache(maxsize=1)
def per_task_variables() -> frozenset[str]:
    """Variables whose value differs between the tasks or nodes of a step, and which the batch
    shell sees as task 0 / node 0 (or not at all): SB301's list (slurm-facts.md §6.1, §6.3).

    Node resource counts (``SLURM_CPUS_ON_NODE``, ``SLURM_GPUS_ON_NODE``) and step-overwritten
    job counts (``SLURM_NNODES``, ``SLURM_NTASKS``) are left out: on homogeneous allocations the
    batch shell's value is the same one every task sees.
    """
    names = {n for n, v in slurm_env_vars().items() if v["scope"] == "per_task"}
    names |= {"SLURM_NODEID", "SLURMD_NODENAME", "SLURM_GTIDS", "SLURM_TOPOLOGY_ADDR",
              "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_STEP_NODELIST", "SLURM_STEP_NUM_NODES",
              "SLURM_STEP_NUM_TASKS", "SLURM_STEP_TASKS_PER_NODE", "SLURM_STEP_GPUS",
              "SLURM_LOCALID", "SLURM_PROCID"}
    return frozenset(names)


@lru_cache(maxsize=1)
def option_docs() -> dict[str, str]:
    """One-line descriptions of the sbatch and pyxis options, in our own words (option_docs.json),
    by long name; for hover and completion."""
    return _load("option_docs.json")["options"]
