"""The corpus precision review (issue 10 item 7): the verdict file's shape, and each false-positive
class the review found and fixed, as a paraphrased script (tests/corpus_review/facts.tsv names the
real files; no script text is kept here)."""
import csv
import sys
from pathlib import Path

from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.lint import lint

REVIEW = Path(__file__).parent / "corpus_review" / "facts.tsv"
COLUMNS = ["repository", "path", "line", "code", "severity", "verdict", "reason", "message"]


def _rows() -> list[dict[str, str]]:
    with REVIEW.open(newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def test_verdict_file_shape():
    rows = _rows()
    with REVIEW.open() as f:
        assert f.readline().rstrip("\n").split("\t") == COLUMNS
    assert all(r["verdict"] in ("true", "false", "debatable") for r in rows)
    assert all(r["line"].isdigit() and r["code"].startswith("SB") and r["reason"] for r in rows)
    assert all(r["severity"] in ("error", "warning") for r in rows)
    families = [r for r in rows if r["code"][2] in "2345"]
    rest = [r for r in rows if r["code"][2] not in "2345"]
    assert len(rest) >= 150 and families


def _at_least_warning(text: str, code: str) -> list:
    return [d for d in lint(text, "job.sbatch").diagnostics
            if d.code == code and d.severity >= Severity.WARNING]


def test_site_plugin_options_are_info():
    text = "#!/bin/bash\n#SBATCH --quotatype=reserved\n#SBATCH --fpgalink=n00:acl0:ch0-n01:acl0:ch0\n"
    assert not _at_least_warning(text + "hostname\n", "SB103")


def test_batch_value_in_a_one_task_step_is_its_own():
    """One node, one task: the batch shell's SLURM_PROCID (0) is that task's own."""
    text = ("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
            'srun bash -c "torchrun --nproc_per_node 8 --nnodes 1 --node_rank $SLURM_PROCID '
            '--master_addr $(hostname) --master_port 29500 train.py"\n')
    assert not _at_least_warning(text, "SB301")
    two = text.replace("-N 1", "-N 2").replace("--nnodes 1", "--nnodes 2")
    assert _at_least_warning(two, "SB301")


def test_exported_node_rank_no_launcher_reads():
    """torchrun takes --node-rank (or PET_NODE_RANK), never NODE_RANK: an exported NODE_RANK
    of 0 under a c10d torchrun reaches nothing the script shows."""
    text = ("#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:8\n"
            'export MASTER_ADDR=$(scontrol show hostname "$SLURM_JOB_NODELIST" | head -n 1)\n'
            "export NODE_RANK=$SLURM_NODEID\n"
            'srun torchrun --nproc_per_node=8 --nnodes="$SLURM_NNODES" --rdzv_backend=c10d '
            '--rdzv_endpoint="$MASTER_ADDR:29500" train.py\n')
    assert not _at_least_warning(text, "SB301")
    reads = text.replace('train.py\n', "train.py\n") + \
        "srun bash -c 'torchrun --node_rank=$NODE_RANK --nnodes=4 x.py'\n"
    assert _at_least_warning(reads, "SB301")


# ---- the scoring script (benchmarks/corpus_review.py) on a tiny synthetic corpus ----------------

def _scorer():
    import importlib.util
    path = Path(__file__).parent.parent / "benchmarks" / "corpus_review.py"
    spec = importlib.util.spec_from_file_location("corpus_review", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["corpus_review"] = mod  # dataclasses look their module up while building
    spec.loader.exec_module(mod)
    return mod


LATE = "#!/bin/bash\n#SBATCH -N 1\nmodule load x\n#SBATCH --time=10\nsrun hostname\n"
NOLOG = "#!/bin/bash\n#SBATCH --output=run-%A.log\n#SBATCH --array=1-4\nsrun hostname\n"


def _corpus(tmp_path, late: str = LATE, verdicts: str = ""):
    corpus, review = tmp_path / "corpus", tmp_path / "review"
    corpus.mkdir()
    review.mkdir()
    (corpus / "o__r__a.sh").write_text(late)
    (corpus / "o__r__b.sh").write_text(NOLOG)
    manifest = tmp_path / "MANIFEST.tsv"
    manifest.write_text("repo\tcommit\tpath\tlocal_file\tlines\tcategory\torigin_repo\n"
                        "o/r\tc\ta.sh\to__r__a.sh\t5\twild\to/r\n"
                        "o/r\tc\tdir/b.sh\to__r__b.sh\t4\twild\to/r\n")
    (review / "v.tsv").write_text("repository\tpath\tline\tcode\tseverity\tverdict\treason\tmessage\n"
                                  + verdicts)
    return corpus, review, manifest


def test_scorer_joins_on_line_and_counts_debatable(tmp_path):
    cr = _scorer()
    corpus, review, manifest = _corpus(tmp_path, verdicts=(
        "o/r\ta.sh\t4\tSB101\terror\ttrue\tlate directive\t\n"
        "o/r\tdir/b.sh\t2\tSB113\twarning\tdebatable\tmay be appended to on purpose\t\n"
        "o/r\tdir/b.sh\t2\tSB999\twarning\tfalse\tno such finding\t\n"))
    findings, summary = cr.lint_corpus(corpus, cr.read_manifest(manifest))
    assert summary["files"] == 2 and summary.get("crashes", 0) == 0
    keys = {(f.path, f.line, f.code, f.severity) for f in findings}
    assert ("a.sh", 4, "SB101", "error") in keys and ("dir/b.sh", 2, "SB113", "warning") in keys
    joined = cr.join(findings, cr.read_verdicts(review))
    per, total = cr.score(findings, joined)
    assert (per[("SB101", "error")].true, per[("SB101", "error")].reviewed) == (1, 1)
    s = per[("SB113", "warning")]
    assert (s.reviewed, s.debatable, s.precision(), s.precision(True)) == (1, 1, 0.0, 1.0)
    assert total["error"].precision() == 1.0
    out = tmp_path / "unreviewed.tsv"
    rows = [r.split("\t") for r in (out.read_text().splitlines()[1:]
                                    if cr.write_unreviewed(out, findings, joined) else [])]
    assert not any(r[3] in ("SB101", "SB113") for r in rows)  # both are reviewed


def test_scorer_verdict_survives_a_moved_line_by_its_message(tmp_path):
    cr = _scorer()
    corpus, review, manifest = _corpus(tmp_path, verdicts=(
        "o/r\ta.sh\t4\tSB101\terror\tfalse\tlate directive\t\n"))
    findings, _ = cr.lint_corpus(corpus, cr.read_manifest(manifest))
    joined = cr.join(findings, cr.read_verdicts(review))
    assert cr.stamp(review, findings, joined) == 1
    stamped = cr.read_verdicts(review)[0]
    assert stamped.message and stamped.reason == "late directive"
    # a comment line above moves the finding to line 5 (and its message names line 4, not 3)
    moved = LATE.replace("#SBATCH -N 1\n", "#SBATCH -N 1\n# a note\n")
    (corpus / "o__r__a.sh").write_text(moved)
    findings, _ = cr.lint_corpus(corpus, cr.read_manifest(manifest))
    [late] = [f for f in findings if f.code == "SB101"]
    assert late.line == 5
    [v] = [v for f, v in zip(findings, cr.join(findings, cr.read_verdicts(review)), strict=True) if f is late]
    assert v is not None and v.verdict == "false"
    # without the digest the verdict stays on line 4 and the finding is unreviewed
    (review / "v.tsv").write_text("repository\tpath\tline\tcode\tverdict\n"
                                  "o/r\ta.sh\t4\tSB101\tfalse\n")
    joined = cr.join(findings, cr.read_verdicts(review))
    assert joined[findings.index(late)] is None
    per, _ = cr.score(findings, joined)
    assert per[("SB101", "error")].reviewed == 0


def test_scorer_a_verdict_joins_one_finding_and_checked_silences_join_none(tmp_path):
    cr = _scorer()
    two = LATE + "#SBATCH --mem=1G\n"
    corpus, review, manifest = _corpus(tmp_path, late=two, verdicts=(
        "o/r\ta.sh\t4\tSB101\terror\ttrue\tlate\tx\n"
        "o/r\ta.sh\t6\tSB101\terror\ttrue-negative\tchecked silence\t\n"))
    findings, _ = cr.lint_corpus(corpus, cr.read_manifest(manifest))
    joined = cr.join(findings, cr.read_verdicts(review))
    late = [(f.line, v is not None) for f, v in zip(findings, joined, strict=True) if f.code == "SB101"]
    assert late == [(4, True), (6, False)]


def test_scorer_bad_verdict_file_is_a_message(tmp_path, capsys):
    cr = _scorer()
    corpus, review, manifest = _corpus(tmp_path, verdicts="o/r\ta.sh\tfour\tSB101\terror\ttrue\tx\t\n")
    assert cr.main([str(corpus), "--manifest", str(manifest), "--verdicts", str(review)]) == 2
    err = capsys.readouterr().err
    assert "v.tsv row 2" in err and "Traceback" not in err


# ---- SB1xx false classes of the review (session 4) ----------------------------------------------

def _severities(text: str, code: str) -> list[tuple[int, str]]:
    r = lint(text, "job.sbatch")
    return [(r.source.line_of(d.start) + 1, d.severity.label) for d in r.diagnostics
            if d.code == code]


def test_spaced_lookalike_beside_directives_is_a_disabled_line():
    """`# SBATCH` next to real directives (a switched-off alternative): info; a case typo
    glued to the `#` or an indented `#SBATCH` stays a warning."""
    text = ("#!/bin/bash\n#SBATCH --nodes=1\n# SBATCH --nodes=16\n#  sbatch --mem=8gb\n"
            "#SBATCh --time=10\n  #SBATCH --ntasks=2\nsrun hostname\n")
    assert _severities(text, "SB102") == [(3, "info"), (4, "info"), (5, "warning"),
                                          (6, "warning")]


def test_spaced_lookalikes_with_no_directive_at_all_stay_warnings():
    text = "#!/bin/bash\n# SBATCH --nodes=4\n# SBATCH --time=10\nsrun hostname\n"
    assert _severities(text, "SB102") == [(2, "warning"), (3, "warning")]


def test_directives_behind_a_placeholder_line_are_info():
    """A lone `${OPTION}` line (a template's slot for a directive) stops sbatch, but the lines
    behind the run of placeholder lines are read once the template is filled; a directive
    after a real command stays an error, and names that command."""
    text = ("#!/bin/bash\n${PARTITION_OPTION}\n#SBATCH --nodes=2\n{{ extra }}\n#SBATCH -t 10\n"
            "module load x\n#SBATCH --mem=1G\nsrun hostname\n")
    assert _severities(text, "SB101") == [(3, "info"), (5, "info"), (7, "error")]
    [late] = [d for d in lint(text, "job.sbatch").diagnostics if d.code == "SB101"
              and d.severity == Severity.ERROR]
    assert "(line 6)" in late.message
    real = "#!/bin/bash\necho start\n#SBATCH --nodes=2\nsrun hostname\n"
    assert _severities(real, "SB101") == [(3, "error")]


def test_generator_input_header_makes_directive_text_info():
    text = ("#!/bin/bash\n# This is a generator script. Use it as input for the code generator.\n"
            "#SBATCH -N $PY_CODE_GEN N$\nsrun hostname\n")
    assert {s for _, s in _severities(text, "SB107") + _severities(text, "SB108")} == {"info"}
    # the same text with no such header, or a header that only mentions a generator: errors
    plain = text.replace("This is a generator script. Use it as input for the code generator.",
                         "Uses the random generator of numpy.")
    assert "error" in {s for _, s in _severities(plain, "SB107")}
    # a launcher template (a header saying "template") leaves $VAR literal: still an error
    tmpl = text.replace("This is a generator script. Use it as input for the code generator.",
                        "This file is a template: copy it and edit the account.")
    assert "error" in {s for _, s in _severities(tmpl, "SB107")}


def test_every_verdict_file_reads_and_uses_known_verdicts():
    cr = _scorer()
    rows = cr.read_verdicts(REVIEW.parent)
    assert {r.verdict for r in rows} <= {"true", "false", "debatable", "false-fixed",
                                         "true-negative"}
    assert all(r.code.startswith("SB") and r.line > 0 and r.repository.count("/") == 1
               for r in rows)
    assert all(not r.message or len(r.message) == 12 for r in rows)


def test_no_two_verdicts_on_one_finding_disagree():
    """Several rows may share (repository, path, line, code) when that line holds several
    findings of one code, but a re-review replaces the old row instead of contradicting it."""
    cr = _scorer()
    seen: dict[tuple, set] = {}
    for r in cr.read_verdicts(REVIEW.parent):
        if r.judged:
            seen.setdefault((r.repository, r.path, r.line, r.code), set()).add(r.judged)
    assert not {k: v for k, v in seen.items() if len(v) > 1}


def test_scorer_lints_a_script_in_its_checkout_where_one_is_given(tmp_path):
    # a flattened template whose filler lives elsewhere in its repository: an error alone, an
    # info at its place in a checkout of that repository (facts/provenance.py's search)
    cr = _scorer()
    template = "#!/bin/bash\n#SBATCH --ntasks ${job_np}\nsrun ./solver\n"
    corpus, _review, manifest = _corpus(tmp_path, late=template)
    manifest.write_text("repo\tcommit\tpath\tlocal_file\tlines\tcategory\torigin_repo\n"
                        "h/jobspec-database\tc\tdata/o/r/src/a.sh\to__r__a.sh\t3\twild\to/r\n")
    assert cr.origin_path("h/jobspec-database", "data/o/r/src/a.sh", "o/r") == ("o/r", "src/a.sh")
    repos = tmp_path / "repos"
    (repos / "o+r" / "src").mkdir(parents=True)
    (repos / "o+r" / ".git").mkdir()
    (repos / "o+r" / "src" / "a.sh").write_text("the checkout's own copy is not read\n")
    (repos / "o+r" / "fill.py").write_text(
        "tmp = open('src/a.sh').read()\nout = string.Template(tmp).substitute(job_np=4)\n")
    alone, _ = cr.lint_corpus(corpus, cr.read_manifest(manifest))
    placed, summary = cr.lint_corpus(corpus, cr.read_manifest(manifest), repos,
                                     cr.read_origins(manifest))
    assert summary["in-checkout"] == 1
    assert [(f.code, f.severity) for f in alone if f.code == "SB107"] == [("SB107", "error")]
    assert [(f.code, f.severity) for f in placed if f.code == "SB107"] == [("SB107", "info")]
