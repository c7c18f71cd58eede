"""Each rule's prefilter (a necessary condition for a finding, checked before the slow path)
drops no finding: for every script the project holds and the cases below, the rule finds the
same with the prefilter replaced by one that lets everything through."""
import pytest

from rule_pages import sample_scripts
from sbatch_lsp.lint import job_of
from sbatch_lsp.rules import RULES

#: scripts that reach the slow paths through the indexes' less common entries
CASES = [
    # a credential carried through two assignments into `bash -c`, under xtrace
    "#!/bin/bash\nset -x\nT=\"$HF_TOKEN\"\nCMD=\"tool --token $T\"\nsrun bash -c \"$CMD\"\n",
    # a credential read by a sourced-looking chain defined after a first use
    "#!/bin/bash\necho \"$A\"\nA=$B\nB=$GITHUB_TOKEN\necho \"$A\" \"$B\"\n",
    # a credential-named assignment under xtrace, nothing read
    "#!/bin/bash\nset -x\nexport WANDB_API_KEY=\"$(cat ~/.wandb)\"\npython t.py\n",
    # `$?` read after a report, in a statement whose first command is not the reader
    ("#!/bin/bash\n#SBATCH --nodes=2\nsrun python t.py\necho done\nif [ $? -ne 0 ]; then exit 1; fi\n"
     "srun python u.py\necho done; rc=$?\nexit $rc\n"),
    # a misspelt Slurm name in a command string and one in a here-document a step runs
    ("#!/bin/bash\nsrun bash -c 'echo $SLURM_PROCID_x'\ncat > r.sh <<EOF\necho $SLURM_JOB_NUMNODES\n"
     "EOF\nsrun bash r.sh\n"),
    # per-task values carried through assignments into a step, an export and a here-document
    ("#!/bin/bash\n#SBATCH --nodes=2\nR=$SLURM_PROCID\nN=\"--node-rank=$R\"\nexport NODE_RANK=$R\n"
     "srun torchrun $N train.py\ncat > r.sh <<EOF\npython t.py --rank $SLURM_NODEID\nEOF\n"
     "srun bash r.sh\nA=(--node_rank $SLURM_NODEID)\nsrun python t.py \"${A[@]}\"\n"),
    # escaped and single-quoted task variables reaching srun's program, from an array too
    ("#!/bin/bash\n#SBATCH --nodes=2\nA=(--node-rank '$SLURM_NODEID')\nsrun torchrun \"${A[@]}\" t.py\n"
     "srun python t.py --rank=\\$SLURM_PROCID --job \\${SLURM_JOB_ID}\n"),
]


def _findings(rule: str, text: str) -> list:
    job = job_of(text, "job.sbatch")
    check = RULES[rule].check
    assert check is not None
    return [(d.start, d.end, d.message, d.severity) for d in check(job)]


def _every_command(job):
    return {id(c) for c in job.script.walk()}


def _every_command_reads(job):
    """A VariableReads by which every command reads every name (and ``names`` holds every
    name some word reads)."""
    from sbatch_lsp.facts.reads import variable_reads

    real = variable_reads(job)
    commands = list(job.script.walk())

    class Everything:
        names = real.names

        def of(self, name):
            return real.of(name)

        def commands(self, name):
            return commands
    return Everything()


PREFILTERS = {
    "SB502": ("sbatch_lsp.rules.credentials", "_credential_readers", _every_command),
    "SB222": ("sbatch_lsp.rules.lifecycle", "variable_reads", _every_command_reads),
    "SB219": ("sbatch_lsp.rules.tasks", "_unknown_slurm_reads", lambda job, known: True),
    "SB301": ("sbatch_lsp.rules.expansion", "_per_task_readers",
              lambda job, per_task: _every_command(job)),
    "SB303": ("sbatch_lsp.rules.expansion", "_late_slurm_reads", lambda job, per_task: True),
}


@pytest.mark.parametrize("rule", sorted(PREFILTERS))
@pytest.mark.parametrize("text", sample_scripts() + CASES)
def test_prefilter_drops_no_finding(rule, text, monkeypatch):
    import importlib

    fast = _findings(rule, text)
    module, name, everything = PREFILTERS[rule]
    monkeypatch.setattr(importlib.import_module(module), name, everything)
    assert fast == _findings(rule, text)


def test_the_cases_reach_the_slow_paths():
    """Each case gives its rule findings (so the comparison above covers a slow path)."""
    found = {rule: [len(_findings(rule, t)) for t in CASES] for rule in PREFILTERS}
    assert found == {"SB502": [1, 1, 1, 0, 0, 0, 0], "SB222": [0, 0, 0, 2, 0, 0, 0],
                     "SB219": [0, 0, 0, 0, 1, 0, 0], "SB301": [0, 0, 0, 0, 0, 3, 0],
                     "SB303": [0, 0, 0, 0, 0, 0, 3]}


class _Everything:
    def __contains__(self, item):
        return True

    def isdisjoint(self, other) -> bool:  # (the set test SB607's installer asks)
        return not list(other)


@pytest.mark.parametrize("text", sample_scripts() + CASES)
def test_installer_prefilter_drops_no_installer(text, monkeypatch):
    """SB607's :func:`installer` answers the same for every command with its word test letting
    every command through."""
    import sbatch_lsp.rules.megatron_env as m

    commands = list(job_of(text, "job.sbatch").script.walk())
    fast = [m.installer(c) for c in commands]
    monkeypatch.setattr(m, "INSTALLER_WORDS", _Everything())
    assert fast == [m.installer(c) for c in commands]


#: directive values SB105 refuses, and others it does not judge
BAD_VALUES = ("#!/bin/bash\n#SBATCH --time=1-2-3 --mem=12Q --nodes=0 --job-name=a:b\n"
              "#SBATCH --partition=\n#SBATCH --signal=B:FOO@90 --mail-type=SOMETIMES --account=x y\n"
              "srun t\n")


@pytest.mark.parametrize("text", sample_scripts() + CASES + [BAD_VALUES])
def test_invalid_value_prefilter_drops_no_finding(text, monkeypatch):
    """SB105 reads only the options :func:`values.check_value` judges (``VALIDATED``): with
    every option let through it finds the same."""
    import sbatch_lsp.values as v

    fast = _findings("SB105", text)
    monkeypatch.setattr(v, "VALIDATED", _Everything())
    assert fast == _findings("SB105", text)


def test_check_value_judges_only_the_validated_options():
    """The option names outside ``VALIDATED`` get no judgement whatever their value."""
    from sbatch_lsp.options import sbatch_options
    from sbatch_lsp.values import VALIDATED, check_value

    bad = ["", "x", "-1", "0", "1:2:3:4:5", "99999999999999999999", "a=b", "1-2-3", "@", "12Q"]
    for name in set(sbatch_options()) - VALIDATED:
        for value in bad:
            assert check_value(name, value, "24.05") is None, (name, value)


def test_check_value_memo_answers_as_a_fresh_check():
    """values.check_value is memoised (values repeat across scripts): every judged value of
    the sample scripts, asked twice in a shuffled order after the others, gets the answer the
    unmemoised function gives."""
    import random

    from sbatch_lsp.values import EXAMPLES, VALIDATED, check_value

    asked = [(name, value) for name, value in EXAMPLES.items() if name in VALIDATED]
    for param in sample_scripts():
        asked += [(u.name, u.value) for u in job_of(param.values[0]).directives.options
                  if u.ok and u.value is not None and u.name in VALIDATED]
    asked += [("time", "90"), ("time", "600"), ("mem", "1.5G"), ("nodes", "2-1"), ("mem", "8"),
              ("nodes", "1,5,9"), ("nodes", "1-15:4")]  # (the last two: by release)
    random.Random(5).shuffle(asked)
    for version in ("22.05", "26.05"):
        for name, value in asked + asked:
            assert check_value(name, value, version) == \
                check_value.__wrapped__(name, value, version), (name, value)


def test_effective_component_zero_answers_as_get():
    """SB106 reads component 0's options from ``DirectiveBlock.effective(0)`` (one dict) where
    ``DirectiveBlock.get`` answers them: both give the same use (the last accepted one) or None
    for every name of every sample script, refused, repeated and hetjob uses included."""
    from sbatch_lsp.options import sbatch_options

    cases = [
        "#!/bin/bash\n#SBATCH --mem=4G\n#SBATCH --mem=8G\n#SBATCH --bogus\n#SBATCH --time=\n",
        ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH hetjob\n#SBATCH -N 3 --gpus-per-task=1\n"
         "#SBATCH --mem-per-gpu=1G\n"),
    ]
    texts = cases + [param.values[0] for param in sample_scripts()]
    names = set(sbatch_options())
    for text in texts:
        d = job_of(text).directives
        eff = d.effective(0)
        for name in names | {u.name for u in d.options if u.name}:
            assert eff.get(name) is d.get(name), (name, text)
