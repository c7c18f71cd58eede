"""The evidence categories triage reports: stable names (they are part of the JSON output and
of ``sbatch_lsp/schemas/triage.schema.json``), what each means, and whether it is a cause
(*origin*) or what other ranks show because something else failed (*cascade*).

Sources for the wordings each category stands for are named in the recognisers
(:mod:`sbatch_lsp.triage.recognisers`).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Category:
    """``name`` (stable), ``cascade`` (a consequence, never a root cause), ``strength`` (among
    origins seen at the same time, the higher explains more: a Slurm limit over a Python error
    over an echo), ``explanation`` (one sentence for people)."""

    name: str
    cascade: bool
    strength: int
    explanation: str


_ALL = [
    # origins
    Category("python-exception", False, 2,
             "a Python exception ended this rank's program"),
    Category("import-error", False, 3,
             "a module could not be imported: the environment of this task lacks a package "
             "(a different venv or container on this node, or a missing install)"),
    Category("file-not-found", False, 3,
             "a file was missing when this rank opened it: when another node writes it, the "
             "path must be on storage every node shares (a node-local cache or /tmp is not)"),
    Category("cuda-oom", False, 4,
             "the GPU ran out of memory on this rank (lower the micro-batch or sequence length, "
             "or shard more: tensor/pipeline parallelism, activation checkpointing)"),
    Category("host-oom", False, 5,
             "the node ran out of host memory and the kernel or Slurm's cgroup killed a task "
             "(SIGKILL: exit 137 / -9); ask for more --mem or load less per rank"),
    Category("address-in-use", False, 4,
             "the rendezvous port was already taken (EADDRINUSE): two launchers on one node, "
             "another job on the same node and port, or a port in the ephemeral range"),
    Category("rendezvous-error", False, 1,
             "the rendezvous (TCPStore / c10d) could not be joined: a wrong or empty address, "
             "a node that never started its launcher, or more launchers than --nnodes"),
    Category("nccl-error", False, 3,
             "NCCL failed to set up or use a communicator (network interface, InfiniBand, or a "
             "peer that died)"),
    Category("cuda-error", False, 4,
             "a CUDA runtime error on this rank (illegal memory access, device-side assert, "
             "launch failure)"),
    Category("gpu-hardware", False, 6,
             "the GPU reported a hardware fault (ECC error or NVIDIA Xid): drain the node and "
             "resubmit excluding it (--exclude)"),
    Category("time-limit", False, 7,
             "the job reached its time limit: Slurm sent SIGTERM (exit 143 / -15), then "
             "SIGKILL after KillWait; ask for more --time or checkpoint more often"),
    Category("preemption", False, 7,
             "the job was preempted by a higher-priority job (requeue it, or checkpoint and "
             "resume)"),
    Category("node-failure", False, 7,
             "a node of the allocation failed; Slurm ended the job (see slurmctld's log; "
             "--requeue resubmits such jobs)"),
    Category("cancelled", False, 6,
             "the job or step was cancelled (scancel, or a dependency): what it printed before "
             "shows what it was waiting for"),
    Category("command-not-found", False, 5,
             "a command was not found on the task's PATH (a module not loaded, a venv not "
             "activated, or a container that lacks it)"),
    Category("disk-full", False, 5,
             "a file system filled up (No space left on device): a checkpoint, cache or /tmp "
             "on a full disk"),
    Category("segfault", False, 3,
             "a process crashed in native code (segmentation fault or abort)"),
    Category("module-load-error", False, 5,
             "an environment module or environment could not be loaded (Lmod, conda/venv "
             "activate): what runs after it lacks its packages"),
    Category("network-interface", False, 1,
             "NCCL's socket transport lists container bridges or virtual interfaces (docker0, "
             "br-…, veth…) among the nodes' interfaces: set NCCL_SOCKET_IFNAME to the real "
             "network"),
    Category("error-message", False, 1,
             "a program reported an error (no more specific evidence in the log)"),
    Category("hang", False, 2,
             "the job hung; this rank's stack differs from its peers', which wait for it"),
    # cascade
    Category("sigterm", True, 0,
             "SIGTERM (exit 143 / -15): the launcher or Slurm stopped this rank after another "
             "failed, or at the time limit"),
    Category("nccl-timeout", True, 0,
             "an NCCL collective timed out (watchdog): this rank waited for a peer that had "
             "failed or was stuck"),
    Category("waiting-for-peer", True, 0,
             "this rank waited for, or lost the connection to, a peer (ncclUniqueId, TCPStore, "
             "Gloo): the peer was busy or dead"),
    Category("child-failed", True, 0,
             "torchelastic's summary of failed workers (ChildFailedError), printed by every "
             "node that had one"),
    Category("launcher-report", True, 0,
             "a failed worker as torchelastic's report lists it"),
    Category("srun-exit", True, 0,
             "srun's echo of the tasks' exit status"),
]
CATEGORIES: dict[str, Category] = {c.name: c for c in _ALL}
