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


def main() -> None:
    print(f"START host={socket.gethostname()} RANK={os.environ.get('RANK')!r} "
          f"LOCAL_RANK={os.environ.get('LOCAL_RANK')!r} WORLD_SIZE={os.environ.get('WORLD_SIZE')!r} "
          f"MASTER_ADDR={os.environ.get('MASTER_ADDR')!r} MASTER_PORT={os.environ.get('MASTER_PORT')!r}",
          flush=True)
    dist.init_process_group("gloo", init_method="env://")
    total = torch.ones(1)
    dist.all_reduce(total)
    print(f"PROBE rank={dist.get_rank()} local_rank={os.environ.get('LOCAL_RANK', '?')} "
          f"world_size={dist.get_world_size()} host={socket.gethostname()} sum={int(total.item())}",
          flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
