"""Property test: scripts generated from a grammar of real constructs, then mutated, never make
the engine raise or report SB003, and the CLI's JSON holds one object per finding in DESIGN.md's
shape, with positions that match the finding's offsets."""
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbatch_lsp.cli import RunOptions, process
from sbatch_lsp.config import Config
from sbatch_lsp.lint import lint

DIRECTIVES = st.sampled_from([
    "#SBATCH --nodes=2", "#SBATCH -N 4", "#SBATCH --ntasks-per-node=8", "#SBATCH --ntasks=4",
    "#SBATCH --gpus-per-node=8", "#SBATCH --gres=gpu:4", "#SBATCH --time=01:00:00",
    "#SBATCH --job-name=\"my job\"", "#SBATCH --output=logs/%x-%j.out  # logs",
    "#SBATCH --export=NONE", "#SBATCH --no-container-mount-home", "# SBATCH --nodes=2",
    "##SBATCH --qos=debug", "#SBATCH --partition=h100", "#SBATCH --nodes=$NUM_NODES",
    "#SBATCH --mem=0", "#SBATCH --ntasks-per-n=8", "#SBATCH --container-image=nvcr.io#nvidia/x",
])
VAR = st.sampled_from(["SLURM_PROCID", "SLURM_NODEID", "SLURM_JOB_NUM_NODES", "MASTER_ADDR",
                       "MASTER_PORT", "HF_TOKEN", "NNODES", "CMD", "HF_HOME"])
LAUNCH = st.sampled_from([
    "torchrun --nnodes={n} --nproc-per-node=8 --node-rank={r} --master-addr=$MASTER_ADDR t.py",
    ("python -m torch.distributed.run --nproc_per_node 8 --rdzv_backend c10d "
    "--rdzv_endpoint $H:29400 t.py"),
    "accelerate launch --num_machines {n} --machine_rank {r} t.py",
    "python pretrain_gpt.py --tensor-model-parallel-size 4", "uv run --no-sync python t.py",
    "deepspeed --hostfile h t.py", "colossalai run --nproc_per_node 8 t.py",
])


@st.composite
def command(draw):
    v = draw(VAR)
    launch = draw(LAUNCH).format(n=draw(st.sampled_from(["2", "$SLURM_NNODES", "$NNODES"])),
                                 r=draw(st.sampled_from(["0", "$SLURM_NODEID",
                                                         "\\$SLURM_NODEID"])))
    forms = [
        f"export {v}=${{{draw(VAR)}}}",
        f"{v}=\"{launch}\"",
        f"srun {launch}",
        f"srun --ntasks-per-node=1 bash -c '{launch}'",
        f"srun -N \"$SLURM_JOB_NUM_NODES\" --ntasks=\"$SLURM_JOB_NUM_NODES\" bash -c \"{launch}\"",
        "srun --container-image=/img.sqsh --container-mounts=/lustre:/lustre bash -c \"$CMD\"",
        f"{launch}",
        "arr=( $(scontrol show hostnames \"$SLURM_JOB_NODELIST\") )",
        "if [[ -z \"${X:-}\" ]]; then echo $((SLURM_PROCID+1)); fi",
        "case \"$1\" in a) echo a;; *) echo b;; esac",
        "cat <<'EOF' > sub.sbatch\n#SBATCH --nodes=1\necho $SLURM_NODEID\nEOF",
        "for i in $(seq 1 3); do echo $i; done",
        "f() { srun hostname; }\nf",
        "export MASTER_PORT=$((20000 + SLURM_JOB_ID % 10000))",
        "set -x",
        "eval \"$CMD\"",
        "$LAUNCHER $CMD",
        f"srun -l $LAUNCHER \"${{ARGS[@]}}\" \"$HF_HOME\" --x \"${{{v}}}\"",
        f"S=\"srun --mpi=pmix\"\n$S bash -c \"$LAUNCHER {launch}\"",
        f"{v}=\"{launch}\"\n{v}=\"${v} --extra\"\nsrun ${v}",
    ]
    return draw(st.sampled_from(forms))


@st.composite
def script(draw):
    lines = ["#!/bin/bash"] + draw(st.lists(DIRECTIVES, max_size=6))
    lines += draw(st.lists(command(), min_size=0, max_size=8))
    text = "\n".join(lines) + "\n"
    if draw(st.booleans()):  # mutate: delete, duplicate or inject characters
        pos = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["del", "dup", "ins"]))
        if op == "del":
            text = text[:pos] + text[pos + draw(st.integers(1, 20)):]
        elif op == "dup":
            text = text[:pos] + text[pos:pos + 30] + text[pos:]
        else:
            text = text[:pos] + draw(st.sampled_from(["'", '"', "`", "$(", "\\", "{", "\r\n", "\0",
                                                      "é", "😀", "\t"])) + text[pos:]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script())
def test_engine_never_fails(text):
    result = lint(text, "gen.sbatch")
    assert not [d for d in result.diagnostics if d.code == "SB003"], \
        [d.message for d in result.diagnostics if d.code == "SB003"]
    for d in result.diagnostics:
        assert 0 <= d.start <= d.end <= len(text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script())
def test_json_output_valid(text):
    rep = process("-", "gen.sbatch", Config(), RunOptions(format="json"),
                  text.encode("utf-8", "surrogatepass"))
    if "\x00" in text and rep.error is not None:
        # a mutation can insert a NUL: with over 1% NUL bytes the CLI says the file is binary
        # (no traceback); a rarer NUL is linted like any text (SB100 reports it)
        assert rep.error == "gen.sbatch: not linted: binary file (NUL bytes)"
        return
    assert rep.error is None
    items = json.loads(json.dumps(rep.items))
    result = lint(text, "gen.sbatch")
    # one object per finding of the engine, in its order, each in DESIGN.md's shape
    assert [o["code"] for o in items] == [d.code for d in result.diagnostics]
    for obj, d in zip(items, result.diagnostics, strict=True):
        assert set(obj) == {"code", "name", "severity", "message", "path", "line", "column",
                            "end_line", "end_column", "related", "fixes"}
        assert obj["path"] == "gen.sbatch" and obj["name"] and obj["message"]
        assert obj["severity"] in SEVERITIES
        assert (obj["line"], obj["column"]) == _line_col(text, d.start)
        assert (obj["end_line"], obj["end_column"]) == _line_col(text, d.end)
        for rel in obj["related"]:
            assert set(rel) == {"line", "column", "end_line", "end_column", "message"}
            _check_range(text, rel)
        for fix in obj["fixes"]:
            assert set(fix) == {"applicability", "message", "edits"}
            assert fix["applicability"] in ("safe", "unsafe") and fix["edits"]
            for edit in fix["edits"]:
                assert set(edit) == {"line", "column", "end_line", "end_column", "new_text"}
                _check_range(text, edit)
    # the exit code follows the worst severity (default fail-on: warning)
    worst = max((SEVERITIES[o["severity"]] for o in items), default=0)
    assert rep.worst == worst


SEVERITIES = {"hint": 1, "info": 2, "warning": 3, "error": 4}


def _line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column (code points) of ``offset``, lines split on ``\\n`` only."""
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _check_range(text: str, obj: dict) -> None:
    """A 1-based range inside ``text`` whose end does not come before its start."""
    lines = text.split("\n")
    assert 1 <= obj["line"] <= len(lines) and 1 <= obj["end_line"] <= len(lines)
    assert (obj["line"], obj["column"]) <= (obj["end_line"], obj["end_column"])
    assert 1 <= obj["column"] <= len(lines[obj["line"] - 1]) + 1
    assert 1 <= obj["end_column"] <= len(lines[obj["end_line"] - 1]) + 1
