"""Completion: option names after ``#SBATCH`` (long and short, a one-line description, a snippet
for the value), values of enumerated options, ``%`` patterns in ``--output``/``--error``/
``--input``, and ``SLURM_*`` names after ``$`` in code."""
from __future__ import annotations

import re

from lsprotocol import types as t

from ..config import Config
from ..options import Option, option_docs, resolve_long, sbatch_table, slurm_env_vars
from ..values import CPU_GOVERNORS, GPU_FREQ_WORDS, MAIL_TYPES
from .hover import SCOPES

#: enumerated option values (sbatch.1; values.py checks them)
VALUES = {
    "mail-type": sorted(MAIL_TYPES),
    "open-mode": ["append", "truncate"],
    "exclusive": ["user", "mcs", "topo"],
    "gres-flags": ["disable-binding", "enforce-binding", "multiple-tasks-per-sharing",
                   "one-task-per-sharing"],
    "hint": ["compute_bound", "memory_bound", "multithread", "nomultithread"],
    "kill-on-invalid-dep": ["yes", "no"],
    "export": ["ALL", "NONE"],
    "x11": ["all", "batch", "first", "last"],
    "profile": ["All", "None", "Energy", "Lustre", "Network", "Task"],
    "distribution": ["block", "cyclic", "arbitrary", "plane=", "block:block", "block:cyclic",
                     "cyclic:cyclic", "cyclic:block"],
    "cpu-freq": sorted(CPU_GOVERNORS | {"low", "medium", "high", "highm1"}),
    "gpu-freq": sorted(GPU_FREQ_WORDS),
    "oom-kill-step": ["0", "1"], "wait-all-nodes": ["0", "1"],
}
#: filename patterns of --output, --error and --input (sbatch.1, "filename pattern")
PATTERNS = {
    "%%": "a literal %", "%A": "job array's master job ID", "%a": "job array index",
    "%J": "job ID.step ID", "%j": "job ID", "%N": "short host name (of the first node)",
    "%n": "node number within the job", "%s": "step ID", "%t": "task number within the step",
    "%u": "user name", "%x": "job name", "%b": "job array index modulo 10",
}
PATTERN_OPTIONS = {"output", "error", "input"}
DOLLAR = re.compile(r"\$\{?([A-Za-z0-9_]*)$")


def _snippet_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("$", "\\$").replace("}", "\\}")


def complete(line_text: str, line: int, character_of, col: int, config: Config,
             snippets: bool) -> list[t.CompletionItem]:
    """Items for the cursor at code-point column ``col`` of ``line_text`` (line ``line``);
    ``character_of(col)`` turns a column into the client's units for edit ranges."""
    before = line_text[:col]

    def edit_range(a: int) -> t.Range:
        return t.Range(t.Position(line, character_of(a)), t.Position(line, character_of(col)))

    if line_text.startswith("#SBATCH"):
        if col < len("#SBATCH"):
            return []
        tok = before.split()[-1] if before and not before[-1].isspace() else ""
        tok_start = col - len(tok)
        if tok.startswith("--") and "=" in tok:
            return _values(tok, tok_start, config, edit_range)
        if tok.startswith("-") or tok == "":
            return _options(config, snippets, edit_range(tok_start))
        return []
    m = DOLLAR.search(before)
    if m and not before.lstrip().startswith("#"):
        rng = edit_range(m.start(1))
        return [t.CompletionItem(label=name, kind=t.CompletionItemKind.Variable,
                                 detail=SCOPES.get(v["scope"], v["scope"]),
                                 text_edit=t.TextEdit(range=rng, new_text=name))
                for name, v in sorted(slurm_env_vars().items()) if name.startswith("SLURM")]
    return []


def _options(config: Config, snippets: bool, rng: t.Range) -> list[t.CompletionItem]:
    items = []
    table = sbatch_table(config.profile.slurm_version, config.profile.pyxis)
    for name, o in sorted(table.items()):
        if o.ignored_in_batch_script:
            continue
        doc = option_docs().get(name, "")
        items.append(_item(f"--{name}", "=", o, doc, snippets, rng, sort=f"0{name}"))
        if o.short:
            items.append(_item(f"-{o.short}", " ", o, doc, snippets, rng, sort=f"1{o.short}"))
    return items


def _item(label: str, sep: str, o: Option, doc: str, snippets: bool, rng: t.Range,
          sort: str) -> t.CompletionItem:
    if o.arg == "required" and snippets:
        choices = VALUES.get(o.long)
        holder = ("${1|" + ",".join(c.replace(",", "\\,").replace("|", "\\|") for c in choices)
                  + "|}") if choices else "${1:" + _snippet_escape(o.arg_format or "value") + "}"
        text, fmt = f"{label}{sep}{holder}", t.InsertTextFormat.Snippet
    elif o.arg == "required":
        text, fmt = f"{label}{sep}", t.InsertTextFormat.PlainText
    else:
        text, fmt = label, t.InsertTextFormat.PlainText
    return t.CompletionItem(
        label=label, kind=t.CompletionItemKind.Property, detail=doc or None,
        documentation=t.MarkupContent(kind=t.MarkupKind.PlainText,
                                      value=f"{label}{sep if o.arg != 'none' else ''}"
                                            f"{o.arg_format or '' if o.arg != 'none' else ''}"),
        sort_text=sort, filter_text=label, insert_text_format=fmt,
        text_edit=t.TextEdit(range=rng, new_text=text))


def _values(tok: str, tok_start: int, config: Config, edit_range) -> list[t.CompletionItem]:
    name, _, value = tok[2:].partition("=")
    table = sbatch_table(config.profile.slurm_version, config.profile.pyxis)
    o = resolve_long(name, table).option
    if o is None:
        return []
    value_start = tok_start + 2 + len(name) + 1
    if o.long in PATTERN_OPTIONS:
        pct = value.rfind("%")
        if pct < 0:
            return []
        rng = edit_range(value_start + pct)
        return [t.CompletionItem(label=p, kind=t.CompletionItemKind.Text, detail=d,
                                 text_edit=t.TextEdit(range=rng, new_text=p))
                for p, d in PATTERNS.items()]
    choices = VALUES.get(o.long)
    if not choices:
        return []
    # list-valued options (--mail-type=END,FAIL) complete the item after the last comma
    rng = edit_range(value_start + value.rfind(",") + 1)
    return [t.CompletionItem(label=c, kind=t.CompletionItemKind.EnumMember,
                             text_edit=t.TextEdit(range=rng, new_text=c)) for c in choices]
