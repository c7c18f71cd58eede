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
import tempfile
from functools import cache
from pathlib import Path

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
    constrain = {"true": True, "false": False}.get(keys.get("constrain-devices", ""))
    return Config(profile=Profile(slurm_version=keys.get("slurm-version", Profile().slurm_version),
                                  pyxis=pyxis, constrain_devices=constrain))


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
    "export-split": (
        "SB216 points at the assignment of WORLD_SIZE, which the rewrite moves away from its "
        "`export`"),
    "opt-space": (
        "SB403 reads the torchrun options inside a bash -c string only as --opt=value: with "
        "`--nproc_per_node 8` the world is unknown and the error drops to a warning"),
    "function-args": (
        "a here-document body written to a file and run by an srun step is placed in the "
        "step's tasks only when the srun is written at the call: through a function's "
        "`srun \"$@\"` the body's torchrun is taken to run in the batch shell (SB205 appears, "
        "SB301 on its node rank is lost)"),
    "heredoc": (
        "a here-document inside a body that is itself a here-document (the rewrite wraps the "
        "script in one) is not read as a generated script: SB301 on its body is lost"),
}
#: rewrite -> the originals whose variant fails today, for the reason above
FAILING: dict[str, tuple[str, ...]] = {
    "export-split": (
        "SB216-2-bad",),
    "opt-space": (
        "shared/F022",),
    "function-args": (
        "SB301-4-bad", "SB301-9-good",),
    "heredoc": (
        "SB301-4-bad",),
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
        if variant.files:  # the files it sources sit next to it, in a folder of its own
            folder = Path(tempfile.mkdtemp(prefix="metamorphic-"))
            for name, content in variant.files.items():
                (folder / name).write_text(content)
            path = str(folder / path)
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
        if any(s <= start and end <= e for s, e in variant.moved):
            continue  # its text moved into another file: a finding of that file
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
