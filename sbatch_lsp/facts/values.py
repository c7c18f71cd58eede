"""Abstract values: what a word's value varies by when the job runs, and where it is evaluated.

Scopes (DESIGN.md "Facts"), from the narrowest: ``const`` (a literal), ``submit`` (fixed when
the job is submitted: ``$1``, ``$USER``, ``$SLURM_SUBMIT_HOST``), ``job`` (one value for the job,
known at run time: ``$SLURM_JOB_ID``), ``node``, ``task``, and ``unknown``. A word's scope is the
widest of its parts'.

Places: the batch shell (runs once, as task 0 on node 0 of the allocation) and a step's tasks.
The Slurm facts behind the variable tables are in ``src/slurmd/slurmstepd/task.c`` (``exec_task``
sets ``SLURM_PROCID``/``SLURM_LOCALID``/``SLURM_NODEID``/``SLURMD_NODENAME`` for every task, the
batch script's included) and ``src/common/env.c`` (``env_array_for_batch_job`` and
``env_array_for_step``: the ``SLURM_STEP_*`` variables exist only in a step), Slurm 22.05.8 and
later; sbatch(1) and srun(1) "OUTPUT ENVIRONMENT VARIABLES". So in the batch shell a per-task or
per-node variable has one value for the whole job (0, or the batch host's name): scope ``job``.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from ..shell.model import Expansion, Script, Word
from ..shell.words import TextMap, scan_word


class Scope(enum.IntEnum):
    """What a value varies by; ordered so that the widest of several is their ``max``."""

    CONST = 0
    SUBMIT = 1
    JOB = 2
    NODE = 3
    TASK = 4
    UNKNOWN = 5

    @property
    def label(self) -> str:
        return self.name.lower()


class Place(enum.Enum):
    """Where a word is evaluated."""

    BATCH = "batch shell"
    TASK = "task"


#: differ for every task of a step (srun(1) OUTPUT ENVIRONMENT VARIABLES; bash(1) RANDOM)
TASK_VARS = frozenset({"SLURM_PROCID", "SLURM_LOCALID", "SLURM_TASK_PID", "PMI_RANK",
                       "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                       "RANDOM", "BASHPID", "$"})
#: the same for the tasks of one node, different between nodes
NODE_VARS = frozenset({"SLURM_NODEID", "SLURMD_NODENAME", "HOSTNAME", "SLURM_GTIDS",
                       "SLURM_CPUS_ON_NODE", "SLURM_GPUS_ON_NODE", "SLURM_JOB_GPUS",
                       "SLURM_STEP_GPUS", "SLURM_TOPOLOGY_ADDR", "CUDA_VISIBLE_DEVICES",
                       "SLURM_TOPOLOGY_ADDR_PATTERN", "HOST"})
#: fixed by the submitting user's environment or command line (sbatch(1) SLURM_SUBMIT_*)
SUBMIT_VARS = frozenset({"SLURM_SUBMIT_HOST", "SLURM_SUBMIT_DIR", "USER", "LOGNAME", "HOME",
                         "PWD"})
POSITIONAL = re.compile(r"[0-9]+|[@*#]")
#: commands whose output, inside a task, is the node's own (its name or addresses)
NODE_COMMANDS = frozenset({"hostname", "ip", "ifconfig", "nvidia-smi", "uname"})
#: commands whose output depends only on what they read (their input and arguments)
PURE_COMMANDS = frozenset({"scontrol", "head", "tail", "sed", "awk", "cut", "tr", "echo",
                           "printf", "expr", "basename", "dirname", "sort", "uniq", "wc",
                           "grep", "xargs", "bc"})
#: commands whose output differs on every run
RANDOM_COMMANDS = frozenset({"shuf", "date", "mktemp", "od", "uuidgen"})
LOCAL_ADDRESS = re.compile(r"localhost|127\.0\.0\.1|0\.0\.0\.0|::1")
MAX_DEPTH = 32


@dataclass(frozen=True)
class Value:
    """An abstract value: the user's spelling and span (character offsets into the script),
    the literal text when it is known, its scope, and where it is evaluated."""

    text: str
    start: int
    end: int
    literal: str | None
    scope: Scope
    place: Place

    @property
    def known(self) -> bool:
        return self.literal is not None


def variable_scope(name: str, place: Place) -> Scope | None:
    """The scope of a variable Slurm, bash or the submit environment sets (None for a name
    none of them sets: the script's own, or unknown)."""
    if name in TASK_VARS:
        return Scope.TASK if place is Place.TASK else Scope.JOB
    if name in NODE_VARS:
        return Scope.NODE if place is Place.TASK else Scope.JOB
    if name.startswith("SLURM_STEP_"):
        # unset in the batch shell (env.c env_array_for_step): empty there
        return Scope.JOB if place is Place.TASK else Scope.CONST
    if name in SUBMIT_VARS or POSITIONAL.fullmatch(name):
        return Scope.SUBMIT if place is Place.BATCH else Scope.UNKNOWN
    if name.startswith("SLURM_"):
        return Scope.JOB
    return None


class Evaluator:
    """Scopes of words in one job: ``script`` is the batch script, ``exported(name, before)``
    says whether the batch shell exports ``name`` before an offset (so that it reaches a
    step's tasks). Results of the batch shell's assignments are memoised."""

    def __init__(self, script: Script, exported=lambda name, before: False):
        self.script = script
        self.exported = exported
        self._memo: dict[int, Scope] = {}

    def value(self, word: Word, place: Place, script: Script | None = None) -> Value:
        """The abstract value of ``word`` evaluated at ``place`` (in ``script``, the nested
        command string it belongs to, or the batch script)."""
        scope = self.scope(word, place, script or self.script)
        literal = word.value if not word.early else None
        return Value(word.text, word.start, word.end, literal,
                     Scope.CONST if literal is not None else scope, place)

    def scope(self, word: Word, place: Place, script: Script, depth: int = 0) -> Scope:
        """The widest scope of ``word``'s expansions at ``place``; batch-shell values that were
        substituted into a nested string (``early``) keep the batch shell's scope."""
        parts = [Scope.CONST]
        for e in word.early:
            parts.append(self._expansion(e, Place.BATCH, self.script, depth))
        for e in word.expansions:
            if e.nested and e.kind == "var":
                continue  # read by the substitution or arithmetic around it
            parts.append(self._expansion(e, place, script, depth, word))
        return max(parts)

    def _expansion(self, e: Expansion, place: Place, script: Script, depth: int,
                   word: Word | None = None) -> Scope:
        if e.quoting in ("single", "escaped"):
            return Scope.CONST  # literal for the shell that reads this word
        if e.kind == "var" and e.name:
            return self.variable(e.name, e.start, place, script, depth)
        inner = [x for x in (word.expansions if word else []) if x.nested and
                 e.start <= x.start and x.end <= e.end and x.name]
        read = max([self.variable(x.name or "", x.start, place, script, depth)
                    for x in inner] or [Scope.CONST])
        if e.kind == "arith":
            return read
        if place is Place.BATCH:
            return Scope.JOB  # the batch shell runs it once: one value for the job
        return self._task_substitution(e, script, read)

    def _task_substitution(self, e: Expansion, script: Script, read: Scope) -> Scope:
        """A ``$(…)`` evaluated inside a task: the node's own output for ``hostname`` and
        friends, a fresh value for ``shuf``/``date``, what it reads for text tools, and
        per-node when a local-address fallback (``|| echo localhost``) may win."""
        names = [c.name for c in script.walk() if c.in_substitution and c.name and
                 e.start <= c.start and c.end <= e.end]
        bases = {n.rsplit("/", 1)[-1] for n in names}
        if bases & RANDOM_COMMANDS:
            return Scope.TASK
        if bases & NODE_COMMANDS or LOCAL_ADDRESS.search(e.text):
            return Scope.NODE
        if bases and bases <= PURE_COMMANDS:
            return max(read, Scope.JOB) if read is not Scope.UNKNOWN else Scope.UNKNOWN
        return Scope.UNKNOWN

    def variable(self, name: str, at: int, place: Place, script: Script, depth: int = 0) -> Scope:
        """The scope of ``$name`` read at offset ``at``: the nested script's own assignment,
        else (in a task) the batch shell's when it is exported, else Slurm's or the submit
        environment's variable."""
        if depth > MAX_DEPTH:
            return Scope.UNKNOWN
        a = script.value_at(name, at)
        if a is not None and a.value is not None:
            if not script.certain(a, at):
                return Scope.UNKNOWN  # set in a branch or a loop: which value is not known
            return self._assigned(a, place, script, depth)
        if script is not self.script:
            a = self.script.value_at(name, at)
            if a is not None and a.value is not None and self.exported(name, at):
                return self._assigned(a, Place.BATCH, self.script, depth)
        known = variable_scope(name, place)
        return known if known is not None else Scope.UNKNOWN

    def roots(self, word: Word, script: Script | None = None, depth: int = 0) -> set[str]:
        """The variables ``word`` reads that no assignment of the script sets, followed through
        the script's assignments (``A=$SLURM_SUBMIT_HOST; B=$A`` -> ``{"SLURM_SUBMIT_HOST"}``
        for ``$B``), including those substituted early into a nested string."""
        script = script or self.script
        out: set[str] = set()
        for e in list(word.expansions) + list(word.early):
            if not e.name or e.quoting in ("single", "escaped"):
                continue
            where = self.script if e in word.early else script
            a = where.value_at(e.name, e.start)
            if a is None and where is not self.script:
                a = self.script.value_at(e.name, e.start)
            if a is None or a.value is None or depth >= MAX_DEPTH:
                out.add(e.name)
            else:
                out |= self.roots(a.value, where, depth + 1)
        return out

    def _assigned(self, a, place: Place, script: Script, depth: int) -> Scope:
        key = id(a)
        if place is Place.BATCH and key in self._memo:
            return self._memo[key]
        self._memo[key] = Scope.UNKNOWN  # a cycle reads as unknown
        scope = self.scope(a.value, place, script, depth + 1)
        if place is Place.BATCH:
            self._memo[key] = scope
        else:
            del self._memo[key]
        return scope


ARRAY_REF = re.compile(r'"?\$\{([A-Za-z_][A-Za-z0-9_]*)\[@\]\}"?')


def array_elements(word: Word, script: Script) -> list[Word] | None:
    """The words that ``"${NAME[@]}"`` stands for (``ARGS=(--nnodes 2 -n "$NTASKS")``), with
    the ``ARGS+=(…)`` appended to it before ``word`` (bash(1) "Arrays": ``+=`` appends
    elements): one Word per element, its span in the assignment (so findings point at the
    user's own text), literal or holding its expansions (``"$NTASKS"`` is one word whose value
    the values layer resolves; an unquoted ``$X`` element is a bare expansion, which may stand
    for several words). None when ``word`` is not such a reference or the array's text cannot
    be split into elements (a comment, a redirection, unbalanced quotes)."""
    m = ARRAY_REF.fullmatch(word.text)
    if m is None or (word.text.startswith('"') != word.text.endswith('"')):
        return None
    name = m.group(1)
    a = script.value_at(name, word.start)
    if a is None or a.value is None:
        return None
    out = literal_elements(a.value)
    for b in script.assignments:
        if out is None:
            return None
        if b.name == name and b.append and a.end <= b.start < word.start:
            more = literal_elements(b.value) if b.value is not None else None
            out = out + more if more is not None else None
    return out


def literal_elements(value: Word) -> list[Word] | None:
    """The elements of a ``( … )`` array value (an assignment's value word) as Words with
    their spans in the script, split as bash splits them (:func:`_element_spans`), or None
    when the value is not such a literal or cannot be split."""
    text = value.text
    if not (text.startswith("(") and text.endswith(")")) or \
            value.end - value.start != len(text):
        return None  # a value whose characters are not its own text (a nested string's)
    spans = _element_spans(text, 1, len(text) - 1)
    if spans is None:
        return None
    tmap = TextMap(text, list(range(value.start, value.end)))
    return [scan_word(tmap, s, e) for s, e in spans]


def _element_spans(text: str, start: int, end: int) -> list[tuple[int, int]] | None:
    """Where the words of ``text[start:end]`` (the inside of an array's parentheses) are:
    blanks and newlines outside quotes, ``$(…)``, ``${…}`` and backquotes separate them (bash(1)
    "Arrays": the elements undergo the usual word expansions); None for what is not words."""
    spans: list[tuple[int, int]] = []
    i, first, depth, quote = start, -1, 0, ""
    while i < end:
        c = text[i]
        if first < 0:
            if c in " \t\n":
                i += 1
                continue
            if c == "#":
                return None  # a comment inside the array: not read
            first = i
        if c == "\\" and quote != "'":
            i += 2
            continue
        if depth:
            depth += 1 if c in "({" else -1 if c in ")}" else 0
        elif quote:
            if c == quote:
                quote = ""
            elif quote == '"' and text.startswith(("$(", "${"), i):
                depth, i = 1, i + 2
                continue
        elif c in "'\"`":
            quote = c
        elif text.startswith(("$(", "${"), i):
            depth, i = 1, i + 2
            continue
        elif c in " \t\n":
            spans.append((first, i))
            first = -1
        elif c in "()<>;&|":
            return None
        i += 1
    if depth or quote or i > end:
        return None
    if first >= 0:
        spans.append((first, end))
    return spans


def expand_arrays(words: list[Word], script: Script) -> list[Word]:
    """``words`` with every ``"${NAME[@]}"`` whose array the script assigns replaced by the
    array's elements (:func:`array_elements`); a new list."""
    for w in words:  # (most commands: no word names an array, the copy is the answer)
        if w.value is None and "[@]" in w.text:
            break
    else:
        return list(words)
    out: list[Word] = []
    for w in words:
        # (ARRAY_REF needs a ``[@]``: most words are not read further)
        elements = array_elements(w, script) if w.value is None and "[@]" in w.text else None
        if elements is None:
            out.append(w)
        else:
            out.extend(elements)
    return out
