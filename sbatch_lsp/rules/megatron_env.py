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
- pyxis starts one container per node for a step (its tasks on that node share it), so with one
  task per node each installs into its own container's file system.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from ..diagnostics import Diagnostic
from ..facts.control import job_control
from ..facts.steps import StepFacts, facts_of
from ..facts.wrappers import unwrap
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
    for sf in facts_of(job).steps:
        tasks = sf.layout.tasks
        if tasks is None or tasks <= 1 or sf.step.hidden:
            continue
        for cmd in sf.step.task_commands:
            found = installer(cmd)
            if found is None or ctl.tasks(cmd).guarded or ctl.tasks(cmd).opaque:
                continue
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
    yield finding(
        "SB607", start, end,
        f"every one of the {tasks} tasks runs `{what}`: uv locks the environment, so this is "
        "safe, but each task resolves and waits for the lock in turn (and against a cold cache "
        "each may download the same wheels); " + fix,
        severity=Severity.INFO, related=related)
