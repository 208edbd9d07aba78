"""The trigram table's postings by whitespace-separated token, for finding a phrase's rows without FTS5.

FTS5 answers a trigram phrase by walking the doclist of every trigram in it, positions included: at 100k
chunks a rare word made of common trigrams ("hypothalamic") costs milliseconds, whatever few rows hold it.
A phrase that holds no whitespace lies, wherever it matches, inside one whitespace-separated token of the
folded text. So its rows are the rows of the tokens that contain it, and its frequency in a row is
Σ over those tokens of (token's frequency in the row) × (the phrase's instances in the token). With
whole-number column weights, a token's frequency f (the column weights summed over its occurrences) is
an integer, and the phrase's f — the very f FTS5's bm25 sums — is one exactly. `phrase_stats` stores
these lists beside the common phrases' and follows them through the same edit journal; the full-text leg
(engine/retrieve/fulltext.py) computes the phrase's terms from them as it does from a stored list.

This module holds the text half: how a chunk's columns become token frequencies, and the vocabulary's
encoding and look-up.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["TokenVocab", "has_whitespace", "token_frequencies"]

MAX_F = 2**16  # a token's f in one row is stored in 2 bytes at most


def has_whitespace(text: str) -> bool:
    """Whether `text` holds a character str.split() separates on (then its matches may span tokens)."""
    return text.split() != [text]


def token_frequencies(
    columns: Sequence[str | None], weights: Sequence[int], fold: Callable[[str], str]
) -> dict[str, int] | None:
    """Each whitespace-separated token of the folded columns with its f in this row (the column weights
    summed over its occurrences), or None when the row cannot be listed: a NUL (the tokenizer's input ends
    there; not what folding counts) or an f past MAX_F."""
    out: Counter[str] = Counter()
    for text, weight in zip(columns, weights, strict=True):
        if not text:
            continue
        if "\0" in text:
            return None
        for token, n in Counter(fold(text).split()).items():
            out[token] += n * weight
    if out and max(out.values()) >= MAX_F:
        return None
    return dict(out)


@dataclass(frozen=True, slots=True)
class TokenVocab:
    """Every token with a list, sorted, joined by newlines (a token never holds one), for substring look-up."""

    text: str
    starts: tuple[int, ...]

    @classmethod
    def of(cls, tokens: Sequence[str]) -> TokenVocab:
        starts, at = [], 0
        for token in tokens:
            starts.append(at)
            at += len(token) + 1
        return cls("\n".join(tokens), tuple(starts))

    @classmethod
    def decode(cls, blob: bytes) -> TokenVocab:
        text = blob.decode("utf-8")
        return cls.of(text.split("\n") if text else [])

    def encode(self) -> bytes:
        return self.text.encode("utf-8")

    def __len__(self) -> int:
        return len(self.starts)

    def tokens(self) -> list[str]:
        return self.text.split("\n") if self.text else []

    def containing(self, phrase: str, most: int) -> list[str] | None:
        """The tokens that hold `phrase` (no whitespace, no newline), or None past `most` of them."""
        out: list[str] = []
        at = self.text.find(phrase)
        while at >= 0:
            k = bisect.bisect_right(self.starts, at) - 1
            end = self.starts[k + 1] - 1 if k + 1 < len(self.starts) else len(self.text)
            out.append(self.text[self.starts[k] : end])
            if len(out) > most:
                return None
            at = self.text.find(phrase, end + 1)
        return out
