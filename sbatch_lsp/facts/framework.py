"""Framework configuration: the parallel sizes and model shape a Megatron-style run asks for,
read from its command line, each value with the span the user edits, and the world size the
launch gives it.

Read from: Megatron-LM flags (``--tensor-model-parallel-size 2``, ``--num-layers=32``; the
underscore spellings Megatron-Bridge's performance scripts use), NeMo/Hydra and Megatron-Bridge
overrides (``model.tensor_model_parallel_size=2``, ``trainer.num_nodes=2``,
``train.global_batch_size=128``, with ``+``/``++`` prefixes), in literal words, ``TRAIN_CMD``-style
strings run by ``bash -c`` (the shell model expands them), unquoted ``$ARGS`` strings and
``"${ARGS[@]}"`` arrays assigned in the batch script (``ARGS+=(…)`` appends included), and
``$TP``-style values assigned a literal.

World size (the number of ranks Megatron's ``torch.distributed.get_world_size()`` returns):
framework flags that size the world themselves (slime/OpenRLHF ``--actor-num-nodes`` ×
``--actor-num-gpus-per-node``, NeMo ``trainer.num_nodes`` × ``trainer.devices``); else torchrun's
``--nnodes`` × ``--nproc-per-node`` (defaults 1 and 1, torch/distributed/run.py); else an
srun-native step's task count; else unknown (None), and rules then say nothing or an info.

The Megatron-Core release (:func:`megatron_core_release`) comes from the profile's
``megatron-core`` key, a ``megatron-core==X.Y`` pin in the script, or a container tag whose
release notes name it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from weakref import WeakKeyDictionary

from ..job import Step
from ..launchers import Launch, find_launch
from ..shell.model import Assignment, Script, Word

#: Megatron-LM flags (megatron/training/arguments.py) -> key; the value kind is in KINDS
MEGATRON_FLAGS = {
    "tensor-model-parallel-size": "tp", "pipeline-model-parallel-size": "pp",
    "context-parallel-size": "cp", "expert-model-parallel-size": "ep",
    "expert-tensor-parallel-size": "etp",
    "num-layers-per-virtual-pipeline-stage": "vpp_layers",
    "num-virtual-stages-per-pipeline-rank": "vpp",
    "virtual-pipeline-model-parallel-size": "vpp",
    "sequence-parallel": "sp", "num-attention-heads": "heads", "num-query-groups": "query_groups",
    "group-query-attention": "gqa", "num-experts": "experts", "num-layers": "layers",
    "micro-batch-size": "mbs", "global-batch-size": "gbs", "rampup-batch-size": "rampup",
    "decrease-batch-size-if-needed": "decrease_gbs",
    "decoder-first-pipeline-num-layers": "first_stage_layers",
    "decoder-last-pipeline-num-layers": "last_stage_layers",
    "pipeline-model-parallel-layout": "pp_layout", "hybrid-override-pattern": "hybrid",
    "account-for-embedding-in-pipeline-split": "embedding_in_split",
    "account-for-loss-in-pipeline-split": "loss_in_split",
    "use-torch-fsdp2": "fsdp", "use-megatron-fsdp": "fsdp", "use-custom-fsdp": "fsdp",
    "overlap-moe-expert-parallel-comm": "moe_overlap",
    "no-async-tensor-model-parallel-allreduce": "no_async_allreduce",
    "hidden-size": "hidden", "moe-ffn-hidden-size": "moe_ffn_hidden",
    "moe-router-topk": "topk", "ffn-hidden-size": "ffn_hidden", "swiglu": "swiglu",
    "moe-layer-freq": "moe_layer_freq", "kv-channels": "kv_channels",
    # accepted with a deprecation note 2021-08 to 23.04; Megatron-LM exits on it from 23.04
    "checkpoint-activations": "checkpoint_activations",
    # Megatron-DeepSpeed (bigscience-workshop/Megatron-DeepSpeed): DeepSpeed's pipeline engine
    "deepspeed": "deepspeed",
    # slime / OpenRLHF: the actor's world, sized by the framework (Ray), not by srun
    "actor-num-nodes": "world_nodes", "actor-num-gpus-per-node": "world_gpus_per_node",
}
#: NeMo 1.x (Hydra), NeMo 2 / Megatron-Bridge (OmegaConf) override keys -> key
OVERRIDE_KEYS = {
    "tensor_model_parallel_size": "tp", "pipeline_model_parallel_size": "pp",
    "context_parallel_size": "cp", "expert_model_parallel_size": "ep",
    "expert_tensor_parallel_size": "etp",
    "virtual_pipeline_model_parallel_size": "vpp", "sequence_parallel": "sp",
    "num_attention_heads": "heads", "num_query_groups": "query_groups",
    "num_moe_experts": "experts", "num_layers": "layers", "micro_batch_size": "mbs",
    "global_batch_size": "gbs", "rampup_batch_size": "rampup", "hidden_size": "hidden",
    "moe_ffn_hidden_size": "moe_ffn_hidden", "moe_router_topk": "topk",
    "ffn_hidden_size": "ffn_hidden", "gated_linear_unit": "swiglu",
    "moe_layer_freq": "moe_layer_freq", "kv_channels": "kv_channels",
}
#: override prefixes: NeMo 1 ``model.``, Bridge ``model.``/``train.``; ``trainer.`` sizes the world
OVERRIDE = re.compile(r"^\+{0,2}(model|train|trainer)\.([a-z_]+)=(.*)$")
TRAINER_KEYS = {"num_nodes": "world_nodes", "devices": "world_gpus_per_node"}
#: keys whose value is a flag (present = on) on a Megatron-LM command line
FLAG_KEYS = {"sp", "gqa", "decrease_gbs", "embedding_in_split", "loss_in_split", "fsdp",
             "moe_overlap", "no_async_allreduce", "deepspeed", "checkpoint_activations",
             "swiglu"}
#: keys whose value is text, not a number
TEXT_KEYS = {"pp_layout", "hybrid", "rampup", "moe_layer_freq"}
TRUE = {"true", "1", "yes", "on"}
MEGATRON_LM_ENTRY = re.compile(r"(^|/)pretrain_\w+\.py$")
BRIDGE_ENTRY = re.compile(r"run_recipe\.py$|megatron[./_-]bridge|scripts/performance/|"
                          r"(^|/)recipes/.*\.py$", re.IGNORECASE)
NEMO_ENTRY = re.compile(r"megatron_\w+_(pretraining|finetuning|sft)\.py$|(^|/)nemo(/|_)",
                        re.IGNORECASE)
JOB_NODES = {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"}
JOB_GPUS = {"SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE"}
REF = re.compile(r'^"?\$\{?([A-Za-z_][A-Za-z0-9_]*)(\[[@*]\])?\}?"?$')
MAX_DEPTH = 4
#: the groups an override (:data:`OVERRIDE`: ``GROUP.key=value``) starts with
OVERRIDE_GROUPS = ("model.", "train.", "trainer.")
#: a text each entry point regex needs (:data:`BRIDGE_ENTRY`: run_recipe.py, megatron.bridge,
#: scripts/performance/, recipes/; :data:`NEMO_ENTRY`: megatron_…_sft.py, nemo/), in lower case
#: to search a lowered ASCII text (ENTRY_TEXT_FOLDED: any text, case-folded as they fold it)
ENTRY_TEXT = re.compile(r"megatron|nemo|recipe|scripts/performance/")
ENTRY_TEXT_FOLDED = re.compile(ENTRY_TEXT.pattern, re.IGNORECASE)
#: the texts whose :func:`_telling` and :func:`_may_tell` answers are kept (each: the words and
#: assignment values of a few thousand lines; the language server asks them again per edit)
TEXTS_KEPT = 8192
#: settings only Megatron's parallel layout has: a program with none of them and no Megatron,
#: NeMo or Bridge entry point is not read as a Megatron run
SIGNATURE = {"tp", "pp", "cp", "ep", "etp", "vpp", "vpp_layers"}
WORLD_KEYS = {"world_nodes", "world_gpus_per_node"}


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class Setting:
    """One framework setting as written: ``key`` (``tp``, ``heads``, …), its ``value`` (an int,
    True for a flag, or the text), the span of the value the user edits (``start``, ``end``:
    character offsets; the flag itself for a flag) and ``spelled``, the flag or key as written."""

    key: str
    value: int | bool | str
    start: int
    end: int
    spelled: str
    #: the span of the flag word when the value's span is elsewhere (``--num-attention-heads
    #: $NHEADS``: the value points at ``NHEADS=32``), else None
    flag: tuple[int, int] | None = None


@dataclass(frozen=True)
class World:
    """The world size of a run: ``size`` ranks (None when unknown), ``basis`` saying where the
    number comes from (for messages), and the span of that evidence."""

    size: int | None
    basis: str
    start: int
    end: int


@dataclass
class FrameworkRun:
    """A Megatron-style run: where it starts (``anchor``, the entry point word), which framework
    reads the settings (``kind``: ``megatron-lm``, ``bridge``, ``nemo``,
    ``megatron-deepspeed`` (``--deepspeed``: DeepSpeed's pipeline engine splits the layers and
    sizes the batch) or ``megatron-core`` for other programs that pass Megatron's flags on), its
    settings, its world, and the srun step that starts it (``step``)."""

    kind: str
    anchor: Word
    settings: dict[str, Setting]
    world: World
    launch: Launch | None = None
    srun_native: bool = False
    words: list[Word] = field(default_factory=list)
    #: the srun step that starts the run, or None for the batch shell and ray entrypoints
    step: Step | None = None

    def get(self, key: str) -> Setting | None:
        """The setting ``key``, or None when the command line does not give it."""
        return self.settings.get(key)

    @property
    def defaults_known(self) -> bool:
        """Whether an absent setting has Megatron-LM's argparse default (1 for the parallel
        sizes). NeMo and Megatron-Bridge recipes and YAML configs bring their own defaults,
        which the script does not show."""
        return self.kind not in ("bridge", "nemo")

    def size(self, key: str, default: int | None = 1) -> int | None:
        """An integer setting's value; when absent, ``default`` (Megatron's defaults are 1 for
        the parallel sizes) if :attr:`defaults_known`, else None; None when present but not a
        literal number."""
        s = self.settings.get(key)
        if s is None:
            return default if self.defaults_known else None
        return s.value if isinstance(s.value, int) and not isinstance(s.value, bool) else None

    def on(self, key: str) -> bool:
        """Whether a flag setting is on."""
        s = self.settings.get(key)
        return s is not None and s.value is True


@dataclass(frozen=True)
class Release:
    """A Megatron-Core release as (major, minor), where it was read (``basis``), and the span
    of that evidence in the script (None for the profile)."""

    version: tuple[int, int]
    basis: str
    span: tuple[int, int] | None = None

    @property
    def text(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


# ---- words: expanding what the batch shell gives a command line -------------------------
def _literal_words(value: Word) -> list[Word] | None:
    """The words of an assignment's literal value, each a Word whose span is its place in the
    source: an array ``(--tp 2 "--pp" 4)`` is read as the shell reads its elements, a string
    ``"--tp 2 --pp 4"`` as word splitting reads its value (on blanks, quotes kept literal)."""
    text, base = value.text, value.start
    if len(text) != value.end - value.start:
        return None  # not a verbatim slice of the source: the spans would be wrong
    if text.startswith("("):
        if "$(" in text or "`" in text:
            return None  # a command substitution inside: its words are not known
        # comments inside an array literal are not elements
        text = re.sub(r"(^|(?<=[\s(]))#[^\n]*", lambda m: " " * len(m.group(0)), text)
        pattern = r"""(?:[^\s()"'\\]|\\.|"[^"]*"|'[^']*')+"""
        unquote = True
    else:
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            text, base = text[1:-1], base + 1
        pattern, unquote = r"[^\s\\]+", False
    out = []
    for m in re.finditer(pattern, text):
        raw = m.group(0)
        val = re.sub(r"""["']""", "", raw) if unquote else raw
        literal = "$" not in val and "`" not in val
        out.append(Word(raw, base + m.start(), base + m.end(), val if literal else None))
    return out


def expand(words: list[Word], script: Script, depth: int = 0) -> list[Word]:
    """``words`` with each bare ``$NAME``/``"${NAME[@]}"`` replaced by the words of the value the
    batch script assigns it (the last assignment before the word, then its ``+=`` appends),
    recursively up to a few levels. A word whose value is not known stays as it is."""
    out: list[Word] = []
    for w in words:
        m = REF.match(w.text) if w.value is None else None
        if m is None or depth >= MAX_DEPTH:
            out.append(w)
            continue
        parts = _value_words(m.group(1), w.start, script)
        if parts is None:
            out.append(w)
            continue
        out.extend(expand(parts, script, depth + 1))
    return out


def _value_words(name: str, before: int, script: Script) -> list[Word] | None:
    """The words of ``name``'s value at offset ``before``: its last assignment's, then those
    of the ``+=`` appends after it that end before the point; None when one is not literal."""
    base = script.value_at(name, before)
    if base is None or base.value is None or not script.certain(base, before):
        return None
    found = _literal_words(base.value)
    for a in _appends(script, name):
        if found is not None and a.value is not None and base.start < a.start and \
                a.end <= before:
            more = _literal_words(a.value)
            found = None if more is None else found + more
    return found


#: script -> (assignment count when built, name -> its ``+=`` assignments with a value, in the
#: script's order): one pass over the assignments instead of one per word read
_APPENDS: WeakKeyDictionary[Script, tuple[int, dict[str, list[Assignment]]]] = \
    WeakKeyDictionary()


def _appends(script: Script, name: str) -> list[Assignment]:
    """The ``NAME+=value`` assignments of ``script`` to ``name``, in the script's order."""
    count, index = _APPENDS.get(script, (-1, {}))
    if count != len(script.assignments):
        index = {}
        for a in script.assignments:
            if a.append and a.value is not None:
                index.setdefault(a.name, []).append(a)
        _APPENDS[script] = (len(script.assignments), index)
    return index.get(name, [])


def _int(w: Word | None, script: Script, job_nodes: int | None = None,
         gpus_per_node: int | None = None, depth: int = 0) -> int | None:
    """The integer a word holds: a literal, ``$SLURM_JOB_NUM_NODES``/``$SLURM_NNODES`` (the
    job's node count), ``$SLURM_GPUS_ON_NODE`` (its GPUs per node), or a variable assigned a
    literal; None otherwise."""
    if w is None:
        return None
    if len(w.early) == 1 and w.early[0].name and w.value == f"_{w.early[0].name}_":
        # the batch shell put an unknown `$NAME` into a command string: it stands for NAME
        name = w.early[0].name
        return job_nodes if name in JOB_NODES else gpus_per_node if name in JOB_GPUS else None
    if w.value is not None:
        v = w.value.strip()
        return int(v) if v.isdigit() else None
    m = REF.match(w.text)
    if m is None or depth >= MAX_DEPTH:
        return None
    name = m.group(1)
    if name in JOB_NODES:
        return job_nodes
    if name in JOB_GPUS:
        return gpus_per_node
    parts = _value_words(name, w.start, script)
    if not parts or len(parts) != 1:
        return None
    return _int(parts[0], script, job_nodes, gpus_per_node, depth + 1)


# ---- settings ---------------------------------------------------------------------------
def read_settings(words: list[Word], script: Script) -> dict[str, Setting]:
    """The framework settings on a command line (already expanded), first spelling wins as
    argparse's last-wins would not matter for a repeated flag with the same value; a later
    repetition replaces an earlier one, as argparse and Hydra do."""
    out: dict[str, Setting] = {}
    i = 0
    while i < len(words):
        w = words[i]
        v = w.value if w.value is not None else w.text
        i += 1
        verbatim = len(w.text) == w.end - w.start  # offsets into the text are source offsets
        m = OVERRIDE.match(v)
        if m:
            group, name, val = m.groups()
            key = TRAINER_KEYS.get(name) if group == "trainer" else OVERRIDE_KEYS.get(name)
            if key is None:
                continue
            cut = len(v) - len(val)
            # `model.tensor_model_parallel_size="$TP"`: present, its value read through $TP
            vword = w.tail(cut, val if w.value is not None else None) \
                if verbatim and (w.value is None or len(w.text) == len(v)) else w
            setting = _setting(key, val, vword, v[:cut - 1].lstrip("+"), script, hydra=True)
            if setting is not None:
                out[key] = setting
            continue
        if not v.startswith("--"):
            continue
        name, eq, inline = v[2:].partition("=")
        key = MEGATRON_FLAGS.get(name) or MEGATRON_FLAGS.get(name.replace("_", "-"))
        if key is None:
            continue
        spelled = "--" + name
        if key in FLAG_KEYS:
            out[key] = Setting(key, True, w.start, w.end, spelled)
            continue
        if eq:
            vword = w.tail(len(w.text) - len(inline), inline) if w.value is not None and \
                verbatim and len(w.text) == len(v) else w
        elif i < len(words):
            vword = words[i]
            i += 1
            if key == "rampup":  # nargs='*': start, increment, samples
                while i < len(words) and not (words[i].value or "-").startswith("-"):
                    i += 1
        else:
            continue
        setting = _setting(key, vword.value if vword.value is not None else vword.text, vword,
                           spelled, script)
        if setting is not None:
            out[key] = setting if (setting.start, setting.end) == (w.start, w.end) else \
                replace(setting, flag=(w.start, w.end))
    return out


def _setting(key: str, text: str, w: Word, spelled: str, script: Script,
             hydra: bool = False) -> Setting | None:
    """A Setting for ``key`` from its value text; integers resolve through ``$VAR``."""
    if key in FLAG_KEYS:  # a Hydra boolean
        return Setting(key, text.strip().lower() in TRUE, w.start, w.end, spelled)
    if key in TEXT_KEYS:
        if hydra and text.strip().lower() in ("null", "none", "[]", ""):
            return None
        return Setting(key, text, w.start, w.end, spelled)
    n = _int(w, script) if w.value is None or w.value == text else \
        (int(text) if text.strip().isdigit() else None)
    if n is None:
        # the value is known to be there but not what it is: keep the text
        return Setting(key, text, w.start, w.end, spelled)
    src = w
    if w.value is None:  # `--tp $TP`: point at the literal the user edits, TP=2's 2
        m = REF.match(w.text)
        parts = _value_words(m.group(1), w.start, script) if m else None
        if parts and len(parts) == 1 and parts[0].value is not None:
            src = parts[0]
    return Setting(key, n, src.start, src.end, spelled)


def _kind(words: list[Word], settings: dict[str, Setting]) -> str:
    """Which framework reads the settings."""
    texts = [w.value or "" for w in words[:4]]
    if "deepspeed" in settings:
        return "megatron-deepspeed"
    if any(BRIDGE_ENTRY.search(t) for t in texts):  # before Megatron-LM: recipes/pretrain_*.py
        return "bridge"
    if any(MEGATRON_LM_ENTRY.search(t) for t in texts):
        return "megatron-lm"
    if any(NEMO_ENTRY.search(t) for t in texts):
        return "nemo"
    if any(s.spelled.startswith(("model.", "train.")) for s in settings.values()):
        return "nemo"
    return "megatron-core"


# ---- world ------------------------------------------------------------------------------
def _world(job, run_words: list[Word], settings: dict[str, Setting], launch: Launch | None,
           step) -> tuple[World, bool]:
    """The run's world and whether it is an srun-native launch."""
    nodes_s, gpus_s = settings.get("world_nodes"), settings.get("world_gpus_per_node")
    anchor = run_words[0] if run_words else None
    if nodes_s is not None and gpus_s is not None:
        if isinstance(nodes_s.value, int) and isinstance(gpus_s.value, int):
            return World(nodes_s.value * gpus_s.value,
                         f"{nodes_s.spelled} {nodes_s.value} × {gpus_s.spelled} {gpus_s.value}",
                         nodes_s.start, gpus_s.end), False
        return World(None, f"{nodes_s.spelled} × {gpus_s.spelled} (not literal)",
                     nodes_s.start, gpus_s.end), False
    script = job.script
    job_nodes = (step.nodes if step is not None and step.nodes else job.nodes.value)
    gpn = job.gpus_per_node.value or job.profile.gpus_per_node
    if launch is not None and launch.kind == "torchrun":
        nn_w, np_w = launch.args.get("nnodes"), launch.args.get("nproc-per-node")
        if launch.hidden:
            return World(None, f"{launch.title}'s options include {launch.hidden[0].text}, "
                         "whose value is not known", launch.anchor.start, launch.anchor.end), False
        nn = 1 if nn_w is None else _int(nn_w, script, job_nodes, gpn)
        if nn is None and nn_w is not None and nn_w.value and ":" in nn_w.value:
            nn = None  # an elastic range: the world is decided at run time
        np_text = np_w.value if np_w is not None else "1"
        npn = gpn if np_text == "gpu" else 1 if np_w is None else _int(np_w, script, job_nodes,
                                                                       gpn)
        nn_txt = nn_w.text if nn_w is not None else "1 (default)"
        np_txt = np_w.text if np_w is not None else "1 (default)"
        basis = f"{launch.title} --nnodes {nn_txt} × --nproc-per-node {np_txt}"
        size = nn * npn if nn is not None and npn is not None else None
        return World(size, basis, launch.anchor.start, launch.anchor.end), False
    if launch is not None and launch.kind not in ("python",):
        return World(None, f"{launch.title} sizes the world", launch.anchor.start,
                     launch.anchor.end), False
    if step is not None:
        tpn, nodes = step.tasks_per_node, step.nodes
        if tpn is not None and nodes:
            return World(tpn * nodes, f"srun starts {nodes} node(s) × {tpn} task(s) "
                         f"({step.layout_note})", step.srun.start, step.srun.end), True
        note = step.layout_note or "no node count"
        return World(None, f"the srun step's task count is not known ({note})",
                     step.srun.start, step.srun.end), True
    a = anchor.start if anchor else 0
    return World(None, "started by the batch shell without a launcher", a,
                 anchor.end if anchor else 0), False


# ---- runs -------------------------------------------------------------------------------
def framework_runs(job) -> list[FrameworkRun]:
    """Every Megatron-style run of the job (computed once per job): launch sites whose program
    carries framework settings, srun steps whose argv does when the job model found no
    launcher in them (``srun python pretrain_gpt.py $ARGS``), and ``ray job submit -- CMD``
    entrypoints."""
    return job.derived(_framework_runs)


def _framework_runs(job) -> list[FrameworkRun]:
    runs: list[FrameworkRun] = []
    covered: set[int] = set()
    candidates = []
    for site in job.launches:
        if site.step is not None and site.command is site.step.command:
            argv = site.step.argv
        else:
            argv = site.command.words
        candidates.append((argv, site.step))
        if site.step is not None:
            covered.add(id(site.step))
    candidates += [(s.argv, s) for s in job.steps if id(s) not in covered]
    candidates += [(argv, None) for argv in _ray_jobs(job)]
    seen: set[tuple[int, int]] = set()
    telling = {a.name for a in job.script.assignments
               if a.value is not None and _may_tell(a.value.text)}
    for argv, step in candidates:
        if not _may_run(argv, telling):
            continue  # (most commands: the run test below would fail, found without expanding)
        words = expand(argv, job.script)
        launch = find_launch(words)
        program = launch.program if launch is not None and launch.kind == "torchrun" else \
            (launch.words[1:] if launch is not None and launch.kind == "python" else words)
        settings = _settled(read_settings(program, job.script), job.script,
                            step.srun.start if step is not None else
                            program[0].start if program else 0)
        kind = _kind(program, settings)
        if kind in ("megatron-core", "megatron-deepspeed") and not settings.keys() & SIGNATURE:
            continue  # batch-size or shape flags alone do not make a program Megatron
        if kind == "megatron-lm" and not settings.keys() - WORLD_KEYS:
            continue  # a `pretrain_*.py` name alone does not make a program Megatron-LM
        anchor = next((w for w in program if w.value and w.value.endswith(".py")),
                      program[0] if program else argv[0])
        if (anchor.start, anchor.end) in seen:
            continue
        seen.add((anchor.start, anchor.end))
        world, native = _world(job, program, settings, launch, step)
        runs.append(FrameworkRun(kind, anchor, settings, world, launch, native, program, step))
    return runs


def _may_run(argv: list[Word], telling: set[str]) -> bool:
    """Whether a command with words ``argv`` may be a framework run: a word is
    :func:`_telling`, or a bare reference to a variable in ``telling`` (whose value may give
    such a word). A loop: a generator's resume per word of every step cost more than the
    test."""
    for w in argv:
        if w.value is not None:
            if _telling(w.value):
                return True
        elif _telling(w.text) or _reference(w.text) in telling:
            return True
    return False


@lru_cache(maxsize=TEXTS_KEPT)
def _telling(text: str) -> bool:
    """Whether a word whose value (its text when it has none) is ``text`` may make a command
    a framework run: a setting :func:`read_settings` reads (a ``--flag`` Megatron knows, an
    override) or a word an entry point regex matches (:func:`_kind`). False only when it
    cannot: a command whose expanded words all answer False is no run (its settings are empty
    and its kind is neither ``bridge`` nor ``nemo``)."""
    if text.startswith("--"):
        name = text[2:].partition("=")[0]
        if name in MEGATRON_FLAGS or name.replace("_", "-") in MEGATRON_FLAGS:
            return True
    return ("=" in text and text.lstrip("+").startswith(OVERRIDE_GROUPS)) or \
        _names_entry(text)


@lru_cache(maxsize=TEXTS_KEPT)
def _may_tell(text: str) -> bool:
    """Whether an assignment's value written ``text`` may give :func:`expand` a word for which
    :func:`_telling` is True. Each word :func:`_literal_words` reads is a slice of ``text``
    with quotes dropped, or keeps a ``$``/`````: so False only when ``text`` without quotes
    holds no ``--``, no override (a group and a ``=``) and no entry point's text, and no
    expansion to follow further."""
    if "$" in text or "`" in text:
        return True
    bare = text.replace('"', "").replace("'", "")
    return "--" in bare or ("=" in bare and any(g in bare for g in OVERRIDE_GROUPS)) or \
        _names_entry(bare)


def _names_entry(text: str) -> bool:
    """Whether :data:`ENTRY_TEXT_FOLDED` matches in ``text`` (an ASCII text: lowered, without
    case folding, which is faster)."""
    if text.isascii():
        return ENTRY_TEXT.search(text.lower()) is not None
    return ENTRY_TEXT_FOLDED.search(text) is not None


@lru_cache(maxsize=TEXTS_KEPT)
def _reference(text: str) -> str | None:
    """The name a bare ``$NAME``/``"${NAME[@]}"`` word refers to (:data:`REF`), else None."""
    m = REF.match(text)
    return m.group(1) if m else None


def _settled(settings: dict[str, Setting], script: Script, use: int) -> dict[str, Setting]:
    """``settings`` with each integer whose text sits in a branch or a loop body that ends
    before ``use`` (the batch shell put one branch's value into a string the run reads:
    ``if …; then NLAYERS=32; elif …; then NLAYERS=64; fi; ARGS="--num-layers $NLAYERS"``)
    turned into its text: the value the run gets is one of several (Script.settled)."""
    return {k: replace(s, value=str(s.value)) if isinstance(s.value, int) and
            not isinstance(s.value, bool) and not script.settled(s.start, use) else s
            for k, s in settings.items()}


def _ray_jobs(job) -> list[list[Word]]:
    """The entrypoints of ``ray job submit … -- CMD`` commands (slime, OpenRLHF, verl start
    their trainers so; the framework then sizes the world from its own flags)."""
    out = []
    for cmd in job.script.walk():
        if not cmd.words or cmd.words[0].value != "ray":
            continue  # (most commands: the first word tells)
        vals = [w.value for w in cmd.words[:3]]
        if cmd.in_substitution or vals[:3] != ["ray", "job", "submit"]:
            continue
        k = next((i for i, w in enumerate(cmd.words) if w.value == "--"), None)
        if k is not None and k + 1 < len(cmd.words):
            out.append(cmd.words[k + 1:])
    return out


# ---- the Megatron-Core release ----------------------------------------------------------
#: NeMo Framework container tags -> the Megatron-Core release they ship ("Software Component
#: Versions", docs.nvidia.com/nemo-framework/user-guide/24.09/softwarecomponentversions.html)
NEMO_CONTAINERS = {"24.05": (0, 7), "24.07": (0, 8), "24.09": (0, 9)}
#: NeMo-RL container tags (github.com/NVIDIA-NeMo/RL/releases/tag/v0.5.0: "Megatron-Core
#: 0.16.0.rc0")
NEMO_RL_CONTAINERS = {"v0.5.0": (0, 16)}
PIN = re.compile(r"megatron[-_]core\s*==\s*(\d+)\.(\d+)")
IMAGE = re.compile(r"(?:^|[/#])(nemo|nemo-rl):([\w.]+)$")


def parse_release(text: str) -> tuple[int, int] | None:
    """``"0.13"`` or ``"0.13.1"`` -> (0, 13); None for anything else."""
    m = re.fullmatch(r"\s*v?(\d+)\.(\d+)(?:\.\d+)?(?:rc\d+)?\s*", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def megatron_core_release(job) -> Release | None:
    """The Megatron-Core release the job runs, when something says it: the profile's
    ``megatron-core`` key, then a ``megatron-core==X.Y`` pin in the script, then the tag of a
    NeMo or NeMo-RL container whose release notes name the release. None otherwise."""
    return job.derived(_release)


def _release(job) -> Release | None:
    prof = getattr(job.profile, "megatron_core", None)
    if prof:
        v = parse_release(prof)
        if v is not None:
            return Release(v, f"the profile's megatron-core = \"{prof}\"")
    for cmd in job.script.walk():
        for w in cmd.words:
            text = w.value or w.text
            m = PIN.search(text) if "megatron" in text else None  # (the regex's own start)
            if m:
                return Release((int(m.group(1)), int(m.group(2))),
                               f"the script installs megatron-core=={m.group(1)}.{m.group(2)}",
                               (w.start, w.end))
    images = [(u.value or "", (u.start, u.end)) for u in job.directives.options
              if u.name == "container-image"]
    images += [(w.value or "", (w.start, w.end)) for s in job.steps
               for name, w in s.options.items() if name == "container-image"]
    for text, span in images:
        m = IMAGE.search(text.strip("\"'"))
        if not m:
            continue
        table = NEMO_CONTAINERS if m.group(1) == "nemo" else NEMO_RL_CONTAINERS
        v = table.get(m.group(2))
        if v is not None:
            return Release(v, f"the {m.group(1)}:{m.group(2)} container ships Megatron-Core "
                           f"{v[0]}.{v[1]}", span)
    return None
