"""The trigram table's postings by word-character token, for finding a phrase's rows without FTS5.

FTS5 answers a trigram phrase by walking the doclist of every trigram in it, positions included: at 100k
chunks a rare word made of common trigrams ("hypothalamic") costs milliseconds, whatever few rows hold it.
A phrase made only of word characters (regex word characters: letters, digits, underscore) lies, wherever it matches,
inside one maximal run of them in the folded text: a token. So its rows are the rows of the tokens that
contain it, and its frequency in a row is Σ over those tokens of (token's frequency in the row) × (the
phrase's instances in the token). With whole-number column weights, a token's frequency f (the column
weights summed over its occurrences) is an integer, and the phrase's f — the very f FTS5's bm25 sums —
is one exactly. `phrase_stats` stores these lists beside the common phrases' and follows them through the
same edit journal; the full-text leg (engine/retrieve/fulltext.py) computes the phrase's terms from them
as it does from a stored list. Tokens split at punctuation too, not only at whitespace, so "cells," and
"cells" share a list, which keeps the vocabulary (scanned for every phrase looked up) small.

This module holds the text half: how a chunk's columns become token frequencies, and the vocabulary's
encoding and look-up.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["MAX_VOCAB_CHARS", "TokenVocab", "listable", "token_frequencies"]

MAX_F = 2**16  # a token's f in one row is stored in 2 bytes at most
# A vocabulary past this (a KB of logs or hashes: millions of distinct tokens) costs each look-up a scan
# longer than FTS5's walk; then no lists are kept.
MAX_VOCAB_CHARS = 8_000_000
_TOKEN = re.compile(r"\w+")


def listable(phrase: str) -> bool:
    """Whether every match of `phrase` (folded) lies inside one token: it is word characters only."""
    return _TOKEN.fullmatch(phrase) is not None


def token_frequencies(
    columns: Sequence[str | None], weights: Sequence[int], fold: Callable[[str], str]
) -> dict[str, int] | None:
    """Each token (a maximal run of word characters) of the folded columns with its f in this row (the
    column weights summed over its occurrences), or None when the row cannot be listed: a NUL (the
    tokenizer's input ends there; not what folding counts) or an f past MAX_F."""
    out: Counter[str] = Counter()
    for text, weight in zip(columns, weights, strict=True):
        if not text:
            continue
        if "\0" in text:
            return None
        for token, n in Counter(_TOKEN.findall(fold(text))).items():
            out[token] += n * weight
    if out and max(out.values()) >= MAX_F:
        return None
    return dict(out)


@dataclass(frozen=True, slots=True)
class TokenVocab:
    """Every token with a list, sorted, joined by newlines (never a word character): one string, searched
    for a phrase as it is, read from the index in one piece."""

    text: str

    @classmethod
    def of(cls, tokens: Sequence[str]) -> TokenVocab:
        return cls("\n".join(tokens))

    @classmethod
    def decode(cls, blob: bytes) -> TokenVocab:
        return cls(blob.decode("utf-8"))

    def encode(self) -> bytes:
        return self.text.encode("utf-8")

    def tokens(self) -> list[str]:
        return self.text.split("\n") if self.text else []

    def containing(self, phrase: str, most: int) -> list[str] | None:
        """The tokens that hold `phrase` (`listable`: no newline), or None past `most` of them."""
        out: list[str] = []
        text = self.text
        at = text.find(phrase)
        while at >= 0:
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            out.append(text[text.rfind("\n", 0, at) + 1 : end])
            if len(out) > most:
                return None
            at = text.find(phrase, end + 1)
        return out
