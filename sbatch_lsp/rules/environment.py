"""SB4xx: the environment tasks run in (caches, CUDA_DEVICE_MAX_CONNECTIONS).

Facts: pyxis mounts only what ``--container-mounts`` names, and with
``--no-container-mount-home`` the container's ``$HOME`` is its own (slurm-facts.md §7.2);
CUDA_DEVICE_MAX_CONNECTIONS must be in the process environment before CUDA initialises, and
Megatron asserts it is 1 for TP/CP>1 before Blackwell and not 1 under FSDP or UCC (§9).
"""
from __future__ import annotations

import re
from typing import Any

from . import Edit, Fix, Related, Severity, finding, insert_line_before, rule

NODE_LOCAL = re.compile(r"^(/tmp|/dev/shm|/var/tmp|/run|/local|/scratch/local|/raid|/root|"
                        r"\$\{?TMPDIR\}?|\$\{?SLURM_TMPDIR\}?)(/|$)")
KNOWN_SHARED = re.compile(r"^(/lustre|/gpfs|/fsx|/nfs|/project|/projects|/shared|/mnt/lustre|"
                          r"/mnt/shared|/p/|/pscratch|/scratch)(/|$)")
#: Hugging Face downloads: its libraries and their flags, not any word "dataset"
HF = re.compile(r"qlora|\blora\b|peft|transformers|huggingface|hf_hub|from_pretrained|"
                r"model_name_or_path|--hf[-_]|--dataset_name|load_dataset|\btrl[ .](sft|dpo|grpo|"
                r"scripts)|(import|from) datasets",
                re.IGNORECASE)
NEMO = re.compile(r"(run_recipe\.py|megatron[-_.]bridge|\bnemo\b).*(sft|finetun|packed|peft|"
                  r"lora|import|dataset)", re.IGNORECASE)
UV_SYNC = re.compile(r"\buv (sync|pip install)\b|\buv run\b(?!.*--no-sync)")

#: (variables, default location, evidence in the task commands, the word to report on,
#: shared data (correctness) or just speed)
CACHES = [
    (("HF_HOME", "HF_DATASETS_CACHE", "HF_HUB_CACHE", "TRANSFORMERS_CACHE"),
     "~/.cache/huggingface", HF, HF, True),
    (("NEMO_HOME",), "~/.cache/nemo", NEMO,
     re.compile(r"run_recipe\.py|megatron[-_.]bridge|\bnemo\b", re.IGNORECASE), True),
    (("UV_CACHE_DIR",), "~/.cache/uv", UV_SYNC, re.compile(r"^uv$"), False),
]
JIT = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "CUDA_CACHE_PATH")


def _value_text(job, a) -> str | None:
    if a.value is None:
        return None
    if a.value.value is not None:
        return a.value.value
    return a.value.text.strip('"')


def _mounts(job, step) -> list[str] | None:
    """Container destinations of a step's ``--container-mounts`` (None when not literal)."""
    w = step.options.get("container-mounts")
    if w is None:
        return []
    text = w.value
    if text is None:
        refs = [e.name for e in w.expansions if e.name]
        if len(refs) == 1:
            a = [x for x in job.batch_assignments(refs[0]) if x.start < step.command.start]
            text = a[-1].value.value if a and a[-1].value is not None else None
    if text is None:
        return None
    dests = []
    for item in text.split(","):
        parts = item.split(":")
        dests.append(parts[1] if len(parts) > 1 else parts[0])
    return dests


def _under(path: str, folders) -> bool:
    """Whether ``path`` is one of ``folders`` or inside one."""
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in folders)


def _shared(job, path: str) -> bool | None:
    prefixes = job.profile.shared_prefixes
    if prefixes:
        return _under(path, prefixes)
    if KNOWN_SHARED.match(path):
        return True
    return None


def _task_text(step) -> str:
    return " ".join(" ".join(w.value or w.text for w in c.words) for c in step.task_commands)


@rule("SB401", "node-local-cache", Severity.ERROR,
      "a multi-node job whose data caches are node- or container-local, or unset while used")
def node_local_cache(job):
    """What node 0 writes into a cache must be visible to the other nodes."""
    if not job.multi_node():
        return
    for variables, default, evidence, anchor, correctness in CACHES:
        for step in job.steps:
            if step.nodes == 1 or not evidence.search(_task_text(step)):
                continue  # a one-node step (`srun -N1 uv sync`) fills one cache once
            ev_word = next((w for c in step.task_commands for w in c.words
                            if anchor.search(w.value or w.text)), step.srun)
            related = [Related(step.srun.start, step.srun.end,
                               f"this step runs on {step.nodes or job.nodes.value} nodes")]
            sets = [a for a in job.script.assignments if a.name in variables
                    and a.start < step.command.start]
            inner = [a for s in step.task_scripts for a in s.assignments if a.name in variables]
            if inner:
                continue
            var = variables[0]
            if sets:
                a = sets[-1]
                path = _value_text(job, a) or ""
                if NODE_LOCAL.match(path):
                    yield finding(
                        "SB401", a.start, a.end,
                        f"{a.name} points to node-local storage ({path}) in a "
                        f"{job.nodes.value}-node job: what one node writes there, the others "
                        "never see" + ("" if correctness else " (each node fills its own cache)"),
                        severity=Severity.ERROR if correctness else Severity.WARNING,
                        related=related)
                    break
                mounts = _mounts(job, step) if step.container else []
                if step.container and mounts is not None and _shared(job, path) and \
                        not _under(path, mounts):
                    yield finding(
                        "SB401", a.start, a.end,
                        f"{a.name}={path} is on shared storage, but the container of this step "
                        "does not mount it: inside the container the path is container-local; "
                        "add it to --container-mounts",
                        severity=Severity.ERROR if correctness else Severity.WARNING,
                        related=related)
                    break
                continue
            # `#SBATCH --no-container-mount-home` may or may not reach later srun containers
            # (it depends on the pyxis version and site; case F010 and SB111): then the cache
            # may be container-local, which is worth a warning, not an error
            directive = next((u for u in job.directives.options
                              if u.typed == "--no-container-mount-home"), None)
            on_step = step.option_words.get("no-container-mount-home")
            if step.container and (on_step or directive):
                sev = Severity.ERROR if correctness and on_step else Severity.WARNING
                local = (f"it defaults to {default.replace('~', '/root')}, which is "
                         "container-local")
                where = (f"inside the container (--no-container-mount-home) {local}" if on_step
                         else "if `#SBATCH --no-container-mount-home` reaches this step's "
                         f"containers (it depends on the pyxis version and site), {local}")
                flag = on_step or directive
                assert flag is not None  # one of them, as the branch says
                related.append(Related(flag.start, flag.end,
                                       "the container does not see your home directory"))
            elif step.container:
                continue  # home is mounted: same as the host's default
            else:
                sev = Severity.WARNING
                where = (f"it defaults to {default}, which is shared between nodes only if your "
                         "home directory is")
            what = ("what node 0 downloads or prepares there is invisible to the other nodes"
                    if correctness else "every node builds its own copy (slow, and it can fill "
                    "the local disk)")
            yield finding(
                "SB401", ev_word.start, ev_word.end,
                f"{var} is not set in this {job.nodes.value}-node job: {where}; {what}; export "
                f"{var} to a path on shared storage before srun",
                severity=sev, related=related,
                fixes=[f for f in [_export_cache(job, step, var)] if f is not None])
            break


def _cache_base(job, step) -> str | None:
    """A directory known to be shared (and mounted into the step's container), for a new cache.

    First the parent of another cache the script already puts on shared storage
    (``HF_HOME=/lustre/proj/cache/huggingface`` -> ``/lustre/proj/cache``), then the profile's
    first ``shared-prefixes`` entry. With neither, no fix: a made-up path would turn the warning
    into a job that fails at run time. A path the container does not mount is container-local
    (slurm-facts.md §7.2), so it does not count."""
    mounts = _mounts(job, step) if step.container else []
    if mounts is None:
        return None

    def visible(path: str) -> bool:
        return not step.container or _under(path, mounts)
    names = {v for vs, *_ in CACHES for v in vs}
    for a in job.script.assignments:
        if a.name not in names or a.start > step.command.start:
            continue
        path = a.value.value if a.value is not None else None
        if path and path.startswith("/") and "/" in path.rstrip("/")[1:] and \
                _shared(job, path) and visible(path):
            return path.rstrip("/").rsplit("/", 1)[0]
    prefixes = job.profile.shared_prefixes
    if prefixes and visible(prefixes[0]):
        return prefixes[0].rstrip("/") + "/$USER/cache"
    return None


def _export_cache(job, step, var) -> Fix | None:
    base = _cache_base(job, step)
    if base is None:
        return None
    sub = {"HF_HOME": "huggingface", "NEMO_HOME": "nemo", "UV_CACHE_DIR": "uv"}.get(var, var.lower())
    return Fix(f"export {var} on shared storage",
               (insert_line_before(job, step.command, f"export {var}={base}/{sub}"),), safe=False)


@rule("SB402", "shared-jit-cache", Severity.INFO,
      "JIT caches (Triton, Inductor) on shared storage: lock contention across ranks")
def shared_jit_cache(job):
    """Compile caches are written by every rank; on a parallel file system their locks
    serialise start-up (cases S402, N006)."""
    for a in job.script.assignments:
        if a.name not in JIT or a.value is None:
            continue
        path = _value_text(job, a) or ""
        if _shared(job, path):
            yield finding("SB402", a.start, a.end,
                          f"{a.name} is on shared storage ({path}): every rank compiles into it "
                          "and file locks on a parallel file system slow start-up; node-local "
                          "storage (/tmp/...-$SLURM_JOB_ID) is usually faster")


FSDP_MEGATRON = re.compile(r"--use-torch-fsdp2|--use-megatron-fsdp|use_megatron_fsdp=true",
                           re.IGNORECASE)
#: FSDP switched on by a flag or a value (``--fsdp``, ``--enable_fsdp``, ``--strategy fsdp2``,
#: ``full_shard``), not a path or a message that mentions it
FSDP_OTHER = re.compile(r"^--[\w.-]*fsdp[\w.-]*(=.*)?$|^fsdp2?$|^full_shard$|fsdp_config",
                        re.IGNORECASE)
UCC = re.compile(r"comm-backend[= ]ucc|\bucc\b", re.IGNORECASE)
MOE_OVERLAP = re.compile(r"overlap-moe-expert-parallel-comm|deepep|hybridep", re.IGNORECASE)
ARCH = [("blackwell", re.compile(r"b200|b300|gb200|gb300|blackwell|vr200", re.I)),
        ("hopper", re.compile(r"h100|h200|h800|gh200|hopper", re.I)),
        ("ampere", re.compile(r"a100|a800|a40\b|a10g?\b|a6000|rtx\s*30|ampere", re.I)),
        ("ada", re.compile(r"l40s?\b|l4\b|rtx\s*40|ada", re.I)),
        ("turing", re.compile(r"t4\b|rtx\s*20|turing", re.I)),
        ("volta", re.compile(r"v100|volta", re.I))]
CPU_PARTITION = re.compile(r"cpu", re.IGNORECASE)


def _arch(job) -> tuple[str | None, Any]:
    d = job.directives
    part = d.get("partition")
    if part and part.value in job.profile.gpu_arch:
        return job.profile.gpu_arch[part.value], part
    for name in ("partition", "gpus-per-node", "gres", "gpus", "constraint"):
        use = d.get(name)
        if use is None or name == "partition" and CPU_PARTITION.search(use.value or ""):
            continue  # `hopper-cpu` is a CPU partition
        for arch, rx in ARCH:
            if rx.search(use.value or ""):
                return arch, use
    return None, None


@rule("SB403", "cuda-device-max-connections", Severity.ERROR,
      "CUDA_DEVICE_MAX_CONNECTIONS wrong for the parallelism: FSDP/UCC vs TP/CP before Blackwell")
def cuda_device_max_connections(job):
    """Megatron-LM validate_args / MCore asserts (slurm-facts.md §9)."""
    cmds = [c for c in job.script.walk() if c.words]
    words = [w for c in cmds for w in c.words]
    setting = [a for a in job.script.assignments if a.name == "CUDA_DEVICE_MAX_CONNECTIONS"]
    setting += [a for s in job.steps for sc in s.task_scripts for a in sc.assignments
                if a.name == "CUDA_DEVICE_MAX_CONNECTIONS"]
    value = None
    if setting:
        value = _value_text(job, setting[-1])
    fsdp_m = next((w for w in words if FSDP_MEGATRON.search(w.value or w.text)), None)
    fsdp_o = next((w for w in words if FSDP_OTHER.search(w.value or w.text)), None)
    ucc = next((w for w in words if UCC.search(w.value or w.text)), None)
    moe = next((w for w in words if MOE_OVERLAP.search(w.value or w.text)), None)
    if value == "1" and (fsdp_m or fsdp_o or ucc):
        ev = fsdp_m or ucc or fsdp_o
        assert ev is not None  # the branch is taken for one of them
        a = setting[-1]
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
        yield finding("SB403", a.start, a.end,
                      f"CUDA_DEVICE_MAX_CONNECTIONS=1 with FSDP/UCC: {why}; unset it or use a "
                      "value above 1", severity=sev,
                      related=[Related(ev.start, ev.end, "FSDP/UCC is used here")], fixes=fixes)
        return
    tp_word, tp = None, 0
    for c in cmds:
        for k, w in enumerate(c.words):
            v = w.value or w.text
            m = re.fullmatch(r"--(tensor-model-parallel-size|context-parallel-size)(=(\d+))?", v)
            n = None
            if m and m.group(3):
                n = int(m.group(3))
            elif m and k + 1 < len(c.words) and (c.words[k + 1].value or "").isdigit():
                n = int(c.words[k + 1].value)
            else:
                m2 = re.fullmatch(r"(?:model\.)?(tensor_model_parallel_size|context_parallel_size)"
                                  r"=(\d+)", v)
                n = int(m2.group(2)) if m2 else None
            if n and n > tp:
                tp, tp_word = n, w
    arch, arch_use = _arch(job)
    # Megatron-DeepSpeed forks never check the variable unless sequence parallelism is on
    deepspeed = any(w.value == "--deepspeed" for w in words) and not any(
        w.value == "--sequence-parallel" for w in words)
    if tp > 1 and not fsdp_m and not fsdp_o and value != "1" and arch != "blackwell" and \
            not moe and not deepspeed:
        mlm = any(re.search(r"pretrain_\w+\.py", w.value or w.text) for w in words)
        known_pre = arch is not None
        sev = Severity.ERROR if (mlm and known_pre) else Severity.WARNING
        why = ("Megatron-LM asserts at start-up: \"Using tensor model parallelism or context "
               "parallelism require setting the environment variable CUDA_DEVICE_MAX_CONNECTIONS "
               "to 1\"" if mlm else "Megatron-Core then cannot overlap TP communication with "
               "compute")
        if arch is None:
            why += " (the GPU type is not known: on Blackwell this is not needed)"
        related = [Related(arch_use.start, arch_use.end, f"{arch} GPUs")] if arch_use else []
        fixes = []
        top = next((s.command for s in job.steps if s.command.script is job.script), None)
        if top is not None:
            fixes.append(Fix("export CUDA_DEVICE_MAX_CONNECTIONS=1 before the training step",
                             (insert_line_before(job, top,
                                                 "export CUDA_DEVICE_MAX_CONNECTIONS=1"),),
                             safe=False))
        assert tp_word is not None  # tp > 1 was read from it
        yield finding("SB403", tp_word.start, tp_word.end,
                      f"tensor/context parallelism of {tp} without CUDA_DEVICE_MAX_CONNECTIONS=1 "
                      f"in the job environment: {why}; export it before srun (setting it from "
                      "Python after CUDA starts has no effect)",
                      severity=sev, related=related, fixes=fixes)
        return
    if value == "1" and (arch == "blackwell" or moe):
        a = setting[-1]
        yield finding("SB403", a.start, a.end,
                      "CUDA_DEVICE_MAX_CONNECTIONS=1 "
                      + ("on Blackwell GPUs" if arch == "blackwell" else "with MoE a2a overlap")
                      + ": launchers usually use 32 here, as 1 serialises kernels; info only, "
                      "because some NVIDIA recipes keep 1 (measure both)",
                      severity=Severity.INFO)
