"""Metamorphic tests (DESIGN.md "Tests", issue 10 item 5): every bad and good example of the rule
pages, every case of ../shared/cases and tests/cases, carried through meaning-preserving rewrites
(tests/metamorphic.py). The findings at warning or above must survive: the same code and severity,
each on the text its original sat on (followed through the rewrite's offset map), nothing new;
so good examples and negative cases stay clean. A rewrite that does not apply to a script is not
a variant and is not counted.

Each variant is one test (xdist spreads them); each original is linted once per worker. A variant
the current engine gets wrong is an ``xfail(strict=True)`` naming the mechanism (KNOWN below): when
the engine learns it, the test passes, strict xfail reports it, and the entry goes.
"""
from __future__ import annotations

import json
import subprocess
from functools import cache

import pytest
from metamorphic import REWRITES, Variant
from rule_pages import examples_with_profile, pages
from test_cases import LOCAL_DIR, SHARED_DIR

from sbatch_lsp.config import Config, Profile, from_table
from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.lint import lint

def _config(keys: dict[str, str]) -> Config:
    """A page example's profile keys (``slurm-version=22.05``), or a case's ``config`` table
    (kept as JSON under the key ``"config"``)."""
    if "config" in keys:
        return from_table(json.loads(keys["config"]), "case config")
    pyxis = {"true": True, "false": False}.get(keys.get("pyxis", ""), keys.get("pyxis"))
    return Config(profile=Profile(slurm_version=keys.get("slurm-version", Profile().slurm_version),
                                  pyxis=pyxis))


def originals() -> dict[str, tuple[str, str, dict[str, str]]]:
    """id -> (file name to lint as, text, profile keys) for every example and case."""
    out: dict[str, tuple[str, str, dict[str, str]]] = {}
    for page in pages():
        for i, (kind, text, keys) in enumerate(examples_with_profile(page)):
            if kind in ("bad", "good"):
                out[f"{page.stem}-{i}-{kind}"] = (f"{page.stem}.sbatch", text, keys)
    for f in sorted(SHARED_DIR.glob("*.sbatch")):
        out[f"shared/{f.stem}"] = (f.name, f.read_bytes().decode("utf-8"), {})
    for f in sorted(LOCAL_DIR.glob("*.sbatch")):
        case = f.with_suffix(".json")
        table = json.loads(case.read_text()).get("config") if case.is_file() else None
        keys = {"config": json.dumps(table)} if table else {}
        out[f"cases/{f.stem}"] = (f.name, f.read_bytes().decode("utf-8"), keys)
    return out


ORIGINALS = originals()


#: rewrite -> why the current engine loses or invents a finding on it (the mechanism)
REASONS: dict[str, str] = {
    "srun-array": (
        "an array with an element that is not literal (`SRUN_ARGS=(-n \"$NTASKS\")`) is "
        "not read, so srun's options stay hidden and SB201 says 'unless … sets another "
        "layout' at warning; so are the pyxis options in such an array "
        "(`--container-image=\"$IMAGE\"`, `--container-mounts=\"$PWD:$PWD\"`), and SB404-SB408 "
        "are silent"),
    "heredoc": (
        "a script written by a quoted here-document and run with `exec bash FILE` is not "
        "modelled (DESIGN.md: values flow through heredocs that generate scripts): every "
        "finding in the generated body is lost"),
    "export-split": (
        "SB401 reads the last assignment of HF_HOME by text, and a bare `export HF_HOME` "
        "after `HF_HOME=/tmp/hf` sets no value: the node-local cache is lost (SB401 is being "
        "rewritten over facts in facts-rules; value_at() gives the value); SB216 points at the assignment of WORLD_SIZE, which the rewrite "
        "moves away from its `export`"),
    "bash-c-var": (
        "SB502: a credential expanded into a double-quoted command string that a variable "
        "holds and `bash -c \"$CMD\"` runs (so it is on huggingface-cli's command line, "
        "visible in ps) is not followed through the variable"),
    "opt-space": (
        "SB403 reads the torchrun options inside a bash -c string only as --opt=value: with "
        "`--nproc_per_node 8` the world is unknown and the error drops to a warning; for "
        "SB404 the rewrite changes the meaning: bash expands a `~` that starts a word "
        "(`--container-image ~/x.sqsh`), not one after `--container-image=`"),
    "launch-array": (
        "a launcher option array with an element that is not literal (`(--nnodes=$NNODES …)`, "
        "`--master-port=$((10000 + SLURM_JOB_ID % 50000))`) is not expanded "
        "(facts/values.array_elements reads literal arrays only): SB216 loses the --nnodes "
        "constant the variable holds, SB220 does not see the port"),
}
#: rewrite -> the originals whose variant fails today, for the reason above
FAILING: dict[str, tuple[str, ...]] = {
    "srun-array": (
        "SB003-1-good", "SB404-1-bad", "SB406-0-bad", "SB406-1-bad", "SB408-2-bad",
        "SB408-4-bad",
        "cases/CP09",),
    "heredoc": (
        "SB003-1-good", "SB201-0-bad", "SB201-1-bad", "SB201-2-bad", "SB201-5-good", "SB202-0-bad",
        "SB202-1-bad", "SB202-2-bad", "SB202-3-bad", "SB203-0-bad", "SB203-1-bad", "SB203-2-bad",
        "SB204-0-bad", "SB204-1-bad", "SB204-4-good", "SB205-0-bad", "SB205-1-bad", "SB205-2-bad",
        "SB206-0-bad", "SB206-1-bad", "SB206-2-bad", "SB207-0-bad", "SB207-1-bad", "SB207-2-bad",
        "SB301-0-bad", "SB301-1-bad", "SB301-2-bad", "SB301-3-bad", "SB302-0-bad", "SB302-1-bad",
        "SB302-2-bad", "SB302-3-bad", "SB401-0-bad", "SB401-1-bad", "SB401-2-bad", "SB401-3-bad",
        "SB403-0-bad", "SB403-1-bad", "SB403-2-bad", "SB403-3-bad", "SB502-0-bad", "SB502-1-bad",
        "SB502-2-bad", "SB502-3-bad", "SB502-4-bad", "SB601-0-bad", "SB601-1-bad", "SB601-2-bad",
        "SB602-0-bad", "SB602-1-bad", "SB602-2-bad", "SB602-3-bad", "SB603-0-bad", "SB603-1-bad",
        "SB603-2-bad", "SB604-0-bad", "SB604-1-bad", "SB604-2-bad", "SB605-0-bad", "SB605-1-bad",
        "shared/F001", "shared/F003", "shared/F004", "shared/F011", "shared/F015", "shared/F016",
        "shared/F019", "shared/F021", "shared/F022", "shared/F026", "shared/F030", "shared/F031",
        "shared/F033", "shared/S204", "shared/S205", "shared/S302", "cases/C001", "cases/C014",
        "cases/C016", "cases/C017", "cases/C018", "cases/C019", "cases/C020", "cases/C021",
        "cases/C025", "cases/C030", "cases/C037", "cases/MG01", "cases/MG03", "cases/MG04",
        "cases/MG05",
        "SB206-3-bad", "SB206-4-bad", "SB606-0-bad", "SB606-1-bad", "cases/C028", "cases/C029",
        "SB208-0-bad", "SB208-1-bad", "SB208-2-bad", "SB208-6-good", "SB209-0-bad", "SB209-2-bad",
        "SB210-0-bad", "SB210-1-bad", "SB210-2-bad", "SB212-0-bad", "SB212-1-bad", "SB212-2-bad",
        "SB213-0-bad", "SB213-1-bad", "SB213-2-bad", "cases/C012", "cases/LC01", "cases/LC02",
        "cases/LC03", "cases/LC04", "cases/LC05", "SB215-2-bad", "SB216-0-bad", "SB216-1-bad",
        "SB216-2-bad", "SB216-3-bad", "SB217-0-bad", "SB217-1-bad", "SB217-2-bad", "SB218-0-bad",
        "SB218-1-bad", "SB218-2-bad", "SB219-0-bad", "SB219-1-bad", "SB219-2-bad", "cases/TA08",
        "SB206-5-bad", "SB206-6-bad", "SB220-0-bad", "SB220-1-bad", "SB220-2-bad", "SB221-1-bad",
        "SB404-0-bad", "SB404-1-bad", "SB404-2-bad", "SB404-3-bad", "SB406-0-bad", "SB406-1-bad",
        "SB407-0-bad", "SB407-1-bad", "SB407-2-bad", "SB408-0-bad", "SB408-1-bad", "SB408-2-bad",
        "cases/CP01", "cases/CP02", "cases/CP03", "cases/CP04", "cases/CP05", "SB408-3-bad",
        "SB408-4-bad", "SB409-0-bad", "SB409-1-bad", "SB409-2-bad", "cases/CP07", "cases/CP08",
        "cases/CP09", "cases/CP10", "SB401-4-bad", "SB607-0-bad", "SB607-1-bad", "SB607-2-bad", "cases/MG06", "cases/MG07",
        "SB203-3-bad", "SB203-4-bad", "SB404-6-good", "SB405-1-bad", "SB405-2-bad", "SB405-3-bad",
        "SB405-5-good", "SB405-6-good", "SB405-7-good", "SB408-6-good", "SB408-7-good",
        "SB409-3-good", "SB409-4-good", "SB408-8-good",
        "SB218-3-bad", "SB218-4-bad", "SB222-0-bad", "SB222-1-bad", "SB222-2-bad",
        "SB223-0-bad", "SB223-1-bad", "SB223-2-bad", "cases/FA01", "cases/FA02",),
    "export-split": (
        "SB401-1-bad", "SB401-2-bad", "SB216-2-bad", "SB401-4-bad",),
    "bash-c-var": (
        "SB502-2-bad",),
    "opt-space": (
        "shared/F022", "SB404-2-bad",),
    "launch-array": (
        "SB216-1-bad", "SB220-2-bad",),
}
KNOWN: dict[tuple[str, str], str] = {(ex, rw): REASONS[rw] for rw, ids in FAILING.items()
                                     for ex in ids}


def _variants():
    for ex, (_, text, _) in ORIGINALS.items():
        for name, (_, rewrite) in REWRITES.items():
            if rewrite(text) is None:
                continue
            reason = KNOWN.get((ex, name))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(ex, name, id=f"{ex}:{name}", marks=marks)


VARIANTS = list(_variants())


@cache
def _findings(ex: str, rewrite: str | None) -> tuple[str, list[tuple]]:
    """(text, [(code, severity, start, end)] at warning or above) of an original or a variant."""
    path, text, keys = ORIGINALS[ex]
    if rewrite is not None:
        variant = REWRITES[rewrite][1](text)
        assert variant is not None
        text = variant.text
    result = lint(text, path, _config(keys))
    assert not [d for d in result.diagnostics if d.code == "SB003"], \
        [d.message for d in result.diagnostics if d.code == "SB003"]
    return text, [(d.code, d.severity.name.lower(), d.start, d.end)
                  for d in result.diagnostics if d.severity >= Severity.WARNING]


@cache
def _bash_ok(text: str) -> bool:
    return subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True,
                          check=False).returncode == 0


def _lands(variant: Variant, offset: int, at: int) -> bool:
    return any(lo <= at <= hi for lo, hi in variant.targets(offset))


def differences(ex: str, rewrite: str) -> dict | None:
    """None when the variant keeps the original's findings (code, severity, and a span that
    followed the rewrite), else what was lost and what is new, with ``line:col`` positions."""
    original_text, before = _findings(ex, None)
    variant = REWRITES[rewrite][1](original_text)
    assert variant is not None
    if _bash_ok(original_text):  # the rewrite itself must leave valid shell
        assert _bash_ok(variant.text), variant.text
    _, after = _findings(ex, rewrite)
    pool = list(after)
    lost = []
    for code, severity, start, end in before:
        match = next((f for f in pool if f[:2] == (code, severity) and
                      _lands(variant, start, f[2]) and _lands(variant, end, f[3])), None)
        if match is None:
            lost.append((code, severity, start, end))
        else:
            pool.remove(match)
    if not lost and not pool:
        return None
    return {"lost": [(c, s, _at(original_text, a)) for c, s, a, _ in lost],
            "new": [(c, s, _at(variant.text, a)) for c, s, a, _ in pool],
            "variant": variant.text}


@pytest.mark.parametrize("ex,rewrite", VARIANTS)
def test_variant_keeps_findings(ex, rewrite):
    assert differences(ex, rewrite) is None


def _at(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"{line}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def test_enough_variants_and_kinds():
    """At least ten kinds of rewrite apply to the examples, and every rewrite applies somewhere."""
    used = {name for _, name in (p.values for p in VARIANTS)}
    assert used == set(REWRITES), sorted(set(REWRITES) - used)
    assert len({REWRITES[n][0] for n in used}) >= 10
    assert len(VARIANTS) >= 500, len(VARIANTS)


def test_known_failures_name_real_variants():
    """Every KNOWN entry names a variant that exists (a stale entry would hide nothing)."""
    ids = {(p.values[0], p.values[1]) for p in VARIANTS}
    assert set(KNOWN) <= ids, sorted(set(KNOWN) - ids)


if __name__ == "__main__":  # a summary for docs and reports: variants per rewrite, failures
    import sys
    counts: dict[str, int] = {}
    failing = {}
    for p in VARIANTS:
        ex, name = p.values[0], p.values[1]
        counts[name] = counts.get(name, 0) + 1
        if "--failures" in sys.argv:
            try:
                diff = differences(ex, name)
            except AssertionError as exc:
                diff = {"rewrite-bug": str(exc)[:300]}
            if diff:
                failing[f"{ex}:{name}"] = {k: v for k, v in diff.items() if k != "variant"}
    print(json.dumps({"originals": len(ORIGINALS), "variants": len(VARIANTS), "per_rewrite": counts,
                      "failing": failing}, indent=1))
