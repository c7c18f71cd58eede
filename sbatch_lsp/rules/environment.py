"""SB4xx: the environment tasks run in (data and JIT caches; SB403 lives in rules/framework.py).

The rules read facts/caches.py: which cache each step's tasks use, the value reaching them (or
the library's default under ``$HOME``), and what storage that is for the step's nodes (pyxis
mounts only what ``--container-mounts`` names, and with ``--no-container-mount-home`` the
container's ``$HOME`` is its own: NVIDIA/pyxis README, ``args.c``).
"""
from __future__ import annotations

from ..facts.caches import (
    CACHES,
    CacheUse,
    HomeView,
    Storage,
    cache_uses,
    home_shared,
    jit_settings,
    setting,
    shared_path,
)
from ..facts.nodelocal import Made, NodeLocalUse, node_local_uses
from ..facts.provenance import told_note
from ..launchers import PYTHON
from ..shell.model import Word
from . import Fix, Related, Severity, finding, insert_line_before, rule


@rule("SB401", "node-local-cache", Severity.ERROR,
      "a multi-node job whose data caches or software environments are node- or container-local, "
      "or whose caches are unset while used", fix="unsafe", rests_on=("nodes",))
def node_local_cache(job):
    """What node 0 writes into a cache, or prepares on its own disks, must be visible to the
    other nodes."""
    for prepared in node_local_uses(job):
        yield _prepared_finding(job, prepared)
    if not job.multi_node():
        return
    done: set[str] = set()
    for use in cache_uses(job):
        if use.kind.short in done or use.nodes == 1 or use.set_in_task:
            continue  # a one-node step (`srun -N1 uv sync`) fills one cache once
        f = _finding(job, use)
        if f is not None:
            done.add(use.kind.short)  # one finding per cache: the first step that shows it
            yield f


def _finding(job, use: CacheUse):
    """The SB401 finding for one step's use of one cache, or None when the cache is shared."""
    kind, s, nodes = use.kind, use.setting, job.nodes.value
    correctness = kind.correctness
    related = [Related(use.step.srun.start, use.step.srun.end,
                       f"this step runs on {use.nodes} nodes")]
    bad = Severity.ERROR if correctness else Severity.WARNING
    home_ev = use.home_evidence
    if s is not None:
        if s.path is None:
            return None  # the submitting environment's value: not in the script
        if use.storage is Storage.NODE_LOCAL:
            return finding(
                "SB401", s.start, s.end,
                f"{s.name} points to node-local storage ({s.path}) in a {nodes}-node job: what "
                "one node writes there, the others never see"
                + ("" if correctness else " (each node fills its own cache)")
                + "; point it to shared storage that every node (and container) sees",
                severity=bad, related=related)
        if use.storage is Storage.UNMOUNTED:
            return finding(
                "SB401", s.start, s.end,
                f"{s.name}={s.path} is on shared storage, but the container of this step does "
                "not mount it: inside the container the path is container-local; add it to "
                "--container-mounts", severity=bad, related=related)
        if use.storage is Storage.HOME_HIDDEN and home_ev is not None:
            own = use.home is HomeView.HIDDEN
            related.append(Related(home_ev.start, home_ev.end,
                                   "the container does not see your home directory"))
            return finding(
                "SB401", s.start, s.end,
                f"{s.name}={s.path} is in your home directory, which "
                + ("this step's container does not mount (--no-container-mount-home)"
                   if own else "the containers do not mount if `#SBATCH "
                   "--no-container-mount-home` reaches this step (pyxis version, site)")
                + ": inside the container the path is container-local on each node; "
                "put it on shared storage that --container-mounts maps",
                severity=Severity.ERROR if correctness and own else Severity.WARNING,
                related=related)
        return None
    var = kind.variables[0]
    default = "~/" + kind.default
    if use.storage is Storage.HOME_HIDDEN and home_ev is not None:
        own = use.home is HomeView.HIDDEN
        sev = Severity.ERROR if correctness and own else Severity.WARNING
        local = f"it defaults to /root/{kind.default}, which is container-local"
        where = (f"inside the container (--no-container-mount-home) {local}" if own
                 else "if `#SBATCH --no-container-mount-home` reaches this step's "
                 f"containers (it depends on the pyxis version and site), {local}")
        related.append(Related(home_ev.start, home_ev.end,
                               "the container does not see your home directory"))
    elif home_shared(job, use.step) is not None:
        return None  # the tasks run from home on every node: they see it, and it is shared
    elif use.storage is Storage.NODE_LOCAL:
        sev = bad
        where = (f"it defaults to {default}, and the profile says the nodes do not share home "
                 "directories (home-shared = false)")
    elif use.storage is Storage.HOME:
        sev = Severity.WARNING if correctness else Severity.INFO
        where = (f"it defaults to {default}, which is shared between nodes only if your "
                 "home directory is")
    elif use.home is HomeView.SITE:
        sev = Severity.INFO
        where = (f"it defaults to {default} inside the container, which is the host's home "
                 "only if the site's enroot mounts it (ENROOT_MOUNT_HOME; "
                 "--container-mount-home makes it explicit)")
    elif use.home is HomeView.UNKNOWN and isinstance(home_ev, Word):
        sev = Severity.INFO
        where = (f"it defaults to {default}; srun's options in `{home_ev.text}` are not "
                 "visible here, so whether a container hides your home directory is unknown")
    else:
        return None
    what = ("what node 0 downloads or prepares there is invisible to the other nodes"
            if correctness else "every node builds its own copy (slow, and it can fill "
            "the local disk)")
    if not correctness and use.storage is Storage.HOME:
        # a speed-only cache at its default under a home directory the script does not say is
        # per node: uv locks its cache, so shared or per node it works (info, set above)
        what = ("if home is per node, every node builds its own copy: only a matter of speed "
                "(uv locks its cache, so a shared and a per-node cache both work), and whether "
                "home is shared is not in the script")
    told = ""
    if use.told is not None and sev > Severity.INFO:
        # the script tells the user to set it before sbatch, which passes the submitting
        # environment on (--export=ALL): the finding rests on the user not doing so
        sev = Severity.INFO
        told = told_note(use.told, job.source.line_of(use.told.start) + 1)
        related.append(Related(use.told.start, use.told.end,
                               f"this comment says to set {use.told.name}"))
    return finding(
        "SB401", use.evidence.start, use.evidence.end,
        f"{var} is not set in this {nodes}-node job: {where}; {what}; export "
        f"{var} to a path on shared storage before srun" + told,
        severity=sev, related=related,
        fixes=[f for f in [_export_cache(job, use)] if f is not None])


#: what the batch shell did to a path, as a message says it
DID = {Made.ENVIRONMENT: "builds", Made.DATA: "fills", Made.UNNAMED: "puts files in",
       Made.DIRECTORY: "creates"}


def _prepared_finding(job, use: NodeLocalUse):
    """A step on other nodes needs what the batch shell prepared on node-local storage of the
    first node only (facts/nodelocal.py). Error when the step certainly needs it (it names the
    path, or runs a program through the environment the batch shell activated); warning when
    what it names is an empty directory (the program may create it) or may be among files whose
    names the script does not give; info when the node count, or what an earlier step on those
    nodes runs, is not in the script."""
    p, step, word = use.prepared, use.step, use.word
    made_at = job.source.line_of(p.command.start) + 1
    how = f"with `{p.tool}` at line {made_at}"
    related = [Related(p.word.start, p.word.end,
                       f"the batch shell {DID[p.made]} {p.path} here, on the first node only "
                       "(the batch script runs once, on node 0)")]
    if use.activation is not None:
        act = use.activation
        related.append(Related(act.word.start, act.word.end,
                               f"this puts {act.bin} first on PATH, which every step inherits"))
        what = (f"`{word.value}` is found through {act.bin} on PATH, in the environment the "
                f"batch shell builds {how}")
        symptom = (f"another `{word.value}` further down PATH runs instead, without the "
                   "environment's packages: ModuleNotFoundError" if PYTHON.match(word.value or "")
                   else f"`execve(): {word.value}: No such file or directory`")
    elif p.made is Made.UNNAMED:
        what = (f"this step uses {use.path}, in {p.path}, where the batch shell puts files "
                f"{how}")
        symptom = "No such file or directory"
    else:
        inside = "" if use.path == p.path else f" (in {p.path})"
        what = f"this step uses {use.path}{inside}, which the batch shell {DID[p.made]} {how}"
        symptom = "No such file or directory"
    sev = Severity.ERROR if p.made >= Made.DATA else Severity.WARNING
    nodes = use.nodes
    if nodes is not None:
        span = f"on the other {nodes - 1} node(s) of this {nodes}-node step"
        related.append(Related(step.step.srun.start, step.step.srun.end,
                               f"this step runs on {nodes} nodes"))
    else:
        sev = Severity.INFO
        span = ("if this step runs on more than one node (the script does not say how many), "
                "on the others")
    why = ""
    if p.made is Made.DIRECTORY:
        why = " (unless the program creates the directory itself)"
    elif p.made is Made.UNNAMED:
        why = " (if it is among the files put there)"
    if use.unread is not None and sev > Severity.INFO:
        sev = Severity.INFO
        why += " (unless what an earlier step runs on every node, not read here, prepares it)"
        related.append(Related(use.unread.start, use.unread.end,
                               "this earlier step runs commands not read here"))
    start, end = _anchor(step.step, word)
    return finding(
        "SB401", start, end,
        f"{what}; the batch shell runs only on the first node: {span} it does not exist "
        f"({symptom}){why}; prepare it on every node with `srun --ntasks=$SLURM_NNODES "
        "--ntasks-per-node=1 …` before this step, or put it on shared storage",
        severity=sev, related=related)


def _anchor(step, word: Word) -> tuple[int, int]:
    """Where a finding on a step's word sits: the word, or when the batch shell spliced an
    earlier value into it (``bash -c "… $ENV/bin/x"`` after ``ENV=…``), so that it starts in
    that assignment, the word of the srun command that holds its end."""
    top = step.command.top()
    if word.early and not top.start <= word.start < top.end and top.start < word.end <= top.end:
        holder = next((w for w in top.words if w.start < word.end <= w.end), None)
        if holder is not None:
            return holder.start, holder.end
    return word.start, word.end


def _cache_base(job, use: CacheUse) -> str | None:
    """A directory known to be shared (and mounted into the step's container), for a new cache.

    First the parent of another cache the script already puts on shared storage
    (``HF_HOME=/lustre/proj/cache/huggingface`` -> ``/lustre/proj/cache``), then the profile's
    first ``shared-prefixes`` entry. With neither, no fix: a made-up path would turn the warning
    into a job that fails at run time. A path the container does not mount is container-local
    (pyxis README, ``--container-mounts``), so it does not count."""
    if use.mounts is None:
        return None
    mounts = use.mounts

    def visible(path: str) -> bool:
        return use.container is None or any(
            path == m or path.startswith(m.rstrip("/") + "/") for m in mounts)
    for kind in CACHES:
        other = setting(job, use.step, kind)
        path = other.path if other is not None else None
        if path and path.startswith("/") and "/" in path.rstrip("/")[1:] and \
                shared_path(job, path) and visible(path):
            return path.rstrip("/").rsplit("/", 1)[0]
    prefixes = job.profile.shared_prefixes
    if prefixes and visible(prefixes[0]):
        return prefixes[0].rstrip("/") + "/$USER/cache"
    return None


def _export_cache(job, use: CacheUse) -> Fix | None:
    base = _cache_base(job, use)
    if base is None:
        return None
    var = use.kind.variables[0]
    return Fix(f"export {var} on shared storage",
               (insert_line_before(job, use.step.command, f"export {var}={base}/{use.kind.short}"),),
               safe=False)


@rule("SB402", "shared-jit-cache", Severity.INFO,
      "JIT caches (Triton, Inductor) on shared storage: lock contention across ranks",
      rests_on=("nodes",))
def shared_jit_cache(job):
    """Compile caches are written by every rank; on a parallel file system their locks
    serialise start-up (cases S402, N006)."""
    for s in jit_settings(job):
        if s.path is not None and shared_path(job, s.path):
            yield finding("SB402", s.start, s.end,
                          f"{s.name} is on shared storage ({s.path}): every rank compiles into it "
                          "and file locks on a parallel file system slow start-up; node-local "
                          "storage (/tmp/...-$SLURM_JOB_ID) is usually faster")
