"""Score the corpus precision review (issue 10 item 7): lint the real corpus (or read a dump of
its findings), join every finding to the verdict files, and print per code and severity how many
findings there are, how many were reviewed and how many are true.

    python benchmarks/corpus_review.py /work/corpus [--dump F.json | --from-dump F.json]
        [--unreviewed OUT.tsv] [--stamp] [--repos DIR]

A verdict file (``tests/corpus_review/*.tsv``) is a tab-separated table with a header naming at
least ``repository path line code verdict``; ``severity``, ``reason`` and ``message`` (a digest
of the finding's message, :func:`digest`) are optional. A finding matches a verdict on
(repository, path, line, code); failing that, on (repository, path, code, message digest) at the
nearest line, so a verdict survives the lines moving when rules or scripts change. The digest
hashes the message with its digits blanked (messages name other lines), so it quotes no script
text. ``--stamp`` writes the digest of each exactly matched finding into the ``message`` column
of the verdict files that have one.

Verdicts: ``true``, ``false``, ``debatable`` judge a finding; ``false-fixed`` records a false
finding that a fix removed (it counts as false if the finding comes back); ``true-negative``
records a silence that was checked and joins no finding. Precision is given twice: debatable
counted as not true, and as true.

The corpus folder holds the flattened files that ``../shared/corpus/MANIFEST.tsv`` maps to
(repository, path); the scripts are never printed, only the findings' own messages (masked by
the engine). Flattened, a script has no repository around it, so what the engine reads beside
it (a launcher in its folder, a program elsewhere in its repository that fills it in:
facts/provenance.py) is missing; ``--repos DIR`` lints the scripts whose origin repository has
a checkout ``DIR/OWNER+NAME`` (with its ``.git``) at their place in that checkout (the corpus's
text, the checkout's neighbours; the manifest's ``origin_repo``, and for jobspec-database rows
the path after ``data/OWNER/NAME/``).
"""
from __future__ import annotations

import argparse
import collections
import csv
import hashlib
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT.parent / "shared" / "corpus" / "MANIFEST.tsv"
VERDICTS = ROOT / "tests" / "corpus_review"
JUDGED = ("true", "false", "debatable")


@dataclass(frozen=True)
class Finding:
    """One finding of the corpus run: where (repository, path, 1-based line), what (code,
    severity label, message as the engine printed it, already masked)."""

    repository: str
    path: str
    line: int
    code: str
    severity: str
    message: str


@dataclass
class Verdict:
    """One row of a verdict file; ``file`` and ``row`` say where it came from (row 0 is the
    first row after the header)."""

    repository: str
    path: str
    line: int
    code: str
    verdict: str
    severity: str = ""
    reason: str = ""
    message: str = ""
    file: str = ""
    row: int = 0

    @property
    def judged(self) -> str | None:
        """``true``/``false``/``debatable`` for a verdict on a finding, else None."""
        if self.verdict in JUDGED:
            return self.verdict
        return "false" if self.verdict == "false-fixed" else None


def digest(message: str) -> str:
    """A 12-hex-digit fingerprint of a finding's message with every digit run blanked (line
    numbers and counts move when the file or the rules change); no script text survives it."""
    return hashlib.sha1(re.sub(r"\d+", "#", message).encode()).hexdigest()[:12]


def read_manifest(path: Path) -> dict[str, tuple[str, str]]:
    """``local_file`` -> (repository, path) from the corpus manifest (columns repo, commit,
    path, local_file, ...)."""
    with path.open(newline="") as f:
        return {r["local_file"]: (r["repo"], r["path"])
                for r in csv.DictReader(f, delimiter="\t")}


def read_verdicts(folder: Path) -> list[Verdict]:
    """Every verdict row of every ``*.tsv`` in ``folder``, in file then row order. A row that
    lacks a required column or whose line is not a number raises ValueError naming it."""
    out: list[Verdict] = []
    for p in sorted(folder.glob("*.tsv")):
        with p.open(newline="") as f:
            for i, r in enumerate(csv.DictReader(f, delimiter="\t")):
                try:
                    out.append(Verdict(r["repository"], r["path"], int(r["line"]), r["code"],
                                       r["verdict"], r.get("severity") or "",
                                       r.get("reason") or "", r.get("message") or "",
                                       p.name, i))
                except (KeyError, TypeError, ValueError) as exc:
                    raise ValueError(f"{p.name} row {i + 2}: {exc!r}") from None
    return out


def origin_path(repo: str, path: str, origin: str) -> tuple[str, str]:
    """(origin repository, path in it) of a corpus file: jobspec-database keeps other
    repositories' scripts under ``data/OWNER/NAME/``."""
    parts = path.split("/")
    if repo.endswith("/jobspec-database") and len(parts) > 3 and parts[0] == "data":
        return f"{parts[1]}/{parts[2]}", "/".join(parts[3:])
    return origin or repo, path


def read_origins(path: Path) -> dict[str, tuple[str, str]]:
    """``local_file`` -> (origin repository, path in it) from the corpus manifest."""
    with path.open(newline="") as f:
        return {r["local_file"]: origin_path(r["repo"], r["path"], r.get("origin_repo") or "")
                for r in csv.DictReader(f, delimiter="\t")}


def lint_corpus(corpus: Path, manifest: dict[str, tuple[str, str]],
                repos: Path | None = None,
                origins: dict[str, tuple[str, str]] | None = None
                ) -> tuple[list[Finding], dict]:
    """Lint every manifest file present in ``corpus``; return the findings and a summary
    (files, crashes, SB003 count, chunks, chunks modelled, and ``in-checkout``: files linted at
    their place in a checkout under ``repos``, see the module docstring). A file the engine
    cannot decode is skipped and counted."""
    from sbatch_lsp.lint import lint
    from sbatch_lsp.source import BinaryInputError, decode

    findings: list[Finding] = []
    summary = collections.Counter[str]()
    for local, (repo, path) in sorted(manifest.items()):
        f = corpus / local
        if not f.is_file():
            summary["missing"] += 1
            continue
        summary["files"] += 1
        try:
            text = decode(f.read_bytes())
        except BinaryInputError:
            summary["binary"] += 1
            continue
        where = f.name
        origin = (origins or {}).get(local)
        if repos is not None and origin is not None:
            checkout = repos / origin[0].replace("/", "+")
            if (checkout / ".git").exists() and (checkout / origin[1]).is_file():
                where = str(checkout / origin[1])
                summary["in-checkout"] += 1
        try:
            r = lint(text, where)
        except Exception:  # noqa: BLE001  (the engine must never raise: count it)
            summary["crashes"] += 1
            continue
        for d in r.diagnostics:
            findings.append(Finding(repo, path, r.source.line_of(d.start) + 1, d.code,
                                    d.severity.label, d.message))
            summary["SB003"] += d.code == "SB003"
        for ch in (r.job.script.chunks if r.job else []):
            summary["chunks"] += 1
            summary["modelled"] += ch.parser != "none"
    return findings, dict(summary)


def join(findings: list[Finding], verdicts: list[Verdict]) -> list[Verdict | None]:
    """Each finding's verdict (None: unreviewed), in the findings' order: first the rows at its (repository, path, line, code), the one of
    its severity preferred; then, for findings still unmatched, an unused row of the same
    (repository, path, code) whose message digest equals the finding's, the nearest line first.
    A row joins at most one finding."""
    at: dict[tuple, list[Verdict]] = collections.defaultdict(list)
    by_digest: dict[tuple, list[Verdict]] = collections.defaultdict(list)
    for v in verdicts:
        if v.judged is None:
            continue
        at[(v.repository, v.path, v.line, v.code)].append(v)
        if v.message:
            by_digest[(v.repository, v.path, v.code, v.message)].append(v)
    used: set[int] = set()
    out: list[Verdict | None] = [None] * len(findings)
    for i, f in enumerate(findings):
        rows = [v for v in at.get((f.repository, f.path, f.line, f.code), []) if id(v) not in used]
        rows.sort(key=lambda v: (v.severity not in ("", f.severity), v.file, v.row))
        if rows:
            out[i] = rows[0]
            used.add(id(rows[0]))
    for i, f in enumerate(findings):
        if out[i] is not None:
            continue
        rows = [v for v in by_digest.get((f.repository, f.path, f.code, digest(f.message)), [])
                if id(v) not in used]
        if rows:
            best = min(rows, key=lambda v: (abs(v.line - f.line), v.file, v.row))
            out[i] = best
            used.add(id(best))
    return out


@dataclass
class Score:
    """The tally of one (code, severity) group or of a whole severity."""

    findings: int = 0
    reviewed: int = 0
    true: int = 0
    false: int = 0
    debatable: int = 0

    def add(self, verdict: Verdict | None) -> None:
        """Count one finding and its verdict (None: not reviewed)."""
        self.findings += 1
        if verdict is not None:
            self.reviewed += 1
            setattr(self, verdict.judged or "false", getattr(self, verdict.judged or "false") + 1)

    def precision(self, debatable_true: bool = False) -> float | None:
        """True findings over reviewed ones (None when none is reviewed)."""
        if not self.reviewed:
            return None
        return (self.true + (self.debatable if debatable_true else 0)) / self.reviewed


def score(findings: list[Finding], joined: list[Verdict | None]
          ) -> tuple[dict[tuple[str, str], Score], dict[str, Score]]:
    """Per (code, severity) and per severity, the :class:`Score` of the findings."""
    per: dict[tuple[str, str], Score] = collections.defaultdict(Score)
    total: dict[str, Score] = collections.defaultdict(Score)
    for f, v in zip(findings, joined, strict=True):
        per[(f.code, f.severity)].add(v)
        total[f.severity].add(v)
    return dict(per), dict(total)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def report(per: dict[tuple[str, str], Score], total: dict[str, Score]) -> Iterator[str]:
    """The printed table: one line per (code, severity), then the totals per severity."""
    yield f"{'code':7} {'severity':8} {'found':>6} {'reviewed':>8} {'true':>5} {'false':>5} " \
          f"{'debat.':>6} {'prec.':>7} {'prec.+d':>7}"
    rows = sorted(per.items()) + [(("all", sev), s) for sev, s in sorted(total.items())]
    for (code, sev), s in rows:
        yield (f"{code:7} {sev:8} {s.findings:6} {s.reviewed:8} {s.true:5} {s.false:5} "
               f"{s.debatable:6} {_pct(s.precision()):>7} {_pct(s.precision(True)):>7}")


def stamp(folder: Path, findings: list[Finding], joined: list[Verdict | None]) -> int:
    """Write the message digest of each exactly matched finding into the ``message`` column of
    the verdict files that have that column; return how many rows changed."""
    new = {(v.file, v.row): digest(f.message) for f, v in zip(findings, joined, strict=True)
           if v is not None and v.line == f.line and v.message != digest(f.message)}
    changed = 0
    for p in sorted(folder.glob("*.tsv")):
        with p.open(newline="") as fh:
            reader = csv.DictReader(fh, delimiter="\t")
            fields = list(reader.fieldnames or [])
            rows = list(reader)
        if "message" not in fields or not any(k[0] == p.name for k in new):
            continue
        for i, r in enumerate(rows):
            if (p.name, i) in new:
                r["message"] = new[(p.name, i)]
                changed += 1
        with p.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fields, delimiter="\t", lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
    return changed


def write_unreviewed(out: Path, findings: list[Finding], joined: list[Verdict | None]) -> int:
    """Write the unreviewed error and warning findings (repository, path, line, code, severity,
    message) to ``out``; return how many."""
    rows = [f for f, v in zip(findings, joined, strict=True) if v is None and f.severity in ("error", "warning")]
    with out.open("w", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(["repository", "path", "line", "code", "severity", "message"])
        for f in rows:
            w.writerow([f.repository, f.path, f.line, f.code, f.severity, f.message])
    return len(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path, nargs="?", help="the folder of flattened corpus files")
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--verdicts", type=Path, default=VERDICTS)
    ap.add_argument("--dump", type=Path, help="also write the findings as JSON here")
    ap.add_argument("--from-dump", type=Path, help="read the findings from a --dump file")
    ap.add_argument("--unreviewed", type=Path, help="write unreviewed errors/warnings here")
    ap.add_argument("--stamp", action="store_true", help="fill the verdicts' message digests")
    ap.add_argument("--repos", type=Path, help="folder of checkouts OWNER+NAME: lint a script "
                    "at its place there when its origin repository is checked out")
    args = ap.parse_args(argv)
    try:
        verdicts = read_verdicts(args.verdicts)
        if args.from_dump:
            data = json.loads(args.from_dump.read_text())
            findings = [Finding(**f) for f in data["findings"]]
            summary = data.get("summary", {})
        elif args.corpus:
            findings, summary = lint_corpus(args.corpus, read_manifest(args.manifest),
                                            args.repos, read_origins(args.manifest))
        else:
            ap.error("give the corpus folder or --from-dump")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"corpus_review: {exc}", file=sys.stderr)
        return 2
    if args.dump:
        args.dump.write_text(json.dumps({"summary": summary,
                                         "findings": [asdict(f) for f in findings]}))
    joined = join(findings, verdicts)
    if summary:
        ch = summary.get("chunks", 0)
        print(f"files: {summary.get('files', 0)}  crashes: {summary.get('crashes', 0)}  "
              f"SB003: {summary.get('SB003', 0)}  chunks modelled: {summary.get('modelled', 0)}"
              f"/{ch} ({100 * summary.get('modelled', 0) / max(ch, 1):.2f}%)"
              + (f"  in a checkout: {summary['in-checkout']}" if "in-checkout" in summary
                 else ""))
    pairs = [(f, v) for f, v in zip(findings, joined, strict=True) if v is not None]
    print(f"verdicts: {len(verdicts)} rows, {len(pairs)} joined to a current finding "
          f"({sum(1 for f, v in pairs if v.line != f.line)} by message at a moved line)")
    per, total = score(findings, joined)
    for line in report(per, total):
        print(line)
    if args.unreviewed:
        n = write_unreviewed(args.unreviewed, findings, joined)
        print(f"unreviewed errors/warnings: {n} -> {args.unreviewed}")
    if args.stamp:
        print(f"stamped {stamp(args.verdicts, findings, joined)} message digests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
