"""SB4xx: the environment tasks run in (data and JIT caches; SB403 lives in rules/framework.py).

Facts: pyxis mounts only what ``--container-mounts`` names, and with
``--no-container-mount-home`` the container's ``$HOME`` is its own (slurm-facts.md §7.2).
"""
from __future__ import annotations

import re

from . import Fix, Related, Severity, finding, insert_line_before, rule
from .megatron_env import home_cache_unmounted

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


#: a value that names a local file, not a Hub repository id (``org/name``)
LOCAL_PATH = re.compile(r"^[\"']?(/|\./|\.\./|~)")
#: ``${NAME:?message}`` / ``${NAME?message}``: bash stops the script when NAME is unset
REQUIRED = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?\?")


def _hub_evidence(step) -> bool:
    """Whether the step's tasks load something from the Hugging Face Hub (or through its
    ``datasets`` cache): a word of theirs names its libraries or flags. Model and dataset flags
    whose values are local paths are not: when the data is a local file too
    (``--dataset_name=/demo/train.json`` next to ``--model_path=/demo/…``), nothing says the
    Hub or its cache is used. A local model alone still leaves the data to the framework."""
    local_data = matched = False
    for c in step.task_commands:
        words = c.words
        for k, w in enumerate(words):
            text = w.value or w.text
            if not HF.search(text):
                continue
            matched = True
            if text.startswith("--"):
                value = text.split("=", 1)[1] if "=" in text else (
                    (words[k + 1].value or words[k + 1].text) if k + 1 < len(words) else "")
                if value and LOCAL_PATH.match(value):
                    local_data = local_data or "data" in text.lower()
                    continue
            return True
    return matched and not local_data


def _task_text(step) -> str:
    return " ".join(" ".join(w.value or w.text for w in c.words) for c in step.task_commands)


@rule("SB401", "node-local-cache", Severity.ERROR,
      "a multi-node job whose data caches are node- or container-local, or unset while used", fix="unsafe",
      rests_on=("nodes",))
def node_local_cache(job):
    """What node 0 writes into a cache must be visible to the other nodes."""
    if not job.multi_node():
        return
    for variables, default, evidence, anchor, correctness in CACHES:
        for step in job.steps:
            used = _hub_evidence(step) if evidence is HF else evidence.search(_task_text(step))
            if step.nodes == 1 or not used:
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
                home = home_cache_unmounted(job, step, path, mounts)  # megatron_env.py
                if home is not None and mounts is not None and not _under(path, mounts):
                    no_home, own = home
                    related.append(Related(no_home.start, no_home.end,
                                           "the container does not see your home directory"))
                    yield finding(
                        "SB401", a.start, a.end,
                        f"{a.name}={path} is in your home directory, which "
                        + ("this step's container does not mount (--no-container-mount-home)"
                           if own else "the containers do not mount if `#SBATCH "
                           "--no-container-mount-home` reaches this step (pyxis version, site)")
                        + ": inside the container the path is container-local on each node; "
                        "put it on shared storage that --container-mounts maps",
                        severity=Severity.ERROR if correctness and own else Severity.WARNING,
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
            if _required(job, var, step.command.start):
                # `: "${HF_HOME:?…}"`: bash exits unless the caller set it (bash(1) "Parameter
                # Expansion"), so it comes from the submitting environment: not known here
                sev, where = Severity.INFO, (f"the script requires {var} from the environment "
                                             f"it is submitted from; unless that is set, {where}")
            yield finding(
                "SB401", ev_word.start, ev_word.end,
                f"{var} is not set in this {job.nodes.value}-node job: {where}; {what}; export "
                f"{var} to a path on shared storage before srun",
                severity=sev, related=related,
                fixes=[f for f in [_export_cache(job, step, var)] if f is not None])
            break


def _required(job, var: str, before: int) -> bool:
    """Whether the batch shell expands ``${var:?…}`` (or ``${var?…}``) before offset ``before``:
    bash stops the script there when ``var`` is unset (or empty), so past it ``var`` is set."""
    return any(e.name == var and e.start < before and REQUIRED.match(e.text)
               for c in job.script.commands for w in c.all_words() for e in w.expansions)


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
      "JIT caches (Triton, Inductor) on shared storage: lock contention across ranks",
      rests_on=("nodes",))
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
