"""sbatch_lsp/elsewhere.py: the one door for reading files other than the script."""
from __future__ import annotations

import hashlib
import os
import random
import re

from sbatch_lsp import elsewhere
from sbatch_lsp.facts.provenance import LAUNCHER_NAME
from sbatch_lsp.lint import lint

JOB = "#!/bin/bash\n#SBATCH --time=00:10:00\nsrun python train.py\n"
SUBMIT = "sbatch --nodes 4 --gpus-per-node 8 train.sbatch\n"


def _touch_later(path, text: str) -> None:
    """Write ``text`` and move the modification time on (a same-second edit must still show)."""
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))


def test_read_text_reads_and_respects_the_limit(tmp_path):
    f = tmp_path / "a.sh"
    f.write_bytes(b"echo \xff hi\n")
    assert elsewhere.read_text(f) == "echo \ufffd hi\n"
    assert elsewhere.read_text(f, limit=4) is None
    assert elsewhere.read_text(tmp_path / "absent.sh") is None
    assert elsewhere.read_text(tmp_path) is None  # a folder is no file


def test_an_edit_is_seen_even_with_the_same_size(tmp_path):
    f = tmp_path / "submit.sh"
    f.write_text("sbatch -N 2 a\n")
    assert elsewhere.read_text(f) == "sbatch -N 2 a\n"
    _touch_later(f, "sbatch -N 4 a\n")
    assert elsewhere.read_text(f) == "sbatch -N 4 a\n"


def test_recording_lists_each_read_once_with_its_digest(tmp_path):
    f = tmp_path / "submit.sh"
    f.write_text("x\n")
    with elsewhere.recording() as reads:
        elsewhere.read_text(f)
        elsewhere.read_text(f)
        elsewhere.read_text(tmp_path / "gone.sh")
    assert [(r.path, r.digest) for r in reads.files.values()] == [
        (str(f), hashlib.sha256(b"x\n").hexdigest()),
        (str(tmp_path / "gone.sh"), elsewhere.MISSING)]
    # outside a recording nothing is recorded, and nested recordings keep their own reads
    with elsewhere.recording() as outer, elsewhere.recording() as inner:
        elsewhere.read_text(f)
    assert inner and not outer


def test_list_files_matches_regular_files_by_pattern(tmp_path):
    for name in ("submit.sh", "launch.py", "helper.py", "notes.txt", "RUN_ALL"):
        (tmp_path / name).write_text("")
    (tmp_path / "run_dir").mkdir()  # a folder named like a launcher is no launcher
    assert elsewhere.list_files(tmp_path, LAUNCHER_NAME) == (
        "RUN_ALL", "helper.py", "launch.py", "submit.sh")
    assert elsewhere.list_files(tmp_path / "nowhere", LAUNCHER_NAME) == ()


def test_current_tells_a_changed_file_or_listing(tmp_path):
    sub = tmp_path / "submit.sh"
    sub.write_text(SUBMIT)
    with elsewhere.recording() as reads:
        elsewhere.read_text(sub)
        elsewhere.list_files(tmp_path, LAUNCHER_NAME)
    (file_dep,) = reads.files.values()
    (listing,) = reads.listings.values()
    assert elsewhere.current(file_dep) == file_dep.digest
    assert elsewhere.current(listing) == listing.digest
    (tmp_path / "README.md").write_text("unrelated")  # not a launcher name: same listing
    assert elsewhere.current(listing) == listing.digest
    (tmp_path / "launch_all.sh").write_text("")  # a new launcher: the listing changed
    assert elsewhere.current(listing) != listing.digest
    _touch_later(sub, SUBMIT.replace("4", "8"))
    assert elsewhere.current(file_dep) != file_dep.digest
    sub.unlink()
    assert elsewhere.current(file_dep) == elsewhere.MISSING


def test_lint_result_names_the_sibling_launchers_it_read(tmp_path):
    job = tmp_path / "train.sbatch"
    job.write_text(JOB)
    (tmp_path / "submit.sh").write_text(SUBMIT)
    (tmp_path / "data.csv").write_text("1,2\n")
    # a GPU launcher without a GPU request (SB203, which rests on the GPU options): whether a
    # launcher beside the job passes them is looked for
    gpu_job = "#!/bin/bash\n#SBATCH --time=00:10:00\nsrun torchrun --nproc-per-node 8 train.py\n"
    res = lint(gpu_job, str(job))
    assert [os.path.basename(r.path) for r in res.elsewhere.files.values()] == ["submit.sh"]
    assert [r.folder for r in res.elsewhere.listings.values()] == [str(tmp_path)]
    assert [d.severity.name for d in res.diagnostics if d.code == "SB203"] == ["INFO"]
    # a text that is not on disk reads nothing else
    assert not lint(gpu_job, str(tmp_path / "unsaved.sbatch")).elsewhere
    # nor does a job none of whose findings could change with what a launcher passes
    assert not lint(JOB, str(job)).elsewhere


def test_launcher_name_finds_the_names_of_its_spelled_out_form():
    # LAUNCHER_NAME groups its words by their first letter (a faster search): the same names
    spelled_out = re.compile(r"(?i:submit|launch|run|start|sweep|queue|schedul)|.\.py$")
    names = ["submit.sh", "SUBMIT", "x_Start", "sweep.yaml", "reschedule", "LaunchAll",
             "prune", "queue_jobs", "job.py", ".py", "a.PY", "strat.sh", "s", "sched",
             "notes.txt", "py", "x\n.py", "Run", "srun.sh", "slurm_launch"]
    names += ["".join(random.Random(k).choices("sSubmitRUNlaqchedwp.y_", k=8))
              for k in range(3000)]
    for name in names:
        assert (re.search(LAUNCHER_NAME, name) is None) == (spelled_out.search(name) is None), \
            name
