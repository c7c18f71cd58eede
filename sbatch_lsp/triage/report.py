"""The triage report: the JSON object of DESIGN.md "Interfaces" and the text for people.

Every quoted log line is masked with the project's secret detection (a token printed by a job,
``hf_****``) and stripped of control characters, like every other output.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..secrets import Masker
from .categories import CATEGORIES
from .exits import summarise
from .ordering import Verdict, node_of
from .recognisers import Evidence, Scan

SCHEMA_VERSION = 1
#: cascade entries listed in JSON (the rest are counted in the text)
MAX_CASCADE = 500


def mask_line(text: str) -> str:
    """``text`` with every detected secret value masked."""
    return Masker().text(text)


@dataclass
class Report:
    """One job's triage: the JSON object (:meth:`to_json`) and its text (:func:`format_text`).
    ``script_path``/``script_result`` are the linked script, ``notes`` what people should know
    (a script that could not be found, a log with no failure evidence)."""

    paths: list[str]
    scan: Scan
    verdict: Verdict
    rules: list[dict] = field(default_factory=list)
    script_path: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """DESIGN.md's triage object (``schema_version`` 1)."""
        v = self.verdict
        root = None
        if v.root is not None:
            cat = CATEGORIES[v.root.category]
            root = {"path": v.root.where.path, "line": v.root.where.line,
                    "text": mask_line(v.root.where.text), "category": cat.name,
                    "explanation": explanation(v.root), "confidence": v.root_confidence}
        first = None
        if v.rank is not None or v.node is not None or v.where is not None:
            first = {"rank": v.rank, "node": v.node,
                     "path": v.where.where.path if v.where else None,
                     "line": v.where.where.line if v.where else None,
                     "confidence": v.first_confidence}
        cascade = [{"rank": e.rank, "node": node_of(e, self.scan), "path": e.where.path,
                    "line": e.where.line, "kind": e.category}
                   for e in v.cascade[:MAX_CASCADE]]
        return {"schema_version": SCHEMA_VERSION, "root_cause": root, "first_failure": first,
                "cascade": cascade, "exit_codes": summarise(self.scan.exits),
                "rules": self.rules}


def explanation(e: Evidence) -> str:
    """The category's sentence, with what the evidence adds (memory, signal, user frame)."""
    text = CATEGORIES[e.category].explanation
    extra = [x for x in (e.detail, f"raised in {e.frame}" if e.frame else "") if x]
    return text + (f" ({'; '.join(extra)})" if extra else "")


def format_text(report: Report, color: bool = False) -> str:
    """One screen for people: the root line highlighted, the first failing rank and node, the
    cascade folded into counts by kind, the exit codes explained, the script's findings."""
    obj = report.to_json()
    bold, red, dim, off = ("\x1b[1m", "\x1b[31m", "\x1b[2m", "\x1b[0m") if color else ("",) * 4
    out: list[str] = []
    root = obj["root_cause"]
    if root:
        out.append(f"{bold}root cause{off} ({root['category']}, {root['confidence']}) at "
                   f"{root['path']}:{root['line']}:")
        out.append(f"  {red}{bold}> {root['text'].strip()}{off}")
        out.append(f"  {root['explanation']}")
    else:
        out.append(f"{bold}root cause: unknown{off}: the log does not show what failed first "
                   "(only the waiting side, or no failure at all)")
    ff = obj["first_failure"]
    if ff:
        who = ", ".join(x for x in (f"rank {ff['rank']}" if ff["rank"] is not None else "",
                                    f"node {ff['node']}" if ff["node"] else "") if x)
        out.append(f"{bold}first failure{off}: {who or 'rank and node not shown'} "
                   f"({ff['confidence']})")
    else:
        out.append(f"{bold}first failure{off}: unknown")
    counts: dict[str, int] = {}
    for e in report.verdict.cascade:
        counts[e.category] = counts.get(e.category, 0) + 1
    for cat, n in report.scan.counts.items():
        if n > report.scan.limit:
            counts[cat] = counts.get(cat, 0) + n - report.scan.limit
    if counts:
        folded = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        out.append(f"{bold}cascade{off} {dim}(folded){off}: {folded}")
        shown = [e for e in report.verdict.cascade if not e.cascade][:3]
        for e in shown:
            out.append(f"  {dim}also at {e.where.path}:{e.where.line} ({e.category}): "
                       f"{mask_line(e.where.text.strip())[:160]}{off}")
    if obj["exit_codes"]:
        out.append(f"{bold}exit codes{off}:")
        for x in obj["exit_codes"]:
            who = "; ".join(f"{label} {','.join(map(str, x[key]))}" for label, key in
                            (("srun tasks", "tasks"), ("ranks", "ranks")) if x[key])
            out.append(f"  {x['code']:>13}  {x['meaning']}" + (f" [{who}]" if who else ""))
    if report.script_path:
        if report.rules:
            out.append(f"{bold}in the script{off} {report.script_path}, what explains it:")
            for d in report.rules:
                out.append(f"  {d['path']}:{d['line']}:{d['column']}: {d['code']} "
                           f"[{d['severity']}] {d['message']}")
        else:
            out.append(f"the script {report.script_path} has no finding that explains this")
    out.extend(report.notes)
    return "\n".join(out) + "\n"


def format_json(report: Report) -> str:
    """The JSON object, indented."""
    return json.dumps(report.to_json(), indent=2, ensure_ascii=False)
