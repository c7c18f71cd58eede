"""Configuration: ``[tool.sbatch-lint]`` in pyproject.toml or the same keys in .sbatch-lint.toml,
found upward from the linted file; ``extend = "PATH"`` pulls in a shared site profile.

Keys (DESIGN.md "Configuration"): select, ignore, extend-select, severity, fail-on, profile
(slurm-version, pyxis, gpus-per-node, gpu-arch, shared-prefixes, megatron-core, enroot,
ip-local-port-range, constrain-devices), extend; and
for adoption in a repository: exclude, extend-exclude, per-file-ignores (gitignore-style patterns relative to the
file that writes them, :mod:`sbatch_lsp.patterns`) and required-version (a PEP 440 specifier
the running sbatch-lint must satisfy). Each file is linted with its nearest configuration file.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from .diagnostics import Severity
from .options import NEWEST_RELEASE, version_key
from .patterns import PatternSet, anchored, check_patterns
from .values import time_seconds

TOP_KEYS = {"select", "ignore", "extend-select", "severity", "fail-on", "profile", "extend",
            "exclude", "extend-exclude", "per-file-ignores", "required-version"}
#: keys whose patterns are relative to the configuration file: not in editor settings
FILE_KEYS = ("exclude", "extend-exclude", "per-file-ignores")
PROFILE_KEYS = {"slurm-version", "pyxis", "gpus-per-node", "gpu-arch", "shared-prefixes",
                "megatron-core", "partitions", "enforce-part-limits",
                "enroot", "ip-local-port-range",
                "constrain-devices", "max-array-size"}
#: keys of one ``[profile.partitions.NAME]`` table (``sbatch-lint profile import`` writes them)
PARTITION_KEYS = {"max-time", "max-nodes", "total-nodes", "default", "exclusive",
                  "gpus-per-node", "gpu-type", "gpu-types", "gpu-arch", "mem-per-node",
                  "features", "derived"}
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
    only the GPUs Slurm gave it; None when the profile does not say.
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


def _profile(table, where: str, base: Profile) -> Profile:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table")
    unknown = set(table) - PROFILE_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} "
                          f"(known: {', '.join(sorted(PROFILE_KEYS))})")
    p = base
    if "slurm-version" in table:
        v = table["slurm-version"]
        if not isinstance(v, str):
            raise ConfigError(f"{where}.slurm-version: expected a string such as \"22.05\" "
                              f"(quoted: TOML reads {v!r} as a {type(v).__name__})")
        try:
            major, month = version_key(v)
        except ValueError as exc:
            raise ConfigError(f"{where}.slurm-version: {exc}") from None
        if month not in RELEASE_MONTHS or (major, month) > version_key(NEWEST_RELEASE):
            raise ConfigError(f"{where}.slurm-version: {v!r} is not a Slurm release the option "
                              f"table knows (releases are YY.02, .05, .08 or .11, up to "
                              f"{NEWEST_RELEASE})")
        p = replace(p, slurm_version=v)
    if "pyxis" in table:
        v = table["pyxis"]
        if not isinstance(v, (bool, str)) or (isinstance(v, str) and not re.fullmatch(
                r"v?\d+(\.\d+){0,2}", v)):
            raise ConfigError(f"{where}.pyxis: expected true, false or a version such as \"0.20\"")
        p = replace(p, pyxis=v)
    if "gpus-per-node" in table:
        v = table["gpus-per-node"]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ConfigError(f"{where}.gpus-per-node: expected a whole number")
        p = replace(p, gpus_per_node=v)
    if "gpu-arch" in table:
        v = table["gpu-arch"]
        if not isinstance(v, dict) or not all(isinstance(a, str) and a.lower() in ARCHS
                                              for a in v.values()):
            raise ConfigError(f"{where}.gpu-arch: expected a table partition = "
                              "\"ampere\"|\"hopper\"|\"blackwell\"")
        p = replace(p, gpu_arch={str(k): str(a).lower() for k, a in v.items()})
    if "shared-prefixes" in table:
        v = table["shared-prefixes"]
        if not isinstance(v, list) or not all(isinstance(x, str) and x.startswith("/") for x in v):
            raise ConfigError(f"{where}.shared-prefixes: expected a list of absolute paths")
        p = replace(p, shared_prefixes=tuple(v))
    if "megatron-core" in table:
        v = table["megatron-core"]
        m = re.fullmatch(r"(\d+)\.(\d+)(\.\d+)?", v) if isinstance(v, str) else None
        low, high = MEGATRON_CORE_RELEASES
        if m is None or not low <= (int(m.group(1)), int(m.group(2))) <= high:
            raise ConfigError(f"{where}.megatron-core: expected a Megatron-Core release as a "
                              f"string, \"{low[0]}.{low[1]}\" to \"{high[0]}.{high[1]}\" "
                              "(e.g. \"0.13\")")
        p = replace(p, megatron_core=v)
    if "enforce-part-limits" in table:
        v = table["enforce-part-limits"]
        if not isinstance(v, str) or v.upper() not in ENFORCE_PART_LIMITS:
            raise ConfigError(f"{where}.enforce-part-limits: expected \"ALL\", \"ANY\" or "
                              "\"NO\" (slurm.conf EnforcePartLimits)")
        p = replace(p, enforce_part_limits=v.upper())
    if "partitions" in table:
        v = table["partitions"]
        if not isinstance(v, dict):
            raise ConfigError(f"{where}.partitions: expected a table of partitions "
                              "([profile.partitions.NAME])")
        parts = dict(p.partitions)
        for name, t in v.items():
            parts[str(name)] = _partition(t, f"{where}.partitions.{name}",
                                          parts.get(str(name), Partition()))
        p = replace(p, partitions=parts)
    if "enroot" in table:
        v = table["enroot"]
        if not isinstance(v, str) or not re.fullmatch(r"v?\d+(\.\d+){0,2}", v):
            raise ConfigError(f"{where}.enroot: expected an enroot release as a string such as "
                              "\"3.5\" or \"4.0.1\"")
        p = replace(p, enroot=v.lstrip("v"))
    if "ip-local-port-range" in table:
        v = table["ip-local-port-range"]
        if not (isinstance(v, list) and len(v) == 2 and
                all(isinstance(x, int) and not isinstance(x, bool) for x in v) and
                1 <= v[0] <= v[1] <= 65535):
            raise ConfigError(f"{where}.ip-local-port-range: expected [first, last], two port "
                              "numbers as in net.ipv4.ip_local_port_range (e.g. [32768, 60999])")
        p = replace(p, ip_local_port_range=(v[0], v[1]))
    if "constrain-devices" in table:
        v = table["constrain-devices"]
        if not isinstance(v, bool):
            raise ConfigError(f"{where}.constrain-devices: expected true or false (the site's "
                              "cgroup.conf ConstrainDevices)")
        p = replace(p, constrain_devices=v)
    if "max-array-size" in table:
        v = table["max-array-size"]
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 4_000_001:
            raise ConfigError(f"{where}.max-array-size: expected a whole number from 0 to "
                              "4000001 (slurm.conf MaxArraySize, e.g. 1001)")
        p = replace(p, max_array_size=v)
    return p


def _strings(v, where: str) -> tuple[str, ...]:
    """A list of non-empty strings as a tuple; ConfigError names ``where`` otherwise."""
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise ConfigError(f"{where}: expected a list of strings")
    return tuple(v)


def _whole(v, where: str, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise ConfigError(f"{where}: expected {what} (a whole number)")
    return v


def _partition(table, where: str, base: Partition) -> Partition:
    """One ``[profile.partitions.NAME]`` table over ``base`` (what ``extend`` brought)."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table")
    unknown = set(table) - PARTITION_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} "
                          f"(known: {', '.join(sorted(PARTITION_KEYS))})")
    p = base
    if "max-time" in table:
        v = table["max-time"]
        secs = time_seconds(v) if isinstance(v, str) else None
        if secs is None:
            raise ConfigError(f"{where}.max-time: expected a Slurm time as a string, such as "
                              "\"2-00:00:00\", \"48:00:00\" or \"UNLIMITED\"")
        p = replace(p, max_time=secs if secs >= 0 else None,
                    max_time_text=v if secs >= 0 else None)
    if "max-nodes" in table:
        p = replace(p, max_nodes=_whole(table["max-nodes"], f"{where}.max-nodes", "a node count"))
    if "total-nodes" in table:
        p = replace(p, total_nodes=_whole(table["total-nodes"], f"{where}.total-nodes",
                                          "a node count"))
    if "gpus-per-node" in table:
        p = replace(p, gpus_per_node=_whole(table["gpus-per-node"], f"{where}.gpus-per-node",
                                            "a GPU count"))
    if "mem-per-node" in table:
        p = replace(p, mem_per_node=_whole(table["mem-per-node"], f"{where}.mem-per-node",
                                           "megabytes"))
    if "default" in table:
        if not isinstance(table["default"], bool):
            raise ConfigError(f"{where}.default: expected true or false")
        p = replace(p, default=table["default"])
    if "exclusive" in table:
        v = table["exclusive"]
        if not (isinstance(v, bool) or v == "user"):
            raise ConfigError(f"{where}.exclusive: expected true, false or \"user\"")
        p = replace(p, exclusive=v)
    if "gpu-type" in table:
        v = table["gpu-type"]
        if not isinstance(v, str) or not v:
            raise ConfigError(f"{where}.gpu-type: expected a GRES type such as \"h100\"")
        p = replace(p, gpu_type=v, gpu_types=p.gpu_types if p.gpu_types is not None else (v,))
    if "gpu-types" in table:
        p = replace(p, gpu_types=_strings(table["gpu-types"], f"{where}.gpu-types"))
    if "gpu-arch" in table:
        v = table["gpu-arch"]
        if not isinstance(v, str) or v.lower() not in ARCHS:
            raise ConfigError(f"{where}.gpu-arch: expected \"ampere\", \"hopper\" or "
                              "\"blackwell\"")
        p = replace(p, gpu_arch=v.lower())
    if "features" in table:
        p = replace(p, features=_strings(table["features"], f"{where}.features"))
    if "derived" in table:
        d = _strings(table["derived"], f"{where}.derived")
        bad = [k for k in d if k not in ("gpus-per-node", "mem-per-node")]
        if bad:
            raise ConfigError(f"{where}.derived: {bad[0]!r} is not a derived key "
                              "(gpus-per-node, mem-per-node)")
        p = replace(p, derived=d)
    return p


def _read_toml(path: Path) -> dict:
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
    if "extend" in table:
        ext = table["extend"]
        if not isinstance(ext, str):
            raise ConfigError(f"{path}: extend: expected a path string")
        target = (path.parent / Path(ext).expanduser())
        if not target.is_file():
            raise ConfigError(f"{path}: extend: no such file {str(target)!r}")
        base = load_file(target, seen + (path,))
    cfg = from_table(table, str(path), base, folder=path.parent)
    return replace(cfg, source=str(path))


def find_config(start: Path) -> Path | None:
    """The nearest .sbatch-lint.toml, or pyproject.toml with [tool.sbatch-lint], at or above
    ``start`` (a file or a directory)."""
    d = start if start.is_dir() else start.parent
    d = d.resolve()
    for folder in (d, *d.parents):
        own = folder / ".sbatch-lint.toml"
        if own.is_file():
            return own
        py = folder / "pyproject.toml"
        if py.is_file():
            try:
                with py.open("rb") as f:
                    if "sbatch-lint" in tomllib.load(f).get("tool", {}):
                        return py
            except OSError:
                continue
            except tomllib.TOMLDecodeError:
                # broken TOML: ours if it names our table (load_file then reports the error)
                if OWN_TABLE.search(py.read_text("utf-8", "replace")):
                    return py
    return None
