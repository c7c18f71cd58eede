"""Job-array facts and rules: the highest index an ``--array`` makes (facts/arrays.py), the
``max-array-size`` profile key and its import from ``scontrol show config``, SB224 against it,
and SB218 on redirection targets (the shell model's ``Command.redirects``)."""
from pathlib import Path

import pytest

from sbatch_lsp.config import ConfigError, from_table
from sbatch_lsp.facts.arrays import max_array_index
from sbatch_lsp.lint import lint
from sbatch_lsp.profile.cli import run

DATA = Path(__file__).resolve().parent / "data" / "profile"


@pytest.mark.parametrize("value,top", [
    ("0-99", 99), ("1-10:4", 9), ("5,1000-1002%10", 1002), ("7", 7), ("'0-3'", 3),
    ("1-5000%50", 5000), ("0-1200:4", 1200), ("1-1201:4", 1201), ("10-2", None),
    ("1-9:0", None), ("$N", None), ("0-x", None),
])
def test_max_array_index(value, top):
    assert max_array_index(value) == top


def _codes(text: str, profile: dict | None = None) -> list[tuple[str, str]]:
    config = from_table({"profile": profile}, "test") if profile is not None else None
    return [(d.code, d.severity.label) for d in lint(text, "job.sbatch", config).diagnostics
            if d.code in ("SB218", "SB224")]


ARRAY = "#!/bin/bash\n#SBATCH --array={}\n#SBATCH --output=l_%A_%a.out\necho x\n"


@pytest.mark.parametrize("value,limit,expected", [
    ("0-1000", 1001, []),
    ("0-1001", 1001, [("SB224", "error")]),
    ("1000-1001", 1001, [("SB224", "error")]),  # two tasks: the index counts
    ("0-1001", None, [("SB224", "info")]),  # no profile: Slurm's default, maybe raised
    ("0-1001", 5001, []),
    ("1", 0, [("SB224", "error")]),  # MaxArraySize=0 disables arrays
])
def test_sb224_follows_the_profile(value, limit, expected):
    profile = {"max-array-size": limit} if limit is not None else None
    assert _codes(ARRAY.format(value), profile) == expected


@pytest.mark.parametrize("bad", [-1, "1001", 4_000_002, True, 1.5])
def test_max_array_size_key_is_validated(bad):
    with pytest.raises(ConfigError, match="max-array-size"):
        from_table({"profile": {"max-array-size": bad}}, "test")


def test_profile_import_reads_max_array_size():
    out = run([str(DATA / "slurm-22.05.8-config.txt"),
               str(DATA / "slurm-22.05.8-partition.txt")], cluster=False)
    assert "max-array-size = 1001 # MaxArraySize in scontrol show config" in out


REDIRECTS = """#!/bin/bash
#SBATCH --array=0-3
#SBATCH --output=logs/%A_%a.out
python a.py > "out_${SLURM_ARRAY_JOB_ID}.txt"
python a.py 2> err_$SLURM_ARRAY_JOB_ID.log
python a.py &> both_%A.log
python a.py >> "agg_${SLURM_ARRAY_JOB_ID}.txt"
echo "$SLURM_ARRAY_TASK_ID done" >> "summary_${SLURM_ARRAY_JOB_ID}.txt"
python a.py > "out_${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.txt" 2>&1
python a.py > "task_${SLURM_JOB_ID}.txt" 2>/dev/null
python a.py > "${NAME%a}.txt" < in_%A.txt
if true; then python b.py > "res_${SLURM_ARRAY_JOB_ID}"; fi
"""


def test_sb218_reads_redirection_targets():
    found = [(d.code, d.severity.label, REDIRECTS.count("\n", 0, d.start) + 1)
             for d in lint(REDIRECTS, "job.sbatch").diagnostics if d.code == "SB218"]
    assert found == [("SB218", "warning", 4), ("SB218", "warning", 5),
                     ("SB218", "warning", 6), ("SB218", "info", 7),
                     ("SB218", "warning", 12)]


def test_sb218_redirects_only_in_arrays():
    text = REDIRECTS.replace("#SBATCH --array=0-3\n", "")
    assert not [d for d in lint(text, "job.sbatch").diagnostics if d.code == "SB218"]
