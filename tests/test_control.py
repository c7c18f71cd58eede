"""Control facts (sbatch_lsp/facts/control.py): which tasks run each command, background jobs
and the waits that collect them, pipelines and pipefail, set -e, traps, the last statement, and
the launch rules that read them (SB201/SB205 follow the guards)."""
from __future__ import annotations

import pytest

from sbatch_lsp.facts.control import control_of, plain_events, walked_events
from sbatch_lsp.lint import lint
from sbatch_lsp.shell.parse import parse_script


def _control(text: str):
    script = parse_script(text)
    return script, control_of(script, text)


def _cmd(script, text, name):
    found = [c for c in script.walk() if c.name == name]
    assert found, f"no command {name}"
    return found[0]


def _admitted(ctl, cmd, ids):
    """The (procid, nodeid, localid) triples of ``ids`` whose task runs ``cmd``."""
    runs = ctl.tasks(cmd)
    return [t for t in ids if runs.admits(*t)]


# a step of 2 nodes x 2 tasks: (procid, nodeid, localid)
TASKS = [(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1)]


@pytest.mark.parametrize("body,then_tasks,else_tasks", [
    ('if [ "$SLURM_PROCID" -eq 0 ]; then A; else B; fi', [(0, 0, 0)], TASKS[1:]),
    ("if [[ $SLURM_LOCALID == 0 ]]; then A; else B; fi", [(0, 0, 0), (2, 1, 0)],
     [(1, 0, 1), (3, 1, 1)]),
    ("if test $SLURM_NODEID -ne 0; then A; else B; fi", TASKS[2:], TASKS[:2]),
    ("if (( SLURM_PROCID > 0 )); then A; else B; fi", TASKS[1:], [(0, 0, 0)]),
    ("if [ 0 = \"${SLURM_NODEID}\" ]; then A; else B; fi", TASKS[:2], TASKS[2:]),
    ("if ! [ $SLURM_PROCID -eq 0 ]; then A; else B; fi", TASKS[1:], [(0, 0, 0)]),
    ("case $SLURM_LOCALID in 0) A ;; *) B ;; esac", [(0, 0, 0), (2, 1, 0)],
     [(1, 0, 1), (3, 1, 1)]),
    ('RANK=$SLURM_PROCID; if [ "$RANK" -eq 0 ]; then A; else B; fi', [(0, 0, 0)], TASKS[1:]),
])
def test_guards_in_a_task_body(body, then_tasks, else_tasks):
    """In a single-quoted body that srun's tasks run, each branch runs on the tasks its guard
    admits; the else branch of a PROCID-0 test runs on every task but 0."""
    text = f"#!/bin/bash\nsrun bash -c '{body}'\n"
    script, ctl = _control(text)
    assert _admitted(ctl, _cmd(script, text, "A"), TASKS) == then_tasks
    assert _admitted(ctl, _cmd(script, text, "B"), TASKS) == else_tasks


def test_elif_refuses_the_earlier_conditions():
    text = ("#!/bin/bash\nsrun bash -c 'if [ $SLURM_PROCID -eq 0 ]; then A; "
            "elif [ $SLURM_LOCALID -eq 0 ]; then B; else C; fi'\n")
    script, ctl = _control(text)
    assert _admitted(ctl, _cmd(script, text, "B"), TASKS) == [(2, 1, 0)]
    assert _admitted(ctl, _cmd(script, text, "C"), TASKS) == [(1, 0, 1), (3, 1, 1)]


@pytest.mark.parametrize("body,runs", [
    ("[ $SLURM_PROCID -eq 0 ] && A", [(0, 0, 0)]),
    ("[ $SLURM_PROCID -eq 0 ] || A", TASKS[1:]),
    ("[[ $SLURM_NODEID -eq 1 && $SLURM_LOCALID -eq 0 ]] && A", [(2, 1, 0)]),
])
def test_and_or_lists_guard_the_right_side(body, runs):
    text = f"#!/bin/bash\nsrun bash -c '{body}'\n"
    script, ctl = _control(text)
    assert _admitted(ctl, _cmd(script, text, "A"), TASKS) == runs


def test_batch_shell_guard_is_constant():
    """The batch shell is task 0 of node 0: its PROCID-0 test always holds and its else branch
    never runs; a double-quoted body is expanded by the batch shell too (it reads 0), unless
    the dollar sign is escaped."""
    text = ('#!/bin/bash\nif [ "$SLURM_PROCID" -eq 0 ]; then A; else B; fi\n'
            'srun bash -c "[ $SLURM_PROCID -ne 0 ] && C; [ \\$SLURM_PROCID -ne 0 ] && D"\n')
    script, ctl = _control(text)
    assert ctl.tasks(_cmd(script, text, "A")).in_batch_shell()
    assert not ctl.tasks(_cmd(script, text, "B")).in_batch_shell()
    assert _admitted(ctl, _cmd(script, text, "C"), TASKS) == []
    assert _admitted(ctl, _cmd(script, text, "D"), TASKS) == TASKS[1:]


def test_other_conditions_are_opaque():
    text = "#!/bin/bash\nsrun bash -c 'if [ -f done ]; then A; else B; fi'\n"
    script, ctl = _control(text)
    for name in "AB":
        runs = ctl.tasks(_cmd(script, text, name))
        assert runs.opaque and not runs.guarded


def test_variable_body_and_function_call_site():
    text = ("#!/bin/bash\nCMD='[ \"$SLURM_LOCALID\" -eq 0 ] && A'\nsrun bash -c \"$CMD\"\n"
            "run() { B; }\nif [ $SLURM_PROCID -ne 0 ]; then run; fi\n")
    script, ctl = _control(text)
    assert _admitted(ctl, _cmd(script, text, "A"), TASKS) == [(0, 0, 0), (2, 1, 0)]
    assert not ctl.tasks(_cmd(script, text, "B")).in_batch_shell()


def test_background_and_waits():
    text = ("#!/bin/bash\nsrun a &\npid=$!\nsrun b &\nwait $pid\nsrun c &\n"
            "for i in 1 2; do srun d$i & done\nwait -n\n")
    _, ctl = _control(text)
    assert len(ctl.backgrounds) == 4
    a, b, _, d = ctl.backgrounds
    assert a.pid_var == "pid" and [w.kind for w in a.waits] == ["pids", "any"]
    assert b.pid_var is None and [w.kind for w in b.waits] == ["any"]
    assert d.in_loop
    assert ctl.at(a.command).background


def test_background_without_wait_and_bare_wait():
    text = "#!/bin/bash\nsrun a &\nsrun b &\necho started\n"
    _, ctl = _control(text)
    assert [b.waits for b in ctl.backgrounds] == [[], []]
    text2 = text + "wait\n"
    _, ctl2 = _control(text2)
    assert all([w.kind for w in b.waits] == ["all"] for b in ctl2.backgrounds)


def test_subshell_background_is_not_the_batch_shells():
    _, ctl = _control("#!/bin/bash\n( srun a & wait )\n")
    assert ctl.backgrounds == [] and ctl.waits == []


def test_pipelines_pipefail_errexit_last():
    text = ("#!/bin/bash\n#SBATCH -N1\nsrun a | tee x\nset -euo pipefail\nsrun b | tee y\n"
            "set +o pipefail\nsrun c | tee z\n")
    script, ctl = _control(text)
    assert [p.pipefail for p in ctl.pipelines] == [False, True, False]
    assert [p.last.name for p in ctl.pipelines] == ["tee"] * 3
    assert ctl.option_on(ctl.errexit, len(text)) and not ctl.option_on(ctl.errexit, 20)
    last = ctl.pipelines[-1]
    assert ctl.is_last(last.start, last.end) and not ctl.is_last(ctl.pipelines[0].start,
                                                                 ctl.pipelines[0].end)
    assert ctl.at(_cmd(script, text, "tee")).pipeline is ctl.pipelines[0]


def test_traps_and_signals():
    text = ("#!/bin/bash\ntrap 'scontrol requeue $SLURM_JOB_ID' SIGUSR1 15\n"
            "trap cleanup EXIT\nsrun bash -c 'trap \"echo t\" USR2; sleep 1'\n")
    _, ctl = _control(text)
    assert [(t.action, t.signals) for t in ctl.traps] == [
        ("scontrol requeue $SLURM_JOB_ID", ["USR1", "TERM"]), ("cleanup", ["EXIT"])]


def test_odd_input_never_raises():
    for text in ["", "#!/bin/bash\nif then fi\n", "#!/bin/bash\ncase x in\n", "é\x00\n"]:
        _control(text)


# ---- the launch facts follow the guards --------------------------------------------------

GUARDED = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
srun bash -c 'if [ "$SLURM_LOCALID" -eq 0 ]; then
    torchrun --nnodes=2 --nproc-per-node=8 --node-rank=$SLURM_NODEID \\
        --rdzv-backend=c10d --rdzv-endpoint=$MASTER_ADDR:29400 train.py
fi'
"""


def _codes(text):
    return [d.code for d in lint(text, "x.sbatch").diagnostics]


def test_sb201_counts_the_agents_a_localid_guard_admits():
    """Eight tasks per node, but only LOCALID 0 starts torchrun: one agent per node."""
    assert "SB201" not in _codes(GUARDED)
    assert "SB201" in _codes(GUARDED.replace('if [ "$SLURM_LOCALID" -eq 0 ]', "if true"))


def test_sb201_else_of_procid_guard_runs_on_the_others():
    text = GUARDED.replace('if [ "$SLURM_LOCALID" -eq 0 ]; then',
                           'if [ "$SLURM_PROCID" -eq 0 ]; then echo head; else')
    assert "SB201" in _codes(text)  # 7 or 8 agents on a node


def test_sb205_skips_a_launcher_the_batch_shell_never_reaches():
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n"
            'if [ "$SLURM_PROCID" -eq 0 ]; then\n  echo head\nelse\n'
            "  torchrun --nproc-per-node=8 train.py\nfi\n")
    assert "SB205" not in _codes(text)
    assert "SB205" in _codes(text.replace("-eq 0", "-ne 0"))


def test_show_ranks_per_node_follow_the_guard():
    """show's ranks per node count the agents the guard admits: one per node, 8 ranks each."""
    from sbatch_lsp.facts.steps import facts_of
    from sbatch_lsp.lint import job_of

    step = facts_of(job_of(GUARDED, "x.sbatch")).steps[0]
    assert (step.launcher, step.world_size, step.ranks_per_node) == ("torchrun", 16, 8)
    unguarded = GUARDED.replace('if [ "$SLURM_LOCALID" -eq 0 ]', "if true")
    step = facts_of(job_of(unguarded, "x.sbatch")).steps[0]
    assert step.ranks_per_node == 64


def test_shebang_flags_turn_errexit_on():
    """slurmstepd execs the script: `#!/bin/bash -ue` runs bash with errexit from line 1."""
    _, ctl = _control("#!/bin/bash -ue\nfalse | true\n")
    assert ctl.option_on(ctl.errexit, 10)
    _, ctl = _control("#!/bin/bash -x\nfalse | true\n")
    assert not ctl.option_on(ctl.errexit, 10)



# ---- the plain-chunk shortcut gives the full path's recording ------------------------------

def _chunk_texts(text: str) -> list[str]:
    script = parse_script(text)
    return [text[c.start:c.end] for c in script.chunks]


def _same_as_walked(chunk: str) -> bool:
    """Whether the shortcut declines ``chunk`` or records what the full path (tree-sitter and
    the walk) records; True when it took the shortcut is told apart by the caller."""
    plain = plain_events(chunk)
    assert plain is None or plain == walked_events(chunk), chunk
    return plain is not None


def test_plain_chunks_are_recorded_without_tree_sitter():
    for chunk in ("srun python x.py", "export A=1 B", 'A="$x"', "A=1 B='y'",
                  'python x.py --y "$Z" > log 2>&1  # run', "unset A B",
                  'echo $! > pid', "srun \\\n  python x.py", "set -e", "wait $p",
                  'A="a \\\n  b"', "trap 'kill $p' TERM"):
        assert _same_as_walked(chunk), chunk
    # left to the full path: compounds, lists, words tree-sitter-bash splits oddly
    for chunk in ("if true; then a; fi", "a && b", "a | b", "a &", "A=$B/$C.x",
                  "cmd q - 2>&1", "cmd \\\n", "echo `x`", "a=(1 2)", 'set "a"${x}',
                  "wait ${p}x"):
        assert not _same_as_walked(chunk), chunk


def test_plain_shortcut_equals_the_full_path_on_every_script():
    """Every chunk of every script the project holds, of the generated corpus and of the real
    corpus (CORPUS_DIR)."""
    import sbatch_corpus
    from rule_pages import sample_scripts
    from shell_models import real_corpus

    texts = [p.values[0] for p in sample_scripts()]
    texts += [data.decode("utf-8", "replace") for _name, data in sbatch_corpus.cases()]
    texts += [text for _name, text in real_corpus()]
    taken = sum(_same_as_walked(chunk) for text in texts for chunk in _chunk_texts(text))
    assert taken > 100


def test_plain_shortcut_equals_the_full_path_on_generated_words():
    """Words of every kind the shortcut reads, in every statement shape it reads."""
    import random

    parts = ["a", "/", "$b", "${c}", '"d"', "'e'", '"$f"', "$(g)", "-", ".x", "$1", '"a b"',
             "$@", "=", ":", "%", "${h:-x}", '"$(i j)"', "~", "*", ",", "@", "+", "!", "#",
             "é", "\u200b", "${#a[@]}", "${x%%.*}", "--", "\\", "$!", '"a \\\n b"',
             "`c $d`", " ", "\n", "\\\n"]
    forms = ["A=%s", "A=%s cmd q", "echo %s q", "echo q %s", "export A=%s q", "local %s",
             "A=1 B=%s", "B=%s A=1", "cmd %s > f", "cmd q %s 2>&1", "%s q", "unset %s",
             "declare -x A=%s", 'cmd x %s >> "$log" 2>&1', "set %s", "wait %s",
             "trap %s TERM", "set -o %s"]
    rng = random.Random(11)
    taken = 0
    for _ in range(5000):
        word = "".join(rng.choice(parts) for _ in range(rng.randint(1, 4)))
        taken += _same_as_walked(rng.choice(forms) % word)
    assert taken > 1500


# ---- the one-pass plain-chunk tokenizer gives the two-pass reading it replaced -------------

def _two_pass_tokens(text: str):
    """The reference: the chunk matched whole by one pattern (its tokens group 1), then its
    tokens found again by a second (:func:`control._plain_tokens`' shape, or None)."""
    import re

    from sbatch_lsp.facts import control as c

    token = re.compile(rf"(?P<redirect>{c._REDIRECTION})|{c._WORD}")
    plain = re.compile(rf"(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*"
                       rf"((?>{c._REDIRECTION}|{c._WORD})(?:[ \t]+(?:\\\n[ \t]*)*"
                       rf"(?>{c._REDIRECTION}|{c._WORD}))*+)"
                       r"[ \t]*(?:(?<=[ \t])#[^\n]*)?(?:\n[ \t]*(?:#[^\n]*)?)*").fullmatch(text)
    if plain is None:
        return None
    words, redirected = [], False
    for m in token.finditer(text, *plain.span(1)):
        if m.lastgroup:
            redirected = True
        elif redirected:
            return None
        else:
            words.append(m.span())
    if not words or words[0][0] != plain.start(1):
        return None
    return words, plain.span(1), redirected


def _same_tokens(text: str) -> bool:
    from sbatch_lsp.facts.control import _plain_tokens

    found = _plain_tokens(text)
    assert found == _two_pass_tokens(text), repr(text)
    return found is not None


def test_plain_tokens_equal_the_two_pass_reading_on_tricky_texts():
    taken = ["a", "srun x > log 2>&1", "  # c\n\n a b  # c\n# d\n", "a \\\n b", 'a "b c" \'d\'',
             "a $(b c) ${d[@]}", "A=1 B=2", "a >b", "a 2>&1", "a 2>&- >>f", "a &>f",
             "a #c"]
    for text in taken:
        assert _same_tokens(text), text
    for text in ["", "\n", "# c\n", "> f a", "2>&1 a", "a >f b", "a>f", "a 2>&1>f", "a \\\n",
                 "a \\\n# c", "a#c", "a\\\n b", "a;b", "a b\\", "a\tb\n\\\n", "a |b",
                 "'a", "a `b`", "2>f", "&>f a", "a b #c\nd"]:
        assert not _same_tokens(text), text


def test_plain_tokens_equal_the_two_pass_reading_on_random_and_real_chunks():
    """Seeded random texts of the pieces the patterns read, then every chunk of the sample
    scripts and of the real corpus (CORPUS_DIR)."""
    import random

    import sbatch_corpus
    from rule_pages import sample_scripts
    from shell_models import real_corpus

    pieces = ["a", "2", "$b", "${c}", '"d e"', "'f'", "$(g)", ">", ">>", "<", "&", "&>", ">&",
              "1", "-", "#", " ", "  ", "\t", "\n", "\\\n", "\\", ";", "|", "=", '"', "'", "$",
              "$1", "é", "(", ")", "{", "}", "`"]
    rng = random.Random(4)
    taken = sum(_same_tokens("".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))))
                for _ in range(20000))
    assert taken > 1000
    texts = [p.values[0] for p in sample_scripts()]
    texts += [data.decode("utf-8", "replace") for _name, data in sbatch_corpus.cases()]
    texts += [text for _name, text in real_corpus()]
    assert sum(_same_tokens(chunk) for text in texts for chunk in _chunk_texts(text)) > 100


def test_placed_command_control_equals_the_class_call():
    """_placed() makes what the class call makes, every field set (a field added to
    CommandControl and not to _placed() leaves a slot unset: this fails)."""
    import dataclasses

    from sbatch_lsp.facts.control import EVERY_TASK, CommandControl, Tasks, _placed

    for args in [(EVERY_TASK, False, False, False, None, None),
                 (Tasks((), True), True, True, True, (3, 9), "&&")]:
        made = _placed(*args)
        called = CommandControl(args[0], False, None, *args[1:])
        for f in dataclasses.fields(CommandControl):
            assert getattr(made, f.name) == getattr(called, f.name), f.name
        assert made == called
