"""What an exit status in a job's log means.

Forms: a shell's exit code (128 + N for a process ended by signal N: bash(1) "EXIT STATUS"),
torchelastic's negative code for a signal (``exitcode: -9``: Python's ``Popen.returncode``), and
srun's signal names (``Killed``, ``Terminated``, ``Out Of Memory``: Slurm src/srun/step_launch.c).
"""
from __future__ import annotations

from .recognisers import ExitRecord

SIGNALS = {6: "SIGABRT (an abort in native code, e.g. a failed assertion in C++/CUDA)",
           9: "SIGKILL (killed: often the out-of-memory killer, or the launcher/Slurm forcing "
              "the cascade down after SIGTERM)",
           11: "SIGSEGV (a segmentation fault in native code)",
           15: "SIGTERM (stopped: the time limit, scancel, or the cascade after another rank "
               "died)"}
NAMES = {"Killed": 9, "Terminated": 15, "Segmentation fault": 11, "Aborted": 6}
CODES = {0: "success", 1: "an error: a Python exception or sys.exit(1)",
         2: "a usage error (bad arguments)",
         126: "the command is not executable", 127: "command not found"}


def meaning(code: str) -> str:
    """The meaning of one exit status as written in the log (``"1"``, ``"-9"``, ``"137"``,
    ``"Killed"``, ``"Out Of Memory"``)."""
    if code == "Out Of Memory":
        return "killed by Slurm's cgroup out-of-memory handler (host memory: ask for more --mem)"
    if code in NAMES:
        return f"signal {NAMES[code]}: {SIGNALS[NAMES[code]]}"
    try:
        n = int(code)
    except ValueError:
        return code
    if n < 0 and -n in SIGNALS:
        return f"signal {-n}: {SIGNALS[-n]}"
    if n > 128 and n - 128 in SIGNALS:
        return f"128 + {n - 128}, signal {n - 128}: {SIGNALS[n - 128]}"
    if n < 0:
        return f"signal {-n}"
    return CODES.get(n, "an error (the program's own exit code)")


def summarise(records: list[ExitRecord]) -> list[dict]:
    """One ``{code, meaning, tasks, ranks}`` per distinct code, in first-seen order, each list
    sorted without repeats: ``tasks`` are srun's task ids (``srun: error: node: task 3: …``;
    under a launcher such as torchrun a task is a node's agent, not a rank), ``ranks`` the
    global ranks torchelastic's reports name (``rank : 5 (local_rank: 1)``)."""
    out: dict[str, tuple[set[int], set[int]]] = {}
    for r in records:
        tasks, ranks = out.setdefault(r.code, (set(), set()))
        (ranks if r.source == "torchelastic" else tasks).update(r.tasks)
    return [{"code": code, "meaning": meaning(code), "tasks": sorted(tasks),
             "ranks": sorted(ranks)} for code, (tasks, ranks) in out.items()]
