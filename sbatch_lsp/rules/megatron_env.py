"""SB607: the environment gotchas of training jobs (the Megatron/NeMo seeds' two-phase pattern):
a package installer that every task of a multi-task srun step runs at once.

Facts behind it:

- pip takes no lock on the environment it installs into (pypa/pip#2361, open; pypa/pip#2746):
  concurrent ``pip install`` runs into one site-packages race on the same files and can leave a
  ``*.dist-info`` without its ``RECORD`` (``uninstall-no-record-file`` afterwards), and concurrent
  builds of one sdist race in the wheel cache (pypa/pip#9034: ``EOFError``, ``BadZipFile``).
- uv documents that "it's safe to run multiple uv commands concurrently, even against the same
  virtual environment": its cache is append-only and it takes a file lock on the target
  environment (uv docs, Concepts › Caching › Cache safety). Every task still resolves and waits
  for that lock in turn, so the cost is time, not a broken environment: information.
- ``uv run`` locks and syncs the project environment before it runs the command ("when
  ``uv run`` is used, the project is locked and synced before invoking the requested command";
  ``--locked`` and ``--frozen`` still sync, only ``--no-sync`` does not: uv docs, Concepts ›
  Projects › Locking and syncing, ``docs/concepts/projects/sync.md``, uv 0.8); ``UV_NO_SYNC``
  is ``--no-sync`` as an environment variable, and ``--no-project`` runs without the project
  (uv docs, Reference › Commands › ``uv run``, and Reference › Environment variables). So
  ``uv run`` in every task is ``uv sync`` in every task: the same serialised resolution.
- pyxis starts one container per node for a step (its tasks on that node share it), so with one
  task per node each installs into its own container's file system.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from ..diagnostics import Diagnostic
from ..facts.control import job_control
from ..facts.steps import StepFacts, facts_of
from ..facts.wrappers import unwrap, unwrap_all
from ..directives import OptionUse
from ..shell.model import Command, Word
from . import Related, Severity, finding, rule

PIP = re.compile(r"^pip(\d+(\.\d+)?)?$")
PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")


def installer(cmd: Command) -> tuple[str, list[Word]] | None:
    """What ``cmd`` runs when it is a package install, seen through its wrappers (``timeout``,
    ``env``, ``nohup``, … : facts/wrappers.py): (``"pip install"``, ``"uv sync"``, ``"uv pip
    install"`` or ``"uv pip sync"``; the words that name it), else None. Only literal words
    count; the program's directory is ignored (``.venv/bin/pip``)."""
    words = unwrap(cmd.words)
    argv = [w.value for w in words]
    if not argv or argv[0] is None:
        return None
    prog = argv[0].rsplit("/", 1)[-1]
    if PIP.match(prog) and argv[1:2] == ["install"]:
        return "pip install", words[:2]
    if PYTHON.match(prog) and argv[1:4] == ["-m", "pip", "install"]:
        return "pip install", words[:4]
    if prog == "uv":
        if argv[1:2] == ["sync"]:
            return "uv sync", words[:2]
        if argv[1:2] == ["pip"] and argv[2:3] in (["install"], ["sync"]):
            return f"uv pip {argv[2]}", words[:3]
    return uv_run(cmd)


#: ``uv run`` options after which it does not sync the project environment
NO_SYNC = {"--no-sync", "--no-project"}


def uv_run(cmd: Command) -> tuple[str, list[Word]] | None:
    """(``"uv run"``, the ``uv run`` words) when ``cmd`` runs through ``uv run`` and nothing on
    its own line stops the sync: ``--no-sync``/``--no-project`` among uv's options, a word
    whose value is not known there (it may be one), or ``UV_NO_SYNC=…`` before it (``env
    UV_NO_SYNC=1 uv run …``, ``UV_NO_SYNC=1 uv run …``). None otherwise."""
    if any(a.name == "UV_NO_SYNC" for a in cmd.assignments):
        return None
    words = cmd.words
    met = unwrap_all(words)
    end = next((i for i, w in enumerate(words) if met.argv and w is met.argv[0]), len(words))
    for wrapper, name in met.wrappers:
        if (wrapper.name, wrapper.sub) != ("uv", "run"):
            continue
        i = next(k for k, w in enumerate(words) if w is name)
        before = [w.value for w in words[:i]]
        options = [w.value for w in words[i + 2:end]]
        if None in options or NO_SYNC & set(options) or \
                any(v is not None and v.startswith("UV_NO_SYNC=") for v in before):
            return None
        return "uv run", words[i:i + 2]
    return None


@rule("SB607", "installer-on-every-task", Severity.WARNING,
      "pip install or uv sync in every task of a multi-task srun step: concurrent installs "
      "into one environment")
def installer_on_every_task(job) -> Iterator[Diagnostic]:
    """An unguarded ``pip install``/``uv sync``/``uv pip install`` that srun runs in each of a
    step's tasks. Warning for pip when one node runs several of them (they share that node's
    environment); info for pip with one task per node outside a container (shared only when the
    environment sits on a shared file system), and for uv (safe by uv's docs, but serialised).
    Not reported for one task, an unknown task count, or a task-id guard around the command."""
    ctl = job_control(job)
    synced = False  # a one-task step before has synced the project environment
    for sf in facts_of(job).steps:
        tasks = sf.layout.tasks
        if tasks == 1 and not sf.step.hidden and any(
                (installer(c) or ("",))[0] == "uv sync" for c in sf.step.task_commands):
            synced = True
        if tasks is None or tasks <= 1 or sf.step.hidden:
            continue
        for cmd in sf.step.task_commands:
            found = installer(cmd)
            if found is None or ctl.tasks(cmd).guarded or ctl.tasks(cmd).opaque:
                continue
            no_sync = sf.env.get("UV_NO_SYNC")
            if found[0] == "uv run" and (synced or no_sync and no_sync.exported or any(
                    a.name == "UV_NO_SYNC" for sc in sf.step.task_scripts
                    for a in sc.assignments)):
                continue  # synced once already, or told not to sync
            yield from _judge(sf, *found)


def _judge(sf: StepFacts, what: str, named: list[Word]) -> Iterator[Diagnostic]:
    tasks = sf.layout.tasks
    per_node = sf.layout.max_per_node
    start, end = named[0].start, named[-1].end
    related = [Related(sf.step.srun.start, sf.step.srun.end,
                       f"this step starts {tasks} tasks ({sf.layout.note})")]
    fix = (f"run it once before the step, in a step of one task (`srun --ntasks=1 --nodes=1 "
           f"{what} …`), then start the training step")
    shared_node = per_node is not None and per_node > 1
    if not shared_node and sf.container:
        return  # one task per node, each in its node's own container
    if what == "pip install":
        if shared_node:
            yield finding(
                "SB607", start, end,
                f"every one of the {tasks} tasks runs `pip install`, {per_node} of them on one "
                "node into the same environment at once: pip takes no lock on the environment "
                "(pypa/pip#2361), so concurrent installs race on the same files and can leave a "
                "package without its RECORD (`uninstall-no-record-file` from then on); " + fix,
                related=related)
        else:
            yield finding(
                "SB607", start, end,
                f"each of the {tasks} tasks (one per node) runs `pip install`; if the "
                "environment is on a shared file system they install into it at once and pip "
                "takes no lock on it (pypa/pip#2361); " + fix,
                severity=Severity.INFO, related=related)
        return
    if what == "uv run":
        yield finding(
            "SB607", start, end,
            f"every one of the {tasks} tasks runs `uv run`, which locks and syncs the project "
            "environment before it starts the command (unless --no-sync or UV_NO_SYNC): uv "
            "locks the environment, so this is safe, but each task resolves and waits for the "
            "lock in turn (and against a cold cache each may download the same wheels); run "
            "`uv sync` once in a step of one task (`srun --ntasks=1 --nodes=1 uv sync`), then "
            "start the training step with `uv run --no-sync`",
            severity=Severity.INFO, related=related)
        return
    yield finding(
        "SB607", start, end,
        f"every one of the {tasks} tasks runs `{what}`: uv locks the environment, so this is "
        "safe, but each task resolves and waits for the lock in turn (and against a cold cache "
        "each may download the same wheels); " + fix,
        severity=Severity.INFO, related=related)


# ---- SB401's home-directory case (hooked into rules/environment.py node_local_cache) -------
#: a path in the user's home directory as a script spells it (``~/x``, ``$HOME/x``, ``${HOME}``)
HOME_PATH = re.compile(r"^(~|\$\{?HOME\}?)(/|$)")


def home_cache_unmounted(job, step, path: str,
                         mounts: list[str] | None) -> tuple[Word | OptionUse, bool] | None:
    """When a cache ``path`` lies in ``$HOME`` and the container step does not mount the home
    directory: (the ``--no-container-mount-home`` evidence, whether it is the step's own option).
    None when the path is elsewhere, the step runs no container, the mounts are not literal
    (``mounts`` None), or home is mounted; the caller checks whether a ``--container-mounts``
    target covers the path.

    pyxis(1) ``--no-container-mount-home``: the user's home directory is not bind-mounted, so
    the path inside the container is in the container's own file system, on each node apart
    (NVIDIA/pyxis README, "--container-mount-home"). The ``#SBATCH`` form may not reach the
    step's containers (pyxis version and site): the caller makes that a warning."""
    if not step.container or mounts is None or not HOME_PATH.match(path):
        return None
    on_step = step.option_words.get("no-container-mount-home")
    if on_step is not None:
        return on_step, True
    directive = next((u for u in job.directives.options
                      if u.typed == "--no-container-mount-home"), None)
    return (directive, False) if directive is not None else None
