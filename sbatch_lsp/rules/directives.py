"""SB1xx: the file and its directives."""
from __future__ import annotations

import difflib
import re
import shlex

from .. import options as opts
from .. import values
from ..options import version_key
from ..source import Source
from . import Edit, Fix, Related, Severity, finding, rule

SHEBANG = "#!/bin/bash\n"


@rule("SB100", "not-a-batch-script", Severity.ERROR,
      "sbatch refuses the file: no `#!` at byte 0 (BOM, leading blank/space), CRLF, NUL, empty", fix="safe")
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
    crlf = [m.start() for m in re.finditer("\r\n", text)]
    if crlf:
        edits = tuple(Edit(i, i + 1, "") for i in crlf)
        yield finding(
            "SB100", crlf[0], crlf[0] + 1,
            f"DOS line breaks (CRLF) on {len(crlf)} line(s): sbatch refuses the job (\"Batch "
            "script contains DOS line breaks (\\r\\n) instead of expected UNIX line breaks\"), "
            "and bash would read `\\r` into every command",
            fixes=[Fix("convert CRLF line breaks to LF", edits)])


@rule("SB101", "directive-after-command", Severity.ERROR,
      "`#SBATCH` below the first command: silently ignored", fix="unsafe")
def directive_after_command(job):
    """sbatch stops reading directives at the first line that is neither blank nor a comment
    (slurm-facts.md §1.3 rule 2); every later ``#SBATCH`` is a plain comment."""
    d = job.directives
    if not d.late_lines or d.scan_end_line is None:
        return
    src: Source = job.source
    stop = d.scan_end_line
    if stop == 0 and src.line_text(0).lstrip("\ufeff \t").startswith("#!"):
        return  # a shebang behind a BOM: sbatch refuses the whole file first (SB100)
    stop_start = src.line_starts[stop]
    stop_related = Related(stop_start, src.line_end(stop),
                           "sbatch stops reading #SBATCH lines at this command")
    top = {c.start_line for c in job.script.chunks}
    first_chunk_end = min((c.end_line for c in job.script.chunks if c.start_line == stop),
                          default=stop)
    filled = _placeholder_run_end(src, stop)
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
        if line < filled:
            placeholder = src.line_text(stop).strip()
            yield finding(
                "SB101", start, end,
                f"line {stop + 1} is a lone `{placeholder}`, a placeholder that a generator "
                "fills in (often with a directive): as the file stands, sbatch stops reading "
                "#SBATCH lines there and ignores this one; once it is filled, check that no "
                "command comes before this line", severity=Severity.INFO,
                related=[stop_related])  # no move: the template reads on once filled
            continue
        cmd = filled  # the first real command (``stop`` itself unless it is a placeholder)
        yield finding(
            "SB101", start, end,
            f"this #SBATCH line comes after the first command (line {cmd + 1}), so sbatch "
            "ignores it silently and the job runs without it; move every #SBATCH line above "
            "the first command",
            related=[stop_related if cmd == stop else Related(
                src.line_starts[cmd], src.line_end(cmd),
                "the first command after the placeholder lines")], fixes=fixes)


#: a line that is only a placeholder: ``${PARTITION_OPTION}``, ``$EXTRA``, ``{{ directives }}``,
#: ``@OPTIONS@`` (as a command it would run the value; templates put directives there)
PLACEHOLDER_LINE = re.compile(r"\s*(?:\$\{?[A-Za-z_]\w*\}?|\{\{[^{}\n]*\}\}|@[A-Z][A-Z0-9_]*@)\s*")


def _placeholder_run_end(src: Source, stop: int) -> int:
    """When the line sbatch stops at (``stop``, 0-based) is a lone placeholder, the first line
    after the run of placeholder, blank and comment lines that follows it (the directive block
    as a generator would leave it); else ``stop`` (no late directive is behind a placeholder)."""
    if not PLACEHOLDER_LINE.fullmatch(src.line_text(stop)):
        return stop
    n = stop + 1
    while n < src.line_count:
        text = src.line_text(n)
        if text.strip() and not text.lstrip().startswith("#") and \
                not PLACEHOLDER_LINE.fullmatch(text):
            break
        n += 1
    return n


@rule("SB111", "pyxis-option-in-directive", Severity.WARNING,
      "a pyxis flag in `#SBATCH`: refused without pyxis, and it shapes only the batch step", fix="unsafe")
def pyxis_option_in_directive(job):
    """pyxis registers its options for sbatch from v0.12.0 (unless ``sbatch_support=0``); there
    they configure the batch step only, and without an ``#SBATCH --container-image`` pyxis
    ignores them (slurm-facts.md §7.2; pyxis args.c ``pyxis_args_enabled``)."""
    table = opts.pyxis_options()
    pyxis = job.profile.pyxis
    enabled = opts.pyxis_enabled_for_sbatch(pyxis)
    container_steps = [s for s in job.steps if s.container]
    named = [(u, name) for u in job.directives.options
             if (name := _pyxis_name(u, table)) is not None]
    batch_image = any(name in ("container-image", "container-name") for _, name in named)
    for use, name in named:
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
    if not typed.startswith("--") or typed[2:] in opts.sbatch_options():
        return None  # (an sbatch option's full name: not pyxis's, whatever it abbreviates)
    res = opts.resolve_long(typed[2:], table)
    return res.option.long if res.option is not None else None


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


# ---- SB102–SB104, SB108–SB110, SB112: how sbatch reads the directive lines --------------------

@rule("SB102", "directive-lookalike", Severity.WARNING,
      "`# SBATCH`, `#sbatch`, indented `#SBATCH`: silently a comment", fix="safe or unsafe")
def directive_lookalike(job):
    """sbatch's directive test is ``xstrncmp(line, "#SBATCH", 7)`` at column 0 (slurm-facts.md
    §1.3 rule 1): any other spelling is a comment and scanning goes on; the old ``#SLURM`` is
    still read, with an error message (src/sbatch/opt.c ``_opt_batch_script``). ``##SBATCH`` is the usual
    way to disable a directive and gets no finding; a comment such as ``# sbatch job.sh`` (no
    option after the word) is prose, not a directive. A space after the ``#`` (``# SBATCH``) is
    the other common way to switch a directive off: an info, unless no line of the file is a
    directive at all (then the author plainly meant them to apply)."""
    d = job.directives
    src = job.source
    for dl in d.lines + d.late_lines:
        if dl.magic != "#SBATCH":
            start = src.line_starts[dl.line]
            yield finding("SB102", start, start + len(dl.magic),
                          f"`{dl.magic}` is the old spelling: sbatch still reads it but prints "
                          "\"error: Change from #SLURM to #SBATCH in your script and verify the "
                          "options are valid in sbatch\"; write `#SBATCH`",
                          fixes=[Fix("write `#SBATCH`", (Edit(start, start + len(dl.magic),
                                                              "#SBATCH"),))])
    for line, start, end in d.lookalikes:
        text = src.text[start:end]
        m = re.match(r"#+\s*sbatch(?=[ \t]+-|--)[ \t]*", text, re.IGNORECASE)
        if m is None or _usage_comment(text, m):
            continue
        fixed = "#SBATCH " + text[m.end():]
        late = d.scan_end_line is not None and line > d.scan_end_line
        why = ("sbatch reads only lines that start with exactly `#SBATCH` at the first column, "
               "so this line is a comment and its options are silently not applied")
        severity = Severity.WARNING
        if DISABLED.match(text):
            if d.lines:
                severity = Severity.INFO
                why += ("; a space after `#` is the usual way to switch a directive off: if it "
                        "is meant to apply, write `#SBATCH`")
            else:
                why += "; no line of this file is a directive, so the job runs on the defaults"
        if late:
            why += (f"; it is also below the first command (line {d.scan_end_line + 1}), "
                    "where even `#SBATCH` is ignored")
        # a switched-off line gets no fix: `--fix --unsafe-fixes` would switch every one back on
        fixes = [] if late or severity == Severity.INFO else [
            Fix(f"rewrite as `{fixed.strip()}` (the options take effect)",
                (Edit(src.line_starts[line], end, fixed),), safe=False)]
        yield finding("SB102", start, end, f"`{text[:m.end()].strip()}` is not a directive: {why}",
                      severity=severity, fixes=fixes)


#: ``# SBATCH``: a ``#``, blanks, then the word (the reader already leaves ``##SBATCH`` alone)
DISABLED = re.compile(r"#[ \t]+sbatch", re.IGNORECASE)
USAGE_ARGUMENT = re.compile(r"\S+\.(?:sh|sbatch|slurm|bash|job|cmd|py)\b|\S*[<${]")


def _usage_comment(text: str, m) -> bool:
    """``#   sbatch --nodes=4 train.sh``: a comment showing how to submit the script (the
    lower-case command followed by a script name or a placeholder), not a disabled directive."""
    word = text[:m.end()].strip("# \t")
    return word == "sbatch" and bool(USAGE_ARGUMENT.search(text[m.end():]))


def _close_names(name: str, table) -> list[str]:
    """The sbatch option names closest to a misspelt ``name`` (underscores for dashes first,
    then fuzzy matching with difflib)."""
    dashed = name.replace("_", "-")
    if dashed != name:
        res = opts.resolve_long(dashed, table)
        if res.option is not None:
            return [res.canonical or dashed]
    names = sorted(table)
    plural = [n for n in names if n in (name + "s", name.rstrip("s"), dashed + "s")]
    return plural or difflib.get_close_matches(dashed, names, n=3, cutoff=0.75)


#: options that widespread SPANK plugins add to sbatch (their ``spank_options[]`` tables):
#: NERSC Shifter (github.com/NERSC/shifter, wlm_integration/slurm), BSC's Energy Aware Runtime
#: (EAR), and CSCS's pyxis-based container engine (``--environment``)
SITE_PLUGINS = {"image": "Shifter", "volume": "Shifter", "module": "Shifter",
                "environment": "CSCS container engine (pyxis)", "ear": "EAR",
                "ear-policy": "EAR", "ear-cpufreq": "EAR", "ear-verbose": "EAR",
                "ear-user-db": "EAR", "ear-learning": "EAR", "ear-tag": "EAR",
                "ear-policy-th": "EAR", "ear-mpi-dist": "EAR",
                # Paderborn PC2's Noctua FPGA link plugin (PC2 documentation "FPGA link
                # configuration"), and the quota types of Shanghai AI Laboratory's Slurm build
                # (reserved/spot/auto; seen in the corpus review, tests/corpus_review/facts.tsv)
                "fpgalink": "PC2 FPGA-link", "quotatype": "Shanghai AI Laboratory quota"}


def _srun_only(use) -> str | None:
    """The srun option a refused directive names (``--mpi``, ``-l``), if it is one."""
    typed = use.typed
    if typed.startswith("--"):
        name = typed[2:]
        table = {k: None for k in opts.SRUN_ONLY}
        if name in table:
            return name
        hits = [k for k in table if k.startswith(name)] if len(name) >= 3 else []
        return hits[0] if len(hits) == 1 else None
    letter = typed[1:]
    srun_long = {"l": "label", "K": "kill-on-bad-exit", "u": "unbuffered", "Z": "no-allocate",
                 "r": "relative", "E": "preserve-env", "X": "disable-status", "T": "threads",
                 "I": "immediate"}
    return srun_long.get(letter)


def _in_other_version(use, version: str):
    """The sbatch option (of any release) a refused long name means, when the configured
    version lacks it."""
    if not use.typed.startswith("--"):
        return None
    res = opts.resolve_long(use.typed[2:], opts.sbatch_options())
    if res.option is None or res.option.present_in(version):
        return None
    return res.option


def _pyxis_refused(use) -> bool:
    typed = use.typed
    return typed.startswith("--") and opts.resolve_long(
        typed[2:], opts.pyxis_options()).option is not None


def _name_span(use) -> tuple[int, int]:
    return use.start, use.name_end


@rule("SB103", "unknown-option", Severity.ERROR,
      "not an sbatch option: sbatch refuses the job (`unrecognized option`)", fix="unsafe")
def unknown_option(job):
    """getopt_long refuses a name that no option has, and sbatch exits with ``unrecognized
    option '--x'`` / ``invalid option -- 'x'`` (rc 255; slurm-facts.md §2)."""
    version = job.profile.slurm_version
    table = opts.sbatch_table(version, True if job.profile.pyxis is None else job.profile.pyxis)
    for use in job.directives.options:
        meant = use.single_dash_long
        if meant is not None:
            word = use.token.text.split("=", 1)[0]
            read = f"`{use.typed}`" + (f" with the value `{use.value}`" if use.value else "")
            yield finding("SB103", use.start, use.name_end,
                          f"`{word}` has one dash: getopt reads it as {read}, not as "
                          f"`--{meant}`; write two dashes",
                          fixes=[Fix("write two dashes", (Edit(use.start, use.start, "-"),),
                                     safe=False)])
            continue
        if use.error is None or "ambiguous" in use.error or "argument" in use.error:
            continue
        if _srun_only(use) or _in_other_version(use, version) or _pyxis_refused(use):
            continue
        plugin = SITE_PLUGINS.get(use.typed[2:].split("=")[0]) if use.typed.startswith("--") \
            else None
        if plugin is not None:
            yield finding("SB103", *_name_span(use),
                          f"`{use.typed}` is an option of the {plugin} SPANK plugin, not of "
                          "sbatch: it works only where a site loads that plugin, and sbatch "
                          f"refuses it elsewhere (\"{use.error}\")", severity=Severity.INFO)
            continue
        fixes = []
        if use.typed.startswith("--"):
            close = _close_names(use.typed[2:], table)
            hint = f"; did you mean {' or '.join(f'`--{c}`' for c in close)}?" if close else ""
            fixes = [Fix(f"replace with `--{c}`", (Edit(use.start, use.name_end, f"--{c}"),),
                         safe=False) for c in close]
        else:
            hint = ""
        yield finding("SB103", *_name_span(use),
                      f"`{use.typed}` is not an sbatch option: sbatch refuses the job "
                      f"(\"{use.error}\"){hint}", fixes=fixes)


@rule("SB104", "abbreviated-option", Severity.WARNING,
      "a unique prefix of an option (works, fragile) / an ambiguous one (sbatch refuses)", fix="safe")
def abbreviated_option(job):
    """getopt_long accepts any unique prefix of a long option and refuses an ambiguous one
    (``option '--mem-per=1G' is ambiguous``; slurm-facts.md §2). A prefix that is unique today
    can become ambiguous when a release adds an option."""
    for use in job.directives.options:
        res = use.resolution
        if use.error and "ambiguous" in use.error and res is not None:
            choices = [c for c in res.candidates if c not in opts.ALIASES]
            yield finding(
                "SB104", *_name_span(use),
                f"`{use.typed}` is ambiguous: sbatch refuses the job (\"{use.error}\"); write "
                f"the full name ({' or '.join(f'`--{c}`' for c in choices)})",
                severity=Severity.ERROR)
        elif use.ok and res is not None and res.abbreviated:
            full = f"--{res.option.long}"
            yield finding(
                "SB104", *_name_span(use),
                f"`{use.typed}` is an abbreviation of `{full}`: sbatch accepts it today, but a "
                "later release that adds an option with the same prefix will refuse it",
                fixes=[Fix(f"write `{full}`", (Edit(use.start, use.name_end, full),))])


@rule("SB108", "directive-tokens", Severity.ERROR,
      "stray words, unmatched quotes, `--opt = value`, a `#` cutting a value", fix="safe or unsafe",
      rests_on=("directives",))
def directive_tokens(job):
    """The tokenizer and getopt faults of slurm-facts.md §1.3 rules 3 and 5: the first word that
    is not an option stops getopt (``Invalid directive found in batch script: X``, rc 255); an
    unmatched quote or a leading ``:`` is fatal; an unquoted ``#`` ends the line even inside a
    value (``--job-name=a#b`` is ``a``, silently)."""
    d = job.directives
    src = job.source
    version = job.profile.slurm_version
    for dl in d.lines:
        if dl.fatal:
            start, end = src.line_starts[dl.line], src.line_end(dl.line)
            said = dl.fatal.replace("`", "'")
            yield finding("SB108", start, end,
                          f"{dl.fatal} in this directive: sbatch stops with \"fatal: … "
                          f"{said} in [...]\" and submits nothing")
    lines = set()
    for tok in d.strays:
        line_text = src.line_text(tok.line)
        if tok.line in lines or values.TEMPLATE.search(line_text):
            continue  # one finding per line; `{{ nodes }}` placeholders are opaque
        lines.add(tok.line)
        yield from _stray(job, tok, version)
    for dl in d.lines:
        for tok in dl.tokens:
            if tok.cut_by_hash:
                yield from _hash_cut(job, dl, tok)


def _stray(job, tok, version):
    src = job.source
    d = job.directives
    before = [u for u in d.options if u.end <= tok.start]
    prev = before[-1] if before else None
    if prev is not None and prev.error and "unrecognized" in prev.error and prev.line == tok.line:
        return  # the option before it is refused already (SB103/SB110/SB111 say why)
    said = f"\"Invalid directive found in batch script: {tok.text}\""
    fixes = []
    line_end = src.line_end(tok.line)
    if prev is not None and prev.value == "=" and prev.value_token is not None and \
            prev.value_token is not prev.token:
        # `--gres = gpu:2`: the `=` became the value and the real value is stray
        msg = (f"spaces around `=`: `{prev.typed}` takes `=` as its value and `{tok.text}` is "
               f"left over; sbatch refuses the job ({said})")
        fixes.append(Fix("remove the spaces around `=`",
                         (Edit(prev.name_end, tok.start, "="),), safe=False))
    elif prev is not None and prev.line == tok.line and prev.value is not None and \
            prev.name in ("job-name", "comment") and not tok.text.startswith("-"):
        words = src.text[prev.value_start:line_end].split("#")[0].rstrip()
        msg = (f"`{tok.text}` is a second word of the {prev.typed} value: sbatch splits "
               f"directives at spaces and refuses the job ({said})")
        if version_key(version) < (24, 5) and "\\ " in words:
            msg += "; `\\ ` keeps a space only from Slurm 24.05"
        if '"' not in words and "'" not in words and "\\" not in words:
            fixes.append(Fix("quote the value", (Edit(prev.value_start, prev.value_start +
                                                      len(words), f'"{words}"'),), safe=False))
    elif tok.line == (prev.line if prev else -1) or (prev is None and tok.line in
                                                     {dl.line for dl in d.lines}):
        msg = (f"`{tok.text}` is not an option: sbatch stops reading options here and refuses "
               f"the job ({said})")
        if version_key(version) < (24, 5) and src.text[tok.start - 2:tok.start] == "\\ ":
            msg += "; `\\ ` keeps a space inside a value only from Slurm 24.05"
        if prev is not None and prev.line == tok.line:
            fixes.append(Fix("turn the rest of the line into a comment",
                             (Edit(tok.start, tok.start, "# "),), safe=False))
    else:
        msg = (f"`{tok.text}` is not an option: sbatch stops reading options here and refuses "
               f"the job ({said})")
    yield finding("SB108", tok.start, tok.end, msg, fixes=fixes)


#: options whose values may hold a `#` on purpose (names, paths, image references); in the
#: others a glued `#` is a comment written without a space
FREE_TEXT = {"job-name", "comment", "output", "error", "input", "chdir", "export", "wckey",
             "mail-user", "container", "container-image", "container-mounts", "container-name",
             "container-workdir", "container-save", "extra", "wrap"}


def _hash_cut(job, dl, tok):
    """An unquoted ``#`` glued to a value: sbatch keeps only the text before it."""
    src = job.source
    at = dl.comment_start
    if at is None or at + 1 >= len(src.text) or src.text[at + 1] in " \t\n#":
        return  # `--mem=8G# note`: a comment, written without a space
    use = next((u for u in job.directives.options if u.value_token is tok), None)
    rest = src.text[at:src.line_end(dl.line)].split()[0]
    if use is None or use.name is None or use.value is None or use.name not in FREE_TEXT:
        # the text before `#` is a whole, valid value: a comment written without a space
        yield finding("SB108", at, at + len(rest),
                      f"`{rest}` is not part of the value: an unquoted `#` ends a directive "
                      f"line even inside a word, so sbatch reads `{tok.text}`; put a space "
                      "before `#` to show it is a comment", severity=Severity.WARNING,
                      fixes=[Fix("put a space before the comment", (Edit(at, at, " "),))])
        return
    yield finding("SB108", at, at + len(rest),
                  f"the `#` cuts this value: sbatch reads `{use.typed}` as `{tok.text}` and "
                  f"drops `{rest}` silently (an unquoted `#` ends a directive line); escape it "
                  "as `\\#` or quote the value",
                  fixes=[Fix("escape the `#` as `\\#`", (Edit(at, at, "\\"),))])


@rule("SB109", "ignored-in-script", Severity.WARNING,
      "`--wrap`, `--help`, `--verbose`, … have no effect in `#SBATCH`", fix="safe")
def ignored_in_script(job):
    """Options of sbatch's early pass (``sbatch_early_pass``: help, usage, version, verbose,
    quiet, wrap) are skipped when the script's directives are read (slurm_opt.c
    ``slurm_process_option``; slurm-facts.md §2). Others act on the submitting command only
    (``--parsable``, ``--test-only``, ``--wait``: sbatch.1), which a directive cannot reach
    before it is read."""
    src: Source = job.source
    for use in job.directives.options:
        if not use.ok or use.resolution is None or use.resolution.option is None:
            continue
        o = use.resolution.option
        if not o.ignored_in_batch_script:
            continue
        dl = next(x for x in job.directives.lines if x.line == use.line)
        fixes = []
        if len(dl.tokens) == (1 if use.value_token in (None, use.token) else 2) and \
                not use.token.cut_by_hash:
            fixes.append(Fix(f"remove the `--{o.long}` directive",
                             (Edit(*src.line_with_break(use.line), ""),)))
        what = ("the command is taken from the script itself" if o.long == "wrap" else
                "pass it on the sbatch command line instead")
        yield finding("SB109", use.start, use.end,
                      f"`--{o.long}` has no effect in an #SBATCH line: sbatch reads it only on "
                      f"the command line and drops it here silently ({what})", fixes=fixes)


@rule("SB110", "srun-only-option", Severity.ERROR,
      "`--mpi`, `--pty`, `--label`, `--cpu-bind`, … are srun options, not sbatch ones")
def srun_only_option(job):
    """The options of slurm-facts.md §7.1 exist for srun only: sbatch refuses them
    (``unrecognized option '--mpi=pmix'``, rc 255, verified on 22.05.8)."""
    for use in job.directives.options:
        if use.error is None or "argument" in use.error or "ambiguous" in use.error:
            continue
        name = _srun_only(use)
        if name is None or _in_other_version(use, job.profile.slurm_version):
            continue
        yield finding("SB110", *_name_span(use),
                      f"`{use.typed}` is an srun option (`--{name}`), not an sbatch one: sbatch "
                      f"refuses the job (\"{use.error}\"); put it on the srun line that needs it")


@rule("SB112", "option-not-in-version", Severity.ERROR,
      "an option newer than, or removed before, the configured `slurm-version`")
def option_not_in_version(job):
    """Each option's first and last release (sbatch_options.json, read from every x.y.0 tag of
    Slurm; slurm-facts.md §3): outside them sbatch refuses the name."""
    version = job.profile.slurm_version
    for use in job.directives.options:
        if use.error is None or "argument" in use.error:
            continue
        o = _in_other_version(use, version)
        if o is None:
            continue
        if o.removed_in and opts.version_key(o.removed_in) <= opts.version_key(version):
            when = f"was removed in Slurm {o.removed_in}"
        else:
            when = f"exists only from Slurm {o.since.lstrip('<=')}"
        yield finding("SB112", *_name_span(use),
                      f"`--{o.long}` {when}, and the profile's slurm-version is {version}: "
                      f"sbatch refuses the job (\"unrecognized option '{use.typed}'\")")
