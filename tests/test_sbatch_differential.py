"""Differential test: sbatch-lint against the real sbatch 22.05 on a generated corpus.

The real ``sbatch`` (Debian's slurm-client, installed by .ci/setup.d/20-slurm-client.sh) runs
with a parse-only configuration and no controller (tests/data/slurm-offline.conf;
notes/real-clients.md §5): a script that reaches "Unable to contact slurm controller" passed
every client-side check. sbatch-lint runs with ``slurm-version = "22.05"`` and no pyxis. Error
classes are compared, not just error versus no error:

* sbatch refuses the file (§1.2) <-> SB100;
* getopt refuses an option name <-> SB103, SB104, SB110, SB111, SB112;
* the tokenizer or getopt stops at a word (§1.3) <-> SB108;
* sbatch refuses a value (``Invalid --x specification``, a missing or unwanted argument) <-> SB105;
* sbatch refuses a combination (mutually exclusive, a missing GPU companion) <-> SB106;
* a value taken literally (SB107) <-> accepted, or refused as a value;
* sbatch accepts <-> no error from us, except findings that name a silent fault (a directive
  ignored, a value taken literally or cut by ``#``) or a value only the controller refuses.

At most ten documented differences are allowed, each citing the fact behind it.
"""
from __future__ import annotations

import re
import subprocess


from conftest import require_tool
from sbatch_corpus import cases
from sbatch_lsp.config import Config, Profile
from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.lint import lint
from sbatch_lsp.source import BinaryInputError, decode

from pathlib import Path

CONF = Path(__file__).resolve().parent / "data" / "slurm-offline.conf"
PROFILE = Config(profile=Profile(slurm_version="22.05", pyxis=False))

#: sbatch's words -> error class (slurm-facts.md §1.2, §2, §4, §5)
SBATCH_CLASSES = [
    ("Unable to contact slurm controller", "accepted"),
    ("Batch script", "file"), ("does not look like a batch script", "file"),
    ("NULL character", "file"),
    ("Invalid directive found", "tokens"), ("Unmatched", "tokens"), ("Unexpected `:`", "tokens"),
    ("unrecognized option", "option"), ("invalid option", "option"), ("is ambiguous", "option"),
    ("requires an argument", "value"), ("doesn't allow an argument", "value"),
    ("mutually exclusive", "combination"), ("did not request any GPU", "combination"),
    ("used without either", "combination"), ("Failed to validate job spec", "combination"), ("you need to specify a nodelist", "combination"),
    ("requires --sockets-per-node", "combination"), ("needs either a GRES GPU", "combination"),
    ("Incompatible begin and deadline", "combination"), ("unrecognized --", "value"),
    ("Invalid", "value"), ("is not a valid node count", "value"), ("Maximum node count", "value"),
    ("unrecognized --cpu-freq", "value"), ("Priority must", "value"), ("invalid --profile", "value"),
]
#: our code -> error class
OUR_CLASSES = {"SB100": "file", "SB103": "option", "SB104": "option", "SB110": "option",
               "SB111": "option", "SB112": "option", "SB108": "tokens", "SB105": "value",
               "SB106": "combination"}

#: the documented differences (at most ten): case -> the fact that explains it
DOCUMENTED = {
    "tokens-template-braces": "DESIGN.md \"Templates\": placeholders such as `{ partition }` are "
                              "opaque (the file is a template, filled in before submission)",
    "tokens-template-angle": "DESIGN.md \"Templates\": `<your account>` is an opaque placeholder",
    "value-gres-bad0": "§4 [ctld]: `--gres=gpu:x:y:z` is refused by the client only through the "
                       "gres plugin of the local slurm.conf (\"Invalid generic resource (gres) "
                       "specification\"); its validity depends on the cluster's GresTypes, so "
                       "sbatch-lint does not judge gres names",
    "combo-gpus-per-task-alone": "`--gpus-per-task` with no task count in the file: sbatch "
                                 "refuses the file alone, but `sbatch -n N FILE` is accepted "
                                 "(22.05.8, tests/slurm/test_tasks.py), so SB106 reports an info: "
                                 "the count may come from the command line (rules/SB106.md)",
}


def sbatch_class(out: str, rc: int) -> str:
    for words, cls in SBATCH_CLASSES:
        if words in out:
            return cls
    return "accepted" if rc == 0 else f"other rc={rc}: {out.strip()[:80]}"


def our_classes(data: bytes) -> set[str]:
    try:
        text = decode(data) if data else ""
    except BinaryInputError:
        return {"file"}  # the CLI refuses it too ("binary file (NUL bytes)", exit 2)
    result = lint(text, "job.sbatch", PROFILE)
    found = set()
    for d in result.diagnostics:
        if d.severity < Severity.ERROR or d.code not in OUR_CLASSES:
            continue
        if d.code == "SB105" and "checked at submission" in d.message:
            continue  # refused by the controller, which offline sbatch never reaches
        if d.code == "SB108" and "silently" in d.message:
            continue  # a value cut by `#`: sbatch accepts the shortened value
        if d.code == "SB103" and "has one dash" in d.message:
            continue  # `-array=1-4` is read as `-a rray=1-4`: a misreading, not a refusal
        found.add(OUR_CLASSES[d.code])
    if any(d.code == "SB107" and d.severity >= Severity.ERROR for d in result.diagnostics):
        found.add("literal")
    return found


def run_sbatch(sbatch: str, corpus, workdir: Path,
               verbose: bool = False) -> dict[str, tuple[int, str]]:
    """Run ``sbatch --test-only`` on every script (one shell loop: ~5-10 ms per file);
    ``verbose`` adds ``-v`` (sbatch then prints the options it submits)."""
    files = workdir / "scripts"
    files.mkdir()
    for name, data in corpus:
        (files / name).write_bytes(data)
    flags = "-v --test-only" if verbose else "--test-only"
    loop = (f'for f in "$@"; do "$SBATCH" {flags} "scripts/$f" > "out/$f" 2>&1; '
            'echo $? > "out/$f.rc"; done')
    (workdir / "out").mkdir()
    env = {"PATH": "/usr/bin:/bin", "SLURM_CONF": str(CONF), "SBATCH": sbatch,
           "HOME": str(workdir)}
    subprocess.run(["bash", "-c", loop, "loop"] + [n for n, _ in corpus], cwd=workdir,
                   env=env, check=True, timeout=600)
    return {n: (int((workdir / "out" / f"{n}.rc").read_text()),
                (workdir / "out" / n).read_text(errors="replace")) for n, _ in corpus}


def agree(expected: str, ours: set[str]) -> bool:
    """A literal `$VAR` (SB107) is a silent fault where sbatch accepts the text, and the reason
    sbatch refuses it where the literal text is not a valid value (`--nodes=$N`)."""
    if expected == "accepted":
        return not ours - {"literal"}
    return expected in ours or (expected == "value" and "literal" in ours)


def test_differential_against_real_sbatch(tmp_path):
    sbatch = require_tool("sbatch")
    corpus = cases()
    assert len(corpus) >= 500 and len({n for n, _ in corpus}) == len(corpus)
    results = run_sbatch(sbatch, corpus, tmp_path)
    disagreements = {}
    classes: dict[str, int] = {}
    for name, data in corpus:
        rc, out = results[name]
        expected = sbatch_class(out, rc)
        classes[expected] = classes.get(expected, 0) + 1
        ours = our_classes(data)
        if not agree(expected, ours):
            disagreements[name] = (expected, sorted(ours), out.strip().splitlines()[:2])
    agreeing = len(corpus) - len(disagreements)
    print(f"\ndifferential: {len(corpus)} scripts, sbatch classes {dict(sorted(classes.items()))}; "
          f"agreement {agreeing}/{len(corpus)} ({100 * agreeing / len(corpus):.1f}%); "
          f"documented differences {len(DOCUMENTED)}")
    for name, why in disagreements.items():
        print(f"  {name}: sbatch={why[0]} ours={why[1]} {why[2]}")
    assert len(DOCUMENTED) <= 10
    undocumented = {n: d for n, d in disagreements.items() if n not in DOCUMENTED}
    assert not undocumented, undocumented
    stale = [n for n in DOCUMENTED if n not in disagreements]
    assert not stale, f"documented differences that no longer differ: {stale}"
    assert not any(c.startswith("other") for c in classes), classes


# -- the layout sbatch adjusts before submission ---------------------------------------------------

DUMP = re.compile(r"sbatch: defined options\n(.*?)sbatch: end of defined options", re.S)
DUMP_LINE = re.compile(r"^sbatch: ([a-z-]+)\s+: (.*)$", re.M)


def _layouts() -> list[tuple[str, bytes]]:
    """Scripts over the options whose counts sbatch adjusts against each other (node counts
    against a host list, task counts against node counts), some with a second hetjob
    component, and empty values."""
    out = []
    for nodes in (None, "1", "2", "3", "1-3", "4"):
        for ntasks in (None, "1", "2", "3", "8"):
            for per_node in (None, "2"):
                for nodelist in (None, "n[1-3]"):
                    lines = [f"--{k}={v}" for k, v in (("nodes", nodes), ("ntasks", ntasks),
                             ("ntasks-per-node", per_node), ("nodelist", nodelist)) if v]
                    name = "layout-" + "_".join(x.strip("-").replace("=", "") for x in lines)
                    out.append((name.replace("[", "").replace("]", ""), lines))
    out += [("layout-hetjob", ["--nodes=3", "--ntasks=2", "hetjob", "--nodes=2", "--ntasks=1"])]
    out += [(f"empty-{name}", [f"--{name}="]) for name in
            ("gres", "partition", "account", "comment", "constraint", "nodelist", "exclude")]
    return [(name, ("#!/bin/bash\n" + "".join(f"#SBATCH {x}\n" for x in lines) +
                    "srun hostname\n").encode()) for name, lines in out]


def _dumps(out: str) -> list[dict[str, str]]:
    """sbatch -v's "defined options" per hetjob component: the values it submits."""
    return [dict(DUMP_LINE.findall(block)) for block in DUMP.findall(out)]


def test_adjusted_layout_matches_sbatch(tmp_path):
    """Where sbatch accepts a layout, the job's node and task counts are the ones sbatch
    submits after its own adjustments (``sbatch -v`` prints them), every hetjob component is
    read, and an empty value sbatch accepts raises no error; where it refuses, we say so."""
    sbatch = require_tool("sbatch")
    corpus = _layouts()
    results = run_sbatch(sbatch, corpus, tmp_path, verbose=True)
    wrong = {}
    for name, data in corpus:
        rc, out = results[name]
        expected = sbatch_class(out, rc)
        result = lint(data.decode(), "job.sbatch", PROFILE)
        errors = sorted({d.code for d in result.diagnostics if d.severity >= Severity.ERROR})
        if expected != "accepted":
            if not errors:
                wrong[name] = f"sbatch refuses ({out.strip().splitlines()[-1]}); we say nothing"
            continue
        if errors:
            wrong[name] = f"sbatch accepts; we report {errors}"
            continue
        dumps = _dumps(out)
        components = 1 + max((u.component for u in result.job.directives.options), default=0)
        if len(dumps) != components:
            wrong[name] = f"sbatch submits {len(dumps)} components, we read {components}"
            continue
        first = dumps[0]
        theirs = (first.get("nodes", "").split("-")[0] or None, first.get("ntasks") or None)
        ours = tuple(None if c.value is None else str(c.value)
                     for c in (result.job.nodes, result.job.ntasks))
        if ours != theirs:
            wrong[name] = f"sbatch submits nodes, ntasks = {theirs}; we read {ours}"
    assert len(corpus) > 100
    assert not wrong, "\n".join(f"{k}: {v}" for k, v in sorted(wrong.items()))
