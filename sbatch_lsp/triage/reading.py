"""Reading a job's log as a stream of the lines that may matter.

A log is read in blocks of :data:`BLOCK` bytes; one Aho-Corasick automaton (:data:`TRIGGER`) finds the
lines worth reading in each block, so the many lines of noise cost one regex scan and a newline
count, and memory stays bounded whatever the log's size. Only triggered lines are decoded and
stripped of what wraps them:

* ANSI colour and cursor sequences; carriage returns (a progress bar overwritten by an error:
  the segment that holds the trigger is kept); lines longer than :data:`MAX_LINE` are cut;
* srun's ``--label`` prefix ``%*d: `` padded to the widest task id, and ``P<k> N: `` for a
  heterogeneous job's component *k* (Slurm src/srun/launch.c, ``_task_prefix``/``--label`` in
  srun(1));
* torch's ``[rankN]:`` (global rank) and torchelastic's ``[defaultN]:`` (role ``default``,
  local rank *N*: torch/distributed/elastic/multiprocessing/api.py, ``tee``'s line prefixes);
* a ``host: `` prefix (pdsh, DeepSpeed's launcher) and a leading timestamp.

Errors: :class:`LogError` with a message for people (missing file, binary data, a gzip stream
cut short, an empty log).
"""
from __future__ import annotations

import gzip
import io
import re
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import BinaryIO

import ahocorasick_rs

#: bytes read per block
BLOCK = 1 << 22
#: a line is cut to this many characters before it is read (a truncated line is still read)
MAX_LINE = 4096
#: what a line must contain to be read further: any recogniser's evidence, a traceback's frame,
#: torchelastic's report fields, srun's and slurmstepd's own lines, a hung job's stack dump.
#: Searched with one Aho-Corasick automaton (ahocorasick-rs) over each block: a few seconds a GB.
TRIGGERS = (
    b"rror:", b"xception:", b"Interrupt", b"ChildFailedError", b"most recent call", b'File "',
    b"srun: error", b"slurmstepd", b"CANCELLED", b"STEP ", b"Killed", b"Terminated",
    b"Out Of Memory", b"out of memory", b"oom-kill", b"oom_kill", b"NCCL WARN", b"ncclUniqueId",
    b"crash on rank", b"atchdog caught", b"EADDRINUSE", b"already in use", b"failed to listen",
    b"command not found", b"No space left", b"Xid", b"ECC", b"Segmentation fault",
    b"core dumped", b"Aborted", b"terminate called", b"what():", b"Root Cause", b"Failures:",
    b"exitcode", b"      : ", b"Thread 0x", b" (idle)", b" (active)", b"Current thread",
    b".py:", b"execve()", b"Lmod has detected", b"Caught signal", b"Last error:",
    b"NET/Socket : Using", b"]br-", b"]veth", b"]docker", b"]virbr", b"death signal",
    b"No such file or directory", b"closing signal")
#: a trigger whose next line is read too (NCCL prints the detail of ``Last error:`` below it)
CARRY = {TRIGGERS.index(b"Last error:")}
TRIGGER = ahocorasick_rs.BytesAhoCorasick(list(TRIGGERS))
#: ``.py:`` triggers only a py-spy frame (``    fn (file.py:12)``), not a warning's location
WEAK = TRIGGERS.index(b".py:")
PYSPY_END = re.compile(rb"\.py:\d+\)\s*$")
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Za-z0-9]")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
SRUN_LABEL = re.compile(r"^\s*(?:P(\d+) )?(\d+): ")
RANK_PREFIX = re.compile(r"^\[(rank|default)(\d+)\]:\s?")
#: pdsh / DeepSpeed ``host: `` prefixes: a host name has a digit or a dash and is not a Python
#: exception name (``RuntimeError: …``) or a logging level
HOST_PREFIX = re.compile(r"^([a-z][a-z0-9]*(?:[-.][a-z0-9]+)*\d[a-z0-9.-]*|"
                         r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+): ")
#: a timestamp (and a logging level) that starts a line's body: ISO 8601 / Python logging,
#: or glog's ``[E1201 10:15:42.123 12 file.cpp:616]`` header
LEADING_TIME = re.compile(
    r"^(?:\[?\d{4}-\d{2}-\d{2}[T _]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?|"
    r"\[?[IWEF]\d{4} \d{2}:\d{2}:\d{2}(?:\.\d+)?(?: +\d+)?(?: [^\]\s]+)?\])\s*(?:[-|:]\s*)?"
    r"(?:\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\]?\s*(?:[-|:]\s*)?)?")
TIMESTAMPS: list[tuple[re.Pattern, str]] = [
    # ISO 8601 / Python logging: 2024-05-01T10:00:00.123, 2024-05-01 10:00:00,123
    (re.compile(r"(\d{4}-\d{2}-\d{2})[T _](\d{2}:\d{2}:\d{2})(?:[.,](\d{1,6}))?"), "iso"),
    # glog (torch's C++ logs): I1201 10:00:00.123456
    (re.compile(r"\b[IWEF](\d{2})(\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?"), "glog"),
    # ctime-like (date(1), NCCL INFO): Tue Dec  1 09:53:05 2026 (year may be absent)
    (re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (\w{3}) +(\d{1,2}) (\d{2}:\d{2}:\d{2})"
                r"(?: \w+)?(?: (\d{4}))?"), "ctime"),
]
MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}


class LogError(Exception):
    """A log that cannot be read; the message says why, for people."""


_UNSET = object()


@dataclass
class LogLine:
    """One triggered line: ``path`` as given, ``line`` 1-based in that file, ``text`` the line
    without ANSI/CR debris (still prefixed), ``body`` without srun/rank/host prefixes,
    ``task`` srun's task id, ``component`` the hetjob component, ``rank`` the global rank
    (``[rankN]:``), ``local_rank`` (``[defaultN]:``), ``host`` a host prefix; :attr:`time` the
    line's timestamp in seconds (nominal year 2000 when the format has none) or None, read on
    first use (``stamp`` sets it)."""

    path: str
    line: int
    text: str
    body: str
    task: int | None = None
    component: int | None = None
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    stamp: object = field(default=_UNSET, repr=False)

    @property
    def time(self) -> float | None:
        if self.stamp is _UNSET:
            self.stamp = parse_time(self.text[:120])
        return self.stamp  # type: ignore[return-value]


def parse_time(text: str) -> float | None:
    """The first timestamp in ``text`` as POSIX seconds (UTC, naive), or None. Formats: ISO 8601
    and Python logging, glog (``I1201 10:00:00.123456``, year 2000), ctime (``Tue Dec  1 …``)."""
    for rx, kind in TIMESTAMPS:
        m = rx.search(text)
        if not m:
            continue
        try:
            if kind == "iso":
                dt = datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}")
                frac = m.group(3)
            elif kind == "glog":
                dt = datetime.fromisoformat(f"2000-{m.group(1)}-{m.group(2)}T{m.group(3)}")
                frac = m.group(4)
            else:
                month = MONTHS.get(m.group(1))
                if month is None:
                    continue
                year = int(m.group(4) or 2000)
                dt = datetime.fromisoformat(
                    f"{year:04d}-{month:02d}-{int(m.group(2)):02d}T{m.group(3)}")
                frac = None
        except ValueError:
            continue
        seconds = dt.timestamp()
        return seconds + (float(f"0.{frac}") if frac else 0.0)
    return None


def clean(raw: str) -> str:
    """A line as a terminal would show it: ANSI sequences removed, the last non-blank segment
    after carriage returns, other control characters as U+FFFD, cut to :data:`MAX_LINE`."""
    text = ANSI.sub("", raw[:MAX_LINE * 2])
    if "\r" in text:
        parts = [p for p in text.split("\r") if p.strip()]
        hit = [p for p in parts if TRIGGER.find_matches_as_indexes(p.encode("utf-8", "replace"))]
        text = (hit or parts or [""])[-1]
    return CONTROL.sub("\ufffd", text)[:MAX_LINE]


def split_prefixes(path: str, number: int, text: str) -> LogLine:
    """Read the prefixes off one cleaned line (srun label, rank, host, timestamp)."""
    body, task, comp, rank, local, host = text, None, None, None, None, None
    m = SRUN_LABEL.match(body)
    if m:
        comp = int(m.group(1)) if m.group(1) else None
        task = int(m.group(2))
        body = body[m.end():]
    m = HOST_PREFIX.match(body)
    if m and not body[m.end():].startswith("//"):
        host = m.group(1)
        body = body[m.end():]
        if host.startswith("slurmstepd-"):  # slurmstepd-HOST: error: … (Slurm ≥ 21.08)
            host, body = host[len("slurmstepd-"):], "slurmstepd: " + body
    m = RANK_PREFIX.match(body)
    if m:
        if m.group(1) == "rank":
            rank = int(m.group(2))
        else:
            local = int(m.group(2))
        body = body[m.end():]
    m = LEADING_TIME.match(body)
    if m:
        body = body[m.end():]
    return LogLine(path, number, text, body, task, comp, rank, local, host)


def _open(path: str, stdin: BinaryIO | None) -> BinaryIO:
    if path == "-":
        raw: BinaryIO = stdin if stdin is not None else sys.stdin.buffer
    else:
        try:
            raw = open(path, "rb")  # noqa: SIM115 (closed by lines())
        except IsADirectoryError:
            raise LogError(f"{path}: is a directory, not a log file") from None
        except FileNotFoundError:
            raise LogError(f"{path}: no such file") from None
        except OSError as exc:
            raise LogError(f"{path}: cannot be read ({exc.strerror})") from None
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[type-var]
    head = buffered.peek(2)[:2]
    raw = buffered
    if head == b"\x1f\x8b" or (path.endswith(".gz") and path != "-"):
        return gzip.GzipFile(fileobj=raw)  # type: ignore[return-value]
    return raw


def _blocks(stream: BinaryIO, path: str) -> Iterator[bytes]:
    """Blocks of whole lines (a line longer than a block is cut at the block's end)."""
    rest = b""
    while True:
        try:
            data = stream.read(BLOCK)
        except EOFError:
            raise LogError(f"{path}: the gzip stream is truncated (the file ends before the "
                           "compressed data does); decompress what is there with "
                           "'zcat FILE > FILE.log' and triage that") from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise LogError(f"{path}: not a valid gzip file ({exc})") from None
        except OSError as exc:
            raise LogError(f"{path}: reading failed ({exc.strerror or exc})") from None
        if not data:
            if rest:
                yield rest
            return
        data = rest + data
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            if len(data) < BLOCK:
                rest = data
                continue
            cut = len(data)
        rest = data[cut:]
        yield data[:cut]


def lines(path: str, stdin: BinaryIO | None = None, display: str | None = None
          ) -> Iterator[LogLine]:
    """The triggered lines of one log file (``-`` for standard input, gzip by magic or
    ``.gz``), in file order; then a final :class:`LogLine` with ``text == ""`` and ``line`` the
    file's line count (the caller's end marker). ``display`` is the path the lines carry
    (default ``path``). Raises :class:`LogError`."""
    stream = _open(path, stdin)
    name = display or path
    base = 0  # lines before the current block
    seen_any = unterminated = False
    try:
        for block in _blocks(stream, path):
            if not seen_any:
                if b"\x00" in block[:8192]:
                    raise LogError(f"{name}: binary data, not a text log")
                seen_any = bool(block.strip())
            pos = 0  # newlines counted up to here
            last_end = -1
            for which, m_start, _ in TRIGGER.find_matches_as_indexes(block):
                if m_start <= last_end:
                    continue
                start = block.rfind(b"\n", 0, m_start) + 1
                end = block.find(b"\n", m_start)
                end = len(block) if end < 0 else end
                if which == WEAK and not PYSPY_END.search(block, start, end):
                    continue
                if which in CARRY:
                    nxt = block.find(b"\n", end + 1)
                    end = len(block) if nxt < 0 else nxt
                base += block.count(b"\n", pos, start)
                pos = start
                last_end = end
                for k, raw in enumerate(block[start:end].decode("utf-8", "replace").split("\n")):
                    yield split_prefixes(name, base + 1 + k, clean(raw))
            base += block.count(b"\n", pos)
            unterminated = not block.endswith(b"\n")
        if not seen_any:
            raise LogError(f"{name}: the log is empty (did the job start? its output may have "
                           "gone to another file: see #SBATCH --output/--error)")
    finally:
        if stream is not stdin and path != "-":
            stream.close()
    yield LogLine(name, base + unterminated, "", "")
