"""SB404–SB409: pyxis/enroot containers (what an image value names, where a step starts, what
it can see).

Facts (NVIDIA/pyxis v0.9.0–v0.24.0, NVIDIA/enroot 3.x and 4.0.0; see facts/containers.py):
pyxis treats an image value as a squashfs file only when it starts with ``.`` or ``/`` and
otherwise runs ``enroot import docker://VALUE``; enroot before 4.0.0 reads a registry only
before a ``#`` (``docker://[USER@][REGISTRY#]IMAGE[:TAG]``, ``src/docker.sh``) and sends
``nvcr.io/nvidia/pytorch`` to Docker Hub unless the credentials file names the host; enroot
4.0.0 (commit f29a45c, "Improve handling of docker-style URI") reads a first component with a
``.`` or ``:`` as the registry.
"""
from __future__ import annotations

import re

from ..facts.containers import Container, Text, containers, directive_image, under
from ..facts.wrappers import base, unwrap
from ..options import _pyxis_key, version_key
from ..shell.model import Word
from . import Edit, Fix, Related, Severity, finding, rule
from ..facts.caches import CACHE_VARIABLES, KNOWN_SHARED

SQUASHFS = re.compile(r"\.(sqsh|sqfs|squashfs)$", re.IGNORECASE)
#: a registry host as enroot 4.0 recognises it: a first component with "." or ":", or localhost
REGISTRY = re.compile(r"^(?:[^@/#]+@)?([^/#@]*[.:][^/#@]*|localhost)/")
#: programs whose first operand is a file they read (python x.py, bash run.sh)
FILE_READERS = re.compile(r"^(python[\d.]*|bash|sh|perl|Rscript|julia|torchrun|deepspeed|"
                          r"accelerate|uv|conda)$")
SCRIPT_FILE = re.compile(r"\.(py|sh|bash|yaml|yml|json|toml|cfg|txt)$")
#: the job's directory as scripts name it in a mount source
JOB_DIR = re.compile(r"^(\$\{?PWD\}?|\$\(pwd\)|`pwd`|\$\{?SLURM_SUBMIT_DIR\}?|\.|\./)$")
#: variables SB401/SB402 judge (caches): not this module's
#: text the shell still transforms, or a template placeholder: an item not spelled out
OPAQUE = re.compile(r"[\"'`<>{}$]")
CACHE_VARS = CACHE_VARIABLES


def _enroot_before_4(job) -> bool | None:
    """Whether the profile's enroot predates 4.0.0 (None: unknown)."""
    if job.profile.enroot is None:
        return None
    return version_key(job.profile.enroot) < (4, 0)


def _images(job) -> list[tuple[Text, bool, Container | None]]:
    """Every literal image value: (text, whether it sits in a directive, its container)."""
    out: list[tuple[Text, bool, Container | None]] = []
    d = directive_image(job)
    if d is not None:
        out.append((d, True, None))
    for c in containers(job):
        if c.image is not None:
            out.append((c.image, False, c))
    return out


@rule("SB404", "container-image-not-a-file", Severity.ERROR,
      "a squashfs image named without a leading `./` or `/`: pyxis pulls it from Docker Hub",
      fix="safe")
def container_image_not_a_file(job):
    """pyxis reads the value as a file only when it starts with ``.`` or ``/``
    (``pyxis_slurmstepd.c``, ``strspn(image, "./") > 0``, v0.8.0–v0.24.0); ``foo.sqsh``,
    ``img/foo.sqsh`` and an unexpanded ``~/foo.sqsh`` become ``docker://…`` imports."""
    for text, directive, _ in _images(job):
        v = text.value
        if v.startswith((".", "/")) or not (SQUASHFS.search(v) or v.startswith("~")):
            continue
        if v.startswith("~"):
            why = ("`~` is not expanded here (the shell expands it only at the start of a "
                   "word or after `=` in an assignment, and sbatch never)")
            new = None if directive else "$HOME" + v[1:]
            way = "write the absolute path (`$HOME/" + v[2:] + "` on an srun line)"
        else:
            why = "pyxis reads an image as a file only when it starts with `./` or `/`"
            new = "./" + v
            way = f"write `./{v}` (relative to the step's working directory) or an absolute path"
        fixes = []
        if new is not None and text.in_place and not directive:
            fixes.append(Fix(f"name the file as {new}", (Edit(text.start, text.end, new),)))
        yield finding(
            "SB404", text.start, text.end,
            f"--container-image={v} is not read as a file: {why}, so pyxis runs `enroot import "
            f"docker://{v}` and the step fails (\"registry-1.docker.io/v2/library/… returned "
            f"error code: 401 Unauthorized\"); {way}", fixes=fixes)


@rule("SB405", "container-registry-without-hash", Severity.WARNING,
      "an image from a registry without `#` (`nvcr.io/nvidia/…`): Docker Hub on enroot < 4.0",
      fix="safe")
def container_registry_without_hash(job):
    """enroot before 4.0.0 takes the registry only from ``REGISTRY#IMAGE`` (``src/docker.sh``
    ``docker::import``) and otherwise asks Docker Hub for ``nvcr.io/nvidia/pytorch``, unless
    the enroot credentials file has a ``machine nvcr.io`` line; 4.0.0 reads the host itself.
    Warning with ``profile.enroot`` below 4.0, info when the release is unknown."""
    old = _enroot_before_4(job)
    if old is False:
        return
    for text, directive, _ in _images(job):
        v = text.value
        m = REGISTRY.match(v)
        if m is None or "#" in v or v.startswith(("docker://", ".", "/")):
            continue
        host = m.group(1)
        fixed = v[:m.end() - 1] + "#" + v[m.end():]
        # no fix in a directive: SB111 reports that line (the container belongs on srun)
        fixes = [Fix(f"mark the registry with # ({fixed})", (Edit(text.start, text.end, fixed),))] \
            if text.in_place and not directive else []
        release = ("on this site's enroot " + str(job.profile.enroot) if old else
                   "on enroot before 4.0 (profile.enroot is not set)")
        yield finding(
            "SB405", text.start, text.end,
            f"{release}, `{v}` is looked up on Docker Hub as an image named "
            f"`{v.split(':')[0] if host.count(':') == 0 else v}`, not on {host} "
            "(\"URL …registry-1.docker.io/v2/" + host + "/… returned error code: 401 "
            "Unauthorized\"), unless the enroot credentials file names " + host +
            f"; write `{fixed}`", severity=None if old else Severity.INFO, fixes=fixes)


def _task_words(c: Container) -> list[Word]:
    return [w for cmd in c.step.task_commands for w in cmd.words]


def _relative_file(c: Container) -> Word | None:
    """The first relative file a step's tasks read as a program or script operand
    (``python train.py``, ``bash scripts/run.sh``, ``./run.sh``), or None; a ``cd`` in the task
    before it means the task chose its own directory."""
    for cmd in c.step.task_commands:
        words = unwrap(cmd.words)  # timeout, nohup, env, numactl, … (the one wrapper table)
        if not words or words[0].value is None:
            continue
        name = words[0].value
        if name in ("cd", "pushd"):
            return None
        if name.startswith("./") or (SCRIPT_FILE.search(name) and "/" in name and
                                     not name.startswith("/")):
            return words[0]
        if not FILE_READERS.match(name.rsplit("/", 1)[-1]):
            continue
        for w in words[1:]:
            v = w.value
            if v is None or v.startswith(("-", "/", "~")) or "=" in v:
                if v in ("-m", "-c"):
                    break  # a module or a command string: no file
                continue
            if SCRIPT_FILE.search(v):
                return w
    return None


def _job_dir_mount(c: Container):
    for m in c.mounts or []:
        if JOB_DIR.match(m.source):
            return m
    return None


@rule("SB406", "container-workdir-unset", Severity.WARNING,
      "a container step reads a relative file but sets no --container-workdir",
      fix="unsafe")
def container_workdir_unset(job):
    """Without ``--container-workdir`` pyxis starts the task in the image's ``WORKDIR`` (or
    ``/``), not in the job's directory (``pyxis_slurmstepd.c``: ``chdir`` to the workdir, else
    to the container's own cwd), so ``python train.py`` looks for ``/workspace/train.py``.
    A warning when the step mounts the job's directory at the same path (the script expects
    that path to be the working directory); an info otherwise (the image may hold the file)."""
    for c in containers(job):
        if c.workdir_given:
            continue
        w = _relative_file(c)
        if w is None:
            continue
        mount = _job_dir_mount(c)
        same = mount is not None and mount.target == mount.source
        image = c.step.option_words.get("container-image") or c.step.srun
        related = [Related(image.start, image.end, "the container starts here, in the image's "
                           "WORKDIR")]
        fixes = []
        value = c.step.options.get("container-image")
        if mount is not None and mount.target.startswith(("/", "$")) and value is not None:
            at = max(value.end, image.end)  # after `--container-image IMG` in either spelling
            target = f'"{mount.target}"' if "$" in mount.target else mount.target
            fixes.append(Fix(f"start the task in {mount.target}",
                             (Edit(at, at, f" --container-workdir={target}"),), safe=False))
        where = (f"the job's directory is mounted at {mount.target}, but " if mount else "")
        yield finding(
            "SB406", w.start, w.end,
            f"{where}this container step starts in the image's WORKDIR (or /), not in the job's "
            f"directory, so `{w.value}` is looked up there (\"No such file or directory\"); "
            "add --container-workdir=<the mounted job directory>" +
            ("" if same else " (unless the image's WORKDIR holds it)"),
            severity=None if same else Severity.INFO, related=related, fixes=fixes)


def _host_path(job, path: str) -> bool:
    """Whether ``path`` certainly lives on the host, not in an image: under the profile's
    ``shared-prefixes``, else under a well-known shared file system (/lustre, /gpfs, …)."""
    prefixes = job.profile.shared_prefixes
    if prefixes:
        return any(under(path, p) for p in prefixes)
    return KNOWN_SHARED.match(path) is not None


def _visible(c: Container, path: str) -> bool:
    """Whether a mount may cover ``path``: a literal target above it, or a target the script
    leaves to the shell (``$PWD``: it may be anything)."""
    return any("$" in m.target or (m.target.startswith("/") and under(path, m.target))
               for m in c.mounts or [])


PATH_IN_WORD = re.compile(r"(?:^|[=:,])(/[\w.+@%-][\w.+@%/-]*)")


@rule("SB407", "container-path-not-mounted", Severity.WARNING,
      "a host path a container step reads that no --container-mounts target covers")
def container_path_not_mounted(job):
    """A container sees only its image and what ``--container-mounts`` binds (plus the site's
    enroot mounts, ``/etc/enroot/mounts.d``): a host file system path in the step's command or
    in a variable it exports that no mount target covers is missing inside the container.
    Only host paths count (the profile's ``shared-prefixes``, else /lustre, /gpfs, …); caches
    are SB401's."""
    for c in containers(job):
        if c.mounts is None:
            continue
        seen: set[str] = set()
        for w in _task_words(c):
            if w.value is None:
                continue
            for m in PATH_IN_WORD.finditer(w.value):
                path = m.group(1).rstrip("/")
                if path in seen or not _host_path(job, path) or _visible(c, path):
                    continue
                seen.add(path)
                start = w.start + (w.text.find(m.group(1)) if m.group(1) in w.text else 0)
                end = start + len(m.group(1)) if m.group(1) in w.text else w.end
                yield _not_mounted(c, path, start, end)
        env = _exported_paths(job, c)
        for name, path, start, end in env:
            if path not in seen and _host_path(job, path) and not _visible(c, path):
                seen.add(path)
                yield _not_mounted(c, path, start, end, name)


def _exported_paths(job, c: Container):
    """(name, path, start, end) of exported batch-shell variables holding one absolute path
    that reach the step and that its tasks read."""
    from ..facts.steps import facts_of

    step = c.step
    sf = facts_of(job).of(step)
    if sf is None:
        return
    read = {e.name for cmd in step.task_commands for w in cmd.all_words() for e in w.expansions
            if e.name}
    for name, var in sf.env.items():
        if not var.exported or name in CACHE_VARS or var.value is None or name not in read:
            continue
        if var.value.startswith("/") and " " not in var.value:
            # point at the assignment that gives the value, not a later bare `export NAME`
            a = job.script.value_at(name, step.command.start)
            start, end = (a.start, a.end) if a is not None else (var.start, var.end)
            yield name, var.value.rstrip("/"), start, end


def _folder(path: str) -> str:
    """The directory to mount for ``path``: the path itself, or its parent for a file name."""
    head, _, tail = path.rpartition("/")
    return head if "." in tail and head else path


def _not_mounted(c: Container, path: str, start: int, end: int, name: str | None = None):
    step = c.step
    mw = step.option_words.get("container-mounts") or step.option_words.get(
        "container-image") or step.srun
    related = [Related(mw.start, mw.end, "the mounts of this container" if
                       "container-mounts" in step.option_words else "no --container-mounts")]
    what = f"{name}={path}" if name else path
    return finding(
        "SB407", start, end,
        f"{what} is a host path, but this container step does not mount it: inside the "
        "container it is missing (\"No such file or directory\") unless the site's enroot "
        f"configuration mounts it; mount it (or its directory) with --container-mounts "
        f"(`{_folder(path)}:{_folder(path)}`)",
        related=related)


def _pyxis_before(job, release: tuple[int, int, int]) -> bool | None:
    """Whether the profile's pyxis predates ``release`` (None: the release is unknown)."""
    pyxis = job.profile.pyxis
    if not isinstance(pyxis, str):
        return None
    return _pyxis_key(pyxis) < release


def _mount_problem(job, m) -> tuple[str, Severity | None] | None:
    """(message, severity or None for the default) of a mount pyxis accepts but that fails when
    the container starts: white space in a path before pyxis 0.24.0 (enroot split its mount
    entries at white space, NVIDIA/pyxis#133; 0.24.0 escapes them, commit aff5834): an info
    when the pyxis release is unknown; a target that is the container's root (`.`, `/`: the
    mount hides the image, pyxis#162)."""
    if any(c.isspace() for c in m.source + m.target):
        old = _pyxis_before(job, (0, 24, 0))
        if old is False:
            return None
        release = (f"pyxis {job.profile.pyxis}" if old else
                   "pyxis before 0.24.0 (profile.pyxis names no release)")
        message = (f"a path with white space: {release} writes mount entries unescaped and "
                   "enroot splits them at white space, so the mount fails (\"enroot-mount: failed "
                   "to mount: … No such file or directory\"); mount a path without a space (a "
                   "parent directory, or a symbolic link)")
        return message, None if old else Severity.INFO
    if m.target.rstrip("/") in ("", ".") and m.source != "umount":
        where = m.source if m.source.startswith("/") else "$PWD"
        message = (f"the target {m.target} is the container's root: the mount hides the image "
                   "(\"enroot-switchroot: failed to execute: /bin/sh: No such file or "
                   f"directory\"); mount it at a directory, e.g. `{where}:/workspace`")
        return message, None
    return None


@rule("SB408", "container-mount-not-a-path", Severity.ERROR,
      "a --container-mounts item pyxis or enroot refuses (`data:/data`, `~/x:/x`, a space, `.`)",
      fix="safe")
def container_mount_not_a_path(job):
    """pyxis accepts a mount source that starts with ``.`` or ``/`` (or is ``tmpfs`` or
    ``umount``) and a target that starts with ``.`` or ``/`` (``args.c add_mount``, v0.9.0 to
    v0.24.0); otherwise srun fails before the step starts. Paths with white space and a target
    that is the container's root fail when the container starts (:func:`_mount_problem`)."""
    for c in containers(job):
        for m in c.mounts or []:
            if OPAQUE.search(m.source + m.target):
                continue  # quoting, substitutions or a template placeholder: not spelled out
            src_ok = m.source.startswith((".", "/", "$")) or m.source in ("tmpfs", "umount")
            dst_ok = m.target.startswith((".", "/", "$"))
            if src_ok and dst_ok:
                problem = _mount_problem(job, m)
                if problem is not None:
                    yield finding("SB408", m.start, m.end, problem[0], severity=problem[1])
                continue
            side = m.source if not src_ok else m.target
            message = ("mount source must be a relative path, an absolute path, \"tmpfs\" or "
                       "\"umount\"" if not src_ok else
                       "mount target must be a relative path or an absolute path")
            tilde = side.startswith("~")
            hint = ("`~` is not expanded inside the option: use $HOME" if tilde else
                    f"a relative path must start with `./` (`./{side}`)")
            fixes = []
            if not src_ok and not tilde and m.end - m.start == len(
                    f"{m.source}:{m.target}" + (f":{m.flags}" if m.flags else "")) and \
                    m.target != m.source:
                fixes.append(Fix(f"name the source as ./{m.source}",
                                 (Edit(m.start, m.start, "./"),)))
            yield finding(
                "SB408", m.start, m.end,
                f"pyxis refuses this mount before the step starts (\"pyxis: {message}\"); "
                f"{hint}", fixes=fixes)


#: the job-environment variables pyxis does not hand to enroot (NVIDIA/pyxis
#: ``pyxis_slurmstepd.c`` ``enroot_deny_env``, v0.11.0 to v0.24.0; before 0.11 only an allow
#: list passed), as a tuple: SB409 looks them up in this fixed order, so when two of them
#: share a finding's start the one it names is the same in every run (a set's order changes with
#: the process's hash seed)
ENROOT_DENIED = (
    "ENROOT_LIBRARY_PATH", "ENROOT_SYSCONF_PATH", "ENROOT_RUNTIME_PATH", "ENROOT_CACHE_PATH",
    "ENROOT_DATA_PATH", "ENROOT_TEMP_PATH", "ENROOT_ZSTD_OPTIONS", "ENROOT_TRANSFER_RETRIES",
    "ENROOT_CONNECT_TIMEOUT", "ENROOT_MAX_CONNECTIONS", "ENROOT_ALLOW_HTTP")


def _runs_enroot(job) -> bool:
    """Whether the script runs ``enroot`` itself (in the batch shell or a step's tasks), which
    does read the ENROOT_* variables."""
    commands = list(job.script.walk()) + [c for st in job.steps for c in st.task_commands]
    return any(base(w[0]) == "enroot" for w in (unwrap(c.words) for c in commands) if w)


@rule("SB409", "enroot-setting-ignored", Severity.WARNING,
      "an ENROOT_* setting in a container step's environment that pyxis never hands to enroot")
def enroot_setting_ignored(job):
    """pyxis builds enroot's environment from the job's without ``ENROOT_DATA_PATH``,
    ``ENROOT_CACHE_PATH``, ``ENROOT_ALLOW_HTTP`` and the rest of ``enroot_deny_env``
    (``pyxis_slurmstepd.c``; "The goal was to have pyxis always use the admin defaults",
    pyxis#43): the import and the container use the site's ``enroot.conf`` instead."""
    found = list(_ignored_settings(job))
    if found and not _runs_enroot(job):  # (the whole-script scan only when there is one)
        yield from found


def _ignored_settings(job):
    from ..facts.steps import facts_of

    facts = facts_of(job)
    reported: set[int] = set()
    for c in containers(job):
        sf = facts.of(c.step)
        if sf is None:
            continue
        for name in ENROOT_DENIED:  # a lookup each: iterating the env evaluates every variable
            var = sf.env.get(name)
            if var is None or not var.exported:
                continue
            prefix = next((a for a in c.step.command.assignments if a.name == name), None)
            a = prefix or job.script.value_at(name, c.step.command.start)
            start, end = (a.start, a.end) if a is not None else (var.start, var.end)
            if start in reported:
                continue
            reported.add(start)
            image = c.step.option_words.get("container-image") or c.step.srun
            yield finding(
                "SB409", start, end,
                f"pyxis does not pass {name} to enroot (it drops the job's ENROOT_*_PATH, "
                "ENROOT_ALLOW_HTTP and similar settings), so this container step imports and "
                "starts with the site's enroot.conf value and the setting has no effect; ask "
                "the administrators to set it in enroot.conf, or run `enroot import` yourself "
                "and pass the .sqsh file",
                related=[Related(image.start, image.end, "the pyxis step that ignores it")])
