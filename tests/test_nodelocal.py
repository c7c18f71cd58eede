"""SB401 on what the batch shell prepares on node-local storage (facts/nodelocal.py): the
shapes of preparation, use and coverage the page's examples do not show."""
import pytest

from sbatch_lsp.lint import lint

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
VENV = "virtualenv --no-download $SLURM_TMPDIR/env\nsource $SLURM_TMPDIR/env/bin/activate\n"


def sb401(body: str, head: str = HEAD) -> list[tuple[int, str]]:
    """(line, severity) of each SB401 finding of the script HEAD + body."""
    result = lint(head + body, "job.sbatch")
    assert not [d for d in result.diagnostics if d.code == "SB003"]
    return [(result.source.line_of(d.start) + 1, d.severity.label)
            for d in result.diagnostics if d.code == "SB401"]


@pytest.mark.parametrize("body,expected", [
    # environments: virtualenv, venv, uv venv, conda, activated or named by the step
    (VENV + "srun python train.py\n", [(6, "error")]),
    (("python3 -m venv /tmp/$USER/venv\nsource /tmp/$USER/venv/bin/activate\n"
     "srun torchrun --nnodes=2 --nproc-per-node=1 --rdzv-backend=c10d "
     "--rdzv-endpoint=$(hostname):29500 t.py\n"), [(6, "error")]),
    ("uv venv -p 3.11 /dev/shm/venv\nexport PATH=/dev/shm/venv/bin:$PATH\nsrun python t.py\n",
     [(6, "error")]),
    (("micromamba create -y -p $TMPDIR/env python=3.11\nmicromamba activate $TMPDIR/env\n"
     "srun python t.py\n"), [(6, "error")]),
    (("export UV_PROJECT_ENVIRONMENT=/tmp/venv\nuv sync --frozen\n"
     "srun bash -c '$UV_PROJECT_ENVIRONMENT/bin/python t.py'\n"), [(6, "error")]),
    ("ENV=${SLURM_TMPDIR}/env\nvirtualenv $ENV\nsrun $ENV/bin/python t.py\n", [(6, "error")]),
    # data: cp -t, rsync into a root by name, tar in the old form, unzip -d
    (("cp -r -t $SLURM_TMPDIR/data /project/a /project/b\n"
     "srun python t.py --data=$SLURM_TMPDIR/data/a\n"), [(5, "error")]),
    ("rsync -a /project/ds $SLURM_TMPDIR\nsrun python t.py --data $SLURM_TMPDIR/ds\n",
     [(5, "error")]),
    ("tar xzf /project/ds.tgz -C /tmp/ds\nsrun python t.py --data /tmp/ds/train\n",
     [(5, "error")]),
    ("unzip -q /project/ds.zip -d $SLURM_TMPDIR/ds\nsrun python t.py --data $SLURM_TMPDIR/ds\n",
     [(5, "error")]),
    # an empty directory: the program may make it itself
    ("mkdir -p /tmp/$USER/ckpt\nsrun python t.py --save /tmp/$USER/ckpt\n", [(5, "warning")]),
    # an earlier step on every node runs a script not read here: it may prepare it
    (VENV + "srun bash setup_env.sh\nsrun python train.py\n", [(7, "info")]),
    # through a wrapper, by a path, by a versioned interpreter
    ("timeout 600 cp -r /project/ds $SLURM_TMPDIR/ds\nsrun python t.py --data $SLURM_TMPDIR/ds\n",
     [(5, "error")]),
    ("/usr/bin/mkdir -p /tmp/ckpt\nsrun python t.py --save /tmp/ckpt\n", [(5, "warning")]),
    ("python3.11 -m venv /dev/shm/env\nsrun /dev/shm/env/bin/python t.py\n", [(5, "error")]),
])
def test_reported(body, expected):
    assert sb401(body) == expected


@pytest.mark.parametrize("body", [
    # the step prepares it itself, or an earlier step on every node does
    "srun rsync -a ../p $SLURM_TMPDIR\nsrun python train.py --data $SLURM_TMPDIR/p\n",
    "srun bash -c 'virtualenv $SLURM_TMPDIR/env && $SLURM_TMPDIR/env/bin/python t.py'\n",
    VENV + "srun --ntasks=$SLURM_NNODES --ntasks-per-node=1 virtualenv $SLURM_TMPDIR/env\n"
    "srun python train.py\n",
    # a step on one node
    VENV + "srun -N1 -n1 python train.py\n",
    # deactivated before the step, or the step keeps the batch environment out
    VENV + "deactivate\nsrun python train.py\n",
    VENV + "srun --export=NONE python train.py\n",
    # a program that no Python environment provides, and a path the step does not name
    VENV + "srun hostname\n",
    "cp -r /project/ds $SLURM_TMPDIR/\nsrun python t.py --data /project/ds\n",
    # the root itself exists on every node; a shared path is seen by every node
    "mkdir -p $SLURM_TMPDIR\nsrun python t.py --tmp $SLURM_TMPDIR\n",
    "virtualenv /lustre/me/env\nsource /lustre/me/env/bin/activate\nsrun python t.py\n",
    # prepared after the step
    "srun python t.py --data $SLURM_TMPDIR/ds\ncp -r /project/ds $SLURM_TMPDIR/\n",
    # a named conda environment lives in conda's own folder
    "conda create -y -n ft python=3.11\nconda activate ft\nsrun python t.py\n",
])
def test_not_reported(body):
    assert sb401(body) == []


def test_one_node_job_and_unknown_node_count():
    one = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks=4\n"
    assert sb401(VENV + "srun python train.py\n", one) == []
    # no node count and one task: one node
    assert sb401(VENV + "srun python train.py\n", "#!/bin/bash\n") == []
    # no node count, several tasks: Slurm may spread them (info)
    assert sb401(VENV + "srun python train.py\n", "#!/bin/bash\n#SBATCH --ntasks=8\n") == \
        [(5, "info")]


def test_spliced_value_is_reported_on_the_step():
    """A batch-shell value spliced into a double-quoted ``bash -c`` string: the finding sits on
    the step's string, not on the assignment the value came from."""
    body = "ENV=$SLURM_TMPDIR/env\nvirtualenv $ENV\nsrun bash -c \"$ENV/bin/python t.py\"\n"
    assert sb401(body) == [(6, "error")]


def test_messages_name_the_symptom_and_the_way_out():
    result = lint(HEAD + VENV + "srun bash -c 'accelerate launch t.py'\n", "job.sbatch")
    d = next(d for d in result.diagnostics if d.code == "SB401")
    assert "execve(): accelerate: No such file or directory" in d.message
    assert "--ntasks-per-node=1" in d.message and "shared storage" in d.message
    lines = sorted(result.source.line_of(r.start) + 1 for r in d.related)
    assert lines == [4, 5, 6]  # the virtualenv, the activation, the srun


def test_srun_options_each_node_opens():
    """A squashfs image copied to node 0's /tmp is missing for pyxis on node 1; srun opens its
    own --output file on its own node."""
    body = ("cp /project/img.sqsh /tmp/img.sqsh\n"
            "srun --container-image=/tmp/img.sqsh python t.py\n")
    assert sb401(body) == [(5, "error")]
    body = "mkdir -p /tmp/$USER/logs\nsrun --output=/tmp/$USER/logs/run.log python t.py\n"
    assert sb401(body) == []


def test_a_command_no_preparation_can_come_from_is_not_read():
    """_uses reads only the commands _may_prepare() keeps: those a wrapper may hide a tool in,
    and the tools themselves (by basename; any ``python…``), less, as the server lints, those
    whose texts say they prepare nothing."""
    from sbatch_lsp.facts.nodelocal import _may_prepare
    from sbatch_lsp.lint import job_of
    from sbatch_lsp.shell.parse import use_fragments

    job = job_of(HEAD + "echo x\nexport A=/tmp/x\nB=1\ncp a /tmp/b\ntimeout 5 echo x\n"
                 "/bin/mkdir /tmp/c\npython3.12 -m venv /tmp/e\ncp a /lustre/b\n"
                 "timeout 5 cp a /tmp/f\n", "job.sbatch")
    # a one-off lint reads every tool and wrapper once
    assert [c.words[0].text for c in job.script.commands if _may_prepare(c)] == \
        ["cp", "timeout", "/bin/mkdir", "python3.12", "cp", "timeout"]
    # as the language server lints (fragment memo on): `timeout 5 echo x` and `cp a /lustre/b`
    # prepare nothing whatever the job, their texts say
    before = use_fragments(True)
    try:
        kept = [c.words[0].text for c in job.script.commands if _may_prepare(c)]
    finally:
        use_fragments(before)
    assert kept == ["cp", "/bin/mkdir", "python3.12", "timeout"]


def test_a_path_without_expansions_is_read_once_per_text():
    """path_of() of a word with no `$` depends on its text alone: read once, then kept."""
    from sbatch_lsp.facts.nodelocal import _literal_path, path_of
    from sbatch_lsp.lint import job_of

    job = job_of(HEAD + "D=/lustre/x\ncp a '/tmp//data/'\ncp b '/tmp//data/' \"$D\"\n",
                 "job.sbatch")
    first, second = [c for c in job.script.commands if c.words and c.words[0].text == "cp"]
    _literal_path.cache_clear()
    assert path_of(job, first.words[2], job.script, first.start) == "/tmp/data"
    assert path_of(job, second.words[2], job.script, second.start) == "/tmp/data"
    assert path_of(job, second.words[3], job.script, second.start) == "/lustre/x"
    assert (_literal_path.cache_info().misses, _literal_path.cache_info().hits) == (1, 1)


#: generated commands for the memo's equivalence test: tools, wrappers, options and paths of
#: every kind :func:`nodelocal._targets` reads (literal, node-local or not, with a `$`, quoted,
#: inline option values, bundled tar flags)
_GEN_HEADS = ["cp", "mv", "rsync -a", "tar", "tar xzf a.tgz", "unzip a.zip", "mkdir -p",
              "virtualenv", "python3 -m venv", "uv venv", "uv sync", "conda create -y",
              "micromamba env create", "timeout 5 cp", "env A=1 mkdir", "/bin/cp", "echo"]
_GEN_ARGS = ["-r", "-t", "-C", "-d", "-p", "--prefix", "-n", "/tmp/x", "/lustre/y", "x",
             "$SLURM_TMPDIR/z", "$D", "${D}/u", "'/dev/shm/w'", '"/tmp/q"', "-xf", "a.tgz",
             "--target-directory=/tmp/q", "-t/tmp/r", "--", "`echo /tmp`", "$TMPDIR", "/tmp"]


def _generated_scripts(count: int) -> list[str]:
    """Seeded random scripts of :data:`_GEN_HEADS` commands, some in a double-quoted
    ``bash -c`` string (its words then hold the batch shell's values: ``Word.early``)."""
    import random

    rng = random.Random(11)
    out = []
    for _ in range(count):
        lines = ["D=$SLURM_TMPDIR/d", "export UV_PROJECT_ENVIRONMENT=/tmp/v"]
        for _ in range(4):
            cmd = " ".join([rng.choice(_GEN_HEADS)] +
                           [rng.choice(_GEN_ARGS) for _ in range(rng.randint(0, 4))])
            lines.append(f'bash -c "{cmd}"' if rng.random() < 0.2 else cmd)
        lines.append("srun python t.py --data $SLURM_TMPDIR/z/x --out /tmp/q/r")
        out.append(HEAD + "\n".join(lines) + "\n")
    return out


def _memo_equals_reading(text: str) -> int:
    """Check :func:`nodelocal._prepares_nothing` against :func:`nodelocal.preparations` on
    every command of ``text``'s job (its verdict says nothing is prepared only where the
    reading finds nothing), and :func:`nodelocal._uses` with and without it; the number of
    commands the memo left out."""
    from sbatch_lsp.lint import job_of
    from sbatch_lsp.shell.parse import use_fragments

    job = job_of(text, "job.sbatch")
    before = use_fragments(True)  # (the memo is asked only as the language server lints)
    try:
        return _skipped_and_checked(job, text)
    finally:
        use_fragments(before)


def _skipped_and_checked(job, text: str) -> int:
    """:func:`_memo_equals_reading`'s checks on ``job`` (of ``text``), the fragment memo on."""
    from unittest import mock

    from sbatch_lsp.facts import nodelocal

    skipped = 0
    for cmd in job.script.walk():
        words = cmd.words
        if words and not nodelocal._may_prepare(cmd) and nodelocal._tool(words[0]):
            skipped += 1
        if not nodelocal._may_prepare(cmd) and words:
            assert nodelocal.preparations(job, cmd) == [], (text, cmd.start)
    with mock.patch.object(nodelocal, "_prepares_nothing", lambda *_: False):
        unmemoised = repr(nodelocal._uses(job))
    assert repr(nodelocal._uses(job)) == unmemoised, text
    return skipped


def test_prepares_nothing_memo_equals_the_reading():
    """The memo of commands that prepare nothing (keyed by their words' texts and values,
    never for words that hold a batch-shell value) against the unmemoised reading, on
    generated commands, every script the project holds and the real corpus (CORPUS_DIR)."""
    import sbatch_corpus
    from rule_pages import sample_scripts
    from shell_models import real_corpus

    from sbatch_lsp.facts.nodelocal import _prepares_nothing

    _prepares_nothing.cache_clear()
    texts = _generated_scripts(400)
    texts += [p.values[0] for p in sample_scripts()]
    texts += [data.decode("utf-8", "replace") for _name, data in sbatch_corpus.cases()]
    texts += [text for _name, text in real_corpus()]
    assert sum(_memo_equals_reading(t) for t in texts) > 100
    # a batch-shell value in a word: `_SLURM_TMPDIR_/env` is no literal path
    spliced = 'D=$SLURM_TMPDIR/env\nbash -c "virtualenv $D"\nsrun $D/bin/python t.py\n'
    _memo_equals_reading(HEAD + spliced)
    assert sb401(spliced) == [(6, "error")]
