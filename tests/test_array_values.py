"""Option arrays whose elements are not literal (facts/values.array_elements): each element is
a word of its own with its span in the assignment, resolved through values."""
from __future__ import annotations

from sbatch_lsp.facts.values import _element_spans, array_elements
from sbatch_lsp.lint import lint
from sbatch_lsp.shell.parse import parse_script


def _elements(array: str) -> list[tuple[str, str | None]]:
    text = f"A={array}\nsrun \"${{A[@]}}\" hostname\n"
    script = parse_script(text)
    ref = script.commands[-1].words[1]
    found = array_elements(ref, script)
    assert found is not None
    assert all(text[w.start:w.end] == w.text for w in found)  # spans in the user's text
    return [(w.text, w.value) for w in found]


def test_elements_split_as_bash_does() -> None:
    assert _elements('(-n "$NTASKS" --x=$(echo "a b") \'q r\' --m=$((1 + 2)))') == [
        ("-n", "-n"), ('"$NTASKS"', None), ('--x=$(echo "a b")', None), ("'q r'", "q r"),
        ("--m=$((1 + 2))", None)]


def test_unreadable_arrays_stay_unknown() -> None:
    text = 'A=(-n 2 # a comment\n)\nsrun "${A[@]}" hostname\n'
    script = parse_script(text)
    assert array_elements(script.commands[-1].words[1], script) is None
    assert _element_spans('(-n "2)', 1, 6) is None  # an unclosed quote
    assert _element_spans("(-n 2 >log)", 1, 10) is None  # not words


def test_srun_options_through_a_variable_in_an_array() -> None:
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\nN=2\n"
            'ARGS=(--ntasks="$N" --ntasks-per-node=1)\nsrun "${ARGS[@]}" hostname\n')
    step = lint(text).job.steps[0]
    assert step.tasks_per_node == 1
    assert text[step.options["ntasks"].start:step.options["ntasks"].end] == '"$N"'


def test_appended_non_literal_elements() -> None:
    text = ('#!/bin/bash\n#SBATCH --nodes=2\nA=(-N 2)\nA+=(--container-image="$IMG")\n'
            'srun "${A[@]}" hostname\n')
    assert lint(text).job.steps[0].container


CONTAINER_JOB = ("#!/bin/bash\n#SBATCH --nodes=2\n{guard}"
                 'ARGS=(--container-image="$IMAGE" --no-container-mount-home)\n'
                 'srun "${{ARGS[@]}}" python -c "from transformers import AutoModel"\n')


def test_container_options_in_a_non_literal_array_reach_sb401() -> None:
    # the array names the container and --no-container-mount-home: an unset HF_HOME falls
    # back to /root/.cache inside each node's container
    text = CONTAINER_JOB.format(guard="")
    found = [(d.code, d.severity.name.lower()) for d in lint(text).diagnostics]
    assert ("SB401", "error") in found


def test_a_required_cache_variable_rests_on_the_submit_environment() -> None:
    # `: "${HF_HOME:?…}"` stops the script unless the caller set HF_HOME: its value is not
    # in the script (like a bare `export HF_HOME`), so SB401 has nothing to judge
    text = CONTAINER_JOB.format(guard=': "${HF_HOME:?set HF_HOME to a shared cache}"\n')
    found = [(d.code, d.severity.name.lower()) for d in lint(text).diagnostics]
    assert not [f for f in found if f[0] == "SB401" and f[1] != "info"], found
    quoted = CONTAINER_JOB.format(guard="echo '${HF_HOME:?not expanded}'\n")
    assert ("SB401", "error") in [(d.code, d.severity.name.lower())
                                  for d in lint(quoted).diagnostics]
