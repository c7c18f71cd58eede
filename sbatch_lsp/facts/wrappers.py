"""The one table of wrappers: commands that run another command given on their own command line
(``timeout 3h torchrun …``, ``sudo -E torchrun …``, ``apptainer exec IMG python …``).

Every place that looks through wrappers (the srun finder, the launcher finder, the process tree)
reads :data:`WRAPPERS` through :func:`unwrap`. Each entry is transcribed from the tool's own
synopsis: coreutils ``timeout(1)`` (``timeout [OPTION] DURATION COMMAND``), ``env(1)``,
``nohup(1)``, ``nice(1)``, ``stdbuf(1)``, ``chrt(1)`` (``chrt [options] priority command``),
``taskset(1)`` (``taskset [options] mask command``, ``-c`` reads the mask as a CPU list),
``sudo(8)``, ``numactl(8)``, ``ionice(1)``, ``xargs(1)``; ``uv run``, ``conda run``,
``apptainer|singularity exec|run IMAGE``, ``nsys profile``. ``bash -c STR`` is a wrapper whose
command is a string: the shell model parses that string as a nested script, so it is not here.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..shell.model import Word
from .argv import walk

@dataclass(frozen=True)
class Wrapper:
    """One wrapper command.

    ``name`` is the command's basename and ``sub`` its subcommand (``uv run``), or None.
    ``takes`` are the options that consume the next word; None means any option does when the
    next word is not an option itself (tools with too many options to list). ``positionals``
    counts the words between the options and the command (``timeout``'s DURATION, an image).
    ``assignments``: ``NAME=value`` words may precede the command (``env``, ``sudo``).
    ``container``: the command runs inside a container image.
    """

    name: str
    sub: str | None = None
    takes: frozenset[str] | None = frozenset()
    positionals: int = 0
    assignments: bool = False
    container: bool = False


def _w(name: str, takes: set[str] | None = None, sub: str | None = None, positionals: int = 0,
       assignments: bool = False, container: bool = False, any_option: bool = False) -> Wrapper:
    return Wrapper(name, sub, None if any_option else frozenset(takes or ()), positionals,
                   assignments, container)


_IMAGE_OPTIONS = {"-B", "--bind", "--env", "--pwd", "-W", "--workdir", "-H", "--home",
                  "--overlay", "-o", "--env-file", "--mount"}

#: (basename, subcommand or None) -> Wrapper
WRAPPERS: dict[tuple[str, str | None], Wrapper] = {(w.name, w.sub): w for w in [
    _w("env", {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}, assignments=True),
    _w("nohup"),
    _w("time", {"-f", "--format", "-o", "--output"}),
    _w("exec", {"-a"}),
    _w("command"),
    _w("stdbuf", {"-i", "-o", "-e", "--input", "--output", "--error"}),
    _w("timeout", {"-s", "--signal", "-k", "--kill-after"}, positionals=1),
    _w("sudo", {"-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h",
                "--host", "-p", "--prompt", "-r", "--role", "-t", "--type", "-U",
                "--other-user", "-T", "--command-timeout"}, assignments=True),
    _w("numactl", {"-C", "-N", "-m", "-p", "-i", "--physcpubind", "--cpunodebind", "--membind",
                   "--preferred", "--interleave"}),
    _w("taskset", set(), positionals=1),
    _w("chrt", set(), positionals=1),
    _w("nice", {"-n", "--adjustment"}),
    _w("ionice", {"-c", "--class", "-n", "--classdata"}),
    _w("xargs", {"-n", "-P", "-I", "-L", "-d", "-a", "-s", "-E", "--max-args",
                 "--max-procs", "--arg-file", "--delimiter"}),
    _w("uv", {"--with", "--python", "-p", "--project", "--directory", "--extra", "--group",
              "--env-file", "--index", "--package"}, sub="run"),
    _w("conda", {"-n", "--name", "-p", "--prefix"}, sub="run"),
    _w("mamba", {"-n", "--name", "-p", "--prefix"}, sub="run"),
    _w("micromamba", {"-n", "--name", "-p", "--prefix"}, sub="run"),
    _w("nsys", sub="profile", any_option=True),
    *[_w(tool, _IMAGE_OPTIONS, sub=sub, positionals=1, container=True)
      for tool in ("singularity", "apptainer") for sub in ("exec", "run")],
]}

#: the basenames of every wrapper (for callers that only need to know that a word is one)
WRAPPER_NAMES = frozenset(name for name, _ in WRAPPERS)
MAX_WRAPPERS = 8


def base(w: Word) -> str:
    """A command word's literal basename (``/usr/bin/timeout`` -> ``timeout``); "" when it is
    not literal."""
    v = w.value
    if not v:
        return ""
    return v.rsplit("/", 1)[-1] if "/" in v else v  # (most words: no slash, no new string)


def wrapper_at(words: list[Word], i: int) -> Wrapper | None:
    """The wrapper that ``words[i]`` (with its subcommand at ``i + 1``) starts, or None."""
    if i >= len(words):
        return None
    name = base(words[i])
    sub = words[i + 1].value if i + 1 < len(words) else None
    return WRAPPERS.get((name, sub)) or WRAPPERS.get((name, None))


def skip_wrapper(words: list[Word], i: int, w: Wrapper) -> int:
    """Index of the word after wrapper ``w`` starting at ``words[i]``: past its name (and
    subcommand), its options and their values as getopt reads them (:func:`argv.walk`; a
    wrapper whose options are not listed reads each as taking the next word unless it is an
    option), ``NAME=value`` words when it takes them, and its positional words."""

    def lookup(name: str, long: bool) -> tuple[str, bool | None]:
        if w.takes is None:
            return name, None
        return name, ("--" if long else "-") + name in w.takes

    o = walk(words, i + (2 if w.sub else 1), lookup, "getopt", assignments=w.assignments)
    return o.end + w.positionals


@dataclass
class Unwrapped:
    """A command line seen through its wrappers: each wrapper met (with its name word and
    the index where it starts) and the argv of the command they run."""

    wrappers: list[tuple[Wrapper, Word]]
    argv: list[Word]

    @property
    def container(self) -> bool:
        """Whether a wrapper runs the command inside a container image."""
        return any(w.container for w, _ in self.wrappers)


def unwrap_all(words: list[Word]) -> Unwrapped:
    """Drop the wrappers (at most eight) from the front of ``words``."""
    if not wrapped(words):
        return Unwrapped([], words[:])  # most commands: no wrapper to look for
    i = 0
    met: list[tuple[Wrapper, Word]] = []
    for _ in range(MAX_WRAPPERS):
        w = wrapper_at(words, i)
        if w is None:
            break
        met.append((w, words[i]))
        i = skip_wrapper(words, i, w)
    return Unwrapped(met, words[i:])


def unwrap(words: list[Word]) -> list[Word]:
    """The argv of the command that ``words`` runs through its wrappers (a new list)."""
    if not wrapped(words):
        return words[:]  # (without an Unwrapped: most commands)
    return unwrap_all(words).argv


def wrapped(words: list[Word]) -> bool:
    """Whether ``words`` may start with a wrapper (its first word's basename names one)."""
    return bool(words) and base(words[0]) in WRAPPER_NAMES
