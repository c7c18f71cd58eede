"""Lines read without bashlex (the fast path, shell/fast.py) give the model bashlex gives.

The comparison runs on every example, case and rule-page script, on a list of tricky lines, and,
when SBATCH_LSP_CORPUS names a folder of real scripts, on each of those too.
"""
import os
from pathlib import Path

import pytest

from sbatch_lsp.shell.parse import parse
from sbatch_lsp.shell.words import TextMap

from rule_pages import sample_scripts
from shell_models import model_key

TRICKY = """\
export NCCL_DEBUG=INFO
export A B=2 C
A=1 B="two words" python train.py --lr 3e-4
echo "step: $SLURM_JOB_ID ${SLURM_PROCID} ${HF_HOME:-/tmp/hf}" >> "$LOG"
echo 'single $quoted' > out.txt 2>&1
echo a 2> err.log >out.log
cmd &> all.log
cmd &>> all.log
cmd >| clobber
cmd <input.txt
cmd 3<> rw
cmd >&2
cmd 2>&-
echo done then fi
[ -f "$FILE" ]
test -n "$X" # a comment
X=1 # only an assignment
declare -x NAME=value
local -r L=1
readonly R=${R:-5}
srun --ntasks-per-node=1 torchrun --nproc-per-node=8 train.py
cd ${WORKDIR}
echo #not an argument
echo a#b
printf '%s\\n' "$@"
echo "$*" $# $? $$ $! $0 $1
A[1]=x cmd
echo ${#ARR} ${!PRE*} ${VAR/a/b} ${VAR%%.*} ${VAR^^}
echo ${VAR:-two words}
echo "${VAR:-a b}"
time cmd
! cmd
{ cmd; }
cmd &
a=1; b=2
echo $(date) `date`
echo "$(date)"
echo $'x' $"y"
echo a\\ b
echo {1,2}
cmd <<< here
cat <<EOF
body
EOF
echo "unterminated
"
echo >(cat) <(cat)
arr=(a b)
echo $((1+2))
"""


_key = model_key


def differences(text: str) -> tuple[int, list[str]]:
    """(chunks the fast path read, the lines where its model differs from bashlex's)."""
    fast = parse(TextMap(text))
    slow = parse(TextMap(text), read_simple=False)
    accepted = sum(ch.parser == "simple" for ch in fast.chunks)
    if _key(fast) == _key(slow):
        return accepted, []
    lines = text.splitlines()
    return accepted, [lines[ch.start_line] for ch in fast.chunks if ch.parser == "simple"
                      and _key(parse(TextMap(lines[ch.start_line] + "\n")))
                      != _key(parse(TextMap(lines[ch.start_line] + "\n"), read_simple=False))]


@pytest.mark.parametrize("text", [pytest.param(TRICKY, id="tricky"), *sample_scripts()])
def test_same_model_as_bashlex(text):
    _, differing = differences(text)
    assert differing == []


def test_most_lines_of_the_tricky_list_are_read_without_bashlex():
    accepted, _ = differences(TRICKY)
    assert accepted >= 25


def test_real_corpus():
    """Off unless SBATCH_LSP_CORPUS names a folder of real job scripts (never committed)."""
    folder = os.environ.get("SBATCH_LSP_CORPUS")
    if not folder:
        return
    accepted, differing = 0, {}
    for path in sorted(Path(folder).iterdir()):
        text = path.read_bytes().decode("utf-8", "replace")
        n, diff = differences(text)
        accepted += n
        if diff:
            differing[path.name] = diff
    print(f"simple lines: {accepted}; files differing: {len(differing)}")
    assert differing == {}
