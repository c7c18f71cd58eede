"""Value grammars of the sbatch options whose values sbatch checks on the submit host.

:func:`check_value` answers, for one option value, whether sbatch refuses it, accepts it but
reads something the user probably did not mean, or silently normalises it. Every grammar here is
a transcription of the Slurm source that parses it (paths below are in github.com/SchedMD/slurm at
``slurm-22-05-8-1`` unless a version says otherwise; slurm-facts.md §4 records the error texts
observed on sbatch 22.05.8):

* ``src/common/parse_time.c``: ``time_str2secs``/``_is_valid_timespec`` (``--time``,
  ``--time-min``, ``--delay-boot``) and ``parse_time`` (``--begin``, ``--deadline``);
* ``src/common/proc_args.c``: ``str_to_mbytes`` (memory), ``verify_node_count`` (``--nodes``),
  ``parse_int`` (integer options), ``get_signal_opts``/``sig_name2num`` (``--signal``),
  ``parse_mail_type``, ``verify_dist_type``;
* ``src/common/slurm_opt.c``: ``arg_set_exclusive``, ``arg_set_open_mode``,
  ``arg_set_gres_flags``, ``arg_set_kill_on_invalid_dep``, ``arg_set_no_kill``, ``arg_set_nice``,
  ``arg_set_priority``, ``arg_set_wait_all_nodes``, ``arg_set_get_user_env``;
* ``src/common/cpu_frequency.c``: ``cpu_freq_verify_cmdline``.

Values the 22.05 client passes on unchecked (``--gpus*`` counts, ``--array``, ``--dependency``,
``--partition``) are refused later by the controller; this module reports the ones whose
grammar is certain (sbatch.1) as ``refused_by="controller"``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import hostlist

from .facts.provenance import VALUE_PLACEHOLDER
from .options import version_key

#: Placeholders in templated scripts: never judged (the one template detector,
#: facts/provenance.py, holds the forms).
TEMPLATE = VALUE_PLACEHOLDER
#: Shell syntax that sbatch keeps literally in a directive (slurm-facts.md §1.3 rule 6).
SHELL_SYNTAX = re.compile(r"\$\{[^}]*\}?|\$\([^)]*\)?|\$[A-Za-z_][A-Za-z0-9_]*|`[^`]*`?|"
                          r"(?:^|(?<=[=:,]))~(?=/|$|[A-Za-z])")

#: what C's isspace() accepts (Python's str.strip() also strips U+00A0 and friends)
C_SPACE = " \t\n\v\f\r"
INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class ValueProblem:
    """What is wrong with one value.

    ``kind``: ``"refused"`` (sbatch exits with ``message`` as its error), ``"misread"`` (accepted,
    but sbatch reads something else than the text suggests), ``"normalised"`` (accepted and
    rewritten; ``normalised`` holds sbatch's reading), ``"note"`` (accepted as written, but
    easy to misread: ``--time=3600`` is 60 hours). ``refused_by`` is ``"sbatch"`` (the submit
    host, before the job is queued) or ``"controller"`` (slurmctld, at submission).
    ``suggestion`` is a corrected value when one is certain.
    """

    kind: str
    message: str
    normalised: str | None = None
    refused_by: str = "sbatch"
    suggestion: str | None = None


def _strtol(text: str) -> tuple[int | None, str]:
    """C ``strtol(text, &end, 10)``: (value or None when no digits, the rest)."""
    m = re.match(r"[ \t\n\v\f\r]*([+-]?[0-9]+)", text)
    if not m:
        return None, text
    return int(m.group(1)), text[m.end():]


# ---- time -----------------------------------------------------------------------------------
def _valid_timespec(s: str) -> bool:
    """``_is_valid_timespec`` (parse_time.c): digits, at most one ``-``, at most two ``:``, no
    ``:`` before the ``-``, and enough digit groups for the separators."""
    digit = dash = colon = 0
    already = False
    for c in s:
        if c.isdigit() and c.isascii():
            if not already:
                digit += 1
                already = True
        elif c == "-":
            already = False
            dash += 1
            if colon:
                return False
        elif c == ":":
            already = False
            colon += 1
        else:
            return False
    if not digit or dash > 1 or colon > 2:
        return False
    if dash:
        return not ((colon == 1 and digit < 3) or (colon == 2 and digit < 4))
    return not ((colon == 1 and digit < 2) or (colon == 2 and digit < 3))


def time_seconds(value: str) -> int | None:
    """``time_str2secs``: seconds for ``min``, ``min:sec``, ``hr:min:sec``, ``days-hr``,
    ``days-hr:min``, ``days-hr:min:sec``; -1 for ``INFINITE``/``UNLIMITED``/``-1``; None when
    sbatch refuses the text."""
    if not value:
        return None
    if value.lower() in ("-1", "infinite", "unlimited"):
        return -1
    if not _valid_timespec(value):
        return None
    nums = [int(x) for x in re.findall(r"\d+", value)]
    if "-" in value:
        d, h, m, s = (nums + [0, 0, 0])[:4]
        return d * 86400 + h * 3600 + m * 60 + s
    if value.count(":") == 2:
        h, m, s = nums
        return h * 3600 + m * 60 + s
    m, s = (nums + [0])[:2]
    return m * 60 + s


def format_time(seconds: int) -> str:
    """Seconds as Slurm prints a limit: ``[D-]HH:MM:SS``."""
    d, rest = divmod(seconds, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def _check_time(name: str, value: str) -> ValueProblem | None:
    secs = time_seconds(value)
    if secs is None:
        hint = ""
        if re.fullmatch(r"\d+\.\d+", value):
            hint = "no decimals (a bare number is minutes); "
        elif re.fullmatch(r"\d+\s*[a-zA-Z]+", value):
            hint = "no units (a bare number is minutes); "
        return _refused(name, value, f"{hint}use minutes, MM:SS, HH:MM:SS or D-HH[:MM[:SS]]")
    if secs < 0:
        return None
    if name == "delay-boot":
        return None
    if re.fullmatch(r"\d+", value) and int(value) >= 600 and int(value) % 60 == 0 and \
            name == "time":
        mins = int(value)
        return ValueProblem("note", f"`--{name}={value}` is {value} minutes "
                            f"({format_time(mins * 60)}); if you meant {value} seconds, write "
                            f"`{format_time(mins)}`", normalised=format_time(mins * 60))
    # overflowing fields are carried silently (slurm-facts.md §4: 00:90:00 is 01:30:00)
    parts = re.split(r"[-:]", value)
    fields = []
    if "-" in value:
        fields = [(parts[i], lim) for i, lim in zip(range(1, len(parts)), (24, 60, 60), strict=False)]
    elif value.count(":") == 2:
        fields = [(parts[1], 60), (parts[2], 60)]
    elif value.count(":") == 1:
        fields = [(parts[1], 60)]
    if any(p and int(p) >= lim for p, lim in fields):
        mins = (secs + 59) // 60
        return ValueProblem("normalised", f"sbatch carries the overflowing field: `{value}` is "
                            f"{format_time(mins * 60)}", normalised=format_time(mins * 60))
    return None


# ---- sizes and counts ------------------------------------------------------------------------
def mbytes(value: str) -> int | None:
    """``str_to_mbytes``: megabytes for ``<int>[K|M|G|T][B]`` (any case); None if refused."""
    n, rest = _strtol(value)
    if n is None or n < 0 or n > LONG_MAX:
        return None
    if rest == "":
        return n
    unit = rest[0].lower()
    if unit not in "kmgt" or rest[1:].lower() not in ("", "b"):
        return None
    return {"k": (n + 1023) // 1024, "m": n, "g": n * 1024, "t": n * 1024 * 1024}[unit]


def _check_mem(name: str, value: str) -> ValueProblem | None:
    if mbytes(value) is None:
        hint, better = "", None
        m = re.fullmatch(r"(\d+\.\d+)\s*([kKmMgGtT]?)[bB]?", value)
        if m:
            factor = {"k": 1 / 1024, "m": 1, "": 1, "g": 1024, "t": 1024 * 1024}[m.group(2).lower()]
            mb = float(m.group(1)) * factor
            if mb == int(mb) and mb >= 1:
                better = f"{int(mb)}M"
            hint = "whole numbers only" + (f" ({better})" if better else "") + "; "
        elif re.fullmatch(r"\d+\s*[kKmMgGtT]i[bB]?", value):
            hint = "no `i` (K, M, G and T are already powers of 1024); "
        p = _refused(name, value, f"{hint}use an integer with an optional K, M, G or T suffix "
                     "(the default unit is megabytes)")
        return ValueProblem(p.kind, p.message, suggestion=better)
    if re.fullmatch(r"\d+", value) and name in ("mem", "mem-per-cpu", "mem-per-gpu") and \
            0 < int(value) < 64:
        return ValueProblem("misread", f"`--{name}={value}` is {value} megabytes (the default "
                            f"unit is MB); write `{value}G` for gigabytes",
                            suggestion=f"{value}G")
    return None


def _node_number(text: str) -> tuple[int | None, str]:
    n, rest = _strtol(text)
    if n is None:
        return None, text
    if rest[:1] in ("k", "K"):
        n, rest = n * 1024, rest[1:]
    if rest[:1] in ("m", "M"):
        n, rest = n * 1024 * 1024, rest[1:]
    return n, rest


def _check_nodes(value: str, version: str) -> ValueProblem | None:
    """``verify_node_count`` (22.05); 23.02 adds size lists and steps (``1,5,9``, ``1-15:4``)."""
    if version_key(version) >= (23, 2) and re.fullmatch(r"[\d,:\-kKmM]+", value) and \
            ("," in value or ":" in value):
        return None
    if "-" in value:
        lo, hi = value.split("-", 1)
        a, rest = _node_number(lo)
        if a is None or rest.strip(C_SPACE):
            return _bad_nodes(lo)
        b, rest = _node_number(hi)
        if b is None or rest.strip(C_SPACE):
            return _bad_nodes(hi)
        if a < 0:
            a = 1
        if b != 0 and b < a:
            return ValueProblem("refused", f"sbatch refuses `--nodes={value}`: \"Maximum node "
                                f"count {b} is less than minimum node count {a}\"")
        return None
    a, rest = _node_number(value)
    if a is None or rest.strip(C_SPACE) or a < 0:
        return _bad_nodes(value)
    return None


def _bad_nodes(text: str) -> ValueProblem:
    return ValueProblem("refused", f"sbatch refuses it: \"\\\"{text}\\\" is not a valid node "
                        "count\"; use N or MIN-MAX")


def _check_int(name: str, value: str, positive: bool) -> ValueProblem | None:
    """``parse_int``: a whole decimal number, > 0 when ``positive`` (else >= 0)."""
    n, rest = _strtol(value)
    if n is None or rest != "" or n < 0 or (positive and n <= 0) or n >= LONG_MAX:
        need = "a whole number greater than 0" if positive else "a whole number (0 or more)"
        return ValueProblem("refused", f"sbatch refuses it: \"Invalid numeric value "
                            f"\\\"{value}\\\" for --{name}.\"; the value must be {need}")
    return None


#: options read by ``parse_int`` (slurm_opt.c), and whether 0 is refused
INT_OPTIONS = {
    "cpus-per-task": True, "ntasks": True, "ntasks-per-node": True, "ntasks-per-core": True,
    "ntasks-per-socket": True, "ntasks-per-gpu": True, "ntasks-per-tres": True,
    "cpus-per-gpu": True, "cores-per-socket": True, "sockets-per-node": True,
    "threads-per-core": True, "mincpus": True, "thread-spec": True, "core-spec": False,
}

# ---- enumerations ----------------------------------------------------------------------------
MAIL_TYPES = {"NONE", "ARRAY_TASKS", "BEGIN", "END", "FAIL", "INVALID_DEPEND", "REQUEUE", "ALL",
              "STAGE_OUT", "TIME_LIMIT", "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50"}
SIGNALS = ("HUP", "INT", "QUIT", "ABRT", "KILL", "ALRM", "TERM", "USR1", "USR2", "URG", "CONT",
           "STOP", "TSTP", "TTIN", "TTOU", "XCPU")
CPU_GOVERNORS = {"conservative", "ondemand", "performance", "powersave", "userspace",
                 "schedutil"}
DIST_LEVEL = {"*", "block", "cyclic", "fcyclic"}


def _refused(name: str, value: str, expected: str, text: str | None = None) -> ValueProblem:
    said = text or f"Invalid --{name} specification"
    return ValueProblem("refused", f"sbatch refuses `--{name}={value}`: \"{said}\"; {expected}")


def _check_mail_type(value: str) -> ValueProblem | None:
    items = [t for t in value.split(",") if t]
    known = [t for t in items if t.upper() in MAIL_TYPES]
    unknown = [t for t in items if t.upper() not in MAIL_TYPES]
    valid = ", ".join(sorted(MAIL_TYPES))
    if not known:
        return _refused("mail-type", value, f"valid types: {valid}")
    if unknown and "NONE" not in {t.upper() for t in items[:items.index(unknown[0])]}:
        return ValueProblem("misread", f"sbatch ignores {', '.join(f'`{u}`' for u in unknown)} "
                            f"in `--mail-type={value}` silently (valid types: {valid})")
    return None


def _signal_number(text: str) -> int:
    """``sig_name2num``: a number, or a name with an optional ``SIG`` (0 when unknown)."""
    n, rest = _strtol(text)
    if n is not None:
        return n if not rest.strip() else 0
    t = text.lstrip()
    if t[:3].upper() == "SIG":
        t = t[3:]
    for s in SIGNALS:
        if t[:len(s)].upper() == s and not t[len(s):].strip(C_SPACE):
            return 1
    return 0


def _check_signal(value: str) -> ValueProblem | None:
    """``get_signal_opts`` as sbatch runs it (the ``B`` flag is read)."""
    v = value
    if v[:1].upper() == "R":
        v = v[1:]
    if v[:1].upper() == "B":
        v = v[1:]
    if v[:1].upper() == "R":
        v = v[1:]
    if v[:1] == ":":
        v = v[1:]
    sig, at, when = v.partition("@")
    num = _signal_number(sig)
    expected = "use [{R|B}:]SIGNAL[@SECONDS], e.g. B:USR1@90"
    if num < 1 or num > 0xFFFF:
        return _refused("signal", value, expected)
    if at:
        n, rest = _strtol(when)
        if n is None:
            n, rest = 0, when
        if n < 0 or n > 0xFFFF or rest != "":
            return _refused("signal", value, expected)
    return None


def _check_distribution(value: str) -> ValueProblem | None:
    expected = ("use block, cyclic, arbitrary or plane=N, then up to two :block|cyclic|fcyclic "
                "levels and ,Pack or ,NoPack")
    if value[:5].lower() == "plane":
        size = value.split("=", 1)[1] if "=" in value else ""
        n, rest = _strtol(size)
        if n is None or rest != "" or n <= 0 or n > INT_MAX:
            return _refused("distribution", value, expected)
        return None
    if not value or value.startswith(","):
        return _refused("distribution", value, expected)
    base, _, _flags = value.partition(",")
    levels = [t for t in base.split(":") if t]
    if not levels or len(levels) > 3:
        return _refused("distribution", value, expected)
    first = levels[0].lower()
    if first not in ("*", "block", "cyclic", "arbitrary", "hostfile"):
        return _refused("distribution", value, expected)
    if first in ("arbitrary", "hostfile") and len(levels) > 1:
        return _refused("distribution", value, expected)
    if any(t.lower() not in DIST_LEVEL for t in levels[1:]):
        return _refused("distribution", value, expected)
    return None


def _check_cpu_freq(value: str) -> ValueProblem | None:
    """``cpu_freq_verify_cmdline``: ``p1[-p2][:governor]`` or a governor alone; a governor after
    ``:`` needs the ``-p2`` maximum, and a numeric minimum must not exceed the maximum."""
    def freq(t: str) -> bool:
        return t.lower() in ("low", "medium", "high", "highm1") or bool(re.fullmatch(r"\d+", t))

    expected = ("use low, medium, high, highm1 or a frequency in kHz, optionally -MAX and then "
                ":GOVERNOR (Conservative, OnDemand, Performance, PowerSave, UserSpace, "
                "SchedUtil)")
    text = "Invalid --cpu-freq argument"
    spec, colon, gov = value.partition(":")
    lo, dash, hi = spec.partition("-")
    if lo.lower() in CPU_GOVERNORS:
        if colon:
            return _refused("cpu-freq", value, "give the governor once", text)
    elif not freq(lo):
        return _refused("cpu-freq", value, expected, text)
    if dash:
        if not freq(hi):
            return _refused("cpu-freq", value, expected, text)
        if lo.isdigit() and hi.isdigit() and int(hi) < int(lo):
            return _refused("cpu-freq", value, "the minimum must not exceed the maximum", text)
    if colon:
        if not dash:
            return _refused("cpu-freq", value, "a governor needs a MIN-MAX range before it "
                            "(\"gov on cpu-frec illegal without max\")", text)
        if gov.lower() not in CPU_GOVERNORS:
            return _refused("cpu-freq", value, expected, text)
    return None


def _check_acctg_freq(value: str) -> ValueProblem | None:
    """``validate_acctg_freq``: a comma list of ``N`` or ``energy|task|filesystem|network=N``."""
    for item in value.split(","):
        if not re.fullmatch(r"\d+|(?i:energy|task|filesystem|network)=\d+", item):
            return _refused("acctg-freq", value, "use task=SECONDS (also energy=, network=, "
                            "filesystem=), comma-separated",
                            f"Invalid --acctg-freq specification: {item}")
    return None


def _check_extra_node_info(value: str) -> ValueProblem | None:
    """``verify_socket_core_thread_count``: ``SOCKETS[:CORES[:THREADS]]``, each a number or
    ``*``."""
    parts = value.split(":")
    if len(parts) > 3 or not all(re.fullmatch(r"\d+|\*", p) for p in parts):
        return _refused("extra-node-info", value, "use SOCKETS[:CORES[:THREADS]] (numbers or *)")
    return None


GPU_FREQ_WORDS = {"low", "medium", "high", "highm1"}


def _check_gpu_freq(value: str) -> ValueProblem | None:
    """``tres_freq_verify_cmdline`` for ``gpu:``: a comma list of a level or MHz, ``memory=``
    level or MHz, and ``verbose``."""
    def level(t: str) -> bool:
        return t.lower() in GPU_FREQ_WORDS or t.isdigit()

    for item in value.split(","):
        key, eq, val = item.partition("=")
        ok = (item.lower() == "verbose" or (not eq and level(item)) or
              (eq and key.lower() in ("memory", "graphics") and level(val)))
        if not ok:
            return _refused("gpu-freq", value, "use low, medium, high, highm1 or MHz, with "
                            "optional memory=… and verbose",
                            f"Invalid --gpu-freq argument: gpu:{value}")
    return None


MEM_BIND = re.compile(r"(?i:quiet|verbose|none|no|rank|local|sort|nosort|prefer|"
                      r"(?:map_mem|mask_mem):[0-9a-fA-Fx,*]+|help)")


def _check_mem_bind(value: str) -> ValueProblem | None:
    """``slurm_verify_mem_bind``: a comma list of quiet/verbose, none, rank, local, sort,
    nosort, prefer, map_mem:…, mask_mem:…."""
    items = re.split(r",(?![0-9a-fA-Fx*])", value)
    if all(MEM_BIND.fullmatch(i) for i in items):
        return None
    return _refused("mem-bind", value, "use none, rank, local, map_mem:…, mask_mem:…, "
                    "optionally after quiet, or verbose,",
                    f"unrecognized --mem-bind argument \"{value}\"")


def _check_profile(value: str) -> ValueProblem | None:
    """``acct_gather_profile_from_string``: it looks for the words none, all, energy, task,
    lustre and network anywhere in the text."""
    if re.search(r"(?i)none|all|energy|task|lustre|network", value):
        return None
    return _refused("profile", value, "use all, none, or a list of energy, task, lustre, network",
                    f"invalid --profile={value} option")


def _check_switches(value: str) -> ValueProblem | None:
    """``arg_set_switches``: ``COUNT[@MAX_TIME]``, the count read by ``parse_int``."""
    return _check_int("switches", value.partition("@")[0], True)


def _check_choice(name: str, value: str, choices: dict[str, str]) -> ValueProblem | None:
    if value.lower() in choices:
        return None
    return _refused(name, value, f"use {' or '.join(sorted(set(choices.values())))}")


def _exclusive_words(version: str) -> set[str]:
    """What ``--exclusive=`` accepts (slurm_opt.c ``arg_set_exclusive``): ``topo`` from 24.05."""
    ok = {"exclusive", "oversubscribe", "user", "mcs"}
    if version_key(version) >= (24, 5):
        ok.add("topo")
    return ok


def _gres_flags_words(version: str) -> set[str]:
    """What ``--gres-flags=`` accepts (slurm_opt.c ``arg_set_gres_flags``): the task-sharing
    flags, and a comma list, from 24.05."""
    ok = {"disable-binding", "enforce-binding"}
    if version_key(version) >= (24, 5):
        ok |= {"multiple-tasks-per-sharing", "one-task-per-sharing"}
    return ok


def _check_exclusive(value: str, version: str) -> ValueProblem | None:
    ok = _exclusive_words(version)
    if value.lower() in ok:
        return None
    return _refused("exclusive", value, "write `--exclusive` alone, or =user or =mcs"
                    + (" or =topo" if "topo" in ok else ""))


def _check_gres_flags(value: str, version: str) -> ValueProblem | None:
    ok = _gres_flags_words(version)
    if version_key(version) >= (24, 5):
        items = [t.lower() for t in value.split(",") if t]
    else:
        items = [value.lower()]
    if not items or any(t not in ok for t in items):
        extra = " (allow-task-sharing is an srun flag)" if "allow-task-sharing" in \
            value.lower() else ""
        return _refused("gres-flags", value, f"use {' or '.join(sorted(ok))}{extra}")
    return None


def _check_open_mode(value: str) -> ValueProblem | None:
    if value[:1].lower() in ("a", "t"):
        if value.lower() not in ("append", "truncate"):
            word = "append" if value[:1].lower() == "a" else "truncate"
            return ValueProblem("misread", f"sbatch reads only the first letter: "
                                f"`--open-mode={value}` means {word}", normalised=word)
        return None
    return _refused("open-mode", value, "use append or truncate")


def _check_nice(value: str) -> ValueProblem | None:
    n, _ = _strtol(value)
    n = n or 0
    if abs(n) > 2147483645:
        return _refused("nice", value, "the adjustment must lie within +/- 2147483645",
                        "Invalid --nice value, out of range (+/- 2147483645)")
    return None


def _check_priority(value: str) -> ValueProblem | None:
    if value.lower() == "top":
        return None
    n, _ = _strtol(value)
    n = n or 0
    if n < 0:
        return _refused("priority", value, "use a number >= 0 or TOP", "Priority must be >= 0")
    if n >= 0xFFFFFFFE:
        return _refused("priority", value, "use a smaller number",
                        "Priority must be < 4294967294")
    return None


def _check_wait_all_nodes(value: str) -> ValueProblem | None:
    p = _check_int("wait-all-nodes", value, False)
    if p:
        return p
    if int(value) % 65536 > 1:
        return _refused("wait-all-nodes", value, "use 0 or 1")
    return None


def _check_get_user_env(value: str) -> ValueProblem | None:
    _, rest = _strtol(value)
    if rest == "" or rest[:1] in ("s", "S", "l", "L"):
        return None
    return _refused("get-user-env", value, "use [TIMEOUT][S|L]")


# ---- begin / deadline (parse_time) -----------------------------------------------------------
_WORDS = ("midnight", "noon", "elevenses", "fika", "teatime", "today", "tomorrow", "now")
_TIME_OF_DAY = r"(?:[01]?[0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9])?(?:\s*(?:am|pm))?"
_DATE = (r"(?:\d{1,2}/\d{1,2}(?:/\d{2}(?:\d{2})?)?|\d{6}|\d{4}-\d{1,2}-\d{1,2}"
         r"(?:T\d{1,2}:\d{2}(?::\d{2})?)?|\d{1,2}\.\d{1,2}(?:\.\d{2})?)")
_BEGIN = re.compile(
    rf"(?:now(?:\+\d+(?:seconds?|minutes?|hours?|days?|weeks?)?)?|"
    rf"(?:{'|'.join(_WORDS[:-1])}|{_TIME_OF_DAY}|{_DATE})"
    rf"(?:T?{_TIME_OF_DAY})?(?:\+\d+(?:seconds?|minutes?|hours?|days?|weeks?)?)?)",
    re.IGNORECASE)


def _check_begin(name: str, value: str) -> ValueProblem | None:
    if _BEGIN.fullmatch(value):
        return None
    return _refused(name, value, "use HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY], now+N"
                    "[units], midnight, noon, teatime, today or tomorrow")


# ---- checked by the controller ---------------------------------------------------------------
_ARRAY = re.compile(r"\d+(?:-\d+(?::\d+)?)?(?:,\d+(?:-\d+(?::\d+)?)?)*(?:%\d+)?")


def _check_array(value: str) -> ValueProblem | None:
    if _ARRAY.fullmatch(value):
        return None
    return ValueProblem("refused", f"`--array={value}` is not an index list (N, N-M, N-M:STEP, "
                        "comma-separated, optional %MAX_RUNNING): the controller refuses the job "
                        "(\"Invalid job array specification\")", refused_by="controller")


_GPU_SPEC = re.compile(r"(?:[A-Za-z0-9_.\-]+:)?\d+[kKmMgG]?")


def _check_gpus(name: str, value: str) -> ValueProblem | None:
    if _GPU_SPEC.fullmatch(value) or all(_GPU_SPEC.fullmatch(v) for v in value.split(",")):
        return None
    return ValueProblem("refused", f"`--{name}={value}` is not [TYPE:]COUNT (e.g. 8 or h100:8): "
                        "the controller refuses the job", refused_by="controller")


_DEP_TYPES = ("after", "afterany", "afterburstbuffer", "aftercorr", "afternotok", "afterok")


def _check_dependency(value: str) -> ValueProblem | None:
    if value.lower() == "singleton":
        return None
    ok = True
    for item in re.split(r"[,?]", value):
        if item.lower() == "singleton" or re.fullmatch(r"\d+(?:_\d+)?", item):
            continue  # a bare job id means afterany (slurmctld/job_scheduler.c)
        kind, colon, ids = item.partition(":")
        if kind.lower() not in _DEP_TYPES or not colon or not all(
                re.fullmatch(r"\d+(?:_\d+)?(?:\+\d+)?", j) for j in ids.split(":")):
            ok = False
    if ok:
        return None
    return ValueProblem("refused", f"`--dependency={value}` is not TYPE:JOBID[:JOBID…] "
                        f"(types: {', '.join(_DEP_TYPES)}, singleton): the controller refuses "
                        "the job (\"Job dependency problem\")", refused_by="controller")


#: the options whose values :func:`check_value` judges
VALIDATED = frozenset({
    "time", "time-min", "delay-boot", "mem", "mem-per-cpu", "mem-per-gpu", "tmp", "nodes",
    *INT_OPTIONS, "mail-type", "signal", "distribution", "cpu-freq", "exclusive", "gres-flags",
    "open-mode", "kill-on-invalid-dep", "no-kill", "nice", "priority", "wait-all-nodes",
    "get-user-env", "begin", "deadline", "array", "gpus", "gpus-per-node", "gpus-per-task",
    "gpus-per-socket", "dependency", "acctg-freq", "extra-node-info", "gpu-freq", "mem-bind",
    "profile", "switches"})


#: how many (option, value, version) answers :func:`check_value` keeps (the corpus of 1,255
#: scripts holds 744 distinct judged values among 4,754 uses)
CHECKS_KEPT = 2048


@lru_cache(maxsize=CHECKS_KEPT)  # (values repeat across scripts: `--nodes=1`, `--time=24:00:00`)
def check_value(name: str, value: str, version: str) -> ValueProblem | None:
    """Check ``value`` of long option ``name`` as sbatch ``version`` (``"22.05"``) would.

    Returns None when the value is fine or not checked here (templated placeholders and values
    holding shell syntax are never judged: SB107 reports those). Raises nothing. Memoised: a
    function of its arguments alone (no clock, no file), answering a frozen ValueProblem.
    """
    if TEMPLATE.search(value) or SHELL_SYNTAX.search(value):
        return None
    if name in ("time", "time-min", "delay-boot"):
        return _check_time(name, value)
    if name in ("mem", "mem-per-cpu", "mem-per-gpu", "tmp"):
        return _check_mem(name, value)
    if name == "nodes":
        return _check_nodes(value, version)
    if name in INT_OPTIONS:
        return _check_int(name, value, INT_OPTIONS[name])
    if name == "mail-type":
        return _check_mail_type(value)
    if name == "signal":
        return _check_signal(value)
    if name == "distribution":
        return _check_distribution(value)
    if name == "cpu-freq":
        return _check_cpu_freq(value)
    if name == "acctg-freq":
        return _check_acctg_freq(value)
    if name == "extra-node-info":
        return _check_extra_node_info(value)
    if name == "gpu-freq":
        return _check_gpu_freq(value)
    if name == "mem-bind":
        return _check_mem_bind(value)
    if name == "profile":
        return _check_profile(value)
    if name == "switches":
        return _check_switches(value)
    if name == "exclusive":
        return _check_exclusive(value, version)
    if name == "gres-flags":
        return _check_gres_flags(value, version)
    if name == "open-mode":
        return _check_open_mode(value)
    if name == "kill-on-invalid-dep":
        return _check_choice(name, value, {"yes": "yes", "no": "no"})
    if name == "no-kill":
        return _check_choice(name, value, {"set": "set", "off": "off", "no": "off"})
    if name == "nice":
        return _check_nice(value)
    if name == "priority":
        return _check_priority(value)
    if name == "wait-all-nodes":
        return _check_wait_all_nodes(value)
    if name == "get-user-env":
        return _check_get_user_env(value)
    if name in ("begin", "deadline"):
        return _check_begin(name, value)
    if name == "array":
        return _check_array(value)
    if name in ("gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket"):
        return _check_gpus(name, value)
    if name == "dependency":
        return _check_dependency(value)
    return None


# ---- what an editor offers -------------------------------------------------------------------
#: enumerations that sbatch.1 lists for options this module does not judge (sbatch passes them
#: on, or the controller reads them)
_LISTED = {
    "hint": ["compute_bound", "memory_bound", "multithread", "nomultithread"],
    "export": ["ALL", "NONE"],
    "x11": ["all", "batch", "first", "last"],
}

#: one valid value for each judged option without an enumeration: what a completion snippet
#: puts in place (each passes :func:`check_value` on every release; a test checks it)
EXAMPLES = {
    "time": "1:00:00", "time-min": "30:00", "delay-boot": "10", "mem": "16G",
    "mem-per-cpu": "2G", "mem-per-gpu": "16G", "tmp": "10G", "nodes": "1",
    **{name: "1" for name in INT_OPTIONS}, "core-spec": "0", "signal": "B:USR1@90",
    "cpu-freq": "high", "nice": "0", "priority": "TOP", "begin": "now+1hour",
    "deadline": "now+1day", "array": "0-9", "gpus": "1", "gpus-per-node": "1",
    "gpus-per-task": "1", "gpus-per-socket": "1", "dependency": "singleton",
    "acctg-freq": "task=30", "extra-node-info": "2:8:1", "gpu-freq": "high",
    "mem-bind": "local", "switches": "1", "get-user-env": "10L", "output": "slurm-%j.out",
    "error": "slurm-%j.err", "input": "/dev/null",
}


def value_choices(name: str, version: str) -> list[str]:
    """The values of long option ``name`` that make a closed list, as sbatch ``version``
    accepts them (the sets :func:`check_value` judges by; empty for open-ended values)."""
    if name == "exclusive":
        return sorted(_exclusive_words(version) - {"exclusive", "oversubscribe"})
    if name == "gres-flags":
        return sorted(_gres_flags_words(version))
    fixed = {
        "mail-type": sorted(MAIL_TYPES), "open-mode": ["append", "truncate"],
        "kill-on-invalid-dep": ["yes", "no"], "no-kill": ["off"],
        "profile": ["all", "none", "energy", "lustre", "network", "task"],
        "distribution": ["block", "cyclic", "arbitrary", "plane=4", "block:block",
                         "block:cyclic", "cyclic:cyclic", "cyclic:block"],
        "cpu-freq": sorted(CPU_GOVERNORS | GPU_FREQ_WORDS),
        "gpu-freq": sorted(GPU_FREQ_WORDS), "wait-all-nodes": ["0", "1"],
        "oom-kill-step": ["0", "1"],
    }
    return fixed.get(name) or _LISTED.get(name, [])


def example_value(name: str, version: str) -> str | None:
    """A valid value of long option ``name`` under sbatch ``version`` (the first choice, or an
    example), or None for an open-ended value that nothing here judges (a name, a path)."""
    choices = value_choices(name, version)
    return choices[0] if choices else EXAMPLES.get(name)


def host_count(nodelist: str) -> int | None:
    """How many hosts a literal ``--nodelist`` names, expanded as Slurm's hostlist does
    (``n[1-3],x5`` -> 4); None for a file name (sbatch reads a value with ``/`` as a file) or
    a list that is not a host list."""
    if "/" in nodelist:
        return None
    try:
        return len(hostlist.expand_hostlist(nodelist))
    except hostlist.BadHostlist:
        return None
