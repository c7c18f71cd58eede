"""Facts the slurm tier's layout differential checks on the cluster, pinned here without one:
the batch shell's export state (facts/exports.py), steps srun refuses and the task count a step
inherits (facts/layout.py), and ``--export=ALL,NAME=v`` (facts/steps.py)."""
import pytest

from sbatch_lsp.config import Config, Profile
from sbatch_lsp.facts.exports import Exports
from sbatch_lsp.facts.show import job_for
from sbatch_lsp.facts.steps import facts_of
from sbatch_lsp.shell.parse import parse_script


def exported_at_end(text: str, name: str) -> bool:
    text += "true # END\n"
    return Exports(parse_script(text)).exported(name, text.index("true # END"))


@pytest.mark.parametrize("text,name,want", [
    ("export N=1\n", "N", True),
    ("N=1\nexport N\n", "N", True),
    ("export N\nN=1\n", "N", True),  # the attribute belongs to the variable
    ("N=1\n", "N", False),
    ("declare -x N=1\n", "N", True),
    ("typeset -x N=1\n", "N", True),
    ("declare N=1\n", "N", False),
    ("readonly N=1\n", "N", False),
    ("export N=1\nexport -n N\n", "N", False),
    ("export N=1\ndeclare +x N\n", "N", False),
    ("export N=1\nunset N\n", "N", False),
    ("export N=1\nunset N\nN=2\n", "N", False),  # unset took the attribute with the variable
    ("export N=1\nunset -f N\n", "N", True),  # a function of that name
    ("export N=1\nN=2\n", "N", True),
    ("set -a\nN=1\nset +a\n", "N", True),  # assigned while on: stays exported
    ("set -a\nset +a\nN=1\n", "N", False),
    ("set -o allexport\nN=1\n", "N", True),
    ("set -o allexport\nset +o allexport\nN=1\n", "N", False),
    ("set -euo pipefail\nN=1\n", "N", False),  # -o takes pipefail, no a
    ("set -ea\nN=1\n", "N", True),
    ("X=$(export N=1)\n", "N", False),  # a subshell
    ("f() {\n  declare -x N=1\n}\n", "N", False),  # declare in a function is local
    ("f() {\n  declare -gx N=1\n}\n", "N", True),
    ("f() {\n  export N=1\n}\nf\n", "N", True),
    ("export -f N\n", "N", False),
    ("N=1 cmd\n", "N", False),  # only cmd's environment
])
def test_export_state(text, name, want):
    assert exported_at_end(text, name) is want


def test_export_state_follows_the_offset():
    text = "N=1\nsrun a\nexport N\nsrun b\nexport -n N\nsrun c\n"
    ex = Exports(parse_script(text))
    assert [ex.exported("N", text.index(f"srun {c}")) for c in "abc"] == [False, True, False]
    assert ex.exported("N")  # at some point


def test_export_state_before_and_after_each_of_many_events():
    """The state just before an offset, an event at the offset itself excluded: export, unset,
    set -a assignments, export -n, declare -x, each read at its line's start and end."""
    lines = ["N=0", "export N", "unset N", "N=1", "set -a", "N=2", "set +a", "export -n N",
             "declare -x N=3", "unset N", "N=4"]
    text = "\n".join(lines) + "\n"
    ex = Exports(parse_script(text))
    after = [False, True, False, False, False, True, True, False, True, False, False]
    at = 0
    for k, line in enumerate(lines):
        assert ex.exported("N", at) is (after[k - 1] if k else False), line
        assert ex.exported("N", at + len(line)) is after[k], line
        at += len(line) + 1
    assert ex.exported("N") and not ex.exported("M") and not ex.exported("M", 5)


#: lines of the random export scripts, each with its effect on the variable it names:
#: "on" (exports it), "off" (removes the attribute), "assign" (exports it while set -a is on),
#: or a set -a toggle
_EXPORT_LINES = [("N=1", "N", "assign"), ("M=2", "M", "assign"), ("export N", "N", "on"),
                 ("export M=3", "M", "on"), ("unset N", "N", "off"), ("export -n M", "M", "off"),
                 ("declare -x N=4", "N", "on"), ("declare M=5", "M", "assign"),
                 ("readonly N=6", "N", "assign"), ("set -a", None, True),
                 ("set +a", None, False), ("set -o allexport", None, True),
                 ("set +o allexport", None, False), ("echo $N", None, None)]


@pytest.mark.parametrize("seed", range(40))
def test_export_state_of_random_scripts_follows_a_line_by_line_reading(seed):
    """Exports answers like a reading of the script line by line that keeps each variable's
    attribute and the set -a flag (so plain assignments made while set -a is off, which
    Exports leaves out of its events, change nothing), at each line's start and end."""
    import random

    rnd = random.Random(seed)
    lines = [rnd.choice(_EXPORT_LINES) for _ in range(rnd.randint(1, 14))]
    text = "".join(line + "\n" for line, _, _ in lines)
    ex = Exports(parse_script(text))
    state = {"N": False, "M": False}
    allexport = False
    at = 0
    for line, name, effect in lines:
        for var, want in state.items():
            assert ex.exported(var, at) is want, (text, line, var)
        if name is None:
            allexport = allexport if effect is None else effect
        elif effect != "assign" or allexport:
            state[name] = effect != "off"
        at += len(line) + 1
        for var, want in state.items():
            assert ex.exported(var, at - 1) is want, (text, line, var)


def _job(text: str, version: str | None = None):
    config = Config(profile=Profile(slurm_version=version)) if version else Config()
    return job_for("#!/bin/bash\n" + text, "job.sbatch", config)


def _step(text: str, k: int = 0, version: str | None = None):
    """Step ``k``'s facts (its ``env`` is read through the Job, which this drops: see
    :func:`_job`)."""
    return facts_of(_job(text, version)).steps[k]


def test_step_on_more_nodes_than_the_job_is_refused():
    s = _step("#SBATCH --nodes=1\nsrun --nodes=2 --ntasks=2 python x.py\n")
    assert s.layout.refused is not None and "only allocated 1 node(s), asked for 2" in \
        s.layout.refused
    assert (s.layout.nodes, s.layout.tasks, s.layout.placement) == (None, None, None)


def test_no_count_at_all_is_one_node():
    """sbatch(1) --nodes: with no job-wide count the job gets one node, so a two-node step is
    refused there (the cluster: 'Only allocated 1 nodes asked for 2')."""
    s = _step("#SBATCH --ntasks-per-node=3\nsrun --nodes=2 --ntasks-per-node=1 python x.py\n")
    assert s.layout.refused is not None
    assert _step("#SBATCH --ntasks=4\nsrun --nodes=2 python x.py\n").layout.refused is None


def test_step_on_fewer_nodes_inherits_the_job_task_count():
    """srun --nodes=1 in a 2 x 2 job asks for SLURM_NTASKS=4 tasks on one node; the job holds
    two CPUs there, so srun may refuse it (22.05 on the cluster: 'More processors requested
    than permitted')."""
    s = _step("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\nsrun --nodes=1 python x.py\n")
    assert s.layout.refused is not None and "4 task(s)" in s.layout.refused
    whole = _step("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n#SBATCH --exclusive\n"
                  "srun --nodes=1 python x.py\n")
    assert whole.layout.refused is None
    assert (whole.layout.nodes, whole.layout.tasks, whole.layout.tasks_per_node) == (1, 4, 4)


@pytest.mark.parametrize("srun,refused", [
    ("srun -n 2 python x.py", False),
    ("srun -n 3 python x.py", True),  # two nodes, one CPU each
    ("srun -n 3 --overcommit python x.py", False),
    ("srun -N 1 -n 2 python x.py", True),
])
def test_step_needing_more_cpus_than_the_job_holds(srun, refused):
    s = _step(f"#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n{srun}\n")
    assert (s.layout.refused is not None) is refused


def test_step_cpus_follow_the_release():
    """22.05 through 23.02: a step's task takes one CPU unless it says -c; 23.11 reads
    SLURM_CPUS_PER_TASK again, so 8 tasks of 2 CPUs no longer fit 2 x 2 tasks of 2 CPUs."""
    text = ("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n#SBATCH --cpus-per-task=2\n"
            "srun -n 8 python x.py\n")
    assert _step(text, version="22.05").layout.refused is None
    assert _step(text, version="23.11").layout.refused is not None
    exported = text.replace("srun", "export SRUN_CPUS_PER_TASK=4\nsrun")
    assert _step(exported, version="22.05").layout.refused is None  # unknown: not refused


def test_export_all_plus_keeps_an_exported_value():
    """srun(1) --export: with ALL the caller's environment takes precedence over NAME=v."""
    job = _job("#SBATCH --nodes=1\nexport A=a\nsrun --export=ALL,A=override,B=b python x.py\n")
    s = facts_of(job).steps[0]
    assert (s.env["A"].value, s.env["A"].exported) == ("a", True)
    assert (s.env["B"].value, s.env["B"].exported) == ("b", True)
    job = _job("#SBATCH --nodes=1\nexport A=a\nsrun --export=A=override python x.py\n")
    listed = facts_of(job).steps[0]
    assert listed.env["A"].value == "override"


def test_env_after_set_plus_a_and_unexport():
    job = _job("#SBATCH --nodes=1\nset -a\nAUTO=1\nset +a\nAFTER=2\nexport E=3\nexport G=4\n"
               "export -n E\nunset G\nsrun python x.py\n")
    s = facts_of(job).steps[0]
    assert {n: v.exported for n, v in s.env.items()} == {
        "AUTO": True, "AFTER": False, "E": False, "G": False}


def test_srun_options_from_an_array_built_with_append():
    """bash(1) Arrays: ``A+=(…)`` appends; srun reads the elements as its options."""
    s = _step("#SBATCH --nodes=2\n#SBATCH --exclusive\nA=(--nodes=2)\nA+=(--ntasks=4 --ntasks-per-node=2)\n"
              'srun "${A[@]}" hostname\n')
    assert (s.layout.nodes, s.layout.tasks, s.layout.tasks_per_node) == (2, 4, 2)
    unknown = _step('#SBATCH --nodes=2\nA=(--nodes=2)\nA+=(--ntasks="$N")\nsrun "${A[@]}" hostname\n')
    # an element that is not literal is still srun's --ntasks, with a value not known here
    assert not unknown.step.hidden and "ntasks" in unknown.step.options
    assert unknown.layout.tasks is None


def _events(ex: Exports) -> dict[str, list[tuple[int, str]]]:
    return {name: [(e.at, e.kind) for e in found] for name, found in ex.events.items()}


@pytest.mark.parametrize("text,want", [
    # a declaration in a function makes a local variable; the same text outside exports it
    ('f() {\n  declare -x A=1\n}\ndeclare -x A=1\n', {"A": [(36, "export")]}),
    ('f() {\n  declare -gx A=1\n}\n', {"A": [(20, "export")]}),
    # names read from the words' values (quoted), assignments from their texts
    ("unset 'A' \"B\"\nexport -n 'C'\n", {"A": [(6, "unset")], "B": [(10, "unset")],
                                          "C": [(24, "unexport")]}),
    ('export A="$x" B C=$(d)\nreadonly E=1 F\n',
     {"A": [(7, "export")], "B": [(14, "export")], "C": [(16, "export")],
      "E": [(32, "assign")]}),
    ("export -f g\nunset -f g\nexport -p\ndeclare -- A=1\n", {"A": [(44, "assign")]}),
])
def test_export_events_of_each_builtin(text, want):
    """The events the builtins make (what the memo of each command's reading keys on: its
    words' texts and values, and whether a declaration is in a function)."""
    assert _events(Exports(parse_script(text))) == want


def test_export_events_memo_equals_a_fresh_reading():
    """Each script's events read with the memo of builtin commands warm (from every script
    before it) and cleared: the same, on the random export scripts, every script the project
    holds and the real corpus (CORPUS_DIR)."""
    import random

    import sbatch_corpus
    from rule_pages import sample_scripts
    from shell_models import real_corpus

    from sbatch_lsp.facts.exports import _changes

    rnd = random.Random(5)
    texts = ["".join(rnd.choice(_EXPORT_LINES)[0] + "\n" for _ in range(8)) for _ in range(200)]
    texts += [p.values[0] for p in sample_scripts()]
    texts += [data.decode("utf-8", "replace") for _name, data in sbatch_corpus.cases()]
    texts += [text for _name, text in real_corpus()]
    read = 0
    for text in texts:
        script = parse_script(text)
        warm = _events(Exports(script))
        _changes.cache_clear()
        assert _events(Exports(script)) == warm, text
        read += bool(warm)
    assert read > 100
