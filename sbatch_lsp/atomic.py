"""Atomic file replacement, shared by ``--fix``/``--convert --write`` and the result cache."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask() -> int:
    """The process's file-creation mask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def replace_file(target: Path, data: bytes, mode: int | None = None, durable: bool = False
                 ) -> None:
    """Write ``data`` to ``target`` atomically: a temporary file in the same folder, renamed over
    it, so readers (and parallel writers) see the old file or the new one, never a part.
    ``mode`` sets the new file's permission bits (default: the replaced file's, or what the
    umask gives a new file, never mkstemp's 0600); ``durable`` flushes it to disk before the
    rename. Raises OSError on failure, leaving ``target`` untouched and no temporary file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:16]}.", suffix=".tmp",
                               dir=str(target.parent))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        if mode is None:  # mkstemp made it 0600: give it what a new file gets
            mode = target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
