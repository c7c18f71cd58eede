"""Recognise what a command line runs: wrappers to look through, and distributed launchers with
their arguments normalised to torchrun's names.

Facts: torchrun accepts dashed and underscored spellings of its multi-word options, and
``python -m torch.distributed.run`` is torchrun; ``torch.distributed.launch`` is the deprecated
form with the same arguments (slurm-facts.md §8; torch/distributed/run.py get_args_parser).
``colossalai run`` and ``accelerate launch`` start torchrun themselves (cases F003, F004).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .facts.argv import walk
from .facts.wrappers import base as _base
from .facts.wrappers import unwrap
from .shell.model import Word

#: torchrun options -> whether they take a value (run.py get_args_parser)
TORCHRUN_OPTS = {
    "nnodes": True, "nproc-per-node": True, "node-rank": True, "master-addr": True,
    "master-port": True, "rdzv-backend": True, "rdzv-endpoint": True, "rdzv-id": True,
    "rdzv-conf": True, "standalone": False, "max-restarts": True, "monitor-interval": True,
    "start-method": True, "role": True, "module": False, "m": False, "no-python": False,
    "run-path": False, "log-dir": True, "redirects": True, "r": True, "tee": True, "t": True,
    "local-ranks-filter": True, "local-addr": True, "logs-specs": True, "numa-binding": True,
    "signals-to-handle": True, "use-env": False, "local-rank": True, "event-log-handler": True,
    "rdzv-timeout": True, "nproc_per_node": True, "virtual-local-rank": False,
    "node_rank": True, "max_restarts": True,
}
#: other launchers' option names mapped to torchrun's
ALIASES = {
    "accelerate": {"num-machines": "nnodes", "machine-rank": "node-rank",
                   "main-process-ip": "master-addr", "main-process-port": "master-port",
                   "num-processes": "num-processes", "rdzv-backend": "rdzv-backend"},
    "colossalai": {"nproc-per-node": "nproc-per-node", "nnodes": "nnodes",
                   "node-rank": "node-rank", "master-addr": "master-addr",
                   "master-port": "master-port", "hostfile": "hostfile", "host": "host"},
    "deepspeed": {"num-nodes": "nnodes", "num-gpus": "nproc-per-node", "node-rank": "node-rank",
                  "master-addr": "master-addr", "master-port": "master-port",
                  "hostfile": "hostfile", "include": "include", "launcher": "launcher"},
}
#: the store_true flags of the launchers whose other options all take a value: accelerate
#: (accelerate/commands/launch.py launch_command_parser), deepspeed
#: (deepspeed/launcher/runner.py parse_args), colossalai (colossalai/cli/launcher/__init__.py)
FLAGS = {
    "accelerate": frozenset({
        "cpu", "multi-gpu", "tpu", "ipex", "mps", "use-deepspeed", "use-fsdp", "use-megatron-lm",
        "use-xpu", "quiet", "q", "no-python", "module", "m", "debug", "same-network",
        "dynamo-use-fullgraph", "dynamo-use-dynamic", "tpu-use-cluster", "downcast-bf16",
        "enable-cpu-affinity"}),
    "deepspeed": frozenset({
        "no-python", "no-local-rank", "module", "force-multi", "save-pid", "elastic-training",
        "bind-cores-to-rank", "no-ssh", "no-ssh-check"}),
    "colossalai": frozenset({"m", "module"}),
}
PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
TORCHRUN_MODULES = {"torch.distributed.run": "torchrun", "torch.distributed.launch": "launch"}


@dataclass
class Launch:
    """A launcher invocation.

    ``kind``: ``torchrun`` (also ``python -m torch.distributed.run|launch``, ``colossalai run``
    and ``accelerate launch``, which start torchrun), ``deepspeed``, ``mpirun``, ``python`` (a
    plain entry point). ``anchor`` is the word to report on; ``args`` maps torchrun option names
    to their value words (flags map to the option word); ``program`` is the entry point's argv.
    """

    kind: str
    flavour: str
    anchor: Word
    words: list[Word]
    args: dict[str, Word] = field(default_factory=dict)
    program: list[Word] = field(default_factory=list)
    hidden: list[Word] = field(default_factory=list)  # bare $ARGS that may hold options

    @property
    def title(self) -> str:
        """The launcher as users write it (``torch.distributed.launch``, ``accelerate``)."""
        return {"launch": "torch.distributed.launch"}.get(self.flavour, self.flavour)

    def spelled(self, name: str) -> str:
        """Option ``name`` (torchrun's) as this launcher spells it (``--machine_rank`` for
        accelerate's ``node-rank``)."""
        if self.flavour in ("torchrun", "launch"):
            return "--" + name
        own = {v: k for k, v in ALIASES.get(self.flavour, {}).items()}.get(name, name)
        return "--" + own.replace("-", "_")

    def arg(self, name: str) -> str | None:
        w = self.args.get(name)
        return w.value if w is not None else None

    def has(self, name: str) -> bool:
        return name in self.args


def _with_options(kind: str, flavour: str, argv: list[Word], start: int,
                  known: dict[str, bool] | None, aliases: dict[str, str] | None) -> Launch:
    """A Launch whose options are read from ``argv[start:]`` as argparse reads them
    (:func:`facts.argv.walk`) up to the first non-option, which starts the program. A bare
    ``$ARGS`` or ``"${ARGS[@]}"`` among them is kept in ``hidden``: it may hold any option.
    ``known`` maps option names to whether they take a value (None: the launcher's options are
    not listed, each is read as taking the next word unless that word is an option)."""

    def lookup(name: str, long: bool) -> tuple[str, bool | None]:
        key = name.replace("_", "-")
        if aliases is not None:
            key = aliases.get(key, key)
        if known is not None:
            return key, known.get(key, known.get(name))
        return key, False if name.replace("_", "-") in FLAGS.get(flavour, ()) else None

    o = walk(argv, start, lookup, "argparse", lambda w: True)
    return Launch(kind, flavour, argv[0], argv, o.values, argv[o.end:], o.hidden)


def find_launch(words: list[Word]) -> Launch | None:
    """The launcher that ``words`` (an argv, wrappers included) starts, or None."""
    argv = unwrap(words)
    if not argv:
        return None
    name = _base(argv[0])
    if name == "torchrun":
        return _with_options("torchrun", "torchrun", argv, 1, TORCHRUN_OPTS, None)
    if PYTHON.match(name):
        i = 1
        while i < len(argv) and (argv[i].value or "").startswith("-") and argv[i].value != "-m" \
                and not (argv[i].value or "").startswith("-m"):
            i += 1
        flag = argv[i].value or "" if i < len(argv) else ""
        if flag.startswith("-m"):
            mod = flag[2:] or (argv[i + 1].value if i + 1 < len(argv) else None)
            j = i + (1 if flag[2:] else 2)
            if mod in TORCHRUN_MODULES:
                return _with_options("torchrun", TORCHRUN_MODULES[mod], argv, j, TORCHRUN_OPTS,
                                     None)
            if mod in ("accelerate.commands.launch",):
                return _with_options("torchrun", "accelerate", argv, j, None,
                                     ALIASES["accelerate"])
            return Launch("python", "python", argv[0], argv, {}, argv[i:])
        return Launch("python", "python", argv[0], argv, {}, argv[i:])
    if name == "accelerate" and len(argv) > 1 and argv[1].value == "launch":
        return _with_options("torchrun", "accelerate", argv, 2, None, ALIASES["accelerate"])
    if name == "colossalai" and len(argv) > 1 and argv[1].value == "run":
        return _with_options("torchrun", "colossalai", argv, 2, None, ALIASES["colossalai"])
    if name == "deepspeed":
        return _with_options("deepspeed", "deepspeed", argv, 1, None, ALIASES["deepspeed"])
    if name in ("mpirun", "mpiexec", "orterun"):
        return Launch("mpirun", name, argv[0], argv, {}, [])
    return None
