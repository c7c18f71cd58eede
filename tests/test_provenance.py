"""facts/provenance.py: a template, a generator's input, or a script that a launcher next to it
submits with its own sbatch options (which win over #SBATCH lines, sbatch(1)): findings that
rest on those resources drop to info and say why; nothing else changes."""
from __future__ import annotations

from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.facts.provenance import provenance_of, submitted_options
from sbatch_lsp.lint import lint

#: multi-node torchrun in the batch shell (SB205, rests on nodes) and no GPU request (SB203)
JOB = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n\n"
       "torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d "
       "--rdzv-endpoint=\"$MASTER_ADDR:29500\" train.py\n")


def severities(text: str, path: str) -> dict[str, Severity]:
    return {d.code: d.severity for d in lint(text, path).diagnostics}


def test_a_plain_file_keeps_its_findings(tmp_path):
    f = tmp_path / "train.sbatch"
    f.write_text(JOB)
    got = severities(JOB, str(f))
    assert got["SB203"] is Severity.ERROR and got["SB205"] is Severity.ERROR
    assert provenance_of(JOB, str(f)) is None


def test_a_sibling_launcher_that_passes_gpus_demotes_only_the_gpu_finding(tmp_path):
    f = tmp_path / "train.sbatch"
    f.write_text(JOB)
    (tmp_path / "submit.sh").write_text("#!/bin/bash\nsbatch --gpus-per-node=8 \\\n  train.sbatch\n")
    diags = {d.code: d for d in lint(JOB, str(f)).diagnostics}
    assert diags["SB203"].severity is Severity.INFO
    assert "submit.sh next to it submits it" in diags["SB203"].message
    assert diags["SB205"].severity is Severity.ERROR  # the node count is still the file's


def test_a_python_launcher_is_read_by_its_string_literals(tmp_path):
    text = 'subprocess.run(["sbatch", "-N", str(n), "--gpus=16", "train.sbatch"], check=True)\n'
    assert submitted_options(text, "train.sbatch") == {"nodes", "gpus"}
    assert submitted_options(text, "eval.sbatch") == set()
    assert submitted_options("sbatch other.sbatch\n# train.sbatch\n", "train.sbatch") == set()


def test_templates_and_generator_inputs_demote_resource_findings():
    tpl = JOB.replace("#SBATCH --ntasks-per-node=1", "#SBATCH --account=<ACCOUNT>")
    got = lint(tpl, "train.sbatch").diagnostics
    sb205 = next(d for d in got if d.code == "SB205")
    assert sb205.severity is Severity.INFO and "`<ACCOUNT>` is a placeholder" in sb205.message
    assert severities(JOB, "train.sbatch.j2")["SB205"] is Severity.INFO
    header = JOB.replace("#SBATCH --nodes=2", "# This file is a template: fill in the account\n"
                                               "#SBATCH --nodes=2")
    assert severities(header, "train.sbatch")["SB205"] is Severity.INFO


def test_a_placeholder_in_a_comment_or_a_rule_without_resources_changes_nothing():
    usage = JOB.replace("#!/bin/bash\n", "#!/bin/bash\n# usage: sbatch train.sbatch <CONFIG>\n")
    assert severities(usage, "train.sbatch")["SB205"] is Severity.ERROR
    leak = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --account={{ account }}\nexport HF_TOKEN=hf_" + \
        "a" * 34 + "\n"
    assert severities(leak, "x.sbatch")["SB501"] is Severity.ERROR  # secrets rest on no resource
