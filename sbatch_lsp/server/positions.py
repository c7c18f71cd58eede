"""Character offsets of a linted text <-> LSP positions.

The engine reports offsets in code points into the exact text it linted; the LSP counts columns
in the encoding negotiated at initialize (UTF-16 unless the client offers another). Lines are
split on ``\\n`` only, as the engine's :class:`~sbatch_lsp.source.Source` does (a ``\\r`` before
it stays out of the line's columns).
"""
from __future__ import annotations

from lsprotocol import types as t
from pygls.workspace.position_codec import PositionCodec

from ..source import Source


class Positions:
    """Converts between offsets into ``source.text`` and client positions (``codec`` units)."""

    def __init__(self, source: Source, codec: PositionCodec):
        self.source = source
        self.codec = codec

    def position(self, offset: int) -> t.Position:
        """The client position of a code-point offset (clamped to the text)."""
        line, col = self.source.position(offset)
        start = self.source.line_starts[line]
        before = self.source.text[start:start + col]
        # ASCII is one unit a character in every encoding (UTF-8, -16, -32)
        units = col if before.isascii() else self.codec.client_num_units(before)
        return t.Position(line=line, character=units)

    def range(self, start: int, end: int) -> t.Range:
        return t.Range(start=self.position(start), end=self.position(max(start, end)))

    def offset(self, pos: t.Position) -> int:
        """The code-point offset of a client position; a line past the end clamps to the end of
        the text, a column past the line's end to the line's end (before ``\\r\\n``)."""
        src = self.source
        if pos.line >= src.line_count:
            return len(src.text)
        start, end = src.line_starts[pos.line], src.line_end(pos.line)
        units = 0
        for i in range(start, end):
            if units >= pos.character:
                return i
            units += self.codec.client_num_units(src.text[i])
        return end
