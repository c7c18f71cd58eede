"""SB403 and SB6xx: what Megatron-Core, Megatron-LM, Megatron-Bridge and NeMo check at start-up
about the parallel sizes, the model shape and CUDA_DEVICE_MAX_CONNECTIONS, read from the
framework config (``facts/framework.py``) and the launch's world size.

Sources (NVIDIA/Megatron-LM at the tags named): ``megatron/core/parallel_state.py
initialize_model_parallel`` (world % (TP·PP·CP): core_v0.9.0 l.531, core_v0.16.0 l.740; DP % EP
up to core_v0.9.0 l.536; world % (ETP·EP·PP) from core_v0.10.0 l.649, core_v0.16.0 l.792),
``megatron/core/transformer/transformer_config.py __post_init__`` (heads % TP: core_v0.10.0
l.369, core_v0.16.0 l.924; query groups % TP up to core_v0.15.0 l.758, multiple-or-divisor from
core_v0.16.0 l.939), ``megatron/training/arguments.py validate_args`` (hidden % heads when no
``--kv-channels``: core_v0.16.0 l.813, and megatron/arguments.py in Megatron-DeepSpeed; layers %
PP, VPP; experts % EP; sequence parallel off at TP = 1; CUDA_DEVICE_MAX_CONNECTIONS), and
``megatron/core/num_microbatches_calculator.py`` (global batch % (micro × DP): core_v0.16.0 l.340).
"""
from __future__ import annotations

import re

from ..facts.framework import (
    FrameworkRun,
    Release,
    Setting,
    framework_runs,
    megatron_core_release,
)
from ..facts.provenance import told_note, told_to_set
from ..shell.model import Word
from . import Edit, Fix, Related, Severity, finding, insert_line_before, rule


def _sizes(run: FrameworkRun, *keys: str) -> list[int] | None:
    """The integer values of ``keys`` (defaults 1); None when one is present but not literal."""
    out = []
    for k in keys:
        v = run.size(k)
        if v is None:
            return None
        out.append(v)
    return out


def _anchor(run: FrameworkRun, keys: tuple[str, ...]) -> tuple[int, int]:
    """The setting to point at: the largest of ``keys`` the command line gives (the one the
    user most likely has to change), else the entry point."""
    given = [run.settings[k] for k in keys if k in run.settings
             and isinstance(run.settings[k].value, int)]
    if not given:
        return run.anchor.start, run.anchor.end
    best = max(given, key=lambda s: s.value)
    return best.start, best.end


def _flag_related(s: Setting) -> list[Related]:
    """The flag word of a setting whose value is written elsewhere (``--num-attention-heads
    $NHEADS``), so the finding also shows where the program is given it."""
    return [Related(s.flag[0], s.flag[1], f"passed as {s.spelled}")] if s.flag else []


def _world_related(run: FrameworkRun) -> Related:
    return Related(run.world.start, run.world.end,
                   f"world size {run.world.size}: {run.world.basis}")


def _release_note(release: Release | None) -> str:
    return f" (Megatron-Core {release.text}: {release.basis})" if release else ""


def _product(names: list[str], values: list[int]) -> str:
    return "×".join(names) + " = " + "×".join(str(v) for v in values) + \
        f" = {_mul(values)}"


def _mul(values: list[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


@rule("SB601", "parallelism-divisibility", Severity.ERROR,
      "Megatron parallel sizes the world cannot hold, or that the heads/query groups do not divide",
      rests_on=("nodes", "gpus", "ntasks-per-node"))
def parallelism_divisibility(job):
    """world % (TP·PP·CP); world % (ETP·EP·PP) from Megatron-Core 0.10 (DP % EP before);
    heads % TP; query groups % TP (from 0.16 a multiple or a divisor); hidden % heads on a
    Megatron-LM command line without --kv-channels."""
    runs = framework_runs(job)
    if not runs:
        return  # (most jobs: the release, a walk over every word, is not read)
    release = megatron_core_release(job)
    for run in runs:
        yield from _world_checks(run, release)
        yield from _head_checks(run, release)
        yield from _head_size_check(run)


def _head_size_check(run: FrameworkRun):
    """Megatron-LM's ``validate_args`` (and Megatron-DeepSpeed's) derives the per-head size
    ``kv_channels = hidden_size // num_attention_heads`` after ``assert hidden_size %
    num_attention_heads == 0`` when ``--kv-channels`` is not given. Only command-line flags go
    through that check: a Hydra/Bridge config reaches TransformerConfig, which floors."""
    hidden, heads = run.get("hidden"), run.get("heads")
    if hidden is None or heads is None or run.get("kv_channels") is not None:
        return
    if not (hidden.spelled.startswith("--") and heads.spelled.startswith("--")):
        return
    h, n = hidden.value, heads.value
    if not isinstance(h, int) or not isinstance(n, int) or n <= 0 or h % n == 0:
        return
    yield finding("SB601", heads.start, heads.end,
                  f"hidden size {h} is not divisible by {n} attention heads: Megatron's "
                  "argument check (`assert args.hidden_size % args.num_attention_heads == 0`, "
                  "which sizes each head as hidden/heads) stops the run at start-up; choose "
                  "heads that divide the hidden size, or give --kv-channels",
                  related=[Related(hidden.start, hidden.end, f"hidden size {h}"),
                           *_flag_related(heads)])


def _world_checks(run: FrameworkRun, release: Release | None):
    world = run.world.size
    sizes = _sizes(run, "tp", "pp", "cp")
    if world is None or sizes is None:
        return
    tp, pp, cp = sizes
    model = tp * pp * cp
    related = [_world_related(run)]
    if world % model:
        start, end = _anchor(run, ("tp", "pp", "cp"))
        yield finding(
            "SB601", start, end,
            f"world size {world} is not divisible by {_product(['TP', 'PP', 'CP'], [tp, pp, cp])}: "
            f"Megatron-Core stops at start-up with `RuntimeError: world_size ({world}) is not "
            f"divisible by {model}` (parallel_state.initialize_model_parallel), after the queue "
            "wait and the container pull; make the GPU count a multiple of "
            f"{model} or change the sizes", related=related)
        return
    etp_given = run.size("etp", None)
    ep = run.size("ep")
    if ep is None or ep == 1 and etp_given is None:
        return
    etp = etp_given if etp_given is not None else tp
    dp = world // model
    new_ok = world % (etp * ep * pp) == 0
    old_ok = dp % ep == 0
    # --expert-tensor-parallel-size exists only from Megatron-Core 0.10
    version = release.version if release else ((0, 10) if etp_given is not None else None)
    new_rule = (f"world size {world} is not divisible by "
                f"{_product(['ETP', 'EP', 'PP'], [etp, ep, pp])}"
                + ("" if etp_given is not None else " (expert-TP defaults to TP)")
                + f": Megatron-Core ≥ 0.10 stops at start-up with `RuntimeError: world_size "
                f"({world}) is not divisible by expert_tensor_model_pipeline_parallel size "
                f"({etp * ep * pp})`")
    old_rule = (f"the data-parallel size {world}/{model} = {dp} is not divisible by EP = {ep}: "
                f"Megatron-Core ≤ 0.9 stops at start-up with `RuntimeError: data_parallel_size "
                f"({dp}) is not divisible by expert_model_parallel_size`")
    start, end = _anchor(run, ("ep", "etp", "pp") if not old_ok or not new_ok else ("ep",))
    if version is not None:
        fails = not new_ok if version >= (0, 10) else not old_ok
        if fails:
            yield finding("SB601", start, end, (new_rule if version >= (0, 10) else old_rule)
                          + _release_note(release) + "; change EP/ETP/PP or the GPU count",
                          related=related)
        return
    if not new_ok and not old_ok:
        yield finding("SB601", start, end, new_rule + "; and on ≤ 0.9 " + old_rule.split(": ")[0]
                      + "; change EP or the GPU count", related=related)
    elif not new_ok or not old_ok:
        which = new_rule if not new_ok else old_rule
        yield finding("SB601", start, end, which + "; the Megatron-Core release is not known "
                      "(set the profile's megatron-core key), so this may not apply",
                      severity=Severity.INFO, related=related)


def _head_checks(run: FrameworkRun, release: Release | None):
    tp = run.size("tp")
    heads = run.size("heads", None)
    if tp is None or tp <= 1:
        return
    tp_s = run.get("tp")
    related = [Related(tp_s.start, tp_s.end, f"TP = {tp}")] if tp_s else []
    if heads is not None and heads % tp:
        h = run.settings["heads"]
        yield finding("SB601", h.start, h.end,
                      f"{heads} attention heads are not divisible by TP = {tp}: Megatron-Core "
                      f"raises `ValueError: num_attention_heads ({heads}) must be a multiple of "
                      f"tensor_model_parallel_size ({tp})` when it builds the model config",
                      related=related + _flag_related(h))
    qg = run.size("query_groups", None)
    # Megatron-LM passes --num-query-groups on only with --group-query-attention
    # (arguments.py core_transformer_config_from_args); Hydra/Bridge keys always reach it
    qg_s = run.get("query_groups")
    if qg is None or qg_s is None or (qg_s.spelled.startswith("--") and not run.on("gqa")):
        return
    multiple = qg % tp == 0
    divisor = tp % qg == 0
    if multiple:
        return
    v = release.version if release else None
    if divisor and v is not None and v >= (0, 16):
        return
    msg = (f"{qg} query groups are not a multiple of TP = {tp}: Megatron-Core raises "
           f"`ValueError: num_query_groups ({qg}) must be a multiple"
           + (" or divisor" if not divisor else "") + f" of tensor_model_parallel_size ({tp})`")
    if divisor:  # only releases before 0.16 refuse a divisor
        if v is None:
            yield finding("SB601", qg_s.start, qg_s.end, msg + " on Megatron-Core ≤ 0.15; 0.16 "
                          "and later accept a divisor of TP (the release is not known: set the "
                          "profile's megatron-core key)", severity=Severity.INFO,
                          related=related)
        else:
            yield finding("SB601", qg_s.start, qg_s.end, msg + _release_note(release)
                          + "; 0.16 and later accept a divisor", related=related)
        return
    yield finding("SB601", qg_s.start, qg_s.end, msg + " when it builds the model config",
                  related=related)


@rule("SB602", "layers-pipeline-split", Severity.ERROR,
      "the layer count does not split over the pipeline (and virtual pipeline) stages")
def layers_pipeline_split(job):
    """Megatron-LM validate_args: layers (+1 per account-for-embedding/loss flag) % PP, and
    layers per stage % layers per virtual stage; a virtual pipeline needs PP > 1. Skipped for
    layout strings and hybrid patterns (validated elsewhere); uneven first/last stages are
    checked as Megatron-Core does (middle layers % middle stages)."""
    runs = framework_runs(job)
    if not runs:
        return  # (most jobs: the release, a walk over every word, is not read)
    release = megatron_core_release(job)
    for run in runs:
        yield from _layer_checks(run, release)


def _layer_checks(run: FrameworkRun, release: Release | None):
    pp = run.size("pp")
    layers = run.size("layers", None)
    vpp_layers = run.size("vpp_layers", None)
    vpp = run.size("vpp", None)
    if pp is None or run.get("pp_layout") or run.get("hybrid") or run.kind == "megatron-deepspeed":
        return  # DeepSpeed's PipelineModule partitions layers itself (partition_method)
    pp_s = run.get("pp")
    related = [Related(pp_s.start, pp_s.end, f"PP = {pp}")] if pp_s else []
    if (vpp_layers is not None or (vpp or 1) > 1) and pp <= 1:
        s = run.get("vpp_layers") or run.get("vpp")
        assert s is not None  # one of them gave the virtual pipeline
        yield finding("SB602", s.start, s.end,
                      f"a virtual pipeline ({s.spelled}) with PP = {pp}: Megatron refuses the "
                      "interleaved schedule without pipeline parallelism (`pipeline-model-"
                      "parallel size should be greater than 1 with interleaved schedule`); drop "
                      f"{s.spelled} or raise PP", related=related)
        return
    if layers is None or pp <= 1:
        return
    lay_s = run.settings["layers"]
    sev = None if run.kind in ("megatron-lm", "megatron-core") else Severity.WARNING
    first, last = run.size("first_stage_layers", None), run.size("last_stage_layers", None)
    if first is not None or last is not None:
        middle_layers = layers - (first or 0) - (last or 0)
        middle_stages = pp - (first is not None) - (last is not None)
        if middle_stages and middle_layers % middle_stages:
            yield finding("SB602", lay_s.start, lay_s.end,
                          f"{layers} layers with {first or 0} on the first and {last or 0} on "
                          f"the last stage leave {middle_layers} for {middle_stages} middle "
                          f"stage(s): Megatron-Core raises `number of layers at middle stage: "
                          f"{middle_layers} must be divisible by the middle pipeline model "
                          f"parallel size {middle_stages}`", severity=sev, related=related)
        return
    total = layers + run.on("embedding_in_split") + run.on("loss_in_split")
    extra = "" if total == layers else f" ({layers} + {total - layers} for the embedding/loss)"
    if total % pp:
        v = release.version if release else None
        built = total // pp * pp
        if vpp_layers is None and release is not None and release.version <= (0, 9):
            what = (f"Megatron-Core {release.text} does not check this without a virtual "
                    f"pipeline and silently builds {built} of the {total} layers "
                    f"({release.basis})")
        else:
            what = ("Megatron-LM stops in validate_args (`Number of layers should be divisible "
                    "by the pipeline-model-parallel size`)"
                    + ("" if v is not None or vpp_layers is not None else
                       f"; releases before 0.10 instead silently build {built} layers"))
        yield finding("SB602", lay_s.start, lay_s.end,
                      f"{total} layers{extra} do not split over PP = {pp} stages: {what}; change "
                      "--num-layers or PP, or give the first/last stages their own counts "
                      "(--decoder-first-pipeline-num-layers)", severity=sev, related=related)
        return
    if vpp_layers is not None and (total // pp) % vpp_layers:
        s = run.settings["vpp_layers"]
        yield finding("SB602", s.start, s.end,
                      f"{total // pp} layers per pipeline stage are not divisible by "
                      f"{vpp_layers} layers per virtual stage: Megatron-LM stops in "
                      "validate_args (`number of layers per pipeline stage must be divisible "
                      "number of layers per virtual pipeline stage`)", severity=sev,
                      related=related)


@rule("SB603", "experts-expert-parallel", Severity.ERROR,
      "the number of MoE experts is not divisible by the expert-parallel size")
def experts_expert_parallel(job):
    """Megatron-LM validate_args asserts num_experts % EP == 0 (core_v0.16.0 arguments.py
    l.1027); Megatron-Core's MoE layer asserts the same."""
    for run in framework_runs(job):
        ep, experts = run.size("ep"), run.size("experts", None)
        if ep is None or ep <= 1 or experts is None or experts % ep == 0:
            continue
        s, e = run.settings["experts"], run.get("ep")
        yield finding("SB603", s.start, s.end,
                      f"{experts} experts are not divisible by EP = {ep}: Megatron stops at "
                      "start-up (`Number of experts should be a multiple of expert model "
                      "parallel_size`); each expert-parallel rank must hold the same number of "
                      "experts", related=[Related(e.start, e.end, f"EP = {ep}")] if e else [])


@rule("SB608", "moe-experts-per-gpu", Severity.INFO,
      "how many MoE experts each GPU holds (num_experts / EP) and their weights per GPU: the "
      "arithmetic, for sizing")
def moe_experts_per_gpu(job):
    """Information only: ``num_experts / EP`` experts per expert-parallel rank (Megatron-Core
    places ``num_experts // EP`` local experts on each: ``moe_layer.py``), and, when the flags
    give the shape, the expert weights per GPU: (num_experts / EP) × MoE layers per pipeline
    stage × (3 with --swiglu, else 2) × hidden × moe_ffn_hidden / ETP parameters. No
    threshold: the Megatron-Core MoE README's guidelines (core_v0.16.0) are qualitative; the
    one they make checkable, EP × TP inside one node's NVLink domain, is named when the GPUs
    per node are known."""
    for run in framework_runs(job):
        experts = run.size("experts", None)
        ep = run.size("ep")
        if experts is None or ep is None or experts % ep or run.kind == "megatron-deepspeed":
            continue  # SB603 reports experts % EP; DeepSpeed-MoE places experts itself
        etp = run.size("etp", None) or run.size("tp")
        local = experts // ep
        s = run.get("ep") or run.settings["experts"]
        text = (f"{experts} experts / EP {ep} = {local} expert(s) of every MoE layer on each "
                "expert-parallel rank")
        weights = _expert_weights(run, local, etp)
        if weights is not None:
            text += f"; {weights}"
        gpn = job.gpus_per_node.value or job.profile.gpus_per_node
        if gpn and etp and ep * etp > gpn:
            text += (f"; EP × expert-TP = {ep * etp} spans more than one node's {gpn} GPUs: the "
                     "Megatron-Core MoE README's guideline is to keep EP × TP within the NVLink "
                     "domain and scale across nodes with PP")
        yield finding("SB608", s.start, s.end,
                      text + " (information for sizing: no threshold is published)",
                      related=[Related(run.settings["experts"].start, run.settings["experts"].end,
                                       f"{experts} experts")] if s is not run.settings["experts"]
                      else [])


def _expert_weights(run: FrameworkRun, local: int, etp: int | None) -> str | None:
    """The expert parameters one GPU holds, as text, or None when a number is missing:
    every layer a MoE layer (no --moe-layer-freq), an even pipeline split, FFN width from
    --moe-ffn-hidden-size, else --ffn-hidden-size, else Megatron-LM's default (4 × hidden,
    or int(8 × hidden / 3 / 64) × 64 with --swiglu: arguments.py validate_args)."""
    hidden, layers, pp = run.size("hidden", None), run.size("layers", None), run.size("pp")
    if hidden is None or layers is None or not pp or not etp or layers % pp or \
            run.get("moe_layer_freq") or run.get("pp_layout") or run.get("hybrid") or \
            run.get("first_stage_layers") or run.get("last_stage_layers"):
        return None
    if run.get("swiglu") is None and not run.defaults_known:
        return None  # a recipe's activation is not shown
    gated = run.on("swiglu")
    ffn = run.size("moe_ffn_hidden", None) or run.size("ffn_hidden", None)
    if ffn is None:
        if not run.defaults_known:
            return None
        ffn = int(4 * hidden * 2 / 3 / 64) * 64 if gated else 4 * hidden
    per_expert = (3 if gated else 2) * hidden * ffn
    total = local * (layers // pp) * per_expert // etp
    return (f"with {layers // pp} MoE layer(s) per pipeline stage, hidden {hidden}, expert FFN "
            f"{ffn}{' (SwiGLU)' if gated else ''} and expert-TP {etp}, that is about "
            f"{total / 1e9:.2f} B expert parameters per GPU ({total * 2 / 2**30:.1f} GiB of "
            "bf16 weights, before gradients and optimizer state)")


@rule("SB604", "global-batch-divisibility", Severity.ERROR,
      "the global batch is not a multiple of micro batch × data-parallel size",
      rests_on=("nodes", "gpus", "ntasks-per-node"))
def global_batch_divisibility(job):
    """Megatron-Core's ConstantNumMicroBatchesCalculator asserts global % (micro × DP) == 0
    unless --decrease-batch-size-if-needed; batch-size ramp-up uses another calculator. When
    the world or a parallel size is not known (NeMo and Bridge configs bring defaults the script
    does not show), a global batch that the micro batch does not divide still fails: it is a
    multiple of micro × DP for no DP at all."""
    for run in framework_runs(job):
        world = run.world.size
        sizes = _sizes(run, "tp", "pp", "cp")
        gbs, mbs = run.size("gbs", None), run.size("mbs", None)
        if gbs is None or mbs is None or mbs <= 0:
            continue
        if run.get("rampup") or run.on("decrease_gbs") or run.kind == "megatron-deepspeed":
            continue  # Megatron-DeepSpeed takes the batch from the DeepSpeed config
        if world is None or sizes is None:
            if gbs % mbs:
                g = run.settings["gbs"]
                yield finding("SB604", g.start, g.end,
                              f"global batch {gbs} is not a multiple of micro batch {mbs}, so "
                              "it is a multiple of micro batch × data-parallel size for no "
                              "data-parallel size: Megatron stops at start-up (`global batch "
                              f"size ({gbs}) is not divisible by micro batch size ({mbs}) times "
                              "data parallel size`) whatever the parallel sizes are; use a "
                              f"multiple of {mbs} × DP",
                              related=[Related(run.settings["mbs"].start, run.settings["mbs"].end,
                                               f"micro batch {mbs}")])
            continue
        model = _mul(sizes)
        if world % model:
            continue  # SB601 reports the world first
        dp = world // model
        if gbs % (mbs * dp) == 0:
            continue
        g = run.settings["gbs"]
        yield finding("SB604", g.start, g.end,
                      f"global batch {gbs} is not a multiple of micro batch {mbs} × data-parallel "
                      f"size {dp} = {mbs * dp} (DP = world {world} / TP·PP·CP {model}): Megatron "
                      f"stops at start-up (`global batch size ({gbs}) is not divisible by micro "
                      f"batch size ({mbs}) times data parallel size ({dp})`); use a multiple of "
                      f"{mbs * dp}", related=[_world_related(run)])


@rule("SB605", "sequence-parallel-without-tp", Severity.WARNING,
      "sequence parallelism asked for with tensor parallelism 1: turned off, or refused")
def sequence_parallel_without_tp(job):
    """Megatron-LM validate_args warns "Disabling sequence parallelism because tensor model
    parallelism is disabled" and turns it off; Megatron-Bridge turns it off silently; code that
    builds Megatron-Core's ModelParallelConfig itself raises "Cannot use sequence parallelism
    without tensor parallelism" (model_parallel_config.py, core_v0.16.0 l.411)."""
    for run in framework_runs(job):
        if not run.on("sp") or run.size("tp") != 1:
            continue
        s = run.settings["sp"]
        if run.kind == "megatron-lm":
            what, sev = ("Megatron-LM prints \"Disabling sequence parallelism because tensor "
                         "model parallelism is disabled\" and trains without it"), Severity.INFO
        elif run.kind == "bridge":
            what, sev = "Megatron-Bridge turns it off without a word", Severity.INFO
        else:
            what, sev = ("Megatron-LM's and Bridge's entry points turn it off, but code that "
                         "builds Megatron-Core's config itself raises `ValueError: Cannot use "
                         "sequence parallelism without tensor parallelism`"), None
        yield finding("SB605", s.start, s.end,
                      f"{s.spelled} with TP = 1: sequence parallelism splits activations across "
                      f"the tensor-parallel group, which has one rank; {what}; drop the flag or "
                      "raise TP", severity=sev)


# ---- SB403 ------------------------------------------------------------------------------
FSDP_OTHER = re.compile(r"^--[\w.-]*fsdp[\w.-]*(=.*)?$|^fsdp2?$|^full_shard$|fsdp_config",
                        re.IGNORECASE)
FSDP_MEGATRON = re.compile(r"^--use-torch-fsdp2$|^--use-megatron-fsdp$|use_megatron_fsdp=true",
                           re.IGNORECASE)
UCC = re.compile(r"comm-backend[= ]ucc|\bucc\b", re.IGNORECASE)
MOE_OVERLAP = re.compile(r"overlap-moe-expert-parallel-comm|deepep|hybridep", re.IGNORECASE)
ARCH = [("blackwell", re.compile(r"b200|b300|gb200|gb300|blackwell|vr200", re.IGNORECASE)),
        ("hopper", re.compile(r"h100|h200|h800|gh200|hopper", re.IGNORECASE)),
        ("ampere", re.compile(r"a100|a800|a40\b|a10g?\b|a6000|rtx\s*30|ampere", re.IGNORECASE)),
        ("ada", re.compile(r"l40s?\b|l4\b|rtx\s*40|ada", re.IGNORECASE)),
        ("turing", re.compile(r"t4\b|rtx\s*20|turing", re.IGNORECASE)),
        ("volta", re.compile(r"v100|volta", re.IGNORECASE))]
CPU_PARTITION = re.compile(r"cpu", re.IGNORECASE)


def _value_text(a) -> str | None:
    if a.value is None:
        return None
    return a.value.value if a.value.value is not None else a.value.text.strip('"')


def _arch(job) -> tuple[str | None, object]:
    """The GPU architecture: the profile's gpu-arch for the partition, else the imported
    partition's ``gpu-arch`` or ``gpu-type`` (``h100`` -> hopper), else a GPU name in the
    partition, GPU request or constraint."""
    d = job.directives
    part = d.get("partition")
    if part and part.value in job.profile.gpu_arch:
        return job.profile.gpu_arch[part.value], part
    site = job.profile.partitions.get(part.value) if part else None
    if site is not None:  # the imported profile: the partition's gpu-arch, else its gpu-type
        if site.gpu_arch:
            return site.gpu_arch, part
        for arch, rx in ARCH:
            if site.gpu_type and rx.search(site.gpu_type):
                return arch, part
    for name in ("partition", "gpus-per-node", "gres", "gpus", "constraint"):
        use = d.get(name)
        if use is None or name == "partition" and CPU_PARTITION.search(use.value or ""):
            continue  # `hopper-cpu` is a CPU partition
        for arch, rx in ARCH:
            if rx.search(use.value or ""):
                return arch, use
    return None, None


def _needs_one(run: FrameworkRun, arch: str | None, version: tuple[int, int] | None) -> str | None:
    """Why Megatron-LM's validate_args asserts CUDA_DEVICE_MAX_CONNECTIONS=1 for this run on
    ``version`` (None: the current rule), or None when it does not. ≤ 0.11: sequence parallel
    or async TP all-reduce (on unless --no-async-tensor-model-parallel-allreduce), at any TP;
    0.12: TP > 1 on any GPU, CP > 1 before Blackwell; ≥ 0.13: TP > 1 or CP > 1 before Blackwell;
    not under FSDP (0.12+: a warning) or MoE overlap (0.13+)."""
    tp, cp = run.size("tp"), run.size("cp")
    if tp is None or cp is None:
        return None
    if run.kind == "megatron-deepspeed":  # its validate_args checks sequence parallelism only
        return "sequence parallelism" if run.on("sp") and tp > 1 else None
    if version is not None and version <= (0, 11) and run.kind == "megatron-lm":
        if run.on("sp") and tp > 1:
            return "sequence parallelism"
        if not run.on("no_async_allreduce"):
            return "the async tensor-parallel all-reduce (on by default)"
        return None
    if run.on("fsdp"):
        return None
    if version is not None and version <= (0, 12):
        if tp > 1:
            return f"TP = {tp} (Megatron-Core 0.12 asks for it on every GPU architecture)"
        return f"CP = {cp}" if cp > 1 and arch != "blackwell" else None
    if run.on("moe_overlap") or arch == "blackwell":
        return None
    if tp > 1:
        return f"TP = {tp}"
    return f"CP = {cp}" if cp > 1 else None


@rule("SB403", "cuda-device-max-connections", Severity.ERROR,
      "CUDA_DEVICE_MAX_CONNECTIONS wrong for the parallelism and the Megatron-Core release", fix="unsafe")
def cuda_device_max_connections(job):
    """Megatron-LM validate_args and Megatron-Core asserts, by release (slurm-facts §9, §15;
    arguments.py core_v0.11.0 l.656-664, core_v0.12.0 l.769-781, core_v0.13.0 l.862-874)."""
    setting = [a for a in job.script.assignments if a.name == "CUDA_DEVICE_MAX_CONNECTIONS"
               and a.value is not None]  # a bare `export NAME` sets no value
    setting += [a for s in job.steps for sc in s.task_scripts for a in sc.assignments
                if a.name == "CUDA_DEVICE_MAX_CONNECTIONS"]
    value = _value_text(setting[-1]) if setting else None
    runs = framework_runs(job)
    if value != "1" and not runs:
        return  # nothing below can hold: no setting to judge, no run that needs one
    words: list[Word] | None = None  # the script's words, gathered when a test below asks

    def first(rx: re.Pattern) -> Word | None:
        """The first word ``rx`` finds in (searched only when a test below asks)."""
        nonlocal words
        if words is None:
            words = [w for c in job.script.walk() for w in c.words]
        return next((w for w in words if rx.search(w.value or w.text)), None)

    release = megatron_core_release(job)
    version = release.version if release else None
    if value == "1":
        fsdp_m, fsdp_o, ucc = first(FSDP_MEGATRON), first(FSDP_OTHER), first(UCC)
        if fsdp_m or fsdp_o or ucc:
            yield _one_under_fsdp(job, setting[-1], fsdp_m, fsdp_o, ucc)
            return
    arch, arch_use = _arch(job)
    if value != "1":
        # the first run that needs the setting; the search of every word for FSDP only then
        needing = next(((run, why) for run in runs
                        for why in [_needs_one(run, arch, version)] if why is not None), None)
        if needing is not None and not first(FSDP_OTHER):
            yield _missing_one(job, needing[0], needing[1], arch, arch_use, release)
        return
    if value == "1" and (arch == "blackwell" or first(MOE_OVERLAP)) and version != (0, 12) and \
            (version is None or version >= (0, 12)):
        a = setting[-1]
        yield finding("SB403", a.start, a.end,
                      "CUDA_DEVICE_MAX_CONNECTIONS=1 "
                      + ("on Blackwell GPUs" if arch == "blackwell" else "with MoE all-to-all "
                         "overlap") + ": Megatron does not need it here and 1 serialises "
                      "kernels; Megatron-Bridge's and NeMo's launchers use 32 (some NVIDIA "
                      "recipes keep 1: measure both)", severity=Severity.WARNING)


def _one_under_fsdp(job, a, fsdp_m, fsdp_o, ucc):
    ev = fsdp_m or ucc or fsdp_o
    sev = Severity.ERROR if (fsdp_m or ucc) else Severity.WARNING
    why = ("Megatron asserts \"FSDP always requires CUDA_DEVICE_MAX_CONNECTIONS value large "
           "than one\"" if fsdp_m else "MCore asserts \"UCC-backend requires "
           "CUDA_DEVICE_MAX_CONNECTIONS > 1\"" if ucc and not fsdp_o else
           "FSDP then serialises its all-gather/reduce-scatter with compute")
    line = job.source.line_of(a.start)
    start, end = job.source.line_with_break(line)
    fixes = []
    if a.command is not None and a.command.words and a.command.words[0].value == "export" \
            and len(a.command.words) == 2 and job.source.line_of(a.command.end) == line:
        fixes.append(Fix("remove the CUDA_DEVICE_MAX_CONNECTIONS=1 export",
                         (Edit(start, end, ""),), safe=False))
    return finding("SB403", a.start, a.end,
                   f"CUDA_DEVICE_MAX_CONNECTIONS=1 with FSDP/UCC: {why}; unset it or use a "
                   "value above 1", severity=sev,
                   related=[Related(ev.start, ev.end, "FSDP/UCC is used here")], fixes=fixes)


def _missing_one(job, run: FrameworkRun, why: str, arch, arch_use, release: Release | None):
    mlm = run.kind == "megatron-lm"
    mds = run.kind == "megatron-deepspeed"
    known_pre = arch is not None and arch != "blackwell"
    version_bound = release is not None and release.version <= (0, 12)
    sev = Severity.ERROR if mds or mlm and (known_pre or version_bound) else Severity.WARNING
    text = ("Megatron-DeepSpeed stops at start-up: \"Using sequence parallelism requires "
            "setting the environment variable CUDA_DEVICE_MAX_CONNECTIONS to 1\"" if mds else
            "Megatron-LM asserts at start-up: \"Using tensor model parallelism or context "
            "parallelism require setting the environment variable CUDA_DEVICE_MAX_CONNECTIONS "
            "to 1\"" if mlm and not (release and release.version <= (0, 11)) else
            "Megatron-LM stops at start-up (\"Using sequence parallelism requires …\" / \"Using "
            "async gradient all reduce requires setting the environment variable "
            "CUDA_DEVICE_MAX_CONNECTIONS to 1\")" if mlm else
            "Megatron-Core then cannot overlap TP communication with compute")
    if arch is None and not version_bound and not mds:
        text += " (the GPU type is not known: on Blackwell this is not needed)"
    old = run.get("checkpoint_activations") if release is None and not mds else None
    if old is not None:
        # NVIDIA/Megatron-LM added the check in 2022-10 (megatron/arguments.py; in tag 23.04)
        # and from tag 23.04 exits on --checkpoint-activations: a run that passes the flag
        # expects a Megatron-LM from before 23.04 (with or without the check) or a
        # Megatron-DeepSpeed fork (bigscience-workshop's has no check): which, the script
        # does not say
        sev = Severity.INFO
        text += ("; but `--checkpoint-activations` marks an older Megatron: Megatron-LM exits "
                 "on it from release 23.04 (megatron/arguments.py), and the releases and forks "
                 "before the check (bigscience-workshop/Megatron-DeepSpeed) do not assert this")
    related = [Related(arch_use.start, arch_use.end, f"{arch} GPUs")] if arch_use else []
    told = told_to_set(job.source.text).get("CUDA_DEVICE_MAX_CONNECTIONS")
    if told is not None and sev > Severity.INFO:
        # the script tells the user to set it before sbatch, which passes the submitting
        # environment on (--export=ALL): the finding rests on the user not doing so
        sev = Severity.INFO
        text += told_note(told, job.source.line_of(told.start) + 1)
        related.append(Related(told.start, told.end,
                               "this comment says to set CUDA_DEVICE_MAX_CONNECTIONS"))
    key = next((k for k in ("tp", "cp", "sp") if k in run.settings), None)
    start, end = (run.settings[key].start, run.settings[key].end) if key else \
        (run.anchor.start, run.anchor.end)
    fixes = []
    top = next((s.command for s in job.steps if s.command.script is job.script), None)
    if top is not None:
        fixes.append(Fix("export CUDA_DEVICE_MAX_CONNECTIONS=1 before the training step",
                         (insert_line_before(job, top, "export CUDA_DEVICE_MAX_CONNECTIONS=1"),),
                         safe=False))
    return finding("SB403", start, end,
                   f"{why} without CUDA_DEVICE_MAX_CONNECTIONS=1 in the job environment"
                   f"{_release_note(release)}: {text}; export it before srun (setting it from "
                   "Python after CUDA starts has no effect)", severity=sev, related=related,
                   fixes=fixes)


# ---- SB606 ------------------------------------------------------------------------------
RANK_VARS = ("RANK", "WORLD_SIZE")


def _sets_rank_vars(job, step) -> bool:
    """Whether something visible gives the step's tasks ``RANK`` and ``WORLD_SIZE``: the task's
    own command string, a batch-shell export (SB301 judges its value), or the step's
    ``--export`` list."""
    inner = {a.name for s in step.task_scripts for a in s.assignments}
    inner |= {a.name for c in step.task_commands for a in c.assignments}  # RANK=… python …
    outer = {a.name for a in job.script.assignments if a.exported or job.exported(a.name)}
    _, listed = step.exports()
    return all(v in inner or v in outer or v in listed for v in RANK_VARS)


@rule("SB606", "srun-native-without-ranks", Severity.ERROR,
      "an srun-native Megatron-LM step whose tasks get no RANK/WORLD_SIZE: each is a 1-rank world")
def srun_native_without_ranks(job):
    """Megatron-LM reads ``RANK`` and ``WORLD_SIZE`` from the environment with defaults 0 and 1
    (arguments.py parse_args, core_v0.16.0 l.113-114) and does not derive them from
    ``SLURM_PROCID``/``SLURM_NTASKS``; Megatron-Bridge does (megatron/core/_rank_utils.py).
    Inside a pyxis container enroot's ``50-slurm-pytorch.sh`` hook sets them when the site
    enables it."""
    for run in framework_runs(job):
        if not run.srun_native or run.kind != "megatron-lm" or run.world.size in (None, 1):
            continue
        step = next((s for s in job.steps if s.srun.start == run.world.start), None)
        if step is None or step.hidden or _sets_rank_vars(job, step):
            continue
        related = [Related(step.srun.start, step.srun.end,
                           f"this step starts {run.world.size} tasks ({run.world.basis})")]
        if step.container:
            yield finding(
                "SB606", run.anchor.start, run.anchor.end,
                f"nothing in the script gives these {run.world.size} tasks RANK and WORLD_SIZE; "
                "inside the pyxis container enroot's PyTorch hook sets them from SLURM_PROCID "
                "and SLURM_NTASKS when the site enables it (hooks/extra/50-slurm-pytorch.sh); "
                "without it Megatron-LM defaults to RANK=0, WORLD_SIZE=1 in every task",
                severity=Severity.INFO, related=related)
            continue
        n = run.world.size
        yield finding(
            "SB606", run.anchor.start, run.anchor.end,
            f"srun starts {n} tasks of Megatron-LM but none gets RANK or WORLD_SIZE: Megatron-LM "
            "reads them from the environment (defaults 0 and 1) and does not derive them from "
            "SLURM_PROCID/SLURM_NTASKS, so each task is a world of one (every rank 0: "
            f"`world_size (1) is not divisible by …` with TP or PP > 1, or {n} copies training "
            "alone); set them per task (srun bash -c 'RANK=$SLURM_PROCID "
            "WORLD_SIZE=$SLURM_NTASKS LOCAL_RANK=$SLURM_LOCALID python …') or launch with "
            "torchrun", related=related)
