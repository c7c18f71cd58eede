"""``sbatch-lint show FILE``: the job as Slurm will run it (DESIGN.md "Interfaces").

Per heterogeneous-job component its resources; per srun step, in script order, its nodes,
tasks, tasks per node, GPUs, container, launcher, world size, ranks per node, the task ids on
each node, and the batch-shell variables with whether they reach its tasks. Unknown is null,
never guessed. A file that is no job script (empty, or with neither an ``#SBATCH`` line nor
a .sbatch/.slurm name: a README, a Python file) is said to be none, with no resources. Exit 0 (for a file that is no job script too, as the linter's exit 0 for named files
that are none), or 2 for unreadable input or bad usage.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import Config, ConfigError, find_config, load_file
from ..files import MAX_BYTES
from ..job import Job
from ..secrets import Masker, credential_name, credential_values, mask
from ..source import BinaryInputError, decode_with_encoding, is_job_script, os_reason, read_bounded
from .layout import Component, gpu_count
from .steps import StepFacts, facts_of

#: 2: ``not_a_job_script`` added (components and steps are empty when it is set)
SCHEMA_VERSION = 2


def not_a_job_script(job: Job) -> str | None:
    """Why the file is no job script (one sentence), or None when it is one.

    sbatch refuses an empty or whitespace-only script ("Batch script is empty!", "Batch script
    contains only whitespace!": ``_get_script_buffer`` in Slurm's ``src/sbatch/sbatch.c``).
    A file the linter skips (:func:`~sbatch_lsp.source.is_job_script`: no ``#SBATCH``-like line
    and no .sbatch/.slurm name) is none either, and neither is one whose only ``sbatch``-like
    lines are prose (a README's ``# sbatch-lsp`` heading): no directive sbatch reads, no srun
    step, no ``#!`` line and no .sbatch/.slurm name."""
    text, path = job.source.text, job.source.path
    if not text:
        return "the file is empty (sbatch refuses it: \"Batch script is empty!\")"
    if not text.strip():
        return ("the file holds only whitespace (sbatch refuses it: \"Batch script contains "
                "only whitespace!\")")
    if not is_job_script(text, path):
        return ("no #SBATCH line and not named *.sbatch or *.slurm (sbatch-lint neither lints "
                "nor shows it)")
    named = path.lower().endswith((".sbatch", ".slurm"))
    if named or text.lstrip("\ufeff \t\r\n").startswith("#!") or job.directives.lines or \
            job.directives.late_lines or facts_of(job).steps:
        return None
    return "no #SBATCH directive, no srun step, no #! line and not named *.sbatch or *.slurm"


def show_object(job: Job) -> dict[str, Any]:
    """The ``show --format json`` object: ``schema_version``, ``not_a_job_script`` (null, or
    why the file is none: then ``components`` and ``steps`` are empty), ``components`` and
    ``steps`` (every key always present; null when unknown or not applicable). A variable's value that
    holds a detected secret, or any value of a credential-named variable, is masked."""
    facts = facts_of(job)
    masker = Masker.of(job.source.text, credential_values(job))

    def shown(name: str, value: str | None) -> str | None:
        if value is None:
            return None
        return mask(value) if credential_name(name) else masker.text(value)

    why = not_a_job_script(job)
    if why is not None:
        return {"schema_version": SCHEMA_VERSION, "not_a_job_script": why, "components": [],
                "steps": []}
    return {
        "schema_version": SCHEMA_VERSION,
        "not_a_job_script": None,
        "components": [{
            "nodes": c.nodes.value, "tasks": c.tasks, "tasks_per_node": c.tasks_per_node,
            "gpus_per_node": c.gpus_per_node, "partition": shown("", c.partition),
            "time": c.time,
        } for c in facts.components],
        "steps": [_step_object(s, shown) for s in facts.steps],
    }


def _step_object(s: StepFacts, shown: Callable[[str, str | None], str | None]) -> dict[str, Any]:
    lay = s.layout
    return {
        "line": s.line, "nodes": lay.nodes, "tasks": lay.tasks,
        "tasks_per_node": lay.tasks_per_node, "gpus_per_node": s.gpus_per_node,
        "gpus_per_task": s.gpus_per_task, "container": shown("", s.container),
        "launcher": s.launcher,
        "world_size": s.world_size, "ranks_per_node": s.ranks_per_node,
        "placement": None if lay.placement is None else [
            {"node_index": i, "procids": ids} for i, ids in enumerate(lay.placement)],
        "env": {name: {"scope": v.scope.label, "exported": v.exported,
                       "value": shown(name, v.value)}
                for name, v in sorted(s.env.items())},
    }


def _n(v: object) -> str:
    return "?" if v is None else str(v)


def show_text(job: Job, path: str) -> str:
    """A readable rendering of the same facts."""
    obj, facts = show_object(job), facts_of(job)
    if obj["not_a_job_script"] is not None:
        return f"{path}: not a job script: {obj['not_a_job_script']}\n"
    out = [f"{path}:"]
    for k, (c, comp) in enumerate(zip(obj["components"], facts.components, strict=True)):
        name = f"component {k}" if len(obj["components"]) > 1 else "job"
        out.append(f"  {name}: {_n(c['nodes'])} node(s), {_n(c['tasks'])} task(s), "
                   f"{_n(c['tasks_per_node'])} per node, {_n(c['gpus_per_node'])} GPU(s) per "
                   f"node, partition {_n(c['partition'])}, time {_n(c['time'])}")
        why = nodes_unknown(comp)
        if why:
            out.append(f"    node count unknown: {why}")
    if not obj["steps"]:
        out.append("  no srun steps")
    for s, f in zip(obj["steps"], facts.steps, strict=True):
        if f.layout.refused:
            out.append(f"  line {s['line']}: srun step: {f.layout.refused}")
            continue
        out.append(f"  line {s['line']}: srun step: {_n(s['nodes'])} node(s) x "
                   f"{_n(s['tasks_per_node'])} task(s) per node = {_n(s['tasks'])} task(s) "
                   f"({f.layout.note}); GPUs per node {_n(s['gpus_per_node'])}")
        if s["launcher"]:
            out.append(f"    launcher {s['launcher']}: world size {_n(s['world_size'])}, "
                       f"{_n(s['ranks_per_node'])} rank(s) per node")
        if s["container"]:
            out.append(f"    container {s['container']}")
        if s["placement"]:
            out.append("    placement: " + "; ".join(
                f"node {p['node_index']}: {_ranges(p['procids'])}" for p in s["placement"]))
        reach = [f"{k} ({v['scope']})" for k, v in s["env"].items() if v["exported"]]
        kept = [k for k, v in s["env"].items() if not v["exported"]]
        if reach:
            out.append("    reaches the tasks: " + ", ".join(reach))
        if kept:
            out.append("    not exported (unset in the tasks): " + ", ".join(kept))
    return "\n".join(out) + "\n"


def nodes_unknown(c: Component) -> str | None:
    """Why a component's node count is unknown (None when it is known): without ``--nodes``
    sbatch allocates "enough nodes to satisfy the requested resources as expressed by per-job
    specification options, e.g. -n, -c and --gpus" (sbatch(1) ``--nodes``), which the site's
    CPUs and GPUs per node decide."""
    if c.nodes.value is not None:
        return None
    if c.nodes.given:
        return f"--nodes={c.options['nodes'].value} is not a node count"
    asked = [f"--{k}={c.options[k].value}" for k in ("ntasks", "gpus", "nodelist")
             if k in c.options]
    if "gpus" in c.options and gpu_count(c.options["gpus"].value) is None:
        return f"--gpus={c.options['gpus'].value} is not a GPU count"
    return (f"no --nodes: sbatch allocates enough nodes for {' and '.join(asked)} "
            "(sbatch(1) --nodes), which depends on the site's nodes")


def _ranges(ids: list[int]) -> str:
    if len(ids) > 2 and ids == list(range(ids[0], ids[-1] + 1)):
        return f"tasks {ids[0]}-{ids[-1]}"
    return "tasks " + ",".join(map(str, ids))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sbatch-lint show",
        description="Print the job as Slurm will run it: per component its resources, per srun "
                    "step its layout, placement, launcher and the variables reaching its tasks.")
    p.add_argument("file", help="the job script ('-' reads standard input)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--config", metavar="PATH", help="use this configuration file")
    return p


def _read(path: str) -> str:
    return decode_with_encoding(read_bounded(path, MAX_BYTES))[0]


def job_for(text: str, path: str, config: Config | None = None) -> Job:
    """The Job of one script's text, which holds its facts (``facts_of``; the ``show``
    command's engine, also the MCP tool's)."""
    from ..lint import job_of

    return job_of(text, path, config or Config())


def main(argv: list[str]) -> int:
    """``sbatch-lint show [--format text|json] [--config PATH] FILE``; returns the exit code
    (argparse exits with 0 for ``--help`` and 2 for bad usage)."""
    args = _parser().parse_args(argv)
    try:
        text = _read(args.file)
    except (OSError, BinaryInputError, UnicodeDecodeError) as exc:
        reason = os_reason(exc) if isinstance(exc, OSError) else exc
        print(f"sbatch-lint show: cannot read {args.file}: {reason}", file=sys.stderr)
        return 2
    try:
        found = Path(args.config) if args.config else \
            find_config(Path(args.file if args.file != "-" else "."))
        config = load_file(found) if found is not None else Config()
    except (ConfigError, OSError) as exc:
        print(f"sbatch-lint show: {exc}", file=sys.stderr)
        return 2
    job = job_for(text, args.file, config)
    if args.format == "json":
        sys.stdout.write(json.dumps(show_object(job), indent=2) + "\n")
    else:
        sys.stdout.write(show_text(job, args.file))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
