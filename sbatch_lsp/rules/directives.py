"""SB1xx: the file and its directives."""
from __future__ import annotations

import shlex

from .. import options as opts
from . import Edit, Fix, Related, Severity, finding, rule

SHEBANG = "#!/bin/bash\n"


@rule("SB100", "not-a-batch-script", Severity.ERROR,
      "sbatch refuses the file: no `#!` at byte 0 (BOM, leading blank/space), CRLF, NUL, empty")
def not_a_batch_script(job):
    """Whole-file checks sbatch makes before reading options (slurm-facts.md §1.2,
    src/sbatch/sbatch.c ``_get_script_buffer``)."""
    text = job.source.text
    if not text:
        yield finding("SB100", 0, 0, "sbatch refuses an empty file: \"Batch script is empty!\"")
        return
    if not text.strip():
        yield finding("SB100", 0, len(text), "sbatch refuses the file: \"Batch script contains "
                      "only whitespace!\"")
        return
    if "\0" in text:
        i = text.index("\0")
        yield finding("SB100", i, i + 1, "the file holds a NUL byte: sbatch refuses it (\"The "
                      "Slurm controller does not allow scripts that contain a NULL character\")")
    if not text.startswith("#!"):
        bang = text.find("#!")
        prefix = text[:bang] if bang >= 0 else ""
        if bang > 0 and not prefix.strip("\ufeff \t\r\n"):
            what = "a UTF-8 byte-order mark" if prefix.startswith("\ufeff") and \
                prefix.strip("\ufeff") == "" else "blank space or lines"
            yield finding(
                "SB100", 0, bang + 2,
                f"{what} before `#!`: sbatch refuses the job (\"This does not look like a batch "
                "script. The first line must start with #! followed by the path to an "
                "interpreter.\")",
                fixes=[Fix("remove what comes before `#!`", (Edit(0, bang, ""),))])
        else:
            end = job.source.line_end(0)
            yield finding(
                "SB100", 0, end,
                "no `#!` interpreter line at the start of the file: sbatch refuses the job "
                "(\"This does not look like a batch script.\")",
                fixes=[Fix("insert `#!/bin/bash` as the first line", (Edit(0, 0, SHEBANG),))])
    crlf = [i for i in range(len(text) - 1) if text[i] == "\r" and text[i + 1] == "\n"]
    if crlf:
        edits = tuple(Edit(i, i + 1, "") for i in crlf)
        yield finding(
            "SB100", crlf[0], crlf[0] + 1,
            f"DOS line breaks (CRLF) on {len(crlf)} line(s): sbatch refuses the job (\"Batch "
            "script contains DOS line breaks (\\r\\n) instead of expected UNIX line breaks\"), "
            "and bash would read `\\r` into every command",
            fixes=[Fix("convert CRLF line breaks to LF", edits)])


@rule("SB101", "directive-after-command", Severity.ERROR,
      "`#SBATCH` below the first command: silently ignored")
def directive_after_command(job):
    """sbatch stops reading directives at the first line that is neither blank nor a comment
    (slurm-facts.md §1.3 rule 2); every later ``#SBATCH`` is a plain comment."""
    d = job.directives
    if not d.late_lines or d.scan_end_line is None:
        return
    src = job.source
    stop = d.scan_end_line
    if stop == 0 and src.line_text(0).lstrip("\ufeff \t").startswith("#!"):
        return  # a shebang behind a BOM: sbatch refuses the whole file first (SB100)
    stop_start = src.line_starts[stop]
    stop_related = Related(stop_start, src.line_end(stop),
                           "sbatch stops reading #SBATCH lines at this command")
    top = {c.start_line for c in job.script.chunks}
    first_chunk_end = min((c.end_line for c in job.script.chunks if c.start_line == stop),
                          default=stop)
    for dl in d.late_lines:
        line = dl.line
        start, end = src.line_starts[line], src.line_end(line)
        fixes = []
        inside = any(c.start_line < line <= c.end_line for c in job.script.chunks)
        # without `#!` at byte 0 the SB100 fix comes first; moving lines above it would not help
        if job.source.text.startswith("#!") and not inside and line not in top and line > first_chunk_end:
            fixes.append(Fix("move the directive above the first command", (
                Edit(stop_start, stop_start, src.text[start:end] + "\n"),
                Edit(*src.line_with_break(line), "")), safe=False))
        yield finding(
            "SB101", start, end,
            f"this #SBATCH line comes after the first command (line {stop + 1}), so sbatch "
            "ignores it silently and the job runs without it; move every #SBATCH line above "
            "the first command",
            related=[stop_related], fixes=fixes)


@rule("SB111", "pyxis-option-in-directive", Severity.WARNING,
      "a pyxis flag in `#SBATCH`: refused without pyxis, and it shapes only the batch step")
def pyxis_option_in_directive(job):
    """pyxis registers its options for sbatch from v0.12.0 (unless ``sbatch_support=0``); there
    they configure the batch step only, and without an ``#SBATCH --container-image`` pyxis
    ignores them (slurm-facts.md §7.2; pyxis args.c ``pyxis_args_enabled``)."""
    table = opts.pyxis_options()
    pyxis = job.profile.pyxis
    enabled = opts.pyxis_enabled_for_sbatch(pyxis)
    container_steps = [s for s in job.steps if s.container]
    batch_image = any(_pyxis_name(u, table) in ("container-image", "container-name")
                      for u in job.directives.options)
    for use in job.directives.options:
        name = _pyxis_name(use, table)
        if name is None:
            continue
        related = [Related(s.option_words[k].start, s.option_words[k].end,
                           "this step starts its own container")
                   for s in container_steps for k in ("container-image", "container-name")
                   if k in s.option_words][:3]
        if pyxis is False or (pyxis not in (None, True) and not enabled):
            sev = Severity.ERROR
            why = ("the profile says pyxis is not loaded for sbatch here, so sbatch refuses the "
                   f"job (\"unrecognized option '--{name}'\")")
        elif container_steps:
            sev = Severity.WARNING
            why = ("as a directive it only shapes the batch step, not the containers that "
                   "`srun --container-image` starts; put it on those srun lines")
            if not batch_image:
                why += (" (without `#SBATCH --container-image` pyxis ignores it: \"pyxis: "
                        f"ignoring --{name} because neither --container-image nor "
                        "--container-name is set\")")
        elif name in ("container-image", "container-name") or batch_image:
            sev = Severity.WARNING if not enabled else Severity.INFO
            why = ("with pyxis >= 0.12 loaded for sbatch, the whole batch script runs inside "
                   "the container (and srun is usually unavailable there); where pyxis is not "
                   f"loaded on the submit host sbatch refuses it (\"unrecognized option "
                   f"'--{name}'\"); to run only the training step in a container, put the flag "
                   "on its srun line")
        else:
            sev = Severity.WARNING
            why = (f"pyxis ignores it without `#SBATCH --container-image` (\"pyxis: ignoring "
                   f"--{name} because neither --container-image nor --container-name is set\"), "
                   "and sbatch refuses it where pyxis is not loaded")
        fixes = []
        if container_steps and name not in ("container-image", "container-name"):
            fixes.append(_move_to_srun(job, use, name, container_steps))
        yield finding("SB111", use.start, use.end, f"`--{name}` is a pyxis (srun) option: {why}",
                      severity=sev, related=related, fixes=[f for f in fixes if f])


def _pyxis_name(use, table) -> str | None:
    typed = use.typed
    if not typed.startswith("--"):
        return None
    res = opts.resolve_long(typed[2:], table)
    if res.option is None:
        return None
    sb = opts.sbatch_options()
    if typed[2:] in sb:
        return None
    return res.option.long


def _move_to_srun(job, use, name, steps) -> Fix | None:
    """Delete the directive line and add ``--name[=value]`` to each container step lacking it."""
    src = job.source
    line = use.line
    dl = next((x for x in job.directives.lines if x.line == line), None)
    if dl is None or use.token.cut_by_hash:
        return None
    value = use.value
    separate = use.value_token is not None and use.value_token is not use.token
    if value is None and opts.pyxis_options()[name].arg == "required":
        # `--container-mounts /a:/b` where pyxis is not known to be loaded: getopt rejects
        # the name, so the value is the line's next token (already unquoted by the tokenizer)
        if len(dl.tokens) != 2:
            return None
        value, separate = dl.tokens[1].text, True
    if len(dl.tokens) != (2 if separate else 1):
        return None
    start, end = src.line_with_break(line)
    flag = f"--{name}" + (f"={shlex.quote(value)}" if value is not None else "")
    edits = [Edit(start, end, "")]
    for s in steps:
        if name in s.options:
            continue
        edits.append(Edit(s.srun.end, s.srun.end, " " + flag))
    return Fix(f"move `{flag}` onto the srun line(s) that start containers", tuple(edits),
               safe=False)
