"""SB5xx: credentials in job scripts.

Slurm keeps a copy of every batch script (``scontrol write batch_script``, accounting), so a
literal token leaks to admins and accounting even from a private repository. Detection and
masking live in :mod:`sbatch_lsp.secrets`; these rules report what it finds.
"""
from __future__ import annotations

import re
from operator import attrgetter

from ..facts.reads import variable_reads
from ..secrets import credential_name, credential_values, random_literal
from ..shell.model import DOUBLE, UNQUOTED, Expansion, Word
from . import Edit, Fix, Related, Severity, finding, rule


@rule("SB501", "hardcoded-credential", Severity.ERROR,
      "a literal token in the script (git and Slurm's stored job script keep copies)", fix="unsafe")
def hardcoded_credential(job):
    for sec in credential_values(job):
        fixes = []
        a = next((a for a in job.script.assignments if a.value is not None and
                  a.value.start <= sec.start and sec.end <= a.value.end), None)
        if a is not None and a.value.value is not None and \
                sec.end - sec.start == len(a.value.value):
            name = a.name
            file = ("${HF_TOKEN_FILE:-$HOME/.cache/huggingface/token}" if name.startswith("HF")
                    else f"$HOME/.secrets/{name.lower()}")
            fixes.append(Fix(f"read {name} from a file at run time",
                             (Edit(a.value.start, a.value.end, f"\"$(cat \"{file}\")\""),),
                             safe=False))
        yield finding("SB501", sec.start, sec.end,
                      f"{article(sec.kind)} {sec.kind} is written into the script: git history "
                      "and Slurm's stored copy of the job script keep it; revoke it now and read "
                      "it at run time from a 0600 file or the submitting environment", fixes=fixes)


#: the letters whose English names start with a vowel sound ("an HF token", "an NPM token")
VOWEL_SOUND_LETTERS = frozenset("AEFHILMNORSX")


def article(kind: str) -> str:
    """"an" or "a" before ``kind`` (a credential's kind, e.g. "AWS Access Key", "GitHub
    Token"): an initialism (its first word in capitals) by its first letter's name, a word by
    its first letter."""
    first = kind.split(" ", 1)[0]
    vowel = (first[:1] in VOWEL_SOUND_LETTERS if first.isupper() and len(first) > 1
             else first[:1].lower() in "aeiou")
    return "an" if vowel else "a"


XTRACE_SHEBANG = re.compile(r"#!\S*(?:\s+\S*)?\s+-[A-Za-z]*x")


def _xtrace_switch(args: list) -> bool | None:
    """True when ``set ARGS`` turns xtrace on (``-x``, ``-Eeuxo``, ``-o xtrace``), False when it
    turns it off (``+x``, ``+o xtrace``), None when it leaves it alone."""
    for k, a in enumerate(args):
        if not a:
            continue
        if a in ("-o", "+o") and k + 1 < len(args) and args[k + 1] == "xtrace":
            return a == "-o"
        if re.fullmatch(r"[-+][A-Za-z]*x[A-Za-z]*", a):
            return a[0] == "-"
    return None


@rule("SB502", "exposed-credential", Severity.WARNING,
      "a credential printed by `set -x`, passed on a command line, or expanded into `bash -c`")
def exposed_credential(job):
    assigned_by: dict[int, list] = {}
    for a in job.script.assignments:
        if a.command is not None and a.value is not None and credential_name(a.name) and (
                a.value.value is None or random_literal(a.value.value)):
            assigned_by.setdefault(id(a.command), []).append(a)
    readers = _credential_readers(job)
    if not assigned_by and not readers:
        return  # (most scripts: no credential assigned or read, nothing xtrace could print)
    # where xtrace was turned on: (start, end), or None while it is off
    first = job.source.line_text(0)
    xtrace = (0, len(first)) if XTRACE_SHEBANG.match(first) else None
    for cmd in sorted(job.script.commands, key=attrgetter("start")):
        name = cmd.words[0].value if cmd.words else None  # (no argv list for every command)
        if name == "set":
            switch = _xtrace_switch(cmd.argv()[1:])
            if switch is not None:
                xtrace = (cmd.start, cmd.end) if switch else None
        if xtrace is not None:
            # xtrace prints assignments with their expanded value (``+ export HF_TOKEN=hf_…``):
            # a token read at run time (``"$(< file)"``, ``$OTHER``) is printed into the job's
            # output file, and so is a literal one (SB501 reports the literal itself). The range
            # is the name, so SB501's fix (literal -> ``"$(cat …)"``) keeps the same finding
            # instead of creating a new one.
            for a in assigned_by.get(id(cmd), ()):
                yield finding("SB502", a.start, a.start + len(a.name),
                              f"`set -x` prints this assignment with the expanded value of "
                              f"{a.name} into the job's output file; turn xtrace off around it "
                              "(`set +x` … `set -x`)",
                              related=[Related(*xtrace, "xtrace is on from here")])
        if not cmd.words or name in ("export", "declare", "local", "readonly", "unset"):
            continue
        if name in ("[", "[[", "test") and xtrace is None or id(cmd) not in readers:
            continue  # a builtin test: no process, nothing in `ps`; or no credential read
        for w in cmd.words[1:]:
            if not w.expansions:
                continue  # a literal word carries no value
            for e in _credential_reads(job, w):
                why = []
                related = []
                if xtrace is not None:
                    why.append("`set -x` prints the expanded value into the job's output file")
                    related.append(Related(*xtrace, "xtrace is on from here"))
                why.append("a command-line argument is visible to every user in `ps`")
                yield finding("SB502", e.start, e.end,
                              f"${e.name} is passed on the command line: " + "; ".join(why)
                              + "; let the tool read it from the environment or a file",
                              related=related)


#: the deepest chain of ``A="… $B …"`` assignments followed to a credential
MAX_CHAIN = 8


def _credential_readers(job) -> set[int]:
    """The ids of the commands of which :func:`_credential_reads` may find something in a
    word: those that read a credential-named variable, or a variable some assignment of which
    reads one of these (``CMD="… $HF_TOKEN"``, then ``A="$CMD"``, at any depth and offset: a
    superset of the chains it follows). No other command's words can carry a credential."""
    reads = variable_reads(job)
    carriers = reads.carrying({name for name in reads.names if credential_name(name)})
    return {id(cmd) for name in carriers for cmd, _ in reads.of(name)}


def _credential_reads(job, w: Word, depth: int = 0) -> list[Expansion]:
    """The credential expansions whose value ``w`` carries when the batch shell expands it: its
    own (``--token "$HF_TOKEN"``) and those that the assignments of the variables it reads
    expanded (``CMD="tool --token $HF_TOKEN"`` then ``bash -c "$CMD"``: the value is in the
    string bash receives, bash(1) "Parameter Expansion"), followed through ``A="$B"`` chains;
    each at the text where the credential enters the value."""
    out: list[Expansion] = []
    for e in w.expansions:
        if not e.name or e.quoting not in (UNQUOTED, DOUBLE):
            continue
        if credential_name(e.name):
            out.append(e)
            continue
        if depth >= MAX_CHAIN or e.nested:
            continue
        a = job.script.value_at(e.name, e.start)
        if a is not None and a.value is not None:
            out += _credential_reads(job, a.value, depth + 1)
    return out
