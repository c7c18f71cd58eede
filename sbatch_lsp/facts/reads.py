"""Which variables the script reads, by name, gathered in one pass per job.

Several rules and facts ask "does anything read ``$NAME``" or "which commands read it" (the
per-task variables, the credential names, ``$?``, the ``SLURM_*`` names): each used to walk
every word of the script for its own name. :func:`variable_reads` walks them once per job
(``Job.derived``) and answers by name.

What it holds: every expansion (``$NAME``, ``${NAME…}``, a name inside ``$((…))``, those
nested in defaults and command substitutions) of the words of every command of the batch
script and of the command strings it runs (``Script.walk``; ``Command.all_words``: argv and
prefix assignment values, and the arguments of ``export``/``declare``/``local``, which hold
their values). The names of the early expansions that flowed into nested words
(``Word.early``: the batch shell's values in a command string or a here-document it writes)
are kept apart: no command's word reads them there, but a rule that follows values may meet
them (:attr:`VariableReads.names` has them too). Every assignment's value is among these words
(the shell model makes no assignment without the command that holds it: shell/parse.py,
sourced.py, fragments.py; tests/test_reads.py checks it), so a name no word reads is read by no
assignment either.
"""
from __future__ import annotations

from ..job import Job
from ..shell.model import Command, Expansion, Script


class VariableReads:
    """The expansions of one job's script by variable name (see the module docstring)."""

    def __init__(self, script: Script):
        self._script = script
        #: name -> (command, expansion) in walk order, the command's argv before its prefix
        #: assignments' values (Command.all_words)
        self._by_name: dict[str, list[tuple[Command, Expansion]]] = {}
        #: name -> the commands with a word the batch shell wrote its value into, in walk order
        self._early: dict[str, list[Command]] = {}
        self._assigned_from: dict[str, set[str]] | None = None
        by_name, early = self._by_name, self._early
        for cmd in script.walk():
            for w in cmd.all_words() if cmd.assignments else cmd.words:
                # (most words expand nothing: a test of the list is cheaper than a loop over it)
                if w.expansions:
                    for e in w.expansions:
                        name = e.name
                        if name:
                            found = by_name.get(name)
                            if found is None:
                                by_name[name] = [(cmd, e)]
                            else:
                                found.append((cmd, e))
                if w.early:
                    for e in w.early:
                        if e.name:
                            into = early.setdefault(e.name, [])
                            if not into or into[-1] is not cmd:
                                into.append(cmd)
        #: every name read: by a command's words, or early in a nested word
        self.names: frozenset[str] = frozenset(by_name) | frozenset(early)

    def of(self, name: str) -> list[tuple[Command, Expansion]]:
        """The (command, expansion) pairs that read ``name``, in walk order (empty when no
        command's word reads it)."""
        return self._by_name.get(name, [])

    def commands(self, name: str) -> list[Command]:
        """The commands whose words read ``name``, each once, in walk order."""
        out: list[Command] = []
        for cmd, _ in self._by_name.get(name, ()):
            if not out or out[-1] is not cmd:
                out.append(cmd)
        return out

    def early_commands(self, name: str) -> list[Command]:
        """The commands of nested scripts with a word into which the batch shell wrote its
        value of ``name`` (``Word.early``), each once, in walk order."""
        return self._early.get(name, [])

    def carrying(self, seeds: set[str]) -> set[str]:
        """``seeds`` and every name that an assignment of the batch script gives a value
        reading one of them, at any depth (``A="$SEED"``, then ``B="x $A"``), wherever and
        whenever assigned: the names whose value may carry a seed's (a superset of what a rule
        that follows values through ``Script.value_at`` meets). A new set."""
        out = set(seeds)
        if not out:
            return out  # (no seed read: the assignments are not indexed)
        if self._assigned_from is None:
            self._assigned_from = {}
            for a in self._script.assignments:
                if a.value is not None:
                    for e in a.value.expansions:
                        if e.name:
                            self._assigned_from.setdefault(e.name, set()).add(a.name)
        todo = list(out)
        while todo:
            for name in self._assigned_from.get(todo.pop(), ()):
                if name not in out:
                    out.add(name)
                    todo.append(name)
        return out


def variable_reads(job: Job) -> VariableReads:
    """The job's :class:`VariableReads`, computed once per job."""
    result: VariableReads = job.derived(_reads)
    return result


def _reads(job: Job) -> VariableReads:
    return VariableReads(job.script)
