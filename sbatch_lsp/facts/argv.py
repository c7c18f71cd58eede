"""The one option walker: how a command's own parser reads the options at the front of its argv,
for srun, the wrappers (``timeout``, ``sudo``, ``nsys profile`` …) and the launchers (torchrun,
accelerate, deepspeed, colossalai, mpirun/mpiexec).

Three parser families, and what each does with the word after an option that takes a value:

- **getopt** (srun: ``getopt_long`` in ``src/srun/opt.c`` of Slurm; coreutils ``timeout``,
  ``env``, ``nice``, ``numactl``, ``sudo``): an option declared ``required_argument`` takes the
  next word whatever it is, ``-`` or not (glibc ``getopt(3)``: "the next argv-element is
  the argument"); an ``optional_argument`` is only ever inline (``--opt=v``); short options take
  their value joined (``-n4``) or as the next word.
- **argparse** (torchrun: ``torch/distributed/run.py`` ``get_args_parser``, an
  ``ArgumentParser`` with ``nargs=None`` value options; accelerate, deepspeed and colossalai
  parse with argparse too): an option that takes a value consumes the next word unless that word
  looks like an option (starts with ``-`` and is not a negative number: CPython
  ``Lib/argparse.py`` ``_parse_optional`` / ``_negative_number_matcher``); then it is an error
  ("expected one argument"), which we read as a flag so the walk goes on.

- **mpi** (Open MPI ``mpirun``/``mpiexec``: its own command-line parser, opal/util/cmd_line.c,
  mpirun(1) v4.1; MPICH's Hydra ``mpiexec``, mpiexec(1)): options are whole words with one or
  two dashes (``-np 4`` is ``np``, not ``-n p``), and an option may take several words
  (``-mca btl tcp``, ``-genv NAME VALUE``): ``lookup`` answers with how many. The value words
  are taken whatever they look like.

A word whose text is not literal (``"$N"``, ``$X``) is a value, not an option, unless its literal
start is a dash (``-$FLAG``): whatever it expands to at run time, the parser gets one word that
only a value ever holds in practice. Both families stop at ``--`` and at the first word that is
not an option (srun runs in ``+`` mode: POSIXLY_CORRECT ordering).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..shell.model import Word

#: a ``NAME=value`` word (``env``/``sudo`` take them before the command)
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
#: a negative number, which argparse reads as a value (``argparse._negative_number_matcher``)
NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")

Style = Literal["getopt", "argparse", "mpi"]
#: (name without dashes, long?) -> (the key to store it under, whether it takes a value: True,
#: False, or None when the parser does not know the option; for the mpi style, the number of
#: words it takes)
Lookup = Callable[[str, bool], tuple[str, bool | int | None]]


def literal_start(w: Word) -> str:
    """The word's literal value, or for a word with expansions its text without quotes (the
    part before the first ``$`` is what it certainly starts with)."""
    return w.value if w.value is not None else w.text.lstrip("\"'")


def looks_like_option(w: Word, style: Style = "getopt") -> bool:
    """Whether ``w`` is an option word to a ``style`` parser: it starts with ``-`` (literally)
    and is not ``-`` alone; argparse also reads a negative number as a value (``nice -10`` is an
    option to getopt)."""
    return _option_text(literal_start(w), style)


def _option_text(v: str, style: Style) -> bool:
    """:func:`looks_like_option` of a word whose literal start is ``v``."""
    return v.startswith("-") and v != "-" and not (style == "argparse" and
                                                    NEGATIVE_NUMBER.match(v))


@dataclass
class Options:
    """The options read from the front of an argv: ``values`` maps each option's key to its
    value word (a flag maps to its own word; an inline ``--opt=v`` / ``-n4`` value is a Word of
    its own covering just the value), ``words`` maps the key to the option word, ``hidden``
    holds bare expansions met in option position (``$ARGS``: any options may hide there),
    ``every`` each option read in order with its first value word (a repeated ``-x VAR`` is
    there each time; ``values`` holds the last) and ``end`` is the index of the first word
    after the options (the command, or ``len(argv)``)."""

    values: dict[str, Word] = field(default_factory=dict)
    every: list[tuple[str, Word]] = field(default_factory=list)
    words: dict[str, Word] = field(default_factory=dict)
    hidden: list[Word] = field(default_factory=list)
    end: int = 0


def takes_next(style: Style, takes: bool | int | None, nxt: Word) -> bool:
    """Whether an option with no inline value consumes ``nxt``: getopt's required argument
    always does; argparse (and an option the parser does not know, in either family) only
    when ``nxt`` does not look like an option."""
    if takes is False or takes == 0:
        return False
    if takes and style in ("getopt", "mpi"):
        return True
    return not looks_like_option(nxt, style)


def walk(words: list[Word], start: int, lookup: Lookup, style: Style,
         may_hold_options: Callable[[Word], bool] = lambda w: False,
         assignments: bool = False) -> Options:
    """Read options from ``words[start:]`` as a ``style`` parser does, stopping at ``--`` (which
    is consumed) or at the first non-option word. ``may_hold_options(w)`` says whether a bare
    expansion in option position is options (kept in ``hidden``) or the command;
    ``assignments``: ``NAME=value`` words may stand among the options (``env``, ``sudo``)."""
    out = Options()
    i = start
    while i < len(words):
        w = words[i]
        v = w.value
        if v is None:  # (bare_expansion's regex only for a word with expansions)
            if w.bare_expansion and i + 1 < len(words) and may_hold_options(w):
                out.hidden.append(w)
                i += 1
                continue
            v = literal_start(w)
        if assignments and ASSIGNMENT.match(v):
            i += 1
            continue
        if v == "--":
            i += 1
            break
        if not _option_text(v, style):  # (looks_like_option, its literal start read once)
            break
        if v.startswith("--") or style == "mpi":
            name, eq, val = v.lstrip("-").partition("=")
            key, takes = lookup(name, v.startswith("--"))
            inline = w.tail(w.text.find("=") + 1, val) if eq else None
        else:
            key, takes, inline = _short(w, v, lookup)
        out.words[key] = w
        if inline is not None:
            out.values[key], i = inline, i + 1
        elif i + 1 < len(words) and takes_next(style, takes, words[i + 1]):
            # an mpi option taking N words takes them all (-genv NAME VALUE: NAME is kept)
            out.values[key] = words[i + 1]
            i += 1 + (int(takes) if style == "mpi" and takes else 1)
        else:
            out.values[key], i = w, i + 1
        out.every.append((key, out.values[key]))
    out.end = i
    return out


def _short(w: Word, v: str, lookup: Lookup) -> tuple[str, bool | int | None, Word | None]:
    """A one-dash word: a cluster of short options (``-lN2``: ``-l`` then ``-N 2``), where the
    first letter that takes a value takes the rest of the word, or the next word when it is the
    last letter. Returns the key and ``takes`` of the option whose value is pending, and its
    inline value when joined."""
    for k in range(1, len(v)):
        key, takes = lookup(v[k], False)
        if takes is not False:
            rest = v[k + 1:]
            return key, takes, (w.tail(k + 1, rest) if rest else None)
        if k == len(v) - 1:
            return key, False, None
    return v[1:], None, None

