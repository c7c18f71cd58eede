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
        #: name -> (command, expansion) in walk order, the command's argv before its prefix
        #: assignments' values (Command.all_words)
        self._by_name: dict[str, list[tuple[Command, Expansion]]] = {}
        early: set[str] = set()
        by_name = self._by_name
        for cmd in script.walk():
            words = cmd.words
            if cmd.assignments:
                words = cmd.all_words()
            for w in words:
                for e in w.expansions:
                    if e.name:
                        found = by_name.get(e.name)
                        if found is None:
                            by_name[e.name] = [(cmd, e)]
                        else:
                            found.append((cmd, e))
                if w.early:
                    early.update(e.name for e in w.early if e.name)
        #: every name read: by a command's words, or early in a nested word
        self.names: frozenset[str] = frozenset(by_name) | early

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


def variable_reads(job: Job) -> VariableReads:
    """The job's :class:`VariableReads`, computed once per job."""
    result: VariableReads = job.derived(_reads)
    return result


def _reads(job: Job) -> VariableReads:
    return VariableReads(job.script)
