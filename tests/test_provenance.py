"""facts/provenance.py: a template, a generator's input, or a script that a launcher next to it
submits with its own sbatch options (which win over #SBATCH lines, sbatch(1)): findings that
rest on those resources drop to info and say why; nothing else changes."""
from __future__ import annotations

import pytest

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


#: a template whose ``${name}`` placeholders a program elsewhere in the repository fills (the
#: form of moulin1024/ANEMOI: src/jobsub, filled by prc/app_pre.py's substitute_keys)
FILLED = ("#!/bin/bash\n#SBATCH --chdir ./job/${case_name}\n#SBATCH --ntasks ${job_np}\n"
          "#SBATCH --partition gpu\n#SBATCH --gres gpu:${job_np}\n\n"
          "cd src && mpirun -np ${job_np} ./solver >> ../log\n")
FILLER = ("import os\n\ndef prepare(case_name, config):\n"
          "    substitute_keys(config, dimen_tmp, dimen)\n\n\n"
          "    print('write jobsub...')\n"
          "    tmp = os.path.join(PATH['src'], 'jobsub')\n"
          "    out = os.path.join(case_path, 'src', case_name + '_src')\n"
          "    params = {'case_name': case_name, 'job_np': config['job_np']}\n"
          "    substitute_keys(params, tmp, out)\n")


def _repo(tmp_path, filler: str | None, git: bool = True):
    (tmp_path / "src").mkdir()
    (tmp_path / "prc").mkdir()
    if git:
        (tmp_path / ".git").mkdir()
    script = tmp_path / "src" / "jobsub"
    script.write_text(FILLED)
    if filler is not None:
        (tmp_path / "prc" / "app_pre.py").write_text(filler)
    return script


def test_a_program_elsewhere_in_the_repository_that_fills_the_file_demotes_sb107(tmp_path):
    script = _repo(tmp_path, FILLER)
    got = [d for d in lint(FILLED, str(script)).diagnostics if d.code == "SB107"]
    assert len(got) == 3 and all(d.severity is Severity.INFO for d in got)
    # the call next to the name (line 11), not the one filling another file (line 4)
    assert "prc/app_pre.py in its repository fills it in (`substitute_keys` on line 11" \
        in got[0].message


def test_without_a_fill_call_a_repository_root_or_with_only_a_submission_sb107_stays(tmp_path):
    def severity(name: str, filler: str, git: bool = True) -> Severity:
        (tmp_path / name).mkdir()
        script = _repo(tmp_path / name, filler, git)
        return severities(FILLED, str(script))["SB107"]
    assert severity("a", "print('write jobsub...')\nopen('jobsub')\n") is Severity.ERROR
    assert severity("b", FILLER, git=False) is Severity.ERROR  # no repository: no search
    # a line that runs sbatch builds a command line, it fills nothing
    submit = "cmd = 'sbatch --ntasks {} jobsub'.format(n)\nsubprocess.run(cmd, shell=True)\n"
    assert severity("c", submit) is Severity.ERROR
    # another file's name that merely contains this one's is not this file
    assert severity("d", FILLER.replace("'jobsub'", "'jobsub_gpu'")) is Severity.ERROR


def test_the_repository_files_read_are_recorded_for_the_cache(tmp_path):
    # every repository file read, and each folder listing that chose them, goes through
    # sbatch_lsp/elsewhere.py, whose record the result cache keys on
    script = _repo(tmp_path, FILLER)
    reads = lint(FILLED, str(script)).elsewhere
    assert str(tmp_path / "prc" / "app_pre.py") in {r.path for r in reads.files.values()}
    assert str(tmp_path / "prc") in {r.folder for r in reads.listings.values()}


def test_comments_that_tell_the_user_to_set_a_variable_before_submitting():
    from sbatch_lsp.facts.provenance import told_to_set
    text = ("#!/bin/bash\n# Usage:\n#   1. Export HF_TOKEN, HF_HOME, and UV_CACHE_DIR on shared "
            "storage.\n#   PROMPT=\"hi there\" DEBUG=1 sbatch run.sh\n"
            "# export NEMO_HOME=/path/to/shared\n#SBATCH --export=TRAIN_DIR=/x\n"
            "# HF_HOME left unset on purpose; the job is CPU-only\necho $X  # set X here\n")
    told = told_to_set(text)
    assert sorted(told) == ["DEBUG", "HF_HOME", "HF_TOKEN", "NEMO_HOME", "PROMPT",
                            "UV_CACHE_DIR"]
    line = text[told["HF_HOME"].start:told["HF_HOME"].end]
    assert line.startswith("#   1. Export HF_TOKEN")  # the first comment that says so
    # "unset" is not "set", #SBATCH lines and trailing comments after code are no comments here
    assert "TRAIN_DIR" not in told and "X" not in told


def test_sb401_on_an_unset_cache_the_comments_ask_for_is_an_info_naming_them():
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
            "#SBATCH --gpus-per-node=8\n# export HF_HOME=/lustre/$USER/hf\n"
            "srun python finetune.py --model_name_or_path meta-llama/Llama-3.1-8B\n")
    got = [d for d in lint(text, "x.sbatch").diagnostics if d.code == "SB401"]
    assert len(got) == 1 and got[0].severity is Severity.INFO
    assert "the comment on line 5 tells you to set HF_HOME before submitting" in got[0].message
    plain = text.replace("# export HF_HOME=/lustre/$USER/hf\n", "")
    assert severities(plain, "x.sbatch")["SB401"] is Severity.WARNING


def test_the_repository_search_stops_at_its_entry_budget(tmp_path, monkeypatch):
    from sbatch_lsp.facts import provenance
    script = _repo(tmp_path, FILLER)
    for n in range(30):
        (tmp_path / f"data{n:02}.bin").write_text("")
    provenance._subfolders.cache_clear()
    monkeypatch.setattr(provenance, "MAX_REPO_ENTRIES", 20)  # the root alone holds more
    assert provenance.repository_files(str(script)) == []
    assert severities(FILLED, str(script))["SB107"] is Severity.ERROR
    provenance._subfolders.cache_clear()


@pytest.mark.parametrize("text, found", [
    ("#SBATCH --gpus=${{ inputs.gpus }}", "${{ inputs.gpus }}"),
    ("#SBATCH --gpus={{ gpus }}", "{{ gpus }}"),
    ("x=$$ y=${{a}}", "${{a}}"),
    ("$ {{a}}", "{{a}}"),
    ("echo $X {{b}} ${{c}}", "{{b}}"),
    ("<ACCOUNT> {{x}}", "<ACCOUNT>"),
    ("echo ${X} $((1)) {{ unclosed", None),
])
def test_placeholder_spans(text, found):
    """A ``${{…}}`` placeholder's span holds its ``$``; the first placeholder is found."""
    from sbatch_lsp.facts.provenance import PLACEHOLDER

    m = PLACEHOLDER.search(text)
    assert (m.group(0) if m else None) == found


def test_a_script_path_in_a_symbolic_link_loop_lints(tmp_path):
    # the server may lint a document whose path no longer resolves: resolving it for the
    # repository search raised RuntimeError ("Symlink loop") out of lint()
    (tmp_path / "a.sbatch").symlink_to(tmp_path / "b.sbatch")
    (tmp_path / "b.sbatch").symlink_to(tmp_path / "a.sbatch")
    assert provenance_of(JOB, str(tmp_path / "a.sbatch")) is None
    assert severities(JOB, str(tmp_path / "a.sbatch"))["SB205"] is Severity.ERROR


@pytest.mark.parametrize("text", ["", "a", "a\n" * 14, "a\n" * 15, "a\n" * 16, "x" * 3000 + "\n",
                                  "a\r\n" * 20, "a\n" * 14 + "x" * 2100 + "\r\nb\n",
                                  "a\u2028b\x0cc\rd\r\n" * 8, "a\n" * 1023 + "\r\n"])
def test_the_header_lines_are_the_first_lines_with_their_breaks(text):
    from sbatch_lsp.facts.provenance import HEADER_LINES, _head_lines
    assert _head_lines(text) == text.splitlines(keepends=True)[:HEADER_LINES]


@pytest.mark.parametrize("text", ["<ACCOUNT>", "x <a> @B@ $@ <<EOF", "@NODES@", "<A\n>", "a@B1_@",
                                  "${x} <B> @C", "$x <lower> @lower@"])
def test_without_braces_the_placeholder_search_finds_what_the_full_one_does(text):
    from sbatch_lsp.facts.provenance import PLACEHOLDER, _holds_placeholder
    assert _holds_placeholder(text, False) == (PLACEHOLDER.search(text) is not None)
    assert _holds_placeholder(text, True) == (PLACEHOLDER.search(text) is not None)
