"""SB3xx: where variables expand (the batch shell once, or each task).

Facts: the batch script runs as task 0 on node 0, so SLURM_PROCID, SLURM_NODEID and
SLURM_LOCALID are 0 there and the SLURM_STEP_* variables are unset; a value expanded by the
batch shell reaches every task unchanged (slurm-facts.md §6.1, §6.3). ``--export=NONE`` keeps
batch exports out of every step (§14).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from operator import attrgetter

from ..facts.exports import read_by_task_runtime, value_assignment
from ..facts.reads import variable_reads
from ..facts.steps import facts_of
from ..facts.values import literal_elements
from ..facts.wrappers import unwrap_all
from ..options import per_task_variables
from ..shell.model import DOUBLE, UNQUOTED, Expansion
from . import Edit, Fix, Related, Severity, finding, rule

SINK = re.compile(r"rank|node.?id|proc.?id|local.?id|master|rdzv|main.?process|device|gpus?\b|"
                  r"cuda|visible", re.IGNORECASE)
ADDRESS = re.compile(r"addr|endpoint|main.?process.?ip|host|lead", re.IGNORECASE)
NODE_RANK = re.compile(r"node.?rank|machine.?rank", re.IGNORECASE)


def _sink(name: str, exp, launch) -> Severity | None:
    """How bad it is that the batch shell's value of ``exp`` reaches ``name`` (an option or a
    variable) of a task command run by ``launch`` (or None): an error for a rank, rendezvous or
    device setting; info where torchrun ignores it (a node rank under a c10d rendezvous,
    run.py uses it only for the static one); nothing for the batch host's name used as the
    rendezvous address, which is the first node's name, the right one."""
    if not SINK.search(name or ""):
        return Severity.INFO
    if exp.name == "SLURMD_NODENAME" and ADDRESS.search(name):
        return None
    if NODE_RANK.search(name) and launch is not None and \
            launch.arg("rdzv-backend") not in (None, "static"):
        return Severity.INFO
    return Severity.ERROR


def _option_name(words, k) -> str:
    w = words[k]
    v = w.value if w.value is not None else w.text
    if v.startswith("-") and "=" in v:
        return v.split("=", 1)[0]
    if k > 0 and (words[k - 1].value or "").startswith("-"):
        return words[k - 1].value
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=", w.text)
    return m.group(1) if m else ""


@dataclass
class _Hit:
    """One early-expanded per-task variable: the worst place its value reaches, the evidence,
    and whether escaping its ``$`` would fix it (only where another shell re-reads the text)."""

    exp: Expansion
    severity: Severity = Severity.INFO
    related: list[Related] = field(default_factory=list)
    escape: bool = True


class _Flow:
    """Where the batch shell's values of per-task variables go."""

    def __init__(self, job):
        self.job = job
        self.per_task = per_task_variables()
        self.hits: dict[int, _Hit] = {}
        self.carried: dict[int, list] | None = None

    def hit(self, exp, severity, where=None, message="") -> _Hit:
        h = self.hits.setdefault(exp.start, _Hit(exp))
        h.severity = max(h.severity, severity)
        if where is not None:
            h.related.append(Related(where.start, where.end, message))
        return h

    def taint(self, word) -> list:
        """Per-task expansions whose batch-shell value this word carries: its own, and those
        carried by the assignments its other expansions read (``value_at``), transitively."""
        out = [e for e in word.expansions if e.name in self.per_task and e.quoting in
               (UNQUOTED, DOUBLE)]
        for e in word.expansions:
            if e.name and e.quoting in (UNQUOTED, DOUBLE) and e.name not in self.per_task:
                a = self.job.script.value_at(e.name, e.start)
                if a is not None:
                    out += self._carried()[id(a)]
        return out

    def element_options(self, word) -> dict[int, str]:
        """exp.start -> the option that a per-task expansion carried by ``word`` sits in, when
        it comes straight from an array assignment the word expands (``A=(--node_rank=$X)`` or
        ``A=(--node_rank $X)`` read as ``"${A[@]}"``): the sink is that option, not the
        array's name."""
        out: dict[int, str] = {}
        for x in word.expansions:
            if not x.name or x.quoting not in (UNQUOTED, DOUBLE) or x.name in self.per_task:
                continue
            a = self.job.script.value_at(x.name, x.start)
            if a is None or a.value is None or not a.value.text.startswith("("):
                continue
            for e in self._carried()[id(a)]:
                if a.value.start <= e.start < a.value.end:
                    name = _element_option(a.value, e.start)
                    if name:
                        out[e.start] = name
        return out

    def _carried(self) -> dict[int, list]:
        """id(assignment) -> what its value carries, for every assignment of the batch script.

        An expansion reads an assignment that ends before it, so in order of their ends every
        assignment's sources come first: one pass, no recursion (a chain of 100,000
        ``Vn=$Vn-1`` lines is linear, not a stack overflow)."""
        if self.carried is None:
            self.carried = {}
            for a in sorted(self.job.script.assignments, key=attrgetter("end")):
                if a.value is not None:
                    # a value without expansions carries nothing (taint would say [] too;
                    # most assignments are constants: no call for them)
                    self.carried[id(a)] = list({e.start: e for e in self.taint(a.value)}
                                               .values()) if a.value.expansions else []
        return self.carried


def _per_task_readers(job, per_task) -> set[int]:
    """The ids of the commands in which SB301 may find a batch-shell value of a per-task
    variable: those that read one, or a variable whose assigned value may carry one
    (:meth:`VariableReads.carrying`: what :meth:`_Flow.taint` follows), and those of nested
    scripts with a word the batch shell wrote one into (``Word.early``). Every expansion a hit
    is made of is in such a command's words or in an assignment value its words hold."""
    reads = variable_reads(job)
    seeds = per_task & reads.names
    return {id(cmd) for name in reads.carrying(seeds) for cmd, _ in reads.of(name)} | \
        {id(cmd) for name in seeds for cmd in reads.early_commands(name)}


def _element_option(value, at: int) -> str | None:
    """The option of the array-literal element of ``value`` (an assignment's ``(...)`` word)
    that holds offset ``at``: ``--opt`` for ``--opt=$X``, or the element before a bare ``$X``
    when that one is an option (``--opt $X``); None otherwise. Elements are split as bash splits
    them (facts/values.literal_elements; bash(1) "Arrays")."""
    elements = literal_elements(value) or []
    k = next((i for i, w in enumerate(elements) if w.start <= at < w.end), None)
    if k is None:
        return None
    current = elements[k].text
    if current.startswith("-") and "=" in current:
        return current.split("=", 1)[0]
    if current[:at - elements[k].start].strip("\"'") or k == 0:
        return None  # the expansion is not the element's start (`x$X`)
    before = elements[k - 1].text
    return before if before.startswith("-") else None


def _unquoted_heredoc(job, offset: int) -> str | None:
    """The delimiter word of the unquoted here-document whose body holds ``offset`` (the shell
    that writes it expands ``$…`` in the body: bash(1) "Here Documents"), or None."""
    text = job.source.text
    for h in job.script.heredocs:
        if not h.quoted and h.start <= offset < h.end:
            eol = text.find("\n", h.end)  # (not text[h.end:]: a copy of the rest per finding)
            return text[h.end:eol if eol >= 0 else len(text)].strip() or "EOF"
    return None


@rule("SB301", "early-expanded-task-variable", Severity.ERROR,
      "a per-task variable expanded once by the batch shell: 0 on every node", fix="unsafe")
def early_expanded_task_variable(job):
    """``$SLURM_PROCID``/``$SLURM_NODEID``/… expanded by the batch shell reach every task as the
    batch shell's value (slurm-facts.md §6.3)."""
    flow = _Flow(job)
    per_task = flow.per_task
    readers = _per_task_readers(job, per_task)
    if not readers:
        return  # (no per-task variable read anywhere)
    task_cmds = {id(c) for s in job.steps for c in s.task_commands}
    # Escaping (``\$VAR``) is right only where another shell re-reads the text: a ``bash -c``
    # or ``eval`` string. An unquoted ``$CMD`` is only word-split (no second expansion) and a
    # plain srun argument reaches the program literally (slurm-facts.md §6.3 "Correct forms").
    reread = {x.start for s in job.steps for sc in s.task_scripts if sc.kind != "split"
              for c in sc.walk() for w in c.all_words() for x in w.early}
    launch_of = {id(s.command): s.launch for s in job.launches}
    step_of = {}
    for s in job.steps:  # (a loop, not a comprehension: no list of each step's commands)
        step_of[id(s.command)] = s
        for c in s.task_commands:
            step_of[id(c)] = s
    single = {id(f.step) for f in facts_of(job).steps if f.layout.tasks == 1}
    # 1. words of srun steps and of task scripts that carry batch-shell values
    for cmd in job.script.walk():
        if id(cmd) not in readers or id(cmd) not in step_of:
            continue  # nothing per-task read, or neither an srun step nor one of its tasks
        batch = cmd.script is job.script
        for k, w in enumerate(cmd.words):
            if not w.early and not w.expansions:
                continue  # nothing expanded: nothing carried (most words)
            carried = [e for e in w.early if e.name in per_task]
            elements: dict[int, str] = {}
            if batch:
                carried += flow.taint(w)
                elements = flow.element_options(w)
            for e in carried:
                name = elements.get(e.start) or _option_name(cmd.words, k)
                sev = _sink(name, e, launch_of.get(id(cmd)))
                if sev is None:
                    continue
                if id(step_of.get(id(cmd))) in single:
                    sev = Severity.INFO  # one task: the batch shell's value is its own
                h = flow.hit(e, sev, w, f"reaches {name or 'this task command'} as the batch "
                             "shell's value")
                if e.quoting != DOUBLE or (batch and e.start not in reread):
                    h.escape = False
        for a in cmd.assignments:
            if a.value is None:
                continue
            for e in [x for x in a.value.early if x.name in per_task]:
                sev = _sink(a.name, e, None)
                if sev is not None:
                    flow.hit(e, sev, a.value, f"sets {a.name} in every task to the same value")
    for a in job.script.assignments:
        if a.value is None or not a.value.expansions or a.command is None or \
                id(a.command) not in readers or id(a.command) in task_cmds:
            continue  # (no expansion or none that may carry: taint carries nothing)
        if a.command.script is not job.script:
            continue
        for e in flow.taint(a.value):
            sev = _sink(a.name, e, None)
            if sev is None:
                continue
            if job.exported(a.name) and sev is Severity.ERROR and job.steps and \
                    not _overwritten_by_launchers(job, a.name) and \
                    not all(id(st) in single for st in job.steps):
                h = flow.hit(e, Severity.ERROR, a.value,
                             f"exported as {a.name}, which every task inherits with this value")
            else:
                h = flow.hit(e, Severity.INFO)
            if e.quoting != DOUBLE:
                h.escape = False
    for h in sorted(flow.hits.values(), key=lambda h: h.exp.start):
        e = h.exp
        sev = h.severity
        value = "0" if e.name in ("SLURM_PROCID", "SLURM_NODEID", "SLURM_LOCALID") else \
            "the batch host's value"
        delimiter = _unquoted_heredoc(job, e.start)
        if sev is Severity.ERROR and delimiter is not None:
            msg = (f"${e.name} is expanded once by the batch shell when it writes this "
                   f"here-document (task 0 on node 0), so every task gets {value}: all launchers "
                   "claim the same rank and the rendezvous hangs or fails with EADDRINUSE; quote "
                   f"the delimiter (<<'{delimiter}') so the body is written as it is and "
                   f"${e.name} is expanded where the body runs (or escape it as \\${e.name} "
                   "if other lines need the batch shell's values)")
        elif sev is Severity.ERROR:
            msg = (f"${e.name} is expanded once by the batch shell (task 0 on node 0), so every "
                   f"task gets {value}: all launchers claim the same rank and the rendezvous "
                   "hangs or fails with EADDRINUSE; expand it inside the task (escape it as "
                   f"\\${e.name} in a double-quoted command string, or single-quote the "
                   "`bash -c` body)")
        else:
            msg = (f"${e.name} is expanded by the batch shell, where it is always {value} "
                   "(the batch script is task 0 on node 0); harmless only if nothing relies on "
                   "it differing between tasks")
            if delimiter is not None:
                msg += (f" (it is expanded when the here-document is written: <<'{delimiter}' "
                        "keeps it for where the body runs)")
        fixes = []
        if sev is Severity.ERROR and h.escape and e.quoting == DOUBLE:
            fixes.append(Fix(f"escape it so each task expands ${e.name}",
                             (Edit(e.start, e.start, "\\"),), safe=False))
        yield finding("SB301", e.start, e.end, msg, severity=sev, related=h.related[:4],
                      fixes=fixes)


@rule("SB302", "unexported-task-variable", Severity.ERROR,
      "a batch-shell variable read inside a task but never exported (empty there)", fix="unsafe")
def unexported_task_variable(job):
    """A task body that expands late (single-quoted ``bash -c '…'``, ``\\$VAR``) reads the task's
    environment, which has only exported variables — and none under --export=NONE
    (slurm-facts.md §14).

    A read is the task's own variable only when an assignment inside the body *ends before*
    it: in ``if [ -z "$MASTER_ADDR" ]; then MASTER_ADDR=localhost; fi`` the test still reads the
    (empty) inherited value (examples/bad/unexported-master-addr.sbatch)."""
    assignments = {a.start: a for a in job.script.assignments}
    reported: set[str] = set()
    for sf in facts_of(job).steps:
        step = sf.step
        if not step.task_scripts:
            continue  # (most steps: no command string, so no read of a task's own)
        given = {a.name for a in step.command.assignments}  # NAME=x srun …
        mode, listed = step.exports()
        for script in step.task_scripts:
            for e in _inherited_reads(script):
                if e.name in given or e.name in listed or e.name in ENVIRONMENT or \
                        e.name.startswith("SLURM_"):
                    continue
                var = sf.env.get(e.name)  # the batch shell's variable at the step (facts)
                if var is None or var.exported:
                    continue  # not set by the batch shell, or it reaches the tasks
                a = assignments.get(var.start)
                if a is None or a.command is None or a.command.script is not job.script:
                    continue
                exported = job.exported(e.name, before=step.command.start)
                fixes = []
                if exported and mode is not None:
                    msg = (f"${e.name} is read inside the task, but this srun's "
                           f"--export={step.options['export'].text} keeps it out: it is empty "
                           "there; "
                           f"add ALL or {e.name} to --export")
                elif exported:
                    msg = (f"${e.name} is read inside the task, but --export=NONE keeps "
                           "batch-script exports out of srun steps: it is empty there; "
                           "add `--export=ALL` to this srun or "
                           "`export SLURM_EXPORT_ENV=ALL` in the script")
                else:
                    msg = (f"${e.name} is set in the batch shell but never exported, and "
                           "this task body expands it late (inside the task): it is "
                           "empty there; export it")
                    if not a.command.words:
                        fixes = [Fix(f"export {e.name}", (Edit(a.start, a.start, "export "),),
                                     safe=False)]
                yield finding("SB302", e.start, e.end, msg,
                              related=[Related(a.start, a.end, f"{e.name} is set here")],
                              fixes=fixes)
                reported.add(e.name)
    yield from _runtime_settings_kept_out(job, reported)


def _runtime_settings_kept_out(job, reported: set[str]):
    """An exported setting that the tasks' libraries read (OMP_NUM_THREADS, NCCL_*, …: no read
    in the script, :func:`read_by_task_runtime`) which a step's --export keeps out of its tasks
    (sbatch --export=NONE sets SLURM_EXPORT_ENV=NONE, inherited by every srun: sbatch(1)
    --export). Certain that it does not reach them; whether the program loads that library is
    not shown, so a warning. One finding per variable, at its assignment."""
    assignments = {a.start: a for a in job.script.assignments}
    names = sorted({a.name for a in job.script.assignments if read_by_task_runtime(a.name)})
    done = set(reported)
    for sf in facts_of(job).steps if names else ():
        step = sf.step
        prefixes = step.command.assignments  # (most srun lines: none, no set to build)
        given = {a.name for a in prefixes} if prefixes else ()
        for name in names:
            if name in done or name in given or \
                    not job.exported(name, before=step.command.start):
                continue
            var = sf.env.get(name)
            if var is None or var.exported:
                continue  # it reaches the tasks
            a = value_assignment(job.batch_assignments(name), var.start) or \
                assignments.get(var.start)
            if a is None or a.command is None or a.command.script is not job.script:
                continue
            done.add(name)
            mode, _ = step.exports()
            why = (f"this srun's --export={step.options['export'].text} keeps it out"
                   if mode is not None else
                   "--export=NONE keeps batch-script exports out of every srun step")
            yield finding("SB302", a.start, a.end,
                          f"{name} is exported for the tasks (their runtime reads it at start-up), "
                          f"but {why}: the tasks never see it; add `--export=ALL` to the srun or "
                          "`export SLURM_EXPORT_ENV=ALL` after the directives",
                          severity=Severity.WARNING,
                          related=[Related(step.srun.start, step.srun.end,
                                           "the step whose tasks do not get it")])


#: what torchrun's agent sets in every worker's environment, replacing an inherited value
#: (torch/distributed/elastic/agent/server/local_elastic_agent.py ``_start_workers``)
TORCHRUN_WORKER_ENV = frozenset({"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                                 "GROUP_RANK", "ROLE_RANK", "MASTER_ADDR", "MASTER_PORT"})
TORCHRUN_FAMILY = frozenset({"torchrun", "accelerate", "colossalai"})


#: read by no torchrun-style launcher (torch/distributed/run.py takes --node-rank or
#: PET_NODE_RANK and gives its workers GROUP_RANK; accelerate takes --machine_rank)
IGNORED_BY_LAUNCHERS = frozenset({"NODE_RANK"})


def _overwritten_by_launchers(job, name: str) -> bool:
    """Whether every step replaces ``name`` in its tasks before anything there reads it (a
    torchrun-style launcher that sets it for its workers, or, for ``NODE_RANK``, never reads
    it; or the task's own command string exporting it first, as ``srun bash -c 'export
    RANK=$SLURM_PROCID …; exec "$@"' bash python train.py`` does) and no task command string
    reads the inherited value: then an exported batch-shell value reaches nothing the script
    shows."""
    launched = name in TORCHRUN_WORKER_ENV | IGNORED_BY_LAUNCHERS
    if name in IGNORED_BY_LAUNCHERS and any(
            c.name not in ("echo", "printf") for c in variable_reads(job).commands(name)):
        return False  # the script passes it on itself (`--node-rank=$NODE_RANK`)
    steps = facts_of(job).steps
    if not steps or not all(launched and s.launcher in TORCHRUN_FAMILY or
                            _task_exports(s.step, name) for s in steps):
        return False
    return not any(e.name == name for step in job.steps for script in step.task_scripts
                   for e in _inherited_reads(script))


def _task_exports(step, name: str) -> bool:
    """Whether the step's command string exports ``name`` itself (``export NAME=…`` at its top
    level, before the program): its tasks then run the program with their own value."""
    return any(a.name == name and a.exported and a.value is not None and a.command is not None
               and a.command.script is script and a.command is not script.commands[-1]
               for script in step.task_scripts if script.kind != "split" and script.commands
               for a in script.assignments)


#: variables every job inherits already exported: assigning one keeps it exported
ENVIRONMENT = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TMPDIR", "PWD",
               "LD_LIBRARY_PATH", "PYTHONPATH", "CUDA_VISIBLE_DEVICES", "MANPATH"}


def _inherited_reads(script):
    """The first late read of each variable in a task's command string that the task does not
    set itself beforehand: its value comes from the task's environment."""
    inner = [(a.name, a.end) for a in script.assignments]
    seen = set()
    for cmd in script.walk():
        for w in cmd.all_words():
            for e in w.expansions:
                if not e.name or e.early is not None or e.quoting not in (UNQUOTED, DOUBLE):
                    continue
                if e.name in seen or any(n == e.name and end <= e.start for n, end in inner):
                    continue
                seen.add(e.name)
                yield e


#: programs that read their arguments again as shell text (``bash FILE ARG`` may ``eval`` it;
#: ``ssh`` hands its words to the remote shell): a literal ``$NAME`` there may expand later
RE_READERS = frozenset({"bash", "sh", "zsh", "ksh", "dash", "eval", "ssh"})
#: a whole argument that is one variable: ``$NAME``, ``${NAME}``, ``--opt=$NAME``
WHOLE = re.compile(r"(?:-[\w-]+=)?\$(?:\{(\w+)\}|(\w+))")


@rule("SB303", "task-variable-not-expanded", Severity.ERROR,
      "an escaped or single-quoted $SLURM_* argument of an srun step: the program receives the "
      "literal text")
def task_variable_not_expanded(job):
    """srun starts a step's program directly, without a shell (Slurm src/slurmd/slurmstepd/
    task.c ``exec_task``: ``execve`` of the argv), so an argument that the batch shell left
    unexpanded (``\\$SLURM_NODEID``, ``'$SLURM_PROCID'``: bash(1) QUOTING) reaches it as the
    literal text ``$SLURM_NODEID``: torchrun's ``--node-rank`` is an ``int`` (torch/distributed/
    run.py), so it stops with "invalid int value"; a program that takes it as a string runs with
    a wrong value. Only a shell inside the task (``bash -c '…'``) expands it per task."""
    per_task = per_task_variables()
    if not _late_slurm_reads(job, per_task):
        return  # (most scripts: no such variable escaped or single-quoted)
    for step in job.steps:
        met = unwrap_all(step.argv)
        if not met.argv or any((w.value or "").rsplit("/", 1)[-1] in RE_READERS
                               for w in [*(n for _, n in met.wrappers), met.argv[0]]):
            continue
        for w in met.argv[1:]:
            late = [e for e in w.expansions if e.kind == "var" and e.quoting in ("single",
                                                                                   "escaped")]
            if len(late) != 1:
                continue  # (most words: no late expansion, no text to read)
            literal = w.text.replace("\\$", "$").replace("'", "").replace('"', "")
            m = WHOLE.fullmatch(literal)
            if m is None or (m.group(1) or m.group(2)) != late[0].name:
                continue
            e = late[0]
            if e.name is None or e.name not in per_task and not e.name.startswith("SLURM_"):
                continue
            sev = Severity.ERROR if e.name in per_task else Severity.WARNING
            program = met.argv[0].value or met.argv[0].text
            # the value, not its option: `--node-rank=\$X` and `--node-rank \$X` mark the same text
            eq = w.text.find("=") + 1 if w.text.startswith("-") else 0
            yield finding(
                "SB303", w.start + eq, w.end,
                f"`{program}` receives the literal text ${e.name}: srun starts it without a "
                "shell, so nothing expands the escaped (or single-quoted) variable; run the "
                f"command in a shell inside each task (`srun bash -c '{program} … "
                f"${e.name} …'`), where ${e.name} is that task's own value",
                severity=sev)


def _late_slurm_reads(job, per_task) -> bool:
    """Whether some word of the script reads a per-task or ``SLURM_*`` variable escaped or
    single-quoted (facts/reads.py): what an SB303 finding is made of (an srun step's argv words
    are words of the script, or elements of an array assignment's value, which is one)."""
    reads = variable_reads(job)
    for name in reads.names:  # (loops, not a generator: a script reads SLURM_* on many lines)
        if name in per_task or name.startswith("SLURM_"):
            for _, e in reads.of(name):
                if e.kind == "var" and e.quoting in ("single", "escaped"):
                    return True
    return False
