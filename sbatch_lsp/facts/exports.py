"""Which variables the batch shell exports at a point of the script: what reaches srun's
environment and, through ``--export=ALL``, the steps' tasks.

Bash facts (bash(1) "SHELL BUILTIN COMMANDS" and "ENVIRONMENT", bash 5.x): the export attribute
belongs to the variable, not to one assignment, so ``N=v; export N``, ``export N; N=v`` and
``export N=v`` all export it, and a later plain ``N=w`` stays exported; ``declare -x``/``typeset
-x`` export, ``declare +x`` and ``export -n`` remove the attribute (the variable keeps its value
in the batch shell); ``unset`` removes the variable and its attribute, so a later ``N=v`` is not
exported again; ``set -a``/``set -o allexport`` marks every variable *assigned* while it is on
(``set +a``/``set +o allexport`` ends that; variables assigned meanwhile stay exported). A prefix
assignment (``N=v cmd``) reaches only ``cmd``; ``local`` variables and commands inside a command
substitution (a subshell) do not change the batch shell's exports; ``export -f``/``unset -f`` are
about functions. The script is read in text order (a function body's exports count where the
body is written, as for a function defined before it is called).
"""
from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter

from ..shell import parse as shell_parse
from ..shell.model import Assignment, Command, Script, allexport_toggles

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\+?=")
EXPORT, UNEXPORT, UNSET, ASSIGNED = "export", "unexport", "unset", "assign"
#: the commands that change a variable's export attribute (:meth:`Exports._command`)
BUILTINS = frozenset({"set", "unset", "export", "declare", "typeset", "readonly"})


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class Event:
    """One change to a variable's export attribute (``kind``: ``export``, ``unexport``,
    ``unset``, or ``assign`` for a plain assignment, which exports only under ``set -a``) at
    character offset ``at``."""

    name: str
    at: int
    kind: str


class Exports:
    """The batch shell's export state along ``script`` (the batch script, not a nested one)."""

    def __init__(self, script: Script):
        self.events: dict[str, list[Event]] = {}
        #: (offset, on) for each ``set -a``/``set +a``, in text order
        self.allexport: list[tuple[int, bool]] = []
        assigning: list[Command] = []  # the plain assignment commands (NAME=v)
        for cmd in script.commands:
            if cmd.in_substitution:
                continue
            words = cmd.words
            if not words:
                assigning.append(cmd)
            elif words[0].value in BUILTINS:
                self._command(cmd)
        self.allexport.sort()
        self._toggles = [at for at, _ in self.allexport]
        self._add_assigned(assigning)
        for found in self.events.values():
            if len(found) > 1:  # (most names: one event, nothing to order)
                found.sort(key=attrgetter("at"))
        self._timelines: dict[str, tuple[list[int], list[bool], bool]] = {}

    def _add(self, e: Event) -> None:
        self.events.setdefault(e.name, []).append(e)

    def _add_assigned(self, assigning: list[Command]) -> None:
        """The :data:`ASSIGNED` events of those of the plain assignments of the commands
        ``assigning`` made while ``set -a`` is on (the toggles all read and sorted).
        One made while it is off changes no export attribute (:meth:`_timeline` keeps the
        state across it), so leaving it out gives the same answers; in most scripts ``set -a``
        is never on, and their assignments (some ten thousand in the corpus) cost no event."""
        if not any(on for _, on in self.allexport):
            return
        for cmd in assigning:
            for a in cmd.assignments:
                if self.allexport_at(a.start):
                    self._add(Event(a.name, a.start, ASSIGNED))

    def _command(self, cmd: Command) -> None:
        """The export events (or ``set -a`` toggles) of one of the :data:`BUILTINS`."""
        words = cmd.words
        if words[0].value == "set":
            self.allexport.extend(allexport_toggles(words[1:]))
            return
        local = words[0].value in ("declare", "typeset") and bool(cmd.function)
        # (memoised for the language server, whose lints read the same lines again; a
        # one-off lint reads each once: the memo's keys and misses would only add)
        changes = _changes if shell_parse.USE_FRAGMENTS else _changes.__wrapped__
        for var, k, kind in changes(tuple([w.text for w in words]),
                                    tuple([w.value for w in words]), local):
            self._add(Event(var, words[k].start, kind))

    def allexport_at(self, at: int) -> bool:
        """Whether ``set -a`` is in force at offset ``at``."""
        k = bisect_left(self._toggles, at)
        return self.allexport[k - 1][1] if k else False

    def exported(self, name: str, before: int | None = None) -> bool:
        """Whether ``name`` carries the export attribute just before offset ``before``; with no
        offset, whether it carries it at any point of the script. O(log n) in the name's
        events (the steps ask it for every variable at every step)."""
        ats, states, ever = self._timeline(name)
        if before is None or not ever:  # (never exported: no point of the script to look for)
            return ever
        k = bisect_left(ats, before)  # the events before the offset
        return states[k - 1] if k else False

    def _timeline(self, name: str) -> tuple[list[int], list[bool], bool]:
        """(``name``'s event offsets in order, whether it carries the attribute after each,
        whether it ever does), made on the first question about ``name``."""
        found = self._timelines.get(name)
        if found is None:
            ats: list[int] = []
            states: list[bool] = []
            state = ever = False
            for e in self.events.get(name, ()):
                if e.kind == EXPORT:
                    state = True
                elif e.kind in (UNEXPORT, UNSET):
                    state = False
                elif self.allexport_at(e.at):
                    state = True
                ever = ever or state
                ats.append(e.at)
                states.append(state)
            found = self._timelines[name] = (ats, states, ever)
        return found


#: builtin commands' words (texts, values, whether a declaration is local) whose
#: :func:`_changes` the memo keeps (least recently used go first): the ``export`` lines of some
#: 50 open documents; a few hundred bytes each
CHANGES_CACHE_SIZE = 4096


@lru_cache(maxsize=CHANGES_CACHE_SIZE)
def _changes(texts: tuple[str, ...], values: tuple[str | None, ...],
             local: bool) -> tuple[tuple[str, int, str], ...]:
    """The export attribute changes of an ``unset``, ``export``, ``declare``, ``typeset`` or
    ``readonly`` command whose words have these ``texts`` and literal ``values`` (``local``: a
    ``declare``/``typeset`` in a function, which makes local variables): (variable, index of
    the word that names it, :data:`EXPORT`/:data:`UNEXPORT`/:data:`UNSET`/:data:`ASSIGNED`), in
    word order. A function of its arguments alone, memoised: an edit's lint reads again only
    the commands whose text it changed (the language server lints every version)."""
    name = values[0]
    flags, names = _split_flags(values, 1)
    out: list[tuple[str, int, str]] = []
    if name == "unset":
        if "f" not in flags:
            for k in names:
                v = values[k]
                if v and NAME.fullmatch(v):
                    out.append((v, k, UNSET))
        return tuple(out)
    if "f" in flags or "F" in flags or (name == "export" and "p" in flags and not names):
        return ()
    if name == "export":
        kind = UNEXPORT if "n" in flags else EXPORT
    elif "+x" in flags:
        kind = UNEXPORT
    else:
        kind = EXPORT if "x" in flags else ASSIGNED
    if local and "g" not in flags:
        return ()  # declare in a function makes a local variable
    for k in names:
        m = ASSIGN.match(texts[k])
        v = values[k]
        var = m.group(1) if m else (v if v and NAME.fullmatch(v) else None)
        if var is None or (kind == ASSIGNED and m is None):
            continue
        out.append((var, k, kind))
    return tuple(out)


def _split_flags(values: tuple[str | None, ...], start: int) -> tuple[set[str], list[int]]:
    """A builtin's option letters among the words from index ``start`` on (``-x`` as ``x``,
    ``+x`` as ``+x``), read from their literal ``values``, and the indexes of its other
    words."""
    flags: set[str] = set()
    rest: list[int] = []
    for k in range(start, len(values)):
        v = values[k] or ""
        if not rest and len(v) > 1 and v[0] in "-+" and v != "--" and v[1:].isalpha():
            flags |= {c if v[0] == "-" else "+" + c for c in v[1:]}
        elif not rest and v == "--":
            continue
        else:
            rest.append(k)
    return flags, rest



#: environment variables that libraries every task process loads read at start-up, with no read
#: in the script: exporting one is a setting meant for the tasks. OpenMP (OpenMP API 5.2 §21
#: "Environment Variables": OMP_*), NCCL (NCCL User Guide "Environment Variables": NCCL_*),
#: UCX (ucx_info -c: UCX_*), libfabric (fi_provider(7): FI_*), Intel MPI (I_MPI_*), Open MPI
#: (MCA parameters from OMPI_MCA_*), PyTorch (TORCH_*, PYTORCH_*), oneMKL and OpenBLAS thread
#: counts, and the CUDA runtime's CUDA_DEVICE_MAX_CONNECTIONS / CUDA_LAUNCH_BLOCKING (CUDA C++
#: Programming Guide, "CUDA Environment Variables").
RUNTIME_PREFIXES = ("OMP_", "NCCL_", "UCX_", "FI_", "I_MPI_", "OMPI_MCA_", "TORCH_", "PYTORCH_")
RUNTIME_NAMES = frozenset({"MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                           "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_LAUNCH_BLOCKING"})


def read_by_task_runtime(name: str) -> bool:
    """Whether a library every task process loads reads ``name`` from its environment at
    start-up (:data:`RUNTIME_PREFIXES`, :data:`RUNTIME_NAMES`): its reader is the program's
    runtime, which the script does not show."""
    return name in RUNTIME_NAMES or name.startswith(RUNTIME_PREFIXES)


def value_assignment(assignments: list[Assignment], at: int) -> Assignment | None:
    """The last of one variable's batch-shell ``assignments`` (text order) that gives it a value
    at or before offset ``at``: the ``N=v`` of ``export N=v`` and of ``N=v; export N`` alike
    (a bare ``export N`` gives none), so a finding about the value points at the text to edit."""
    return next((a for a in reversed(assignments) if a.start <= at and a.value is not None),
                None)
