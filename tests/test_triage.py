"""Triage (issue 12): the engine on the slurm tier's real logs and on long synthetic logs, the
reading of every log shape (labels, rank prefixes, ANSI, CR, gzip, stdin, several files,
timestamps), bad input, masking, the JSON Schema and the script link."""
from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triage_synth import Scenario, expected_line, render, scenarios

from sbatch_lsp.triage import LogError, triage, triage_text
from sbatch_lsp.triage.categories import CATEGORIES
from sbatch_lsp.triage.cli import main
from sbatch_lsp.triage.reading import clean, parse_time, split_prefixes
from sbatch_lsp.triage.report import format_text

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "logs"
SCHEMA = json.loads((ROOT / "sbatch_lsp" / "schemas" / "triage.schema.json").read_text())
NOISE = 20000


def run_json(capsys, *argv: str) -> tuple[int, dict | None, str]:
    code = main([*argv, "--format", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def check_schema(obj: dict) -> None:
    VALIDATOR.validate(obj)


# -- synthetic logs -------------------------------------------------------------------------

@pytest.mark.parametrize("s", scenarios(), ids=lambda s: s.name)
def test_synthetic_root_and_rank(s: Scenario) -> None:
    """Each long synthetic log (20,000 lines of real noise around the failure) gets the injected
    root line, its category and the first failing rank; a log that shows only the waiting side
    gets no root line."""
    lines = list(render(s, NOISE))
    obj = triage_text("\n".join(lines) + "\n", "job.log").to_json()
    check_schema(obj)
    want = expected_line(s, lines)
    if want is None:
        assert obj["root_cause"] is None
    else:
        assert obj["root_cause"]["line"] == want, obj["root_cause"]
        assert obj["root_cause"]["category"] == s.category
        assert s.root in obj["root_cause"]["text"]
    if s.rank is not None:
        assert obj["first_failure"]["rank"] == s.rank, obj["first_failure"]


def test_cascade_and_exit_codes_of_an_oom() -> None:
    s = next(x for x in scenarios() if x.name == "cuda-oom-rank13")
    obj = triage_text("\n".join(render(s, 500)) + "\n", "job.log").to_json()
    kinds = {c["kind"] for c in obj["cascade"]}
    assert {"nccl-timeout", "sigterm", "child-failed", "srun-exit"} <= kinds
    assert all(c["kind"] != "cuda-oom" for c in obj["cascade"])
    assert obj["first_failure"] == {"rank": 13, "node": "gpu-a100-002", "path": "job.log",
                                    "line": obj["root_cause"]["line"], "confidence": "certain"}
    codes = {x["code"]: x for x in obj["exit_codes"]}
    assert "SIGTERM" in codes["-15"]["meaning"] and (codes["-15"]["tasks"], codes["-15"]["ranks"]) == ([], [0, 8])
    assert (codes["1"]["tasks"], codes["1"]["ranks"]) == ([0, 1], [13])  # srun tasks, torch rank


def test_timestamps_order_several_files(tmp_path: Path) -> None:
    """%j.out and %j.err: the earlier timestamp wins over the file order."""
    out = tmp_path / "slurm-7.out"
    err = tmp_path / "slurm-7.err"
    out.write_text("2024-05-01 10:00:09,120 [rank2] step 10\n"
                   "[rank2]: 2024-05-01 10:00:09,500 RuntimeError: CUDA error: an illegal memory "
                   "access was encountered\n")
    err.write_text("noise\n" * 3 + "[rank9]: 2024-05-01T10:00:05.250 FileNotFoundError: [Errno 2] "
                   "No such file or directory: '/tmp/cache/tok.json'\n")
    rep = triage([str(out), str(err)], find_beside=False).to_json()
    assert rep["root_cause"]["path"] == str(err) and rep["root_cause"]["line"] == 4
    assert rep["root_cause"]["category"] == "file-not-found"
    assert rep["first_failure"]["rank"] == 9
    assert rep["first_failure"]["confidence"] == "likely"
    # without timestamps the file order decides
    out.write_text("[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
    err.write_text("[rank9]: FileNotFoundError: [Errno 2] No such file or directory: 'x'\n")
    rep = triage([str(out), str(err)], find_beside=False).to_json()
    assert rep["first_failure"]["rank"] == 2


# -- reading --------------------------------------------------------------------------------

def test_prefixes() -> None:
    ln = split_prefixes("x", 1, "  3: [rank11]: ValueError: bad")
    assert (ln.task, ln.rank, ln.body) == (3, 11, "ValueError: bad")
    ln = split_prefixes("x", 1, "P1 12: [default3]: oops")
    assert (ln.component, ln.task, ln.local_rank, ln.rank) == (1, 12, 3, None)
    ln = split_prefixes("x", 1, "gpu-node-07: [rank4]: KeyError: 'a'")
    assert (ln.host, ln.rank, ln.body) == ("gpu-node-07", 4, "KeyError: 'a'")
    ln = split_prefixes("x", 1, "slurmstepd-node1: error: *** JOB 1 ON node1 CANCELLED AT x ***")
    assert ln.host == "node1" and ln.body.startswith("slurmstepd: error: ***")
    ln = split_prefixes("x", 1, "RuntimeError: x")
    assert ln.host is None and ln.body == "RuntimeError: x"


def test_clean_ansi_cr_and_long_lines() -> None:
    assert clean("\x1b[31mRuntimeError: boom\x1b[0m") == "RuntimeError: boom"
    assert clean(" 45%|####  | 9/20\rTraceback (most recent call last):") == \
        "Traceback (most recent call last):"
    assert clean("Error " + "x" * 100000).startswith("Error x") and \
        len(clean("Error " + "x" * 100000)) == 4096


def test_timestamp_formats() -> None:
    iso = parse_time("2024-05-01T10:00:05.250 x")
    assert iso is not None and parse_time("2024-05-01 10:00:05,250 x") == iso
    assert parse_time("2024-05-01_10:00:05") == iso - 0.25
    glog1, glog2 = parse_time("[E1201 10:15:42.5 x]"), parse_time("E1201 10:15:43.000000")
    assert glog1 is not None and glog2 is not None and glog2 - glog1 == pytest.approx(0.5)
    assert parse_time("Tue Dec  1 09:53:05 UTC 2026") is not None
    assert parse_time("no time here 10") is None


def test_gzip_stdin_and_truncated(tmp_path: Path, capsys, monkeypatch) -> None:
    s = next(x for x in scenarios() if x.name == "disk-full-rank0")
    text = "\n".join(render(s, 2000)) + "\n"
    gz = tmp_path / "slurm-5.out.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    code, obj, _ = run_json(capsys, str(gz))
    assert code == 0 and obj["root_cause"]["category"] == "disk-full"
    check_schema(obj)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(text.encode()))))
    code, obj2, _ = run_json(capsys, "-")
    assert code == 0 and obj2["root_cause"]["line"] == obj["root_cause"]["line"]
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(gzip.compress(text.encode())[:-200])
    code, _, err = run_json(capsys, str(cut))
    assert code == 2 and "gzip stream is truncated" in err and "Traceback" not in err


@pytest.mark.parametrize("content,message", [
    (b"", "the log is empty"),
    (b"\x7fELF\x02\x01\x01\x00\x00\x00\x00binary", "binary data"),
    (b"\x1f\x8bnot really gzip", "not a valid gzip file"),
])
def test_bad_input(tmp_path: Path, capsys, content: bytes, message: str) -> None:
    p = tmp_path / "bad.out"
    p.write_bytes(content)
    code, _, err = run_json(capsys, str(p))
    assert code == 2 and message in err and "Traceback" not in err


def test_missing_file_and_directory(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "nope.out")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main([str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_non_log_text(tmp_path: Path, capsys) -> None:
    """A README is readable: analysed (exit 0), no cause, and the report says so."""
    p = tmp_path / "README.md"
    p.write_text("# My project\n\nRun `make` to build it.\n")
    assert main([str(p)]) == 0
    out = capsys.readouterr().out
    assert "root cause: unknown" in out and "nothing in the log shows a failure" in out


def test_secrets_masked(tmp_path: Path, capsys) -> None:
    token = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3k"
    p = tmp_path / "slurm-9.out"
    p.write_text(f"[rank0]: ValueError: bad token {token} for the Hub\n")
    for fmt in ("json", "text"):
        assert main([str(p), "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert token not in out and "hf_****" in out


def test_cli_usage_errors(capsys) -> None:
    assert main([]) == 2
    assert main(["-", "-"]) == 2
    assert "once" in capsys.readouterr().err
    assert main(["--help"]) == 0


# -- the slurm tier's real logs, with their scripts ----------------------------------------

@pytest.mark.parametrize("name,category,code", [
    ("sb201-static", "address-in-use", "SB201"),
    ("sb201", "rendezvous-error", "SB201"),
    ("sb302", "rendezvous-error", "SB302"),
    ("sb205", "cancelled", "SB205"),
    ("sb301", "cancelled", "SB301"),
])
def test_slurm_tier_logs_link_the_rule(name: str, category: str, code: str) -> None:
    """Each real failure from the cluster tier names the rule that flags its script."""
    log = LOGS / f"slurm-tier-{name}.log"
    script = ROOT / "tests" / "slurm" / "jobs" / f"{name}.sbatch"
    obj = triage([str(log)], str(script)).to_json()
    check_schema(obj)
    assert obj["root_cause"]["category"] == category
    assert [r["code"] for r in obj["rules"]][:1] == [code], obj["rules"]
    assert obj["rules"][0]["path"] == str(script)


def test_script_found_beside_the_log(tmp_path: Path) -> None:
    (tmp_path / "train.sbatch").write_text(
        (ROOT / "tests" / "slurm" / "jobs" / "sb201-static.sbatch").read_text()
        .replace("#SBATCH --nodes=2", "#SBATCH --nodes=2\n#SBATCH --output=logs-%x-%j.txt"))
    (tmp_path / "other.sbatch").write_text("#!/bin/bash\n#SBATCH --output=other-%j.out\nsrun true\n")
    log = tmp_path / "logs-train.sbatch-42.txt"
    log.write_text((LOGS / "slurm-tier-sb201-static.log").read_text())
    obj = triage([str(log)]).to_json()
    assert [r["code"] for r in obj["rules"]][:1] == ["SB201"]
    (tmp_path / "slurm-43.out").write_text(log.read_text())  # no script names slurm-%j.out
    assert triage([str(tmp_path / "slurm-43.out")]).to_json()["rules"] == []


def test_unreadable_script(tmp_path: Path, capsys) -> None:
    log = tmp_path / "slurm-1.out"
    log.write_text("ValueError: x\n")
    assert main([str(log), "--script", str(tmp_path / "missing.sbatch")]) == 2
    assert "job script cannot be read" in capsys.readouterr().err


def test_text_report_folds_the_cascade() -> None:
    s = next(x for x in scenarios() if x.name == "cuda-oom-rank13")
    from sbatch_lsp.triage.report import format_text
    text = format_text(triage_text("\n".join(render(s, 300)) + "\n", "job.log"))
    lines = text.splitlines()
    assert lines[0].startswith("root cause (cuda-oom, certain) at job.log:")
    assert "> " in lines[1] and "CUDA out of memory" in lines[1]
    assert "first failure: rank 13, node gpu-a100-002 (certain)" in text
    assert "cascade (folded): 15 nccl-timeout" in text
    assert "exit codes:" in text and "SIGTERM" in text
    assert len(lines) < 30


def test_schema_lists_every_category() -> None:
    assert SCHEMA["$defs"]["category"]["enum"] == list(CATEGORIES)


def test_module_entry_point(tmp_path: Path) -> None:
    """The subcommand module runs standalone (what the dispatch calls) without a traceback."""
    p = tmp_path / "slurm-3.out"
    p.write_bytes(b"\x00\x01")
    r = subprocess.run([sys.executable, "-c", ("import sys; from sbatch_lsp.triage.cli import "
                        "main; sys.exit(main(sys.argv[1:]))"), str(p)], capture_output=True,
                       text=True)
    assert r.returncode == 2 and "binary data" in r.stderr and "Traceback" not in r.stderr


def test_log_error_is_raised_for_missing() -> None:
    with pytest.raises(LogError):
        triage(["/nonexistent/slurm-1.out"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(
    st.sampled_from([ln for s in scenarios() for ln in render(s, 0)] + [
        "Traceback (most recent call last):", '  File "x.py", line 1, in f', "Last error:",
        "Root Cause (first observed failure):", "  exitcode  : -9 (pid: 1)", "Thread 0x1 (idle):",
        "    f (x.py:3)", "NET/Socket : Using [0]br-1:1.2.3.4<0>", "\r\x1b[31m", "P1 2: [rank3]: "]),
    st.text(max_size=80)), max_size=40))
def test_any_text_gives_a_valid_report(lines: list[str]) -> None:
    """Whatever the lines (real ones shuffled, fragments, arbitrary text), triage answers with an
    object the schema accepts, and its lines exist in the log."""
    text = "\n".join(lines) + "\n"
    try:
        obj = triage_text(text, "x.log").to_json()
    except LogError:
        return  # empty or binary: a message, not a crash
    check_schema(obj)
    count = text.count("\n") + 1
    for item in [obj["root_cause"], obj["first_failure"], *obj["cascade"]]:
        if item and item.get("line") is not None:
            assert 1 <= item["line"] <= count


def test_through_the_subcommand_dispatch(capsys) -> None:
    """``sbatch-lint triage …`` reaches this subcommand (sbatch_lsp/cli.py's table)."""
    from sbatch_lsp.cli import main as lint_main

    log = LOGS / "slurm-tier-sb302.log"
    script = ROOT / "tests" / "slurm" / "jobs" / "sb302.sbatch"
    assert lint_main(["triage", str(log), "--script", str(script), "--format", "json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    check_schema(obj)
    assert obj["root_cause"]["line"] == 51 and [r["code"] for r in obj["rules"]] == ["SB302"]


def test_node_of_a_rank_from_torchelastic_host_record() -> None:
    """A ``[rank1]:`` traceback names no host; torchelastic's record for rank 1 does (torch
    2.x ``ChildFailedError`` table: ``host : … rank : 1 (local_rank: 1)``), and srun's echo counts
    the node's agent as task 0: the node is the record's host, task 0 and rank 1 stay apart."""
    lines = [
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/workspace/train.py", line 61, in main',
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2024-12-01_12:00:02",
        "  host      : gpu-node-7",
        "  rank      : 1 (local_rank: 1)",
        "  exitcode  : 1 (pid: 1301)",
        "srun: error: gpu-node-7: task 0: Exited with exit code 1",
        "srun: error: gpu-node-8: task 1: Exited with exit code 1",
    ]
    log = "".join(line + "\n" for line in lines)
    report = triage_text(log, "job.log")
    obj = report.to_json()
    assert (obj["first_failure"]["rank"], obj["first_failure"]["node"]) == (1, "gpu-node-7")
    assert obj["exit_codes"] == [{"code": "1", "meaning": obj["exit_codes"][0]["meaning"],
                                  "tasks": [0, 1], "ranks": [1]}]
    assert "[srun tasks 0,1; ranks 1]" in format_text(report)


def test_a_rank_placed_on_two_hosts_gets_no_node() -> None:
    """Two runs in one log put rank 0 on different hosts: the node is not guessed."""
    record = ["  time      : 2024-12-01_12:00:0{}", "  host      : {}",
              "  rank      : 0 (local_rank: 0)", "  exitcode  : 1 (pid: 1)"]
    log = "[rank0]: RuntimeError: boom\n" + "".join(
        "Root Cause (first observed failure):\n[0]:\n" +
        "\n".join(r.format(i) if "time" in r else r.format(h) for r in record) + "\n"
        for i, h in ((2, "node-a"), (3, "node-b")))
    obj = triage_text(log, "job.log").to_json()
    assert obj["first_failure"]["rank"] == 0 and obj["first_failure"]["node"] is None


def test_the_agents_closing_signals_are_cascade() -> None:
    """torchelastic's "Sending process N closing signal SIGTERM" (multiprocessing/api.py) is the
    agent stopping its other workers after one failed: counted in the cascade, never the root."""
    log = ("[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
           "W1201 12:00:01.000000 1234 torch/distributed/elastic/multiprocessing/api.py:897] "
           "Sending process 1300 closing signal SIGTERM\n"
           "W1201 12:00:01.000000 1234 torch/distributed/elastic/multiprocessing/api.py:897] "
           "Sending process 1302 closing signal SIGTERM\n")
    obj = triage_text(log, "job.log").to_json()
    assert obj["root_cause"]["line"] == 1
    assert [c["kind"] for c in obj["cascade"]] == ["sigterm", "sigterm"]


# -- the failing agent's node from srun's echo ------------------------------------------------

EADDRINUSE_TRACE = (
    "[E socket.cpp:500] [c10d] The server socket has failed to listen on any local network "
    "address.\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/bin/torchrun", line 8, in <module>\n'
    "    sys.exit(main())\n"
    '  File "/opt/venv/lib/python3.10/site-packages/torch/distributed/elastic/rendezvous/'
    'static_tcp_rendezvous.py", line 55, in next_rendezvous\n'
    "    self._store = TCPStore(\n"
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
    "network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
    "already in use).\n")


def test_eaddrinuse_takes_its_node_from_srun_s_echo_of_the_one_failed_task():
    """A torchrun agent that cannot bind the store's port exits with code 1; srun's echo names
    the node of that task (its task id is an agent's, not a rank, so only the node is read)."""
    text = EADDRINUSE_TRACE + "srun: error: gpu-node-07: task 0: Exited with exit code 1\n"
    obj = triage_text(text, "job.log").to_json()
    check_schema(obj)
    assert obj["root_cause"]["category"] == "address-in-use"
    ff = obj["first_failure"]
    assert (ff["rank"], ff["node"], ff["confidence"]) == (0, "gpu-node-07", "likely")
    assert "first failure: rank 0, node gpu-node-07 (likely)" in format_text(
        triage_text(text, "job.log"), color=False)


def test_no_node_from_srun_s_echo_when_agents_were_signalled_or_several_failed():
    """torchrun turns SIGTERM into a SignalException and exits with 1 too, so a signalled agent
    makes an exit code ambiguous (the slurm tier's static-rendezvous log: node2's task 2 exited
    with 1, yet the node-rank-0 agents that bind the port ran on node1, and two agents were
    signalled); two failed tasks name no one."""
    static = triage([str(LOGS / "slurm-tier-sb201-static.log")])
    assert static.verdict.root.category == "address-in-use"
    assert static.verdict.node is None
    two = EADDRINUSE_TRACE + ("srun: error: gpu-node-07: task 0: Exited with exit code 1\n"
                              "srun: error: gpu-node-08: task 1: Exited with exit code 1\n")
    assert triage_text(two, "job.log").to_json()["first_failure"]["node"] is None
