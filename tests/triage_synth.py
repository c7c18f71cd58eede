"""Long synthetic job logs for triage: real failure lines (the wordings of torch, torchelastic,
NCCL, srun and slurmstepd, as the slurm tier and public reports show them) interleaved with
real kinds of noise (UserWarnings, NCCL INFO chatter, progress bars with carriage returns,
ANSI colour, training iteration lines, NCCL frame dumps), seeded so each run writes the same
text. Each scenario knows its root line and first failing rank, written here by hand.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

NOISE = [
    ("/usr/local/lib/python3.10/dist-packages/torch/utils/data/dataloader.py:558: UserWarning: "
    "This DataLoader will create 16 worker processes in total. Our suggested max number of "
    "worker in current system is 8, which is smaller than what this DataLoader is going to "
    "create. Please be aware that excessive worker creation might get DataLoader running slow "
    "or even freeze, lower the worker number to avoid potential slowness/freeze if necessary."),
    "{host}:{pid}:{pid} [{dev}] NCCL INFO NET/IB : No device found.",
    "{host}:{pid}:{pid} [{dev}] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.{dev}<0>",
    "{host}:{pid}:{pid} [{dev}] NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7",
    (" iteration     {it}/  100000 | consumed samples:       {it}00 | elapsed time per iteration "
    "(ms): 1203.4 | learning rate: 2.999E-04 | global batch size:   256 | lm loss: 3.2{dev}E+00 "
    "| loss scale: 1.0 | grad norm: 0.41{dev} | number of skipped iterations:   0 | number of "
    "nan iterations:   0 |"),
    "\x1b[32m[INFO]\x1b[0m step {it}: loss=2.{dev}31 lr=3e-4 tokens/s=41234 (error bound 1e-3)",
    ("Epoch 0:  {dev}3%|███▌      | {it}/9000 [01:23<11:02, 12.1it/s, loss=2.31]\r"
    "Epoch 0:  {dev}4%|███▌      | {it}/9000 [01:24<11:01, 12.1it/s, loss=2.30]"),
    ("[W1201 10:0{dev}:12.000000 {pid} torch/distributed/run.py:793] Setting OMP_NUM_THREADS "
    "environment variable for each process to be 1 in default, to avoid your system being "
    "overloaded, please further tune the variable for optimal performance in your application "
    "as needed."),
    ("transformer_engine/pytorch/attention.py:5123: UserWarning: flash-attn v3 may provide "
    "important feature support or performance improvement. Please install flash-attn v3 by ..."),
    "  warnings.warn(",
    ("{host}:{pid}:{pid} [{dev}] NCCL INFO comm 0x55d1c7a0 rank {dev} nranks 16 cudaDev {dev} "
    "nvmlDev {dev} busId 1{dev}000 commId 0x7a2f2e1b - Init COMPLETE"),
    ("wandb: WARNING Serializing object of type dict that is 2196 bytes (timeout=30 is the "
    "default)"),
    "> building train, validation, and test datasets ...",
]

WATCHDOG = ("[rank{r}]:[E1201 10:{m:02d}:{s:02d}.123456789 ProcessGroupNCCL.cpp:616] [Rank {r}] "
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2201, "
            "OpType=ALLREDUCE, NumelIn=8192, NumelOut=8192, Timeout(ms)=600000) ran for 600043 "
            "milliseconds before timing out.")
FRAME_DUMP = [("Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/"
              "ProcessGroupNCCL.cpp:618 (most recent call first):"),
              ("frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 "
              "(0x7f1c in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)")]


def elastic_report(entries: list[tuple[str, str, int, int, str]], script: str = "train.py"
                   ) -> list[str]:
    """torchelastic's ChildFailedError block; entries: (time, host, rank, local, exitcode),
    the first is the node's root cause."""
    def entry(i: int, e: tuple[str, str, int, int, str]) -> list[str]:
        t, host, rank, local, code = e
        tb = (f"Signal {code[1:]} ({'SIGTERM' if code == '-15' else 'SIGKILL'}) received by "
              "PID 4242" if code.startswith("-") else
              "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
        return [f"[{i}]:", f"  time      : {t}", f"  host      : {host}",
                f"  rank      : {rank} (local_rank: {local})",
                f"  exitcode  : {code} (pid: 4242)", "  error_file: <N/A>", f"  traceback : {tb}"]
    out = ["Traceback (most recent call last):",
           '  File "/usr/local/bin/torchrun", line 8, in <module>', "    sys.exit(main())",
           "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
           "=" * 60, f"{script} FAILED", "-" * 60, "Failures:"]
    rest = entries[1:]
    if not rest:
        out.append("  <NO_OTHER_FAILURES>")
    for i, e in enumerate(rest, 1):
        out += entry(i, e)
    out += ["-" * 60, "Root Cause (first observed failure):"] + entry(0, entries[0]) + ["=" * 60]
    return out


def traceback_lines(exc: str, frames: list[tuple[str, int, str]]) -> list[str]:
    out = ["Traceback (most recent call last):"]
    for path, line, fn in frames:
        out += [f'  File "{path}", line {line}, in {fn}', "    ..."]
    return out + [exc]


@dataclass
class Scenario:
    """A synthetic job: ``events`` are (label, lines) blocks of real failure output in the order
    the job prints them; ``root`` the substring of the root line (None: the log shows no cause),
    ``rank`` the first failing rank (None: not established)."""

    name: str
    events: list[tuple[str, list[str]]]
    root: str | None
    rank: int | None
    category: str | None
    hosts: tuple[str, ...] = ("gpu-a100-001", "gpu-a100-002")
    labels: bool = True  # srun --label prefixes
    extra: dict = field(default_factory=dict)


USER = [("/workspace/train.py", 212, "<module>"), ("/workspace/train.py", 180, "main"),
        ("/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", 1553, "_call_impl")]


def scenarios() -> list[Scenario]:
    """The synthetic jobs, with their expected root lines and first ranks."""
    h1, h2 = "gpu-a100-001", "gpu-a100-002"
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a "
           "total capacity of 79.15 GiB of which 1.06 GiB is free. Including non-PyTorch "
           "memory, this process has 78.08 GiB memory in use.")
    out = [
        Scenario("cuda-oom-rank13", [
            ("1", [f"[rank13]: {x}" for x in traceback_lines(oom, USER)]),
            ("0", [WATCHDOG.format(r=r, m=11, s=r) for r in range(8)] + FRAME_DUMP),
            ("1", [WATCHDOG.format(r=r, m=11, s=r - 8) for r in (8, 9, 10, 11, 12, 14, 15)]),
            ("1", elastic_report([("2024-12-01_10:01:02", h2, 13, 5, "1"),
                                  ("2024-12-01_10:11:44", h2, 8, 0, "-15")])),
            ("0", elastic_report([("2024-12-01_10:11:45", h1, 0, 0, "-15")])),
            ("", [f"srun: error: {h2}: task 1: Exited with exit code 1",
                  f"srun: error: {h1}: task 0: Exited with exit code 1"])],
            "CUDA out of memory. Tried to allocate 2.00 GiB", 13, "cuda-oom"),
        Scenario("time-limit", [
            ("", [("slurmstepd: error: *** JOB 81234 ON gpu-a100-001 CANCELLED AT "
                  "2024-12-01T12:00:07 DUE TO TIME LIMIT ***")]),
            ("0", [("torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 "
                   "got signal: 15")]),
            ("1", [("torch.distributed.elastic.multiprocessing.api.SignalException: Process 4243 "
                   "got signal: 15")]),
            ("", [f"srun: error: {h1}: task 0: Terminated", f"srun: error: {h2}: task 1: Terminated"])],
            "DUE TO TIME LIMIT", None, "time-limit"),
        Scenario("host-oom-node2", [
            ("", [("slurmstepd: error: Detected 1 oom_kill event in StepId=81235.0. Some of the "
                  "step tasks have been OOM Killed.")]),
            ("0", [("[rank3]:[E1201 10:02:11.000000000 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID "
                   "0(default_pg) Rank 3] Process group watchdog thread terminated with exception: "
                   "NCCL error: remote process exited or there was a network error, NCCL version "
                   "2.21.5")]),
            ("", [f"srun: error: {h2}: task 1: Out Of Memory",
                  f"srun: error: {h1}: task 0: Exited with exit code 1"])],
            "oom_kill event", None, "host-oom"),
        Scenario("import-error-node2", [
            ("1", [f"[rank{r}]: {x}" for r in (8,) for x in traceback_lines(
                "ModuleNotFoundError: No module named 'flash_attn'", USER[:1])]),
            ("0", [("[rank0]:[E1201 10:31:00.000000000 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0"
                   "(default_pg) Rank 0] ... torch.distributed.DistBackendError: [0] is setting up "
                   "NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store "
                   "by key '0', but store->get('0') got error: Socket Timeout")]),
            ("", [f"srun: error: {h2}: task 1: Exited with exit code 1"])],
            "No module named 'flash_attn'", 8, "import-error"),
        Scenario("unique-id-wait-only", [
            ("1", [f"[rank{r}]:[E1201 10:40:0{r - 8}.000000000 ProcessGroupNCCL.cpp:1785] [PG ID 0 "
                   f"PG GUID 0(default_pg) Rank {r}] Exception (either an error or timeout) "
                   "detected by watchdog at work: 1, last enqueued NCCL work: 1. "
                   "torch.distributed.DistBackendError: [{r}] is setting up NCCL communicator and "
                   "retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but "
                   "store->get('0') got error: Socket Timeout. This may indicate a possible "
                   "application crash on rank 0 or a network set up issue." for r in (8, 9, 10)])],
            None, 0, None),
        Scenario("hang-odd-rank-out", [
            ("0", [WATCHDOG.format(r=r, m=20, s=r) for r in (0, 1, 2, 4, 5, 6, 7)]),
            *[(str(r // 4), [f"[rank{r}]: Thread 0x7f00{r} (most recent call first):",
                             (f'[rank{r}]:   File "/workspace/train.py", line '
                             f'{99 if r == 3 else 140} in '
                             f'{"load_batch" if r == 3 else "train_step"}'),
                             f'[rank{r}]:   File "/workspace/train.py", line 212 in <module>'])
              for r in range(8)]],
            "load_batch", 3, "hang", hosts=("node-a1", "node-a2")),
        Scenario("disk-full-rank0", [
            ("0", [f"[rank0]: {x}" for x in traceback_lines(
                "OSError: [Errno 28] No space left on device", [
                    ("/workspace/train.py", 301, "save_checkpoint"),
                    ("/usr/local/lib/python3.10/dist-packages/torch/serialization.py", 652,
                     "save")])]),
            ("1", [f"[rank{r}]: torch.distributed.DistBackendError: [{r}] is setting up NCCL "
                   "communicator and retrieving ncclUniqueId from [0] via c10d key-value store "
                   "by key '1', but store->get('1') got error: Connection reset by peer"
                   for r in (8, 9)])],
            "No space left on device", 0, "disk-full", labels=False),
        Scenario("hetjob-command-not-found", [
            ("P1 1", ["/var/spool/slurmd/job81240/slurm_script: line 21: uv: command not found"]),
            ("P0 0", [("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"
                      ": rendezvous timed out")])],
            "uv: command not found", None, "command-not-found"),
    ]
    return out


def render(s: Scenario, noise_lines: int, seed: int = 0, width: int | None = None
           ) -> Iterator[str]:
    """The scenario's log as lines: ``noise_lines`` lines of noise, the failure blocks spread
    over the second half (in order), each line labelled like ``srun --label`` (padded to
    ``width``) when the scenario has labels."""
    rnd = random.Random(f"{s.name}-{seed}")
    width = width or 2
    total = noise_lines + sum(len(b) for _, b in s.events)
    positions = sorted(rnd.sample(range(noise_lines // 2, max(noise_lines, 1) + len(s.events)),
                                  len(s.events))) if noise_lines else list(range(len(s.events)))
    blocks = dict(zip(positions, s.events, strict=False))
    it = 0
    for i in range(noise_lines + len(s.events)):
        if i in blocks:
            label, block = blocks[i]
            for line in block:
                yield _label(label, line, width) if s.labels and label else line
            continue
        it += 1
        task = rnd.randrange(2)
        text = rnd.choice(NOISE).format(host=s.hosts[task], pid=1000 + task, dev=rnd.randrange(8),
                                        it=it)
        yield _label(str(task), text, width) if s.labels else text
    del total


def _label(label: str, line: str, width: int) -> str:
    if label.startswith("P"):
        comp, task = label[1:].split()
        return f"P{comp} {task.rjust(width)}: {line}"
    return f"{label.rjust(width)}: {line}"


def expected_line(s: Scenario, lines: list[str]) -> int | None:
    """1-based number of the first line holding the scenario's root text (None when it has none)."""
    if s.root is None:
        return None
    for i, line in enumerate(lines, 1):
        if s.root in line:
            return i
    raise AssertionError(f"{s.name}: root text not rendered")


Writer = Callable[[str], object]
