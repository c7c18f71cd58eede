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

from .diagnostics import Related
from .facts.argv import walk
from .facts.wrappers import base as _base
from .facts.wrappers import WRAPPER_NAMES, unwrap
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
#: Open MPI mpirun(1) (v4.1: orte/tools/orterun, opal cmd_line) and MPICH Hydra mpiexec(1)
#: options that take words, with how many; the others are flags. ``-x VAR`` (Open MPI) and
#: ``-genv NAME VALUE`` / ``-env`` (Hydra) pass environment variables; -H/-host, -hostfile and
#: -machinefile name the hosts
MPI_TAKES = {
    "np": 1, "n": 1, "c": 1, "npernode": 1, "N": 1, "ppn": 1, "npersocket": 1, "map-by": 1,
    "rank-by": 1, "bind-to": 1, "H": 1, "host": 1, "hosts": 1, "hostfile": 1, "machinefile": 1,
    "f": 1, "default-hostfile": 1, "rf": 1, "rankfile": 1, "x": 1, "genvlist": 1, "envlist": 1,
    "mca": 2, "gmca": 2, "genv": 2, "env": 2, "wdir": 1, "wd": 1, "prefix": 1,
    "output-filename": 1, "tune": 1, "am": 1, "launcher": 1, "bootstrap": 1, "iface": 1,
    "cpus-per-proc": 1, "cpus-per-rank": 1, "timeout": 1, "path": 1, "preload-files": 1,
}
#: mpirun/mpiexec spellings read as one name: -n/-c/--np are -np; -N, -ppn (Hydra) and
#: --map-by ppr:N:node are per node (steps.py reads the last); -H/-hosts are -host
MPI_NAMES = {"n": "np", "c": "np", "N": "npernode", "ppn": "npernode", "H": "host",
             "hosts": "host", "machinefile": "hostfile", "f": "hostfile"}
PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
#: CPython's short options and whether each takes an argument (Python/getopt.c SHORT_OPTS,
#: 3.12; -J and -R are kept for older releases) and the long options that take one
#: (Python/initconfig.c: --check-hash-based-pycs MODE)
PYTHON_SHORT = {c: c in "cmWX" for c in "bBcdEhiIJmOPqRsStuvVWxX?"}
PYTHON_LONG_ARG = frozenset({"check-hash-based-pycs"})
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

    def option_related(self, name: str, what: str) -> list[Related]:
        """Where option ``name`` is written, when its value word sits elsewhere (``--nnodes
        $NNODES`` inside ``LAUNCHER="…"``: the value word points at ``NNODES=8``): the option
        word, for a finding anchored on the value; [] when the value is part of that word."""
        w = self.args.get(name)
        k = next((i for i, x in enumerate(self.words) if x is w), None)
        if w is None or k is None or k == 0 or not (self.words[k - 1].text or "").startswith("-"):
            return []
        opt = self.words[k - 1]
        return [Related(opt.start, opt.end, f"{what} {opt.text} {w.value or w.text}")]


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


def _mpi_option(name: str, long: bool) -> tuple[str, int]:
    """An mpirun/mpiexec option's name (:data:`MPI_NAMES`) and how many words it takes."""
    return MPI_NAMES.get(name, name), MPI_TAKES.get(name, 0)


def python_options(argv: list[Word]) -> tuple[str | None, int, str | None, int]:
    """Read the interpreter's own options at the front of ``python …`` (``argv[0]`` is the
    interpreter) as CPython's getopt does (``Python/getopt.c``, ``SHORT_OPTS``
    ``"bBc:dEhiIJm:OPqRsStuvVW:xX:?"``, 3.12): flags cluster (``-uB``), ``-W``/``-X`` take the
    rest of their word or the next word (``-W ignore``, ``-Wignore``), and ``-c``/``-m`` end the
    options, their argument being the command or module (``-um torch.distributed.run``).

    Returns ``(mode, i, module, j)``: ``mode`` is ``"m"``, ``"c"``, ``"file"`` (a script path or
    ``-``), or None (no program: the options run out or a word is not literal); ``i`` is the
    index of the word that starts the program (the ``-m``/``-c`` word, or the script);
    ``module`` is ``-m``'s module name (None when not literal or another mode); ``j`` is the
    index of the first argument to the program."""
    i = 1
    while i < len(argv):
        v = argv[i].value
        if v is None:
            return "file", i, None, i + 1  # `python "$SCRIPT"`: the program, whatever it is
        if v == "-" or not v.startswith("-"):
            return "file", i, None, i + 1
        if v == "--":
            return ("file", i + 1, None, i + 2) if i + 1 < len(argv) else (None, i + 1, None, i + 1)
        if v.startswith("--"):
            name, eq, _ = v[2:].partition("=")
            i += 2 if name in PYTHON_LONG_ARG and not eq else 1
            continue
        for k in range(1, len(v)):
            takes = PYTHON_SHORT.get(v[k])
            if not takes:
                continue
            rest = v[k + 1:]
            if v[k] in "mc":
                if rest:
                    return v[k], i, rest if v[k] == "m" else None, i + 1
                mod = argv[i + 1].value if i + 1 < len(argv) else None
                return v[k], i, mod if v[k] == "m" else None, i + 2
            i += 0 if rest else 1  # -W ignore: the next word is the option's argument
            break
        i += 1
    return None, i, None, i


#: the command names :func:`find_launch` reads a launch from (besides python's, ``PYTHON``)
LAUNCHER_NAMES = frozenset({"torchrun", "accelerate", "colossalai", "deepspeed", "mpirun",
                            "mpiexec", "orterun"})


def may_launch(first: Word) -> bool:
    """Whether a command whose first word is ``first`` may start a launcher: it names one,
    python or a wrapper, or it is an array expansion (``"${CMD[@]}"``) whose elements may. When
    False, :func:`find_launch` finds nothing in the command's words, arrays expanded or not (a
    cheap test for most commands)."""
    if "[@]" in first.text:
        return True
    name = _base(first)
    return name in LAUNCHER_NAMES or name in WRAPPER_NAMES or PYTHON.match(name) is not None


def find_launch(words: list[Word]) -> Launch | None:
    """The launcher that ``words`` (an argv, wrappers included) starts, or None."""
    if not words or not may_launch(words[0]):
        return None
    argv = unwrap(words)
    if not argv:
        return None
    name = _base(argv[0])
    if name == "torchrun":
        return _with_options("torchrun", "torchrun", argv, 1, TORCHRUN_OPTS, None)
    if PYTHON.match(name):
        mode, i, mod, j = python_options(argv)
        if mode == "m" and mod in TORCHRUN_MODULES:
            return _with_options("torchrun", TORCHRUN_MODULES[mod], argv, j, TORCHRUN_OPTS, None)
        if mode == "m" and mod == "accelerate.commands.launch":
            return _with_options("torchrun", "accelerate", argv, j, None, ALIASES["accelerate"])
        return Launch("python", "python", argv[0], argv, {}, argv[i:])
    if name == "accelerate" and len(argv) > 1 and argv[1].value == "launch":
        return _with_options("torchrun", "accelerate", argv, 2, None, ALIASES["accelerate"])
    if name == "colossalai" and len(argv) > 1 and argv[1].value == "run":
        return _with_options("torchrun", "colossalai", argv, 2, None, ALIASES["colossalai"])
    if name == "deepspeed":
        return _with_options("deepspeed", "deepspeed", argv, 1, None, ALIASES["deepspeed"])
    if name in ("mpirun", "mpiexec", "orterun"):
        o = walk(argv, 1, _mpi_option, "mpi", lambda w: True)
        return Launch("mpirun", name, argv[0], argv, o.values, argv[o.end:], o.hidden)
    return None
