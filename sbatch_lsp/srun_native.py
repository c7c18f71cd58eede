"""The srun-native planner: from one torchrun launcher per node to one Slurm task per GPU.

``plan(job)`` returns a :class:`Conversion`: the edits (character ranges into the job's text)
that turn every torchrun-style launch under srun into an srun-native one, or the reasons it
refuses. The same edits are SB201's unsafe fix (the rule calls :func:`plan`) and, checked by a
lint of the converted text in :mod:`sbatch_lsp.convert`, the ``--convert`` output and the
editor's refactoring. This module reads the Job and its facts only: it imports neither the
rules nor the linter.

What the conversion writes (issue 6; slurm-facts.md §7.2, §8, §10, §14):

- ``#SBATCH --ntasks-per-node=<nproc-per-node>`` (a job ``--ntasks`` is dropped: with a known
  ``--nodes`` the per-node count says it all);
- the training step runs ``bash -c 'export RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID
  WORLD_SIZE=$SLURM_NTASKS LOCAL_WORLD_SIZE=$SLURM_NTASKS_PER_NODE; exec "$@"' bash <argv>``
  where ``<argv>`` is the original one with the launcher and its options replaced by ``python``:
  the arguments still expand in the batch shell, only the rank variables expand per task. A
  launcher already inside a command string (``srun bash -c 'torchrun …'``, or the
  ``LAUNCHER="…"`` value such a string expands) gets the same variables as prefix assignments
  in that string instead; a launcher in the batch shell gets ``srun`` in front;
- ``MASTER_ADDR`` (first host of ``SLURM_JOB_NODELIST``) and ``MASTER_PORT``
  (``SLURM_JOB_ID % 4536 + 61000``, the formula of pyxis's enroot hook, outside Linux's
  ephemeral port range) exported once by the batch shell, unless it already exports them;
- a Megatron-Bridge entry point derives rank, world size and master address/port from the SLURM
  variables itself (slurm-facts.md §10), so it gets the plain ``srun … python <script>`` form;
- ``OMP_NUM_THREADS=1`` when unset and more than one task per node, as torchrun sets it;
- per-task resources (``--cpus-per-task``, ``--gpus-per-task``, ``--mem-per-cpu``) rescaled so a
  node's total stays the same, and every other srun step keeps its old layout explicitly.

It refuses, with reasons, what torchrun does that Slurm cannot: ``--max-restarts``, an elastic
``--nnodes=MIN:MAX``, ``--nproc-per-node=auto|gpu`` with no GPU count, ``--no-python``,
``torch.distributed.launch`` without ``--use-env`` (it passes ``--local-rank`` to the script),
and anything whose text it cannot rewrite safely (options in arrays or unknown variables, a
launcher assembled from several variables, strings nested two deep).
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter

from .diagnostics import Edit, Fix, apply_edits
from .facts.layout import NODE_COUNT_VARS as JOB_NODE_VARS
from .facts.layout import gpu_count, parse_count
from .facts.layout import sole_reference as _sole_reference
from .job import Job, Step
from .facts.wrappers import base as _base
from .launchers import TORCHRUN_MODULES, Launch
from .shell.model import Command, Script, Word, command_words

RANK_VARS = ("RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID WORLD_SIZE=$SLURM_NTASKS "
             "LOCAL_WORLD_SIZE=$SLURM_NTASKS_PER_NODE")
OMP = "OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}"
MASTER_ADDR = 'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)'
MASTER_PORT = "export MASTER_PORT=$((SLURM_JOB_ID % 4536 + 61000))"
#: Megatron-Bridge entry points: they read SLURM_PROCID/NTASKS/LOCALID and the node list
BRIDGE = re.compile(r"megatron[-_./]bridge|(^|/)scripts/training/run_recipe\.py$", re.I)
MEM = re.compile(r"^(\d+)([KMGT]?)$", re.I)
MEM_UNITS = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
LAUNCHER_WORD = re.compile(r"torchrun")
#: commands that name a program without running it
LOOKUPS = {"which", "type", "command", "hash", "echo", "printf", "ls", "test", "[", "[[",
           "whereis", "alias"}
LAUNCHER_VALUE = re.compile(r"""^["']?\s*(\S*/)?torchrun\b|-m\s*torch\.distributed\.(run|launch)\b""")
#: variables whose batch-shell value is wrong in every task but one
PER_TASK_VARS = {"RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_PROCID", "SLURM_LOCALID",
                 "SLURM_NODEID"}
#: what slurmstepd sets in every task's environment, over any value the batch shell exported
#: (exec_task, src/slurmd/slurmstepd/task.c, Slurm 22.05 and later)
STEPD_TASK_VARS = frozenset({"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURMD_NODENAME",
                             "SLURM_TASK_PID"})
#: words that must stay in front of a batch-shell command that srun starts
KEEP_IN_FRONT = {"exec", "time", "command"}
PER_TASK = ("cpus-per-task", "gpus-per-task", "mem-per-cpu")
#: torchrun options with no srun-native equivalent that only change logging: dropped with a note
LOGGING = ("log-dir", "redirects", "r", "tee", "t", "local-ranks-filter")


@dataclass(frozen=True)
class Refusal:
    """Why the conversion cannot be done, anchored on the text at fault (character offsets)."""

    message: str
    start: int
    end: int


@dataclass
class Conversion:
    """The result of :func:`plan` (and of :func:`sbatch_lsp.convert.convert_srun_native`).

    ``edits`` are non-overlapping replacements of character ranges of ``text`` (empty when
    refused or when there is nothing to convert); ``refusals`` say why not; ``notes`` what the
    conversion changed beyond the launch or could not carry over (for people, not machines).
    """

    text: str
    edits: tuple[Edit, ...] = ()
    refusals: list[Refusal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the LintResults of the script and of the converted script, when
    #: :func:`convert_srun_native` made them (the CLI masks secrets in its diff with them)
    linted: tuple = field(default=(), repr=False, compare=False)

    @property
    def status(self) -> str:
        """``"converted"``, ``"refused"`` or ``"unchanged"`` (nothing to convert)."""
        if self.refusals:
            return "refused"
        return "converted" if self.edits else "unchanged"

    @property
    def new_text(self) -> str:
        """The converted script (``text`` itself unless converted)."""
        if self.status != "converted":
            return self.text
        return apply_edits(self.text, list(self.edits))

    def fix(self) -> Fix | None:
        """The conversion as an unsafe Fix (SB201, the editor's refactoring), or None."""
        if self.status != "converted":
            return None
        return Fix("convert to an srun-native launch (one Slurm task per GPU, no torchrun)",
                   self.edits, safe=False)


def plan(job: Job) -> Conversion:
    """The conversion of ``job`` (see the module docstring); computed once per job by
    ``job.derived(plan)`` so SB201's findings share it."""
    return _Planner(job).run()


class _Planner:
    """One conversion of one job: collects edits, refusals and notes as it goes."""

    def __init__(self, job: Job):
        self.job = job
        self.text = job.source.text
        self.edits: list[Edit] = []
        self.refusals: list[Refusal] = []
        self.notes: list[str] = []
        self.rank: dict[Edit, int] = {}
        self._batch: _BatchWords | None = None

    # ---- helpers ----------------------------------------------------------------------------
    def refuse(self, message: str, where=None) -> None:
        start, end = (where.start, where.end) if where is not None else (0, 0)
        self.refusals.append(Refusal(message, start, end))

    def edit(self, start: int, end: int, new_text: str, rank: int = 2) -> None:
        """Record a replacement; among insertions at one offset a lower ``rank`` goes first
        (0 a directive line, 1 the exports above a command that is itself edited)."""
        e = Edit(start, end, new_text)
        if e not in self.edits:
            self.edits.append(e)
            self.rank[e] = rank

    def ordered(self) -> tuple[Edit, ...]:
        return tuple(sorted(self.edits, key=lambda e: (e.start, e.end, self.rank[e])))

    def drop_word(self, start: int, end: int) -> None:
        """Delete a word and the blanks before it (so ``srun --ntasks=2 cmd`` loses
        `` --ntasks=2``)."""
        a = start
        while a > 0 and self.text[a - 1] in " \t":
            a -= 1
        if a > 0 and self.text[a - 1] == "\n":  # first on a continued line: keep the indent
            a = start
            while end < len(self.text) and self.text[end] in " \t":
                end += 1
        self.edit(a, end, "")

    def drop_options(self, step: Step, names) -> None:
        """Delete the step's own ``--name[=]value`` for each of ``names`` it gives."""
        for name in names:
            ow = step.option_words.get(name)
            if ow is not None:
                vw = step.options.get(name)
                self.drop_word(ow.start, vw.end if vw is not None and vw is not ow else ow.end)

    def context(self, offset: int) -> tuple[Word, str] | None:
        """The batch-shell word holding ``offset`` (:meth:`_BatchWords.holding`) and how the
        batch shell quotes that character there (``unquoted``, ``single``, ``double``,
        ``ansi``)."""
        if self._batch is None:
            self._batch = _BatchWords(self.job.script, self.text)
        w = self._batch.holding(offset)
        return (w, _quoting(w.text, offset - w.start)) if w is not None else None

    def nested_text(self, inner: str, where: Word, anchor: int) -> str | None:
        """``inner`` (text as the task's shell must read it) written into a command string
        at ``anchor``: escaped for the quotes the batch shell reads it in; None (with a
        refusal) when those quotes are not plain single or double quotes."""
        ctx = self.context(anchor)
        if ctx is None or ctx[1] not in ("single", "double"):
            self.refuse("the launcher sits in a command string whose quoting the conversion "
                        "cannot rewrite safely; convert this step by hand", where)
            return None
        return _escape(inner, ctx[1])

    # ---- the plan ---------------------------------------------------------------------------
    def run(self) -> Conversion:
        job = self.job
        sites = [s for s in job.launches if s.launch.kind == "torchrun"]
        unseen = self.unseen_launcher(sites)
        if unseen is not None:
            self.refuse("torchrun is started here in a way the linter cannot follow (the "
                        "command or srun's options come from variables or arrays); "
                        "convert this launch by hand", unseen)
            return Conversion(self.text, refusals=self.refusals)
        if not sites:
            return Conversion(self.text, notes=["no torchrun launch: nothing to convert"])
        nprocs: dict[int, Word] = {}
        training: list[Step] = []
        batch: list[Command] = []  # launchers the batch shell runs: srun will
        for site in sites:
            la = site.launch
            if la.flavour not in ("torchrun", "launch"):
                self.refuse(f"{la.title} is started here: its own configuration cannot be "
                            "carried over to an srun-native launch", la.anchor)
                continue
            n = self.check_launch(la)
            if n is None:
                continue
            nprocs.setdefault(n, la.anchor)
            if site.step is None:
                batch.append(site.command)
            elif site.step not in training:
                training.append(site.step)
            self.rewrite_launch(site.command, site.step, la, n)
        if len(nprocs) > 1:
            a, b = list(nprocs.items())[:2]
            self.refuse(f"the launchers ask for different processes per node ({a[0]} here, "
                        f"{b[0]} elsewhere): one --ntasks-per-node cannot serve both", b[1])
        if self.refusals or not nprocs:
            return Conversion(self.text, refusals=self.refusals)
        n = next(iter(nprocs))
        for step in training:
            self.training_step(step, n)
        if batch and job.export_mode == "NONE":
            self.refuse("the job's --export=NONE keeps the batch shell's exports out of the "
                        "step srun would start", job.directives.get("export"))
        self.master_exports([s.command for s in training] + batch, sites)
        c_old, c_new = self.directives(n)
        self.other_steps(training, n, c_old, c_new)
        if self.refusals:
            return Conversion(self.text, refusals=self.refusals, notes=self.notes)
        return Conversion(self.text, self.ordered(), notes=self.notes)

    def unseen_launcher(self, sites) -> Word | None:
        """A word that names torchrun where the job model found no launch: a command word
        ``torchrun``/``torch.distributed.run|launch``, or a variable whose value starts one
        (``TORCHRUN=torchrun``, ``LAUNCHER="python -m torch.distributed.run …"``) and is read
        by some expansion."""
        script = self.job.script
        seen = {s.launch.anchor.start for s in sites}
        for cmd in may_name_torchrun(script, self.text):
            named = _naming_torchrun(cmd.words)
            if named is None or _base(cmd.words[0]) in LOOKUPS:
                continue  # `which torchrun`, `echo torchrun …`
            if cmd.words[0].start in seen or any(w.start in seen for w in cmd.words[:8]):
                continue
            return named
        # (both of LAUNCHER_VALUE's names hold "torch": the regex only for a value holding it)
        candidates = [a for a in script.assignments if a.value is not None and
                      "torch" in a.value.text and LAUNCHER_VALUE.search(a.value.text) and
                      not any(a.value.start <= x < a.value.end for x in seen)]
        if not candidates:
            return None
        names = {a.name for a in candidates}
        # reads the reading shell performs (a single-quoted `$X` is read, if at all, by the
        # shell that runs the string: its commands are walked too); a step's tasks read
        # slurmstepd's own value of a per-task id, whatever the batch shell assigned (the
        # conversion's own wrapper reads $SLURM_PROCID there)
        in_tasks = ({id(c) for s in self.job.steps for c in s.task_commands}
                    if names & STEPD_TASK_VARS else set())
        reads = [(e.name, w.start) for cmd in script.walk() for w in cmd.all_words()
                 for e in w.refs("unquoted", "double") if e.name in names
                 and not (e.name in STEPD_TASK_VARS and e.early is None and id(cmd) in in_tasks)]
        for a in candidates:  # a value some expansion reads (not one overwritten)
            if any(name == a.name and script.value_at(name, at) is a for name, at in reads):
                return a.value
        return None

    def check_launch(self, la: Launch) -> int | None:
        """Refuse what cannot be carried over; return the processes per node, or None."""
        before = len(self.refusals)
        if la.hidden:
            self.refuse(f"{la.hidden[0].text} may hold {la.title} options the conversion "
                        "cannot see", la.hidden[0])
        if la.flavour == "launch" and not la.has("use-env"):
            self.refuse("torch.distributed.launch without --use-env passes --local-rank to the "
                        "script, which an srun-native launch does not; add --use-env (and read "
                        "LOCAL_RANK) first", la.anchor)
        if la.has("no-python"):
            self.refuse("--no-python runs the program without Python; the conversion starts "
                        "`python <script>`", la.args["no-python"])
        restarts = la.args.get("max-restarts")
        if restarts is not None and restarts.value != "0":
            self.refuse("--max-restarts restarts the workers after a failure; Slurm has no "
                        "equivalent for a step (use --requeue or a retry loop)", restarts)
        nn = la.args.get("nnodes")
        if nn is not None and ":" in (nn.value or nn.text):
            lo, _, hi = (nn.value or nn.text).partition(":")
            if lo != hi:
                self.refuse(f"--nnodes={nn.value or nn.text} is an elastic range; an srun step "
                            "has a fixed node count", nn)
        if not la.program:
            self.refuse(f"{la.title} starts no program here", la.anchor)
        logged = [k for k in LOGGING if la.has(k)]
        if logged:
            self.notes.append("dropped torchrun's logging options (" +
                              ", ".join("--" + k for k in logged) + "): use srun's --output "
                              "with %t for one file per task")
        n = self.nproc(la)
        return n if len(self.refusals) == before else None

    def nproc(self, la: Launch) -> int | None:
        w = la.args.get("nproc-per-node")
        if w is None:
            return 1
        v = w.value
        if v is None:
            ref = _sole_reference(w)
            a = self.job.script.value_at(ref, w.start) if ref else None
            v = a.value.value if a is not None and a.value is not None else None
        gpus = self.job.gpus_per_node.value or self.job.profile.gpus_per_node
        if v in ("auto", "gpu") or (v is None and gpus):
            if gpus:
                if v is None:
                    self.notes.append(f"--nproc-per-node={w.text} read as the job's {gpus} "
                                      "GPUs per node")
                return gpus
            self.refuse(f"--nproc-per-node={v} counts the GPUs at run time, and the job states "
                        "no GPUs per node (add --gpus-per-node, or gpus-per-node to the "
                        "profile)", w)
            return None
        if v is not None and v.isdigit() and int(v) > 0:
            return int(v)
        self.refuse(f"--nproc-per-node={w.text} is not a number the conversion can read", w)
        return None

    # ---- the launch itself ------------------------------------------------------------------
    def rewrite_launch(self, cmd: Command, step: Step | None, la: Launch, n: int) -> None:
        """Replace the launcher and its options by ``python`` and give the program the rank
        variables, per task. Three shapes: the launcher is srun's own argv (``srun torchrun
        …``, also through a word-split ``$LAUNCHER``): srun starts the ``bash -c`` wrapper; it
        sits in a command string (``srun bash -c '… torchrun …'``, or the ``CMD="…"`` such a
        string expands): the variables become prefix assignments there; it runs in the batch
        shell: ``srun`` and the wrapper go in front."""
        prog = la.program[0]
        k = len(la.words) - len(la.program)
        if _base(la.anchor) == "torchrun":
            first = la.anchor
            head = "python -m" if (la.has("module") or la.has("m")) else "python"
        else:  # python [opts] -m torch.distributed.run|launch: keep the interpreter
            found = _module_option(la)
            if found is None:  # `python -um torch.distributed.run`: -m joined to other options
                self.refuse("the launcher's -m is joined to other Python options; convert this "
                            "launch by hand", la.anchor)
                return
            first = found
            head = "-m" if (la.has("module") or la.has("m")) else ""
        last = la.words[k - 1]
        bridge = bool(BRIDGE.search(prog.text))
        scripts = step.task_scripts if step is not None else []
        in_string = any(sc.kind != "split" for sc in scripts)
        if scripts or any(True for _ in cmd.ancestors()):
            # the launcher's words come from a command string or a variable: rewrite them
            # where they are written, all in one quoted word of the batch script
            if step is None or step.command.top() is not step.command or \
                    len(list(cmd.ancestors())) != 1:
                self.refuse("the launcher is more than one command string deep; convert "
                            "this launch by hand", la.anchor)
                return
            where = self.context(first.start)

            def inside(w: Word) -> bool:
                return where is not None and self.text[w.start:w.end] == w.text and \
                    where[0].start <= w.start < where[0].end
            end = self.launcher_end(la, k, first, inside)
            if end is None or not inside(cmd.words[0]):
                self.refuse("the launcher's words are assembled from several variables; "
                            "convert this launch by hand", la.anchor)
                return
            head_t = self.nested_text(head, la.anchor, first.start) if head else ""
            if head_t is None:
                return
        else:
            head_t, end = head, last.end
        if in_string:
            env = " ".join(([] if bridge else [RANK_VARS]) + ([OMP] if n > 1 else []))
            if env:
                env_t = self.nested_text(env + " ", la.anchor, cmd.words[0].start)
                if env_t is None:
                    return
                self.edit(cmd.words[0].start, cmd.words[0].start, env_t)
        else:
            if step is not None:
                at, srun = step.argv[0].start, ""
            else:  # the batch shell: srun starts it (after `exec`/`time`, which stay in front)
                words = cmd.words
                j = next((i for i, w in enumerate(words) if w.value not in KEEP_IN_FRONT),
                         len(words))
                at, srun = words[j].start, "srun "
            if bridge:
                if n > 1:
                    front = (step.command.words[0] if step is not None else cmd.words[0]).start
                    self.edit(front, front, OMP + " ")
                if srun:
                    self.edit(at, at, srun)
            else:
                body = "export " + RANK_VARS + (" " + OMP if n > 1 else "") + '; exec "$@"'
                self.edit(at, at, f"{srun}bash -c '{body}' bash ")
        if head_t:
            self.edit(first.start, end, head_t)
        else:
            self.drop_word(first.start, end)
        early = sorted({e.name for w in la.program for e in w.refs("unquoted", "double")
                        if e.name in PER_TASK_VARS})
        if early and not in_string:
            self.notes.append("the program's arguments expand " +
                              ", ".join("$" + v for v in early) + " in the batch shell, as "
                              "they did under torchrun: every task gets the same value (read "
                              "the environment in the program instead; see SB301)")
        if bridge:
            self.notes.append(f"{prog.text} is a Megatron-Bridge entry point: it derives rank, "
                              "world size and master address/port from the SLURM variables, "
                              "so it runs as plain `srun … python`")

    def launcher_end(self, la: Launch, k: int, first: Word, inside) -> int | None:
        """Where the launcher's text ends in the batch word that holds ``first``: after its
        last word written there; when its last words are values the batch shell expanded
        (``--master_port=$MASTER_PORT`` in double quotes), just before the program (blanks and
        line continuations stay). None when that cannot be told."""
        words = la.words[la.words.index(first):k]
        written = [i for i, w in enumerate(words) if inside(w)]
        if not written or words[0] is not first or not inside(first):
            return None
        lm = words[written[-1]]
        if written[-1] == len(words) - 1:
            return lm.end
        prog = la.program[0]
        if not inside(prog) or prog.start < lm.end:
            return None
        gap = self.text[lm.end:prog.start]
        tail = re.search(r"[ \t]*(\\\n[ \t]*)*$", gap)
        assert tail is not None  # the pattern matches the empty end of any text
        return lm.end + tail.start()

    def training_step(self, step: Step, n: int) -> None:
        """The training step inherits the job's new layout: drop its own task counts, rescale
        its own per-task resources, and make sure the exports reach its tasks."""
        job = self.job
        if step.command.top() is not step.command:
            self.refuse("this srun runs inside a command string; convert it by hand", step.srun)
            return
        mode, _ = step.exports()
        if mode in ("NONE", "LIST") or (mode is None and job.export_mode == "NONE"):
            self.refuse("this step does not pass the batch shell's exports (--export): "
                        "MASTER_ADDR and MASTER_PORT would not reach the tasks", step.srun)
            return
        for w in step.hidden:  # `srun $SRUN_ARGS …` whose value is not known
            self.notes.append(f"{w.text} is passed to srun: it must not set the step's "
                              "--nodes, --ntasks or --ntasks-per-node, or the new layout is lost")
        nodes = step.options.get("nodes")
        if nodes is not None:
            same = (_sole_reference(nodes) in JOB_NODE_VARS or
                    (job.nodes.known and job.step_value(step, "nodes") == job.nodes.value))
            if not same:
                self.refuse("this step runs on fewer nodes than the job: the new per-node "
                            "task count would not add up; convert it by hand", nodes)
                return
        self.drop_options(step, ("nodes", "ntasks", "ntasks-per-node"))
        old = step.tasks_per_node
        cpus = _cpus(step.opt("cpus-per-task") or job.directives.value("cpus-per-task"),
                     old, n) if old else (1, 1)
        for name in PER_TASK:
            vw = step.options.get(name)
            if vw is None:
                continue
            if _sole_reference(vw) == "SLURM_" + name.upper().replace("-", "_"):
                continue  # the job's value, which the directives rescale
            self.rescale(name, vw.value, vw.start, vw.end, old, n, cpus, vw, vw.text)

    def rescale(self, name: str, value: str | None, start: int, end: int, old: int | None,
                n: int, cpus: tuple[int, int], where, shown: str | None) -> str | None:
        """Replace ``value`` (at ``start:end``) by its share for ``n`` tasks per node instead of
        ``old`` (see :func:`_rescale`); refuse, anchored on ``where``, when that cannot be
        done. Returns the new value, or None."""
        new = _rescale(name, value, old, n, cpus) if old and value is not None else None
        if new is None:
            self.refuse(f"--{name}={shown} cannot be rescaled from "
                        f"{old or 'an unknown number of'} to {n} task(s) per node", where)
        elif new != value:
            self.edit(start, end, new)
        return new

    def master_exports(self, launches: list[Command], sites) -> None:
        """Export MASTER_ADDR and MASTER_PORT once, above the first training launch, unless
        the batch shell already exports them there (or every entry point is Megatron-Bridge)."""
        job = self.job
        if all(BRIDGE.search(s.launch.program[0].text) for s in sites if s.launch.program):
            return
        first = min(launches, key=lambda c: c.start)
        at = job.source.line_start_at(first.start)
        rest = self.text[at:]
        indent = rest[:len(rest) - len(rest.lstrip(" \t"))]
        lines = []
        for name, line in (("MASTER_ADDR", MASTER_ADDR), ("MASTER_PORT", MASTER_PORT)):
            if job.exported(name, before=first.start):
                continue
            if any(a.start < first.start for a in job.batch_assignments(name)):
                line = "export " + name  # keep the script's own value
            else:
                self.note_replaced_option(sites, name)
            lines.append(indent + line + "\n")
        if lines:
            self.edit(at, at, "".join(lines), rank=1)

    def note_replaced_option(self, sites, name: str) -> None:
        """Say so when the launcher's own ``--master-addr``/``--master-port`` gives way to the
        exported ``name`` (a site may open only some ports; the user decides)."""
        option = "master-" + name.split("_")[1].lower()
        for site in sites:
            word = site.launch.args.get(option)
            if word is not None and word.text.strip('"') not in (f"${name}", f"${{{name}}}"):
                self.notes.append(f"the launcher's --{option}={word.text} is replaced by the "
                                  f"exported {name}; set {name} yourself if that value matters")
                return

    # ---- directives and the other steps ---------------------------------------------------
    def directives(self, n: int) -> tuple[int | None, int | None]:
        """Make the job ask for ``n`` tasks per node and rescale its per-task resources;
        returns the job's (old, new) --cpus-per-task when it changes, else (None, None)."""
        job = self.job
        d = job.directives
        tpn, ntasks = d.all("ntasks-per-node"), d.all("ntasks")
        old = job.tasks_per_node_default()
        if ntasks and not job.nodes.known and job.ntasks.value != 1:  # one task: one node
            self.refuse("the job gives --ntasks without a --nodes count: the conversion cannot "
                        "tell how many nodes it spans (add --nodes)", ntasks[-1])
        for use in tpn:
            if use.value != str(n) and use.value_start is not None and use.value_end is not None:
                self.edit(use.value_start, use.value_end, str(n))
        for k, use in enumerate(ntasks):
            if not tpn and k == len(ntasks) - 1:
                self.edit(use.start, use.end, f"--ntasks-per-node={n}")
            else:
                self.drop_directive(use)
        if not tpn and not ntasks:
            anchor = d.get("nodes") or (d.options[-1] if d.options else None)
            line = anchor.line if anchor is not None else 0
            at = job.source.line_with_break(line)[1]
            nl = "" if self.text[at - 1:at] == "\n" else "\n"
            self.edit(at, at, f"{nl}#SBATCH --ntasks-per-node={n}\n", rank=0)
        changed: tuple[int | None, int | None] = (None, None)
        cpus = _cpus(d.value("cpus-per-task"), old, n) if old else (1, 1)
        for name in PER_TASK:
            for use in d.all(name):
                if use.value_start is None or use.value_end is None:
                    continue  # a flag without a value: nothing to rescale
                new = self.rescale(name, use.value, use.value_start, use.value_end, old, n,
                                   cpus, use, use.value)
                if new is not None and new != use.value:
                    self.notes.append(f"#SBATCH --{name}={use.value} is now {new}: each of the "
                                      f"{n} tasks per node gets its share")
                    if name == "cpus-per-task":
                        changed = (parse_count(use.value), parse_count(new))
        return changed

    def drop_directive(self, use) -> None:
        """Remove one option from a directive line (the whole line when it is the only one)."""
        alone = [o for o in self.job.directives.options if o.line == use.line] == [use]
        if alone:
            self.edit(*self.job.source.line_with_break(use.line), "")
        else:
            self.drop_word(use.start, use.end)

    def other_steps(self, training: list[Step], n: int, c_old, c_new) -> None:
        """Every other srun step keeps the layout it had: ``--nodes --ntasks
        --ntasks-per-node`` spelled out when it inherited one that the conversion changes."""
        job = self.job
        steps = [s for s in job.steps if s not in training]
        for cmd in job.script.walk():
            if cmd.in_substitution and cmd.words:
                s = job.step_for(cmd)
                if s is not None:
                    steps.append(s)
        for step in steps:
            if "ntasks" in step.options:
                continue  # its own task count: the job's layout does not reach it
            t = step.tasks_per_node
            if t == n and "cpus-per-task" in step.options or t == n and c_old is None:
                continue
            if t is None:
                self.refuse(f"cannot tell how many tasks per node this step starts "
                            f"({step.layout_note}), and the new --ntasks-per-node={n} would "
                            "change it; give it --ntasks", step.srun)
                continue
            # in a command string or a word-split variable the counts go unquoted (numbers)
            script = step.command.script
            nested = script is not None and script.parent is not None
            q = "" if nested else '"'
            nodes = step.options.get("nodes")
            k_text = nodes.text.strip('"') if nodes is not None else "$SLURM_JOB_NUM_NODES"
            k = job.step_value(step, "nodes") if nodes is not None else job.nodes.value
            if t == 1:
                total = f"{q}{k_text}{q}"
            elif k is not None:
                total = str(k * t)
            elif re.fullmatch(r"\$\{?[A-Za-z_]\w*\}?", k_text):
                total = f'{q}$(({k_text.lstrip("$")}*{t})){q}'
            else:
                self.refuse("cannot spell this step's old task count explicitly", step.srun)
                continue
            add = ""
            if t != n:
                self.drop_options(step, ("nodes", "ntasks-per-node"))
                node_t = nodes.text if nodes is not None else f"{q}{k_text}{q}"
                add += f" --nodes={node_t} --ntasks={total} --ntasks-per-node={t}"
            if c_old is not None and "cpus-per-task" not in step.options:
                add += f" --cpus-per-task={c_old}"
            if not add:
                continue
            if nested and script is not None and script.kind == "split":
                # `S="srun …"; $S cmd`: the batch shell expands the value once, and the split
                # words are not read again: the counts must expand where S is assigned
                ctx = self.context(step.srun.end - 1)
                if ctx is None or ctx[1] != "double":
                    self.refuse("this srun is held in a variable whose quoting the conversion "
                                "cannot extend; give it its layout by hand", step.srun)
                    continue
            elif nested:
                text = self.nested_text(add, step.srun, step.srun.end)
                if text is None:
                    continue
                add = text
            self.edit(step.srun.end, step.srun.end, add)


def _module_option(la: Launch) -> Word | None:
    """The word of ``la`` (``python … -m torch.distributed.run|launch``) that starts with
    ``-m`` and names the module (``-mtorch.distributed.run`` or ``-m`` before it), or None."""
    words = la.words
    for i, w in enumerate(words):
        v = w.value or ""
        if v.startswith("-m") and (v[2:] or (words[i + 1].value if i + 1 < len(words)
                                             else None)) in TORCHRUN_MODULES:
            return w
    return None


#: where a literal word of the script's own text may name torchrun: the letters of "torch"
#: with only what quote removal drops between them (quotes, backslashes, ``$`` of ``$"…"``,
#: the line break of a continuation; scan_word keeps ``$'…'`` as written)
TORCH_TEXT = re.compile(r"t[\\'\"$\n]*o[\\'\"$\n]*r[\\'\"$\n]*c[\\'\"$\n]*h")


def may_name_torchrun(script: Script, text: str) -> list[Command] | Iterator[Command]:
    """The commands of ``script.walk()`` (in its order) that may hold a word naming torchrun
    (:func:`_naming_torchrun`): in a script whose words lie in their commands' chunks
    (:func:`_own_chunks`), the commands of the chunks where :data:`TORCH_TEXT` finds its
    ``text``, and every nested command (a nested word may join values the batch shell
    substituted: ``"${A}chrun"``); else all of them. (A 5,000-line script: a few commands
    instead of every word of ~5,000; tests/test_convert.py compares both.)"""
    if not _own_chunks(script):
        return script.walk()
    commands, chunks = script.commands, script.chunks
    picked: set[int] = set()
    for m in TORCH_TEXT.finditer(text):
        k = bisect_right(chunks, m.start(), key=START) - 1
        if k >= 0 and m.start() < chunks[k].end:
            picked.update(range(*_chunk_commands(script, k)))
    out: list[Command] = []
    for i in sorted(picked.union([i for i, c in enumerate(commands) if c.nested])):
        cmd = commands[i]
        if i in picked:
            out.append(cmd)
        for inner in cmd.nested:
            out.extend(inner.walk())
    return out


def _naming_torchrun(words: list[Word]) -> Word | None:
    """The first of ``words`` naming torchrun (``torchrun``, ``torch.distributed.run|launch``),
    or None. Both names hold "torch": the regex only for a word that may be one (a plain loop:
    it runs over every command of the script)."""
    for w in words:
        v = w.value
        if v is not None and "torch" in v and (LAUNCHER_WORD.fullmatch(_base(w)) or
                                               v in TORCHRUN_MODULES):
            return w
    return None


def batch_words(script: Script) -> list[Word]:
    """The batch shell's words in the order :class:`_BatchWords` ranks them: each command's
    argv and prefix assignment values, then the values of the script's assignments."""
    return command_words(script.commands) + _values(script)


#: the bisection key of the chunks and commands (sorted by start): no list of starts is made
START = attrgetter("start")


def _own_chunks(script: Script) -> bool:
    """Whether every command of ``script`` comes from its own top-level chunks, each word inside
    the chunk holding its command's start: no function (a call may put its words into the
    body's commands), no sourced file (its commands sit at the ``source`` line), no here-document
    body read into it. Its commands are sorted by start and its chunks follow each other
    (shell/parse.py)."""
    return not (script.functions or script.imports or script.bodies)


def _chunk_commands(script: Script, k: int) -> tuple[int, int]:
    """The range of ``script.commands`` that start in chunk ``k`` (a script with
    :func:`_own_chunks`)."""
    commands, chunk = script.commands, script.chunks[k]
    return (bisect_left(commands, chunk.start, key=START),
            bisect_left(commands, chunk.end, key=START))


class _BatchWords:
    """The batch shell's words (:func:`batch_words`) looked up by offset, for the few lookups
    of one plan (a launcher nested in a command string), without gathering and sorting every
    word of the script (a 5,000-line script holds ~20,000) for them.

    In a script with :func:`_own_chunks` a lookup bisects the chunks and indexes only the
    words of the commands starting in the chunk that holds the offset, then (when none holds
    it) the assignments' values: each index built once, on first use. Any other script is
    looked up in one :class:`_WordIndex` of all its words (the reference; tests/test_convert.py
    compares both)."""

    def __init__(self, script: Script, text: str):
        self.script = script
        self.text = text
        self.by_chunk = _own_chunks(script)
        #: the indexes built so far: None for all of batch_words(), "values" for the
        #: assignments' values, a chunk's number for its commands' words
        self._indexes: dict[int | str | None, _WordIndex] = {}

    def holding(self, offset: int) -> Word | None:
        """The first word (in :func:`batch_words`' order) with ``start <= offset < end`` whose
        text is the source text there, or None."""
        if not self.by_chunk:
            return self._index(None, lambda: batch_words(self.script)).holding(offset, self.text)
        chunks = self.script.chunks
        k = bisect_right(chunks, offset, key=START) - 1
        if k >= 0 and offset < chunks[k].end:
            found = self._index(k, lambda: self._chunk_words(k)).holding(offset, self.text)
            if found is not None:
                return found
        return self._index("values", lambda: _values(self.script)).holding(offset, self.text)

    def _index(self, key: int | str | None, words: Callable[[], list[Word]]) -> "_WordIndex":
        """The index ``key`` names, of ``words()``, built on first use."""
        index = self._indexes.get(key)
        if index is None:
            index = self._indexes[key] = _WordIndex(words())
        return index

    def _chunk_words(self, k: int) -> list[Word]:
        """The words of the commands starting in chunk ``k``, in the script's order."""
        first, last = _chunk_commands(self.script, k)
        return command_words(self.script.commands[first:last])


def _values(script: Script) -> list[Word]:
    """The values of the script's assignments, in its order."""
    return [a.value for a in script.assignments if a.value is not None]


class _WordIndex:
    """Words (in a given order) looked up by the offsets they span, in O(log n) plus the words
    starting within the longest word's length before the offset."""

    def __init__(self, words: list[Word]):
        self.words = words
        starts = [w.start for w in words]
        self.order = sorted(range(len(words)), key=starts.__getitem__)  # stable: order kept
        self.starts = [starts[k] for k in self.order]
        self.longest = max([w.end - w.start for w in words], default=0)

    def holding(self, offset: int, text: str) -> Word | None:
        """The first word (in the given order) with ``start <= offset < end`` whose text is
        ``text[start:end]`` (a verbatim slice of the source), or None."""
        found = None
        k = bisect_right(self.starts, offset) - 1
        while k >= 0 and self.starts[k] > offset - self.longest:  # start > offset - longest
            i = self.order[k]                                       # <=> it may reach offset
            w = self.words[i]
            if offset < w.end and (found is None or i < found) and text[w.start:w.end] == w.text:
                found = i
            k -= 1
        return self.words[found] if found is not None else None


def _quoting(text: str, k: int) -> str:
    """How a shell reads character ``k`` of the word ``text``: ``unquoted``, ``single``,
    ``double`` or ``ansi`` (``$'…'``)."""
    state, i = "unquoted", 0
    while i < k:
        ch = text[i]
        if state == "unquoted":
            if ch == "\\":
                i += 2
                continue
            if ch == "'":
                state = "single"
            elif ch == '"':
                state = "double"
            elif ch == "$" and text[i + 1:i + 2] == "'":
                state, i = "ansi", i + 2
                continue
        elif state == "single":
            if ch == "'":
                state = "unquoted"
        elif ch == "\\":
            i += 2
            continue
        elif (state == "double" and ch == '"') or (state == "ansi" and ch == "'"):
            state = "unquoted"
        i += 1
    return state


def _escape(inner: str, quoting: str) -> str:
    """``inner`` written inside single or double quotes so the quoted string reads it back."""
    if quoting == "single":
        return inner.replace("'", "'\\''")
    return re.sub(r'([\\$"`])', r"\\\1", inner)


def _mem_mb(text: str) -> float | None:
    m = MEM.match(text.strip())
    if not m:
        return None
    return int(m.group(1)) * MEM_UNITS[m.group(2).upper()]


def _rescale(name: str, value: str | None, old: int, new: int,
             cpus: tuple[int, int] = (1, 1)) -> str | None:
    """A per-task resource for ``new`` tasks per node that keeps the node's total of ``old``
    tasks: CPUs and GPUs divided (at least 1 CPU; GPUs must divide evenly); memory per CPU
    scaled so tasks × CPUs per task × memory per CPU stays the same, ``cpus`` being the
    (old, new) CPUs per task. Memory comes back in megabytes (``M``) or gigabytes when whole.
    None when ``value`` cannot be read or divided."""
    if value is None or old == new and cpus[0] == cpus[1]:
        return value
    if name == "cpus-per-task":
        c = parse_count(value)
        return str(max(1, c * old // new)) if c else None
    if name == "gpus-per-task":
        g = gpu_count(value)
        if not g or (g * old) % new:
            return None
        head = value.rsplit(":", 1)[0] + ":" if ":" in value else ""
        return f"{head}{g * old // new}"
    mb = _mem_mb(value)
    if mb is None:
        return None
    total = mb * old * cpus[0]
    if total == mb * new * cpus[1]:
        return value
    per = int(total // (new * cpus[1]))
    if per < 1:
        return None
    return f"{per // 1024}G" if per % 1024 == 0 else f"{per}M"


def _cpus(job_value: str | None, old: int, new: int) -> tuple[int, int]:
    """CPUs per task before and after rescaling (1 when not given)."""
    c = parse_count(job_value) if job_value else 1
    c = c or 1
    return c, max(1, c * old // new)


__all__ = ["Conversion", "Refusal", "plan"]
