"""Hover, in our own words: an ``#SBATCH`` option (what it does, its value grammar, the effective
value and where it came from), a ``$SLURM_*`` variable (per job, node or task; its value in the
batch shell and inside a task), a code in a suppression comment (the rule's summary)."""
from __future__ import annotations

import re

from ..config import Config
from .. import suppressions
from ..directives import OptionUse
from ..lint import directives_of, outline
from ..options import (Option, option_docs, pyxis_options, resolve_long, sbatch_options,
                       short_table, slurm_env_vars)
from ..rules import RULES
from ..shell.model import Script
from ..source import Source

VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
SCOPES = {
    "per_job": "one value for the whole job",
    "per_job_request": "set only when the job requested the matching option; one value per job",
    "per_step": "the step's value: srun overwrites it in every step",
    "per_node": "differs from node to node",
    "per_task": "differs from task to task within a step",
}


def hover_text(src: Source, offset: int, config: Config) -> tuple[str, int, int] | None:
    """Markdown for what is under ``offset`` (a code-point offset into ``src.text``) and the
    (start, end) offsets it explains; None when there is nothing to say. Directives and
    suppressions are read as the engine reads them (:func:`~sbatch_lsp.lint.outline`: a
    ``#SBATCH`` line in a here-document is data, a suppression counts only in a real comment)."""
    line = src.line_of(offset)
    start = src.line_starts[line]
    own = src.line_text(line)
    col = offset - start
    if "sbatch-lint:" in own:
        found = _suppression(src, outline(src), offset)
        if found is not None:
            return found
    if own.startswith("#SBATCH"):
        return _directive(src, offset, config)
    for v in VARIABLE.finditer(own):
        if v.start() <= col <= v.end():
            info = _variable(v.group(1))
            return (info, start + v.start(), start + v.end()) if info else None
    return None


def _suppression(src: Source, script: Script, offset: int) -> tuple[str, int, int] | None:
    """The rules a name in a suppression comment stands for (the name under ``offset``)."""
    for sup in suppressions.read(src, script):
        for item in sup.items:
            if item.start <= offset <= item.end:
                codes = sorted(c for c in RULES if c.startswith(item.prefix))
                if not codes:
                    return (f"`{item.typed}` names no rule: this suppression does nothing",
                            item.start, item.end)
                lines = [f"**{c}** `{RULES[c].name}` ({RULES[c].severity.label}; fix: "
                         f"{RULES[c].fix}): {RULES[c].summary}" for c in codes]
                return "\n\n".join(lines), item.start, item.end
    return None


def option_info(o: Option) -> list[str]:
    """Markdown lines about an option: what it does, its value, which releases have it."""
    short = f" (`-{o.short}`)" if o.short else ""
    out = [f"**--{o.long}**{short}: {option_docs().get(o.long, '')}".rstrip(": ")]
    if o.arg != "none":
        grammar = o.arg_format or "<value>"
        out.append(f"Value{' (optional)' if o.arg == 'optional' else ''}: `{grammar}`")
    else:
        out.append("A flag: it takes no value.")
    if o.kind == "pyxis":
        out.append(f"A pyxis (SPANK plugin) option; sbatch accepts it only where pyxis "
                   f"{o.since} or later is loaded.")
    else:
        since = "" if o.since.startswith("<=") else f" since Slurm {o.since}"
        removed = f", removed in {o.removed_in}" if o.removed_in else ""
        if since or removed:
            out.append(f"In sbatch{since}{removed}.")
    if o.ignored_in_batch_script:
        out.append("Only the sbatch command line reads it: in `#SBATCH` it has no effect.")
    return out


def _directive(src: Source, offset: int, config: Config) -> tuple[str, int, int] | None:
    block = directives_of(src, outline(src), config)
    use = next((u for u in block.options if u.start <= offset <= max(u.end, u.start + 1)), None)
    if use is not None:
        return _option_use(block, use), use.start, use.end
    for dl in block.late_lines + block.lines:
        for tok in dl.tokens:
            if tok.start <= offset <= tok.end and tok.text.startswith("-"):
                o = _lookup(tok.text)
                body = option_info(o) if o else [f"`{tok.text.split('=')[0]}` is not an sbatch option."]
                if dl.late:
                    body.append("This directive is below the first command: sbatch never reads it.")
                return "\n\n".join(body), tok.start, tok.end
    # not in the block: a here-document body or a string (data for another script)
    line = src.line_of(offset)
    for word in re.finditer(r"-[^\s=]+", src.line_text(line)):
        a, b = src.line_starts[line] + word.start(), src.line_starts[line] + word.end()
        if a <= offset <= b:
            o = _lookup(word.group(0))
            body = option_info(o) if o else []
            body.append("This line is data (a here-document body or a string), not a directive "
                        "of this script: sbatch reads it only in the script it is written to.")
            return "\n\n".join(body), a, b
    return None


def _lookup(typed: str) -> Option | None:
    name = typed.split("=", 1)[0]
    if name.startswith("--"):
        table = {**sbatch_options(), **pyxis_options()}
        return resolve_long(name[2:], table).option
    return short_table(sbatch_options()).get(name[1:2]) if len(name) > 1 else None


def _option_use(block, use: OptionUse) -> str:
    if not use.ok or use.name is None:
        typed = use.typed
        o = _lookup(typed)
        head = option_info(o) if o else []
        return "\n\n".join(head + [f"sbatch: {use.error or f'{typed} is not an sbatch option'}"])
    o = use.resolution.option if use.resolution and use.resolution.option else \
        ({**sbatch_options(), **pyxis_options()}.get(use.name))
    body = option_info(o) if o else [f"**--{use.name}**"]
    if use.resolution is not None and use.resolution.abbreviated:
        body.append(f"`{use.typed}` is an abbreviation that getopt accepts for `--{use.name}`; "
                    "write it in full (a new option with the same prefix would break it).")
    effective = block.effective(use.component).get(use.name)  # per hetjob component
    shown = f"--{use.name}" + (f"={effective.value}" if effective and effective.value is not None else "")
    if effective is use:
        body.append(f"Effective: `{shown}`.")
    elif effective is not None:
        body.append(f"Overridden: line {effective.line + 1} sets `{shown}`, and the last one wins.")
    return "\n\n".join(body)


def _variable(name: str) -> str | None:
    v = slurm_env_vars().get(name)
    if v is None:
        return None
    out = [f"**${name}**: {SCOPES.get(v['scope'], v['scope'].replace('_', ' '))}."]
    if v.get("set_in_batch_script"):
        out.append(f"In the batch shell: {v.get('batch_script_value') or 'set'}.")
    else:
        out.append("In the batch shell: not set.")
    out.append("Inside srun tasks: " + ("set, each task its own value." if
                                        v.get("varies_between_tasks_of_one_step") else
                                        "set." if v.get("set_in_srun_tasks") else "not set by srun."))
    if v.get("expanding_in_batch_shell_for_srun_command_is_bug"):
        out.append("Expanded by the batch shell on an srun line, every task gets the batch "
                   "shell's value: expand it inside the task instead (`bash -c '...$" + name + "...'`).")
    return "\n\n".join(out)
