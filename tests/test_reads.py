"""The per-job index of variable reads (facts/reads.py) against a plain scan of every word, for
every script the project holds, and the shell model's promise it rests on."""
import pytest

from rule_pages import sample_scripts
from sbatch_lsp.facts.reads import variable_reads
from sbatch_lsp.lint import job_of


@pytest.mark.parametrize("text", sample_scripts())
def test_index_equals_a_scan_of_every_word(text):
    job = job_of(text, "job.sbatch")
    reads = variable_reads(job)
    scanned: dict[str, list] = {}
    early: dict[str, list] = {}
    for cmd in job.script.walk():
        for w in cmd.all_words():
            for e in w.expansions:
                if e.name:
                    scanned.setdefault(e.name, []).append((cmd, e))
            for e in w.early:
                if e.name and cmd not in early.setdefault(e.name, []):
                    early[e.name].append(cmd)
    assert reads.names == set(scanned) | set(early)
    for name, found in early.items():
        assert [id(c) for c in reads.early_commands(name)] == [id(c) for c in found]
    for name, found in scanned.items():
        assert [(id(c), id(e)) for c, e in reads.of(name)] == [(id(c), id(e)) for c, e in found]
        assert [id(c) for c in reads.commands(name)] == \
            [id(c) for c in dict.fromkeys(c for c, _ in found)]
    assert reads.of("NOT_READ_BY_ANY_SCRIPT") == [] and reads.commands("NOT_READ") == []


@pytest.mark.parametrize("text", sample_scripts())
def test_every_assignment_belongs_to_a_command(text):
    """What the index rests on: an assignment's value is a word of its command (the value of a
    prefix or standalone assignment, or inside an ``export``/``declare`` argument), so every
    name an assignment reads is a name some command's word reads."""
    job = job_of(text, "job.sbatch")
    reads = variable_reads(job)
    for script in [job.script, *(s for c in job.script.walk() for s in c.nested)]:
        for a in script.assignments:
            assert a.command is not None
            if a.value is not None:
                assert {e.name for e in a.value.expansions if e.name} <= reads.names


def test_values_written_into_a_heredoc_are_names():
    """The batch-shell values written into a here-document a step runs are early expansions of
    its words, read by no command's word: they are in the names all the same."""
    text = ("#!/bin/bash\n#SBATCH --nodes=2\ncat > run.sh <<EOF\npython t.py --rank $SLURM_PROCID\n"
            "EOF\nsrun bash run.sh\n")
    reads = variable_reads(job_of(text, "job.sbatch"))
    assert "SLURM_PROCID" in reads.names and reads.of("SLURM_PROCID") == []


def test_carrying_follows_assignments_at_any_depth_and_offset():
    """The names whose value may carry a seed's: assigned from it, from one of those, …,
    before or after the read (a superset: value_at decides which assignment a read sees)."""
    text = ("#!/bin/bash\necho $B\nB=\"x $A\"\nA=$SEED\nC=(--opt \"$B\")\nD=$OTHER\n"
            "E=$D\n")
    reads = variable_reads(job_of(text, "job.sbatch"))
    assert reads.carrying({"SEED"}) == {"SEED", "A", "B", "C"}
    assert reads.carrying(set()) == set()
    assert reads.carrying({"D"}) == {"D", "E"}
