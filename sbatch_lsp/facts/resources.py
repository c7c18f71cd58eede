"""GPU resources and GPU work: what the job requests, what `--exclusive` gives, and which
commands use GPUs, in the batch shell or in an srun step's tasks.

Slurm facts:

- Without ``--gpus*``, ``--gres=gpu`` or ``--tres-per-task=gres/gpu`` Slurm allocates no GPU,
  even on a GPU partition (sbatch(1) ``--gpus``, ``--gres``; a site ``job_submit`` plugin may
  add them).
- ``--exclusive``: "the job is allocated all CPUs and GRES on all nodes in the allocation"
  (sbatch(1) ``--exclusive``), so the batch shell sees every GPU of its node; but a step "is
  allocated all of the generic resources that have been requested by the job, except those
  implicitly requested when a job is exclusive" (srun(1) ``--gres``, Slurm 22.05 and later):
  an srun step that requests no GPU gets none, and Slurm sets no ``CUDA_VISIBLE_DEVICES`` for
  it. Whether such a step can still open the devices depends on the site's cgroup
  ``ConstrainDevices`` (cgroup.conf(5)) and on whether its gres.conf lists the GPUs at all
  (without a GRES for them Slurm neither gives nor withholds them); the profile key
  ``constrain-devices`` says (default: not known).
- A GPU count the script reads but never sets (``$NUM_GPUS_PER_NODE``, ``$GPUS``) comes from
  the submitting environment (sbatch's default ``--export=ALL``): whoever sets it decides the
  job's GPUs, usually on the same ``sbatch`` command line (whose options override the file's
  ``#SBATCH`` lines, sbatch(1)).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum

from ..directives import OptionUse
from ..backref import Owner
from ..job import Count, Job, Step
from .layout import parse_count
from ..shell.model import Command, Word
from .wrappers import base, unwrap, wrapped

#: Megatron-LM / NeMo training entry points by file name (data preparation is not training)
GPU_ENTRY = re.compile(r"^(pretrain_\w+|run_recipe|finetune_\w+|megatron_\w+|nemo_\w+)\.py$",
                       re.IGNORECASE)
PREPARATION = re.compile(r"prepare|preprocess|pack|tokeni[sz]e|convert", re.IGNORECASE)
GPU_PARTITION = re.compile(r"gpu|a100|h100|h200|v100|b200|gh200|gb200", re.IGNORECASE)
CPU_PARTITION = re.compile(r"cpu", re.IGNORECASE)
#: Python code that touches CUDA (``python -c "import torch; torch.cuda…"``, ``x.cuda()``)
CUDA_CODE = re.compile(r"torch\.cuda|\.cuda\(\)")
#: a part of an environment module's name that says CUDA (``cuda/12.1``, ``CUDA``,
#: ``TensorFlow/1.11.0-…-cuda-9.1-python3``; not ``cudnn`` nor ``openmpi/…/cuda_aware_gcc``)
CUDA_MODULE_PART = re.compile(r"^cuda\d*$", re.IGNORECASE)
#: what ``--device`` names when it is a GPU
CUDA_DEVICE = re.compile(r"^cuda(:\d+)?$", re.IGNORECASE)
STEP_GPU_OPTIONS = frozenset({"gpus", "gpus-per-node", "gpus-per-task"})


class Strength(IntEnum):
    """How sure a piece of evidence makes GPU work: a name (a partition, a CUDA module), a probe
    that reports GPUs and runs without them (``nvidia-smi``, a container started with ``--nv``),
    a GPU tool or code, a GPU launcher."""

    NAME = 1
    PROBE = 2
    TOOL = 3
    LAUNCHER = 4


@dataclass(frozen=True)
class GpuUse:
    """One piece of evidence of GPU work: the text (character offsets), what it is, how strong,
    and the srun step whose tasks run it (None: the batch shell, or a partition name)."""

    start: int
    end: int
    why: str
    strength: Strength
    step: Step | None


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class GpuResources:
    """The job's GPU request, the steps that ask for their own, ``--exclusive``, the site's
    device confinement and the evidence of GPU work, strongest first."""

    request: OptionUse | None
    steps_request: bool
    exclusive: OptionUse | None
    cpu_partition: bool
    constrain_devices: bool | None
    #: held weakly (the job caches these facts): reading ``uses`` needs the job alive
    job: Owner[Job] = Owner()  # noqa: RUF009  (a descriptor)

    @property
    def uses(self) -> tuple[GpuUse, ...]:
        """The evidence of GPU work, strongest first (read on first use, once per job: a job
        that requests GPUs needs none of it)."""
        return self.job.derived(_uses)

    @property
    def submitted_counts(self) -> tuple[str, ...]:
        """GPU-count variables the script reads and never sets (the submitter's), in order
        (read on first use, once per job)."""
        return self.job.derived(_submitted_counts)

    def gpu_less_steps_use(self) -> list[GpuUse]:
        """The evidence of GPU work inside srun steps that request no GPU themselves."""
        return [u for u in self.uses if u.step is not None and not step_requests_gpus(u.step)]


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class JobCounts:
    """The job's counts as sbatch submits them, each with the directive it comes from:
    ``nodes`` (raised to a ``--nodelist``'s length, lowered to ``--ntasks``: src/sbatch/opt.c
    ``_opt_verify``), ``gpus_per_node`` (``--gpus-per-node``, ``--gres=gpu:N``,
    ``--gpus-per-task`` × tasks per node, ``--gpus`` on one node), ``cpus_per_task``, the
    ``--gpus`` total, and ``tasks_per_gpu``: how many tasks share one GPU on purpose
    (``--gpu-bind=single:K`` binds K tasks to each GPU, ``--ntasks-per-gpu``: sbatch(1))."""

    nodes: Count
    gpus_per_node: Count
    cpus_per_task: Count
    gpus: OptionUse | None
    tasks_per_gpu: int | None


def job_counts(job: Job) -> JobCounts:
    """The :class:`JobCounts` of ``job``."""
    bind = re.match(r"single:(\d+)", job.directives.value("gpu-bind") or "")
    share = int(bind.group(1)) if bind else parse_count(job.directives.value("ntasks-per-gpu"))
    return JobCounts(job.nodes, job.gpus_per_node, job.cpus_per_task, job.directives.get("gpus"),
                     share)


def gpu_resources(job: Job) -> GpuResources:
    """The GPU facts of ``job``, computed once per Job."""
    return job.derived(_build)


def step_requests_gpus(step: Step) -> bool:
    """Whether an srun step asks for GPUs itself (``--gpus*``, ``--gres=gpu…``)."""
    gres = step.options.get("gres")
    # the text when the value is not literal (`--gres=gpu:volta:$NUM_GPU` asks for GPUs too)
    return not STEP_GPU_OPTIONS.isdisjoint(step.options) or \
        gres is not None and "gpu" in (gres.value if gres.value is not None else gres.text)


def _steps_request_gpus(steps: list[Step]) -> bool:
    """Whether some step asks for GPUs itself (a loop, not a generator: asked of every step)."""
    for s in steps:
        if step_requests_gpus(s):
            return True
    return False


def _build(job: Job) -> GpuResources:
    part = job.directives.get("partition")
    return GpuResources(
        request=job.gpu_requested(),
        steps_request=_steps_request_gpus(job.steps),
        exclusive=job.directives.get("exclusive"),
        cpu_partition=part is not None and bool(CPU_PARTITION.search(part.value or "")),
        constrain_devices=job.profile.constrain_devices, job=job)


def _uses(job: Job) -> tuple[GpuUse, ...]:
    part = job.directives.get("partition")
    uses = sorted([*_launcher_uses(job), *_command_uses(job)],
                  key=lambda u: (-u.strength, u.start))
    if part is not None and GPU_PARTITION.search(part.value or ""):  # the weakest: last
        uses.append(GpuUse(part.start, part.end, "a GPU partition alone allocates no GPU",
                           Strength.NAME, None))
    return tuple(uses)


#: a variable named like a GPU count (``NUM_GPUS_PER_NODE``, ``GPUS``, ``N_GPU``, ``NGPUS``)
GPU_COUNT_NAME = re.compile(r"^(?:\w*_)?(?:N|NUM|NB|N_|NUM_)?GPUS?(?:_PER_(?:NODE|TASK))?$",
                            re.IGNORECASE)


def _submitted_counts(job: Job) -> tuple[str, ...]:
    """GPU-count variables read by the batch script (or a command string it runs) that no
    assignment of the script sets and Slurm does not set (``SLURM_*``): values from the
    submitting environment."""
    assigned = {a.name for a in job.script.assignments}
    words = [w for cmd in job.script.walk() for w in cmd.words]
    words += [a.value for a in job.script.assignments if a.value is not None]
    found: dict[str, None] = {}
    for w in words:
        for e in [*w.expansions, *w.early]:
            if e.name and GPU_COUNT_NAME.match(e.name) and e.name not in assigned and \
                    not e.name.startswith("SLURM_") and e.quoting not in ("single", "escaped"):
                found[e.name] = None
    return tuple(found)


def _launcher_uses(job: Job) -> Iterator[GpuUse]:
    """torchrun-style launchers that start GPU workers, and Megatron/NeMo training scripts."""
    for site in job.launches:
        la = site.launch
        if la.kind == "torchrun" and (la.arg("nproc-per-node") or "gpu") != "cpu":
            yield GpuUse(la.anchor.start, la.anchor.end, f"{la.title} starts GPU workers",
                         Strength.LAUNCHER, site.step)
        elif la.kind == "python" and la.program and _gpu_entry(la.program[0]):
            w = la.program[0]
            yield GpuUse(w.start, w.end, "a Megatron/NeMo training entry point",
                         Strength.LAUNCHER, site.step)


def _gpu_entry(w: Word) -> bool:
    name = base(w)
    return bool(GPU_ENTRY.search(name)) and not PREPARATION.search(name)


def _commands(job: Job) -> Iterator[tuple[Command, Step | None]]:
    """Every command with the srun step whose tasks run it (None: the batch shell); srun
    commands themselves are not listed (their task view is)."""
    by_srun = {id(s.command): s for s in job.steps}
    seen: set[int] = set()
    for s in job.steps:
        for c in s.task_commands:
            seen.add(id(c))
            yield c, s
    for cmd in job.script.walk():
        if not cmd.words or id(cmd) in seen or id(cmd) in by_srun:
            continue
        step = None
        for a in cmd.ancestors():  # (none for a batch-script command)
            step = by_srun.get(id(a))
            if step is not None:
                break
        yield cmd, step


def _command_uses(job: Job) -> Iterator[GpuUse]:
    """GPU tools and code, one predicate per word: ``nvidia-smi``, CUDA in Python code,
    ``--device cuda``, a container started with GPU access, a CUDA module loaded."""
    for cmd, step in _commands(job):
        # the command as written (a container wrapper such as `singularity exec --nv` is GPU
        # evidence itself), then what it runs through its wrappers
        found = _word_tool(cmd.words)
        if found is None and wrapped(cmd.words):  # (else unwrapping gives the same words)
            found = _word_tool(unwrap(cmd.words))
        if found is not None:
            w, why, strength = found
            yield GpuUse(w.start, w.end, why, strength, step)


#: the commands :func:`_tool` judges by their name; any other command is a GPU use only with
#: ``cuda`` or ``--device`` in a word
NAMED_TOOLS = frozenset({"nvidia-smi", "singularity", "apptainer", "docker", "podman", "module",
                         "ml"})


def _word_tool(words: list[Word]) -> tuple[Word, str, Strength] | None:
    """:func:`_tool` of the command ``words`` (None for no words), without building the word
    values that :func:`_tool` reads for most commands (no tool name, no such word)."""
    if not words:
        return None
    name = base(words[0])
    if name not in NAMED_TOOLS:
        for w in words:
            v = w.value if w.value is not None else w.text
            if "cuda" in v or "--device" in v:
                break
        else:
            return None  # (most commands: _tool's own test of the joined values fails)
    return _tool(name, words, [w.value if w.value is not None else w.text for w in words])


def _tool(name: str, words: list[Word], values: list[str]) -> tuple[Word, str, Strength] | None:
    if name == "nvidia-smi":
        return words[0], "nvidia-smi", Strength.PROBE
    if name in ("singularity", "apptainer") and "--nv" in values:
        # --nv binds the host's GPU libraries when there are GPUs, and warns when there are none
        return words[0], "starts a container with GPU access", Strength.PROBE
    if name in ("docker", "podman") and values[1:2] == ["run"] and \
            any(v.startswith(("--gpus", "--device=nvidia")) for v in values):
        return words[0], "starts a container with GPU access", Strength.TOOL
    if name in ("module", "ml"):
        loads = values[2:] if values[1:2] in (["load"], ["add"]) else \
            values[1:] if name == "ml" else []
        if any(CUDA_MODULE_PART.match(part) for v in loads for part in re.split(r"[-/.]", v)):
            return words[0], "loads CUDA", Strength.NAME
        return None
    joined = "\0".join(values)
    if "cuda" not in joined and "--device" not in joined:
        return None  # (most commands: what each check below needs is in no word)
    for k, v in enumerate(values):
        if CUDA_CODE.search(v):
            return words[k], "uses CUDA", Strength.TOOL
        if v == "--device" and k + 1 < len(values) and CUDA_DEVICE.match(values[k + 1]) or \
                v.startswith("--device=") and CUDA_DEVICE.match(v.split("=", 1)[1]):
            return words[k], "uses CUDA", Strength.TOOL
    return None
