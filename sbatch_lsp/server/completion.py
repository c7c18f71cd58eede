"""Completion: option names after ``#SBATCH`` (long and short, a one-line description, a snippet
for the value), values of enumerated options, ``%`` patterns in ``--output``/``--error``/
``--input``, and ``SLURM_*`` names after ``$`` in code.

Options come from the configured ``slurm-version`` and pyxis (the table SB103/SB112 read), and
values from the grammars SB105 judges by (:func:`~sbatch_lsp.values.value_choices`,
:func:`~sbatch_lsp.values.example_value`): nothing offered is something the linter rejects."""
from __future__ import annotations

import re

from lsprotocol import types as t

from ..config import Config
from ..options import ALIASES, Option, option_docs, resolve_long, sbatch_table, slurm_env_vars
from ..values import example_value, value_choices
from .hover import SCOPES

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
        holder = _placeholder(o, config.profile.slurm_version)
        items.append(_item(f"--{name}", "=", o, doc, holder, snippets, rng, sort=f"0{name}"))
        if o.short:
            items.append(_item(f"-{o.short}", " ", o, doc, holder, snippets, rng,
                               sort=f"1{o.short}"))
    return items


def _placeholder(o: Option, version: str) -> str:
    """The value snippet of an option: a choice among the values its grammar accepts, else a
    valid example, else a plain word from its synopsis (``<account>`` -> ``account``: an open
    value that sbatch passes on). Each default is itself a valid value."""
    name = ALIASES.get(o.long, o.long)  # the grammar is the canonical option's
    choices = value_choices(name, version)
    if choices:
        return "${1|" + ",".join(c.replace(",", "\\,").replace("|", "\\|") for c in choices) + "|}"
    example = example_value(name, version)
    if example is None:
        words = re.findall(r"[A-Za-z][A-Za-z0-9_]*", o.arg_format or "")
        example = words[0] if words else "value"
    return "${1:" + _snippet_escape(example) + "}"


def _item(label: str, sep: str, o: Option, doc: str, holder: str, snippets: bool,
          rng: t.Range, sort: str) -> t.CompletionItem:
    if o.arg == "required" and snippets:
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
    choices = value_choices(ALIASES.get(o.long, o.long), config.profile.slurm_version)
    if not choices:
        return []
    # list-valued options (--mail-type=END,FAIL) complete the item after the last comma
    rng = edit_range(value_start + value.rfind(",") + 1)
    return [t.CompletionItem(label=c, kind=t.CompletionItemKind.EnumMember,
                             text_edit=t.TextEdit(range=rng, new_text=c)) for c in choices]
