"""The files a command-line run reads and writes: finding the job scripts under the paths
given (``discover``), reading one (``read_file``) and replacing one atomically
(``write_atomic``).

Imported by ``sbatch-lint`` only once it lints (a run answered from the cache never loads it,
nor pathlib: tests/test_startup_imports.py).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from .source import decode_with_encoding, is_job_script, os_reason

#: in a directory, files with these endings are linted without looking at their text
EXTENSIONS = (".sbatch", ".slurm", ".sh")
#: in a directory, files with these endings are another language's, whatever their comments say
OTHER_LANGUAGES = (".md", ".rst", ".txt", ".py", ".ipynb", ".json", ".yaml", ".yml", ".toml",
                   ".cfg", ".ini", ".html", ".js", ".ts", ".c", ".h", ".cpp", ".go", ".rs",
                   ".java", ".r", ".R", ".jl", ".lua", ".pl", ".rb", ".csv", ".log", ".out")
#: bytes: a larger file is not read (an OSError says so)
MAX_BYTES = 64 * 1024 * 1024
#: bytes: in a directory, a file without one of :data:`EXTENSIONS` that is larger is not read
MAX_SNIFFED_BYTES = 1024 * 1024


def _gitignore(root: Path) -> list:
    """(folder, pathspec) of every .gitignore under ``root``."""
    specs = []
    for gi in root.rglob(".gitignore"):
        try:
            lines = gi.read_text("utf-8", "replace").splitlines()
        except OSError:
            continue
        import pathspec  # only for a folder holding a .gitignore (about 25 ms of a warm run)

        specs.append((gi.parent, pathspec.PathSpec.from_lines("gitwildmatch", lines)))
    return specs


def _ignored(path: Path, specs) -> bool:
    for base, spec in specs:
        try:
            rel = path.relative_to(base)
        except ValueError:
            continue
        if spec.match_file(str(rel)) or any(spec.match_file(str(p) + "/") for p in rel.parents
                                            if str(p) != "."):
            return True
    return False


def discover(paths: list[str],
             excluded: Callable[[Path, bool], bool] | None = None) -> list[str]:
    """Files to lint: named files as given; in directories, ``*.sbatch``, ``*.slurm``, ``*.sh``
    and any other file that is a job script (but not files of other languages, such as a
    Markdown page titled "Sbatch tips"), honouring .gitignore files and ``excluded(path,
    is_dir)`` (the configuration's exclude: an excluded folder is not entered); hidden folders
    and ``node_modules`` are skipped."""

    def left_out(p: Path, is_dir: bool) -> bool:
        return excluded is not None and excluded(p, is_dir)

    out: list[str] = []
    for p in paths:
        if p == "-" or not os.path.isdir(p):
            out.append(p)
            continue
        path = Path(p)
        specs = _gitignore(path)
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                                 and d != "node_modules"
                                 and not _ignored(Path(dirpath) / d, specs)
                                 and not left_out(Path(dirpath) / d, True))
            for name in sorted(filenames):
                f = Path(dirpath) / name
                if name.startswith(".") or _ignored(f, specs) or not f.is_file() \
                        or left_out(f, False):
                    continue
                if name.endswith(EXTENSIONS):
                    out.append(str(f))
                    continue
                if name.endswith(OTHER_LANGUAGES):
                    continue
                try:
                    if f.stat().st_size > MAX_SNIFFED_BYTES:
                        continue
                    head = f.read_bytes()
                except OSError:
                    continue
                if b"\0" in head[:4096]:
                    continue
                if is_job_script(head.decode("utf-8", "replace")):
                    out.append(str(f))
    return out


def read_file(path: str, stdin_data: bytes | None) -> tuple[str, str]:
    """(text, encoding) of the file at ``path``, or of ``stdin_data`` when ``path`` is ``-``.
    Raises OSError (with a short reason: missing, a folder, no permission, larger than
    :data:`MAX_BYTES`) or source.BinaryInputError."""
    if path == "-":
        return decode_with_encoding(stdin_data or b"")
    p = Path(path)
    try:
        if p.stat().st_size > MAX_BYTES:
            raise OSError(f"file too large ({p.stat().st_size} bytes)")
        data = p.read_bytes()
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        raise OSError(os_reason(exc)) from None
    return decode_with_encoding(data)


def write_atomic(path: str, text: str, encoding: str) -> None:
    """Replace the file at ``path`` (through a symbolic link: the link stays) with ``text`` in
    its own ``encoding``, via a temporary file in the same folder and a rename, keeping its
    permission bits; the original stays untouched on any error (OSError raised)."""
    from .atomic import replace_file  # (tempfile: not needed by a run that writes nothing)

    p = Path(os.path.realpath(path))
    replace_file(p, text.encode(encoding), p.stat().st_mode & 0o7777, durable=True)
