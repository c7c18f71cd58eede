"""The layout differential (issue 10 item 4): generated batch scripts run on the slurm tier, each
srun step's tasks reporting where they run and which variables reached them, compared with what
``sbatch-lint show --format json`` predicts for the same script (DESIGN.md "Interfaces").

- :func:`scripts` generates the scripts: job layouts (``--nodes``/``--ntasks``/
  ``--ntasks-per-node`` in every combination the two 4-CPU nodes hold, heterogeneous jobs) times
  step layouts (the same options on srun), and environment forms (exported and unexported
  variables, ``export``/``declare -x``/``set -a``/``export -n``/``unset``, prefix assignments,
  ``env``, srun's and sbatch's ``--export`` forms).
- :func:`observe` parses a finished job's output (layout_probe.py's ``LAYOUT`` lines, one per
  task, and the ``STEP k`` markers the batch shell prints before each srun) into per-step
  observations in the shape ``show`` uses: ``nodes``, ``tasks``, ``tasks_per_node`` (a number, or
  a per-node list when uneven), ``placement`` (``[{node_index, procids}]``, the node index being
  ``SLURM_NODEID``) and ``env`` (the ``PROBE_*`` variables each task saw).
- :func:`compare` sets a ``show`` object beside the observations, field by field: agree,
  differ, or unknown (``show`` said null, or does not name the variable).
- Some steps carry ``expect``: what Slurm's documentation says must happen (srun.1, sbatch.1 of
  22.05). Those are checked against the cluster whatever ``show`` says, so the Slurm facts the
  engine encodes are proven here even before ``show`` exists.
"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: a variable every job's submit environment carries (sbatch --export=ALL passes it on)
SUBMIT_ENV = {"PROBE_SUBMIT": "from-submit-host"}
FIELDS = ("nodes", "tasks", "tasks_per_node", "placement")


@dataclass(frozen=True)
class Step:
    """One srun: its options, a prefix before ``srun`` (``PROBE_PREFIX=e``, ``env X=1``), lines
    the batch shell runs just before it, and what Slurm's manual says it must show (keys of
    :func:`observe`'s step dict; ``env`` maps a name to its value, or None for absent)."""

    options: str = ""
    prefix: str = ""
    before: tuple[str, ...] = ()
    expect: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Script:
    """A generated batch script: directive lines (without ``#SBATCH``; ``hetjob`` separates
    components), lines run before the first step, and its steps."""

    name: str
    directives: tuple[str, ...]
    steps: tuple[Step, ...]
    prelude: tuple[str, ...] = ()

    def text(self, python: str, probe: str) -> str:
        """The script, running the probe with absolute paths (``--export=NONE`` drops PATH)."""
        out = ["#!/bin/bash", *(f"#SBATCH {d}" for d in self.directives), "", *self.prelude]
        for k, s in enumerate(self.steps):
            out += [*s.before, f'echo "STEP {k}"']
            srun = " ".join(x for x in (s.prefix, "srun", s.options) if x)
            out.append(f"{srun} {python} {probe} {self.name} {k}")
        return "\n".join(out) + "\n"


# -- the generator ---------------------------------------------------------------------------------

#: job layouts on two nodes of 4 CPUs: directive lines
JOB_LAYOUTS: dict[str, tuple[str, ...]] = {
    "n2-tpn2": ("--nodes=2", "--ntasks-per-node=2"),
    "n2-t3": ("--nodes=2", "--ntasks=3"),
    "n2-t4": ("--nodes=2", "--ntasks=4"),
    "n2-t5": ("--nodes=2", "--ntasks=5"),
    "n2": ("--nodes=2",),
    "n2-tpn1": ("--nodes=2", "--ntasks-per-node=1"),
    "n1-t4": ("--nodes=1", "--ntasks=4"),
    "t4": ("--ntasks=4",),
    "t6": ("--ntasks=6",),
    "tpn3": ("--ntasks-per-node=3",),
    "n2-t2-c2": ("--nodes=2", "--ntasks=2", "--cpus-per-task=2"),
    "n2-t6-tpn3": ("--nodes=2", "--ntasks=6", "--ntasks-per-node=3"),
    "n1": ("--nodes=1",),
    "n2-t4-cyclic": ("--nodes=2", "--ntasks=4", "--distribution=cyclic"),
}
#: step layouts: srun options
STEP_LAYOUTS = (
    "",
    "--ntasks-per-node=1",
    "--nodes=1",
    "--ntasks=1",
    "--nodes=2 --ntasks=2 --ntasks-per-node=1",
    "-n 2",
    "-N 1 -n 2",
    "--ntasks=3",
    "--nodes=2 --ntasks=3",
    "--nodes=2 --ntasks-per-node=1",
    "--distribution=cyclic",
    "--ntasks=2 --distribution=cyclic",
)


def _layout_scripts() -> list[Script]:
    out = []
    for j, (name, directives) in enumerate(JOB_LAYOUTS.items()):
        # every job runs the plain step and three others, rotating through the step layouts
        picks = [STEP_LAYOUTS[0]] + [STEP_LAYOUTS[1 + (j * 3 + i) % (len(STEP_LAYOUTS) - 1)]
                                     for i in range(3)]
        out.append(Script(f"layout-{name}", directives, tuple(Step(o) for o in picks)))
    return out


def _facts_scripts() -> list[Script]:
    """The layout facts DESIGN.md and the rule pages rest on, each with what Slurm's manual says."""
    return [
        # srun.1 (22.05): a step inherits the job's task count; --ntasks-per-node alone "can't
        # honor ... Ignoring --ntasks-per-node" (SB201's page quotes the warning)
        Script("fact-lone-tpn1", ("--nodes=2", "--ntasks-per-node=2"), (
            Step(expect={"tasks": 4, "tasks_per_node": 2}),
            Step("--ntasks-per-node=1", expect={"tasks": 4, "tasks_per_node": 2}),
            Step("--nodes=2 --ntasks=2 --ntasks-per-node=1",
                 expect={"tasks": 2, "tasks_per_node": 1}),
        )),
        # srun -N n --ntasks-per-node=1 is ignored on 22.05 (honoured from 23.02.5)
        Script("fact-n-tpn1", ("--nodes=2", "--ntasks-per-node=2"), (
            Step("--nodes=2 --ntasks-per-node=1", expect={"tasks": 4, "tasks_per_node": 2}),
        )),
        # srun.1: a step asking fewer tasks than the job's nodes runs on fewer nodes ("can't run
        # 1 processes on 2 nodes, setting nnodes to 1")
        Script("fact-one-task", ("--nodes=2", "--ntasks-per-node=2"), (
            Step("--ntasks=1", expect={"tasks": 1, "nodes": 1}),
        )),
        # --ntasks without --ntasks-per-node: the block distribution fills the first node
        Script("fact-uneven", ("--nodes=2", "--ntasks=3"), (
            Step(expect={"tasks": 3, "tasks_per_node": [2, 1],
                         "placement": [{"node_index": 0, "procids": [0, 1]},
                                       {"node_index": 1, "procids": [2]}]}),
            Step("--distribution=cyclic",
                 expect={"tasks": 3, "placement": [{"node_index": 0, "procids": [0, 2]},
                                                   {"node_index": 1, "procids": [1]}]}),
        )),
    ]


def _het_scripts() -> list[Script]:
    """Heterogeneous jobs (sbatch.1 "HETEROGENEOUS JOB SUPPORT"): a step without --het-group
    runs in component 0; ``--het-group=0,1`` spans both, task ids counting across them."""
    het = ("--nodes=1", "--ntasks=1", "hetjob", "--nodes=1", "--ntasks=2")
    het2 = ("--nodes=1", "--ntasks-per-node=2", "hetjob", "--nodes=1", "--ntasks=1")
    return [
        Script("het-default", het, (Step(), Step("--het-group=1"), Step("--het-group=0,1"))),
        Script("het-groups", het2, (Step("--het-group=0"), Step("--het-group=1"),
                                    Step("--het-group=0,1"))),
        Script("het-step-n", het, (Step("--het-group=1 --ntasks=1"),
                                   Step("--het-group=1 --ntasks-per-node=1"))),
        Script("het-env", het, (Step("--het-group=0,1"),), ("export PROBE_EXP=het",)),
    ]


#: environment forms: (name, lines before the steps, steps); every form runs under two layouts
ENV_FORMS: list[tuple[str, tuple[str, ...], tuple[Step, ...]]] = [
    ("exported-vs-local", ("export PROBE_EXP=a", "PROBE_LOCAL=b"), (
        Step(expect={"env": {"PROBE_EXP": "a", "PROBE_LOCAL": None,
                             "PROBE_SUBMIT": SUBMIT_ENV["PROBE_SUBMIT"]}}),)),
    ("srun-export-none", ("export PROBE_EXP=a",), (
        Step("--export=NONE", expect={"env": {"PROBE_EXP": None, "PROBE_SUBMIT": None}}),)),
    ("srun-export-names", ("export PROBE_EXP=a", "export PROBE_OTHER=o", "PROBE_LOCAL=b"), (
        Step("--export=PROBE_EXP", expect={"env": {"PROBE_EXP": "a", "PROBE_OTHER": None}}),
        Step("--export=PROBE_LOCAL", expect={"env": {"PROBE_LOCAL": None}}),)),
    ("srun-export-all-plus", ("export PROBE_EXP=a",), (
        Step("--export=ALL,PROBE_NEW=d", expect={"env": {"PROBE_EXP": "a", "PROBE_NEW": "d"}}),
        # srun.1 (22.05.8): with ALL, "all user environment variables will be loaded and will
        # take precedence over any explicitly given environment variables"
        Step("--export=ALL,PROBE_EXP=override", expect={"env": {"PROBE_EXP": "a"}}),)),
    ("srun-export-value", ("PROBE_LOCAL=b",), (
        Step("--export=PROBE_LOCAL=x", expect={"env": {"PROBE_LOCAL": "x",
                                                      "PROBE_SUBMIT": None}}),)),
    ("prefix-assignment", (), (
        Step(prefix="PROBE_PREFIX=e", expect={"env": {"PROBE_PREFIX": "e"}}),
        Step(expect={"env": {"PROBE_PREFIX": None}}),)),
    ("env-wrapper", (), (
        Step(prefix="env PROBE_ENVW=w", expect={"env": {"PROBE_ENVW": "w"}}),)),
    ("declare-x", ("declare -x PROBE_DECL=x", "declare PROBE_PLAIN=p"), (
        Step(expect={"env": {"PROBE_DECL": "x", "PROBE_PLAIN": None}}),)),
    ("export-later", ("PROBE_LATE=l",), (
        Step(expect={"env": {"PROBE_LATE": None}}),
        Step(before=("export PROBE_LATE",), expect={"env": {"PROBE_LATE": "l"}}),)),
    ("set-a", ("set -a", "PROBE_AUTO=auto", "set +a", "PROBE_AFTER=no"), (
        Step(expect={"env": {"PROBE_AUTO": "auto", "PROBE_AFTER": None}}),)),
    ("unexport", ("export PROBE_EXP=a", "export PROBE_GONE=g"), (
        Step(before=("export -n PROBE_EXP", "unset PROBE_GONE"),
             expect={"env": {"PROBE_EXP": None, "PROBE_GONE": None}}),)),
    ("reassigned", ("export PROBE_EXP=first",), (
        Step(before=("PROBE_EXP=second",), expect={"env": {"PROBE_EXP": "second"}}),)),
    ("batch-host-value", ('export PROBE_HOST="$(hostname)"',
                          'export PROBE_NODEID="$SLURM_NODEID"'), (
        Step(expect={"env": {"PROBE_HOST": "node1", "PROBE_NODEID": "0"}}),)),
    ("function-export", ("set_env() {", "  export PROBE_FN=f", "}", "set_env"), (
        Step(expect={"env": {"PROBE_FN": "f"}}),)),
]
#: sbatch's own --export forms (sbatch.1): what reaches the batch shell, and through
#: SLURM_EXPORT_ENV, the steps
SBATCH_EXPORT_FORMS: list[tuple[str, str, tuple[str, ...], tuple[Step, ...]]] = [
    ("sbatch-export-none", "--export=NONE", ("export PROBE_EXP=a",), (
        Step(expect={"env": {"PROBE_EXP": None, "PROBE_SUBMIT": None}}),
        Step("--export=ALL", expect={"env": {"PROBE_EXP": "a", "PROBE_SUBMIT": None}}),)),
    # the steps inherit sbatch's export list through SLURM_EXPORT_ENV (sbatch.1 --export: "To
    # avoid steps inheriting environment export settings ... SLURM_EXPORT_ENV should be set to
    # ALL"), so a variable the script exports does not reach them
    ("sbatch-export-name", "--export=PROBE_SUBMIT", ("export PROBE_EXP=a",), (
        Step(expect={"env": {"PROBE_SUBMIT": SUBMIT_ENV["PROBE_SUBMIT"], "PROBE_EXP": None}}),)),
    ("sbatch-export-value", "--export=ALL,PROBE_SB=v", (), (
        Step(expect={"env": {"PROBE_SB": "v"}}),)),
    ("sbatch-export-none-env-all", "--export=NONE", ("export PROBE_EXP=a",
                                                     "export SLURM_EXPORT_ENV=ALL"), (
        Step(expect={"env": {"PROBE_EXP": "a"}}),)),
]
ENV_LAYOUTS = {"n2-tpn1": ("--nodes=2", "--ntasks-per-node=1"),
               "n2-t3": ("--nodes=2", "--ntasks=3"),
               "n1-t2": ("--nodes=1", "--ntasks=2")}


def _env_scripts() -> list[Script]:
    out = []
    for lay, directives in ENV_LAYOUTS.items():
        for name, prelude, steps in ENV_FORMS:
            out.append(Script(f"env-{name}-{lay}", directives, steps, prelude))
        for name, export, prelude, steps in SBATCH_EXPORT_FORMS:
            out.append(Script(f"{name}-{lay}", (*directives, export), steps, prelude))
    return out


def scripts() -> list[Script]:
    """Every generated script, names unique."""
    out = _layout_scripts() + _facts_scripts() + _het_scripts() + _env_scripts()
    assert len({s.name for s in out}) == len(out)
    return out


# -- observations ----------------------------------------------------------------------------------

LAYOUT_LINE = re.compile(r"^LAYOUT (\{.*\})$", re.MULTILINE)
STEP_LINE = re.compile(r"^STEP (\d+)$", re.MULTILINE)


def per_node(counts: dict[int, int]) -> int | list[int] | None:
    """``tasks_per_node`` as show writes it: one number when every node has the same count,
    else the counts in node order."""
    if not counts:
        return None
    values = [counts[n] for n in sorted(counts)]
    return values[0] if len(set(values)) == 1 else values


def observe(script: Script, output: str) -> list[dict[str, Any]]:
    """Per step of *script*: ``ran`` (a task reported), ``nodes``, ``tasks``, ``tasks_per_node``,
    ``placement``, ``env`` (name -> value when every task saw the same value, else the list of
    values by procid; a name no task saw is absent) and ``errors`` (srun's own lines)."""
    records = [json.loads(m.group(1)) for m in LAYOUT_LINE.finditer(output)]
    marks = [(m.start(), int(m.group(1))) for m in STEP_LINE.finditer(output)]
    out = []
    for k in range(len(script.steps)):
        tasks = sorted((r for r in records if r["script"] == script.name and r["step"] == k),
                       key=lambda r: r["procid"] if r["procid"] is not None else -1)
        start = next((at for at, n in marks if n == k), None)
        end = next((at for at, n in marks if n == k + 1), len(output))
        errors = [] if start is None else [
            ln for ln in output[start:end].splitlines() if ln.startswith("srun:")]
        by_node: dict[int, list[int]] = {}
        for r in tasks:
            by_node.setdefault(r["nodeid"], []).append(r["procid"])
        names = sorted({n for r in tasks for n in r["vars"]})
        env: dict[str, Any] = {}
        for n in names:
            seen = [r["vars"].get(n) for r in tasks]
            env[n] = seen[0] if len(set(seen)) == 1 else seen
        out.append({
            "ran": bool(tasks), "tasks": len(tasks) or None,
            "nodes": len(by_node) or None,
            "tasks_per_node": per_node({n: len(p) for n, p in by_node.items()}),
            "placement": [{"node_index": n, "procids": sorted(p)}
                          for n, p in sorted(by_node.items())] or None,
            "hosts": sorted({r["host"] for r in tasks}),
            "env": env, "errors": errors,
        })
    return out


def unmet_expectations(script: Script, observed: list[dict[str, Any]]) -> list[str]:
    """Where the cluster did not do what the manual says (each Step's ``expect``)."""
    bad = []
    for k, (step, obs) in enumerate(zip(script.steps, observed, strict=True)):
        for key, want in step.expect.items():
            if key == "env":
                for name, value in want.items():
                    if obs["env"].get(name) != value:
                        bad.append(f"{script.name} step {k}: {name}={obs['env'].get(name)!r}, "
                                   f"the manual says {value!r}")
            elif obs[key] != want:
                bad.append(f"{script.name} step {k}: {key}={obs[key]!r}, the manual says {want!r}")
    return bad


# -- the comparison with show ------------------------------------------------------------------------

def show_json(path: Path) -> dict[str, Any] | None:
    """What ``sbatch-lint show --format json PATH`` prints, or None when this build has no
    ``show`` subcommand yet. Run in this process (the CLI's own ``main``: the same argv, the
    same output) to spare a Python start-up per script."""
    import contextlib
    import io

    from sbatch_lsp import cli

    if "show" not in cli.SUBCOMMANDS:
        return None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["show", "--format", "json", str(path)])
    assert code == 0, f"sbatch-lint show {path} exited {code}"
    obj = json.loads(out.getvalue())
    assert isinstance(obj, dict) and "steps" in obj, obj
    return obj


@dataclass
class Tally:
    """Agreement between show's predictions and the cluster, per field."""

    agree: Counter = field(default_factory=Counter)
    differ: Counter = field(default_factory=Counter)
    unknown: Counter = field(default_factory=Counter)
    differences: list[dict[str, Any]] = field(default_factory=list)

    def line(self) -> str:
        keys = [*FIELDS, "env"]
        total_a = sum(self.agree.values())
        total = total_a + sum(self.differ.values())
        parts = [f"{k} {self.agree[k]}/{self.agree[k] + self.differ[k]}"
                 + (f" (+{self.unknown[k]} null)" if self.unknown[k] else "") for k in keys]
        return f"show vs cluster: {total_a}/{total} predictions agree; " + ", ".join(parts)


def compare(script: Script, predicted: dict[str, Any], observed: list[dict[str, Any]],
            tally: Tally) -> None:
    """Add each step's fields to *tally*: ``show``'s ``steps[k]`` against the cluster's step k.
    A step show does not list, or lists more of, is a difference in ``tasks``."""
    steps = predicted.get("steps") or []
    for k, obs in enumerate(observed):
        if k >= len(steps):
            tally.differ["tasks"] += 1
            tally.differences.append({"script": script.name, "step": k, "field": "steps",
                                      "show": None, "cluster": "a step ran"})
            continue
        pred = steps[k]
        for f in FIELDS:
            if pred.get(f) is None:
                tally.unknown[f] += 1
            elif pred[f] == obs[f]:
                tally.agree[f] += 1
            else:
                tally.differ[f] += 1
                tally.differences.append({"script": script.name, "step": k, "field": f,
                                          "show": pred[f], "cluster": obs[f]})
        env = pred.get("env") or {}
        names = {n for n in env if n.startswith("PROBE_")} | set(obs["env"])
        for n in sorted(names):
            p = env.get(n)
            if p is None or p.get("exported") is None:
                tally.unknown["env"] += 1
                continue
            seen = obs["env"].get(n)
            ok = (seen is not None) == bool(p["exported"]) and (
                not p["exported"] or p.get("value") is None or p["value"] == seen)
            if ok:
                tally.agree["env"] += 1
            else:
                tally.differ["env"] += 1
                tally.differences.append({"script": script.name, "step": k, "field": f"env.{n}",
                                          "show": p, "cluster": seen})
    if len(steps) > len(observed):
        tally.differ["tasks"] += len(steps) - len(observed)


# -- running them ----------------------------------------------------------------------------------

def run_all(cluster: Any, workdir: Path, bound: float = 120) -> list[tuple[Script, Any, Path]]:
    """Write and run every script on *cluster* (a started slurm_cluster.Cluster), one job at a
    time so that no other job takes CPUs a layout depends on; return (script, Job, path)."""
    workdir.mkdir(parents=True, exist_ok=True)
    probe = workdir / "layout_probe.py"
    probe.write_text((HERE / "layout_probe.py").read_text())
    done = []
    for s in scripts():
        path = workdir / f"{s.name}.sbatch"
        path.write_text(s.text(sys.executable, str(probe)))
        job = cluster.run(path, workdir, bound, extra_env=SUBMIT_ENV)
        done.append((s, job, path))
    return done


def report(done: list[tuple[Script, Any, Path]]) -> dict[str, Any]:
    """Observations, unmet expectations and the show comparison of a finished run."""
    tally, observations, unmet, no_show = Tally(), {}, [], []
    for s, job, path in done:
        observed = observe(s, job.output)
        observations[s.name] = {"state": job.state, "exit": job.exit_code, "steps": observed}
        unmet += unmet_expectations(s, observed)
        predicted = show_json(path)
        if predicted is None:
            no_show.append(s.name)
        else:
            compare(s, predicted, observed, tally)
    return {"scripts": len(done), "steps": sum(len(s.steps) for s, _, _ in done),
            "observations": observations, "unmet": unmet, "no_show": no_show,
            "agreement": tally.line(), "differences": tally.differences}


if __name__ == "__main__":  # run on a fresh cluster: python layouts.py OUT.json (as root)
    import tempfile
    import time

    sys.path.insert(0, str(HERE))
    from slurm_cluster import Cluster

    with tempfile.TemporaryDirectory(prefix="sbatch-lsp-layouts-") as d:
        c = Cluster(Path(d) / "cluster").start()
        try:
            t0 = time.monotonic()
            result = report(run_all(c, Path(d) / "jobs"))
            result["seconds"] = round(time.monotonic() - t0, 1)
        finally:
            print("left:", c.stop())
    Path(sys.argv[1]).write_text(json.dumps(result, indent=1))
    print(result["scripts"], result["steps"], result["seconds"], result["agreement"])
    print("\n".join(result["unmet"]))
