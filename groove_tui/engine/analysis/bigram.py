"""The CJK character-bigram side index (docs/groove-compatibility.md, 6): segmentation and query compilation.

groove's full-text table uses the FTS5 trigram tokenizer, which cannot match a 2-character word (設定,
東京) and whose query compiler glues particles onto words (東尾は, 成績を). The side table `fts_bigram`
indexes a pre-segmented copy of heading, context and content with the `unicode61` tokenizer:

* text is NFKC-normalised first, so half-width katakana and full-width Latin match their usual forms;
* every CJK run (kanji, kana incl. ー, Hangul) becomes its overlapping bigrams followed by its last
  character alone (`東京都` → `東京 京都 都`); a lone CJK character stays a unigram. The trailing unigram
  makes every character the first character of some token, so a 1-character query is the prefix query
  `"都" *`, and keeps token positions adjacent across a run's end, so a quoted phrase maps to an exact
  token phrase;
* everything else is left as is: unicode61 splits Latin text into (case- and diacritic-folded) words.

A query with CJK in it compiles to an OR of its bigrams (plus its Latin words), ranked by BM25. Changing
how text is segmented must bump `SEGMENTATION_VERSION`: indexes recording another version are rebuilt.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from groove_tui.engine.analysis.query import fts_phrase, segments

__all__ = [
    "SEGMENTATION_VERSION",
    "BigramQuery",
    "cjk_runs",
    "cjk_terms",
    "compile_bigram",
    "has_cjk",
    "nfkc",
    "segment",
    "without_cjk",
]

SEGMENTATION_VERSION = "1"
MAX_TERMS = 128  # distinct OR terms of one query (a 1024-byte query has at most ~340 CJK characters)

# Kanji (incl. 々 〆 〇, extensions A and B+, compatibility ideographs), hiragana (without the combining
# and spacing voiced marks, which unicode61 does not treat as letters), katakana with ー but not the middle
# dot ・ (a separator), and Hangul syllables and jamo.
_CJK_CLASS = (
    "\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
    "\u3041-\u3096\u309d-\u309f"
    "\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
    "\u1100-\u11ff\u3131-\u318e\uac00-\ud7a3"
)
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_WORDISH = re.compile(r"[^\W_]")  # a piece unicode61 would find a token in


def nfkc(text: str) -> str:
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


def has_cjk(text: str) -> bool:
    return _CJK_RUN.search(nfkc(text)) is not None


def cjk_runs(text: str) -> Iterator[re.Match[str]]:
    """The CJK runs of `text` (which the caller has NFKC-normalised), left to right."""
    return _CJK_RUN.finditer(text)


def without_cjk(text: str) -> str:
    """`text` NFKC-normalised with each CJK run replaced by a space."""
    if text.isascii():  # (ASCII is NFKC and holds no CJK: most English text, at a fraction of the scan)
        return text
    return _CJK_RUN.sub(" ", nfkc(text))


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _index_tokens(run: str) -> str:
    return " ".join([*_bigrams(run), run[-1]])


def segment(text: str | None) -> str | None:
    """The copy of `text` the bigram table indexes (None stays None: an absent heading or context)."""
    if text is None or text.isascii():
        return text
    return _CJK_RUN.sub(lambda m: f" {_index_tokens(m.group())} ", nfkc(text))


def cjk_terms(text: str) -> list[str]:
    """What a CJK query matches and match_spans highlights: each CJK run of 1-2 characters as is, the
    bigrams of longer ones (NFKC-normalised, in query order, deduplicated)."""
    out: list[str] = []
    for run in _CJK_RUN.findall(nfkc(text)):
        out.extend([run] if len(run) <= 2 else _bigrams(run))
    return list(dict.fromkeys(out))


def _plain_terms(text: str) -> list[str]:
    """OR terms of an unquoted segment: CJK bigrams (a lone character as a prefix) and the words around."""
    out: list[str] = []
    pos = 0
    norm = nfkc(text)
    for m in _CJK_RUN.finditer(norm):
        out.extend(_word_terms(norm[pos : m.start()]))
        run = m.group()
        out.extend([fts_phrase(run) + " *"] if len(run) == 1 else [fts_phrase(b) for b in _bigrams(run)])
        pos = m.end()
    out.extend(_word_terms(norm[pos:]))
    return out


def _word_terms(text: str) -> list[str]:
    # Each whitespace piece is one phrase: unicode61 splits `groove.toml` into adjacent tokens itself.
    return [fts_phrase(p) for p in text.replace("\0", " ").split() if _WORDISH.search(p)]


def _substring_phrase(text: str) -> str | None:
    """A phrase matching `text` as a substring (modulo unicode61's folding): the index segmentation of
    it, except at the end, where the content's run may go on: a final CJK run drops its trailing
    unigram (its bigrams already pin it down), a final lone CJK character becomes a prefix."""
    norm = nfkc(text).strip()
    if not _WORDISH.search(norm) or "\0" in norm:
        return None  # a NUL would end SQLite's string ("unterminated string"): dropped, as the trigram side does
    tokens = (segment(norm) or "").split()
    last = _CJK_RUN.search(norm[-1:])
    if last is None:
        return fts_phrase(" ".join(tokens))
    run = _CJK_RUN.findall(norm)[-1]
    if len(run) == 1:
        return fts_phrase(" ".join(tokens)) + " *"
    return fts_phrase(" ".join(tokens[:-1]))


def _or(terms: list[str]) -> str | None:
    distinct = list(dict.fromkeys(terms))[:MAX_TERMS]
    return " OR ".join(distinct) if distinct else None


@dataclass(frozen=True, slots=True)
class BigramQuery:
    positive_expr: str | None  # None = the query's positive side has no CJK: the trigram leg serves it
    negative_expr: str | None  # excluded groups with CJK in them, each as an exact phrase

    @property
    def match_expr(self) -> str | None:
        if self.positive_expr is None:
            return None
        if self.negative_expr is None:
            return self.positive_expr
        return f"({self.positive_expr}) NOT ({self.negative_expr})"

    @property
    def explain(self) -> str | None:
        """What the explain views show: the leg's expression, or just the exclusion it adds."""
        if self.positive_expr is None and self.negative_expr is not None:
            return f"NOT ({self.negative_expr})"
        return self.match_expr


def compile_bigram(raw: str) -> BigramQuery | None:
    """The bigram-table side of `raw`, or None when the query has no CJK at all (groove's path).

    The positive side engages only when the positive text has CJK in it, so English queries keep
    groove's trigram ranking; an excluded group with CJK in it is excluded through this table too, so
    `-設定` (under groove's 3-character floor) drops chunks in every leg.
    """
    if not has_cjk(raw):
        return None
    positive: list[str] = []
    negative: list[str] = []
    cjk_positive = False
    for excluded, quoted, text in segments(raw):
        if excluded:
            groups = [text] if quoted else re.split(r"[^\w\u30fc-]+", nfkc(text))
            negative.extend(p for g in groups if has_cjk(g) and (p := _substring_phrase(g)))
            continue
        cjk_positive = cjk_positive or has_cjk(text)
        if quoted:
            phrase = _substring_phrase(text)
            positive.extend([phrase] if phrase else [])
        else:
            positive.extend(_plain_terms(text))
    return BigramQuery(_or(positive) if cjk_positive else None, _or(negative))
