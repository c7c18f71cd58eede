"""facts/caches.py and SB401 over it: where a data cache lives for each step's tasks."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbatch_lsp.config import Config, Profile
from sbatch_lsp.facts.caches import HF_CACHE, HomeView, Storage, cache_uses
from sbatch_lsp.lint import job_of, lint

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
RUN = "srun python t.py --model_name_or_path meta-llama/Llama-3.1-8B\n"


def sb401(text: str, config: Config | None = None) -> list[str]:
    return [d.severity.label for d in lint(text, "x.sbatch", config).diagnostics
            if d.code == "SB401"]


def hf_use(text: str):
    (use,) = [u for u in cache_uses(job_of(text, "x.sbatch")) if u.kind is HF_CACHE]
    return use


@pytest.mark.parametrize("setup", [
    "export HF_HOME=/tmp/hf\n",
    "HF_HOME=/tmp/hf\nexport HF_HOME\n",            # bash: the attribute is the variable's
    "export HF_HOME\nHF_HOME=/tmp/hf\n",
    "set -a\nHF_HOME=/tmp/hf\nset +a\n",
])
def test_a_node_local_value_is_an_error_in_every_export_form(setup):
    text = HEAD + setup + RUN
    assert hf_use(text).storage is Storage.NODE_LOCAL
    assert sb401(text) == ["error"]


def test_the_finding_points_at_the_assignment_that_holds_the_value():
    text = HEAD + "HF_HOME=/tmp/hf\nexport HF_HOME\n" + RUN
    (d,) = [d for d in lint(text, "x.sbatch").diagnostics if d.code == "SB401"]
    assert text[d.start:d.end] == "HF_HOME=/tmp/hf"


def test_a_value_from_the_submitting_environment_is_not_judged():
    text = HEAD + '[ -n "${HF_HOME:-}" ] && export HF_HOME\n' + \
        "srun --container-image=/x.sqsh --no-container-mount-home " + RUN[5:]
    use = hf_use(text)
    assert use.setting is not None and use.setting.path is None
    assert sb401(text) == []


def test_unset_without_a_container_is_a_warning_when_nothing_says_home_is_shared():
    assert hf_use(HEAD + RUN).storage is Storage.HOME
    assert sb401(HEAD + RUN) == ["warning"]


@pytest.mark.parametrize("evidence", [
    "cd /home/alice/proj\n",
    "cd ~/proj\n",
    "source ~/venv/bin/activate\n",
    ". $HOME/env.sh\n",
])
def test_unset_is_silent_when_the_tasks_run_from_home(evidence):
    assert sb401(HEAD + evidence + RUN) == []


def test_a_home_path_in_the_task_command_shows_home_is_shared():
    text = HEAD + "srun python /home/alice/t.py --model_name_or_path org/m\n"
    assert sb401(text) == []


def test_a_home_path_after_the_step_is_no_evidence():
    assert sb401(HEAD + RUN + "cd /home/alice/proj\n") == ["warning"]


def test_the_profile_can_say_home_is_shared():
    shared = Config(profile=Profile(shared_prefixes=("/lustre", "/home")))
    other = Config(profile=Profile(shared_prefixes=("/lustre",)))
    assert sb401(HEAD + RUN, shared) == []
    assert sb401(HEAD + RUN, other) == ["warning"]


@pytest.mark.parametrize("flags,view,expected", [
    ("--no-container-mount-home", HomeView.HIDDEN, ["error"]),
    ("--container-mount-home", HomeView.HOST, ["warning"]),
    ("", HomeView.SITE, ["info"]),                   # enroot's ENROOT_MOUNT_HOME decides
])
def test_unset_in_a_container_follows_the_home_mount(flags, view, expected):
    text = HEAD + f"srun --container-image=/x.sqsh {flags} " + RUN[5:]
    assert hf_use(text).home is view
    assert sb401(text) == expected


def test_hidden_srun_options_leave_the_home_view_unknown():
    """srun options from the submitting environment (`srun $SRUN_ARGS …`, set nowhere in the
    file) may start a container that hides home: info."""
    text = HEAD + "srun $SRUN_ARGS " + RUN[5:]
    assert hf_use(text).home is HomeView.UNKNOWN
    assert sb401(text) == ["info"]


def test_options_in_an_array_are_read_for_the_home_view():
    text = HEAD + 'SRUN_ARGS=(--container-image="$IMG" --no-container-mount-home)\n' + \
        'srun "${SRUN_ARGS[@]}" ' + RUN[5:]
    assert hf_use(text).home is HomeView.HIDDEN
    assert sb401(text) == ["error"]


# info: uv's cache is speed-only and its default ~/.cache/uv is per node only if home is, which
# the script does not say (rules/SB401.md)
@pytest.mark.parametrize("task,expected", [
    ("uv sync", ["info"]),
    ("uv pip install -e .", ["info"]),
    ("uv run python t.py", ["info"]),
    ("uv run --no-sync python t.py", []),           # runs without filling the cache
    ("timeout 3h uv sync", ["info"]),                # through a wrapper
    ("timeout 3h uv run --no-sync python t.py", []),
    ("echo uv sync", []),                            # not uv's own command
    ("/opt/bin/uv run python t.py", ["info"]),       # by a path
])
def test_uv_evidence_is_read_per_command(task, expected):
    assert sb401(HEAD + f"srun {task}\n") == expected


def test_nemo_evidence_needs_a_data_word_at_or_after_the_nemo_word():
    run = "srun --container-image=/x.sqsh --no-container-mount-home "
    assert sb401(HEAD + run + "python /opt/NeMo/examples/llm/finetune.py dataset=squad\n") == \
        ["error"]
    assert sb401(HEAD + run + "python /opt/NeMo/examples/llm/generate.py\n") == []


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("loraLORApeftPEFTtransformshugingfacHF_b.dlDTı -")),
               max_size=24))
def test_the_hf_prefilter_never_hides_a_match(text):
    """facts/caches.py asks may_name_hf() before the HF regex: it answers as the regex does."""
    from sbatch_lsp.facts.caches import HF, may_name_hf

    assert may_name_hf(text) == (HF.search(text) is not None)


def test_the_hf_prefilter_reads_every_form():
    from sbatch_lsp.facts.caches import may_name_hf

    for text in ("QLoRA", "peft", "Transformers", "HuggingFace", "hf_hub_download",
                 "from_pretrained", "--model_name_or_path", "--hf-token", "--HF_x",
                 "--dataset_name", "load_dataset", "trl sft", "TRL.scripts", "from datasets",
                 "import datasets", "from_pretraıned"):
        assert may_name_hf(text), text
    assert not may_name_hf("python train.py --out /lustre/x\nsrun hostname")


def test_a_step_is_read_only_for_the_caches_its_words_may_name():
    """_cache_uses asks _evidence only for the kinds _kinds_named() gives a step's text."""
    from sbatch_lsp.facts.caches import HF_CACHE, NEMO_CACHE, UV_CACHE, _kinds_named

    assert _kinds_named("python\nprepare.py\n--out\n/lustre/run/3") == ()
    assert _kinds_named("/opt/bin/uv\nsync") == (UV_CACHE,)
    assert _kinds_named("python\n/opt/NeMo/finetune.py\ndataset=squad") == (NEMO_CACHE,)
    assert _kinds_named("python\nt.py\n--model_name_or_path\nx/y") == (HF_CACHE,)
    assert _kinds_named("python\n/opt/ⓝemo/x.py") == (NEMO_CACHE,)  # not ASCII: NEMO decides
    assert _kinds_named("uv\nrun\npeft_nemo.py") == (HF_CACHE, NEMO_CACHE, UV_CACHE)
