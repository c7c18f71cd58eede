"""The training stand-in of the slurm tier: join the world over gloo, all_reduce once, report.

Reads the torch env:// contract (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE; LOCAL_RANK as a
launcher sets it) and prints one line the tests parse:
``PROBE rank=R local_rank=L world_size=W host=H sum=S`` where S is the all_reduce (sum) of one
``1.0`` per rank, so S == W exactly when every rank took part in the same collective.
"""
import os
import socket
import sys

import torch
import torch.distributed as dist


def say(line: str) -> None:
    """One write(2) per line: the ranks of a node share the task's output pipe, and a line
    written in one call (under PIPE_BUF) is never split by another rank's."""
    os.write(1, (line + "\n").encode())


def main() -> None:
    env = {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR",
                                          "MASTER_PORT")}
    say(f"START host={socket.gethostname()} " + " ".join(f"{k}={v!r}" for k, v in env.items()))
    dist.init_process_group("gloo", init_method="env://")
    total = torch.ones(1)
    dist.all_reduce(total)
    say(f"PROBE rank={dist.get_rank()} local_rank={os.environ.get('LOCAL_RANK', '?')} "
        f"world_size={dist.get_world_size()} host={socket.gethostname()} sum={int(total.item())}")
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
