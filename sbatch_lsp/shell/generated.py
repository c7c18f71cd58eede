"""Scripts the batch script writes with a here-document and then runs.

``cat > run.sh <<'EOF' … EOF`` followed by ``bash run.sh``, ``exec bash run.sh``, ``source
run.sh``, ``srun … bash run.sh`` or (after ``chmod``) ``./run.sh``: the body is a script, and
where it runs decides what it sees (bash(1), "Here Documents", "COMMAND EXECUTION ENVIRONMENT"):

- ``source FILE`` / ``. FILE``: in the batch shell itself (``SOURCE``);
- ``bash FILE``, ``exec bash FILE``, ``./FILE``: in a child shell on the batch node, which
  inherits the exported environment only (``CHILD``);
- ``srun … bash FILE`` / ``srun … ./FILE``: in every task of the step (``TASKS``).

A shell that reads its script from a here-document on its standard input (``bash <<'EOF'``,
``srun … bash -s <<'EOF'``) runs the body the same way, without a file: in a child shell, or in
every task of an srun step, since srun forwards its standard input to all tasks (srun(1) "IO
Redirection", Slurm 22.05: "stdin will be redirected from the standard input of srun to all
remote tasks").

A quoted delimiter (``<<'EOF'``) writes the body as it stands; an unquoted one lets the writing
shell expand ``$X``, ``$(…)`` and ``$((…))`` first, so a per-task variable in it is frozen at
its batch-shell value. The file is matched by the text of its name word (``"$RUN"`` and
``$RUN``, ``./run.sh`` and ``run.sh`` are one file); nothing is ever written or run.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .model import Command, Heredoc, Script, Word

SOURCE, CHILD, TASKS = "source", "child", "tasks"
SHELLS = {"bash", "sh", "dash", "ksh", "zsh"}
#: commands that write their here-document to a file named by a redirection or an argument
WRITERS = {"cat", "tee"}
#: commands before a file name that then runs it (``exec ./run.sh``, ``srun -n2 ./run.sh``)
STARTERS = {"srun", "exec", "timeout", "nohup", "env", "time", "numactl", "taskset", "stdbuf",
            "nice", "command"}
#: an output redirection on the writer's first line and its target word (``> "$F"``, ``>>f``)
WRITE_TARGET = re.compile(r"(?:^|[\s;])(?:1)?>>?\|?[ \t]*(\"[^\"\n]*\"|'[^'\n]*'|[^\s;&|<>]+)")


@dataclass(frozen=True)
class Written:
    """A file that ``command`` writes with here-document ``doc``; ``path`` is the normalised
    text of its name word."""

    path: str
    doc: Heredoc
    command: Command


@dataclass(frozen=True)
class Run:
    """A command that runs a written file: where (``SOURCE``, ``CHILD`` or ``TASKS``) and the
    index of the word naming the file."""

    written: Written
    command: Command
    index: int
    place: str


def normalise(text: str) -> str:
    """A file name word's text with quotes dropped, ``${X}`` as ``$X`` and no leading ``./``."""
    t = text.replace('"', "").replace("'", "")
    t = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", r"$\1", t)
    return t.removeprefix("./")


def _base(w: Word) -> str:
    return (w.value or "").rsplit("/", 1)[-1]


def written_files(script: Script, text: str) -> list[Written]:
    """The files the script's own commands write from a here-document, in text order:
    ``cat > F <<…``, ``cat <<… > F``, ``tee F <<…`` (not ``tee -a``, which appends)."""
    out = []
    for cmd in script.commands:
        if not cmd.heredocs or not cmd.words or _base(cmd.words[0]) not in WRITERS \
                or cmd.in_substitution:
            continue
        doc = cmd.heredocs[0]
        if _base(cmd.words[0]) == "tee":
            names = [w for w in cmd.words[1:] if not (w.value or w.text).startswith("-")]
            if len(names) != 1 or any((w.value or "").startswith("-a") for w in cmd.words[1:]):
                continue
            path = names[0].text
        else:
            head = text[cmd.start:doc.start]
            m = WRITE_TARGET.search(head.split("\n", 1)[0])
            if m is None or ">>" in m.group(0):
                continue  # cat >> F appends to a file whose other lines are unknown
            path = m.group(1)
        out.append(Written(normalise(path), doc, cmd))
    return out


def _executable(script: Script, path: str, before: int) -> bool:
    """Whether a ``chmod`` before offset ``before`` names the file (``chmod +x run.sh``)."""
    return any(c.start < before and c.words and _base(c.words[0]) == "chmod" and
               any(normalise(w.text) == path for w in c.words[1:]) for c in script.commands)


def _in_command_position(words: list[Word]) -> bool:
    """Whether the word after ``words`` is the program they run: nothing before it, or only
    starters (``srun``, ``exec``, ``timeout``…) with their options and option values
    (``srun -n 2 ./run.sh``, not ``cplex -f run.sh``, whose file is an option's value)."""
    if not words:
        return True
    if _base(words[0]) not in STARTERS:
        return False
    for j in range(1, len(words)):
        v, prev = words[j].value or "", words[j - 1].value or ""
        if not (_base(words[j]) in STARTERS or v.startswith("-") or
                (prev.startswith("-") and "=" not in prev) or _base(words[j - 1]) == "timeout"):
            return False
    return True


def run_of(cmd: Command, files: list[Written], script: Script) -> Run | None:
    """How ``cmd`` runs one of ``files`` (the last one written before it), or None."""
    if not cmd.words or cmd.in_substitution:
        return None
    for k, w in enumerate(cmd.words):
        path = normalise(w.text)
        written = next((f for f in reversed(files) if f.path == path and
                        f.command.start < cmd.start), None)
        if written is None:
            continue
        before = [_base(x) for x in cmd.words[:k]]
        if k == 1 and before[0] in (".", "source"):
            return Run(written, cmd, k, SOURCE)
        shell = next((j for j in range(k - 1, -1, -1) if before[j] in SHELLS), None)
        flags = shell is not None and all((x.value or "").startswith("-") and
                                          "c" not in (x.value or "")
                                          for x in cmd.words[shell + 1:k])
        direct = shell is None and _in_command_position(cmd.words[:k]) and \
            _executable(script, path, cmd.start)
        if not flags and not direct:
            return None
        return Run(written, cmd, k, TASKS if "srun" in before else CHILD)
    return None


#: a here-document operator on standard input (``<<``, ``<<-``, ``0<<``), not another descriptor
STDIN_HEREDOC = re.compile(r"(?:^|[^\d<])0?<<(?!<)")


def stdin_run(cmd: Command, text: str) -> Run | None:
    """How ``cmd`` runs a here-document as a shell script on its standard input: a shell in
    command position (after ``srun``/``exec``/… and their options; after ``srun`` also after
    a wrapper or a container runtime and its words) with only option flags (none with ``c``)
    before ``-s`` or the end of its words, and the here-document on fd 0.
    ``srun … bash <<EOF`` runs it in every task (``TASKS``), ``bash <<EOF`` in a child shell."""
    if not cmd.heredocs or not cmd.words or cmd.in_substitution:
        return None
    doc = cmd.heredocs[0]
    if not STDIN_HEREDOC.search(text[cmd.start:doc.start].split("\n", 1)[0]):
        return None
    k = next((j for j, w in enumerate(cmd.words) if _base(w) in SHELLS), None)
    # after srun, wrappers and container runtimes may stand before the shell
    # (`srun nsys profile -o F bash <<EOF`, `srun singularity exec IMG bash <<EOF`)
    under_srun = k is not None and k > 0 and _base(cmd.words[0]) == "srun"
    if k is None or not (_in_command_position(cmd.words[:k]) or under_srun):
        return None
    for w in cmd.words[k + 1:]:
        v = w.value or ""
        if not v.startswith("-") or (not v.startswith("--") and "c" in v[1:]):
            return None  # a script operand or a command string: stdin is not the script
        if v == "-s":
            break  # the words after -s are positional parameters
    place = TASKS if "srun" in [_base(w) for w in cmd.words[:k]] else CHILD
    return Run(Written("", doc, cmd), cmd, k, place)


def runs(script: Script, text: str) -> list[Run]:
    """Every command of the batch script that runs a file the script wrote, or a here-document
    on a shell's standard input, in text order."""
    files = written_files(script, text)
    if files:
        found = (run_of(c, files, script) or stdin_run(c, text) for c in script.commands)
    else:  # (most scripts: only a command with a here-document can run one, most have none)
        found = (stdin_run(c, text) for c in script.commands if c.heredocs)
    return [r for r in found if r is not None]
