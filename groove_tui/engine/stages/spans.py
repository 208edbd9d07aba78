"""`match_spans`: where the query's terms occur in a hit's content (reference §H), in CHARACTER offsets.

For ASCII terms over ASCII content the result is groove's exactly (its byte offsets equal our character
offsets there). Our deliberate deviation (docs/groove-compatibility.md, 1): groove returns
None as soon as a term is non-ASCII; we highlight every script. Terms and content are compared after
`fold`, which imitates the FTS5 trigram tokenizer with `case_sensitive 0 remove_diacritics 1`, so a
highlight appears where the full-text leg matched:

* case: simple case folding per code point (`Σ`/`ς` → `σ`, `İ` → `i`, but `ß` stays `ß`: FTS5 does not
  expand it to `ss`);
* diacritics: a Latin letter whose NFD form is an ASCII letter plus combining marks folds to that letter
  (`É` → `e`); the combining diacritics FTS5 drops (`_DROPPED_MARKS`) fold to nothing, so decomposed
  `e` + U+0301 also reads as `e`;
* everything else (CJK, emoji, ZWJ, other marks) is kept as is.

Measured against SQLite 3.50's tokenizer over every code point, the fold differs only for letters whose
case pairs are newer than SQLite's Unicode tables (Cherokee, Georgian Mtavruli, Osage, Adlam, …: we fold
them, FTS5 does not), the Cyrillic letter variants U+1C80–1C88 (we fold `ᲀ` to `в`) and `ǡ`/`Ǡ`.

Because a folded character may come from several original ones (a letter and the marks that folded
away), matching runs on the folded copy and every span is mapped back through a per-character index
table; a span's end includes the marks that folded away after it. For ASCII terms over non-ASCII content
this can differ from groove on purpose: `cafe` also highlights `CAFÉ`, as the FTS leg matched it.

Where the word leg ran (ours), `words` adds the whole words it matches: `extract` also lights up all of
"extracting". Which words those are is asked of FTS5's own tokenizer (the leg's `porter unicode61`, over
the content's distinct words in a scratch table), so a highlight stands where the leg matched. Where it
matched Japanese words (a pulled dictionary), the content's Japanese runs are analyzed the way the word
table's copy was, and each morpheme whose form the query asked for is highlighted whole: 引越し lights up
for the query 引っ越し, and the whole of 東京都 for 東京都, never 東京 inside 東京都庁 when that is one word.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import sqlean as sqlite3

from groove_tui.engine.analysis.bigram import cjk_runs, cjk_terms, nfkc
from groove_tui.engine.analysis.japanese import JapaneseAnalyzer, is_japanese
from groove_tui.engine.analysis.query import split_terms, trim
from groove_tui.engine.analysis.words import WORDS_TOKENIZE

__all__ = ["MATCH_SPAN_MAX_CONTENT_BYTES", "MATCH_SPAN_MAX_TERMS", "fold", "match_spans"]

MATCH_SPAN_MAX_TERMS = 100
MATCH_SPAN_MAX_CONTENT_BYTES = 262_144
_SPAN_BUDGET = 100  # spans shared out between the terms

# The combining diacritics FTS5's remove_diacritics=1 removes (measured with SQLite 3.50.4).
_DROPPED_MARKS = frozenset(
    [*range(0x300, 0x305), *range(0x306, 0x30D), 0x30F, 0x311, 0x31B, *range(0x323, 0x329), 0x32D, 0x32E, 0x330, 0x331]
)


@lru_cache(maxsize=8192)
def _fold_char(c: str) -> str:
    """Fold one code point to at most one code point ("" when FTS5 would skip it)."""
    if c < "\x80":
        return c.lower()
    if ord(c) in _DROPPED_MARKS:
        return ""
    low = c.lower()
    if len(low) != 1:  # only U+0130 İ: full lower-casing adds a combining dot, the simple mapping is 'i'
        low = low[0]
    folded = low.casefold()
    if len(folded) == 1 and folded != low and folded.islower():  # ς→σ, ſ→s, µ→μ; not Cherokee (folds up)
        low = folded
    decomposed = unicodedata.normalize("NFD", low)
    if (
        len(decomposed) > 1
        and decomposed[0].isascii()
        and decomposed[0].isalpha()
        and all(unicodedata.combining(m) for m in decomposed[1:])
    ):
        return decomposed[0]
    return low


class _FoldTable(dict[int, str]):
    """`_fold_char` as a `str.translate` table, filled in as characters are met: folding a hit's text
    is then one C call, not a Python call per character."""

    def __missing__(self, code: int) -> str:
        folded = self[code] = _fold_char(chr(code))
        return folded


_FOLD_TABLE = _FoldTable()


def fold(text: str) -> str:
    """`text` case- and diacritic-folded like the FTS5 index (see the module docstring)."""
    if text.isascii():
        return text.lower()
    return text.translate(_FOLD_TABLE)


def _fold_with_map(text: str) -> tuple[str, list[int] | None]:
    """The folded text and, for each folded character, the index of the original character it came
    from (None when folding kept a one-to-one correspondence, the common case)."""
    if text.isascii():
        return text.lower(), None
    folded = text.translate(_FOLD_TABLE)
    if len(folded) == len(text):  # each character folds to at most one: none was dropped
        return folded, None
    return folded, [i for i, c in enumerate(text) if _FOLD_TABLE[ord(c)]]


_VOICED_MARKS = ("\u3099", "\u309a")  # what NFKC makes of half-width ﾞ ﾟ: compose with the kana before


@lru_cache(maxsize=8192)
def _nfkc_fold_char(c: str) -> str:
    return "".join(map(_fold_char, unicodedata.normalize("NFKC", c)))


def _compose_voiced(parts: list[str]) -> None:
    """Merge a lone voiced mark into the kana before it (ｶﾞ → カ + ゙ → ガ), in place."""
    prev = None  # index of the last non-empty part
    for i, part in enumerate(parts):
        if part in _VOICED_MARKS and prev is not None:
            composed = unicodedata.normalize("NFC", parts[prev][-1] + part)
            if len(composed) == 1:
                parts[prev] = parts[prev][:-1] + composed
                parts[i] = ""
                continue
        if part:
            prev = i


def _fold_with_map_nfkc(text: str) -> tuple[str, list[int] | None]:
    """Like `_fold_with_map`, after NFKC per character (the bigram table's normalisation), so ｶﾞｲﾄﾞ
    reads as ガイド and ＡＢＣ as abc."""
    if text.isascii():
        return text.lower(), None
    parts = list(map(_nfkc_fold_char, text))
    folded = "".join(parts)
    if "\u3099" in folded or "\u309a" in folded:
        _compose_voiced(parts)
        folded = "".join(parts)
    if len(folded) == len(text) and all(parts):
        return folded, None
    return folded, [i for i, part in enumerate(parts) for _ in part]


def _to_original(start: int, end: int, source: list[int] | None, n_folded: int, n_text: int) -> tuple[int, int]:
    """Map a folded span [start, end) back to the original characters."""
    if source is None:
        return start, end
    o_start = source[start]
    if end >= n_folded:
        o_end = n_text  # also takes the marks that folded away at the very end
    elif source[end] == source[end - 1]:
        o_end = source[end - 1] + 1  # the match ends inside one character's expansion
    else:
        o_end = source[end]  # up to the next kept character: includes marks folded away in between
    return o_start, o_end


@lru_cache(maxsize=256)  # one query's hits ask for the same terms; parsing them is most of a short hit's spans
def _terms(query: str, cjk_bigram: bool = False) -> tuple[str, ...]:
    """Folded, sorted, deduplicated, capped: sorting before the cap keeps spans word-order independent.

    With `cjk_bigram` the query is NFKC-normalised and its CJK terms (runs of 1-2 characters, bigrams of
    longer runs: what the bigram leg matched) join groove's phrases."""
    if cjk_bigram:
        query = nfkc(query)
    folded = {fold(t) for t in (*split_terms(query), *(cjk_terms(query) if cjk_bigram else ()))}
    folded.discard("")
    return tuple(sorted(folded)[:MATCH_SPAN_MAX_TERMS])


def _occurrences(haystack: str, term: str, budget: int) -> list[tuple[int, int]]:
    """The first `budget` non-overlapping occurrences, left to right (Rust `match_indices`)."""
    out: list[tuple[int, int]] = []
    pos = haystack.find(term)
    while pos >= 0 and len(out) < budget:
        out.append((pos, pos + len(term)))
        pos = haystack.find(term, pos + len(term))
    return out


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sort and merge overlapping spans; merely adjacent spans stay separate."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start < out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


_WORD = re.compile(r"[^\W_]+")
_SCRATCH = threading.local()  # one scratch FTS5 table per thread: searches run on several
_TERMS_KEPT = 200_000  # words whose terms a thread remembers (a few tens of MB at most)


def _word_table() -> sqlite3.Connection:
    conn = getattr(_SCRATCH, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.execute(f"CREATE VIRTUAL TABLE w USING fts5(x, tokenize='{WORDS_TOKENIZE}')")
        conn.execute("CREATE VIRTUAL TABLE wv USING fts5vocab(w, 'instance')")
        _SCRATCH.conn = conn
        _SCRATCH.terms = {}
    return conn


def _terms_of(words: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each word's terms as the word table's tokenizer gives them (folded, stemmed, in order), asked of
    FTS5 once per distinct word and thread and remembered: a result list repeats most of its words."""
    conn = _word_table()
    known: dict[str, tuple[str, ...]] = _SCRATCH.terms
    new = [w for w in dict.fromkeys(words) if w not in known]
    if new:
        if len(known) + len(new) > _TERMS_KEPT:
            known.clear()
        conn.execute("DELETE FROM w")
        conn.executemany("INSERT INTO w(rowid, x) VALUES (?, ?)", enumerate(new))
        got: dict[int, list[str]] = {}
        for doc, term in conn.execute("SELECT doc, term FROM wv ORDER BY doc, offset"):
            got.setdefault(doc, []).append(term)
        for i, w in enumerate(new):
            known[w] = tuple(got.get(i, ()))
    return {w: known[w] for w in words}


def _holds(terms: tuple[str, ...], phrase: tuple[str, ...]) -> bool:
    """Whether `phrase` occurs in `terms` as consecutive terms (FTS5's phrase match within one row)."""
    n = len(phrase)
    return n > 0 and any(terms[i : i + n] == phrase for i in range(len(terms) - n + 1))


def _word_spans(words: Sequence[str], content: str) -> list[tuple[int, int]]:
    """The content's whole words the word leg matches for `words` (each word of a phrase on its own): a
    content word whose terms hold a query word's terms, as `w MATCH "word"` finds it."""
    pieces = _pieces(tuple(words))
    if not pieces:
        return []
    if content.isascii():
        candidates = _ascii_candidates(pieces)
        if candidates is not None:
            return _ascii_word_spans(content, candidates)
    lowered = content.lower()
    # Where lowering keeps every place, the words are read from the lowered text itself; else from the
    # content, each lowered on its own, so the spans stay the content's.
    same_places = len(lowered) == len(content)  # (lowering only ever lengthens a character)
    found = _WORD.findall(lowered) if same_places else [w.lower() for w in _WORD.findall(content)]
    distinct = list(dict.fromkeys(found))
    if not distinct:
        return []
    terms = _terms_of([*distinct, *pieces])
    wanted = {terms[p] for p in pieces if terms[p]}
    single = {t[0] for t in wanted if len(t) == 1}
    longer = [t for t in wanted if len(t) > 1]
    matched = {word for word in distinct if not single.isdisjoint(terms[word])}
    if longer:
        matched.update(word for word in distinct if any(_holds(terms[word], t) for t in longer))
    if not matched:
        return []
    if same_places:
        return _whole_word_places(lowered, matched)[:_SPAN_BUDGET]
    return [m.span() for m in _WORD.finditer(content) if m.group().lower() in matched][:_SPAN_BUDGET]


# Porter stemming rewrites only a word's end: FTS5's stem of a word keeps the word's start up to, at
# most, the stem's last character ("happy" → "happi", "hoping" → "hope"); the tests check that on words
# built from every suffix the stemmer rewrites. One character more is allowed for margin.
_STEM_TAIL = 2


@lru_cache(maxsize=256)  # one query's hits ask for the same words
def _ascii_candidates(pieces: tuple[str, ...]) -> tuple[re.Pattern[str], frozenset[str]] | None:
    """For ASCII content: a pattern that finds every word token that may stem to one of the pieces'
    terms (a token starting with all of a term but its last `_STEM_TAIL` characters, or its first), and
    the terms themselves. None when a piece is more than one term (a phrase of several words, which the
    general path matches), or no piece has a term an ASCII word can stem to."""
    terms = _terms_of(pieces)
    if any(len(terms[p]) > 1 for p in pieces):
        return None
    wanted = frozenset(t[0] for t in terms.values() if t and t[0].isascii())
    if not wanted:
        return None
    prefixes = sorted({t[: max(1, len(t) - _STEM_TAIL)] for t in wanted}, key=lambda p: (-len(p), p))
    # ASCII word characters as `_WORD` reads them ([^\W_] is [A-Za-z0-9] there), over the lowered text.
    pattern = re.compile(rf"(?<![a-z0-9])(?:{'|'.join(map(re.escape, prefixes))})[a-z0-9]*")
    return pattern, wanted


def _ascii_word_spans(content: str, candidates: tuple[re.Pattern[str], frozenset[str]]) -> list[tuple[int, int]]:
    """`_word_spans` over ASCII content: only the tokens that may stem to a wanted term are asked of the
    tokenizer, instead of every distinct word of the hit."""
    pattern, wanted = candidates
    lowered = content.lower()
    found = set(pattern.findall(lowered))
    if not found:
        return []
    terms = _terms_of(list(found))
    matched = {word for word in found if not wanted.isdisjoint(terms[word])}
    return _whole_word_places(lowered, matched)[:_SPAN_BUDGET] if matched else []


@lru_cache(maxsize=256)  # one query's hits ask for the same words
def _pieces(words: tuple[str, ...]) -> tuple[str, ...]:
    """The word tokens of the words the leg matched, distinct, in order, capped."""
    return tuple(dict.fromkeys(p for w in words for p in _WORD.findall(w)))[:MATCH_SPAN_MAX_TERMS]


def _whole_word_places(text: str, words: set[str]) -> list[tuple[int, int]]:
    """Where each of `words` (runs of word characters) stands whole in `text`, left to right: found by
    `str.find` and kept where no word character touches it on either side — a token `_WORD` reads. Most
    of a hit's text holds none of the matched words, so this never walks every token of it. (An
    occurrence that fails its sides cannot hide one that passes before its end: its characters are all
    word characters, so the next whole one starts after it.)"""
    out: list[tuple[int, int]] = []
    end = len(text)
    for word in words:
        size = len(word)
        pos = text.find(word)
        while pos >= 0:
            stop = pos + size
            if (pos == 0 or not _is_word_char(text[pos - 1])) and (stop == end or not _is_word_char(text[stop])):
                out.append((pos, stop))
            pos = text.find(word, stop)
    out.sort()
    return out


def _is_word_char(char: str) -> bool:
    """What `_WORD` (`[^\\W_]`) counts as a word character: Python's `\\w` is `isalnum()` plus `_`."""
    return char.isalnum()


def _japanese_spans(forms: Sequence[str], content: str, japanese: JapaneseAnalyzer) -> list[tuple[int, int]]:
    """The content's morphemes whose forms are among `forms`, each over its whole surface text. The runs
    are those of the NFKC-folded content (the word table's normalisation), mapped back to the original."""
    wanted = set(forms)
    folded, source = _fold_with_map_nfkc(content)
    out: list[tuple[int, int]] = []
    for run in cjk_runs(folded):
        if not is_japanese(run.group()):
            continue
        for begin, end, form in japanese.morphemes(run.group()):
            if form in wanted:
                out.append(_to_original(run.start() + begin, run.start() + end, source, len(folded), len(content)))
                if len(out) >= _SPAN_BUDGET:
                    return out
    return out


def match_spans(
    query: str,
    content: str,
    *,
    cjk_bigram: bool = False,
    words: Sequence[str] = (),
    japanese_forms: Sequence[str] = (),
    japanese: JapaneseAnalyzer | None = None,
) -> list[tuple[int, int]] | None:
    """Character spans of `query`'s terms in `content` (§H); callers pass the query's positive text.

    None when the query is blank or the content is over 262,144 UTF-8 bytes; [] when nothing matched.
    `cjk_bigram` (search passes it for queries the bigram leg served) also highlights CJK words under
    3 characters and the bigrams of longer CJK runs, comparing NFKC-normalised text. `japanese_forms`
    (with the analyzer that made them) adds the whole Japanese morphemes the word leg matched.
    """
    q = trim(query)
    if not q:
        return None
    if len(content) * 4 > MATCH_SPAN_MAX_CONTENT_BYTES and len(content.encode("utf-8", "surrogatepass")) > (
        MATCH_SPAN_MAX_CONTENT_BYTES
    ):
        return None
    terms = _terms(q, cjk_bigram)
    whole = _word_spans(words, content) if words else []
    if japanese is not None and japanese_forms:
        whole += _japanese_spans(japanese_forms, content, japanese)
    if not terms:
        return _merge(whole)
    budget = max(1, _SPAN_BUDGET // len(terms))
    folded, source = _fold_with_map_nfkc(content) if cjk_bigram else _fold_with_map(content)
    spans: list[tuple[int, int]] = []
    for term in terms:
        spans.extend(_occurrences(folded, term, budget))
    if source is not None:
        spans = [_to_original(s, e, source, len(folded), len(content)) for s, e in spans]
    return _merge(spans + whole)
