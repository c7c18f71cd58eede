"""The layout differential's task: one line saying where this task runs and what reached it.

``python layout_probe.py SCRIPT STEP`` prints
``LAYOUT {"script", "step", "procid", "nodeid", "localid", "host", "vars"}`` (JSON), where
``vars`` holds every ``PROBE_*`` variable in the task's environment. The line is written with one
write(2): the tasks of a step share the step's output, and a line written in one call (under
PIPE_BUF) is never split by another task's. Needs no environment (it runs under
``srun --export=NONE`` too).
"""
import json
import os
import socket
import sys


def _int(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value is not None and value.isdigit() else None


def main() -> None:
    record = {
        "script": sys.argv[1], "step": int(sys.argv[2]), "procid": _int("SLURM_PROCID"),
        "nodeid": _int("SLURM_NODEID"), "localid": _int("SLURM_LOCALID"),
        "host": socket.gethostname(),
        "vars": {k: v for k, v in os.environ.items() if k.startswith("PROBE_")},
    }
    os.write(1, ("LAYOUT " + json.dumps(record, sort_keys=True) + "\n").encode())


if __name__ == "__main__":
    main()
