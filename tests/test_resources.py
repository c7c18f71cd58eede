"""facts/resources.py: GPU work and `--exclusive` as Slurm does it, and SB203 reading them.

sbatch(1) --exclusive: the job holds all GRES of its nodes (the batch shell sees them); srun(1)
--gres: a step gets the job's GRES "except those implicitly requested when a job is exclusive";
cgroup.conf(5) ConstrainDevices decides whether a GPU-less step can still open the devices."""
from __future__ import annotations

from sbatch_lsp.config import Config, Profile
from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.facts.resources import Strength, gpu_resources
from sbatch_lsp.lint import job_of, lint

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
LAUNCH = ('srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d '
          '--rdzv-endpoint="$MASTER_ADDR:29500" train.py\n')


def sb203(text: str, constrain: bool = True) -> list:
    cfg = Config(profile=Profile(constrain_devices=constrain))
    return [d for d in lint(text, "j.sbatch", cfg).diagnostics if d.code == "SB203"]


def test_gpu_work_is_attributed_to_the_step_or_the_batch_shell():
    text = HEAD + "nvidia-smi\nsrun bash -c 'python -c \"import torch; torch.cuda.init()\"'\n" + LAUNCH
    job = job_of(text, "j.sbatch")  # (res.uses is read through the job)
    res = gpu_resources(job)
    where = [(text[u.start:u.end], u.strength, u.step is not None) for u in res.uses]
    assert ("torchrun", Strength.LAUNCHER, True) in where
    assert ("nvidia-smi", Strength.PROBE, False) in where
    assert any(w.startswith('"import torch') and s is Strength.TOOL and in_step
               for w, s, in_step in where)
    assert [u.strength for u in res.uses] == sorted((u.strength for u in res.uses), reverse=True)


def test_exclusive_step_without_gpus_is_a_warning_where_devices_are_confined():
    """The step gets no GPU; whether it can open them anyway is the site's (GRES configured,
    ConstrainDevices), which the script does not say: a warning, not an error."""
    text = HEAD + "#SBATCH --exclusive\n" + LAUNCH
    [d] = sb203(text)
    assert d.severity is Severity.WARNING and text[d.start:d.end] == "torchrun"
    assert "--exclusive" in d.message and "CUDA_VISIBLE_DEVICES" in d.message
    assert any(r.message == "--exclusive" for r in d.related)
    [d] = sb203(text, constrain=False)
    assert d.severity is Severity.INFO and "not confined" in d.message


def test_exclusive_step_without_gpus_is_an_info_when_the_site_is_not_known():
    """The corpus review's false class (NVIDIA, AWS samples on sites without device
    confinement): what the step can open rests on cgroup.conf and gres.conf, not the script."""
    text = HEAD + "#SBATCH --exclusive\n" + LAUNCH
    [d] = [d for d in lint(text, "j.sbatch").diagnostics if d.code == "SB203"]
    assert d.severity is Severity.INFO and "constrain-devices" in d.message


def test_gpu_count_from_the_submitting_environment_is_an_info():
    """A GPU count the script never sets comes with the submission (a launcher that runs
    `sbatch --gres=gpu:N … FILE` with NUM_GPUS_PER_NODE=N exported)."""
    text = HEAD + "WORLD=$((NUM_GPUS_PER_NODE * SLURM_NNODES))\n" + LAUNCH
    [d] = sb203(text)
    assert d.severity is Severity.INFO and "$NUM_GPUS_PER_NODE" in d.message
    # set in the script: the count is the script's own, the error stays
    assert [d.severity for d in sb203(HEAD + "NUM_GPUS_PER_NODE=8\n" + text[len(HEAD):])] == \
        [Severity.ERROR]
    # Slurm's own variables are not the submitter's
    assert [d.severity for d in sb203(HEAD + "echo $SLURM_GPUS_ON_NODE\n" + LAUNCH)] == \
        [Severity.ERROR]


def test_exclusive_batch_shell_work_or_no_srun_step_gets_no_finding():
    one = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --exclusive\n"
    assert sb203(one + "torchrun --standalone --nproc-per-node=8 train.py\n") == []
    assert sb203(one + "nvidia-smi\npython train.py --device cuda\n") == []
    # an srun step that asks for its own GPUs is fine too
    assert sb203(HEAD + "#SBATCH --exclusive\n" + LAUNCH.replace("srun ", "srun --gpus-per-node=8 ")) == []


def test_exclusive_cpu_only_job_gets_no_finding():
    text = ("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --exclusive\n#SBATCH --cpus-per-task=64\n"
            "srun python preprocess_data.py --workers 64\n")
    assert sb203(text) == []


def test_without_exclusive_the_strength_sets_the_severity():
    assert [d.severity for d in sb203(HEAD + LAUNCH)] == [Severity.ERROR]
    assert [d.severity for d in sb203(HEAD + "srun python train.py --device=cuda:0\n")] == \
        [Severity.WARNING]
    assert [d.severity for d in sb203(HEAD + "module load cuda/12.4\nsrun ./a.out\n")] == \
        [Severity.INFO]
    assert [d.severity for d in sb203(HEAD + "module load TF/2.1-cuda-11.2\nsrun ./a.out\n")] \
        == [Severity.INFO]
    assert sb203(HEAD + "module load cudnn-cpu gcc\nsrun ./a.out\n") == []
    assert sb203(HEAD + "module load openmpi/4.0.1/cuda_aware_gcc\nsrun ./a.out\n") == []
    # a container wrapper with GPU access is evidence even though it wraps another command; like
    # nvidia-smi it is a probe that runs without GPUs (--nv warns and goes on): an info
    assert [d.severity for d in sb203(HEAD + "singularity exec --nv img.sif bash -c 'python t.py'\n")] \
        == [Severity.INFO]
    assert [d.severity for d in sb203(HEAD + "nvidia-smi\nsrun python t.py\n")] == [Severity.INFO]
    assert sb203(HEAD + "#SBATCH --gres=gpu:8\n" + LAUNCH) == []


def test_constrain_devices_profile_key(tmp_path):
    from sbatch_lsp.config import ConfigError, load_file

    (tmp_path / ".sbatch-lint.toml").write_text("[profile]\nconstrain-devices = false\n")
    assert load_file(tmp_path / ".sbatch-lint.toml").profile.constrain_devices is False
    assert Profile().constrain_devices is None  # not known unless the profile says
    (tmp_path / ".sbatch-lint.toml").write_text('[profile]\nconstrain-devices = "no"\n')
    try:
        load_file(tmp_path / ".sbatch-lint.toml")
        raise AssertionError("a string constrain-devices loaded")
    except ConfigError as exc:
        assert "constrain-devices" in str(exc)


def test_a_step_gres_that_is_not_literal_still_requests_gpus():
    """`srun --gres=gpu:volta:$NUM_GPU`: the value is not a literal, its text names gpu."""
    text = ("#!/bin/bash\n#SBATCH --time=1:00:00\nNUM_GPU=2\n"
            "srun --gres=gpu:volta:$NUM_GPU bash -c 'nvidia-smi; python -c \"import torch; "
            "torch.cuda.init()\"'\n")
    assert sb203(text) == []
    assert sb203(text.replace("--gres=gpu:volta:$NUM_GPU", "--gres=tmpfs:$N")) != []


def _sb204(text: str) -> list:
    return [(d.severity, d.message) for d in lint(text, "j.sbatch").diagnostics
            if d.code == "SB204"]


def test_gpus_total_over_nodes():
    """--gpus=N over several nodes: the scheduler chooses the split."""
    base = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus={}\npython -u run.py\n"
    [(sev, msg)] = _sb204(base.format(4))
    assert sev is Severity.INFO and "may split" in msg
    [(sev, msg)] = _sb204(base.format(5))
    assert sev is Severity.WARNING and "cannot split 5 GPUs evenly over 2 nodes" in msg
    # a per-node launcher relies on the split
    launch = base.format(16).replace("python -u run.py", 'srun --ntasks-per-node=1 bash -c '
                                     '"torchrun --nnodes=2 --nproc-per-node=8 t.py"')
    assert [s for s, _ in _sb204(launch)] == [Severity.WARNING]


def test_word_tool_answers_as_tool_on_every_command():
    """resources._word_tool skips building the word values for a command no tool name and no
    ``cuda``/``--device`` word makes a GPU use: it answers as ``_tool`` on the values, for
    tricky, 20,000 seeded random and every sample (and CORPUS_DIR) command."""
    import random

    from rule_pages import sample_scripts
    from sbatch_lsp.facts.resources import NAMED_TOOLS, _tool, _word_tool
    from sbatch_lsp.facts.wrappers import base
    from sbatch_lsp.shell.model import Word
    from sbatch_lsp.shell.parse import parse_script
    from shell_models import real_corpus

    def words_of(texts, literal):
        return [Word(t, 0, len(t), t if ok else None) for t, ok in zip(texts, literal, strict=True)]

    parts = [*sorted(NAMED_TOOLS), "/usr/bin/nvidia-smi", "run", "exec", "--nv", "--gpus=all",
             "--device", "--device=cuda:0", "cuda", "CUDA", "cu", "da", "--dev", "ice", "load",
             "add", "cuda/12.1", "python", "-c", "torch.cuda.is_available()", "x", "", "\0",
             "=", "$DEV", "nvidia", ".to('cuda')"]
    commands = []
    rng = random.Random(3)
    for _ in range(20000):
        n = rng.randrange(1, 6)
        texts = ["".join(rng.choice(parts) for _ in range(rng.randrange(1, 3))) for _ in range(n)]
        commands.append(words_of(texts, [rng.random() < 0.8 for _ in range(n)]))
    texts = [param.values[0] for param in sample_scripts()] + [t for _, t in real_corpus()]
    for text in texts:
        commands += [cmd.words for cmd in parse_script(text).walk() if cmd.words]
    found = 0
    for words in commands:
        values = [w.value if w.value is not None else w.text for w in words]
        expected = _tool(base(words[0]), words, values)
        assert _word_tool(words) == expected, values
        found += expected is not None
    assert found > 100
