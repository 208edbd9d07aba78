"""The sorted-vocabulary unigram segmenter against the ``tokenizers`` library's Unigram: the same ids on any
vocabulary and text, ties and unknown characters included; its file read back, or refused when damaged."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer
from tokenizers.models import Unigram

from groove_tui.engine.models.unigram import SortedVocabulary


def _library_ids(pieces: list[str], scores: list[float], unk: int, text: str) -> list[int]:
    """The library's ids, a fused run of unknown characters given back one id per character (as e5.c does)."""
    vocab = [("\0" + p if i == unk else p, s) for i, (p, s) in enumerate(zip(pieces, scores, strict=True))]
    tok = Tokenizer(Unigram(vocab, unk_id=unk, byte_fallback=False))
    enc = tok.encode(text, add_special_tokens=False)
    out: list[int] = []
    for tid, (a, b) in zip(enc.ids, enc.offsets, strict=True):
        out.extend([tid] * max(1, b - a) if tid == unk else [tid])
    return out


def _ours(pieces: list[str], scores: list[float], unk: int, text: str) -> list[int]:
    return SortedVocabulary.decode(SortedVocabulary.encode(pieces, scores, unk)).segment(text)


PIECES = ["<unk>", "a", "b", "ab", "abc", "c", "bc", "東", "京", "東京", "é", "e\u0301", "💡", "a💡", "▁", "▁a"]
SCORES = [0.0, -2.0, -2.5, -3.0, -3.5, -2.0, -1.0, -4.0, -4.0, -5.0, -3.0, -1.0, -6.0, -6.5, -1.0, -1.5]


@pytest.mark.parametrize(
    "text",
    ["", "a", "abc", "abcabc", "cab", "zzz", "azb", "東京東", "京東x", "é e\u0301", "💡a💡", "▁a▁ab", "x💡y", "ababab"],
)
def test_the_same_ids_as_the_library(text: str) -> None:
    assert _ours(PIECES, SCORES, 0, text) == _library_ids(PIECES, SCORES, 0, text)


def test_an_unknown_character_is_one_token_each() -> None:
    assert _ours(PIECES, SCORES, 0, "zq") == [0, 0]


def test_a_tie_keeps_the_path_that_reached_the_position_first() -> None:
    # "ab" + "c" and "a" + "bc" both score -4: the library keeps the first to reach the end.
    pieces, scores = ["<unk>", "a", "b", "c", "ab", "bc"], [0.0, -2.0, -9.0, -2.0, -2.0, -2.0]
    assert _ours(pieces, scores, 0, "abc") == _library_ids(pieces, scores, 0, "abc")


ALPHABET = "abc東京é\u0301💡▁ z"
_piece = st.text(alphabet=ALPHABET, min_size=1, max_size=4)
_score = st.sampled_from([-1.0, -2.0, -2.5, -3.0, -7.25])  # few values: ties are common


@settings(max_examples=300, deadline=None)
@given(
    vocab=st.lists(st.tuples(_piece, _score), min_size=1, max_size=25),
    unk=st.integers(min_value=0, max_value=24),
    text=st.text(alphabet=ALPHABET + "q", max_size=30),
)
def test_any_vocabulary_and_text_give_the_librarys_ids(vocab: list[tuple[str, float]], unk: int, text: str) -> None:
    pieces = ["<unk>", *(p for p, _s in vocab)]  # duplicates included: the later id wins, as in the library
    scores = [0.0, *(s for _p, s in vocab)]
    unk %= len(pieces)
    assert _ours(pieces, scores, unk, text) == _library_ids(pieces, scores, unk, text)


def test_a_damaged_file_is_refused() -> None:
    data = SortedVocabulary.encode(PIECES, SCORES, 0)
    with pytest.raises(ValueError, match="not a sorted unigram vocabulary"):
        SortedVocabulary.decode(b"X" + data[1:])
    with pytest.raises(ValueError, match="truncated"):
        SortedVocabulary.decode(data[:-3])
    with pytest.raises(ValueError, match="truncated"):
        SortedVocabulary.decode(data[:10])
