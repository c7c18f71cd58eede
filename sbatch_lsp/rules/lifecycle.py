"""SB208–SB214: how the job ends (background steps, ``wait``, pipelines, crashed components) and
preemption (``--signal``, traps, ``--requeue``). Predicates over the control facts
(``facts/control.py``) and the job's steps.

Facts (Slurm 22.05.8 and later; checked on the Slurm tier, tests/slurm/test_lifecycle.py):

- The job ends when the batch script exits; slurmstepd then kills what is left of the job's
  steps, background ones included (sbatch(1) DESCRIPTION: "When the job allocation is finally
  granted for the batch script, Slurm runs a single copy of the batch script on the first node";
  the allocation is released when it ends, ``src/slurmd/slurmstepd/mgr.c``). The job's exit code
  is the batch script's (Slurm "Job Exit Codes" page, job_exit_code.shtml).
- bash(1) ``wait``: with no argument it returns 0 once every child has ended, whatever their
  status; ``wait -n`` and ``wait PID`` return the job's status. A pipeline's status is its last
  command's unless ``pipefail`` is set (bash(1) Pipelines); ``set -e`` acts on that status.
- srun(1) ``-K, --kill-on-bad-exit``: without it (and with the slurm.conf default
  ``KillOnBadExit=0``) the other tasks of a step keep running when one fails; it never reaches
  another step.
- sbatch(1) ``--signal=[{R|B}:]<sig_num>[@sig_time]``: "By default all job steps will be
  signaled, but not the batch shell itself. Use the "B:" option to signal only the batch shell".
- bash(1) SIGNALS: "If bash is waiting for a command to complete and receives a signal for which
  a trap has been set, the trap will not be executed until the command completes. When bash is
  waiting for an asynchronous command via the wait builtin, the reception of a signal for which
  a trap has been set will cause the wait builtin to return immediately".
- sbatch(1) ``--requeue``: a requeued job runs the batch script again from its first line.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator

from ..directives import OptionUse
from ..facts.control import Background, Control, Wait, job_control, signal_name
from ..facts.reads import variable_reads
from ..job import Job, Step
from ..shell.model import Command
from . import Diagnostic, Edit, Fix, Related, Severity, finding, rule

#: commands that end at once and decide nothing about the job's work (what a script does after
#: its steps: report, tidy up); anything else after a background step may be what keeps it alive
QUICK = frozenset({"echo", "printf", "date", "true", ":", "export", "unset", "cd", "pwd",
                   "cp", "mv", "rm", "mkdir", "touch", "cat", "ls", "sync", "hostname",
                   "module", "ml", "source", ".", "set", "exit", "return", "sacct", "seff",
                   "scontrol", "squeue", "env", "printenv", "trap", "sleep", "wait"})
#: what a script does after its steps only to report: the job's exit code is then theirs (0)
REPORT = frozenset({"echo", "printf", "date", "true", ":", "exit", "sleep", "hostname", "sacct",
                    "seff"})
#: the stages a training step is piped into to keep a log or filter it
LOG_FILTERS = frozenset({"tee", "grep", "sed", "awk", "cat", "head", "tail", "ts", "less",
                         "python", "python3", "gzip", "sort", "uniq", "cut", "tr", "logger"})
#: text tools whose pipelines are data plumbing, not a step's work
DATA_TOOLS = frozenset({"grep", "egrep", "fgrep", "sed", "awk", "gawk", "cut", "sort", "uniq",
                        "comm", "head", "tail", "tr", "wc", "seq", "jq", "yq", "xargs", "paste",
                        "join", "find", "nvidia-smi", "ss", "ps", "du", "df", "zcat", "gunzip",
                        "tac", "column", "shuf", "basename", "dirname", "readlink", "realpath",
                        "getent", "id", "whoami", "uname", "git", "lscpu", "numactl", "free",
                        "ip", "ifconfig", "squeue", "sinfo", "sacct", "scontrol", "printenv"})
RESUME = re.compile(r"resum|restart|checkpoint|ckpt|load[_-]?(from|dir|path|checkpoint)|"
                    r"continue|auto[_-]?resume|SLURM_RESTART_COUNT|--load\b|from[_-]?ckpt",
                    re.IGNORECASE)
SIGNAL = re.compile(r"^(?:(?P<who>[RB]{1,2}):)?(?P<sig>[A-Za-z0-9]+)(?:@(?P<time>\d+))?$")


def _steps_in(job: Job, start: int, end: int) -> list[Step]:
    """The srun steps whose srun command lies in ``[start, end)``, or in the body of a
    function a command there calls with its arguments (``run python x.py`` for ``run() {
    srun "$@"; }``: Command.calls)."""
    calls, order, starts = job.derived(_step_index)
    called = {name for at, name in calls if start <= at < end}
    inside = order[bisect_left(starts, start):bisect_left(starts, end)]
    if called:
        inside += [k for k, s in enumerate(job.steps) if s.command.function in called]
    return [job.steps[k] for k in sorted(set(inside))]


def _step_index(job: Job) -> tuple[list[tuple[int, str]], list[int], list[int]]:
    """For :func:`_steps_in`, once per job (it is asked for each pipeline, background job and
    statement): the (start, function called) of the commands that call a function with their
    arguments, the steps' indices in ``job.steps`` ordered by their srun command's start, and
    those starts."""
    calls = [(c.start, c.calls) for c in job.script.commands if c.calls is not None]
    steps = job.steps
    order = sorted(range(len(steps)), key=lambda k: steps[k].command.start)
    return calls, order, [steps[k].command.start for k in order]


def _work_in(job: Job, start: int, end: int) -> bool:
    """Whether a statement holds the job's work: a step, a launcher, or a program that is not
    one of the QUICK commands."""
    if _steps_in(job, start, end):
        return True
    starts = job.derived(_work_starts)  # a launcher's or a program's command start in the span
    k = bisect_left(starts, start)
    return k < len(starts) and starts[k] < end


def _work_starts(job: Job) -> list[int]:
    """For :func:`_work_in`, once per job (it is asked for each background job): the sorted
    starts of the launch sites' commands and of the commands that run a program not QUICK."""
    return sorted([site.command.start for site in job.launches] +
                  [c.start for c in job.script.walk() if c.words and not c.in_substitution and
                   c.name is not None and c.name.rsplit("/", 1)[-1] not in QUICK])


def _cares_about_failure(job: Job, ctl: Control, at: int) -> bool:
    """Whether the script shows that a failed step should fail the job: ``set -e`` or
    ``pipefail`` on at ``at``, a status test (``$?``, ``|| exit``), ``--kill-on-bad-exit`` on a
    step, or ``--mail-type`` asking for FAIL."""
    if ctl.option_on(ctl.errexit, at) or ctl.option_on(ctl.pipefail, at):
        return True
    if _reads(job, "?") or any(c.name in ("exit", "return") and ctl.at(c).after == "||"
                              for c in job.script.walk()):
        return True
    if any("kill-on-bad-exit" in s.options for s in job.steps):
        return True
    mail = (job.directives.value("mail-type") or "").upper()
    return any(k in mail for k in ("FAIL", "ALL"))


def _reads(job: Job, name: str) -> bool:
    """Whether any command of the script expands ``$name`` (``$?``, ``${PIPESTATUS[0]}``)."""
    return bool(variable_reads(job).of(name))


def _where_run(ctl: Control, cmd: Command, start: int, end: int) -> tuple[int, int]:
    """Where the batch shell runs the span of ``cmd``: its own, or, inside a function, that of
    the function's last call."""
    calls = ctl.calls.get(cmd.function or "") if cmd.function else None
    if calls:
        last = max(calls, key=lambda c: c.start)
        return last.start, last.end
    return start, end


def _later_work(job: Job, ctl: Control, after: int, inside: str | None = None) -> Command | None:
    """The first batch-shell command after offset ``after`` that runs in the foreground and is
    not QUICK (nor a call of the function ``inside``): what keeps the batch script, and its
    background steps, alive."""
    for cmd in job.script.commands:
        if cmd.start < after or cmd.in_substitution or not cmd.words:
            continue
        if cmd.name in ctl.functions and (cmd.name == inside or not any(
                _foreground_work(ctl, c) for c in job.script.commands if c.function == cmd.name)):
            continue  # a call of a function that only starts background jobs
        if _foreground_work(ctl, cmd):
            return cmd
    return None


def _foreground_work(ctl: Control, cmd: Command) -> bool:
    cc = ctl.at(cmd)
    if cc.background or cc.in_condition or cmd.in_substitution or cmd.runs is not None:
        return False  # (`exec bash FILE` runs a generated body: its commands are the work)
    if cmd.name is None:
        return bool(cmd.words)  # `$MY_SCRATCH/code tunnel`, `${COMMAND}`: a program unknown
    name = cmd.name.rsplit("/", 1)[-1]
    return bool(name) and name not in QUICK


def _rest_is_quiet(job: Job, ctl: Control, after: int) -> bool:
    """Whether nothing after ``after`` decides the job's exit code: only REPORT commands
    (``echo``, ``date``), no test of ``$?`` and no ``exit N`` with a status of its own."""
    for cmd in job.script.commands:
        if cmd.start < after or cmd.in_substitution or not cmd.words or cmd.runs is not None:
            continue
        name = (cmd.name or "").rsplit("/", 1)[-1]
        if name == "exit":
            arg = cmd.words[1].text if len(cmd.words) > 1 else ""
            if arg not in ("", "0", "$?", '"$?"'):
                return False
            continue
        if ctl.at(cmd).in_condition or name not in REPORT:
            return False
    return True


def _only_exit_follows(job: Job, after: int) -> bool:
    """Whether the batch script's commands after ``after`` are at most a bare ``exit`` or
    ``exit $?`` (which keep the status of what ran before them)."""
    ordered = job.derived(_own_commands)
    k = bisect_left(ordered, after, key=lambda c: c.start)
    rest = ordered[k:]
    return len(rest) <= 1 and all(
        c.name == "exit" and [w.text for w in c.words[1:]] in ([], ["$?"], ['"$?"'])
        for c in rest)


# ---- SB208 ------------------------------------------------------------------------------------

@rule("SB208", "background-step-not-waited", Severity.ERROR,
      "a step started with `&` that no `wait` collects: Slurm kills it when the script ends",
      fix="unsafe")
def background_step_not_waited(job: Job) -> Iterator[Diagnostic]:
    """A background step the batch shell never waits for is killed when the script exits
    (the job ends with the batch script); an error when nothing in the foreground keeps the
    script running after it, an info when later work may (a helper for that work)."""
    ctl = job_control(job)
    fixed = False  # one fix saves every step's PID: only the first finding carries it
    for b in ctl.backgrounds:
        if b.waits or not _work_in(job, b.start, b.end) or b.command is None:
            continue
        if not ctl.tasks(b.command).in_batch_shell():
            continue
        _, after = _where_run(ctl, b.command, b.start, b.end)
        later = _later_work(job, ctl, after, b.command.function)
        if later is not None and not _steps_in(job, b.start, b.end):
            continue  # a monitor beside the work (`nvidia-smi dmon &`): ending with it is fine
        if later is not None:
            yield finding(
                "SB208", b.command.start, b.command.end,
                "this background step is never waited for: it is killed when the batch script "
                "ends, after the foreground work it runs beside; if it must finish, `wait` for "
                "it", severity=Severity.INFO,
                related=[Related(later.start, later.end,
                                 "the script ends when this (and what follows) is done")])
            continue
        yield finding(
            "SB208", b.command.start, b.command.end,
            "this step runs in the background and nothing waits for it: the batch script "
            "reaches its end at once, the job ends and Slurm kills the step (the job shows "
            "COMPLETED while the work never ran); add `wait` after the last background step",
            fixes=[f for f in [None if fixed else _wait_each_fix(job, _unwaited(job, ctl),
                                                                 None)] if f])
        fixed = True


def _unwaited(job: Job, ctl: Control) -> list[Background]:
    return [b for b in ctl.backgrounds if not b.waits and _work_in(job, b.start, b.end)]


WAIT_EACH = 'rc=0; for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done'


def _save_pids(job: Job, backgrounds: list[Background]) -> list[Edit] | None:
    """Edits that append ``pids+=("$!")`` after the ``&`` of each background statement (on its
    line), or None when one of them is not followed by the end of its line."""
    text = job.source.text
    edits = []
    for b in backgrounds:
        amp = text.find("&", b.end)
        line_end = text.find("\n", b.end)
        line_end = len(text) if line_end < 0 else line_end
        if amp < 0 or text[b.end:amp].strip() or text[amp + 1:line_end].strip():
            return None
        edits.append(Edit(amp + 1, amp + 1, ' pids+=("$!")'))
    return edits


def _wait_each_fix(job: Job, backgrounds: list[Background], wait: Wait | None) -> Fix | None:
    """Save each background step's PID, wait for each (replacing ``wait``, or at the end of
    the script) and exit with the first failure's status: the job then fails when a step
    fails (bash(1) ``wait PID`` returns that job's status, even when it ended earlier)."""
    edits = _save_pids(job, backgrounds)
    if edits is None:
        return None
    text = job.source.text
    if wait is not None:
        edits.append(Edit(wait.start, wait.end, WAIT_EACH))
        edits.append(Edit(len(text), len(text), ("" if text.endswith("\n") else "\n") +
                          'exit "$rc"\n'))
    else:
        sep = "" if text.endswith("\n") else "\n"
        edits.append(Edit(len(text), len(text), f'{sep}{WAIT_EACH}\nexit "$rc"\n'))
    return Fix("wait for each background step and exit with the first failure's status",
               tuple(sorted(edits, key=lambda e: e.start)), safe=False)


# ---- SB209 ------------------------------------------------------------------------------------

@rule("SB209", "wait-hides-failure", Severity.WARNING,
      "a bare `wait` as the script's end: its status is 0 whatever the steps did",
      fix="unsafe")
def wait_hides_failure(job: Job) -> Iterator[Diagnostic]:
    """``wait`` with no argument returns 0 (bash(1)): when it ends the script, the job's exit
    code is 0 and the job COMPLETED even though a step failed. A warning where the script shows
    that a failure should fail the job (``set -e``, a status test, ``--kill-on-bad-exit``,
    ``--mail-type=FAIL``), an info otherwise."""
    ctl = job_control(job)
    for w in ctl.waits:
        if w.kind != "all" or w.in_loop or ctl.at(w.command).in_condition:
            continue
        collected = [b for b in ctl.backgrounds if w in b.waits and
                     _work_in(job, b.start, b.end)]
        if not collected or any(_checked(ctl, b, w) for b in collected):
            continue
        if not _rest_is_quiet(job, ctl, w.end):
            continue
        related = [Related(b.start, b.end, "a step this wait collects") for b in collected[:3]]
        beside = _later_work(job, ctl, max(b.end for b in collected))
        severity = None if _cares_about_failure(job, ctl, w.start) and (
            beside is None or beside.start >= w.start) else Severity.INFO
        yield finding(
            "SB209", w.start, w.end,
            f"`wait` with no argument returns 0 whatever the {len(collected)} background "
            "step(s) returned, and the script ends here: a failed step still leaves the job "
            "COMPLETED with exit code 0; wait for each saved PID (`wait \"$pid\" || rc=$?`) or "
            "use `wait -n` and exit with its status", related=related, severity=severity,
            fixes=[f for f in [_wait_each_fix(job, collected, w)] if f])


def _checked(ctl: Control, b: Background, w: Wait) -> bool:
    """Whether the background job's status is read by another wait than ``w``."""
    return any(o is not w and o.kind != "all" for o in b.waits)


# ---- SB210 ------------------------------------------------------------------------------------

@rule("SB210", "pipeline-hides-failure", Severity.WARNING,
      "a step piped to `tee` (or a filter) without `pipefail`: the pipeline's status is tee's",
      fix="unsafe")
def pipeline_hides_failure(job: Job) -> Iterator[Diagnostic]:
    """Without ``pipefail`` a pipeline returns its last command's status (bash(1)): a failed
    ``srun … | tee log`` returns 0, so as the script's last command it makes the job COMPLETED,
    and under ``set -e`` the script runs on after the failure. A warning for an srun step or a
    launcher; for another program an info unless the script shows that failures matter."""
    ctl = job_control(job)
    reads_status: bool | None = None  # read when a pipeline may need it (a walk of every word)
    for p in ctl.pipelines:
        if p.pipefail or len(p.commands) < 2:
            continue
        if reads_status is None:
            reads_status = _reads(job, "PIPESTATUS")
        if reads_status:
            continue
        last = p.last
        if last is None or (last.name or "").rsplit("/", 1)[-1] not in LOG_FILTERS:
            continue
        head = _pipeline_work(job, p.start, last.start)
        if head is None or ctl.at(head).in_condition or ctl.at(head).background:
            continue
        _, end = _where_run(ctl, head, p.start, p.end)
        ends = _only_exit_follows(job, end)
        errexit = ctl.option_on(ctl.errexit, p.start)
        if not ends and not errexit:
            continue
        is_step = bool(_steps_in(job, head.start, head.end + 1)) or any(
            s.command is head for s in job.launches)
        severity = None if is_step or _cares_about_failure(job, ctl, p.start) else Severity.INFO
        if ends:
            why = ("the script ends here, so the job exits 0 and shows COMPLETED when the step "
                   "failed")
        elif _rest_is_quiet(job, ctl, end):
            why = ("`set -e` does not stop the script when the step fails: it runs on to its "
                   "end and the job exits 0 (COMPLETED)")
        else:
            why = ("`set -e` does not stop the script when the step fails: the next commands "
                   "run on its missing results")
        yield finding(
            "SB210", head.start, head.end,
            f"this step is piped to `{last.name}` without `set -o pipefail`: the pipeline "
            f"returns `{last.name}`'s status (0), not the step's; {why}; add `set -o pipefail` "
            "before it", related=[Related(last.start, last.end, "the pipeline's status is this "
                                          "command's")],
            fixes=[_pipefail_fix(job, p.start)], severity=severity)


def _own_commands(job: Job) -> list[Command]:
    """For :func:`_only_exit_follows`, once per job (it is asked for each pipeline): the batch
    script's commands that are not in a command substitution nor run a generated body, by
    start."""
    return sorted((c for c in job.script.commands if not c.in_substitution and c.runs is None),
                  key=lambda c: c.start)


def _pipeline_work(job: Job, start: int, end: int) -> Command | None:
    """The command that does the work in the stages ``[start, end)`` of a pipeline: its first
    srun step or launcher, else a first command that is a program of its own (not a text
    filter such as ``grep … | sort``, whose failure is not a step's)."""
    steps = _steps_in(job, start, end)
    if steps:
        cmd = steps[0].command
        # a step in a function a stage calls (`run python x.py | tee log`): the call is the stage
        return cmd if start <= cmd.start < end else next(
            (c for c in job.script.commands if c.calls is not None and
             c.calls == cmd.function and start <= c.start < end), cmd)
    sites = [s.command for s in job.launches if start <= s.command.start < end]
    if sites:
        return sites[0]
    first = next((c for c in job.script.walk() if start <= c.start < end and c.words and
                  not c.in_substitution), None)
    if first is None or first.name is None:
        return None
    name = first.name.rsplit("/", 1)[-1]
    return None if name in QUICK or name in DATA_TOOLS else first


def _pipefail_fix(job: Job, at: int) -> Fix:
    start = job.source.line_start_at(at)
    indent = re.match(r"[ \t]*", job.source.text[start:]).group(0)  # type: ignore[union-attr]
    return Fix("set pipefail before the pipeline",
               (Edit(start, start, f"{indent}set -o pipefail\n"),), safe=False)


# ---- SB211 ------------------------------------------------------------------------------------

@rule("SB211", "crashed-step-leaves-others", Severity.INFO,
      "several background steps waited for together: when one crashes the others run on")
def crashed_step_leaves_others(job: Job) -> Iterator[Diagnostic]:
    """Steps collected by one bare ``wait`` end independently: when one of a job's components
    crashes, the others (blocked on it in a collective) run until an NCCL or rendezvous
    timeout or the time limit. ``--kill-on-bad-exit`` acts only inside a step. Information:
    whether the steps depend on each other is not in the script."""
    ctl = job_control(job)
    for w in ctl.waits:
        if w.kind != "all":
            continue
        collected = [b for b in ctl.backgrounds if w in b.waits and
                     _steps_in(job, b.start, b.end)]
        several = len(collected) >= 2 or any(b.in_loop for b in collected)
        if not several or any(o.kind == "any" for b in collected for o in b.waits):
            continue
        yield finding(
            "SB211", w.start, w.end,
            "this `wait` collects several background steps together: if they are "
            "parts of one computation and one crashes, the others block until a timeout or the "
            "time limit (Slurm ends only the failed step); `wait -n` then `scancel "
            "\"$SLURM_JOB_ID\"` (or `kill` the others) ends the job at the first failure",
            related=[Related(b.start, b.end, "a step this wait collects") for b in collected[:3]])


# ---- SB212 / SB213 -----------------------------------------------------------------------------

def _signal(job: Job) -> tuple[OptionUse, str, str] | None:
    """The job's ``--signal`` as (directive use, who: ``""``/``B``/``R``…, signal name)."""
    use = job.directives.get("signal")
    if use is None or not use.value:
        return None
    m = SIGNAL.match(use.value.strip("'\""))
    if not m:
        return None
    return use, (m.group("who") or "").upper(), signal_name(m.group("sig"))


@rule("SB212", "signal-misses-batch-trap", Severity.ERROR,
      "`--signal` without `B:` while the trap for it is in the batch shell: it never runs",
      fix="unsafe")
def signal_misses_batch_trap(job: Job) -> Iterator[Diagnostic]:
    """Without ``B:`` Slurm sends the warning signal to the steps only, never to the batch
    shell (sbatch(1) --signal), so a ``trap`` for it in the batch script never runs."""
    sig = _signal(job)
    if sig is None:
        return
    use, who, name = sig
    if "B" in who:
        return
    traps = [t for t in job_control(job).traps if name in t.signals]
    if not traps:
        return
    trap = traps[0]
    value_start = use.value_start if use.value_start is not None else use.start
    value = (use.value or "").strip("'\"")
    yield finding(
        "SB212", use.start, use.end,
        f"--signal without `B:` sends SIG{name} to the job's steps only, not to the batch "
        f"shell, so the batch script's `trap … {name}` never runs (no checkpoint, no requeue "
        f"before the time limit); write `--signal=B:{value}`",
        related=[Related(trap.start, trap.end, f"this trap waits for SIG{name}")],
        fixes=[Fix("signal the batch shell (B:)",
                   (Edit(value_start, value_start, "B:"),), safe=False)] if not who else [])


@rule("SB213", "trap-deferred-by-step", Severity.WARNING,
      "a trap in the batch shell that a foreground step holds back until the step ends",
      fix="unsafe")
def trap_deferred_by_step(job: Job) -> Iterator[Diagnostic]:
    """bash runs a trap only when the foreground command it waits for ends (bash(1) SIGNALS);
    during ``wait`` it runs at once. With ``--signal=B:SIG@T`` and the work in a foreground
    ``srun``, the trap runs after the step, which the time limit kills first."""
    sig = _signal(job)
    if sig is None:
        return
    use, who, name = sig
    if "B" not in who:
        return
    ctl = job_control(job)
    traps = [t for t in ctl.traps if name in t.signals]
    if not traps:
        return
    trap = traps[0]
    candidates = [s for s in job.steps if s.command.script is job.script and
                  s.command.start > trap.end and not ctl.at(s.command).background and
                  not ctl.at(s.command).in_subshell and
                  ctl.tasks(s.command).in_batch_shell()]
    if not candidates:
        return
    step = candidates[-1]
    cmd = step.command
    yield finding(
        "SB213", step.srun.start, step.srun.end,
        f"the batch shell waits for this foreground step, so SIG{name} from --signal "
        f"interrupts nothing: bash runs the trap only when the step has ended (at the time "
        f"limit, Slurm kills the step first); start it in the background and wait for it "
        f"(`srun … &` then `wait`)",
        related=[Related(trap.start, trap.end, f"the trap for SIG{name}"),
                 Related(use.start, use.end, "the signal goes to the batch shell")],
        fixes=[f for f in [_background_fix(job, ctl, cmd)] if f])


def _background_fix(job: Job, ctl: Control, cmd: Command) -> Fix | None:
    """``srun … &`` and ``wait $!`` on the next line, for a one-line top-level command that is
    not part of a pipeline or list."""
    cc = ctl.at(cmd)
    if cc.pipeline is not None or cc.statement is None or cc.statement != (cmd.start, cmd.end):
        return None
    text = job.source.text
    if "\n" in text[cmd.start:cmd.end]:
        return None
    line_end = text.find("\n", cmd.end)
    line_end = len(text) if line_end < 0 else line_end
    if text[cmd.end:line_end].strip():
        return None
    indent = text[job.source.line_start_at(cmd.start):cmd.start]
    return Fix("run the step in the background and wait for it",
               (Edit(cmd.end, cmd.end, f' &\n{indent}wait "$!"'),), safe=False)


# ---- SB214 ------------------------------------------------------------------------------------

@rule("SB214", "requeue-without-resume", Severity.INFO,
      "`--requeue` (or `scontrol requeue`) while nothing in the script resumes the work")
def requeue_without_resume(job: Job) -> Iterator[Diagnostic]:
    """A requeued job runs the batch script again from the top (sbatch(1) --requeue): unless
    the program finds its own checkpoint, the work restarts from scratch. Information: the
    program may resume by itself."""
    use = job.directives.get("requeue")
    traps = [t for t in job_control(job).traps if "requeue" in t.action]
    requeue_cmds = [c for c in job.script.walk() if c.name == "scontrol" and
                    any(w.value == "requeue" for w in c.words[1:2])]
    if use is None and not traps and not requeue_cmds:
        return
    words = [w for c in job.script.walk() for w in c.all_words()]
    words += [a.value for a in job.script.assignments if a.value is not None]
    if any(RESUME.search(w.text.replace("requeue", "")) for w in words):
        return
    start, end = ((use.start, use.end) if use is not None else
                  (traps[0].start, traps[0].end) if traps else
                  (requeue_cmds[0].start, requeue_cmds[0].end))
    yield finding(
        "SB214", start, end,
        "a requeued job runs this script again from its first line, and nothing here resumes "
        "(no checkpoint, resume or restart argument): unless the program finds its own "
        "checkpoint, the requeued run starts the work from scratch")


# ---- SB222 / SB223: the status of the last step, lost before the script reads or returns it ----

#: commands a script runs after its step only to report or tidy: nobody means their status
#: when it reads ``$?`` or ends the job
NOT_MEANT = REPORT | {"cd", "pwd", "export", "unset", "set"}


def _statements(job: Job) -> list[tuple[tuple[int, int], list[Command]]]:
    """The batch script's top-level statements in order, each with its own commands (not those
    of command strings it runs, nor of command substitutions), outside functions: [((start,
    end) offsets of the statement, its commands in script order)], computed once per job
    (SB222 and SB223 read it; callers do not change it)."""
    return job.derived(_statements_of)


def _statements_of(job: Job) -> list[tuple[tuple[int, int], list[Command]]]:
    ctl = job_control(job)
    found: dict[tuple[int, int], list[Command]] = {}
    for cmd in job.script.commands:
        st = ctl.at(cmd).statement
        if st is None or cmd.function is not None or cmd.in_substitution or cmd.runs:
            continue  # (`exec bash FILE`: the generated body's statements are the script's)
        cmds = found.get(st)
        if cmds is None:  # (no new empty list per command, as setdefault would make)
            found[st] = [cmd]
        else:
            cmds.append(cmd)
    return sorted(found.items())


def _status_reads(cmd: Command) -> list:
    """The ``$?``/``${?}`` expansions the command's shell expands (not quoted away)."""
    return [e for w in cmd.all_words() for e in w.expansions
            if e.name == "?" and e.quoting in ("unquoted", "double") and not e.nested]


def _not_meant(cmds: list[Command], reads: bool = False) -> bool:
    """Whether a statement is only commands whose status nobody means (``echo``, ``date``);
    with ``reads``, also when they print ``$?`` (``echo "exit code: $?"``)."""
    return bool(cmds) and all(c.words and (c.name or "").rsplit("/", 1)[-1] in NOT_MEANT and
                              c.name != "exit" and (reads or not _status_reads(c))
                              for c in cmds)


def _saved_status(cmds: list[Command]) -> str | None:
    """``NAME`` when the statement is exactly ``NAME=$?`` (the status saved for later)."""
    if len(cmds) != 1 or cmds[0].words or len(cmds[0].assignments) != 1:
        return None
    a = cmds[0].assignments[0]
    return a.name if a.value is not None and a.value.text in ("$?", '"$?"', "${?}") else None


def _step_statement(job: Job, ctl: Control, span: tuple[int, int],
                    cmds: list[Command]) -> tuple[Command, Command] | None:
    """(the step, the batch-script command whose status is the step's) when the statement is
    exactly one foreground srun step or launcher (torchrun, deepspeed, mpirun…; a plain
    ``python x.py`` in the batch shell is not one: its status may be a helper's), with no
    pipeline, list, condition or background, or a call of a function whose last command is
    such a step (bash(1) FUNCTIONS: a function's status is its last command's)."""
    if len(cmds) != 1:
        return None
    cmd = cmds[0]
    cc = ctl.at(cmd)
    if cc.background or cc.pipeline is not None or cc.in_condition or cc.after or \
            cc.in_subshell or (cmd.start, cmd.end) != span:
        return None
    if cmd.name in ctl.functions:
        body = [c for c in job.script.commands if c.function == cmd.name and
                not c.in_substitution]
        last = max(body, key=lambda c: (c.end, -c.start), default=None)
        step = last if last is not None and _is_step(job, ctl, last) else None
        return (step, cmd) if step is not None else None
    return (cmd, cmd) if _is_step(job, ctl, cmd) else None


def _is_step(job: Job, ctl: Control, cmd: Command) -> bool:
    """Whether ``cmd`` is a foreground srun step or a launcher other than plain python, alone
    in its list (not piped, not ``&&``/``||``, not a condition)."""
    cc = ctl.at(cmd)
    if cc.background or cc.pipeline is not None or cc.in_condition or cc.after:
        return False
    return bool(_steps_in(job, cmd.start, cmd.end + 1)) or any(
        s.command is cmd and s.launch.kind != "python" for s in job.launches)


def _body_of(job: Job, at: int):
    """The here-document body the script runs (``exec bash FILE``) that holds offset ``at``,
    or None."""
    return next((c.runs for c in job.script.commands
                 if c.runs is not None and c.runs.start <= at < c.runs.end), None)


def _status_name(job: Job) -> str:
    """A variable name for the saved status that the script does not use yet."""
    used = {a.name for a in job.script.assignments}
    return next(n for n in ("rc", "step_rc", "step_status") if n not in used)


def _save_status(job: Job, step: Command, name: str) -> Edit | None:
    """``NAME=$?`` on the line after the step's last line (None when that line holds more)."""
    text = job.source.text
    line_end = text.find("\n", step.end)
    line_end = len(text) if line_end < 0 else line_end
    if text[step.end:line_end].strip():
        return None
    indent = text[job.source.line_start_at(step.start):step.start]
    return Edit(line_end, line_end, f"\n{indent}{name}=$?")


@rule("SB222", "status-read-too-late", Severity.WARNING,
      "`$?` read after an `echo` (or another report) that follows the step: it is that "
      "command's status (0), not the step's", fix="unsafe")
def status_read_too_late(job: Job) -> Iterator[Diagnostic]:
    """bash(1) Special Parameters: ``$?`` "expands to the exit status of the most recently
    executed foreground pipeline". A statement that starts by reading ``$?`` (``exit $?``,
    ``rc=$?``, ``if [ $? -ne 0 ]``) after a step, with only report commands (``echo``,
    ``printf``, ``date``, ``cd``, ``export``…) between them, reads the last report's status:
    0, so the failure check never fires and ``exit $?`` ends the job COMPLETED."""
    readers = {id(c) for c in variable_reads(job).commands("?")}
    if not readers:
        return  # no `$?` anywhere (a statement must start by reading it)
    ctl = job_control(job)
    statements = _statements(job)
    name = None
    for k, (_span, cmds) in enumerate(statements):
        first = cmds[0] if len(cmds) == 1 else min(cmds, key=lambda c: c.start)  # (most: one)
        if id(first) not in readers:
            continue
        reads = _status_reads(first)
        if not reads:
            continue
        between = []
        j = k - 1
        while j >= 0 and _not_meant(statements[j][1]):
            between.append(statements[j])
            j -= 1
        if not between or j < 0:
            continue
        found = _step_statement(job, ctl, *statements[j])
        if found is None:
            continue
        step, status_at = found
        last_span, last_cmds = between[0]
        shown = (last_cmds[-1].name or "")
        name = name or _status_name(job)
        body = _body_of(job, status_at.start)
        # an unquoted body's `$rc` would be expanded by the shell that writes it
        save = None if body is not None and not body.quoted else \
            _save_status(job, status_at, name)
        fixes = [Fix(f"save the step's status in ${name} and read that",
                     (save, *(Edit(e.start, e.end, "$" + name) for e in reads)),
                     safe=False)] if save is not None else []
        yield finding(
            "SB222", reads[0].start, reads[0].end,
            f"`$?` here is the status of the `{shown}` just before it (0), not of the step "
            "above: bash sets $? after every command, so a failed step goes unnoticed"
            f"{' and the job exits 0 (COMPLETED)' if first.name == 'exit' else ''}; save it "
            f"right after the step (`{name}=$?`) and read `${name}`",
            related=[Related(last_span[0], last_span[1], "$? is this command's status"),
                     Related(step.start, step.end, "the step whose status was meant")],
            fixes=fixes)


@rule("SB223", "footer-hides-step-status", Severity.WARNING,
      "report commands after the last step end the script: the job exits with `echo`'s 0, "
      "not the step's status", fix="unsafe")
def footer_hides_step_status(job: Job) -> Iterator[Diagnostic]:
    """bash(1): a script's exit status is that of the last command it executed (``exit``
    without a number too), and the job's exit code is the batch script's (Slurm
    job_exit_code.shtml). With ``echo``/``date`` footers after the last step and no ``set -e``,
    a failed step leaves the job COMPLETED with exit code 0: ``--dependency=afterok`` jobs
    run on its missing results. A warning for an srun step or a launcher (as SB210); the
    script's own ``exit "$rc"`` and SB222's ``exit $?`` right after reports are left alone."""
    ctl = job_control(job)
    statements = _statements(job)
    k = len(statements) - 1
    final_exit = None
    if k >= 0 and [c.name for c in statements[k][1]] == ["exit"]:
        words = statements[k][1][0].words
        arg = words[1].text if len(words) == 2 else ""
        if len(words) > 2 or arg not in ("", "0", "$?", '"$?"'):
            return  # exit with a status of its own (`exit "$rc"`, `exit 3`)
        final_exit = statements[k]
        k -= 1
    footer, saved = [], None
    while k >= 0 and (_not_meant(statements[k][1], reads=True) or
                      _saved_status(statements[k][1])):
        saved = _saved_status(statements[k][1]) or saved
        footer.append(statements[k])
        k -= 1
    reports = [f for f in footer if not _saved_status(f[1])]
    if not reports or k < 0:
        return
    found = _step_statement(job, ctl, *statements[k])
    if found is None or ctl.option_on(ctl.errexit, found[1].start):
        return
    step, status_at = found
    if final_exit is not None and _status_reads(final_exit[1][0]) and saved is None and \
            all(not _status_reads(c) for _, cmds in reports for c in cmds):
        return  # `srun …; echo …; exit $?`: SB222 reports the `$?`
    name = saved or _status_name(job)
    first_after = footer[-1]
    save = None if saved is not None and _saved_status(first_after[1]) == saved else \
        _save_status(job, status_at, name)
    fixes = []
    # a footer that prints `$?` gets SB222's fix first (it saves the status); this one's
    # follows on the next pass, reusing the saved name
    printed = any(_status_reads(c) for _, cmds in reports for c in cmds)
    # in a generated body the exit belongs at the body's end, not after `exec bash FILE`
    in_body = _body_of(job, status_at.start) is not None
    if (save is not None or saved is not None) and not printed and not in_body:
        text = job.source.text
        if final_exit is not None:
            end_edit = Edit(final_exit[0][0], final_exit[0][1], f'exit "${name}"')
        else:
            end_edit = Edit(len(text), len(text),
                            ("" if text.endswith("\n") else "\n") + f'exit "${name}"\n')
        fixes.append(Fix(f"save the step's status in ${name} and exit with it",
                         tuple(e for e in (save, end_edit) if e is not None), safe=False))
    last_span = reports[0][0]
    # a call that handed its words to the function's step (`run python x.py`): point at it
    where = status_at if status_at.calls is not None else step
    yield finding(
        "SB223", where.start, where.end,
        f"after this step the script ends with {len(reports)} report command(s): the job's "
        "exit code is the last one's (0), so a failed step leaves the job COMPLETED and "
        "`afterok` dependants run; save the status right after the step "
        f"(`{name}=$?`) and end with `exit \"${name}\"`",
        related=[Related(last_span[0], last_span[1], "the job exits with this command's status")],
        fixes=fixes)
