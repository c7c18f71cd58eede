"""Configuration: ``[tool.sbatch-lint]`` in pyproject.toml or the same keys in .sbatch-lint.toml,
found upward from the linted file; ``extend = "PATH"`` pulls in a shared site profile.

Keys (DESIGN.md "Configuration"): select, ignore, extend-select, severity, fail-on, profile
(slurm-version, pyxis, gpus-per-node, gpu-arch, shared-prefixes, megatron-core, enroot,
ip-local-port-range, constrain-devices), extend; and
for adoption in a repository: exclude, extend-exclude, per-file-ignores (gitignore-style patterns relative to the
file that writes them, :mod:`sbatch_lsp.patterns`) and required-version (a PEP 440 specifier
the running sbatch-lint must satisfy). Each file is linted with its nearest configuration file.
The profile's keys are read through one table each (:data:`PROFILE_TABLE`,
:data:`PARTITION_TABLE`): the reader, the "expected …" of its error and its documentation line,
which docs/configuration-keys.md is generated from.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from .config_files import OWN_FILE, candidates, may_hold_own_table
from .severity import Severity
from .options import NEWEST_RELEASE, version_key

# tomllib, the patterns and the value readers are imported where they are used: a run without a
# configuration file (or with one holding no patterns and no partition) never needs them.
# typing.TYPE_CHECKING without importing typing:
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .patterns import PatternSet

TOP_KEYS = {"select", "ignore", "extend-select", "severity", "fail-on", "profile", "extend",
            "exclude", "extend-exclude", "per-file-ignores", "required-version"}
#: keys whose patterns are relative to the configuration file: not in editor settings
FILE_KEYS = ("exclude", "extend-exclude", "per-file-ignores")
#: slurm.conf EnforcePartLimits values (NO: a job over a partition limit is accepted and pends)
ENFORCE_PART_LIMITS = {"ALL", "ANY", "NO"}
#: Linux's default net.ipv4.ip_local_port_range (Documentation/networking/ip-sysctl.rst)
EPHEMERAL_PORTS = (32768, 60999)
#: the Megatron-Core releases the framework rules know (core_v0.4.0 ... core_v0.19.0)
MEGATRON_CORE_RELEASES = ((0, 4), (0, 19))
ARCHS = {"ampere", "hopper", "blackwell"}
CODE = re.compile(r"^SB\d{0,3}$")
#: Slurm's release months since 17.02 (17.02, 17.11, 18.08, 19.05, ..., 25.11, 26.05)
RELEASE_MONTHS = {2, 5, 8, 11}
#: a ``[tool.sbatch-lint]`` header (or a sub-table of it) in a pyproject.toml's text
OWN_TABLE = re.compile(r"^\s*\[\s*tool\s*\.\s*[\"']?sbatch-lint\b", re.M)


class ConfigError(ValueError):
    """A configuration file or setting is invalid; the message names the file and the key."""


@dataclass(frozen=True)
class Partition:
    """One partition of the site (``[profile.partitions.NAME]``).

    ``max_time`` seconds (None: unlimited or unknown), ``max_nodes``/``total_nodes`` counts,
    ``gpus_per_node`` the GPUs of its largest node, ``gpu_types`` the GRES types of its nodes'
    GPUs (empty: untyped GPUs; None: unknown), ``gpu_arch`` ``ampere|hopper|blackwell``,
    ``mem_per_node`` megabytes (RealMemory of its largest node), ``features`` its nodes'
    AvailableFeatures (empty: none; None: unknown), ``exclusive`` True
    (OverSubscribe=EXCLUSIVE), ``"user"`` (ExclusiveUser=YES) or False, ``derived`` the keys
    computed from the partition's TRES sum, or from the records of only some of its nodes.
    """

    max_time: int | None = None
    max_time_text: str | None = None
    max_nodes: int | None = None
    total_nodes: int | None = None
    default: bool = False
    exclusive: bool | str = False
    gpus_per_node: int | None = None
    gpu_type: str | None = None
    gpu_types: tuple[str, ...] | None = None
    gpu_arch: str | None = None
    mem_per_node: int | None = None
    features: tuple[str, ...] | None = None
    derived: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    """What the target cluster looks like.

    ``slurm_version`` like ``"22.05"``; ``pyxis`` None (unknown), False, True or a version
    string; ``gpus_per_node`` an int or None; ``gpu_arch`` partition -> arch; ``shared_prefixes``
    path prefixes visible on every node (``/lustre``); ``megatron_core`` the Megatron-Core
    release the jobs run (``"0.13"``), None when unknown; ``enroot`` the enroot release
    (``"3.5"``), None when unknown; ``ip_local_port_range`` the kernel's ephemeral port range;
    ``constrain_devices``: the site's cgroup.conf has ``ConstrainDevices=yes``, so a step sees
    only the GPUs Slurm gave it; None when the profile does not say; ``home_shared``: the
    users' home directories are one file system every compute node mounts (True), each node's
    own (False), or not said (None).
    """

    slurm_version: str = NEWEST_RELEASE
    pyxis: bool | str | None = None
    gpus_per_node: int | None = None
    gpu_arch: dict = field(default_factory=dict)
    shared_prefixes: tuple[str, ...] = ()
    megatron_core: str | None = None
    #: the site's partitions by name (``profile import`` writes them); empty when unknown
    partitions: dict[str, Partition] = field(default_factory=dict)
    #: slurm.conf EnforcePartLimits (``ALL``, ``ANY``, ``NO``), None when unknown
    enforce_part_limits: str | None = None
    #: the enroot release the nodes run (``"3.5"``), None when unknown
    enroot: str | None = None
    #: the nodes' ``net.ipv4.ip_local_port_range`` (first, last), both inclusive
    ip_local_port_range: tuple[int, int] = EPHEMERAL_PORTS
    #: cgroup.conf ConstrainDevices: a step sees only the GPUs Slurm gave it (None: unknown)
    constrain_devices: bool | None = None
    #: slurm.conf MaxArraySize (array indices must be below it; 0 disables arrays), None when
    #: unknown (Slurm's default is 1001)
    max_array_size: int | None = None
    #: whether the compute nodes share the users' home directories (None: unknown; SB401)
    home_shared: bool | None = None

    def default_partition(self) -> str | None:
        """The partition marked ``default = true``, if exactly one is."""
        names = [n for n, p in self.partitions.items() if p.default]
        return names[0] if len(names) == 1 else None


@dataclass(frozen=True)
class Config:
    """Rule selection, severities, the failure threshold and the cluster profile."""

    select: frozenset[str] | None = None
    ignore: frozenset[str] = frozenset()
    extend_select: frozenset[str] = frozenset()
    severity: dict = field(default_factory=dict)
    fail_on: Severity = Severity.WARNING
    profile: Profile = field(default_factory=Profile)
    source: str | None = None
    #: files and folders not linted (``exclude`` + ``extend-exclude``)
    exclude: tuple[PatternSet, ...] = ()
    #: ``per-file-ignores``: (patterns, code prefixes) in file order
    per_file_ignores: tuple[tuple[PatternSet, frozenset[str]], ...] = ()
    #: the per-file ignores that matched the file being linted (:meth:`for_path`)
    file_ignore: frozenset[str] = frozenset()
    required_version: str | None = None
    #: the files ``extend`` pulled in (resolved paths), nearest first
    extends: tuple[str, ...] = ()

    def excluded(self, path: str | Path, is_dir: bool = False) -> bool:
        """Whether ``exclude``/``extend-exclude`` leave out ``path`` (a file, or a folder when
        ``is_dir``); a file inside an excluded folder is excluded too."""
        return any(ps.matches(path, is_dir) for ps in self.exclude)

    def for_path(self, path: str | Path) -> Config:
        """This configuration for linting ``path``: the codes of every matching
        ``per-file-ignores`` pattern switched off (whatever the selection says)."""
        codes = frozenset(c for ps, cs in self.per_file_ignores if ps.matches(path) for c in cs)
        return replace(self, file_ignore=codes) if codes != self.file_ignore else self

    def enabled(self, code: str) -> bool:
        """Whether rule ``code`` runs: prefixes (``SB4``) select families, like ruff; a
        per-file ignore wins over any selection. Memoised by the selection (lint() asks
        once per rule per file)."""
        return _enabled(code, self.select, self.extend_select, self.ignore, self.file_ignore)

    def enabled_among(self, codes: tuple[str, ...]) -> tuple[str, ...]:
        """The codes of ``codes`` that run (:meth:`enabled`), in their order. Memoised by the
        codes and the selection (lint() asks once per file)."""
        return _enabled_among(codes, self.select, self.extend_select, self.ignore,
                              self.file_ignore)


@lru_cache(maxsize=4096)
def _enabled(code: str, select: frozenset[str] | None, extend_select: frozenset[str],
             ignore: frozenset[str], file_ignore: frozenset[str]) -> bool:
    """:meth:`Config.enabled` for one selection."""
    if any(code.startswith(p) for p in file_ignore):
        return False

    def match(patterns) -> int:
        best = -1
        for p in patterns:
            if code.startswith(p):
                best = max(best, len(p))
        return best

    sel = match(select) if select is not None else 0
    sel = max(sel, match(extend_select))
    ign = match(ignore)
    return sel >= 0 and sel >= ign if ign >= 0 else sel >= 0


@lru_cache(maxsize=256)
def _enabled_among(codes: tuple[str, ...], select: frozenset[str] | None,
                   extend_select: frozenset[str], ignore: frozenset[str],
                   file_ignore: frozenset[str]) -> tuple[str, ...]:
    """:meth:`Config.enabled_among` for one selection."""
    return tuple(c for c in codes if _enabled(c, select, extend_select, ignore, file_ignore))


def parse_codes(value, where: str) -> frozenset[str]:
    """Rule codes, prefixes or rule names from a string or list (``ALL`` = every rule), as codes
    and prefixes. ConfigError names ``where`` for a value that is not a list of strings and for
    an entry that names no rule (``SB99``, ``SB999``, a misspelt name): such an entry would
    silently select or ignore nothing."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of rule codes such as [\"SB201\", \"SB4\"]")
    from .rules import RULES, code_of  # loaded only when a configuration names codes

    out = set()
    for item in value:
        v = item.strip().upper()
        if v == "ALL":
            v = "SB"
        if not CODE.match(v):
            v = code_of(item)
            if not CODE.match(v):
                raise ConfigError(f"{where}: {item.strip()!r} is not a rule code or name "
                                  "(SBnnn, a prefix such as SB4, or a name such as "
                                  "torchrun-per-task)")
        if not any(code.startswith(v) for code in RULES):
            raise ConfigError(f"{where}: {item.strip()!r} matches no rule "
                              "(see sbatch-lint --list-rules)")
        out.add(v)
    return frozenset(out)


def _level(value, where: str) -> Severity:
    """A severity from a configuration value (a string); ConfigError names ``where``."""
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected one of \"error\", \"warning\", \"info\", "
                          f"\"hint\" (a string), not {type(value).__name__} {value!r}")
    try:
        return Severity.parse(value)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def from_table(table: dict, where: str, base: Config | None = None,
               folder: Path | None = None) -> Config:
    """Build a Config from a parsed TOML table (``where`` names it in errors); ``folder`` is
    the configuration file's (None for editor settings, which may not hold path patterns)."""
    cfg = base or Config()
    unknown = set(table) - TOP_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} "
                          f"(known: {', '.join(sorted(TOP_KEYS))})")
    if "required-version" in table:
        cfg = replace(cfg, required_version=check_required_version(
            table["required-version"], f"{where}: required-version"))
    cfg = _file_patterns(table, where, cfg, folder)
    if "select" in table:
        cfg = replace(cfg, select=parse_codes(table["select"], f"{where}: select"))
    if "ignore" in table:
        cfg = replace(cfg, ignore=cfg.ignore | parse_codes(table["ignore"], f"{where}: ignore"))
    if "extend-select" in table:
        cfg = replace(cfg, extend_select=cfg.extend_select
                      | parse_codes(table["extend-select"], f"{where}: extend-select"))
    if "severity" in table:
        sev = table["severity"]
        if not isinstance(sev, dict):
            raise ConfigError(f"{where}: severity: expected a table such as {{SB204 = \"error\"}}")
        from .rules import RULES, code_of

        out = dict(cfg.severity)
        for typed, level in sev.items():
            code = code_of(typed)
            if code not in RULES:
                raise ConfigError(f"{where}: severity: {typed!r} is not a rule code or name "
                                  "(one rule per key, e.g. SB204 or gpu-count-mismatch; see "
                                  "sbatch-lint --list-rules)")
            out[code] = _level(level, f"{where}: severity.{typed}")
        cfg = replace(cfg, severity=out)
    if "fail-on" in table:
        cfg = replace(cfg, fail_on=_level(table["fail-on"], f"{where}: fail-on"))
    if "profile" in table:
        cfg = replace(cfg, profile=_profile(table["profile"], f"{where}: profile", cfg.profile))
    return cfg


def check_required_version(value, where: str) -> str:
    """The ``required-version`` specifier (PEP 440, e.g. ``">=0.1,<0.2"``; a bare version
    means ``==``) when the running sbatch-lint satisfies it (pre-releases included); a
    ConfigError that names both versions otherwise, or when it is not a specifier."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    from . import __version__

    text = value.strip() if isinstance(value, str) else ""
    try:
        spec = SpecifierSet(text)
    except InvalidSpecifier:
        try:
            spec = SpecifierSet(f"=={Version(text)}")
        except InvalidVersion:
            spec = None
    if not text or spec is None:
        raise ConfigError(f"{where}: expected a PEP 440 version specifier such as "
                          f"\">=0.1,<0.2\" or \"0.1.0\", not {value!r}")
    if not spec.contains(__version__, prereleases=True):
        raise ConfigError(f"{where}: this project requires sbatch-lint {spec}, but this is "
                          f"sbatch-lint {__version__}: install a version that satisfies it (from a "
                          "clone or wheel of that release, README \"Set up\") so that editor, "
                          "pre-commit and CI agree")
    return str(spec)


def _file_patterns(table: dict, where: str, cfg: Config, folder: Path | None) -> Config:
    """``exclude`` (replaces what ``extend`` brought), ``extend-exclude`` (adds to it) and
    ``per-file-ignores`` (a table pattern -> codes; adds to the base's), anchored at
    ``folder``."""
    present = [k for k in FILE_KEYS if k in table]
    if not present:
        return cfg
    if folder is None:
        raise ConfigError(f"{where}: {present[0]}: set it in a configuration file "
                          "(.sbatch-lint.toml or pyproject.toml): its patterns are relative to "
                          "that file's folder")

    here: Path = folder
    from .patterns import anchored, check_patterns

    def patterns(value, key: str) -> PatternSet:
        try:
            return anchored(here, check_patterns(value, f"{where}: {key}"))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    if "exclude" in table:
        cfg = replace(cfg, exclude=(patterns(table["exclude"], "exclude"),))
    if "extend-exclude" in table:
        cfg = replace(cfg, exclude=cfg.exclude + (patterns(table["extend-exclude"],
                                                           "extend-exclude"),))
    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise ConfigError(f"{where}: per-file-ignores: expected a table such as "
                              "{\"legacy/*.sbatch\" = [\"SB201\"]}")
        entries = tuple((patterns([pat], "per-file-ignores"),
                         parse_codes(codes, f"{where}: per-file-ignores.{pat}"))
                        for pat, codes in pfi.items())
        cfg = replace(cfg, per_file_ignores=cfg.per_file_ignores + entries)
    return cfg


# -- the profile's keys: one table each (reader, the "expected …" of its error, its doc) --------

class _Refused(ValueError):
    """A key's reader refuses a value with a message of its own (after ``WHERE.KEY: ``)."""


if TYPE_CHECKING:
    #: a reader: (the TOML value, the dataclass being built, the table's ``where``) -> the
    #: fields it sets, or None to refuse the value with the key's ``expected`` text
    Reader = Callable[[Any, Any, str], "dict[str, Any] | None"]


@dataclass(frozen=True)
class Key:
    """One key of ``[profile]`` or ``[profile.partitions.NAME]``: its TOML ``name``, what a
    value must be (``expected``: the error says ``WHERE.NAME: expected …``), the ``doc`` line
    docs/configuration-keys.md shows, and its ``read``er."""

    name: str
    expected: str
    doc: str
    read: Reader


def _whole_number(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _whole(attr: str, low: int = 0, high: int | None = None) -> Reader:
    """A whole number in ``low``..``high`` (inclusive) stored as ``attr``."""
    def read(v: Any, _: Any, __: str) -> dict[str, Any] | None:
        ok = _whole_number(v) and v >= low and (high is None or v <= high)
        return {attr: v} if ok else None
    return read


def _flag(attr: str, also: tuple[str, ...] = ()) -> Reader:
    """true or false (or one of the strings ``also``) stored as ``attr``."""
    def read(v: Any, _: Any, __: str) -> dict[str, Any] | None:
        return {attr: v} if isinstance(v, bool) or v in also else None
    return read


def _release(attr: str, strip_v: bool = False) -> Reader:
    """A release string (``3.5``, ``v0.20``, ``4.0.1``) stored as ``attr``."""
    def read(v: Any, _: Any, __: str) -> dict[str, Any] | None:
        if not isinstance(v, str) or not re.fullmatch(r"v?\d+(\.\d+){0,2}", v):
            return None
        return {attr: v.lstrip("v") if strip_v else v}
    return read


def _string_list(attr: str) -> Reader:
    """A list of non-empty strings stored as a tuple."""
    def read(v: Any, _: Any, __: str) -> dict[str, Any] | None:
        ok = isinstance(v, list) and all(isinstance(x, str) and x for x in v)
        return {attr: tuple(v)} if ok else None
    return read


def _slurm_version(v: Any, _: Any, __: str) -> dict[str, Any] | None:
    if not isinstance(v, str):
        raise _Refused(f"expected a string such as \"22.05\" (quoted: TOML reads {v!r} as a "
                       f"{type(v).__name__})")
    try:
        major, month = version_key(v)
    except ValueError as exc:
        raise _Refused(str(exc)) from None
    if month not in RELEASE_MONTHS or (major, month) > version_key(NEWEST_RELEASE):
        raise _Refused(f"{v!r} is not a Slurm release the option table knows (releases are "
                       f"YY.02, .05, .08 or .11, up to {NEWEST_RELEASE})")
    return {"slurm_version": v}


def _pyxis(v: Any, current: Any, where: str) -> dict[str, Any] | None:
    return {"pyxis": v} if isinstance(v, bool) else _release("pyxis")(v, current, where)


def _gpu_arch_table(v: Any, _: Any, __: str) -> dict[str, Any] | None:
    if not isinstance(v, dict) or not all(isinstance(a, str) and a.lower() in ARCHS
                                          for a in v.values()):
        return None
    return {"gpu_arch": {str(k): str(a).lower() for k, a in v.items()}}


def _prefixes(v: Any, _: Any, __: str) -> dict[str, Any] | None:
    ok = isinstance(v, list) and all(isinstance(x, str) and x.startswith("/") for x in v)
    return {"shared_prefixes": tuple(v)} if ok else None


def _megatron_core(v: Any, _: Any, __: str) -> dict[str, Any] | None:
    m = re.fullmatch(r"(\d+)\.(\d+)(\.\d+)?", v) if isinstance(v, str) else None
    low, high = MEGATRON_CORE_RELEASES
    if m is None or not low <= (int(m.group(1)), int(m.group(2))) <= high:
        return None
    return {"megatron_core": v}


def _enforce(v: Any, _: Any, __: str) -> dict[str, Any] | None:
    ok = isinstance(v, str) and v.upper() in ENFORCE_PART_LIMITS
    return {"enforce_part_limits": v.upper()} if ok else None


def _port_range(v: Any, _: Any, __: str) -> dict[str, Any] | None:
    ok = isinstance(v, list) and len(v) == 2 and all(_whole_number(x) for x in v) and \
        1 <= v[0] <= v[1] <= 65535
    return {"ip_local_port_range": (v[0], v[1])} if ok else None


def _partitions(v: Any, current: Profile, where: str) -> dict[str, Any] | None:
    if not isinstance(v, dict):
        return None
    parts = dict(current.partitions)
    for name, t in v.items():
        parts[str(name)] = _partition(t, f"{where}.partitions.{name}",
                                      parts.get(str(name), Partition()))
    return {"partitions": parts}


_MC_LOW, _MC_HIGH = MEGATRON_CORE_RELEASES
#: ``[profile]``: in the order they are read (the first refused key is the one reported)
PROFILE_TABLE: tuple[Key, ...] = (
    Key("slurm-version", "a string such as \"22.05\"",
        "the Slurm release of the cluster (YY.MM); default: the newest release in the option "
        "table (SB112)", _slurm_version),
    Key("pyxis", "true, false or a version such as \"0.20\"",
        "whether the pyxis SPANK plugin is loaded (a version says yes); default unknown "
        "(SB111)", _pyxis),
    Key("gpus-per-node", "a whole number", "GPUs on each node when no partition says",
        _whole("gpus_per_node")),
    Key("gpu-arch", "a table partition = \"ampere\"|\"hopper\"|\"blackwell\"",
        "the GPU architecture by partition name", _gpu_arch_table),
    Key("shared-prefixes", "a list of absolute paths",
        "path prefixes every node sees (/lustre, /scratch) (SB401, SB407)", _prefixes),
    Key("megatron-core", f"a Megatron-Core release as a string, \"{_MC_LOW[0]}.{_MC_LOW[1]}\" to "
        f"\"{_MC_HIGH[0]}.{_MC_HIGH[1]}\" (e.g. \"0.13\")",
        "the Megatron-Core release the jobs run (SB403, SB6xx)", _megatron_core),
    Key("enforce-part-limits", "\"ALL\", \"ANY\" or \"NO\" (slurm.conf EnforcePartLimits)",
        "slurm.conf EnforcePartLimits: whether a job over a partition limit is refused or "
        "pends (SB7xx)", _enforce),
    Key("partitions", "a table of partitions ([profile.partitions.NAME])",
        "the site's partitions, one table each (keys below; `profile import` writes them)",
        _partitions),
    Key("enroot", "an enroot release as a string such as \"3.5\" or \"4.0.1\"",
        "the enroot release of the nodes (SB405)", _release("enroot", strip_v=True)),
    Key("ip-local-port-range", "[first, last], two port numbers as in "
        "net.ipv4.ip_local_port_range (e.g. [32768, 60999])",
        "the nodes' net.ipv4.ip_local_port_range (SB220); default [32768, 60999]",
        _port_range),
    Key("constrain-devices", "true or false (the site's cgroup.conf ConstrainDevices)",
        "cgroup.conf ConstrainDevices: a step sees only the GPUs Slurm gave it; default "
        "unknown (SB203)", _flag("constrain_devices")),
    Key("max-array-size", "a whole number from 0 to 4000001 (slurm.conf MaxArraySize, e.g. 1001)",
        "slurm.conf MaxArraySize (SB224); default unknown (Slurm's default is 1001)",
        _whole("max_array_size", 0, 4_000_001)),
    Key("home-shared", "true or false (whether every compute node mounts the same home "
        "directories)", "whether the nodes share the users' home directories: true silences "
        "SB401 on a cache left at its ~/.cache default, false makes it an error; default "
        "unknown (a warning)", _flag("home_shared")),
)


def _max_time(v: Any, _: Any, __: str) -> dict[str, Any] | None:
    from .values import time_seconds

    secs = time_seconds(v) if isinstance(v, str) else None
    if secs is None:
        return None
    return {"max_time": secs if secs >= 0 else None, "max_time_text": v if secs >= 0 else None}


def _gpu_type(v: Any, current: Partition, _: str) -> dict[str, Any] | None:
    if not isinstance(v, str) or not v:
        return None
    return {"gpu_type": v, "gpu_types": current.gpu_types if current.gpu_types is not None
            else (v,)}


def _part_arch(v: Any, _: Any, __: str) -> dict[str, Any] | None:
    return {"gpu_arch": v.lower()} if isinstance(v, str) and v.lower() in ARCHS else None


def _derived(v: Any, current: Any, where: str) -> dict[str, Any] | None:
    got = _string_list("derived")(v, current, where)
    if got is None:
        raise _Refused("expected a list of strings")
    bad = [k for k in got["derived"] if k not in DERIVED_KEYS]
    if bad:
        raise _Refused(f"{bad[0]!r} is not a derived key ({', '.join(DERIVED_KEYS)})")
    return got


#: the partition keys a profile may mark as derived (computed, not read from every node)
DERIVED_KEYS = ("gpus-per-node", "mem-per-node")
#: ``[profile.partitions.NAME]``, in the order they are read
PARTITION_TABLE: tuple[Key, ...] = (
    Key("max-time", "a Slurm time as a string, such as \"2-00:00:00\", \"48:00:00\" or "
        "\"UNLIMITED\"", "MaxTime (SB702)", _max_time),
    Key("max-nodes", "a node count (a whole number)", "MaxNodes: the most nodes one job may "
        "take (SB703)", _whole("max_nodes")),
    Key("total-nodes", "a node count (a whole number)", "TotalNodes: the partition's nodes (SB703)",
        _whole("total_nodes")),
    Key("gpus-per-node", "a GPU count (a whole number)", "the GPUs of its largest node (SB704)",
        _whole("gpus_per_node")),
    Key("mem-per-node", "megabytes (a whole number)", "RealMemory of its largest node, in MB (SB706)",
        _whole("mem_per_node")),
    Key("default", "true or false", "Default=YES: the partition a job without --partition "
        "gets", _flag("default")),
    Key("exclusive", "true, false or \"user\"", "OverSubscribe=EXCLUSIVE (true) or "
        "ExclusiveUser=YES (\"user\")", _flag("exclusive", also=("user",))),
    Key("gpu-type", "a GRES type such as \"h100\"", "the GRES type of its GPUs, when one (SB705)",
        _gpu_type),
    Key("gpu-types", "a list of strings", "the GRES types of its nodes' GPUs ([] for "
        "untyped GPUs) (SB705)", _string_list("gpu_types")),
    Key("gpu-arch", "\"ampere\", \"hopper\" or \"blackwell\"", "its GPUs' architecture",
        _part_arch),
    Key("features", "a list of strings", "its nodes' AvailableFeatures (SB707)",
        _string_list("features")),
    Key("derived", "a list of strings", "the keys computed from the TRES sum or from some of "
        "its nodes only (findings resting on them are warnings)", _derived),
)
PROFILE_KEYS = {k.name for k in PROFILE_TABLE}
#: keys of one ``[profile.partitions.NAME]`` table (``sbatch-lint profile import`` writes them)
PARTITION_KEYS = {k.name for k in PARTITION_TABLE}


def _read_keys(table: Any, where: str, base: Any, keys: tuple[Key, ...]) -> Any:
    """``base`` (a Profile or Partition) with the keys of ``table`` read through ``keys``;
    ConfigError names ``where`` and the key for an unknown key and for a refused value."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table")
    known = {k.name for k in keys}
    unknown = set(table) - known
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} "
                          f"(known: {', '.join(sorted(known))})")
    out = base
    for key in keys:
        if key.name not in table:
            continue
        try:
            fields = key.read(table[key.name], out, where)
        except _Refused as exc:
            raise ConfigError(f"{where}.{key.name}: {exc}") from None
        if fields is None:
            raise ConfigError(f"{where}.{key.name}: expected {key.expected}")
        out = replace(out, **fields)
    return out


def _profile(table: Any, where: str, base: Profile) -> Profile:
    return _read_keys(table, where, base, PROFILE_TABLE)


def _partition(table: Any, where: str, base: Partition) -> Partition:
    """One ``[profile.partitions.NAME]`` table over ``base`` (what ``extend`` brought)."""
    return _read_keys(table, where, base, PARTITION_TABLE)


def keys_markdown() -> str:
    """docs/configuration-keys.md: the profile's and a partition's keys, what each value must
    be and what it means, from the tables the validation reads (``python -m
    sbatch_lsp.config --write docs/configuration-keys.md``)."""
    out = ["# Configuration keys of the profile", "",
           ("Generated from `sbatch_lsp/config.py` (`PROFILE_TABLE`, `PARTITION_TABLE`): "
            "`python -m sbatch_lsp.config --write docs/configuration-keys.md`. A key not "
            "listed is an error naming it, and so is a value that is not what the table says."),
           ""]
    for title, keys in (("`[profile]`", PROFILE_TABLE),
                        ("`[profile.partitions.NAME]`", PARTITION_TABLE)):
        out += [f"## {title}", "", "| key | value | meaning |", "|---|---|---|"]
        out += [f"| `{k.name}` | {k.expected.replace('|', chr(92) + '|')} | "
                f"{k.doc.replace('|', chr(92) + '|')} |" for k in keys]
        out.append("")
    return "\n".join(out)


def _read_toml(path: Path) -> dict:
    import tomllib

    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def load_file(path: Path, seen: tuple[Path, ...] = ()) -> Config:
    """Load a config file (pyproject.toml or .sbatch-lint.toml), following ``extend``."""
    path = path.resolve()
    if path in seen:
        raise ConfigError(f"{path}: extend cycle")
    data = _read_toml(path)
    table = data.get("tool", {}).get("sbatch-lint", {}) if path.name == "pyproject.toml" else data
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.sbatch-lint] must be a table")
    base = None
    extends: tuple[str, ...] = ()
    if "extend" in table:
        ext = table["extend"]
        if not isinstance(ext, str):
            raise ConfigError(f"{path}: extend: expected a path string")
        target = (path.parent / Path(ext).expanduser())
        if not target.is_file():
            raise ConfigError(f"{path}: extend: no such file {str(target)!r}")
        base = load_file(target, seen + (path,))
        extends = (str(target.resolve()), *base.extends)
    cfg = from_table(table, str(path), base, folder=path.parent)
    return replace(cfg, source=str(path), extends=extends)


def find_config(start: Path) -> Path | None:
    """The nearest .sbatch-lint.toml, or pyproject.toml with [tool.sbatch-lint], at or above
    ``start`` (a file or a directory)."""
    d = start if start.is_dir() else start.parent
    for candidate in candidates(str(d.resolve())):
        path = Path(candidate)
        if path.name == OWN_FILE:
            return path
        try:
            text = path.read_bytes().decode()  # (as tomllib.load decodes it)
        except OSError:
            continue
        if _names_own_table(text):
            return path
    return None


def _names_own_table(text: str) -> bool:
    """Whether a pyproject.toml's ``text`` has a ``[tool.sbatch-lint]`` table; broken TOML
    counts when its text names the table (:func:`load_file` then reports the error)."""
    if not may_hold_own_table(text.encode()):
        return False  # the key is not written (nor spelt with escapes): no need to parse
    import tomllib

    try:
        return "sbatch-lint" in tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return OWN_TABLE.search(text) is not None


if __name__ == "__main__":  # pragma: no cover
    import sys

    if sys.argv[1:2] == ["--write"] and len(sys.argv) == 3:
        Path(sys.argv[2]).write_text(keys_markdown(), "utf-8")
    else:
        sys.stdout.write(keys_markdown())
