"""Control facts: which tasks run each command, what runs in the background and which ``wait``
collects it, pipelines and ``pipefail``, ``set -e``, the script's last command, traps and the
signals they catch, functions and where they are called.

The shell model (``shell/model.py``) is flat: it lists the commands with their words and spans
but not the compound commands around them. This module reads the structure with tree-sitter-bash
(already the model's fallback parser) over the same text and joins it to the model's commands by
their start offset; a ``bash -c '…'`` body, or the value of a variable that ``bash -c "$CMD"``
runs, is read again from the text of the string that holds it, so that its commands get their
own guards. Offsets are character offsets into the script, like every span of the model.

Facts behind it:

- ``SLURM_PROCID``/``SLURM_NODEID``/``SLURM_LOCALID`` are set per task by slurmstepd
  (``src/slurmd/slurmstepd/task.c``); the batch script is task 0 of the batch step on the first
  node, so in the batch shell they are all 0 (sbatch(1) OUTPUT ENVIRONMENT VARIABLES). A guard the
  batch shell evaluates is therefore constant: ``if [ "$SLURM_PROCID" -eq 0 ]`` is always true
  there and its ``else`` branch never runs.
- bash(1) SHELL BUILTIN COMMANDS ``wait``: without an argument it waits for every background
  child and returns 0; ``wait -n`` returns the status of the next job to end; ``wait PID``
  returns that job's status. ``$!`` is the PID of the last background job.
- bash(1) Pipelines: a pipeline's status is its last command's unless ``pipefail`` is set;
  ``set -e`` (``errexit``) acts on that status.
- bash(1) SIGNALS: "If bash is waiting for a command to complete and receives a signal for which
  a trap has been set, the trap will not be executed until the command completes"; a trap runs
  during ``wait`` as soon as the signal arrives.
"""
from __future__ import annotations

import itertools
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, NamedTuple

from ..shell.model import Command, Script
from ..shell.parse import tree_sitter_parse

#: task-id variables slurmstepd sets per task, and the id each stands for
TASK_IDS = {"SLURM_PROCID": "procid", "SLURM_NODEID": "nodeid", "SLURM_LOCALID": "localid",
            "PMI_RANK": "procid", "PMIX_RANK": "procid"}
#: launcher-style names that mean a task id only when the script sets them from one
ALIASES = ("RANK", "LOCAL_RANK", "NODE_RANK", "GROUP_RANK", "NODE_ID", "LOCALID", "PROCID")
OPS = {"-eq": "eq", "==": "eq", "=": "eq", "-ne": "ne", "!=": "ne", "-lt": "lt", "<": "lt",
       "-le": "le", "<=": "le", "-gt": "gt", ">": "gt", "-ge": "ge", ">=": "ge"}
NEGATE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}
FLIP = {"eq": "eq", "ne": "ne", "lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}
#: the shell-level statement kinds that hold commands (tree-sitter-bash node types)
LOOPS = {"while_statement", "for_statement", "c_style_for_statement"}
#: the node types :meth:`_Reader._command` reads as one command of the model
_COMMANDS = frozenset({"command", "declaration_command", "variable_assignment", "test_command",
                       "unset_command"})
#: a command's children that are no words of it (redirections, prefix assignments)
_NOT_WORDS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect",
                        "variable_assignment"})
#: signal names as ``trap`` accepts them, normalised (bash(1) trap: SIG prefix optional)
SIGNAL_NUMBERS = {"1": "HUP", "2": "INT", "3": "QUIT", "6": "ABRT", "9": "KILL", "10": "USR1",
                  "12": "USR2", "14": "ALRM", "15": "TERM", "0": "EXIT"}


@dataclass(frozen=True)
class Atom:
    """One comparison of a task id with a number: ``procid eq 0`` for ``[ "$SLURM_PROCID" -eq 0 ]``.

    ``var`` is ``procid``, ``nodeid`` or ``localid``; ``op`` one of eq/ne/lt/le/gt/ge; ``early``
    marks a reference the batch shell expands (so it reads 0); ``start``/``end`` span the
    condition in the script."""

    var: str
    op: str
    value: int
    start: int
    end: int
    early: bool = True

    def holds(self, ident: int) -> bool:
        """Whether the comparison holds for a task whose ``var`` is ``ident``."""
        v = self.value
        return {"eq": ident == v, "ne": ident != v, "lt": ident < v, "le": ident <= v,
                "gt": ident > v, "ge": ident >= v}[self.op]

    def negated(self) -> Atom:
        return Atom(self.var, NEGATE[self.op], self.value, self.start, self.end, self.early)


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class Tasks:
    """Which tasks run a command: every guard on a task id around it (a conjunction of atoms),
    and ``opaque`` when some other condition guards it too (then it runs on a subset the linter
    cannot name). The empty value runs on every task."""

    atoms: tuple[Atom, ...] = ()
    opaque: bool = False

    @property
    def guarded(self) -> bool:
        return bool(self.atoms)

    def also(self, other: Tasks) -> Tasks:
        """Both guards (a command inside a guarded function, or a body inside a guarded step)."""
        return Tasks(self.atoms + other.atoms, self.opaque or other.opaque)

    def admits(self, procid: int, nodeid: int, localid: int) -> bool:
        """Whether the task with these ids passes every task-id guard (the batch shell's guards
        read 0 for each id whatever the task)."""
        ids = {"procid": procid, "nodeid": nodeid, "localid": localid}
        return all(a.holds(0 if a.early else ids[a.var]) for a in self.atoms)

    def in_batch_shell(self) -> bool:
        """Whether the batch shell (task 0 of node 0) passes the task-id guards."""
        return self.admits(0, 0, 0)

    def per_node(self, tasks_per_node: int, nodes: int | None = None) -> int:
        """The most tasks of one node that run the command, in a step with ``tasks_per_node``
        tasks on each node (node ``n`` holds procids ``n·tpn … n·tpn+tpn-1`` under the default
        block distribution); ``nodes`` None tries the first 64 nodes."""
        best = 0
        for node in range(nodes if nodes is not None else 64):
            count = sum(1 for local in range(tasks_per_node)
                        if self.admits(node * tasks_per_node + local, node, local))
            best = max(best, count)
        return best

    def describe(self) -> str:
        """The guards as text (``SLURM_LOCALID == 0``)."""
        sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
        names = {"procid": "SLURM_PROCID", "nodeid": "SLURM_NODEID", "localid": "SLURM_LOCALID"}
        return " and ".join(f"{names[a.var]} {sym[a.op]} {a.value}" for a in self.atoms)


EVERY_TASK = Tasks()


@dataclass
class Pipeline:
    """``a | b | c``: its commands in order (model Commands; None where a stage is not a simple
    command), its span, and whether ``pipefail`` is on when it runs."""

    commands: list[Command | None]
    start: int
    end: int
    pipefail: bool

    @property
    def last(self) -> Command | None:
        return self.commands[-1] if self.commands else None


@dataclass
class Wait:
    """A ``wait`` builtin: ``kind`` ``all`` (no argument: status 0), ``any`` (``-n``) or
    ``pids`` (the variables or literals it names); ``in_loop`` when a loop repeats it."""

    command: Command
    kind: str
    pids: list[str]
    in_loop: bool
    start: int
    end: int


@dataclass
class Background:
    """A command started with ``&`` in the batch shell: the model Command (the first simple
    command of the backgrounded statement), the statement's span, the variable that saves its
    ``$!`` (None when nothing does), and the ``wait`` commands that collect it."""

    command: Command | None
    start: int
    end: int
    pid_var: str | None
    in_loop: bool
    waits: list[Wait] = field(default_factory=list)


@dataclass
class Trap:
    """``trap ACTION SIG…``: the action text, the signals (normalised: ``USR1``, ``TERM``,
    ``EXIT``), the span of the trap command, and whether it is set in the batch shell."""

    command: Command | None
    action: str
    signals: list[str]
    start: int
    end: int
    batch: bool


@dataclass(slots=True)  # (one per command per lint and per edit: no instance dict to build)
class CommandControl:
    """Where one model command sits: the tasks that run it, whether it is started in the
    background, the pipeline it is a stage of, whether a loop repeats it, whether it runs in a
    subshell, and the statement of the batch script that holds it (its span)."""

    tasks: Tasks = EVERY_TASK
    background: bool = False
    pipeline: Pipeline | None = None
    in_loop: bool = False
    in_subshell: bool = False
    in_condition: bool = False
    statement: tuple[int, int] | None = None
    #: ``&&`` or ``||`` when the command is the right side of a list (it runs on the left
    #: side's status: ``srun … || exit 1``)
    after: str | None = None


_new = object.__new__


def _placed(tasks: Tasks, in_loop: bool, in_subshell: bool, in_condition: bool,
            statement: tuple[int, int] | None, after: str | None) -> CommandControl:
    """``CommandControl(tasks, False, None, in_loop, in_subshell, in_condition, statement,
    after)``, made without calling the class: a call runs the dataclass's ``__init__`` from C
    (a new interpreter frame, some 2,500 instructions), and :meth:`_Reader._apply_command` makes
    one per command of the script on every lint (tests/test_control.py checks that every field
    is set, as the class call sets it)."""
    cc = _new(CommandControl)
    cc.tasks = tasks
    cc.background = False
    cc.pipeline = None
    cc.in_loop = in_loop
    cc.in_subshell = in_subshell
    cc.in_condition = in_condition
    cc.statement = statement
    cc.after = after
    return cc


#: what :meth:`Control.at` gives a command the walk did not place (a default built once instead
#: of one per lookup; readers never change what ``at`` returns)
_UNKNOWN = CommandControl()


@dataclass
class Control:
    """The control facts of one script (see the module docstring). ``last`` is the span of the
    batch script's last top-level statement (its status is the job's exit code when the script
    ends there); ``errexit``/``pipefail`` list the offsets where ``set`` turns each on or off."""

    script: Script
    of: dict[int, CommandControl]
    backgrounds: list[Background]
    waits: list[Wait]
    pipelines: list[Pipeline]
    traps: list[Trap]
    functions: dict[str, tuple[int, int]]
    calls: dict[str, list[Command]]
    last: tuple[int, int] | None
    errexit: list[tuple[int, bool]]
    pipefail: list[tuple[int, bool]]

    def at(self, cmd: Command) -> CommandControl:
        """The control facts of a model command (every task, foreground, when unknown: one
        shared default, never changed)."""
        return self.of.get(id(cmd), _UNKNOWN)

    def tasks(self, cmd: Command) -> Tasks:
        """The tasks that run ``cmd``: its own guards, those of the commands that run its
        command string (``srun bash -c '…'``), and those of the call sites of the function that
        holds it when all of them agree."""
        found = self.at(cmd).tasks
        for outer in cmd.ancestors():
            found = found.also(self.at(outer).tasks)
        if cmd.call is not None:  # a copy of a body for one of several calls: that call's
            return found.also(self.tasks(cmd.call))
        if cmd.function and cmd.function in self.calls:
            sites = {self.tasks(c) for c in self.calls[cmd.function] if c.function != cmd.function}
            if len(sites) == 1:
                found = found.also(sites.pop())
            elif len(sites) > 1:
                found = Tasks(found.atoms, True)
        return found

    def option_on(self, table: list[tuple[int, bool]], at: int) -> bool:
        """Whether a ``set`` option recorded in ``table`` is on at offset ``at``."""
        return _option_on(table, at)

    def is_last(self, start: int, end: int) -> bool:
        """Whether the span lies in the batch script's last top-level statement."""
        return self.last is not None and self.last[0] <= start and end <= self.last[1]


# ---- reading ----------------------------------------------------------------------------------

#: top-level chunks whose tree-sitter trees the chunk tree memo keeps (least recently used go
#: first): the chunks of some 50 open documents of a few hundred lines, or a few long ones
CHUNK_TREE_CACHE_SIZE = 8192


#: the chunk tree memo: :func:`tree_sitter_parse` (tree-sitter-bash's tree and its byte-offset
#: -> character-offset conversion) of a top-level chunk of the script (or a command string)
#: memoised by its text, a pure function of it (the tree is never changed), so an edit parses
#: only the chunks whose text it changed (the language server lints every version of a
#: document)
chunk_tree = lru_cache(maxsize=CHUNK_TREE_CACHE_SIZE)(tree_sitter_parse)


class _Tree:
    """One tree-sitter parse of ``text`` placed at ``base`` in the script, with byte offsets
    converted to script character offsets; ``late`` holds the offsets (in the script) of ``$``
    signs that the shell reading this text expands itself (not substituted before it runs);
    ``top``: a top-level chunk of the batch script (not a string or a here-document body)."""

    def __init__(self, text: str, base: int, late: Callable[[int], bool], top: bool = False,
                 memo: bool = True):
        self.root, self._conv = chunk_tree(text) if memo else tree_sitter_parse(text)
        self.base = base
        self.late = late
        self.text = text
        self.top = top

    def span(self, node: Any) -> tuple[int, int]:
        return self.base + self._conv(node.start_byte), self.base + self._conv(node.end_byte)

    def text_of(self, node: Any) -> str:
        s, e = self.span(node)
        return self.text[s - self.base:e - self.base]


class _Ctx(NamedTuple):
    """Where the walk stands (kept in the chunk recordings: small, never changed; a tuple, made
    a few times faster than a frozen dataclass: every replay moves each chunk's own)."""

    tasks: Tasks = EVERY_TASK
    in_loop: bool = False
    in_subshell: bool = False
    in_condition: bool = False
    function: str | None = None
    statement: tuple[int, int] | None = None
    after: str | None = None


class _Impure(Exception):
    """Raised while a chunk's walk is recorded when its reading needs the rest of the script
    (an alias such as ``RANK=$SLURM_PROCID`` behind a guard): that chunk is walked in place
    instead."""


#: the kinds of what a walk emits (see :meth:`_Reader.emit`)
_CMD, _BACKGROUND, _PIPELINE, _STRING, _FUNCTION, _HEREDOC = range(6)
#: the context a here-document event carries (its body is read in a context of its own)
_NO_CTX = _Ctx()


class _Reader:
    """Walks the trees and fills the facts; ``resolve(name, at)`` gives the literal value word of
    a variable's assignment (for ``RANK=$SLURM_PROCID`` aliases).

    The walk reads the tree; what it finds that joins the shell model or the script's state (a
    command's place, a background job, a pipeline, a string that may hold a nested script, a
    function) it hands to :meth:`emit`, which applies it at once. A :class:`_Recorder`
    (:func:`chunk_events`) keeps what is emitted instead, offsets relative to the chunk, and
    :meth:`replay` applies a recording at the chunk's place: the same calls in the same order,
    so a chunk read from its recording gives what walking it in place gives."""

    def __init__(self, script: Script, text: str):
        self.script = script
        self.text = text
        self.recorded: list[tuple] | None = None  # a _Recorder's list
        walked = list(script.walk())
        #: the first model command (in walk order) that starts at each offset: the one a
        #: command node joins (:meth:`by_start` lists them all, built only when needed)
        self.first_at = {cmd.start: cmd for cmd in reversed(walked)}
        #: the starts of commands in nested strings, ascending (bisected: a scan per string
        #: made a long script quadratic); none when the walk met only the script's own
        #: commands (most scripts: no command's nested scripts looked at)
        self.nested_starts = [] if len(walked) == len(script.commands) else \
            sorted({c.start for cmd in script.commands for inner in cmd.nested
                    for c in inner.walk()})
        self.of: dict[int, CommandControl] = {}
        self.backgrounds: list[Background] = []
        self.waits: list[Wait] = []
        self.pipelines: list[Pipeline] = []
        self.traps: list[Trap] = []
        self.functions: dict[str, tuple[int, int]] = {}
        self.errexit: list[tuple[int, bool]] = []
        self.pipefail: list[tuple[int, bool]] = []
        self.parsed: set[tuple[int, int]] = set()
        self.batch = True
        #: a generated body's start -> the span of its last top-level statement
        self.body_last: dict[int, tuple[int, int]] = {}

    @cached_property
    def by_start(self) -> dict[int, list[Command]]:
        """The model's commands by start offset, each list in walk order (for background
        jobs, pipelines and aliases: most scripts have none, and a long script's edit paid
        for the index)."""
        found: dict[int, list[Command]] = {}
        for cmd in self.script.walk():
            found.setdefault(cmd.start, []).append(cmd)
        return found

    @cached_property
    def starts(self) -> list[int]:
        """:meth:`by_start`'s keys ascending (bisected: a scan per background job made a long
        script quadratic)."""
        return sorted(self.by_start)

    # -- what the walk finds: applied at once, or recorded and replayed
    def emit(self, kind: int, s: int, e: int, ctx: _Ctx, extra: Any = None) -> None:
        """Apply one thing the walk found at ``[s, e)`` (script offsets) in context ``ctx``."""
        if kind == _CMD:
            self._apply_command(s, e, ctx, extra)
        elif kind == _STRING:
            self._nested_string(s, e, extra, ctx)
        elif kind == _BACKGROUND:
            self._apply_background(s, e, ctx)
        elif kind == _PIPELINE:
            self._apply_pipeline(s, e, extra, ctx)
        elif kind == _HEREDOC:
            self._run_body(s, e)
        else:
            self.functions[extra] = (s, e)

    def replay(self, events: tuple, base: int, end: int) -> None:
        """Apply a chunk's recording (:func:`chunk_events`) at offset ``base`` of the script
        (the chunk ending at ``end``): what :meth:`emit` does with each event there. Commands
        and strings (nearly every event) take their context as recorded, with ``base``: their
        context is moved only where it is kept (a moved context per event was a third of the
        cost of an edit's replays). A chunk in which no command of a nested script starts has
        no string to read (:meth:`_nested_string` would find none in any of them): its strings
        are passed over (most chunks: one bisection instead of one per string)."""
        starts = self.nested_starts
        k = bisect_left(starts, base)
        strings = k < len(starts) and starts[k] < end
        for kind, s, e, ctx, extra in events:
            if kind == _CMD:
                self._apply_command(s + base, e + base, ctx, extra, base)
            elif kind == _STRING:
                if strings:
                    self._nested_string(s + base, e + base, extra, ctx, base)
            else:
                if kind == _PIPELINE:
                    extra = [(a + base, b + base) for a, b in extra]
                self.emit(kind, s + base, e + base, _moved_ctx(ctx, base), extra)

    # -- statements
    def walk(self, tree: _Tree, node: Any, ctx: _Ctx) -> None:
        t = node.type
        if t in _COMMANDS:  # (first: most nodes walked are commands)
            self._command(tree, node, ctx)
            return
        if t == "if_statement":
            self._if(tree, node, ctx)
            return
        if t == "case_statement":
            self._case(tree, node, ctx)
            return
        if t == "function_definition":
            name_node = node.child_by_field_name("name")
            name = tree.text_of(name_node) if name_node is not None else None
            if name:
                self.emit(_FUNCTION, *tree.span(node), ctx, name)
            body = node.child_by_field_name("body")
            if body is not None:
                self.walk(tree, body, _Ctx(ctx.tasks, ctx.in_loop, ctx.in_subshell, False,
                                           name, ctx.statement))
            return
        if t in LOOPS:
            inner = _Ctx(ctx.tasks, True, ctx.in_subshell, ctx.in_condition, ctx.function,
                         ctx.statement)
            for c in node.named_children:
                self.walk(tree, c, inner)
            return
        if t == "subshell":
            inner = _Ctx(ctx.tasks, ctx.in_loop, True, ctx.in_condition, ctx.function,
                         ctx.statement)
            self._sequence(tree, node, inner)
            return
        if t == "list":
            self._list(tree, node, ctx)
            return
        if t == "pipeline":
            self._pipeline(tree, node, ctx)
            return
        if t == "redirected_statement":
            body = node.child_by_field_name("body") or (node.named_children[0]
                                                        if node.named_children else None)
            if body is not None:
                self.walk(tree, body, ctx)
            for c in node.named_children:
                if c.type == "heredoc_redirect":
                    self._generated(tree, c)
            return
        self._sequence(tree, node, ctx)

    def _generated(self, tree: _Tree, node: Any) -> None:
        """A here-document of the batch script (``node``: its redirect): its body's span goes
        to :meth:`emit`, which reads it when the script runs it (:meth:`_run_body`; which
        bodies it runs, the whole model says, so a recording keeps the span and a replay
        decides)."""
        doc = next((c for c in node.named_children if c.type == "heredoc_body"), None)
        if doc is not None and tree.top:
            self.emit(_HEREDOC, *tree.span(doc), _NO_CTX)

    def _run_body(self, s: int, e: int) -> None:
        """The here-document body at ``[s, e)`` (script offsets) when the script runs it as a
        script (``Script.bodies``): read where it stands, as the batch node's code or, for
        ``srun … bash FILE``, as every task's (its ``$`` signs then expand in the task when the
        delimiter was quoted)."""
        body = next((b for b in self.script.bodies if s <= b.start <= e), None)
        if body is None or (body.start, body.end) in self.parsed:
            return
        self.parsed.add((body.start, body.end))
        tasks = body.place == "tasks"
        batch, self.batch = self.batch, self.batch and not tasks
        try:
            sub = _Tree(self.text[body.start:body.end], body.start,
                        lambda _o: tasks and body.quoted)
            self.walk(sub, sub.root, _Ctx())
            stmts = [c for c in sub.root.named_children if c.type != "comment"]
            if stmts:
                self.body_last[body.start] = sub.span(stmts[-1])
        finally:
            self.batch = batch

    def _sequence(self, tree: _Tree, node: Any, ctx: _Ctx) -> None:
        """Children in order; a child followed by ``&`` runs in the background."""
        kids = node.children
        program = ctx.statement is None and node.type == "program"
        for k, c in enumerate(kids):
            if not c.is_named:
                continue
            top = ctx if not program else _Ctx(ctx.tasks, ctx.in_loop, ctx.in_subshell,
                                               ctx.in_condition, ctx.function, tree.span(c))
            self.walk(tree, c, top)
            if k + 1 < len(kids) and kids[k + 1].type == "&":
                self.emit(_BACKGROUND, *tree.span(c), top)

    def _apply_background(self, s: int, e: int, ctx: _Ctx) -> None:
        cmds = list(self._model_in(s, e))
        first = cmds[0] if cmds else None
        called = {c.calls for c in cmds if c.calls is not None}

        def start_in(call: Command) -> bool:  # the call is one of this background's commands
            return s <= call.start < e
        bodies = [c for c in self.script.commands if c.function in called and
                  (c.call is None or start_in(c.call))] if called else []
        for c in cmds + bodies:
            # (a function called once in the background runs its body there: shell/parse.py
            # put the call's arguments into it)
            self.of.setdefault(id(c), CommandControl(ctx.tasks)).background = True
        if self.batch and not ctx.in_subshell:
            self.backgrounds.append(Background(first, s, e, None, ctx.in_loop))

    def _model_in(self, s: int, e: int) -> Iterator[Command]:
        """The model commands that start in ``[s, e)``, in order (a command's model span may
        include a redirection the tree puts beside it)."""
        for start in self.starts[bisect_left(self.starts, s):bisect_left(self.starts, e)]:
            yield from self.by_start[start]

    def _list(self, tree: _Tree, node: Any, ctx: _Ctx) -> None:
        """``a && b``, ``a || b``: ``b`` runs when ``a``'s status says so; a task-id test on
        the left guards the right."""
        kids = [c for c in node.children]
        named = [c for c in kids if c.is_named]
        ops = [c.type for c in kids if not c.is_named]
        if len(named) != 2 or not ops:
            self._sequence(tree, node, ctx)
            return
        left, right = named
        op = ops[0]
        cond = _Ctx(ctx.tasks, ctx.in_loop, ctx.in_subshell, True, ctx.function, ctx.statement)
        self.walk(tree, left, cond)
        guard = self._condition(tree, left)
        if guard is None:
            rtasks = Tasks(ctx.tasks.atoms, True) if _is_test(left) else ctx.tasks
        elif op == "&&":
            rtasks = ctx.tasks.also(guard)
        else:
            rtasks = ctx.tasks.also(_negate(guard))
        self.walk(tree, right, _Ctx(rtasks, ctx.in_loop, ctx.in_subshell, ctx.in_condition,
                                    ctx.function, ctx.statement, op))

    def _if(self, tree: _Tree, node: Any, ctx: _Ctx) -> None:
        """``if``/``elif``/``else``: each branch runs on the tasks its condition admits and the
        earlier conditions refuse."""
        refused: list[Tasks | None] = []
        cond_nodes: list[Any] = []
        body: list[Any] = []
        branches: list[tuple[list[Any], list[Any]]] = []
        clauses: list[tuple[str, Any]] = []
        seen_then = False
        for c in node.children:
            t = c.type
            if t == "then":
                seen_then = True
            elif t == "elif_clause" or t == "else_clause":
                clauses.append((t, c))
            elif t not in ("if", "fi", ";", "\n") and c.is_named:
                (body if seen_then else cond_nodes).append(c)
        branches.append((cond_nodes, body))
        for t, c in clauses:
            if t == "elif_clause":
                cn: list[Any] = []
                bd: list[Any] = []
                then = False
                for g in c.children:
                    if g.type == "then":
                        then = True
                    elif g.is_named:
                        (bd if then else cn).append(g)
                branches.append((cn, bd))
            else:
                branches.append(([], [g for g in c.children if g.is_named]))
        for conds, stmts in branches:
            here = ctx.tasks
            for r in refused:
                here = here.also(_negate(r) if r is not None else Tasks((), True))
            cond_ctx = _Ctx(here, ctx.in_loop, ctx.in_subshell, True, ctx.function,
                            ctx.statement)
            for cond in conds:
                self.walk(tree, cond, cond_ctx)
            guard = self._condition(tree, conds[-1]) if len(conds) == 1 else None
            if conds:
                refused.append(guard)
                here = here.also(guard) if guard is not None else Tasks(here.atoms, True)
            body_ctx = _Ctx(here, ctx.in_loop, ctx.in_subshell, ctx.in_condition,
                            ctx.function, ctx.statement)
            for st in stmts:
                self.walk(tree, st, body_ctx)

    def _case(self, tree: _Tree, node: Any, ctx: _Ctx) -> None:
        """``case $SLURM_PROCID in 0) …;; *) …;; esac``: an item whose patterns are all numbers
        runs on the tasks whose id is one of them (one number: an ``eq`` guard); ``*)`` after
        one-number items runs on the others."""
        value = node.child_by_field_name("value")
        var, early = self._operand_var(tree, value) if value is not None else (None, True)
        refused: list[Atom] = []
        for item in node.children:
            if item.type != "case_item":
                continue
            pats = [c for c in item.children if c.is_named and
                    c.type in ("word", "number", "extglob_pattern", "string", "raw_string")
                    and c.start_byte < _arrow(item)]
            texts = [tree.text_of(p).strip("'\"") for p in pats]
            s, e = tree.span(item)
            if var is None:
                here = Tasks(ctx.tasks.atoms, True)
            elif len(texts) == 1 and texts[0].isdigit():
                atom = Atom(var, "eq", int(texts[0]), s, e, early)
                here = ctx.tasks.also(Tasks((atom,)))
                refused.append(atom)
            elif texts == ["*"]:
                here = ctx.tasks.also(Tasks(tuple(a.negated() for a in refused)))
            else:
                here = Tasks(ctx.tasks.atoms, True)
            item_ctx = _Ctx(here, ctx.in_loop, ctx.in_subshell, ctx.in_condition, ctx.function,
                            ctx.statement)
            for c in item.children:
                if c.is_named and c.start_byte > _arrow(item):
                    self.walk(tree, c, item_ctx)

    def _pipeline(self, tree: _Tree, node: Any, ctx: _Ctx) -> None:
        stages = [c for c in node.children if c.is_named and not c.type.endswith("redirect")]
        for st in stages:
            self.walk(tree, st, ctx)
        self.emit(_PIPELINE, *tree.span(node), ctx, [tree.span(st) for st in stages])

    def _apply_pipeline(self, s: int, e: int, spans: list[tuple[int, int]], ctx: _Ctx) -> None:
        cmds: list[Command | None] = []
        for ss, se in spans:
            found = next(self._model_in(ss, se), None)
            cmds.append(found)
        pipe = Pipeline(cmds, s, e, _option_on(self.pipefail, s))
        for c in cmds:
            if c is not None:
                self.of.setdefault(id(c), CommandControl(ctx.tasks)).pipeline = pipe
        if self.batch and not ctx.in_subshell:
            self.pipelines.append(pipe)

    def _command(self, tree: _Tree, node: Any, ctx: _Ctx) -> None:
        s, e = tree.span(node)
        if not self.batch or ctx.in_subshell:
            self.emit(_CMD, s, e, ctx)
            return
        kind = node.type
        # (each read of a node's attribute builds objects: the children read once, their
        # types only where needed)
        kids = node.named_children
        whole = tree.text[s - tree.base:e - tree.base]
        texts = (tree.text_of(c) for c in kids if c.type not in _NOT_WORDS)
        # the tail reads the name, and the arguments only when they may hold `$!` or the
        # command is set/wait/trap: the other words' texts (and types) are not taken
        words = list(texts) if "$!" in whole or "${!}" in whole else \
            list(itertools.islice(texts, 1)) if kind == "command" else []
        if words[:1] in (["set"], ["wait"], ["trap"]):
            words += texts
        self.emit(_CMD, s, e, ctx, _command_tail(
            words, kind == "command", whole if kind == "variable_assignment" else None))
        # nested command strings: bash -c '…' bodies and $CMD values (a string or raw_string
        # starts with its quote: a command without one holds none)
        if '"' in whole or "'" in whole:
            for c in kids:
                k = c.type
                if k == "string" or k == "raw_string":
                    self.emit(_STRING, *tree.span(c), ctx, k == "raw_string")

    def _apply_command(self, s: int, e: int, ctx: _Ctx,
                       tail: tuple[str | None, list[str] | None, bool, str | None] | None,
                       base: int = 0) -> None:
        """A command node at ``[s, e)``: its model command's control facts and, in the batch
        shell outside subshells (``tail``: the simple command's name, its arguments when it is
        ``set``, ``wait`` or ``trap``, whether they read ``$!``, and for a variable assignment
        the variable that keeps ``$!`` or ""; None when it sets nothing), what it sets
        (``set``, ``wait``, ``trap``, a saved ``$!``). ``ctx``'s offsets are relative to
        ``base`` (a replayed recording's), those of ``s`` and ``e`` are not."""
        cmd = self.first_at.get(s)  # (the model command that starts there)
        if cmd is not None:
            tasks, in_loop, in_subshell, in_condition, _function, statement, after = ctx
            if base:
                if tasks is not EVERY_TASK and tasks.atoms:  # (most: the shared default)
                    tasks = _moved_tasks(tasks, base)
                if statement is not None:
                    statement = (statement[0] + base, statement[1] + base)
            of, key = self.of, id(cmd)
            cc = of.get(key)
            if cc is None:  # (most commands: made with its fields, in their order, at once)
                of[key] = _placed(tasks, in_loop, in_subshell, in_condition, statement, after)
            else:  # (a background or pipeline placed it first)
                cc.tasks, cc.in_loop, cc.in_subshell = tasks, in_loop, in_subshell
                cc.in_condition, cc.statement, cc.after = in_condition, statement, after
        if tail is None:
            return
        name, given, bang, saved = tail
        args = given or []
        if name == "set":
            self._set(args, s)
        elif name == "wait" and cmd is not None:
            kind = "any" if any(a.startswith("-") and "n" in a for a in args) else \
                "pids" if [a for a in args if not a.startswith("-")] else "all"
            pids = [a.strip("'\"") for a in args if not a.startswith("-")]
            self.waits.append(Wait(cmd, kind, pids, ctx.in_loop, s, e))
        elif name == "trap" and len(args) >= 2 and not args[0].startswith("-"):
            action = _unquote(args[0])
            sigs = [signal_name(w) for w in args[1:]]
            self.traps.append(Trap(cmd, action, sigs, s, e, True))
        elif saved is not None and self.backgrounds:
            if saved and self.backgrounds[-1].pid_var is None:
                self.backgrounds[-1].pid_var = saved
        elif name is not None and self.backgrounds and self.backgrounds[-1].pid_var is None \
                and bang:
            # pids+=($!) / PIDS[$i]=$! / echo $! > file: the pid is kept somewhere
            self.backgrounds[-1].pid_var = "?"

    def _nested_string(self, s: int, e: int, single: bool, ctx: _Ctx, base: int = 0) -> None:
        """A quoted string at ``[s, e)`` that may hold a nested script: read when a command of
        the model's nested scripts starts inside it (``ctx``'s offsets relative to ``base``)."""
        k = bisect_right(self.nested_starts, s)
        if k == len(self.nested_starts) or self.nested_starts[k] >= e:
            return  # no command of a nested string starts inside it
        self.parse_region(s, e, single, _moved_ctx(ctx, base))

    def parse_region(self, s: int, e: int, single: bool, ctx: _Ctx) -> None:
        """Read the text inside the quotes at ``[s, e)`` as shell code run by another shell.
        In a double-quoted string an unescaped ``$`` is expanded before that shell runs (the
        batch shell's value), ``\\$`` is left for it."""
        if (s, e) in self.parsed or e - s < 2:
            return
        self.parsed.add((s, e))
        inner = self.text[s + 1:e - 1]
        base = s + 1
        if single:
            late_set: set[int] | None = None
        else:
            late_set = {base + m.start() + 1 for m in re.finditer(r"\\\$", inner)}
            inner = inner.replace("\\$", " $").replace('\\"', ' "').replace("\\`", " `")
        batch, self.batch = self.batch, False
        try:
            sub = _Tree(inner, base, (lambda _o: True) if late_set is None
                        else late_set.__contains__)
            self.walk(sub, sub.root, _Ctx(EVERY_TASK, False, False, False, None, ctx.statement))
        finally:
            self.batch = batch

    def _set(self, args: list[str], at: int) -> None:
        k = 0
        while k < len(args):
            a = args[k]
            if a in ("-o", "+o") and k + 1 < len(args):
                on = a == "-o"
                if args[k + 1] == "pipefail":
                    self.pipefail.append((at, on))
                elif args[k + 1] == "errexit":
                    self.errexit.append((at, on))
                k += 2
                continue
            if re.fullmatch(r"[-+][a-zA-Z]+", a):
                on = a[0] == "-"
                if "e" in a[1:]:
                    self.errexit.append((at, on))
                if a.endswith("o") and k + 1 < len(args) and args[k + 1] == "pipefail":
                    self.pipefail.append((at, on))
                    k += 1
            k += 1


    # -- conditions
    def _condition(self, tree: _Tree, node: Any) -> Tasks | None:
        """The task-id guard a condition states, or None when it is about something else."""
        t = node.type
        if t == "test_command" or t == "compound_statement":
            inner = [c for c in node.named_children]
            if len(inner) == 1:
                return self._expr(tree, inner[0])
            return None
        if t == "command":
            words = node.named_children
            if words and tree.text_of(words[0]) in ("test", "["):
                args = words[1:]
                if len(args) == 3:
                    return self._compare(tree, args[0], tree.text_of(args[1]), args[2], node)
            return None
        if t == "negated_command":
            kids = node.named_children
            inner_g = self._condition(tree, kids[0]) if kids else None
            return _negate(inner_g) if inner_g is not None else None
        if t == "list":
            named = node.named_children
            ops = [c.type for c in node.children if not c.is_named]
            if len(named) == 2 and ops == ["&&"]:
                a, b = self._condition(tree, named[0]), self._condition(tree, named[1])
                if a is not None and b is not None:
                    return a.also(b)
            return None
        return None

    def _expr(self, tree: _Tree, node: Any) -> Tasks | None:
        t = node.type
        if t == "parenthesized_expression" and len(node.named_children) == 1:
            return self._expr(tree, node.named_children[0])
        if t == "unary_expression":
            kids = node.children
            if kids and tree.text_of(kids[0]) == "!" and len(node.named_children) == 1:
                g = self._expr(tree, node.named_children[0])
                return _negate(g) if g is not None else None
            return None
        if t != "binary_expression":
            return None
        kids = node.children
        if len(kids) != 3:
            return None
        op = tree.text_of(kids[1])
        if op == "&&":
            a, b = self._expr(tree, kids[0]), self._expr(tree, kids[2])
            return a.also(b) if a is not None and b is not None else None
        return self._compare(tree, kids[0], op, kids[2], node)

    def _compare(self, tree: _Tree, left: Any, op: str, right: Any, node: Any) -> Tasks | None:
        if op not in OPS:
            return None
        s, e = tree.span(node)
        var, early = self._operand_var(tree, left)
        num = _number(tree.text_of(right))
        kind = OPS[op]
        if var is None:
            var, early = self._operand_var(tree, right)
            num = _number(tree.text_of(left))
            kind = FLIP[kind]
        if var is None or num is None:
            return None
        return Tasks((Atom(var, kind, num, s, e, early),))

    def _operand_var(self, tree: _Tree, node: Any) -> tuple[str | None, bool]:
        """The task id a ``$NAME``, ``"${NAME}"``, ``${NAME:-0}`` or arithmetic ``NAME`` stands
        for, and whether the batch shell expands it."""
        text = tree.text_of(node).strip('"')
        m = re.fullmatch(r"\$?\{?([A-Za-z_][A-Za-z0-9_]*)(:?-[0-9]*)?\}?", text)
        if not m:
            return None, True
        name = m.group(1)
        s, _ = tree.span(node)
        dollar = s + tree.text_of(node).find("$") if "$" in tree.text_of(node) else s
        early = self.batch or not tree.late(dollar)
        if name in TASK_IDS:
            return TASK_IDS[name], early
        if name in ALIASES:
            target = self._alias(name, s)
            if target is not None:
                return target, early
        return None, True

    def _alias(self, name: str, at: int) -> str | None:
        """``RANK=$SLURM_PROCID`` (in any script of the model) before ``at``: the id RANK
        stands for."""
        if self.recorded is not None:
            raise _Impure  # the model's assignments say
        scripts = {id(c.script): c.script for cs in self.by_start.values() for c in cs
                   if c.script is not None}
        for sc in [self.script, *scripts.values()]:
            a = sc.value_at(name, at)
            if a is not None and a.value is not None:
                refs = [x.name for x in a.value.expansions if x.name]
                if len(refs) == 1 and refs[0] in TASK_IDS and \
                        re.fullmatch(r'"?\$\{?[A-Z_]+\}?"?', a.value.text):
                    return TASK_IDS[refs[0]]
        return None


#: ``pid=$!`` and its spellings (``pids[$i]=$!``, ``pids+=("$!")``): group 1 the variable
#: that keeps a background job's pid
SAVED_PID = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\]|\+)?=\(?\s*[\"']?\$\{?!\}?"
                       r"[\"']?\s*\)?")


def _command_tail(words: list[str], command: bool, assignment: str | None
                  ) -> tuple[str | None, list[str] | None, bool, str | None] | None:
    """What a command node hands :meth:`_Reader._apply_command` (its ``tail``) from the texts
    of its named children (``words``: redirections and prefix assignments left out), whether it
    is a simple command (not a declaration, ``unset`` or test: then it has a name) and, for a
    variable assignment, its text; None when the command sets nothing there (most commands: not
    ``set``/``wait``/``trap``, no saved ``$!``), which that method then skips at once."""
    name = words[0] if words and command else None
    rest = " ".join(words[1:])
    saved = None  # `pid=$!`: the variable that keeps a background job's pid
    if assignment is not None:
        m = SAVED_PID.fullmatch(assignment)
        saved = m.group(1) if m else ""
    bang = "$!" in rest or "${!}" in rest
    if name in ("set", "wait", "trap"):
        return name, words[1:], bang, saved
    if saved or (name is not None and bang):
        return name, None, bang, saved
    return None


def _option_on(table: list[tuple[int, bool]], at: int) -> bool:
    """The state a ``set -o``/``+o`` table (offset, on) gives at offset ``at`` (off before any)."""
    state = False
    for offset, on in table:
        if offset < at:
            state = on
    return state


def _arrow(item: Any) -> int:
    for c in item.children:
        if c.type == ")":
            return int(c.start_byte)
    return int(item.start_byte)


def _is_test(node: Any) -> bool:
    return node.type in ("test_command", "compound_statement") or (
        node.type == "command" and bool(node.named_children) and
        node.named_children[0].text in (b"test", b"["))


def _negate(t: Tasks | None) -> Tasks:
    """Where a guard does not hold: one atom negates exactly; several (a conjunction) negate to
    a disjunction, which the conjunction form cannot hold: opaque."""
    if t is None or t.opaque or len(t.atoms) != 1:
        return Tasks((), True)
    return Tasks((t.atoms[0].negated(),))


def _number(text: str) -> int | None:
    text = text.strip("'\"")
    return int(text) if text.isdigit() else None


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def signal_name(word: str) -> str:
    """A signal as ``trap`` or ``--signal`` spells it (``SIGUSR1``, ``usr1``, ``10``) in one
    form: ``USR1`` (bash(1) trap; signal(7) numbers on x86 and arm Linux)."""
    w = _unquote(word).upper()
    w = w.removeprefix("SIG")
    return SIGNAL_NUMBERS.get(w, w)


class _Recorder(_Reader):
    """A reader whose :meth:`emit` records (an override: a bound method kept on the reader
    made each recorder a reference cycle, left to the garbage collector). It has no script:
    the walk reads only ``batch`` and ``recorded`` (what needs the model raises
    :class:`_Impure` or is an event); a reader's indexes of the model, built for an empty
    one, were a tenth of a compound chunk's walk."""

    def emit(self, kind: int, s: int, e: int, ctx: _Ctx, extra: Any = None) -> None:
        assert self.recorded is not None
        self.recorded.append((kind, s, e, ctx, extra))

    def __init__(self) -> None:  # (no super().__init__: see the class docstring)
        self.batch = True
        self.recorded = []


def _never(_offset: int) -> bool:
    return False


def _last_statement(tree: _Tree) -> tuple[int, int] | None:
    stmts = [c for c in tree.root.named_children if c.type != "comment"]
    return tree.span(stmts[-1]) if stmts else None


#: top-level chunks whose recordings the chunk events memo keeps (least recently used go first):
#: as many as the fragment memo keeps models (shell/parse.FRAGMENT_CACHE_SIZE; an edit replays
#: the same chunks), about 0.7 KiB each
CHUNK_EVENTS_CACHE_SIZE = 6144


@lru_cache(maxsize=CHUNK_EVENTS_CACHE_SIZE)
def chunk_events(text: str) -> tuple[tuple, tuple[int, int] | None] | None:
    """The chunk events memo: the walk of one top-level chunk of the batch script (``text``)
    recorded as :meth:`_Reader.emit` receives it, offsets relative to the chunk, with the span of
    its last statement; None when its reading needs the rest of the script (:class:`_Impure`:
    it is walked in place). A pure function of the text, so an edit walks only the chunks whose
    text it changed; the recording is never changed (:meth:`_Reader.replay` moves copies).
    A plain chunk (most of them: :func:`plain_events`) is recorded without tree-sitter."""
    return plain_events(text) or walked_events(text)


def walked_events(text: str) -> tuple[tuple, tuple[int, int] | None] | None:
    """:func:`chunk_events` of ``text`` read by tree-sitter and walked (for every chunk)."""
    recorder = _Recorder()
    tree = _Tree(text, 0, _never, top=True, memo=False)  # (the recording is kept, not the tree)
    try:
        recorder.walk(tree, tree.root, _Ctx())
    except _Impure:
        return None
    assert recorder.recorded is not None
    return tuple(recorder.recorded), _last_statement(tree)


# ---- plain chunks: one simple command, a declaration or assignments, read without tree-sitter

#: a word part: printable ASCII text without quotes, operators, braces, brackets, ``#`` or
#: ``$`` …
_BARE = r"[!%*+,\-./0-9:=?@A-Z^_a-z~]+"
#: … a ``$NAME``; ``$1``, ``$@``… at the end of a word or string (tree-sitter-bash ends
#: ``$1:$1`` after the second ``$``); a ``${…}`` of such text, brackets and ``#`` allowed; a
#: ``$(…)`` holding only plain text and ``$NAME``s …
_EXPANSION = (r"\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!](?=[\s\"]|$)"
              r"|\{[!#%*+,\-./0-9:=?@A-Z\[\]^_a-z~]+\}"
              r"|\((?>(?:[^()'\"`\\$#\n]+|\$[A-Za-z_][A-Za-z0-9_]*)*)\))")
#: … a double-quoted string of text, escapes and those expansions, or a single-quoted one
_DOUBLE = rf'"(?:[^"\\`$]+|\\[\s\S]|{_EXPANSION})*+"'
_SINGLE = r"'[^']*'"
#: a word (possessive, as an atomic group: a word is never split to let a match succeed; the
#: possessive form is the cheaper for the regex engine, a tenth of a plain chunk's reading)
_WORD = rf"(?:{_BARE}|{_EXPANSION}|{_DOUBLE}|{_SINGLE})++"
#: an output or input redirection to a word (``> log``, ``2>>err``, ``&> out``, ``< in``) or
#: a descriptor copy (``2>&1``)
_REDIRECTION = rf"[0-9]*>&(?:[0-9]+|-)|(?:[0-9]*(?:>>?|<)|&>>?)[ \t]*{_WORD}"
#: a plain chunk (:func:`_plain_tokens`): blank and comment lines, then its first word (group
#: 1); the lines and blanks before it are possessive (a word never starts at a blank, ``#``
#: or newline, so giving any back could not let the word match)
_FIRST = re.compile(rf"(?:[ \t]*+(?:#[^\n]*+)?\n)*+[ \t]*+({_WORD})")
#: … then each further token after its blanks and line continuations: a redirection (group 1)
#: or a word (group 2)
_NEXT = re.compile(rf"[ \t]++(?:\\\n[ \t]*+)*+(?:({_REDIRECTION})|({_WORD}))")
#: … then a comment and blank and comment lines to the end (no line continuation at the end:
#: tree-sitter-bash would read the next line on)
_TAIL = re.compile(r"[ \t]*(?:(?<=[ \t])#[^\n]*)?(?:\n[ \t]*(?:#[^\n]*)?)*")
#: a word that is one quoted string (tree-sitter's ``string``/``raw_string`` node)
_STRING_WORD = re.compile(rf"{_DOUBLE}|{_SINGLE}")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
#: a command name tree-sitter-bash reads as one word: plain text, or one variable or array
#: expansion, quoted or not
_COMMAND_NAME = re.compile(r'[\w./~][\w./~+-]*|("?)\$(?:[A-Za-z_]\w*|\{[A-Za-z_]\w*(?:\[[@*]\])?\})\1')
#: what a declaration (``export``, ``local``…) or ``unset`` names: an option or a variable
#: (its assignments are read apart)
_DECLARED = re.compile(r"-[A-Za-z]+|[A-Za-z_][A-Za-z0-9_]*")
#: first words that make the statement something else than a simple command (tree-sitter-bash
#: keywords)
_NOT_SIMPLE = frozenset({"if", "then", "elif", "else", "fi", "for", "while", "until", "do",
                         "done", "case", "esac", "select", "function", "time", "coproc", "in"})
#: commands whose arguments :func:`_command_tail` reads (not only their name), and what each
#: of those arguments must be for the shortcut to take the command: one part of a word
_WORDS_READ = frozenset({"set", "wait", "trap"})
_ONE_PART = re.compile(rf"{_BARE}|{_SINGLE}|{_DOUBLE}|\$[A-Za-z_][A-Za-z0-9_]*"
                       r"|\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_DECLARATIONS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_UNSET = frozenset({"unset", "unsetenv"})


def _plain_tokens(text: str) -> tuple[list[tuple[int, int]], tuple[int, int], bool] | None:
    """The tokens of a plain chunk's statement (:func:`plain_events`), read in one pass: the
    spans of its words (the first one first), the statement's span (first word to last token)
    and whether redirections follow the words; None when the text is not one statement of
    words then redirections between blank and comment lines (a redirection first, a word after
    a redirection, two tokens with no blank between them, anything else after them)."""
    first = _FIRST.match(text)
    if first is None:
        return None
    words = [first.span(1)]
    last = first.end()  # of the last token read
    redirected = False
    # (a match at the last token's end, not a search: the statement ends where none starts
    # there, and the tail says whether only comments follow; at the text's end, where most
    # chunks end, no token starts and the tail is empty: neither pattern is tried)
    size = len(text)
    while last < size and (token := _NEXT.match(text, last)) is not None:
        last = token.end()
        if token.lastindex == 1:
            redirected = True
        elif redirected:
            return None  # a word after a redirection (tree-sitter puts it into the redirection)
        else:
            words.append(token.span(2))
    if last < size and _TAIL.fullmatch(text, last) is None:
        return None
    return words, (words[0][0], last), redirected


def plain_events(text: str) -> tuple[tuple, tuple[int, int] | None] | None:
    """:func:`walked_events` of a plain chunk, read without tree-sitter; None when the chunk is
    not plain. Plain: between blank and comment lines, one statement of words (plain text,
    ``$NAME``/``${…}``/``$(…)`` of plain text, quoted strings of those) separated by blanks and
    line continuations, which is a simple command (prefix assignments allowed) maybe followed by
    redirections to words, a declaration (``export``, ``local``…) or ``unset``, or assignments
    alone. Its walk emits the command (each assignment, for assignments alone) and the quoted
    strings among its arguments, in the statement's context (tests/test_control.py compares
    the two on every chunk the project holds and on generated ones)."""
    tokens = _plain_tokens(text)
    if tokens is None:
        return None
    words, statement, redirected = tokens
    end = words[-1][1]  # (the command ends at its last word, before its redirections)
    ctx = _Ctx(EVERY_TASK, False, False, False, None, statement)
    assignments = 0
    for s, e in words:
        # (an assignment word holds a `=`: most first words have none, and a find costs less
        # than the pattern)
        m = _ASSIGNMENT.match(text, s, e) if text.find("=", s, e) >= 0 else None
        if m is None:
            break
        dollars = text.count("$", m.end(), e)
        if dollars and (dollars > 1 or "'" in text[m.end():e] or '"' in text[m.end():e]) and \
                not _STRING_WORD.fullmatch(text, m.end(), e):
            return None  # (tree-sitter-bash ends `A=$B/$C.x`, `A='b'/$C` at the last `$`)
        assignments += 1
    events: list[tuple] = []
    if assignments == len(words):  # `A=1`, `A=1 B="$x"`: each a variable_assignment node
        if redirected:
            return None
        for s, e in words:
            value = text.index("=", s) + 1
            events.append((_CMD, s, e, ctx, _command_tail(
                [text[s:value]] + ([text[value:e]] if e > value else []), False, text[s:e])))
            if e > value and text[value] in "'\"" and _STRING_WORD.fullmatch(text, value, e):
                events.append((_STRING, value, e, ctx, text[value] == "'"))
        return tuple(events), statement
    first = text[words[assignments][0]:words[assignments][1]]
    # (a name of letters and digits alone, most names, is one the pattern takes: its `\w` is
    # what str.isalnum() accepts, and `_`)
    if first in _NOT_SIMPLE or not (first.isalnum() or _COMMAND_NAME.fullmatch(first)):
        return None
    kids = words[assignments:]
    texts = []
    for s, e in kids:  # (a loop, not a comprehension and a generator: one frame less each)
        w = text[s:e]
        if w == "-" or w[0] == "=":
            return None  # (tree-sitter-bash leaves `-` out of the command, reads `==` apart)
        texts.append(w)
    if first in _WORDS_READ and not all(_ONE_PART.fullmatch(w) for w in texts[1:]):
        return None  # (the walk reads these arguments' texts: tree-sitter-bash may split one)
    if first in _DECLARATIONS or first in _UNSET:  # `export A=1 B`: a declaration_command
        if assignments or redirected:
            return None
        if first in _DECLARATIONS:  # (its assignments are no words of the walk's)
            kids = [(s, e) for s, e in kids[1:] if not _ASSIGNMENT.match(text, s, e)]
            texts = [text[s:e] for s, e in kids]
        else:
            kids, texts = kids[1:], texts[1:]
        if not all(_DECLARED.fullmatch(w) for w in texts):
            return None
        events.append((_CMD, *statement, ctx, _command_tail(texts, False, None)))
    else:
        events.append((_CMD, statement[0], end, ctx, _command_tail(texts, True, None)))
        kids = kids[1:]
    if "'" in text or '"' in text:  # (else no argument is one quoted string)
        for s, e in kids:  # the arguments that are one quoted string
            if text[s] in "'\"" and _STRING_WORD.fullmatch(text, s, e):
                events.append((_STRING, s, e, ctx, text[s] == "'"))
    return tuple(events), statement


def _moved_ctx(ctx: _Ctx, base: int) -> _Ctx:
    """``ctx`` of a recording (offsets relative to its chunk) at offset ``base``."""
    if not base:
        return ctx
    stmt = ctx.statement
    return _Ctx(_moved_tasks(ctx.tasks, base), ctx.in_loop, ctx.in_subshell, ctx.in_condition,
                ctx.function, (stmt[0] + base, stmt[1] + base) if stmt is not None else None,
                ctx.after)


def _moved_tasks(tasks: Tasks, base: int) -> Tasks:
    """``tasks`` of a recording (its atoms' spans relative to their chunk) at offset ``base``
    (the same object when no atom needs moving)."""
    if not tasks.atoms:
        return tasks
    return Tasks(tuple(Atom(a.var, a.op, a.value, a.start + base, a.end + base, a.early)
                       for a in tasks.atoms), tasks.opaque)


def control_of(script: Script, text: str) -> Control:
    """The control facts of a whole batch ``script`` whose source is ``text`` (``errexit``
    starts on when the ``#!`` line passes ``-e``: ``#!/bin/bash -ue``).

    Never raises on odd input: what tree-sitter cannot read keeps the defaults (every task,
    foreground). ``Control.backgrounds``/``waits``/``pipelines``/``traps`` hold the batch
    shell's own (not those inside subshells or command strings)."""
    reader = _Reader(script, text)
    shebang = re.match(r"#![ \t]*\S*/(?:bash|sh)[ \t]+(-[A-Za-z]+)", text)
    if shebang and "e" in shebang.group(1):
        # slurmstepd execs the script, so the kernel passes the shebang's flags to bash
        reader.errexit.append((-1, True))
    last = None
    for chunk in script.chunks:  # each top-level chunk on its own, as the shell model reads it
        chunk_text = text[chunk.start:chunk.end]
        recording = chunk_events(chunk_text)
        if recording is not None:
            events, tail = recording
            reader.replay(events, chunk.start, chunk.end)
            if tail is not None:
                last = (tail[0] + chunk.start, tail[1] + chunk.start)
            continue
        tree = _Tree(chunk_text, chunk.start, _never, top=True)
        reader.walk(tree, tree.root, _Ctx())
        last = _last_statement(tree) or last
    if last is not None and reader.body_last:
        # `exec bash FILE` / `bash FILE` last: the script's status is that of the body's end
        runner = next((c for c in script.commands if c.runs is not None and
                       last[0] <= c.start < last[1]), None)
        if runner is not None and runner.runs is not None:
            last = reader.body_last.get(runner.runs.start, last)
    for b in reader.backgrounds:
        b.waits = [w for w in reader.waits if _collects(w, b)]
    for w in reader.waits:  # `wait "$!"`: the last job started before it
        if any(p in ("$!", "${!}") for p in w.pids):
            before = [b for b in reader.backgrounds if b.end <= w.start]
            if before and w not in before[-1].waits:
                before[-1].waits.append(w)
    calls: dict[str, list[Command]] = {}
    for cmd in script.walk() if reader.functions else ():
        if cmd.name in reader.functions:
            calls.setdefault(cmd.name, []).append(cmd)
    return Control(script, reader.of, reader.backgrounds, reader.waits, reader.pipelines,
                   reader.traps, reader.functions, calls, last, reader.errexit,
                   reader.pipefail)


def _collects(w: Wait, b: Background) -> bool:
    """Whether ``wait`` command ``w`` waits for background job ``b`` (bash(1) ``wait``): a
    bare ``wait`` or ``wait -n`` after it (``-n`` only in a loop, or with one job), or
    ``wait $pid`` naming the variable that saved its ``$!``; ``wait "$pid"`` in a loop (over
    the saved PIDs) collects every job started before it."""
    if w.start < b.end and not (w.in_loop and b.in_loop):
        return False
    if w.kind == "all":
        return True
    if w.kind == "any":
        return True
    if w.in_loop:
        return True
    if b.pid_var is None:
        return False
    return b.pid_var == "?" or any(b.pid_var in p for p in w.pids)


def job_control(job: Any) -> Control:
    """The control facts of a ``Job`` (``job.py``), computed once per job; rules and the
    launch facts read which tasks run a command through ``job_control(job).tasks(cmd)``."""
    result: Control = job.derived(_of_job)
    return result


def _of_job(job: Any) -> Control:
    return control_of(job.script, job.source.text)


def agents_per_node(job: Any, cmd: Command, tasks_per_node: int | None,
                    nodes: int | None = None) -> int | None:
    """How many copies of ``cmd`` run on one node of a step with ``tasks_per_node`` tasks per
    node, after the task-id guards around it (``if [ "$SLURM_LOCALID" -eq 0 ]``: one); the
    step's own count when nothing guards it, None when that count is unknown."""
    if tasks_per_node is None:
        return None
    runs = job_control(job).tasks(cmd)
    if not runs.guarded:
        return tasks_per_node
    return runs.per_node(tasks_per_node, nodes)
