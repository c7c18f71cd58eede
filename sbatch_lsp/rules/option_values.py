"""SB105–SB107, SB113: what the values of the directives say, alone and together."""
from __future__ import annotations

import re
from collections.abc import Iterator

from .. import values
from ..diagnostics import Diagnostic
from ..job import gpu_count, parse_count
from ..options import version_key
from ..source import Source
from . import Edit, Fix, Related, Severity, finding, rule

SEVERITY = {"refused": Severity.ERROR, "misread": Severity.WARNING,
            "normalised": Severity.INFO, "note": Severity.INFO}


@rule("SB105", "invalid-value", Severity.ERROR,
      "a value sbatch refuses or misreads (`--time`, `--mem`, `--nodes`, `--signal`, …)",
      fix="safe or unsafe")
def invalid_value(job):
    """Each directive value against its grammar (values.py, transcribed from the Slurm
    source); getopt's own argument errors (``option '--time' requires an argument``, ``option
    '--requeue' doesn't allow an argument``; slurm-facts.md §2) are value faults too."""
    version = job.profile.slurm_version
    src = job.source
    for use in job.directives.options:
        if use.error and "argument" in use.error:
            fixes = []
            if "doesn't allow" in use.error and use.value_start is not None:
                fixes.append(Fix(f"remove `={use.value}`",
                                 (Edit(use.value_start - 1, use.value_end, ""),), safe=False))
            yield finding("SB105", use.start, use.end,
                          f"sbatch refuses the job: \"{use.error}\"", fixes=fixes)
            continue
        if not use.ok or use.value is None or use.name not in values.VALIDATED:
            continue  # (check_value judges only these: most uses name none of them)
        problem = values.check_value(use.name, use.value, version)
        if problem is None:
            continue  # (most values; the line is read only for a problem)
        if values.TEMPLATE.search(src.line_text(use.line)):
            continue  # a placeholder line is opaque
        start, end = use.value_start, use.value_end
        if use.value_token is not None and use.value_token.cut_by_hash:
            end = min(end, start + len(use.value))
        fixes = []
        new = problem.suggestion or (problem.normalised if problem.kind == "normalised" else None)
        if new is not None and src.text[start:end] == use.value:
            fixes.append(Fix(f"write `{new}`", (Edit(start, end, new),),
                             safe=problem.kind == "normalised"))
        where = "" if problem.refused_by == "sbatch" else " (checked at submission)"
        yield finding("SB105", start, end, problem.message + where,
                      severity=SEVERITY[problem.kind], fixes=fixes)


#: options sbatch refuses together (slurm_opt.c ``_validate_memory_options``,
#: ``_validate_ntasks_per_gpu``, ``_validate_spec_cores_options``), with sbatch's text
EXCLUSIVE = [
    (("mem", "mem-per-cpu", "mem-per-gpu"),
     "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."),
    (("ntasks-per-gpu", "ntasks-per-node"),
     "--ntasks-per-node is mutually exclusive with --ntasks-per-gpu and SLURM_NTASKS_PER_GPU"),
    (("ntasks-per-gpu", "gpus-per-task"),
     "--gpus-per-task is mutually exclusive with --ntasks-per-gpu and SLURM_NTASKS_PER_GPU"),
    (("ntasks-per-gpu", "gpus-per-socket"),
     "--gpus-per-socket is mutually exclusive with --ntasks-per-gpu and SLURM_NTASKS_PER_GPU"),
    (("core-spec", "thread-spec"),
     "-S/--core-spec and --thred-spec options are mutually exclusive"),
    (("cpus-per-task", "cpus-per-gpu"), "--cpus-per-gpu is mutually exclusive with --cpus-per-task"),
]
#: options whose repeated uses add up instead of replacing each other (slurm_opt.c:
#: ``arg_set_mail_type`` ORs every list into the job's mail types)
ACCUMULATING = {"mail-type"}
#: flags that undo each other: the last one wins (slurm-facts.md §2)
OPPOSITES = [("requeue", "no-requeue")]


@rule("SB106", "conflicting-options", Severity.ERROR,
      "mutually exclusive options (sbatch refuses) / one option twice with different values", fix="safe")
def conflicting_options(job):
    """Mutually exclusive sets sbatch refuses on the submit host (with their texts above), the
    GPU companions gres.c requires (``--mem-per-gpu`` needs a GPU request; ``--gpus-per-task``
    needs ``--ntasks`` or ``--gpus``), ``--gpus-per-node`` with ``--gres=gpu`` from 26.05, and
    duplicates: the last use wins silently (slurm-facts.md §2, §3.3, §4)."""
    d = job.directives
    # component 0's effective uses by name: DirectiveBlock.get's answers, each asked here as a
    # dict lookup instead of a method call (a few dozen per script)
    get = d.effective(0).get
    version = job.profile.slurm_version
    seen = set()
    for names, said in EXCLUSIVE:
        uses = [u for n in names if (u := get(n)) is not None]
        if len(uses) >= 2:
            uses.sort(key=lambda u: u.start)
            key = tuple(u.name for u in uses)
            if key in seen:
                continue
            seen.add(key)
            first, second = uses[0], uses[-1]
            yield finding("SB106", second.start, second.end,
                          f"`--{second.name}` and `--{first.name}` cannot be combined: sbatch "
                          f"refuses the job (\"{said}\"); keep one of them",
                          related=[Related(first.start, first.end, f"`--{first.name}` is set here")])
    gres = get("gres")
    gres_gpu = gres is not None and _gres_has_gpu(gres.value)
    if version_key(version) >= (26, 5) and gres_gpu and get("gpus-per-node"):
        g = get("gpus-per-node")
        yield finding("SB106", g.start, g.end,
                      "`--gpus-per-node` and `--gres=gpu` cannot be combined from Slurm 26.05: "
                      "sbatch refuses the job (\"--gpus-per-node and --gres=gpu are mutually "
                      "exclusive.\"); keep one GPU request",
                      related=[Related(gres.start, gres.end, "`--gres=gpu` is set here")])
    gpu = job.gpu_requested()
    mpg = get("mem-per-gpu")
    if mpg is not None and gpu is None and not job.templated:
        yield finding("SB106", mpg.start, mpg.end,
                      "`--mem-per-gpu` without any GPU request: sbatch refuses the job "
                      "(\"Requested mem_per_tres=… but did not request any GPU.\"); request GPUs "
                      "(--gpus-per-node, --gres=gpu:N) or use --mem")
    yield from _nodelist_beyond_nodes(d)
    dist = get("distribution")
    if dist is not None and (dist.value or "").lower().startswith(("arbitrary", "hostfile")) \
            and not get("nodelist") and not get("nodefile"):
        yield finding("SB106", dist.start, dist.end,
                      "`--distribution=arbitrary` needs the node list: sbatch refuses the job "
                      "(\"With Arbitrary distribution you need to specify a nodelist or hostfile "
                      "with the -w option\")")
    gps = get("gpus-per-socket")
    if gps is not None and not get("sockets-per-node") and not get("extra-node-info"):
        yield finding("SB106", gps.start, gps.end,
                      "`--gpus-per-socket` needs `--sockets-per-node`: sbatch refuses the job "
                      "(\"--gpus-per-socket option requires --sockets-per-node specification\")")
    for name in ("ntasks-per-gpu", "ntasks-per-tres"):
        use = get(name)
        if use is not None and gpu is None and not get("nodes") and not get("ntasks"):
            yield finding("SB106", use.start, use.end,
                          f"`--{name}` needs a GPU request or a node or task count: sbatch "
                          "refuses the job (\"--ntasks-per-tres needs either a GRES GPU "
                          "specification or a node/ntask specification\")")
    yield from _begin_after_deadline(d)
    yield from _gpus_per_task_without_count(d)
    gpt = get("gpus-per-task")
    gpus, ntasks = get("gpus"), get("ntasks")
    if gpt is not None and gpus is not None and ntasks is not None:
        total, per, n = (gpu_count(gpus.value), gpu_count(gpt.value),
                         parse_count(ntasks.value))
        if total and per and n and total // per != n:
            yield finding("SB106", gpt.start, gpt.end,
                          f"`--gpus={gpus.value}` with `--gpus-per-task={gpt.value}` makes "
                          f"{total // per} tasks, but `--ntasks={ntasks.value}`: sbatch refuses "
                          "the job (\"Failed to validate job spec. Based on --gpus and "
                          "--gpus-per-task number of requested tasks differ from -n/--ntasks.\")",
                          related=[Related(gpus.start, gpus.end, "the GPU total"),
                                   Related(ntasks.start, ntasks.end, "the task count")])
    yield from _duplicates(job)


def _gpus_per_task_without_count(d) -> Iterator[Diagnostic]:
    """``--gpus-per-task`` in a component whose task count sbatch cannot derive: without
    ``--ntasks`` or ``--gpus`` the job is refused ("Failed to validate job spec. --gpus-per-task
    used without either --gpus or -n/--ntasks is not allowed.") unless a fixed ``--nodes``
    without ``--cpus-per-task`` (one task per node) or ``--ntasks-per-node`` with a fixed or no
    ``--nodes`` gives the count; a node range (``-N 1-2``) never does (sbatch(1)
    ``--gpus-per-task``: "requires an explicit task count ... rather than an ambiguous range of
    nodes"). Each combination was submitted to Slurm 22.05.8 (the slurm tier's cluster). With
    no node or per-node count at all the file leaves the count to the command line: info."""
    count = 1 + max([o.component for o in d.options] or [0])
    for k in range(count):
        eff = d.effective(k)
        gpt = eff.get("gpus-per-task")
        if gpt is None or "ntasks" in eff or "gpus" in eff:
            continue
        nodes, tpn = eff.get("nodes"), eff.get("ntasks-per-node")
        ranged = nodes is not None and re.search(r"\d\s*[-,:]", nodes.value or "") is not None
        if nodes is not None and not ranged and ("cpus-per-task" not in eff or tpn is not None):
            continue
        if nodes is None and tpn is not None:
            continue
        why = ("its --nodes is a range" if ranged else
               "--cpus-per-task keeps sbatch from taking one task per node"
               if nodes is not None else "the script gives no node or task count")
        where = "" if k == 0 else f" (hetjob component {k})"
        # with no layout at all the count is meant to come from the command line
        # (`sbatch -n 4 job.sh`, as tutorials submit such files): that rests on what the file
        # does not say, so only an info
        silent = nodes is None and tpn is None
        yield finding("SB106", gpt.start, gpt.end,
                      f"`--gpus-per-task` needs a task count that sbatch can derive, and {why}"
                      f"{where}: sbatch refuses the job (\"Failed to validate job spec. "
                      "--gpus-per-task used without either --gpus or -n/--ntasks is not "
                      "allowed.\")" + (" unless its command line gives -n (sbatch -n 4 "
                                        "job.sh)" if silent else "")
                      + "; add --ntasks (or --ntasks-per-node with a fixed --nodes)",
                      severity=Severity.INFO if silent else None)


def _relative_seconds(value: str | None) -> int | None:
    """Seconds from now of a ``now+N[unit]`` time (parse_time.c), else None."""
    m = re.fullmatch(r"(?i)now(?:\+(\d+)(seconds?|minutes?|hours?|days?|weeks?)?)?", value or "")
    if m is None:
        return None
    unit = (m.group(2) or "seconds").lower().rstrip("s")
    return int(m.group(1) or 0) * {"second": 1, "minute": 60, "hour": 3600, "day": 86400,
                                   "week": 604800}[unit]


def _begin_after_deadline(d):
    begin, deadline = d.get("begin"), d.get("deadline")
    if begin is None or deadline is None:
        return
    a, b = _relative_seconds(begin.value), _relative_seconds(deadline.value)
    if a is not None and b is not None and a > b:
        yield finding("SB106", begin.start, begin.end,
                      "`--begin` is after `--deadline`: sbatch refuses the job (\"Incompatible "
                      "begin and deadline time specification\")",
                      related=[Related(deadline.start, deadline.end, "the deadline")])


def _nodelist_beyond_nodes(d) -> Iterator[Diagnostic]:
    """``--nodelist`` naming more hosts than ``--nodes`` allows at most: sbatch sets the
    minimum node count to the host count and refuses the job (src/sbatch/opt.c ``_opt_verify``,
    22.05: ``invalid number of nodes (-N 3-2)``). Only a literal host list is judged."""
    nodelist, nodes = d.get("nodelist"), d.get("nodes")
    if nodelist is None or nodes is None or not nodelist.value or not nodes.value:
        return
    if values.check_value("nodes", nodes.value, "22.05") is not None:
        return  # SB105 reports the count itself
    hosts = values.host_count(nodelist.value)
    if hosts is None:
        return  # a file of hosts (`-w ./hosts`), or not a host list
    top = nodes.value.rsplit("-", 1)[-1]
    if not top.isdigit() or int(top) == 0 or hosts <= int(top):
        return
    yield finding("SB106", nodes.start, nodes.end,
                  f"`--nodelist={nodelist.value}` names {hosts} hosts but `--nodes="
                  f"{nodes.value}` allows at most {top}: sbatch refuses the job (\"invalid "
                  f"number of nodes (-N {hosts}-{top})\"); raise --nodes or shorten the list",
                  related=[Related(nodelist.start, nodelist.end, "the host list is here")])


def _gres_has_gpu(value: str | None) -> bool:
    return any(item.split(":")[0] in ("gpu", "gres/gpu") for item in (value or "").split(","))


def _duplicates(job):
    d = job.directives
    src: Source = job.source
    by_name: dict[str, list] = {}
    for use in d.options:
        if use.ok and use.component == 0:
            by_name.setdefault(use.name, []).append(use)
    for a, b in OPPOSITES:
        both = by_name.get(a, []) + by_name.get(b, [])
        if by_name.get(a) and by_name.get(b):
            both.sort(key=lambda u: u.start)
            last = both[-1]
            for u in both[:-1]:
                if u.name != last.name:
                    yield finding("SB106", u.start, u.end,
                                  f"`--{u.name}` is overridden by the later `--{last.name}` "
                                  "(the last one wins); keep one of them", Severity.WARNING,
                                  related=[Related(last.start, last.end, "this one wins")])
    for name, uses in by_name.items():
        if len(uses) < 2 or name in ACCUMULATING:
            continue
        last = uses[-1]
        for u in uses[:-1]:
            if (u.value or "") == (last.value or ""):
                continue
            fixes = []
            dl = next(x for x in d.lines if x.line == u.line)
            alone = len(dl.tokens) == (1 if u.value_token in (None, u.token) else 2)
            if alone and not u.token.cut_by_hash:
                fixes.append(Fix(f"remove the overridden `{u.typed}` line",
                                 (Edit(*src.line_with_break(u.line), ""),)))
            yield finding(
                "SB106", u.start, u.end,
                f"`--{name}` is given again on line {last.line + 1} with another value "
                f"(`{last.value}`); sbatch uses the last one, so `{u.value}` here is silently "
                "ignored", Severity.WARNING,
                related=[Related(last.start, last.end, "this value wins")], fixes=fixes)


@rule("SB107", "shell-syntax-in-directive", Severity.ERROR,
      "`$VAR`, `${VAR}`, `$(...)`, `~` in a directive: taken literally", rests_on=("directives",))
def shell_syntax_in_directive(job):
    """sbatch does no shell processing on directives: ``$VAR``, ``$(cmd)``, backquotes and
    ``~`` stay literal (sbatch.1 DESCRIPTION; slurm-facts.md §1.3 rule 6: ``--chdir=$SCRATCH/run``
    becomes ``<cwd>/$SCRATCH/run``)."""
    for use in job.directives.options:
        if use.value is None:
            continue
        m = values.SHELL_SYNTAX.search(use.value)
        if m is None or use.value_start is None:
            continue
        tok = use.value_token
        text = m.group(0)
        at = job.source.text.find(text, use.value_start, use.value_end) \
            if tok is not None else -1
        start, end = (at, at + len(text)) if at >= 0 else (use.value_start, use.value_end)
        name = f"--{use.name}" if use.name else use.typed
        what = "`~`" if text.startswith("~") else f"`{text}`"
        yield finding("SB107", start, end,
                      f"{what} is not expanded in an #SBATCH line: sbatch receives the literal "
                      f"text `{use.value}` for `{name}`; write the value out, or pass the option "
                      f"on the command line (`sbatch {name}=\"…\" job.sh`), where the shell "
                      "expands it")


#: filename pattern letters by the release that added them (sbatch.1 "filename pattern")
PATTERN_LETTERS = {"%": "<=14.03", "A": "<=14.03", "a": "<=14.03", "J": "<=14.03",
                   "j": "<=14.03", "N": "<=14.03", "n": "<=14.03", "s": "<=14.03",
                   "t": "<=14.03", "u": "<=14.03", "x": "<=14.03", "b": "24.11", "r": "25.11",
                   "S": "25.11"}
PATTERN = re.compile(r"%(\d*)(.)")


@rule("SB113", "output-pattern", Severity.WARNING,
      "`--output`/`--error`/`--input` patterns: unknown `%` letters, a backslash that disables "
      "them, no job id (logs overwritten), `%a` without `--array`, array tasks sharing one log")
def output_pattern(job):
    """Filename patterns (src/common/print_fields.c ``expand_stdio_fields``; sbatch.1): an
    unknown ``%X`` stays in the name literally, a backslash anywhere turns every pattern off,
    and a name without the job id is truncated by the next run (``--open-mode`` defaults to
    truncate): an info, since a next run is not in the script (held-out case RD08,
    LSSTDESC/Twinkles#116). ``%a`` outside an array is 4294967294 (NO_VAL)."""
    d = job.directives
    version = version_key(job.profile.slurm_version)
    array = d.get("array") is not None
    append = (d.value("open-mode") or "").lower().startswith("a")
    for name in ("output", "error", "input"):
        use = d.get(name)
        if use is None or use.value is None or use.value_start is None:
            continue
        value = use.value
        if values.TEMPLATE.search(value) or values.SHELL_SYNTAX.search(value):
            continue
        span = (use.value_start, use.value_end)
        if "\\" in value:
            if "%" in value:
                yield finding("SB113", *span,
                              f"a backslash in `--{name}` turns off every `%` pattern: the file "
                              f"is literally named `{value.replace(chr(92), '')}`")
            continue
        letters = [(m.group(2), m.group(0)) for m in PATTERN.finditer(value)]
        for letter, text in letters:
            since = PATTERN_LETTERS.get(letter)
            if since is None or version_key(since) > version:
                extra = f" before Slurm {since}" if since else ""
                yield finding("SB113", *span,
                              f"`{text}` is not a filename pattern{extra}: sbatch leaves it in "
                              f"the `--{name}` file name literally (patterns: %j job id, %A "
                              "array job id, %a array index, %x job name, %N node, %u user)")
        found = {letter for letter, _ in letters}
        if "a" in found and not array:
            yield finding("SB113", *span,
                          f"`%a` in `--{name}` without `--array`: unless the job is submitted "
                          "as an array (`sbatch --array=…` on the command line, which the "
                          "script does not show), `%a` becomes 4294967294",
                          Severity.INFO)
        if name == "input" or value.lower() in ("/dev/null", "none"):
            continue
        if array and not found & {"a", "j", "J"}:
            yield from _array_shared_log(d, use, name, value, span, append)
            continue
        if found & {"j", "J", "A"}:
            continue
        if not append:
            yield finding("SB113", *span,
                          f"`--{name}={value}` has no job id (`%j`): if this script is "
                          "submitted again, the new run truncates this run's log (info only: "
                          "whether it is run again is not in the script); add `%j` (e.g. "
                          "`slurm-%x-%j.out`) or set `--open-mode=append`",
                          Severity.INFO)


def _array_shared_log(d, use, name: str, value: str, span: tuple[int, int],
                      append: bool) -> Iterator[Diagnostic]:
    """An array's ``--output``/``--error`` named without the task id: ``%A`` is the same for
    every task of the array (sbatch(1) "filename pattern": ``%A`` job array's master job
    allocation number, ``%a`` job array ID (index) number), so the tasks truncate one file
    (``--open-mode`` defaults to truncate) or, with ``append``, interleave their lines in it."""
    arr = d.get("array")
    what = (f"every task of the array (--array={arr.value}) writes `--{name}={value}`: "
            if arr is not None else f"every array task writes `--{name}={value}`: ")
    related = [Related(arr.start, arr.end, "a job array")] if arr is not None else []
    if append:
        yield finding("SB113", *span,
                      what + "their lines interleave in one file; add the task id "
                      "(`%A_%a`) to keep each task's log apart",
                      severity=Severity.INFO, related=related)
        return
    yield finding("SB113", *span,
                  what + "each task truncates the file when it starts and writes over the others' "
                  "lines, so most tasks' logs are lost; add the task id (e.g. "
                  "`%x-%A_%a.out`)",
                  related=related)
