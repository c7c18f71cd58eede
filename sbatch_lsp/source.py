"""The text being linted, its lines, and conversions between offsets and positions.

``Source`` holds the decoded text with line endings kept as they are (a CRLF file keeps its
``\\r``), so every offset a rule reports points into the user's real text.
"""
from __future__ import annotations

import bisect
import re
import sys
from dataclasses import dataclass, field
from itertools import accumulate

BOM = "\ufeff"
#: a line sbatch reads as a directive (``#SBATCH`` at its start), or one that looks like a
#: directive sbatch ignores (``# SBATCH --nodes=2``, ``#sbatch -N 2``, an indented ``#SBATCH``:
#: SB102 reports those): ``sbatch`` in any case after ``#`` and blanks, followed by an option or
#: nothing. Prose that mentions sbatch in a comment (``# sbatch the training job`` in a Makefile,
#: ``# sbatch-lint: …``) is not one: ``--fix`` once gave such a Makefile a ``#!`` line.
JOB_SCRIPT = re.compile(r"^(?:#SBATCH|[ \t]*#+[ \t]*(?i:sbatch)(?:[ \t]+-|[ \t]*$))",
                        re.MULTILINE)


def is_job_script(text: str, path: str | None = None) -> bool:
    """A line that is or looks like an ``#SBATCH`` directive (:data:`JOB_SCRIPT`; DESIGN.md's
    ``^\\s*#+\\s*sbatch`` narrowed to exclude prose), or a .sbatch/.slurm file name."""
    if path and path.lower().endswith((".sbatch", ".slurm")):
        return True
    return bool(JOB_SCRIPT.search(text))


class BinaryInputError(ValueError):
    """Raised by :func:`decode` for input that is not text (NUL-heavy or undecodable)."""


class InputTooLarge(OSError):
    """A file or standard input longer than the reader's bound."""


def read_bounded(path: str, limit: int) -> bytes:
    """The bytes of ``path`` (``-``: standard input), at most ``limit`` bytes. Raises
    :class:`InputTooLarge` ("larger than N MiB") beyond that, and OSError when the file cannot
    be read."""
    if path == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputTooLarge(f"larger than {limit // (1024 * 1024)} MiB")
    return data


def os_reason(exc: OSError) -> str:
    """A one-phrase reason for an OSError without Python's decoration ("no such file", "is a
    directory", "permission denied"), for messages that already name the file."""
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return (exc.strerror or str(exc)).lower()


def decode_with_encoding(data: bytes) -> tuple[str, str]:
    """Decode a job script's bytes to (text, encoding), the encoding being ``"utf-8"`` or
    ``"latin-1"`` so that a fix can write the file back as it was.

    UTF-8 first (a BOM is kept as U+FEFF so SB100 can report it), then Latin-1 for legacy files
    (every byte maps to one character, so nothing is lost). Raises BinaryInputError when the
    data looks binary: more than 1% NUL bytes or a NUL in the first 1 KiB together with
    undecodable UTF-8, or undecodable UTF-8 of which over 10% are control bytes.
    """
    nul = data.count(b"\x00")
    if nul and (nul * 100 > len(data) or b"\x00" in data[:1024]):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise BinaryInputError("binary file (NUL bytes and invalid UTF-8)") from None
        if nul * 100 > len(data):
            raise BinaryInputError("binary file (NUL bytes)")
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    controls = sum(1 for b in data if b < 32 and b not in (9, 10, 12, 13) or b == 127)
    if controls * 10 > len(data):
        raise BinaryInputError("binary file (not UTF-8, and over 10% control bytes)")
    return data.decode("latin-1"), "latin-1"


def decode(data: bytes) -> str:
    """The text of :func:`decode_with_encoding`."""
    return decode_with_encoding(data)[0]


@dataclass
class Source:
    """A script's text with a line index.

    ``text`` is exactly the linted text; ``line_starts[i]`` is the offset of line ``i`` (0-based).
    """

    text: str
    path: str = "<stdin>"
    line_starts: list[int] = field(init=False)

    def __post_init__(self) -> None:
        # each line starts where the lines before it and their "\n" end (a running sum: fewer
        # instructions than a find() loop, which each edit of a long script pays)
        lengths = [len(line) + 1 for line in self.text.split("\n")]
        self.line_starts = [0, *accumulate(lengths[:-1])]

    @property
    def line_count(self) -> int:
        return len(self.line_starts)

    def line_of(self, offset: int) -> int:
        """0-based line index that holds ``offset``."""
        return bisect.bisect_right(self.line_starts, offset) - 1

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column), both 0-based, column in code points."""
        offset = max(0, min(offset, len(self.text)))
        line = self.line_of(offset)
        return line, offset - self.line_starts[line]

    def offset(self, line: int, column: int) -> int:
        """Offset of 0-based (line, column); clamps to the line's end and the text's end."""
        if line >= len(self.line_starts):
            return len(self.text)
        if line < 0:
            return 0
        start = self.line_starts[line]
        end = self.line_end(line)
        return min(start + max(column, 0), end)

    def line_end(self, line: int) -> int:
        """Offset of the end of 0-based ``line``, before its ``\\n`` (and ``\\r``)."""
        if line + 1 < len(self.line_starts):
            end = self.line_starts[line + 1] - 1
        else:
            end = len(self.text)
        if end > self.line_starts[line] and self.text[end - 1] == "\r":
            end -= 1
        return end

    def line_with_break(self, line: int) -> tuple[int, int]:
        """(start, end) of 0-based ``line`` including its line break: what deleting it removes."""
        end = self.line_starts[line + 1] if line + 1 < self.line_count else len(self.text)
        return self.line_starts[line], end

    def line_start_at(self, offset: int) -> int:
        """Offset of the start of the line that holds ``offset``."""
        return self.line_starts[self.line_of(offset)]

    def line_text(self, line: int) -> str:
        """Text of 0-based ``line`` without its line ending."""
        return self.text[self.line_starts[line]:self.line_end(line)]

    def lines(self) -> list[str]:
        return [self.line_text(i) for i in range(self.line_count)]
