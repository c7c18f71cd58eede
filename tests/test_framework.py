"""The framework config reader (facts/framework.py) and the release-dependent SB403/SB6xx
behaviour: where each value is read from, the world size, the Megatron-Core release."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbatch_lsp.config import Config, ConfigError, Profile, from_table
from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.facts.framework import framework_runs, megatron_core_release
from sbatch_lsp.lint import lint

HEAD = """#!/bin/bash
#SBATCH --partition=h100
#SBATCH --nodes={nodes}
#SBATCH --ntasks-per-node={tpn}
#SBATCH --gpus-per-node=8

export CUDA_DEVICE_MAX_CONNECTIONS=1
"""


def script(body: str, nodes: int = 1, tpn: int = 1) -> str:
    return HEAD.format(nodes=nodes, tpn=tpn) + body


def runs(text: str, release: str | None = None):
    result = lint(text, "job.sbatch", Config(profile=Profile(megatron_core=release)))
    return result, framework_runs(result.job)


def found(text: str, code: str, release: str | None = None) -> list[tuple[str, str]]:
    """(severity, the source text under the finding) of each ``code`` finding."""
    result = lint(text, "job.sbatch", Config(profile=Profile(megatron_core=release)))
    return [(d.severity.label, text[d.start:d.end]) for d in result.diagnostics if d.code == code]


def test_literal_flags_with_their_spans():
    text = script("srun torchrun --nproc-per-node=8 pretrain_gpt.py "
                  "--tensor-model-parallel-size=4 --pipeline-model-parallel-size 2 "
                  "--num-layers 32 --sequence-parallel\n")
    _, (run,) = runs(text)
    assert run.kind == "megatron-lm"
    assert run.size("tp") == 4 and run.size("pp") == 2 and run.size("layers") == 32
    assert run.on("sp") and run.size("cp") == 1  # argparse default
    tp = run.get("tp")
    assert text[tp.start:tp.end] == "4" and tp.spelled == "--tensor-model-parallel-size"


def test_array_with_comments_appends_and_a_variable():
    text = script("""TP=2
ARGS=(
  # model parallelism
  --tensor-model-parallel-size $TP
  --num-layers 30  # a trailing comment
)
ARGS+=(--pipeline-model-parallel-size 4)
srun torchrun --nproc-per-node=8 pretrain_gpt.py "${ARGS[@]}"
""")
    _, (run,) = runs(text)
    assert (run.size("tp"), run.size("layers"), run.size("pp")) == (2, 30, 4)
    tp = run.get("tp")
    assert text[tp.start:tp.end] == "2" and text[tp.start - 3:tp.start] == "TP="


def test_train_cmd_string_run_by_bash_c():
    text = script('MODEL="--num-attention-heads 12"\n'
                  'TRAIN_CMD="torchrun --nproc-per-node=8 pretrain_gpt.py '
                  '--tensor-model-parallel-size 8 $MODEL"\n'
                  'srun bash -c "$TRAIN_CMD"\n')
    _, (run,) = runs(text)
    assert run.size("heads") == 12 and run.world.size == 8
    assert found(text, "SB601") == [("error", "12")]


def test_unquoted_string_variable_after_the_entry_point():
    text = script('GPT_ARGS="--tensor-model-parallel-size 4 --pipeline-model-parallel-size 4"\n'
                  "srun torchrun --nproc-per-node=8 pretrain_gpt.py $GPT_ARGS\n")
    assert found(text, "SB601") == [("error", "4")]


def test_hydra_overrides_and_trainer_world():
    text = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8

srun python megatron_gpt_pretraining.py trainer.num_nodes=2 trainer.devices=8 \\
  ++model.tensor_model_parallel_size=4 +model.pipeline_model_parallel_size=8 \\
  model.context_parallel_size=1
"""
    _, (run,) = runs(text)
    assert run.kind == "nemo" and run.world.size == 16
    assert (run.size("tp"), run.size("pp")) == (4, 8)
    assert [sev for sev, _ in found(text, "SB601")] == ["error"]


def test_a_recipe_default_is_unknown_and_a_variable_value_too():
    text = """#!/bin/bash
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8

TP=${TP:-4}
srun python scripts/training/run_recipe.py --recipe llama3_8b \\
  model.tensor_model_parallel_size="$TP" model.pipeline_model_parallel_size=3
"""
    _, (run,) = runs(text)
    assert run.kind == "bridge"
    assert run.size("tp") is None  # present, not literal
    assert run.size("cp") is None  # absent: the recipe's own default
    assert found(text, "SB601") == []


@pytest.mark.parametrize("launch,world", [
    ("torchrun --nnodes=2 --nproc-per-node=8", 16),
    ("torchrun --nnodes=$SLURM_JOB_NUM_NODES --nproc-per-node=gpu", 16),
    ("torchrun --nproc-per-node=4", 4),
    ('torchrun --nnodes="$NNODES" --nproc-per-node=8', None),
    ("torchrun --nnodes=1:2 --nproc-per-node=8", None),
    ("python -m torch.distributed.run --nnodes 2 --nproc_per_node 8", 16),
])
def test_world_from_torchrun(launch, world):
    text = script(f"srun {launch} pretrain_gpt.py --tensor-model-parallel-size 2\n", nodes=2)
    _, (run,) = runs(text)
    assert run.world.size == world


def test_world_srun_native_and_framework_sized():
    native = script("srun python pretrain_gpt.py --tensor-model-parallel-size 2\n",
                    nodes=2, tpn=8)
    _, (run,) = runs(native)
    assert run.srun_native and run.world.size == 16
    ray = script("srun python train.py --actor-num-nodes 2 --actor-num-gpus-per-node 4 "
                 "--tensor-model-parallel-size 2\n")
    _, (run,) = runs(ray)
    assert run.world.size == 8 and "--actor-num-nodes" in run.world.basis


def test_a_program_without_megatron_flags_is_not_a_run():
    text = script("srun torchrun --nproc-per-node=8 train.py --micro_batch_size 3 "
                  "--global_batch_size 10 --num-layers 7\n")
    _, found_runs = runs(text)
    assert found_runs == []


def test_megatron_deepspeed_splits_layers_itself():
    text = script("srun torchrun --nproc-per-node=8 pretrain_gpt.py --deepspeed "
                  "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 "
                  "--num-layers 30 --micro-batch-size 1 --global-batch-size 3\n")
    _, (run,) = runs(text)
    assert run.kind == "megatron-deepspeed"
    assert found(text, "SB602") == [] and found(text, "SB604") == []


# ---- the release -------------------------------------------------------------------------
def test_release_from_profile_pin_and_container():
    base = script("srun torchrun --nproc-per-node=8 pretrain_gpt.py\n")
    assert megatron_core_release(lint(base).job) is None
    r = megatron_core_release(lint(base, "j.sbatch",
                                   Config(profile=Profile(megatron_core="0.13.1"))).job)
    assert r.version == (0, 13)
    pinned = base.replace("srun torchrun", "pip install megatron-core==0.11.0\nsrun torchrun")
    assert megatron_core_release(lint(pinned).job).version == (0, 11)
    nemo = base.replace("srun torchrun", "srun --container-image=nvcr.io#nvidia/nemo:24.07 torchrun")
    assert megatron_core_release(lint(nemo).job).version == (0, 8)
    unknown = base.replace("srun torchrun", "srun --container-image=nvcr.io#nvidia/nemo:25.11 torchrun")
    assert megatron_core_release(lint(unknown).job) is None


@pytest.mark.parametrize("value,ok", [("0.13", True), ("0.16.1", True), ("0.4", True),
                                      ("0.3", False), ("0.99", False), ("1.0", False),
                                      (0.13, False), ("latest", False)])
def test_profile_key_is_validated(value, ok):
    table = {"profile": {"megatron-core": value}}
    if ok:
        assert from_table(table, "t.toml").profile.megatron_core == value
    else:
        with pytest.raises(ConfigError, match="megatron-core"):
            from_table(table, "t.toml")


# ---- SB601 by release ----------------------------------------------------------------------
MOE = ("srun torchrun --nproc-per-node=8 pretrain_gpt.py --tensor-model-parallel-size 2 "
       "--context-parallel-size 2 --expert-model-parallel-size 4 {etp}--num-experts 8 "
       "--num-attention-heads 32\n")


@pytest.mark.parametrize("release", [None, "0.10", "0.13", "0.16"])
def test_valid_moe_layout_stays_clean(release):
    assert found(script(MOE.format(etp="--expert-tensor-parallel-size 1 ")), "SB601",
                 release) == []


@pytest.mark.parametrize("release,expected", [(None, ["info"]), ("0.9", ["error"]),
                                              ("0.13", [])])
def test_moe_layout_only_old_releases_refuse(release, expected):
    # ETP defaults to TP = 2: world 8 % (2·4·1) == 0 (≥ 0.10), but DP = 2 % EP 4 != 0 (≤ 0.9)
    text = script(MOE.format(etp=""))
    assert [sev for sev, _ in found(text, "SB601", release)] == expected


@pytest.mark.parametrize("release,expected", [(None, ["info"]), ("0.15", ["error"]),
                                              ("0.16", [])])
def test_query_groups_divisor_of_tp(release, expected):
    text = script("srun torchrun --nproc-per-node=8 pretrain_gpt.py --tensor-model-parallel-size 8 "
                  "--group-query-attention --num-query-groups 4 --num-attention-heads 32\n")
    assert [sev for sev, _ in found(text, "SB601", release)] == expected


def test_query_groups_neither_multiple_nor_divisor_is_an_error_on_every_release():
    text = script("srun torchrun --nproc-per-node=8 pretrain_gpt.py --tensor-model-parallel-size 4 "
                  "--group-query-attention --num-query-groups 6 --num-attention-heads 24\n")
    assert found(text, "SB601") == [("error", "6")]


# ---- SB605 by framework ------------------------------------------------------------------
@pytest.mark.parametrize("entry,severity", [("pretrain_gpt.py", "info"),
                                            ("scripts/training/run_recipe.py", "info"),
                                            ("train.py", "warning")])
def test_sequence_parallel_without_tp_says_who_does_what(entry, severity):
    text = script(f"srun torchrun --nproc-per-node=8 {entry} --sequence-parallel "
                  "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 2\n")
    assert [s for s, _ in found(text, "SB605")] == [severity]


# ---- SB403 by release --------------------------------------------------------------------
def _without_cdmc(body: str, partition: str = "h100") -> str:
    return script(body).replace("export CUDA_DEVICE_MAX_CONNECTIONS=1\n", "").replace(
        "--partition=h100", f"--partition={partition}")


def test_sb403_at_tp1_only_before_0_12():
    text = _without_cdmc("srun torchrun --nproc-per-node=8 pretrain_gpt.py "
                         "--pipeline-model-parallel-size 8\n")
    assert [s for s, _ in found(text, "SB403", "0.11")] == ["error"]
    assert found(text, "SB403", "0.13") == []
    no_async = text.replace("--pipeline-model-parallel-size 8",
                            "--pipeline-model-parallel-size 8 "
                            "--no-async-tensor-model-parallel-allreduce")
    assert found(no_async, "SB403", "0.11") == []


def test_sb403_blackwell_tp_needs_it_only_on_0_12():
    text = _without_cdmc("srun torchrun --nproc-per-node=8 pretrain_gpt.py "
                         "--tensor-model-parallel-size 2\n", partition="gb200")
    assert [s for s, _ in found(text, "SB403", "0.12")] == ["error"]
    assert found(text, "SB403", "0.13") == []
    assert found(text, "SB403") == []


def test_sb403_reads_the_parallel_sizes_from_an_array():
    text = _without_cdmc("ARGS=(--tensor-model-parallel-size 4)\n"
                         'srun torchrun --nproc-per-node=8 pretrain_gpt.py "${ARGS[@]}"\n')
    assert found(text, "SB403") == [("error", "4")]


def test_sb403_one_on_blackwell_is_a_warning():
    text = script("srun torchrun --nproc-per-node=8 pretrain_gpt.py "
                  "--tensor-model-parallel-size 2\n").replace("--partition=h100",
                                                             "--partition=gb200")
    assert [s for s, _ in found(text, "SB403")] == [Severity.WARNING.label]


def test_sb403_checkpoint_activations_marks_an_old_megatron():
    """Megatron-LM exits on --checkpoint-activations from tag 23.04; older releases and
    bigscience's Megatron-DeepSpeed may have no CUDA_DEVICE_MAX_CONNECTIONS check: info, and
    only while the release is unknown."""
    text = _without_cdmc("srun torchrun --nproc-per-node=8 pretrain_gpt.py "
                         "--tensor-model-parallel-size 2 --checkpoint-activations\n")
    ((sev, _),) = found(text, "SB403")
    assert sev == "info"
    assert [s for s, _ in found(text, "SB403", "0.11")] == ["error"]
    assert [s for s, _ in found(text.replace(" --checkpoint-activations", ""), "SB403")] \
        == ["error"]


# ---- SB606 ---------------------------------------------------------------------------------
NATIVE = "srun {srun}python pretrain_gpt.py --tensor-model-parallel-size 8\n"


@pytest.mark.parametrize("before,srun,expected", [
    ("", "", ["error"]),
    ("", "--container-image=nvcr.io#nvidia/pytorch:25.01-py3 ", ["info"]),
    ("export RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS\n", "", []),  # SB301's business
    ("", "--export=ALL,RANK=0,WORLD_SIZE=8 ", []),
    ('SRUN_ARGS="--ntasks=1"\n', "$SRUN_ARGS ", []),  # options hidden in a variable
])
def test_sb606_where_the_rank_variables_come_from(before, srun, expected):
    text = script(before + NATIVE.format(srun=srun), tpn=8)
    assert [s for s, _ in found(text, "SB606")] == expected


def test_sb606_bridge_derives_ranks_and_one_task_needs_none():
    bridge = script("srun python scripts/training/run_recipe.py model.tensor_model_parallel_size=8\n",
                    tpn=8)
    one = script(NATIVE.format(srun=""), tpn=1)
    assert found(bridge, "SB606") == [] and found(one, "SB606") == []


# ---- SB608 ---------------------------------------------------------------------------------
def test_sb608_reports_the_arithmetic_only():
    text = script("srun torchrun --nproc-per-node=8 pretrain_gpt.py --num-experts 64 "
                  "--expert-model-parallel-size 8 --num-layers 16 --hidden-size 2048 "
                  "--ffn-hidden-size 1024 --num-attention-heads 16\n")
    result = lint(text, "job.sbatch")
    (d,) = [d for d in result.diagnostics if d.code == "SB608"]
    assert d.severity == Severity.INFO and text[d.start:d.end] == "8"
    # 8 experts x 16 layers x 2 (no --swiglu) x 2048 x 1024 = 0.54 B parameters
    assert "64 experts / EP 8 = 8 expert(s)" in d.message
    assert "0.54 B expert parameters per GPU" in d.message
    assert "spans more than one node" not in d.message


def test_sb608_swiglu_default_width_and_ep_beyond_a_node():
    text = script("srun torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d "
                  "--rdzv-endpoint=n1:29500 pretrain_gpt.py --num-experts 32 "
                  "--expert-model-parallel-size 16 --num-layers 8 --hidden-size 1536 --swiglu "
                  "--num-attention-heads 16\n", nodes=2)
    (msg,) = [d.message for d in lint(text, "job.sbatch").diagnostics if d.code == "SB608"]
    # SwiGLU default FFN: int(4 * 1536 * 2 / 3 / 64) * 64 = 4096; 2 x 8 x 3 x 1536 x 4096
    assert "expert FFN 4096 (SwiGLU)" in msg and "0.30 B" in msg
    assert "EP × expert-TP = 16 spans more than one node's 8 GPUs" in msg


@pytest.mark.parametrize("flags", [
    "--num-experts 60 --expert-model-parallel-size 8",     # SB603's error instead
    '--num-experts 64 --expert-model-parallel-size "$EP"',  # EP not known
    "--tensor-model-parallel-size 2",                       # dense
])
def test_sb608_silent(flags):
    text = script(f"srun torchrun --nproc-per-node=8 pretrain_gpt.py {flags} --num-layers 8\n")
    assert found(text, "SB608") == []


def test_sb608_bridge_recipe_without_the_shape_gives_no_weights():
    text = script("srun python scripts/training/run_recipe.py model.num_moe_experts=64 "
                  "model.expert_model_parallel_size=8 model.hidden_size=2048 "
                  "model.num_layers=16\n", tpn=8)
    (msg,) = [d.message for d in lint(text, "job.sbatch").diagnostics if d.code == "SB608"]
    assert "8 expert(s)" in msg and "parameters per GPU" not in msg


# ---- the prefilter: a command none of whose words can tell is not read -----------------------
TELLING_PARTS = ["--", "-", "_", "=", ".", "+", "/", "2", "$", '"', "'", " ", "(", ")", "tensor",
                 "model", "parallel", "size", "num", "layers", "train", "trainer", "er", "ſ",
                 "Megatron", "NeMo", "nemo", "bridge", "recipe", "Recipes", "scripts",
                 "performance", "pretrain", "py", "K", "ı", "İ", "deepspeed", "swiglu"]


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(TELLING_PARTS), max_size=8).map("".join))
def test_the_telling_prefilter_never_hides_a_setting_or_an_entry_point(text):
    """_framework_runs skips a command when _telling() is False for every word: a word it is
    False for gives read_settings no setting and matches no entry point regex."""
    from sbatch_lsp.facts.framework import (BRIDGE_ENTRY, NEMO_ENTRY, _telling,
                                            read_settings)
    from sbatch_lsp.shell.model import Script, Word

    word = Word(text, 0, len(text), text)
    if read_settings([word, Word("2", len(text) + 1, len(text) + 2, "2")], Script()) or \
            BRIDGE_ENTRY.search(text) or NEMO_ENTRY.search(text):
        assert _telling(text)


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(TELLING_PARTS + ["#", "\n", "`"]), max_size=10).map("".join))
def test_an_assignment_value_that_may_not_tell_expands_to_no_telling_word(text):
    """_framework_runs expands a ``$NAME`` word only when _may_tell() holds for one of NAME's
    values: each word such a value gives answers False to _telling()."""
    from sbatch_lsp.facts.framework import _literal_words, _may_tell, _telling
    from sbatch_lsp.shell.model import Word

    for value in (text, f"({text})", f'"{text}"'):
        words = _literal_words(Word(value, 10, 10 + len(value), None)) or []
        if any(_telling(w.value if w.value is not None else w.text) for w in words):
            assert _may_tell(value), words


def test_the_prefilter_reads_each_way_a_run_shows():
    from sbatch_lsp.facts.framework import _may_tell, _telling

    for text in ("--num-layers", "--num_layers=4", "++model.tensor_model_parallel_size=2",
                 "trainer.devices=8", "run_recipe.py", "/opt/Megatron-Bridge/x.py",
                 "scripts/performance/llm/pretrain.py", "recipes/llama3.py", "NeMo/x.py",
                 "megatron_gpt_sft.py"):
        assert _telling(text), text
    for text in ("srun", "--ntasks-per-node=1", "python", "pretrain_gpt.py", "--part",
                 '"$STAGE_3"', "/lustre/run/3", "train.py"):
        assert not _telling(text), text
    assert _may_tell('"--tp 2"') and _may_tell("$BASE/x") and not _may_tell('"/lustre/run/3"')


def test_runs_found_through_a_value_and_through_an_entry_point_alone():
    # settings only in a value two references away; an entry point with no setting at all
    text = script('PAR="--tensor-model-parallel-size 4"\nARGS="$PAR --num-layers 8"\n'
                  "srun python train.py $ARGS\n"
                  "srun python /opt/Megatron-Bridge/scripts/performance/run.py\n", nodes=2)
    _, found_runs = runs(text)
    assert sorted((r.kind, r.size("tp") or 0, r.size("layers") or 0) for r in found_runs) == \
        [("bridge", 0, 0), ("megatron-core", 4, 8)]


REFERENCE_TEXTS = ['$A', '"$A"', '${A}', '"${A[@]}"', '${A[*]}', '$A_B2', '"$A', '$1', '$A$B',
                   '${A:-x}', '--x=$A', 'A', '', '$', '"${ARGS[@]}"', '$ARGS']


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(REFERENCE_TEXTS + ["$", "{", "}", '"', "[@]", "A", "_9"]),
                max_size=5).map("".join))
def test_the_memoised_reference_is_the_regex_on_every_text(text):
    """_reference keeps its answers by text (an lru_cache): each answer, asked after others, is
    what REF itself says of that text (so a memo that mixed texts up would fail here)."""
    from sbatch_lsp.facts.framework import REF, _reference

    for t in [*REFERENCE_TEXTS, text]:
        m = REF.match(t)
        assert _reference(t) == (m.group(1) if m else None), t
