"""Files sourced from disk (shell/sourced.py): their assignments and exports count as the
script's own from the ``source`` line on; findings about their own text are not the script's,
and no fix edits them."""
import os

import pytest

from sbatch_lsp.facts.steps import facts_of
from sbatch_lsp.lint import job_of, lint
from sbatch_lsp.shell import sourced

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"
TASK = ("srun bash -c 'torchrun --nnodes=2 --nproc-per-node=4 --node-rank=$SLURM_NODEID "
        "--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT t.py'\n")
ENV = ('MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)\n'
       "MASTER_PORT=29501\n")


def _write(folder, name, text):
    p = folder / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def _lint(folder, body, env=None, name="job.sbatch"):
    if env is not None:
        for k, v in env.items():
            _write(folder, k, v)
    p = _write(folder, name, HEAD + body)
    return lint(p.read_text(), str(p))


def _codes(result):
    return sorted((d.code, d.severity.name.lower()) for d in result.diagnostics)


@pytest.mark.parametrize("line", [
    "source ./env.sh",
    ". env.sh",
    'source "$SLURM_SUBMIT_DIR/env.sh"',
    "source ${SLURM_SUBMIT_DIR}/env.sh",
    'source "$(dirname "$0")/env.sh"',
    'SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)\nsource "$SCRIPT_DIR/env.sh"',
    'HERE="$(dirname "$(readlink -f "$0")")"\n. "$HERE"/env.sh',
    "source sub/../env.sh",
])
def test_exports_in_a_sourced_file_reach_the_tasks(tmp_path, line):
    unexported = _lint(tmp_path, line + "\n" + TASK, {"env.sh": ENV})
    assert _codes(unexported) == [("SB302", "error")] * 2
    exported = _lint(tmp_path, line + "\n" + TASK,
                     {"env.sh": "export " + ENV.replace("\nM", "\nexport M")})
    assert _codes(exported) == []
    env = facts_of(exported.job).steps[0].env
    assert env["MASTER_PORT"].exported and env["MASTER_PORT"].value == "29501"


def test_a_file_that_is_not_there_or_not_ours_is_not_read(tmp_path):
    """Absent, outside the script's folder tree (absolute, $HOME, ~), or unknown: nothing read,
    the script reads as before (the variables are unset: no SB302, which needs an
    assignment)."""
    _write(tmp_path, "env.sh", "export " + ENV.replace("\nM", "\nexport M"))
    beside = tmp_path.parent / (tmp_path.name + "x")  # a name that only starts like ours
    _write(beside, "env.sh", "export " + ENV.replace("\nM", "\nexport M"))
    for line in ["source ./missing.sh", f"source {tmp_path.parent}/other/env.sh",
                 f"source {tmp_path}x/env.sh",
                 "source $HOME/env.sh", "source ~/env.sh", "source $UNKNOWN/env.sh",
                 "source `pwd`/env.sh"]:
        result = _lint(tmp_path, line + "\nMASTER_ADDR=x\n" + TASK)
        assert not result.job.script.imports, line
        assert ("SB302", "error") in _codes(result), line


def test_an_absolute_path_is_read_only_inside_the_script_folder(tmp_path):
    result = _lint(tmp_path, f"source {tmp_path}/env.sh\n" + TASK,
                   {"env.sh": "export " + ENV.replace("\nM", "\nexport M")})
    assert _codes(result) == []


def test_without_a_path_nothing_is_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "env.sh", ENV)
    assert not job_of(HEAD + "source ./env.sh\n" + TASK).script.imports


def test_the_value_counts_from_the_source_line_on(tmp_path):
    """A step before the ``source`` line does not see what the file sets."""
    result = _lint(tmp_path, TASK + "source ./env.sh\n" + TASK,
                   {"env.sh": "export " + ENV.replace("\nM", "\nexport M")})
    steps = facts_of(result.job).steps
    assert "MASTER_PORT" not in steps[0].env and steps[1].env["MASTER_PORT"].exported


def test_the_last_assignment_in_the_file_wins_and_reads_earlier_values(tmp_path):
    env = ("PORT=1\nPORT=29502\nBASE=/scratch/run\n"
           'export LAUNCHER="torchrun --nnodes=2 --nproc-per-node=4"\n')
    result = _lint(tmp_path, "source ./env.sh\nexport P=$PORT\nsrun $LAUNCHER t.py\n",
                   {"env.sh": env})
    step = facts_of(result.job).steps[0]
    assert step.env["P"].scope.label == "const"
    assert result.job.script.value_at("PORT", len(result.job.source.text)).value.value == "29502"
    # the launcher the file's variable holds is read through the word split
    assert step.launcher == "torchrun" and step.world_size == 8


def test_findings_about_the_sourced_file_are_not_reported_and_fixes_do_not_edit_it(tmp_path):
    """SB302's fix inserts `export ` before an assignment: for one in env.sh it would edit the
    `source` line, so it is dropped; a token in env.sh is the file's finding, not the
    script's."""
    env = ENV + "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH\nsrun hostname\n"
    result = _lint(tmp_path, "source ./env.sh\n" + TASK, {"env.sh": env})
    assert _codes(result) == [("SB302", "error")] * 2
    assert all(not d.fixes for d in result.diagnostics)
    text = result.source.text
    where = text.index("source ./env.sh")
    assert [(r.start, r.end, r.message) for r in result.diagnostics[0].related] == \
        [(where, where + len("source ./env.sh"), "MASTER_ADDR is set here (in env.sh, sourced here)")]
    local = _lint(tmp_path, ENV + TASK, name="inline.sbatch")
    assert local.diagnostics[0].fixes, "the same script written inline has the fix"
    assert "hf_abc" not in repr([d.message for d in result.diagnostics])


def test_cycles_depth_and_non_text_files(tmp_path):
    _write(tmp_path, "a.sh", "source ./b.sh\nexport FROM_A=1\n")
    _write(tmp_path, "b.sh", 'source "$(dirname "${BASH_SOURCE[0]}")/a.sh"\nexport FROM_B=1\n')
    _write(tmp_path, "bin.sh", "export X=1\n\0\n")
    _write(tmp_path, "big.sh", "export Y=1\n" + "#" * (sourced.MAX_BYTES + 1))
    result = _lint(tmp_path, "source ./a.sh\nsource ./bin.sh\nsource ./big.sh\nsrun true\n")
    env = facts_of(result.job).steps[0].env
    assert env["FROM_A"].exported and env["FROM_B"].exported
    assert "X" not in env and "Y" not in env
    for k in range(6):
        _write(tmp_path, f"d{k}.sh", f"source ./d{k + 1}.sh\nexport D{k}=1\n")
    deep = _lint(tmp_path, "source ./d0.sh\nsrun true\n")  # (env reads need the job)
    env = facts_of(deep.job).steps[0].env
    assert {n for n in env if n.startswith("D")} == {f"D{k}" for k in range(sourced.MAX_DEPTH)}


def test_bash_source_in_a_sourced_file_is_its_own_folder(tmp_path):
    _write(tmp_path, "lib/common.sh", 'source "$(dirname "${BASH_SOURCE[0]}")/vars.sh"\n')
    _write(tmp_path, "lib/vars.sh", "export IN_LIB=1\n")
    _write(tmp_path, "vars.sh", "export IN_TOP=1\n")
    result = _lint(tmp_path, "source lib/common.sh\nsrun true\n")  # (env reads need the job)
    env = facts_of(result.job).steps[0].env
    assert "IN_LIB" in env and "IN_TOP" not in env


def test_an_open_document_wins_over_the_disk(tmp_path):
    _write(tmp_path, "env.sh", ENV)
    p = _write(tmp_path, "job.sbatch", HEAD + "source ./env.sh\n" + TASK)
    target = os.path.normpath(str(tmp_path / "env.sh"))
    with sourced.documents(lambda path: "export " + ENV.replace("\nM", "\nexport M")
                           if path == target else None):
        assert _codes(lint(p.read_text(), str(p))) == []
    assert len(lint(p.read_text(), str(p)).diagnostics) == 2


def test_the_cli_cache_keys_on_the_sourced_file(tmp_path, capsys, monkeypatch):
    """The sourced file is read through sbatch_lsp/elsewhere.py: the cache entry holds its
    digest, so editing or removing it (the script's bytes unchanged) gives a fresh result."""
    from sbatch_lsp.cli import main

    def run() -> str:
        capsys.readouterr()
        main(["--format", "concise", str(script)])
        return capsys.readouterr().out

    monkeypatch.chdir(tmp_path)
    env = _write(tmp_path, "env.sh", ENV)
    script = _write(tmp_path, "job.sbatch", HEAD + "source ./env.sh\n" + TASK)
    first = run()
    assert first.count("SB302") == 2 and run() == first  # a hit
    env.write_text("export " + ENV.replace("\nM", "\nexport M"))
    st = env.stat()
    os.utime(env, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert "SB302" not in run()
    env.unlink()
    assert "SB302" not in run() and run() == run()
    env.write_text(ENV)
    assert run() == first
