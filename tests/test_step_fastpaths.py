"""The per-step shortcuts of the edit path give what the plain reading gives, on every script the
project holds and on tricky ones: the job's containers skip the steps without pyxis options when
the script never exports ``PYXIS_CONTAINER_IMAGE`` (facts/containers.py); ``expand_arrays``
copies a command with no array reference without reading its words again (facts/values.py);
the batch shell's commands test the steps that run a nested script once per script
(facts/nodelocal.py); a step's env answers ``get`` and ``in`` without raising (facts/steps.py);
a plain step's view of its argv is not asked again whether it starts a node agent
(facts/reach.py); set tests in place of loops over a step's options or a command's words; a
name never exported is not looked up by offset (facts/exports.py); loops in place of
generators (the framework runs' word test, a command's operands, a step's env and launch); the
steps in text order sorted once per job (Job.ordered_steps); the layouts memo of a job's
steps keyed by a flat tuple of the request's fields (facts/steps.py _layout_key); loops in
place of generators in rules' whole-script tests (SB303's and SB219's reads, the steps' GPU
requests); the masker's memo of a text's token formats (secrets.carries_format).
Each reference below is the code as it was before the shortcut."""
import dataclasses
import random
from bisect import bisect_left

import pytest

from rule_pages import sample_scripts
from sbatch_lsp.facts import framework, nodelocal, reach
from sbatch_lsp.facts.argv import literal_start, walk
from sbatch_lsp.facts.containers import _containers, container_of
from sbatch_lsp.facts import steps as steps_facts
from sbatch_lsp.facts.layout import Request, StepRequest, components
from sbatch_lsp.facts.steps import LAUNCHER_NAMES, LazyEnv, facts_of
from sbatch_lsp.facts.values import array_elements, expand_arrays
from sbatch_lsp.facts import resources
from sbatch_lsp.facts.reads import variable_reads
from sbatch_lsp.facts.resources import step_requests_gpus
from sbatch_lsp.facts.slurm_names import base_name, known_names
from sbatch_lsp.options import per_task_variables
from sbatch_lsp.rules import expansion, tasks
from sbatch_lsp.lint import job_of
from sbatch_lsp.rules.megatron_env import INSTALLER_WORDS, installer

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n"

#: scripts where a shortcut could go wrong: the image exported after a step, through set -a,
#: declare -x, taken back by export -n or unset; arrays holding arrays; nested scripts that
#: steps run (or not) holding commands that prepare node-local paths
TRICKY = [
    HEAD + "srun python a.py\nexport PYXIS_CONTAINER_IMAGE=nvcr.io/x:1\nsrun python b.py\n",
    HEAD + "set -a\nPYXIS_CONTAINER_IMAGE=/img.sqsh\nset +a\nsrun python a.py\n",
    HEAD + "declare -x PYXIS_CONTAINER_IMAGE=x\nsrun python a.py\n"
    "export -n PYXIS_CONTAINER_IMAGE\nsrun python b.py\n",
    HEAD + "export PYXIS_CONTAINER_IMAGE=x\nunset PYXIS_CONTAINER_IMAGE\nsrun python a.py\n"
    "srun --container-image=y --container-mounts=/a:/b python c.py\n",
    HEAD + "PYXIS_CONTAINER_IMAGE=x srun python a.py\nexport PYXIS_CONTAINER_MOUNTS=/a:/a\n"
    "srun --container-name=n python b.py\n",
    HEAD + 'A=(--ntasks=2)\nB=("${A[@]}" -N 1)\nsrun "${B[@]}" python x.py\n'
    'C=(srun "${A[@]}")\n"${C[@]}" bash -c "cp x /tmp/y; python t.py"\n',
    HEAD + "cp data /tmp/d\nbash -c 'cp a /tmp/b; cp c /dev/shm/d'\n"
    "srun bash -c 'cp e /tmp/f; python t.py /tmp/d'\n"
    "srun --ntasks-per-node=1 bash -c \"bash -c 'cp g /tmp/h'\"\npython x.py /tmp/b\n",
    HEAD + "f() { cp a /tmp/x; srun bash -c 'cp b /tmp/y'; }\nf\nf\nsrun python r.py /tmp/x\n",
    HEAD + "srun -N 2 ray start --address=$HEAD:6379 --block &\n"
    "srun bash -c 'ray start --address h:1 --block; dask worker tcp://h:8786' &\n"
    "timeout 1h srun dask-worker tcp://h:8786 &\nray start --address=h:1\n"
    "srun --gpus-per-task=1 --gres=gpu:2 python t.py\nsrun --gres=$G python u.py\n"
    "srun timeout 5 pip install -e .\nsrun uv run python x.py\n",
    HEAD + "#SBATCH --ntasks-per-node=4\nexport WORLD_SIZE=8\nset -a\nN=1\nset +a\n"
    "srun python t.py --world_size 8 --world-size=16 -o out --out=/x --local_rank=0 "
    "--device 1 --distributed-world-size=4 -world_size 2 --output_dir\n"
    "export -n WORLD_SIZE\nunset N\nsrun python t.py '--world_size=3' \"--gpu\" 2\n",
    HEAD + 'ARGS="--tensor-model-parallel-size 2"\nT=model.tp=2\nsrun python pretrain_gpt.py $ARGS\n'
    "srun python x.py $T\nsrun python y.py trainer.devices=8\nsrun python z.py \"$ARGS\"\n"
    "conda create -p /tmp/env -y python\ncp -r -- -x /tmp/a\nrsync -a src/ /dev/shm/d --delete\n"
    "srun -n 4 bash -c 'cp a /tmp/b'\nsrun --ntasks=2 mpirun -np 2 python m.py\n",
    HEAD + "echo '$SLURM_PROCID' \\$SLURM_NODEID $SLURM_JOB_ID $SLURM_JOBID_X $SLURMD_NODENAME\n"
    "srun bash -c 'echo $SLURM_LOCALID'\n",
    HEAD + "echo $SLURMD_NODENAME $SLURMD_NOT_A_NAME\nsrun python x.py\n",
    HEAD + "#SBATCH --cpus-per-task=4\nSRUN_CPUS_PER_TASK=2 srun python a.py\nsrun python b.py\n"
    "X=1 srun python c.py\nexport SRUN_CPUS_PER_TASK=3\nsrun python d.py\n",
]


def _scripts():
    return sample_scripts() + [pytest.param(t, id=f"tricky-{k}") for k, t in enumerate(TRICKY)]


def _reference_containers(job):
    found = (container_of(job, s) for s in sorted(job.steps, key=lambda s: s.srun.start))
    return [c for c in found if c is not None]


def _reference_expand(words, script):
    out = []
    for w in words:
        elements = array_elements(w, script) if w.value is None and "[@]" in w.text else None
        out.extend([w] if elements is None else elements)
    return out


def _reference_operands(words, start, takes):
    if not any(literal_start(w).startswith("-") for w in words[start:]):
        return {}, words[start:]

    def lookup(name, long):
        return name, ("--" if long else "-") + name in takes

    values, operands, i = {}, [], start
    while i < len(words):
        o = walk(words, i, lookup, "getopt")
        values.update(o.values)
        if o.end > i and literal_start(words[o.end - 1]) == "--" and \
                words[o.end - 1] not in o.values.values():
            operands.extend(words[o.end:])
            break
        if o.end >= len(words):
            break
        operands.append(words[o.end])
        i = o.end + 1
    return values, operands


def _reference_may_run(argv, telling):
    return any(framework._telling(w.value) if w.value is not None else
               (framework._telling(w.text) or framework._reference(w.text) in telling)
               for w in argv)


def _reference_exported(exports, name, before):
    ats, states, ever = exports._timeline(name)
    if before is None:
        return ever
    k = bisect_left(ats, before)
    return states[k - 1] if k else False


def _reference_agents(job):
    steps = [f.step for f in facts_of(job).steps]
    tasks = []
    for st in steps:
        for argv, cmd in [(st.argv, st.command), *((c.words, c) for c in st.task_commands)]:
            what = reach._agent_of(argv)
            if what is not None:
                tasks.append((id(cmd), what))
    return tasks


def _reference_shell_commands(job, keep=None):
    in_step = {id(s.command) for s in job.steps}
    out = [cmd for cmd in job.script.walk()
           if (keep is None or keep(cmd)) and (cmd.words or cmd.assignments) and
           not cmd.in_substitution and cmd.calls is None and id(cmd) not in in_step and
           not any(id(a) in in_step for a in cmd.ancestors())]
    return sorted(out, key=lambda c: c.start)


@pytest.mark.parametrize("text", _scripts())
def test_the_shortcuts_give_the_plain_answers(text):
    job = job_of(text, "job.sbatch")
    assert _containers(job) == _reference_containers(job)
    for cmd in job.script.walk():
        script = cmd.script or job.script
        got = expand_arrays(cmd.words, script)
        assert got == _reference_expand(cmd.words, script) and got is not cmd.words
    assert [(id(a.command), a.what) for a in reach._agents(job)[1]] == _reference_agents(job)
    for step in job.steps:
        assert step.container == any(k in step.options for k in ("container-image",
                                                                  "container-name"))
        gres = step.options.get("gres")
        assert step_requests_gpus(step) == (
            any(k in step.options for k in ("gpus", "gpus-per-node", "gpus-per-task")) or
            gres is not None and "gpu" in (gres.value if gres.value is not None else gres.text))
        for c in step.task_commands:  # (the installer test before its set test)
            if not any(w.value in INSTALLER_WORDS for w in c.words):
                assert installer(c) is None
    assert job.ordered_steps() == sorted(job.steps, key=lambda s: s.srun.start)
    telling = {a.name for a in job.script.assignments if a.value is not None}
    for cmd in job.script.walk():
        assert framework._may_run(cmd.words, telling) == _reference_may_run(cmd.words, telling)
        assert framework._may_run(cmd.words, set()) == _reference_may_run(cmd.words, set())
        for start in range(len(cmd.words) + 1):
            takes = frozenset({"-p", "--prefix", "-t"})
            assert nodelocal._operands(cmd.words, start, takes) == \
                _reference_operands(cmd.words, start, takes)
    assert resources._steps_request_gpus(job.steps) == any(step_requests_gpus(s)
                                                             for s in job.steps)
    reads = variable_reads(job)
    per_task, known = per_task_variables(), known_names()
    assert expansion._late_slurm_reads(job, per_task) == any(
        e.kind == "var" and e.quoting in ("single", "escaped")
        for name in reads.names if name in per_task or name.startswith("SLURM_")
        for _, e in reads.of(name))
    for names in (known, frozenset()):
        assert tasks._unknown_slurm_reads(job, names) == any(
            name.startswith(("SLURM_", "SLURMD_")) and base_name(name) not in names
            for name in reads.names)
    exports = job.exports
    names = set(exports.events) | {a.name for a in job.script.assignments} | {"NEVER_SET"}
    for name in sorted(names):
        for at in [None, 0, len(text)] + [c.start for c in job.script.commands]:
            assert exports.exported(name, at) == _reference_exported(exports, name, at)
    for keep in (None, nodelocal._may_prepare):
        assert nodelocal._shell_commands(job, keep) == _reference_shell_commands(job, keep)
    facts = facts_of(job)
    comps = components(job.directives)
    for sf in facts.steps:  # a step's CPUs per task: a prefix or an exported SRUN_… hides them
        step = sf.step
        if "cpus-per-task" not in step.options and (
                job.exported("SRUN_CPUS_PER_TASK", step.command.start) or
                any(a.name == "SRUN_CPUS_PER_TASK" for a in step.command.assignments)):
            assert sf.cpus_per_task is None
        else:
            group = steps_facts._het_group(step)
            comp = comps[group] if group is not None and group < len(comps) else None
            # (True: ask where the variable is exported, as if the script exported it)
            assert sf.cpus_per_task == steps_facts._step_cpus(job, step, comp, True)
    for sf in facts.steps:  # the step's launch: the first not a python one, else "srun"
        sites = [s for s in job.launches if s.step is sf.step]
        site = next((s for s in sites if s.launch.kind != "python"), None)
        launcher = LAUNCHER_NAMES.get(site.launch.flavour) if site is not None else None
        if site is None and any(s.launch.kind == "python" for s in sites):
            launcher = "srun"
        assert (sf.launcher, sf.launch) == (launcher, site.launch if site else None)
    for sf in facts.steps:  # each step's layout as a memo of its own gives it
        sites = [s for s in job.launches if s.step is sf.step]
        alone = steps_facts._step(job, comps, facts.evaluator, sf.step, sites, {}, True)
        assert alone.layout == sf.layout
    for step in job.steps:
        whole = dict(LazyEnv(job, facts.evaluator, step))
        env = LazyEnv(job, facts.evaluator, step)
        for name in sorted(whole) + ["NOT_SET_ANYWHERE"]:
            assert env.get(name, "absent") == whole.get(name, "absent"), name
            assert (name in env) == (name in whole)
        assert 3 not in env  # (a key that is no name: absent, as in a dict)


def test_random_array_words_expand_as_before():
    """Random commands mixing literal words, array references of assigned and unassigned arrays
    (and a literal ``[@]``) expand exactly as the plain loop expands them."""
    rng = random.Random(7)
    pieces = ["python", "x.py", '"${A[@]}"', "${B[@]}", '"${NONE[@]}"', "'[@]'", "$X", "-n",
              "2", '"$@"']
    for _ in range(300):
        line = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 7)))
        text = HEAD + 'A=(--ntasks=2 "-N 1")\nB=("${A[@]}" z)\nX=3\n' + line + "\n"
        job = job_of(text, "job.sbatch")
        for cmd in job.script.walk():
            assert expand_arrays(cmd.words, job.script) == \
                _reference_expand(cmd.words, job.script), line


def test_an_installer_behind_a_wrapper_is_still_found():
    job = job_of(next(t for t in TRICKY if "pip install" in t), "job.sbatch")
    found = [installer(c) for s in job.steps for c in s.task_commands]
    assert [f[0] for f in found if f is not None] == ["pip install", "uv run"]



def test_the_layout_key_tells_every_field_of_a_request_apart():
    """Two requests that differ in any one field (a nested Request's too) get different keys,
    equal requests equal ones: the key holds every field step_layout reads."""
    base = StepRequest(Request(True, 2), Request(True, 8), Request(False, None), "block", False,
                       0, 1, False)
    others = {"nodes": Request(True, 3), "ntasks": Request(False, 8),
              "ntasks_per_node": Request(True, None), "distribution": "cyclic",
              "node_count_tasks": True, "het_group": 1, "cpus_per_task": None,
              "overcommit": True}
    assert set(others) == {f.name for f in dataclasses.fields(StepRequest)}
    key = steps_facts._layout_key
    assert key(base) == key(dataclasses.replace(base))
    for name, value in others.items():
        assert key(dataclasses.replace(base, **{name: value})) != key(base), name
    for name in ("nodes", "ntasks", "ntasks_per_node"):  # each part of a nested Request
        r = getattr(base, name)
        for changed in (Request(not r.given, r.value), Request(r.given, 99)):
            assert key(dataclasses.replace(base, **{name: changed})) != key(base), name


def _texts_to_mask():
    """Texts the masker is asked about: token formats alone, in messages and across lines,
    near misses, and random mixes of them."""
    gh, aws = "ghp_" + "a1B2" * 9, "AKIA" + "ABCDEFGHIJ234567"
    hf = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz" + "abcdefgh"
    parts = [gh, aws, hf, "hf_home", "AKIA", "ghp_", "export TOKEN=", " ", "\n", "ß", "x://y",
             "hooks.slack.com/services/T0/B0/xyz", "12345678:", "wandb", "`srun`", "$HF_TOKEN"]
    rng = random.Random(11)
    texts = ["", "plain message", *parts, f"pass {gh} on the line", f"a\n{aws}\nb"]
    texts += ["".join(rng.choice(parts) for _ in range(rng.randint(1, 6))) for _ in range(300)]
    return texts


def test_the_masker_memo_answers_as_find_secrets():
    """secrets.carries_format (memoised by the text) answers what find_secrets does, asked
    twice (the second answer from the memo), and the masker's carries with it."""
    from sbatch_lsp.secrets import Masker, carries_format, find_secrets

    masker = Masker(("s3cr3t-value",))
    for text in _texts_to_mask() * 2:
        assert carries_format(text) == bool(find_secrets(text)), text
        assert masker.carries(text) == ("s3cr3t-value" in text or bool(find_secrets(text)))


def test_a_prefix_assignment_still_keeps_a_runtime_setting_in():
    """SB302's runtime settings: a step whose srun line sets the variable itself gets it (the
    set of its prefix names, built only when it has some), one without does not."""
    from sbatch_lsp.lint import lint

    def sb302(body: str) -> list[int]:
        text = HEAD + "#SBATCH --export=NONE\nexport OMP_NUM_THREADS=4\n" + body
        return [d.start for d in lint(text, "job.sbatch").diagnostics if d.code == "SB302"]

    assert sb302("OMP_NUM_THREADS=4 srun python a.py\n") == []
    assert sb302("X=1 srun python a.py\n") != []
    assert sb302("srun python a.py\n") != []
