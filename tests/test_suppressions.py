"""Suppression comments as DESIGN.md ("Configuration") specifies them: read from real comments
only, disable/enable ranges, unknown names in the user's spelling, and --add-noqa's edits."""
from __future__ import annotations

import pytest

from sbatch_lsp import suppressions
from sbatch_lsp.fixer import apply_edits
from sbatch_lsp.lint import lint
from sbatch_lsp.shell import masks

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n"
LAUNCH = "srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=n1:29400 t.py\n"


def findings(text: str) -> list[tuple[str, int]]:
    """(code, 1-based line) of every finding."""
    res = lint(text, "job.sbatch")
    return [(d.code, res.source.line_of(d.start) + 1) for d in res.diagnostics]


def test_the_bad_script_has_one_sb201_per_launch():
    assert findings(HEAD + LAUNCH + LAUNCH) == [("SB201", 5), ("SB201", 6)]


@pytest.mark.parametrize("carrier", [
    "cat > gen.sh <<'EOF'\n# sbatch-lint: disable-file=SB2\nEOF\n",     # a heredoc body
    "cat > gen.sh <<EOF\n# sbatch-lint: disable-file=SB201\nEOF\n",      # unquoted delimiter
    "MSG='\n# sbatch-lint: disable-file=SB2\n'\n",                        # a multi-line string
    'echo "# sbatch-lint: disable-file=SB2"\n',                          # a string on one line
    "echo x#sbatch-lint: disable-file=SB2\n",                            # a word, not a comment
])
def test_text_that_is_not_a_comment_suppresses_nothing(carrier):
    text = HEAD + carrier + LAUNCH
    codes = [c for c, _ in findings(text)]
    assert codes.count("SB201") == 1
    assert "SB001" not in codes  # not a suppression at all, so not an unused one either


def test_a_trailing_comment_on_a_command_is_real():
    text = HEAD + LAUNCH.rstrip("\n") + "  # sbatch-lint: disable=SB201\n"
    assert findings(text) == []


def test_disable_covers_the_next_command_only():
    text = HEAD + "# sbatch-lint: disable=SB201\n# a note in between\n" + LAUNCH + LAUNCH
    assert findings(text) == [("SB201", 8)]


def test_disable_enable_range_covers_everything_between():
    text = (HEAD + "# sbatch-lint: disable=SB201\n" + LAUNCH + "echo between\n" + LAUNCH
            + "# sbatch-lint: enable=SB201\n" + LAUNCH)
    assert findings(text) == [("SB201", 10)]


def test_an_unused_range_is_sb001():
    text = HEAD + "# sbatch-lint: disable=SB205\n" + LAUNCH + "# sbatch-lint: enable=SB205\n"
    res = lint(text, "job.sbatch")
    sb001 = [d for d in res.diagnostics if d.code == "SB001"]
    assert len(sb001) == 1 and "between it and its enable" in sb001[0].message
    assert [d.code for d in res.diagnostics if d.code != "SB001"] == ["SB201"]


def test_enable_with_no_open_range_is_sb001():
    text = HEAD + LAUNCH + "# sbatch-lint: enable=torchrun-per-task\n"
    res = lint(text, "job.sbatch")
    msgs = [d.message for d in res.diagnostics if d.code == "SB001"]
    assert len(msgs) == 1 and "`enable=torchrun-per-task` follows no" in msgs[0]


def test_enable_must_be_at_the_same_nesting_level():
    # the enable sits inside the if: it does not close the top-level disable, which then
    # covers only the next command (the if) and the enable is unmatched
    text = (HEAD + "# sbatch-lint: disable=SB201\nif true; then\n  " + LAUNCH
            + "  # sbatch-lint: enable=SB201\nfi\n" + LAUNCH)
    res = findings(text)
    assert ("SB201", 10) in res and ("SB201", 7) not in res
    assert [c for c, _ in res].count("SB001") == 1


def test_disable_inside_a_compound_command_covers_the_next_command_there():
    text = (HEAD + "if true; then\n  # sbatch-lint: disable=SB201\n  " + LAUNCH + "  " + LAUNCH
            + "fi\n")
    assert findings(text) == [("SB201", 8)]


def test_unknown_names_are_reported_as_typed():
    text = HEAD + "# sbatch-lint: disable=torchrun-per-tsk, sb9\n" + LAUNCH
    res = lint(text, "job.sbatch")
    msgs = sorted(d.message for d in res.diagnostics if d.code == "SB001")
    assert len(msgs) == 2
    assert msgs[0].startswith("`disable=sb9` names no rule")
    assert msgs[1].startswith("`disable=torchrun-per-tsk` names no rule")
    sb001 = [d for d in res.diagnostics if d.code == "SB001"]
    assert {res.source.text[d.start:d.end] for d in sb001} == {"torchrun-per-tsk", "sb9"}


def test_a_reason_after_the_codes_is_allowed():
    text = HEAD + "# sbatch-lint: disable=SB201 -- two agents are intended here\n" + LAUNCH
    assert findings(text) == []


def test_a_mask_that_raises_is_an_internal_error(monkeypatch):
    def broken(text):
        raise IndexError("bug")
    monkeypatch.setattr(masks, "MASKS", [("broken", broken)])
    # `&&` inside [[ ]]: a chunk the fast reader leaves to the masks and bashlex
    res = lint(HEAD + "if [[ -n $X && -n $Y ]]; then echo; fi\n", "job.sbatch")
    sb003 = [d for d in res.diagnostics if d.code == "SB003"]
    assert len(sb003) == 1 and "mask 'broken' raised IndexError" in sb003[0].message
    assert res.job is not None and res.job.script.chunks[-1].parser == "tree-sitter"


# ------------------------------------------------------------------------- --add-noqa


def add_noqa(text: str) -> str:
    res = lint(text, "job.sbatch")
    script = res.job.script if res.job else None
    return apply_edits(text, suppressions.add_noqa(res.source, script, res.diagnostics))


MULTI = (HEAD + "srun \\\n  torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d \\\n"
         "  --rdzv-endpoint=n1:29400 t.py\n#SBATCH --time=10\necho $SLURM_PROCID\n")


def test_add_noqa_silences_every_finding_and_is_idempotent():
    assert {c for c, _ in findings(MULTI)} >= {"SB201", "SB101"}
    once = add_noqa(MULTI)
    assert findings(once) == []
    assert add_noqa(once) == once
    # above the first line of the continued command (SB201, and SB223 for the footer echo
    # that ends the job with status 0), and above the late directive
    assert "# sbatch-lint: disable=SB201,SB223\nsrun \\\n" in once
    assert "# sbatch-lint: disable=SB101\n#SBATCH --time=10\n" in once


def test_add_noqa_merges_with_a_suppression_already_there():
    text = MULTI.replace("srun \\", "# sbatch-lint: disable=SB205\nsrun \\")
    out = add_noqa(text)
    assert "# sbatch-lint: disable=SB205,SB201,SB223\nsrun \\\n" in out
    # the merged SB205 still covers nothing: SB001 is never silenced, so it shows
    assert [c for c, _ in findings(out)] == ["SB001"]


def test_add_noqa_puts_a_first_line_finding_in_a_file_comment():
    text = "#!/bin/bash\r\n#SBATCH --nodes=1\r\necho hi\r\n"
    assert ("SB100", 1) in findings(text)
    out = add_noqa(text)
    assert out.startswith("#!/bin/bash\r\n# sbatch-lint: disable-file=SB100\n")
    assert ("SB100", 1) not in findings(out)


def test_add_noqa_inside_an_indented_block_keeps_the_indentation():
    text = HEAD + "if true; then\n  " + LAUNCH + "fi\n"
    out = add_noqa(text)
    assert "# sbatch-lint: disable=SB201\nif true; then\n" in out
    assert findings(out) == []


def test_add_noqa_on_the_command_line(tmp_path):
    import subprocess
    import sys
    job = tmp_path / "job.sbatch"
    job.write_text(MULTI)
    other = tmp_path / "clean.sbatch"
    other.write_text("#!/bin/bash\n#SBATCH --nodes=1\necho hi\n")
    run = [sys.executable, "-m", "sbatch_lsp", "--add-noqa", str(tmp_path)]
    first = subprocess.run(run, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "0 finding(s)" in first.stdout and "Added suppressions for" in first.stdout
    assert job.read_text() == add_noqa(MULTI)
    assert other.read_text() == "#!/bin/bash\n#SBATCH --nodes=1\necho hi\n"
    again = subprocess.run(run, capture_output=True, text=True)
    assert again.returncode == 0 and "Added suppressions for 0." in again.stdout
    assert job.read_text() == add_noqa(MULTI)
    piped = subprocess.run([sys.executable, "-m", "sbatch_lsp", "--add-noqa", "-"],
                           input=MULTI, capture_output=True, text=True)
    assert piped.stdout == add_noqa(MULTI)
    both = subprocess.run(run + ["--fix"], capture_output=True, text=True)
    assert both.returncode == 2 and "--add-noqa" in both.stderr


@pytest.mark.parametrize("comment", ["#sbatch-lint:disable=SB201", "#  sbatch-lint:\tdisable = SB201"])
def test_a_comment_without_or_with_odd_blanks_is_read(comment):
    """suppressions.read looks for its marker (``sbatch-lint:``) in the text before reading any
    comment: every spelling the comment pattern takes holds it."""
    assert findings(HEAD + comment + "\n" + LAUNCH) == []
