"""Recognisers: one per kind of evidence a failed job's log shows, each naming its category
(:mod:`sbatch_lsp.triage.categories`).

The wordings are the programs' own:

* Python tracebacks (CPython ``traceback`` module: ``Traceback (most recent call last):``,
  ``  File "…", line N, in f``, the exception line; chained exceptions);
* srun: ``srun: error: HOST: task(s) LIST: Exited with exit code N`` or a signal name
  (Slurm src/srun/step_launch.c ``_task_finish``/``_handle_task_exit``);
* slurmstepd: ``*** JOB|STEP ID ON HOST CANCELLED AT TIME [DUE TO TIME LIMIT|PREEMPTION|NODE
  FAILURE] ***`` (src/slurmd/slurmstepd/req.c) and the cgroup OOM lines ``Detected N oom-kill
  event(s)`` (before 23.02) / ``oom_kill event`` (23.02+, src/plugins/task/cgroup);
* torchelastic's error report (torch/distributed/elastic/multiprocessing/errors/__init__.py,
  ``ChildFailedError.format_msg``: ``Failures:``, ``Root Cause (first observed failure):``, the
  ``time``/``host``/``rank``/``exitcode`` fields) and ``SignalException``
  (torch/distributed/elastic/multiprocessing/api.py);
* c10d/NCCL (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: ``Watchdog caught collective
  operation timeout``, the ``ncclUniqueId`` wait and its "crash on rank 0" hint; NCCL's own
  ``host:pid:tid [dev] NCCL WARN``);
* the NVIDIA driver's ``NVRM: Xid`` and ECC messages; bash's ``command not found``; ``ENOSPC``.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace

from .categories import CATEGORIES
from .reading import LogLine, parse_time

EXC_LINE = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|"
                      r"Failure|Timeout|Warning))(?::\s?(.*))?$")
TRACEBACK = "Traceback (most recent call last):"
FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
FAULT_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+) in (\S+)')
PYSPY_FRAME = re.compile(r"^\s+(\S+) \(([^()]+\.py):(\d+)\)")
DUMP_HEADER = re.compile(r"^(?:Thread 0x[0-9a-f]+|Current thread 0x[0-9a-f]+|Thread \d+ \(\w+\))")
LIBRARY = re.compile(r"site-packages|dist-packages|/lib/python\d|<frozen|^<|/bin/[^/]+$")
SRUN_EXIT = re.compile(r"^srun: error: (\S+): tasks? ([\d,\-\s]+): (Exited with exit code (\d+)|"
                       r"Killed|Terminated|Out Of Memory|Segmentation fault|Aborted|"
                       r"[A-Z][\w ]+)$")
STEPD_CANCEL = re.compile(r"\*\*\* (JOB|STEP) (\S+) ON (\S+) CANCELLED AT (\S+)"
                          r"(?: DUE (?:TO|to) ([A-Za-z ]+?))?(?:,[^*]*)? \*\*\*")
STEPD_OOM = re.compile(r"Detected (\d+) oom[-_]kill events?(?:\(s\))? in (\S+)")
ELASTIC_FIELD = re.compile(r"^\s+(time|host|rank|exitcode)\s+: (.*)$")
ELASTIC_RANK = re.compile(r"(\d+) \(local_rank: (\d+)\)")
SIGNAL_EXC = re.compile(r"got signal: (\d+)")
#: torchelastic's agent stopping its remaining workers once one failed
#: (torch/distributed/elastic/multiprocessing/api.py ``_close``: "Sending process %s closing
#: signal %s")
CLOSING = re.compile(r"Sending process (\d+) closing signal (SIG[A-Z]+)")
NCCL_LINE = re.compile(r"^(\S+?):(\d+):(\d+) \[(\d+)\] NCCL WARN (.*)$")
RANK_IN_TEXT = re.compile(r"\[(?:PG \S+ (?:PG GUID \S+ )?)?Rank (\d+)\]")
#: a rank a message names in prose ("Worker rank 76 failed", "global_rank=3"); not a peer's
RANK_IN_PROSE = re.compile(r"(?i)(?<!on )(?<!from )\b(?:global[ _])?rank[ =:]+(\d+)\b")
LAUNCHER_FRAME = re.compile(r"distributed/(?:run|launch)\.py|distributed/elastic/|"
                            r"/bin/(?:torchrun|accelerate|deepspeed)$|accelerate/commands/|"
                            r"deepspeed/launcher/")
MID_EXCEPTION = re.compile(r"(?:^|\s)((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)): (\S.*)$")
GENERIC_ERROR = re.compile(r"(?:^|[\s|\]])(?:[A-Z]\w*)?(?:Error|ERROR|error): \S")
EXECVE = re.compile(r"execve\(\): (\S+): No such file or directory")
SUBMITIT = re.compile(r"Caught signal (\w+) on \S+: this job is (preempted|timed-out)")
VIRTUAL_IFACE = re.compile(r"\[\d+\](?:docker\d|br-|veth|virbr|cni|flannel)")
CUDA_OOM = re.compile(r"CUDA out of memory\. Tried to allocate ([\d.]+ [KMGT]i?B)")
NOT_FOUND = re.compile(r"(?:^|: )([\w./+-]+): command not found")
PEER_LOST = re.compile(r"Connection reset by peer|Broken pipe|closed by (?:remote )?peer|"
                       r"Connection closed|connectFullMesh failed|Connection refused|"
                       r"remote process exited|Socket Timeout|crash on rank|ncclUniqueId|"
                       r"The client socket has timed out|Connection was likely closed|"
                       r"remote server shutdown", re.IGNORECASE)


@dataclass
class Evidence:
    """One piece of evidence: its ``category`` (a :data:`CATEGORIES` name), the quoted
    ``where`` line, the ``rank``/``node`` it belongs to when the log says, ``detail`` (how much
    memory, which signal), ``frame`` (the first frame in user code, ``file:line in fn``),
    ``exit_code`` (a launcher's or srun's), and ``suspect`` (a rank the waiting side blames)."""

    category: str
    where: LogLine
    rank: int | None = None
    node: str | None = None
    detail: str = ""
    frame: str | None = None
    exit_code: int | None = None
    suspect: int | None = None

    @property
    def cascade(self) -> bool:
        return CATEGORIES[self.category].cascade


@dataclass
class ExitRecord:
    """An exit status as srun or torchelastic echoes it: ``code`` (a number, negative for a
    signal as torchelastic writes it, or srun's signal name), the tasks or ranks, the node."""

    code: str
    tasks: list[int]
    node: str | None
    source: str  # "srun" | "torchelastic"


def task_list(text: str) -> list[int]:
    """``0-5,7`` → [0, 1, 2, 3, 4, 5, 7] (srun's task ranges)."""
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        if "-" in part:
            a, _, b = part.partition("-")
            if a.isdigit() and b.isdigit() and int(b) - int(a) < 100000:
                out.extend(range(int(a), int(b) + 1))
        elif part.isdigit():
            out.append(int(part))
    return out


def classify_exception(name: str, message: str) -> str:
    """The category of a Python exception line ``name: message``."""
    short = name.rsplit(".", 1)[-1]
    if short in ("SignalException", "KeyboardInterrupt"):
        return "sigterm"
    if short == "ChildFailedError":
        return "child-failed"
    if short in ("ModuleNotFoundError", "ImportError"):
        return "import-error"
    if short == "FileNotFoundError":
        return "file-not-found"
    if short == "OutOfMemoryError" and "CUDA" in message or "CUDA out of memory" in message:
        return "cuda-oom"
    if "EADDRINUSE" in message or "failed to listen" in message or \
            "Address already in use" in message:
        return "address-in-use"
    if "No space left on device" in message or "Errno 28" in message:
        return "disk-full"
    if "Watchdog caught collective operation timeout" in message or \
            "collective operation timeout" in message:
        return "nccl-timeout"
    if "client socket has timed out" in message and "trying to connect" in message:
        return "rendezvous-error"  # the rendezvous endpoint itself cannot be reached
    if PEER_LOST.search(message):
        return "waiting-for-peer"
    if "ECC" in message and "error" in message.lower():
        return "gpu-hardware"
    if "CUDA error" in message or "device-side assert" in message:
        return "cuda-error"
    if "NCCL" in message or short == "DistBackendError":
        return "nccl-error"
    if short == "RendezvousClosedError":
        return "waiting-for-peer"
    if "CUDA version" in message or "driver version is insufficient" in message:
        return "cuda-error"
    if short.startswith("Rendezvous") or short == "DistStoreError" or \
            "rendezvous" in message.lower():
        return "rendezvous-error"
    return "python-exception"


@dataclass
class _Stream:
    """What one output stream (a rank, a task, a file) is in the middle of."""

    traceback: list[tuple[str, int, str]] | None = None  # frames of an open traceback
    chained: bool = False
    elastic: dict[str, str] = field(default_factory=dict)
    elastic_root: bool = False
    dump: list[tuple[str, LogLine]] | None = None  # (function, line) of an open stack dump
    dump_line: LogLine | None = None
    last_error: Evidence | None = None  # an NCCL error whose "Last error:" detail follows
    awaiting_detail: bool = False
    sockets: LogLine | None = None  # an open "NET/Socket : Using" list


@dataclass
class Scan:
    """Everything the recognisers found in a job's logs: evidence in reading order, the exit
    records, srun's task → node map, torchelastic's rank → hosts map, each file's line count,
    and stack dumps per stream."""

    evidence: list[Evidence] = field(default_factory=list)
    exits: list[ExitRecord] = field(default_factory=list)
    task_nodes: dict[int, str] = field(default_factory=dict)
    #: global rank → the hosts torchelastic's reports name for it (one, unless the log holds
    #: several runs that placed the rank differently)
    rank_nodes: dict[int, set[str]] = field(default_factory=dict)
    line_counts: dict[str, int] = field(default_factory=dict)
    dumps: dict[tuple, tuple[list[tuple[str, LogLine]], LogLine]] = field(default_factory=dict)
    #: evidence kept per category (the rest is counted, not kept: bounded memory)
    limit: int = 2000
    counts: Counter = field(default_factory=Counter)
    #: a launcher (torchrun, accelerate, deepspeed) ran the tasks: srun's task ids are agents
    launcher: bool = False

    def add(self, ev: Evidence) -> None:
        self.counts[ev.category] += 1
        if self.counts[ev.category] <= self.limit:
            self.evidence.append(ev)


def _key(ln: LogLine) -> tuple:
    return (ln.path, ln.component, ln.task, ln.rank, ln.local_rank, ln.host)


def _user_frame(frames: list[tuple[str, int, str]]) -> str | None:
    for path, line, fn in reversed(frames):
        if not LIBRARY.search(path):
            return f"{path}:{line} in {fn}"
    return None


class Scanner:
    """Feed :class:`LogLine` objects in file order (:meth:`feed`); read :attr:`scan`."""

    def __init__(self) -> None:
        self.scan = Scan()
        self._streams: dict[tuple, _Stream] = {}

    def _stream(self, ln: LogLine) -> _Stream:
        k = _key(ln)
        s = self._streams.get(k)
        if s is None:
            s = self._streams[k] = _Stream()
        return s

    def feed(self, ln: LogLine) -> None:
        """Read one triggered line."""
        if not ln.text:  # end of a file
            self.scan.line_counts[ln.path] = ln.line
            self._close_dumps(ln.path)
            return
        body = ln.body
        st = self._stream(ln)
        if st.awaiting_detail:  # NCCL's detail of the error above: the more specific line
            st.awaiting_detail = False
            if st.last_error is not None and body.strip():
                st.last_error.where = ln
            return
        if body.strip() == "Last error:":
            st.awaiting_detail = st.last_error is not None
            return
        if self._dump(ln, st, body):
            return
        if body.strip() == TRACEBACK:
            st.traceback = [] if not st.chained else st.traceback
            st.chained = False
            return
        m = FRAME.match(body)
        if m and st.traceback is not None:
            st.traceback.append((m.group(1), int(m.group(2)), m.group(3)))
            if LAUNCHER_FRAME.search(m.group(1)):
                self.scan.launcher = True
            return
        if "direct cause of the following exception" in body or \
                "During handling of the above exception" in body:
            st.chained = True
            return
        m = EXC_LINE.match(body)
        if m and not body.startswith(("srun:", "slurmstepd")):
            self._exception(ln, st, m.group(1), m.group(2) or "")
            return
        if self._elastic(ln, st, body):
            return
        self._line(ln, body)

    # -- recognisers ------------------------------------------------------------------------

    def _rank(self, ln: LogLine, text: str) -> int | None:
        if ln.rank is not None:
            return ln.rank
        m = RANK_IN_TEXT.search(text)
        if m:
            return int(m.group(1))
        if "crash on rank" in text or "ncclUniqueId" in text:
            return None
        m = RANK_IN_PROSE.search(text)
        return int(m.group(1)) if m else None

    def _exception(self, ln: LogLine, st: _Stream, name: str, message: str) -> None:
        frames = st.traceback or []
        had_traceback = st.traceback is not None
        st.traceback = None
        if name.endswith("Warning"):
            return
        cat = classify_exception(name, message)
        if not had_traceback and cat == "python-exception" and not message:
            return  # a bare word such as "ValueError" in prose
        detail = ""
        if cat == "cuda-oom":
            m = CUDA_OOM.search(message)
            detail = f"tried to allocate {m.group(1)}" if m else ""
        elif cat == "sigterm":
            m = SIGNAL_EXC.search(message)
            detail = f"signal {m.group(1)}" if m else ""
        suspect = 0 if "crash on rank 0" in message else None
        ev = Evidence(cat, ln, self._rank(ln, message), ln.host, detail, _user_frame(frames),
                      suspect=suspect)
        self.scan.add(ev)
        st.last_error = ev if cat == "nccl-error" else None

    def _elastic(self, ln: LogLine, st: _Stream, body: str) -> bool:
        if body.startswith("Root Cause (first observed failure)"):
            st.elastic, st.elastic_root = {}, True
            return True
        if body.startswith("Failures:"):
            st.elastic, st.elastic_root = {}, False
            return True
        m = ELASTIC_FIELD.match(body)
        if not m:
            return False
        st.elastic[m.group(1)] = m.group(2).strip()
        if m.group(1) != "exitcode":
            return True
        f, st.elastic = st.elastic, {}
        code = f["exitcode"].split()[0]
        rank = local = None
        rm = ELASTIC_RANK.match(f.get("rank", ""))
        if rm:
            rank, local = int(rm.group(1)), int(rm.group(2))
        host = f.get("host") or ln.host
        if rank is not None and host:
            self.scan.rank_nodes.setdefault(rank, set()).add(host)
        self.scan.exits.append(ExitRecord(code, [rank] if rank is not None else [], host,
                                          "torchelastic"))
        cat = "sigterm" if code in ("-15", "143") else "launcher-report"
        ev = Evidence(cat, ln, rank, host, f"exit code {code}" + (
            f", local rank {local}" if local is not None else ""),
            exit_code=int(code) if code.lstrip("-").isdigit() else None)
        t = f.get("time")
        stamp = parse_time(t) if t else None
        if stamp is not None:
            ev.where = replace(ln, stamp=stamp)
        self.scan.add(ev)
        return True

    def _line(self, ln: LogLine, body: str) -> None:
        add = self.scan.add
        m = SRUN_EXIT.match(body)
        if m:
            tasks = task_list(m.group(2))
            for t in tasks:
                self.scan.task_nodes.setdefault(t, m.group(1))
            code = m.group(4) or m.group(3)
            self.scan.exits.append(ExitRecord(code, tasks, m.group(1), "srun"))
            cat = "host-oom" if code == "Out Of Memory" else "srun-exit"
            add(Evidence(cat, ln, None, m.group(1), f"task(s) {m.group(2).strip()}: {code}",
                         exit_code=int(code) if code.isdigit() else None))
            return
        m = EXECVE.search(body)
        if m:
            add(Evidence("command-not-found", ln, ln.rank, ln.host, m.group(1)))
            return
        if "Lmod has detected the following error" in body:
            add(Evidence("module-load-error", ln, ln.rank, ln.host))
            return
        m = SUBMITIT.search(body)
        if m:
            cat = "preemption" if m.group(2) == "preempted" else "time-limit"
            add(Evidence(cat, ln, None, None, f"signal {m.group(1)}"))
            return
        m = CLOSING.search(body)
        if m:  # the agent stops its other workers after one failed: the cascade
            add(Evidence("sigterm", ln, ln.rank, ln.host,
                         f"the launcher sent {m.group(2)} to worker process {m.group(1)}"))
            return
        m = re.search(r"Received (\d+) death signal", body)
        if m:
            add(Evidence("sigterm", ln, ln.rank, ln.host, f"received signal {m.group(1)}"))
            return
        m = STEPD_CANCEL.search(body)
        if m:
            why = (m.group(5) or "").strip().upper()
            cat = {"TIME LIMIT": "time-limit", "PREEMPTION": "preemption",
                   "JOB REQUEUE": "preemption",
                   "NODE FAILURE": "node-failure"}.get(why, "cancelled")
            add(Evidence(cat, ln, None, m.group(3), f"{m.group(1).lower()} {m.group(2)}"))
            return
        m = STEPD_OOM.search(body)
        if m:
            add(Evidence("host-oom", ln, None, ln.host, f"{m.group(1)} OOM kill(s) in {m.group(2)}"))
            return
        if "NET/Socket : Using" in body:
            self._stream(ln).sockets = ln
            if VIRTUAL_IFACE.search(body):
                add(Evidence("network-interface", ln, None, ln.host))
            return
        if VIRTUAL_IFACE.match(body.strip()):
            st = self._stream(ln)
            if st.sockets is not None:
                add(Evidence("network-interface", st.sockets, None, st.sockets.host))
                st.sockets = None
            return
        m = NCCL_LINE.match(body)
        if m:
            msg = m.group(5)
            cat = "waiting-for-peer" if PEER_LOST.search(msg) else "nccl-error"
            add(Evidence(cat, ln, self._rank(ln, msg), m.group(1), f"device {m.group(4)}"))
            return
        if "Watchdog caught collective operation timeout" in body:
            add(Evidence("nccl-timeout", ln, self._rank(ln, body), ln.host))
            return
        if "ncclUniqueId" in body or "crash on rank" in body:
            add(Evidence("waiting-for-peer", ln, self._rank(ln, body), ln.host,
                         suspect=0 if "crash on rank 0" in body else None))
            return
        if "Xid" in body and ("NVRM" in body or re.search(r"Xid \(PCI:", body)) or \
                re.search(r"(?i)uncorrectable ECC|ECC error", body):
            add(Evidence("gpu-hardware", ln, self._rank(ln, body), ln.host))
            return
        m = NOT_FOUND.search(body)
        if m:
            add(Evidence("command-not-found", ln, ln.rank, ln.host, m.group(1)))
            return
        if "No space left on device" in body:
            add(Evidence("disk-full", ln, ln.rank, ln.host))
            return
        if "out of memory" in body and ("CUDA" in body or "cuda" in body):
            m = CUDA_OOM.search(body)
            add(Evidence("cuda-oom", ln, self._rank(ln, body), ln.host,
                         f"tried to allocate {m.group(1)}" if m else ""))
            return
        if re.search(r"Segmentation fault|Fatal Python error: (?:Segmentation|Aborted)|"
                     r"core dumped", body):
            add(Evidence("segfault", ln, ln.rank, ln.host))
            return
        if re.search(r"terminate called after throwing|what\(\):\s+CUDA error", body) and \
                "CUDA error" in body:
            add(Evidence("cuda-error", ln, ln.rank, ln.host))
            return
        if body.startswith(("srun:", "slurmstepd")):
            return
        m = MID_EXCEPTION.search(body)
        if m:
            cat = classify_exception(m.group(1), m.group(2))
            add(Evidence(cat, ln, self._rank(ln, body), ln.host))
            return
        if GENERIC_ERROR.search(body):
            cat = "cuda-error" if "CUDA version" in body else "error-message"
            add(Evidence(cat, ln, self._rank(ln, body), ln.host))

    # -- stack dumps (a hung job: py-spy dump, faulthandler) --------------------------------

    def _dump(self, ln: LogLine, st: _Stream, body: str) -> bool:
        if DUMP_HEADER.match(body) or body.startswith("Process ") and ": " in body and \
                st.traceback is None and re.match(r"Process \d+: ", body):
            if st.dump is None:
                st.dump, st.dump_line = [], ln
            return True
        if st.dump is None:
            return False
        m = PYSPY_FRAME.match(body) or FAULT_FRAME.match(body)
        if m:
            fn = m.group(1) if PYSPY_FRAME.match(body) else m.group(3)
            st.dump.append((fn, ln))
            return True
        self._end_dump(ln, st)
        return False

    def _end_dump(self, ln: LogLine, st: _Stream) -> None:
        if st.dump and st.dump_line is not None:
            self.scan.dumps[_key(st.dump_line)] = (st.dump, st.dump_line)
        st.dump, st.dump_line = None, None

    def _close_dumps(self, path: str) -> None:
        for k, st in self._streams.items():
            if k[0] == path and st.dump is not None:
                self._end_dump(st.dump_line or LogLine(path, 0, "", ""), st)
        self._hang()

    def _hang(self) -> None:
        """The odd rank out: among ≥ 3 dumped stacks, the one whose frames differ from all the
        others (which agree) is the rank the others wait for."""
        dumps = self.scan.dumps
        if len(dumps) < 3 or any(e.category == "hang" for e in self.scan.evidence):
            return
        sigs = Counter(tuple(f for f, _ in frames) for frames, _ in dumps.values())
        if len(sigs) != 2:
            return
        (common, n), (odd, one) = sigs.most_common(2)
        if one != 1 or n < 2:
            return
        for frames, header in dumps.values():
            names = tuple(f for f, _ in frames)
            if names != odd:
                continue
            # the first frame where the odd stack parts from its peers'
            k = next((i for i, f in enumerate(names) if i >= len(common) or f != common[i]), 0)
            fn, ln = frames[k] if frames else ("", header)
            self.scan.add(Evidence("hang", ln, header.rank, header.host,
                                   f"stack differs from {n} peers' in {fn}"))
