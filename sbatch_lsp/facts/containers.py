"""The container of each pyxis step: its image reference, mounts, working directory and home
mount, as pyxis reads them, with the spans rules point at.

pyxis facts (NVIDIA/pyxis, v0.9.0 through v0.24.0): an image value is a squashfs file only when
it starts with ``.`` or ``/`` (``pyxis_slurmstepd.c``: ``strspn(image, "./") > 0``), anything
else is handed to ``enroot import docker://VALUE``; ``--container-mounts`` is a comma list of
``SRC[:DST[:FLAGS]]`` (``args.c parse_mount_option``: without ``:DST`` the target is the
source) whose source must start with ``.`` or ``/`` or be ``tmpfs``/``umount`` and whose target
must start with ``.`` or ``/`` (``args.c add_mount``); without ``--container-workdir`` the task
starts in the container's own working directory, the image's ``WORKDIR`` or ``/``
(``pyxis_slurmstepd.c container_get_cwd``); the home directory is mounted with
``--container-mount-home``, not with ``--no-container-mount-home``, and otherwise as enroot's
``ENROOT_MOUNT_HOME`` says (default ``no``, enroot ``conf/enroot.conf.in``); from v0.21.0 the
``PYXIS_CONTAINER_*`` variables of srun's environment set the same options (``args.c
pyxis_args_check_environment_variables``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..job import Job, Step
from ..shell.model import Script, Word
from .layout import sole_reference

#: the deepest chain of ``A=$B`` assignments followed to a literal
MAX_CHAIN = 8


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class Text:
    """A literal string the script gives an option, and the span of the text holding it
    (offsets into the script). ``in_place`` says the span is the literal itself (the option's
    own word or a literal assignment's value), so an edit of the span changes the value."""

    value: str
    start: int
    end: int
    in_place: bool


@dataclass(frozen=True)
class Mount:
    """One ``--container-mounts`` item: source, target, flags (``ro+rprivate``) or None, and
    the item's span in the script when the list is written in place."""

    source: str
    target: str
    flags: str | None
    start: int
    end: int


@dataclass
class Container:
    """A step's pyxis container: ``image`` (None for ``--container-name`` alone, or an image
    the script does not spell literally), ``image_given`` (an image option is present at all),
    ``mounts`` (None when set outside the srun line; items keep unexpanded parts as spelled), ``workdir_given``, ``mount_home`` (True,
    False, or None when left to the site's enroot configuration)."""

    step: Step
    image: Text | None
    image_given: bool
    mounts: list[Mount] | None
    workdir_given: bool
    mount_home: bool | None


def literal_of(word: Word, script: Script, depth: int = 0) -> Text | None:
    """The literal value of ``word``: its own text when it holds no expansion, or the literal
    a sole ``$NAME`` reference reads from the last assignment before it (followed through
    ``A=$B`` chains up to MAX_CHAIN); None when the value is not known statically."""
    if word.early:
        return None  # the batch shell's values flowed in as placeholders: not known
    if word.value is not None:
        if not word.value:
            return None  # an empty template value (`DATA_DIR=""  # fill in`)
        quote = 1 if word.text[:1] in ("'", '"') and word.text[-1:] == word.text[:1] else 0
        return Text(word.value, word.start + quote, word.end - quote,
                    word.text[quote:len(word.text) - quote] == word.value)
    name = sole_reference(word)
    if name is None or depth >= MAX_CHAIN:
        return None
    a = script.value_at(name, word.start)
    if a is None or a.value is None or a.append:
        return None
    return literal_of(a.value, script, depth + 1)


def mounts_of(text: Text) -> list[Mount]:
    """The items of a ``--container-mounts`` value, as ``args.c parse_mount_option`` splits
    them (empty items are skipped, like pyxis's ``strsep`` loop). Parts the script leaves to
    the shell keep their spelling (``$PWD``)."""
    out = []
    at = text.start
    for item in text.value.split(","):
        if item:
            src, _, rest = item.partition(":")
            dst, _, flags = rest.partition(":")
            start = at if text.in_place else text.start
            end = at + len(item) if text.in_place else text.end
            out.append(Mount(src, dst or src, flags or None, start, end))
        at += len(item) + 1
    return out


VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)\}")


def spelled_of(word: Word, script: Script, depth: int = 0) -> Text | None:
    """A value as the script spells it where no literal is known: a sole ``$NAME`` is followed
    to its assignment (through ``A=$B`` chains), ``$NAME`` parts whose assignment is literal are
    replaced by that literal, other expansions keep their spelling (``$PWD``), outer quotes go.
    None when the batch shell's own values flowed into the word (a nested string's
    placeholders) or the value is an empty template value."""
    known = literal_of(word, script)
    if known is not None or word.early or word.value == "":
        return known
    name = sole_reference(word)
    if name is not None and depth < MAX_CHAIN:
        a = script.value_at(name, word.start)
        if a is not None and a.value is not None and not a.append:
            inner = spelled_of(a.value, script, depth + 1)
            return replace(inner, in_place=False) if inner is not None else None
    raw = word.text[1:-1] if word.text[:1] == '"' and word.text[-1:] == '"' else word.text

    def sub(m: re.Match) -> str:
        a = script.value_at(m.group(1) or m.group(2), word.start)
        v = a.value.value if a is not None and a.value is not None else None
        return v if v else m.group(0)

    return Text(VARIABLE.sub(sub, raw), word.start, word.end, False)


def _exported_value(job: Job, name: str, at: int) -> str | None:
    """The literal value of an exported batch-shell variable at offset ``at`` (pyxis reads
    ``PYXIS_CONTAINER_*`` from srun's environment), or None."""
    if not job.exported(name, at):
        return None
    a = job.script.value_at(name, at)
    return a.value.value if a is not None and a.value is not None else None


def container_of(job: Job, step: Step) -> Container | None:
    """The pyxis container of an srun step, or None when it runs none. Options on the srun
    line win; ``PYXIS_CONTAINER_WORKDIR``/``_MOUNT_HOME`` exported by the batch shell count
    as the same options."""
    if not step.container and _exported_value(job, "PYXIS_CONTAINER_IMAGE",
                                              step.command.start) is None:
        return None
    script = job.script
    w = step.options.get("container-image")
    image = literal_of(w, script) if w is not None else None
    ow = step.option_words.get("container-image")
    if image is not None and w is not None and ow is not None and w.start >= ow.end and \
            w.text.startswith("~"):
        image = None  # a word of its own: bash expands the `~` (an absolute home path)
    mw = step.options.get("container-mounts")
    mounts: list[Mount] | None = []
    if mw is not None:
        spelled = spelled_of(mw, script)
        mounts = mounts_of(spelled) if spelled is not None else None
    elif _exported_value(job, "PYXIS_CONTAINER_MOUNTS", step.command.start) is not None:
        mounts = None  # set outside the srun line: not read here
    at = step.command.start
    workdir = "container-workdir" in step.options or \
        job.exported("PYXIS_CONTAINER_WORKDIR", at)
    home: bool | None = None
    for name in step.options:  # the last of the pair wins (one callback in args.c)
        if name == "container-mount-home":
            home = True
        elif name == "no-container-mount-home":
            home = False
    if home is None:
        env = _exported_value(job, "PYXIS_CONTAINER_MOUNT_HOME", at)
        if env is not None:
            home = env.lower() in ("1", "true", "yes", "y")
    return Container(step, image, w is not None, mounts, workdir, home)


def containers(job: Job) -> list[Container]:
    """The container of every srun step that runs one, in script order (computed once per
    job)."""
    return job.derived(_containers)


def _containers(job: Job) -> list[Container]:
    # a step without pyxis options runs a container only through an exported
    # PYXIS_CONTAINER_IMAGE (container_of): when the script never exports one, asked once,
    # such a step is skipped without asking at its offset (most steps of most scripts)
    env_image = job.exported("PYXIS_CONTAINER_IMAGE")
    out = []
    for step in job.ordered_steps():
        if not env_image and not step.container:
            continue
        c = container_of(job, step)
        if c is not None:
            out.append(c)
    return out


def directive_image(job: Job) -> Text | None:
    """The literal ``#SBATCH --container-image`` value (the batch step's image), or None."""
    use = job.directives.get("container-image")
    if use is None or use.value is None or use.value_start is None or use.value_end is None:
        return None
    raw = job.source.text[use.value_start:use.value_end]
    return Text(use.value, use.value_start, use.value_end, raw == use.value)


def under(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or inside it (both absolute, no ``..``)."""
    folder = folder.rstrip("/") or "/"
    return path == folder or path.startswith(folder if folder == "/" else folder + "/")
