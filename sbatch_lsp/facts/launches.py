"""Launch specs: every launcher the job starts (torchrun and friends, mpirun, a plain Python entry
point), where it runs and how many of it run.

A launcher runs either in the tasks of an srun step (:class:`steps.StepFacts`) or in the batch
shell, which runs once, on the first node of the allocation (sbatch(1): "When the job allocation
is finally granted for the batch script, Slurm runs a single copy of the batch script on the
first node in the set of allocated nodes"). A launcher behind a task-id guard the batch shell
fails (the ``else`` of ``if [ "$SLURM_PROCID" -eq 0 ]``) never runs there (facts/control.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..job import Job
from ..launchers import Launch
from ..shell.model import Command
from .control import job_control
from .layout import parse_count
from .steps import EnvVar, StepFacts, facts_of, shell_variable


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class LaunchSpec:
    """One launcher: the typed ``launch`` (kind, flavour, normalised args, program), the
    ``command`` that runs it, the srun ``step`` whose tasks run it (None: the batch shell),
    and whether the batch shell itself reaches it (``batch_shell``: no step, not inside a
    command substitution, and every task-id guard around it admits task 0)."""

    launch: Launch
    command: Command
    step: StepFacts | None
    batch_shell: bool

    @property
    def nproc_per_node(self) -> int | None:
        """A literal ``--nproc-per-node`` (torchrun's name; deepspeed's ``--num_gpus``), else
        None (not given, not literal, or ``gpu``/``auto``)."""
        w = self.launch.args.get("nproc-per-node")
        return parse_count(w.value) if w is not None and w.value else None

    def env(self, job: Job, name: str) -> EnvVar | None:
        """Variable ``name`` as the launcher's environment has it: what reaches the step's
        tasks (:attr:`StepFacts.env`; ``exported``: it reaches them), or for a launcher the
        batch shell runs, the batch shell's variable just before it (``exported``: the shell
        exports it). None when the script gives it none."""
        if self.step is not None:
            return self.step.env.get(name)
        return shell_variable(job, name, self.command.top().start)


def launch_specs(job: Job) -> list[LaunchSpec]:
    """The job's launchers in script order, computed once per job."""
    result: list[LaunchSpec] = job.derived(_build)
    return result


def _build(job: Job) -> list[LaunchSpec]:
    facts = facts_of(job)
    control = job_control(job)
    out = []
    for site in job.launches:
        step = facts.of(site.step)
        batch = site.step is None and not site.command.in_substitution and \
            control.tasks(site.command).in_batch_shell()
        out.append(LaunchSpec(site.launch, site.command, step, batch))
    return out
