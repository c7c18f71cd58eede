"""The CLI's result cache (sbatch_lsp/cache.py) and --jobs: same results with and without them.

A hit is told from a miss by tampering: an entry whose stored text is replaced by a marker
shows the marker when it is served, and the real findings when it is not.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sbatch_corpus
from rule_pages import ROOT, examples, pages
from sbatch_lsp import cache
from sbatch_lsp import cli
from sbatch_lsp.cli import main

SHARED_CASES = ROOT.parent / "shared" / "cases"
BAD = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=n1:29400 t.py
"""
TOKEN = "hf_" + "FAKE" * 8 + "42"
SECRET = f"""#!/bin/bash
#SBATCH --nodes=2
#SBATCH --gpus-per-node=8
export HF_TOKEN={TOKEN}
export WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567
srun --ntasks-per-node=8 python train.py --token {TOKEN}
echo "{TOKEN}"
"""
MARK = "TAMPERED-ENTRY-SERVED\n"


def lint_run(capsys, *args: str) -> tuple[int, str, str]:
    """(exit code, standard output, standard error) of an in-process ``sbatch-lint`` call."""
    capsys.readouterr()
    code = main(list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json"))


def tamper(folder: Path) -> None:
    """Replace the stored text of every entry by :data:`MARK` (a valid entry still)."""
    for e in entries(folder):
        entry = json.loads(e.read_text())
        entry["report"]["text_out"] = MARK
        e.write_text(json.dumps(entry))


def corpus_files(root: Path) -> list[str]:
    """Every script the project holds, written under ``root``: the rule pages' examples, the
    cases (tests/cases and ../shared/cases) and the generated corpus."""
    scripts = [text.encode() for p in pages() for _, text in examples(p)]
    scripts += [f.read_bytes() for f in sorted((ROOT / "tests" / "cases").glob("*.sbatch"))]
    scripts += [f.read_bytes() for f in sorted(SHARED_CASES.glob("*.sbatch"))]
    scripts += [data for _, data in sbatch_corpus.cases()]
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for i, data in enumerate(scripts):
        f = root / f"s{i:05d}.sbatch"
        f.write_bytes(data)
        out.append(str(f))
    return out


def test_same_results_with_and_without_cache(tmp_path, capsys):
    files = corpus_files(tmp_path / "scripts")
    assert len(files) > 1000
    store = tmp_path / "cache"
    # JSON over every script; the concise text over the rule pages' examples, the cases and
    # the start of the generated corpus
    stored = 0
    for fmt, chosen in (("json", files), ("concise", files[:len(files) - 900])):
        fresh = lint_run(capsys, "--no-cache", "--jobs", "1", "--format", fmt, *chosen)
        filled = lint_run(capsys, "--cache-dir", str(store), "--jobs", "1", "--format", fmt,
                          *chosen)
        warm = lint_run(capsys, "--cache-dir", str(store), "--jobs", "1", "--format", fmt,
                        *chosen)
        assert fresh == filled == warm
        assert fresh[1].count("SB") > 200  # findings, not an empty report
        unlinted = fresh[2].count("sbatch-lint: ")
        assert unlinted < 10
        stored += len(chosen) - unlinted
        assert len(entries(store)) == stored  # an entry per file linted, per format
    assert not (tmp_path / "scripts" / cache.FOLDER).exists()


@pytest.mark.timeout(2400)  # four cold runs over 1,255 files on a shared machine
def test_real_corpus_same_with_and_without_cache(tmp_path, capsys):
    """Off unless CORPUS_DIR names a folder of real job scripts (never committed): JSON and
    concise findings of every file afresh, while filling the cache, and from it, at --jobs 2.
    The files stay where they are, so sibling launchers are read and checked as in use."""
    folder = os.environ.get("CORPUS_DIR")
    if not folder:
        return
    files = sorted(str(p) for p in Path(folder).iterdir()
                   if p.is_file() and not p.name.startswith((".", "_")))
    store = tmp_path / "cache"
    for fmt in ("json", "concise"):
        fresh = lint_run(capsys, "--no-cache", "--jobs", "2", "--format", fmt, *files)
        run = ("--cache-dir", str(store), "--jobs", "2", "--format", fmt, *files)
        assert fresh == lint_run(capsys, *run) == lint_run(capsys, *run)
        assert fresh[1].count("SB") > 1000


def test_text_format_hit_and_miss(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "a.sbatch"
    f.write_text(BAD)
    first = lint_run(capsys, str(f))
    assert first[0] == 1 and "SB201" in first[1]
    folder = tmp_path / cache.FOLDER  # no configuration: the current directory
    assert len(entries(folder)) == 1
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"
    assert lint_run(capsys, str(f)) == first
    tamper(folder)
    assert MARK in lint_run(capsys, str(f))[1]  # served from the cache
    assert lint_run(capsys, "--no-cache", str(f)) == first  # --no-cache reads nothing
    assert MARK in lint_run(capsys, str(f))[1]  # ... and wrote nothing
    # another output format or colour is another key
    assert lint_run(capsys, "--format", "concise", str(f))[1].count("SB201") == 1
    # a content change is a miss
    f.write_text(BAD.replace("--nodes=2", "--nodes=3"))
    changed = lint_run(capsys, str(f))
    assert MARK not in changed[1] and "SB201" in changed[1]
    # a new tool (another version or source file) is a miss
    tamper(folder)
    monkeypatch.setattr(cache, "_tool", "0" * 64)
    assert lint_run(capsys, str(f)) == changed


def test_config_change_is_a_miss_and_cache_sits_beside_the_config(tmp_path, capsys,
                                                                   monkeypatch):
    project = tmp_path / "project"
    (project / "jobs").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    conf = project / ".sbatch-lint.toml"
    conf.write_text('ignore = ["SB301"]\n')
    f = project / "jobs" / "a.sbatch"
    f.write_text(BAD)
    first = lint_run(capsys, str(f))
    assert "SB201" in first[1]
    folder = project / cache.FOLDER
    assert len(entries(folder)) == 1 and not (tmp_path / cache.FOLDER).exists()
    tamper(folder)
    assert MARK in lint_run(capsys, str(f))[1]
    conf.write_text('ignore = ["SB201"]\n')
    second = lint_run(capsys, str(f))
    assert MARK not in second[1] and "SB201" not in second[1]
    # the same settings in another order are the same key
    conf.write_text('ignore = ["SB201"]\nselect = ["SB2", "SB3"]\n')
    lint_run(capsys, str(f))
    tamper(folder)
    conf.write_text('select = ["SB3", "SB2"]\nignore = ["SB201"]\n')
    assert MARK in lint_run(capsys, str(f))[1]
    # command-line selections are part of the effective configuration
    tamper(folder)
    third = lint_run(capsys, "--extend-select", "SB201", str(f))[1]
    assert MARK not in third and "SB201" in third


@pytest.mark.parametrize("damage", [
    b"", b"{", b"\x00\xff garbage", b'{"schema": 1}', b"[1, 2]",
    "truncate", "foreign-key", "wrong-type", "extra-field",
    # malformed lists of what the lint read besides the script (cache.dependencies)
    *[("elsewhere", deps) for deps in (
        None, [], {"files": []}, {"files": [["x", 1]], "listings": []},
        {"files": [["x", "1", "-"]], "listings": []}, {"files": [], "listings": [["."]]},
        {"files": [], "listings": [[".", 3, "-"]]}, {"files": "x", "listings": []})]])
def test_corrupt_entry_is_ignored_and_replaced(tmp_path, capsys, damage):
    f = tmp_path / "a.sbatch"
    f.write_text(BAD)
    store = tmp_path / "c"
    first = lint_run(capsys, "--cache-dir", str(store), str(f))
    (entry,) = entries(store)
    good = entry.read_bytes()
    obj = json.loads(good)
    if damage == "truncate":
        entry.write_bytes(good[:len(good) // 2])
    elif damage == "foreign-key":
        obj["key"] = "f" * 64
        obj["report"]["text_out"] = MARK
        entry.write_text(json.dumps(obj))
    elif damage == "wrong-type":
        obj["report"]["worst"] = "2"
        entry.write_text(json.dumps(obj))
    elif damage == "extra-field":
        obj["report"]["diff"] = MARK
        entry.write_text(json.dumps(obj))
    elif isinstance(damage, tuple):
        obj["report"]["text_out"] = MARK
        obj["elsewhere"] = damage[1]
        entry.write_text(json.dumps(obj))
    else:
        entry.write_bytes(damage)
    assert lint_run(capsys, "--cache-dir", str(store), str(f)) == first
    assert entry.read_bytes() == good  # replaced by a sound entry


def test_only_masked_results_reach_the_cache(tmp_path, capsys):
    f = tmp_path / "secret.sbatch"
    f.write_text(SECRET)
    store = tmp_path / "c"
    for fmt in ("text", "concise", "json", "github", "sarif"):
        first = lint_run(capsys, "--cache-dir", str(store), "--format", fmt, str(f))
        assert first[0] == 1 and TOKEN not in first[1] + first[2]
        assert lint_run(capsys, "--cache-dir", str(store), "--format", fmt, str(f)) == first
    assert len(entries(store)) == 5
    for e in store.iterdir():
        raw = e.read_bytes()
        assert TOKEN.encode() not in raw and b"FAKEFAKE" not in raw, e.name
        assert b"0123456789abcdef0123456789abcdef" not in raw, e.name
    assert b"hf_****" in b"".join(e.read_bytes() for e in entries(store))


def test_fix_diff_convert_and_stdin_bypass_the_cache(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "a.sbatch"
    f.write_text(BAD)
    store = tmp_path / "c"
    for extra in (["--diff"], ["--fix"], ["--convert", "srun-native"]):
        lint_run(capsys, "--cache-dir", str(store), *extra, str(f))
    monkeypatch.setattr(sys, "stdin", type("In", (), {"buffer": __import__("io").BytesIO(
        BAD.encode())})())
    assert "SB201" in lint_run(capsys, "--cache-dir", str(store), "-")[1]
    assert not store.exists() and not (tmp_path / cache.FOLDER).exists()


def test_add_noqa_after_a_warm_run_still_adds_suppressions(tmp_path, capsys, monkeypatch):
    """The README's adoption order: lint first (the cache fills), then --add-noqa, which must
    read the findings afresh and write them into the file (a cached report has no script)."""
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "a.sbatch"
    f.write_text(BAD)
    assert lint_run(capsys, str(f))[0] == 1
    assert entries(tmp_path / cache.FOLDER)
    lint_run(capsys, "--add-noqa", str(f))
    assert "# sbatch-lint: disable=SB201" in f.read_text()
    assert lint_run(capsys, str(f))[0] == 0


def test_two_processes_writing_at_once_leave_a_readable_cache(tmp_path, capsys):
    files = corpus_files(tmp_path / "s")[:60]
    store = tmp_path / "c"
    cmd = [sys.executable, "-m", "sbatch_lsp", "--cache-dir", str(store), "--jobs", "1",
           "--format", "json", *files]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    outs = [p.communicate() for p in procs]
    assert outs[0] == outs[1] and outs[0][1] == b""
    assert len(entries(store)) == len(files)
    assert not [p for p in store.iterdir() if p.name.endswith(".tmp")]
    for e in entries(store):
        assert json.loads(e.read_text())["schema"] == cache.SCHEMA
    assert lint_run(capsys, "--cache-dir", str(store), "--jobs", "1", "--format", "json",
                    *files)[1].encode() == outs[0][0]


def test_jobs_results_in_input_order_and_identical(tmp_path, capsys):
    files = corpus_files(tmp_path / "s")[:80][::-1]  # not in sorted order
    one = lint_run(capsys, "--no-cache", "--jobs", "1", "--format", "json", *files)
    two = lint_run(capsys, "--no-cache", "--jobs", "2", "--format", "json", *files)
    assert one == two
    paths = list(dict.fromkeys(item["path"] for item in json.loads(one[1])))
    assert paths == [p for p in files if p in paths] and len(paths) > 20


def test_jobs_rejects_non_positive(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--jobs", "0", "x.sbatch"])
    assert exc.value.code == 2
    assert "--jobs" in capsys.readouterr().err


def test_unwritable_cache_does_not_fail_the_lint(tmp_path, capsys):
    f = tmp_path / "a.sbatch"
    f.write_text(BAD)
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("")
    assert lint_run(capsys, "--cache-dir", str(blocker / "c"), str(f)) == \
        lint_run(capsys, "--no-cache", str(f))


def test_config_digest_is_stable_and_distinguishes():
    from sbatch_lsp.config import Config, Profile

    a = Config(ignore=frozenset({"SB201", "SB301"}), severity={"SB1": 1, "SB2": 2})
    b = Config(ignore=frozenset({"SB301", "SB201"}), severity={"SB2": 2, "SB1": 1})
    assert cache.config_digest(a) == cache.config_digest(b)
    assert cache.config_digest(a) != cache.config_digest(Config())
    assert cache.config_digest(Config(profile=Profile(slurm_version="22.05"))) != \
        cache.config_digest(Config())
    assert len(cache.tool_digest()) == 64 and os.path.basename(cache.__file__) == "cache.py"


#: multi-node torchrun in the batch shell with no GPU request: SB203 rests on the GPU request,
#: which a sibling launcher may pass on sbatch's command line (facts/provenance.py)
NO_GPU_REQUEST = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n\n"
                  "torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d "
                  "--rdzv-endpoint=\"$MASTER_ADDR:29500\" train.py\n")


def test_a_sibling_launcher_decides_whether_the_entry_holds(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "train.sbatch"
    f.write_text(NO_GPU_REQUEST)
    launcher = tmp_path / "submit.sh"
    launcher.write_text("#!/bin/bash\nsbatch train.sbatch\n")
    plain = lint_run(capsys, "--format", "concise", str(f))
    assert "SB203" in plain[1] and "submit.sh next to it" not in plain[1]
    assert lint_run(capsys, "--format", "concise", str(f)) == plain  # a hit
    # the launcher now passes the GPUs: the script's bytes are the same, its result is not
    launcher.write_text("#!/bin/bash\nsbatch --gpus-per-node=8 train.sbatch\n")
    demoted = lint_run(capsys, "--format", "concise", str(f))
    assert "submit.sh next to it submits it" in demoted[1]
    assert demoted == lint_run(capsys, "--no-cache", "--format", "concise", str(f))
    # removing the launcher brings the first result back
    launcher.unlink()
    assert lint_run(capsys, "--format", "concise", str(f)) == plain


def _later(path: Path, text: str) -> None:
    """Write ``text`` with a modification time a second on (an edit within the same clock tick
    and of the same size must still be seen)."""
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))


def test_the_entry_is_checked_against_what_the_lint_read(tmp_path, capsys, monkeypatch):
    """Dependencies, not the key: an edited launcher (same size) is a miss, a new launcher in
    the folder is a miss, an unrelated new file is a hit, and the stored paths are relative."""
    monkeypatch.chdir(tmp_path)
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    f = jobs / "train.sbatch"
    f.write_text(NO_GPU_REQUEST)
    launcher = jobs / "submit.sh"
    launcher.write_text("#!/bin/bash\nsbatch --gpus-per-node=8 train.sbatch\n")
    store = tmp_path / "c"
    run = ("--cache-dir", str(store), "--format", "concise", str(f))
    demoted = lint_run(capsys, *run)
    assert "submit.sh next to it submits it" in demoted[1]
    (entry,) = entries(store)
    deps = json.loads(entry.read_text())["elsewhere"]
    assert [row[0] for row in deps["files"]] == ["submit.sh"]
    assert [row[0] for row in deps["listings"]] == ["."]
    tamper(store)
    (jobs / "notes.txt").write_text("unrelated\n")  # not a launcher name
    (jobs / "data").mkdir()
    assert MARK in lint_run(capsys, *run)[1]  # still a hit
    # the launcher edited to the same size: it no longer passes GPUs
    _later(launcher, "#!/bin/bash\nsbatch --cpus-per-task=8 train.sbatch\n")
    plain = lint_run(capsys, *run)
    assert MARK not in plain[1] and "submit.sh next to it" not in plain[1]
    assert plain == lint_run(capsys, "--no-cache", "--format", "concise", str(f))
    # a new launcher that passes the GPUs: the listing changed, so the entry is not served
    tamper(store)
    assert MARK in lint_run(capsys, *run)[1]
    (jobs / "launch_big.sh").write_text("#!/bin/bash\nsbatch --gpus=16 train.sbatch\n")
    again = lint_run(capsys, *run)
    assert MARK not in again[1] and "launch_big.sh next to it submits it" in again[1]
    assert again == lint_run(capsys, "--no-cache", "--format", "concise", str(f))


def test_a_folder_moved_whole_keeps_its_entries_valid(tmp_path, capsys, monkeypatch):
    """Paths are stored relative to the script, so a run from another directory that names the
    same files by other paths checks the same siblings (the shown path is part of the key)."""
    project = tmp_path / "p"
    project.mkdir()
    f = project / "train.sbatch"
    f.write_text(NO_GPU_REQUEST)
    (project / "submit.sh").write_text("#!/bin/bash\nsbatch --gpus-per-node=8 train.sbatch\n")
    store = tmp_path / "c"
    run = ("--cache-dir", str(store), "--format", "concise", "train.sbatch")
    monkeypatch.chdir(project)
    first = lint_run(capsys, *run)
    assert "submit.sh next to it submits it" in first[1]
    tamper(store)
    assert MARK in lint_run(capsys, *run)[1]
    moved = tmp_path / "q"
    project.rename(moved)
    monkeypatch.chdir(moved)
    assert MARK in lint_run(capsys, *run)[1]
    (moved / "submit.sh").unlink()
    assert MARK not in lint_run(capsys, *run)[1]


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "github"])
def test_a_run_of_hits_starts_no_worker_and_loads_no_engine(tmp_path, fmt):
    """Every file looked up in the parent first: with all hits no process pool starts, and
    neither the shell parsers nor the rules are imported (they are most of a cold start)."""
    files = corpus_files(tmp_path / "s")[:40]  # above PARALLEL_MIN_FILES
    store = tmp_path / "c"
    probe = ("import sys, concurrent.futures as cf\n"
             "from sbatch_lsp.cli import main\n"
             "started = []\n"
             "cf.ProcessPoolExecutor.__init__ = lambda *a, **k: started.append(1) or "
             "(_ for _ in ()).throw(SystemExit(9))\n"
             "code = main(sys.argv[1:])\n"
             "engine = sorted(m for m in sys.modules if m.startswith(('sbatch_lsp.lint', "
             "'sbatch_lsp.rules', 'sbatch_lsp.shell', 'bashlex')))\n"
             "print('PROBE', code, len(started), engine, file=sys.stderr)\n")
    args = ["--cache-dir", str(store), "--jobs", "2", "--format", fmt, *files]
    fill = subprocess.run([sys.executable, "-m", "sbatch_lsp", *args], capture_output=True,
                          text=True)
    warm = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True)
    assert warm.stdout == fill.stdout and fill.stdout
    assert f"PROBE {fill.returncode} 0 []" in warm.stderr


def quick_served(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """:func:`lint_run` of a run its quick keys must answer: the argument parser (and so the
    configuration and the engine, which come after it) is never reached."""
    def refuse():
        raise AssertionError("not answered through quick keys")

    with monkeypatch.context() as m:
        m.setattr(cli, "_parser", refuse)
        return lint_run(capsys, *args)


def links(folder: Path) -> list[Path]:
    return sorted(folder.glob("*" + cache.LINK))


def quick_project(tmp_path: Path) -> tuple[Path, Path]:
    """(configuration file, job script) of a project whose script's folder holds a
    pyproject.toml that does not configure sbatch-lint."""
    project = tmp_path / "project"
    (project / "jobs").mkdir(parents=True)
    conf = project / ".sbatch-lint.toml"
    conf.write_text('ignore = ["SB301"]\n')
    (project / "jobs" / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    f = project / "jobs" / "a.sbatch"
    f.write_text(BAD)
    return conf, f


def test_a_repeat_run_is_answered_through_its_quick_key(tmp_path, capsys, monkeypatch):
    """The first run stores the entry and a link from the quick key to it; the next is
    answered before the parser, identically (exit code included), and a --no-cache run
    neither reads nor writes links."""
    monkeypatch.chdir(tmp_path)
    conf, f = quick_project(tmp_path)
    folder = conf.parent / cache.FOLDER
    for extra in ([], ["--format=json"], ["--fail-on", "error", "--exit-zero"]):
        first = lint_run(capsys, *extra, str(f))
        assert first == quick_served(monkeypatch, capsys, *extra, str(f))
        assert first == lint_run(capsys, "--no-cache", *extra, str(f))
    assert len(links(folder)) == 3 and len(entries(folder)) == 3
    tamper(folder)
    assert MARK in quick_served(monkeypatch, capsys, str(f))[1]


def _symlinked(conf: Path) -> None:
    """The same bytes, read through a link to a file in another folder (another source)."""
    elsewhere = conf.parent.parent / "shared" / "conf.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(conf.read_bytes())
    conf.unlink()
    conf.symlink_to(elsewhere)


#: changes after which the stored entry must not be served: (name, what it does to the
#: project (configuration file, script), extra options of the next run)
CHANGES = [
    ("configuration edited", lambda conf, f: conf.write_text('ignore = ["SB201"]\n'), []),
    ("configuration edited, same size",
     lambda conf, f: conf.write_text('ignore = ["SB302"]\n'), []),
    ("configuration read from another folder", lambda conf, f: _symlinked(conf), []),
    ("a nearer configuration file",
     lambda conf, f: (f.parent / ".sbatch-lint.toml").write_text('select = ["SB2"]\n'), []),
    ("a nearer pyproject.toml gains the table",
     lambda conf, f: (f.parent / "pyproject.toml").write_text(
         "[project]\nname = 'x'\n[tool.sbatch-lint]\nselect = ['SB2']\n"), []),
    ("the script edited", lambda conf, f: f.write_text(BAD.replace("=2", "=3")), []),
    ("--select", None, ["--select", "SB2"]),
    ("--extend-select", None, ["--extend-select", "SB301"]),
    ("--ignore", None, ["--ignore=SB201"]),
    ("--fail-on", None, ["--fail-on", "error"]),
    ("--format", None, ["--format", "concise"]),
    ("--config", lambda conf, f: (conf.parent / "other.toml").write_text(
        'ignore = ["SB301"]\n'), ["--config", "project/other.toml"]),
]


@pytest.mark.parametrize("store", [None, "store"])
@pytest.mark.parametrize("change, extra", [(c[1], c[2]) for c in CHANGES],
                         ids=[c[0] for c in CHANGES])
def test_a_quick_key_misses_whatever_changes_the_result(tmp_path, capsys, monkeypatch,
                                                        change, extra, store):
    """Each change that alters the effective configuration, the script or the view misses
    the link (the entries are tampered, so serving one shows the marker) and gives what a run
    without the cache gives; also with one cache folder for all (--cache-dir), where the
    folder the configuration file chooses cannot tell the keys apart."""
    monkeypatch.chdir(tmp_path)
    conf, f = quick_project(tmp_path)
    run = ["--cache-dir", store, str(f)] if store else [str(f)]
    lint_run(capsys, *run)
    tamper(tmp_path / store if store else conf.parent / cache.FOLDER)
    assert MARK in quick_served(monkeypatch, capsys, *run)[1]
    if change:
        change(conf, f)
    got = lint_run(capsys, *extra, *run)
    assert MARK not in got[1]
    assert got == lint_run(capsys, "--no-cache", *extra, str(f))


def test_an_edited_config_option_file_misses_the_quick_key(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    conf, f = quick_project(tmp_path)
    run = ("--config", "project/.sbatch-lint.toml", "--cache-dir", "store", str(f))
    lint_run(capsys, *run)
    tamper(tmp_path / "store")
    assert MARK in quick_served(monkeypatch, capsys, *run)[1]
    conf.write_text('ignore = ["SB201"]\n')
    got = lint_run(capsys, *run)
    assert MARK not in got[1] and got == lint_run(capsys, "--no-cache", *run)


def test_a_new_tool_misses_the_quick_key(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    conf, f = quick_project(tmp_path)
    first = lint_run(capsys, str(f))
    tamper(conf.parent / cache.FOLDER)
    monkeypatch.setattr(cache, "_tool", "0" * 64)
    assert lint_run(capsys, str(f)) == first


def test_a_configuration_that_extends_another_is_never_linked(tmp_path, capsys, monkeypatch):
    """The quick key holds the bytes of the files that may configure the script, not those
    they extend: such a configuration gets no link, and an edit of the extended file is seen."""
    monkeypatch.chdir(tmp_path)
    conf, f = quick_project(tmp_path)
    (tmp_path / "site.toml").write_text('ignore = ["SB301"]\n')
    conf.write_text('extend = "../site.toml"\n')
    first = lint_run(capsys, str(f))
    assert "SB201" in first[1]
    folder = conf.parent / cache.FOLDER
    assert lint_run(capsys, str(f)) == first
    assert entries(folder) and not links(folder)
    tamper(folder)
    assert MARK in lint_run(capsys, str(f))[1]  # the entry's own key still serves it
    (tmp_path / "site.toml").write_text('ignore = ["SB201"]\n')
    got = lint_run(capsys, str(f))
    assert MARK not in got[1] and "SB201" not in got[1]


def test_a_hit_by_the_entry_key_links_again(tmp_path, capsys, monkeypatch):
    """The same settings written in another order: a new quick key, the same entry (served),
    and the next run is answered through the new link."""
    monkeypatch.chdir(tmp_path)
    conf, f = quick_project(tmp_path)
    conf.write_text('ignore = ["SB301"]\nselect = ["SB2", "SB3"]\n')
    lint_run(capsys, str(f))
    folder = conf.parent / cache.FOLDER
    tamper(folder)
    conf.write_text('select = ["SB3", "SB2"]\nignore = ["SB301"]\n')
    assert MARK in lint_run(capsys, str(f))[1]
    assert len(links(folder)) == 2 and len(entries(folder)) == 1
    assert MARK in quick_served(monkeypatch, capsys, str(f))[1]


@pytest.mark.parametrize("damage", ["entry gone", "link garbage", "link to another entry",
                                    "fail_on a string"])
def test_a_broken_link_is_a_miss(tmp_path, capsys, monkeypatch, damage):
    monkeypatch.chdir(tmp_path)
    conf, f = quick_project(tmp_path)
    folder = conf.parent / cache.FOLDER
    first = lint_run(capsys, str(f))
    (link,) = links(folder)
    obj = json.loads(link.read_text())
    if damage == "entry gone":
        for e in entries(folder):
            e.unlink()
    elif damage == "link garbage":
        link.write_bytes(b"\x00{")
    elif damage == "link to another entry":
        obj["entry"] = "f" * 64
        link.write_text(json.dumps(obj))
    else:
        obj["fail_on"] = "4"
        link.write_text(json.dumps(obj))
    assert lint_run(capsys, str(f)) == first
    assert quick_served(monkeypatch, capsys, str(f)) == first  # linked again


@pytest.mark.parametrize("argv", [
    ["a.sbatch"], ["--format", "json", "a", "b"],
    ["--format=concise", "--select", "SB2", "--select=SB3", "--ignore", "SB301", "x"],
    ["--no-color", "--exit-zero", "--fail-on", "error", "--config", "c.toml", "--cache-dir",
     "d", "--extend-select=SB1", "x"],
    ["--select=-x", "y"],
])
def test_quick_arguments_are_the_parsers(argv):
    """The common shapes :func:`cli._quick_args` reads: the namespace argparse gives."""
    assert vars(cli._quick_args(argv)) == vars(cli._parser().parse_args(argv))


@pytest.mark.parametrize("argv", [
    [], ["--format", "json"], ["x", "--format", "json"], ["--format", "bad", "x"],
    ["--jobs", "2", "x"], ["--no-color=1", "x"], ["--select", "-x", "y"], ["-"], ["-", "x"],
    ["--", "x"], ["--form", "json", "x"], ["--fix", "x"], ["--format"],
])
def test_other_shapes_are_left_to_the_parser(argv):
    assert cli._quick_args(argv) is None


@pytest.mark.parametrize("key", ["per-file-ignores", "exclude"])
def test_the_same_shown_path_in_another_folder_is_another_entry(tmp_path, capsys, monkeypatch,
                                                                 key):
    """lint() matches the configuration's path patterns against the shown path from the
    working directory: a run from ``a/`` and one from ``b/`` that both name ``job.sbatch``
    (same bytes, same configuration and cache folder) lint two files the patterns tell apart,
    so neither may be served the other's entry."""
    table = '[per-file-ignores]\n"a/**" = ["SB2"]\n' if key == "per-file-ignores" else \
        'exclude = ["a/"]\n'
    (tmp_path / ".sbatch-lint.toml").write_text(table)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "job.sbatch").write_text(BAD)
    run = ("--format", "concise", "job.sbatch")
    fresh = {}
    for name in ("a", "b"):
        monkeypatch.chdir(tmp_path / name)
        fresh[name] = lint_run(capsys, "--no-cache", *run)
    assert fresh["a"] != fresh["b"]  # the patterns do tell them apart
    for first, second in (("a", "b"), ("b", "a")):
        store = tmp_path / f"cache-{first}"
        for name in (first, second, first, second):
            monkeypatch.chdir(tmp_path / name)
            assert lint_run(capsys, "--cache-dir", str(store), *run) == fresh[name], name
