"""rules/lifecycle.py's span questions, answered from per-job indexes: the steps in a span
(their own srun, or one in the body of a function a command there calls) and whether a span
holds work (a launcher or a program that is not QUICK)."""
import sbatch_lsp.lint  # noqa: F401  (registers every rule)
from sbatch_lsp.lint import job_of
from sbatch_lsp.rules.lifecycle import _steps_in, _work_in

TEXT = """#!/bin/bash
#SBATCH --nodes=2
run() {
  srun python "$@"
}
srun hostname
echo one
run a.py | tee log
srun python b.py &
cd /tmp
torchrun train.py
"""


def _lines(job, steps):
    return [job.source.line_of(s.command.start) + 1 for s in steps]


def test_steps_in_a_span_in_the_steps_order():
    job = job_of(TEXT, "t.sbatch")
    at = TEXT.index
    assert _lines(job, _steps_in(job, 0, len(TEXT))) == [4, 6, 9]
    assert _lines(job, _steps_in(job, at("srun hostname"), at("echo one"))) == [6]
    # the call puts run's srun (line 4) in the span of line 8
    assert _lines(job, _steps_in(job, at("run a.py"), at("srun python b.py"))) == [4]
    assert _steps_in(job, at("echo one"), at("run a.py")) == []
    assert _lines(job, _steps_in(job, at("srun python b.py"), at("srun python b.py") + 1)) \
        == [9]
    assert _steps_in(job, at("srun python b.py") + 1, len(TEXT)) == []


def test_work_in_a_span():
    job = job_of(TEXT, "t.sbatch")
    at = TEXT.index
    assert not _work_in(job, at("echo one"), at("run a.py"))      # echo is QUICK
    assert not _work_in(job, at("cd /tmp"), at("torchrun"))       # so is cd
    assert _work_in(job, at("torchrun"), len(TEXT))               # a launcher
    assert _work_in(job, at("run a.py"), at("srun python b.py"))  # a step through a call
    assert not _work_in(job, len(TEXT), len(TEXT) + 5)


def test_only_exit_follows_an_offset():
    """At most one bare ``exit``/``exit $?`` after the offset among the batch script's own
    commands (a command substitution's are not counted), whatever the model's order."""
    from sbatch_lsp.rules.lifecycle import _only_exit_follows

    text = ("#!/bin/bash\n#SBATCH --nodes=1\nsrun a | tee log\nX=$(date)\necho \"$X\"\n"
            "srun b | tee log\nexit $?\n")
    job = job_of(text, "t.sbatch")
    at = text.index
    assert _only_exit_follows(job, at("exit $?"))
    assert _only_exit_follows(job, len(text))
    assert not _only_exit_follows(job, at("srun b"))  # srun b and the exit
    assert not _only_exit_follows(job, at("echo"))
    assert not _only_exit_follows(job, at("X=$(date)") + 2)  # $(date)'s not counted, echo is
