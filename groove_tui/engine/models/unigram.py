"""SentencePiece's unigram segmentation over a sorted vocabulary file, without building a trie first.

The ``tokenizers`` library builds a trie of every piece before it segments one text: for e5's 250,002
pieces that is most of a second, more than everything else a one-shot search does. A query needs only the
pieces that occur in it. Here the vocabulary is one file of pieces sorted as UTF-8 bytes, with their ids and
scores; reading it takes milliseconds, and at each position of a text a binary search narrows, one byte at a
time, to the pieces that start there. A long batch of passages still goes to the library, whose Rust loop
is faster once the trie exists.

The segmentation is the library's ``Unigram`` (its optimised encoder) exactly: the path of highest summed
score; a character that no single piece spells costs the lowest score minus 10 and is its own unknown
token (a run of them is not fused into one); on a tie the path first to reach a position keeps it.
Tests compare the two on many texts.

File layout, little-endian: magic, u32 piece count n, u32 unknown id, f64 lowest score, u32 byte offsets[n+1]
into the blob, u32 ids[n], f64 scores[n], then the blob of the pieces in byte order.
"""

from __future__ import annotations

import array
import struct
import sys
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

MAGIC = b"GTUNIGR1"
UNKNOWN_PENALTY = 10.0  # SentencePiece's kUnkPenalty, as the tokenizers library applies it
_HEADER = struct.Struct("<8sIId")


def _utf8_length(lead: int) -> int:
    """Bytes of the UTF-8 character that starts with this byte (the text is valid UTF-8)."""
    return 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def _array(code: str, data: bytes | memoryview) -> array.array:  # type: ignore[type-arg]
    values = array.array(code)
    values.frombytes(data)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def _little(values: array.array) -> bytes:  # type: ignore[type-arg]
    if sys.byteorder != "little":
        values = array.array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


class SortedVocabulary:
    """A unigram vocabulary for segmenting a few texts: see the module docstring."""

    def __init__(
        self,
        blob: bytes,
        starts: Sequence[int],
        ids: Sequence[int],
        scores: Sequence[float],
        unk: int,
        min_score: float,
    ) -> None:
        self._blob = blob
        self._starts = starts
        self._ids = ids
        self._scores = scores
        self._positions = range(len(ids))
        self.unk = unk
        self._unknown_score = min_score - UNKNOWN_PENALTY

    @staticmethod
    def encode(pieces: Sequence[str], scores: Sequence[float], unk: int) -> bytes:
        """The file for a vocabulary as the library takes it (piece i has id i). The unknown piece and an
        empty one never match; of two equal pieces the later id wins, as in the library's lookup."""
        by_piece: dict[bytes, int] = {}
        for i, piece in enumerate(pieces):
            if i != unk and piece:
                by_piece[piece.encode("utf-8")] = i
        ordered = sorted(by_piece)
        starts = array.array("I", [0])
        for spelling in ordered:
            starts.append(starts[-1] + len(spelling))
        ids = array.array("I", (by_piece[p] for p in ordered))
        ordered_scores = array.array("d", (float(scores[by_piece[p]]) for p in ordered))
        header = _HEADER.pack(MAGIC, len(ordered), unk, min(float(s) for s in scores))
        return b"".join([header, _little(starts), _little(ids), _little(ordered_scores), b"".join(ordered)])

    @classmethod
    def decode(cls, data: bytes) -> SortedVocabulary:
        """Read a file ``encode`` wrote; raises ValueError if it is not one, or is cut short."""
        if len(data) < _HEADER.size:
            raise ValueError("vocabulary file: truncated header")
        magic, n, unk, min_score = _HEADER.unpack_from(data)
        if magic != MAGIC:
            raise ValueError("vocabulary file: not a sorted unigram vocabulary")
        view = memoryview(data)
        at = _HEADER.size
        starts = _array("I", view[at : at + 4 * (n + 1)])
        at += 4 * (n + 1)
        ids = _array("I", view[at : at + 4 * n])
        at += 4 * n
        scores = _array("d", view[at : at + 8 * n])
        at += 8 * n
        blob = bytes(view[at:])
        if len(starts) != n + 1 or len(ids) != n or len(scores) != n or (n and starts[-1] != len(blob)):
            raise ValueError("vocabulary file: truncated")
        return cls(blob, starts, ids, scores, unk, min_score)

    def _matches(self, data: bytes, pos: int) -> list[tuple[int, int]]:
        """(length in bytes, index into the sorted pieces) of every piece that starts at ``pos``, shortest first."""
        blob, starts, positions = self._blob, self._starts, self._positions
        found: list[tuple[int, int]] = []
        lo, hi = 0, len(positions)
        depth, size = 0, len(data)
        while lo < hi and pos + depth < size:
            # Every piece in [lo, hi) spells data[pos : pos + depth] and is longer: narrow on its next byte.
            byte, offset = data[pos + depth], depth

            def nth_byte(k: int, offset: int = offset) -> int:
                return blob[starts[k] + offset]

            lo = bisect_left(positions, byte, lo, hi, key=nth_byte)
            hi = bisect_right(positions, byte, lo, hi, key=nth_byte)
            depth += 1
            if lo < hi and starts[lo + 1] - starts[lo] == depth:  # the piece that ends here sorts first
                found.append((depth, lo))
                lo += 1
        return found

    def segment(self, text: str) -> list[int]:
        """Token ids of ``text`` (already normalised): the best path, one unknown id per unknown character."""
        data = text.encode("utf-8")
        size = len(data)
        best = [0.0] * (size + 1)
        came_from = [-1] * (size + 1)
        token = [0] * (size + 1)  # index into the sorted pieces, or -1 for the unknown token
        ids, scores = self._ids, self._scores
        pos = 0
        while pos < size:
            here = best[pos]
            char = _utf8_length(data[pos])
            spelled = False
            for length, k in self._matches(data, pos):
                end = pos + length
                candidate = scores[k] + here
                if came_from[end] < 0 or candidate > best[end]:
                    best[end], came_from[end], token[end] = candidate, pos, k
                spelled = spelled or length == char
            if not spelled:
                end = pos + char
                candidate = self._unknown_score + here
                if came_from[end] < 0 or candidate > best[end]:
                    best[end], came_from[end], token[end] = candidate, pos, -1
            pos += char
        out: list[int] = []
        end = size
        while end > 0:
            k = token[end]
            out.append(ids[k] if k >= 0 else self.unk)
            end = came_from[end]
        out.reverse()
        return out
