"""match_spans: reference §H examples, our every-script deviation, and properties."""

from __future__ import annotations

import itertools
import string
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groove_tui.engine.analysis.query import parse_query, query_phrases
from groove_tui.engine.stages.spans import fold, match_spans


def texts(content: str, spans: list[tuple[int, int]] | None) -> list[str]:
    assert spans is not None
    return [content[s:e] for s, e in spans]


# ---------------------------------------------------------------- §H examples (groove-identical)


def test_reference_examples() -> None:
    assert match_spans("tokio spawn", "use tokio::spawn for async") == [(4, 9), (11, 16)]
    assert match_spans('"Foundry Local"', "Foundry Local") == [(0, 13)]
    assert match_spans("Foundry Local", "Foundry Local") == [(0, 7), (8, 13)]
    assert match_spans('"Foundry Local" Foundry', "Foundry Local runs the Foundry stack") == [(0, 13), (23, 30)]
    assert match_spans("groove-svc svc-server", "see groove-svc-server here") == [(4, 21)]
    assert match_spans("a", "a" * 500) == [(i, i + 1) for i in range(100)]
    assert match_spans("Rust rust", "Rust is rust") == match_spans("rust", "Rust is rust") == [(0, 4), (8, 12)]
    assert match_spans("ML pipelines", "ML pipelines") == [(3, 12)]


def test_blank_query_and_no_match() -> None:
    assert match_spans("", "anything") is None
    assert match_spans(" \u3000\t", "anything") is None
    assert match_spans("zzz", "anything") == []
    assert match_spans("abc", "") == []


def test_whitespace_fallback_terms() -> None:
    assert match_spans("ab cd", "xx ab yy cd") == [(3, 5), (9, 11)]
    # a non-ASCII separator is not a term: rust、tokio has the phrases rust and tokio
    assert match_spans("rust、tokio", "tokio and rust") == [(0, 5), (10, 14)]


def test_adjacent_spans_stay_separate_and_overlaps_merge() -> None:
    assert match_spans("abc def", "abcdef") == [(0, 3), (3, 6)]
    assert match_spans("abcd cdef", "abcdef") == [(0, 6)]


def test_content_size_limit() -> None:
    exact = "x" * (262_144 - 3) + "abc"
    assert match_spans("abc", exact) == [(262_141, 262_144)]
    assert match_spans("abc", exact + "y") is None
    assert match_spans("abc", "あ" * 87_382) is None  # 87,382 chars but 262,146 bytes


def test_budget_is_shared_between_terms() -> None:
    content = " ".join(["abc"] * 60 + ["xyz"] * 60)
    spans = match_spans("abc xyz", content)
    assert spans is not None and len(spans) == 100  # budget 50 each
    assert texts(content, spans).count("abc") == 50


def test_the_positive_text_is_what_gets_highlighted() -> None:
    pq = parse_query("xy -abc z")
    assert match_spans(pq.positive_text, "xy abc z") == [(0, 2), (7, 8)]  # never the excluded -abc
    pq = parse_query('foo -"bar"-baz')
    assert match_spans(pq.positive_text, "foo -baz bar") == [(0, 3), (4, 8)]


# ---------------------------------------------------------------- every script (our deviation)


def test_japanese_is_highlighted() -> None:
    content = "ハイブリッド検索では再ランキングの評価について述べる。ランキングは重要。"
    spans = match_spans("再ランキングの評価について", content)
    # phrases 再ランキング, ランキング, の評価, について: adjacent spans stay separate
    assert texts(content, spans) == ["再ランキング", "の評価", "について", "ランキング"]
    assert spans == [(10, 16), (16, 19), (19, 23), (27, 32)]
    assert texts("東京の再ランキング", match_spans("ランキング", "東京の再ランキング")) == ["ランキング"]


def test_accents_fold_like_fts5() -> None:
    content = "Café CAFE cafe\u0301 kafé"
    for query in ("café", "cafe", "CAFÉ", "cafe\u0301"):
        assert texts(content, match_spans(query, content)) == ["Café", "CAFE", "cafe\u0301"]


def test_sharp_s_and_dotted_i() -> None:
    assert texts("STRASSE Straße", match_spans("straße", "STRASSE Straße")) == ["Straße"]
    content = "İSTANBUL ıstanbul istanbul"
    assert texts(content, match_spans("İstanbul", content)) == ["İSTANBUL", "istanbul"]
    assert fold("ΣΟΦΟΣ σοφος") == "σοφοσ σοφοσ"


def test_offsets_are_characters_in_mixed_content() -> None:
    content = "👨\u200d👩\u200d👧 家族 e\u0301te\u0301 検索エンジン 😀 Ωmega"
    spans = match_spans("検索エンジン été Ωmega", content)
    assert texts(content, spans) == ["e\u0301te\u0301", "検索エンジン", "Ωmega"]
    assert spans == [(9, 14), (15, 21), (24, 29)]
    zwj = match_spans("👩\u200d👧", content)  # a short phrase: whitespace fallback
    assert texts(content, zwj) == ["👩\u200d👧"]


def test_marks_that_fold_away_stay_inside_the_span() -> None:
    assert match_spans("abc", "\u0301abc\u0301\u0301 x") == [(1, 6)]
    assert match_spans("abc", "ab\u0301c") == [(0, 4)]


def test_fold() -> None:
    assert fold("Hello WORLD") == "hello world"
    assert fold("ÀÉÎÕÜÇÑ") == "aeiouсn".replace("с", "c")
    assert fold("e\u0301") == "e"
    assert fold("ß") == "ß"
    assert fold("日本語ＡＢＣ") == "日本語ａｂｃ"
    assert fold("Øl") == "øl"  # no decomposition: FTS5 keeps ø


def test_fold_matches_fts5_on_latin_and_greek() -> None:
    import sqlean

    db = sqlean.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(c, tokenize='trigram remove_diacritics 1 case_sensitive 0')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    cps = [*range(0x20, 0x250), *range(0x370, 0x3FF), *range(0x400, 0x4FF), *range(0x1E00, 0x1F00)]
    cps = [cp for cp in cps if cp not in (0x1E0, 0x1E1)]  # ǡ: SQLite keeps it, NFD says a + 2 marks
    db.executemany("INSERT INTO t(rowid, c) VALUES (?, ?)", ((cp, f"x{chr(cp)}y") for cp in cps))
    fts = {doc: term[1:-1] for term, doc in db.execute("SELECT term, doc FROM v")}
    mismatches = [hex(cp) for cp in cps if fold(chr(cp)) != fts.get(cp, "")]
    # Unicode-version differences only (letters cased after SQLite's tables: Ϳ)
    assert len(mismatches) <= 2, mismatches


# ---------------------------------------------------------------- properties


def check_shape(spans: list[tuple[int, int]] | None, content: str) -> None:
    assert spans is not None
    assert len(spans) <= 100
    for s, e in spans:
        assert 0 <= s < e <= len(content)
    for (_, e1), (s2, _) in itertools.pairwise(spans):
        assert e1 <= s2  # sorted and disjoint (adjacent allowed)


any_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=200)
mixed = st.text(alphabet='aAbBcé\u0301ßİ日本語ランキング😀\u200d -:"', max_size=300)


@settings(max_examples=300, deadline=None)
@given(query=st.one_of(any_text, mixed), content=st.one_of(any_text, mixed))
def test_spans_are_sorted_disjoint_bounded_and_deterministic(query: str, content: str) -> None:
    spans = match_spans(query, content)
    if spans is None:
        assert not query.strip(
            " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
            "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
        )
        return
    check_shape(spans, content)
    assert match_spans(query, content) == spans


word = st.text(alphabet=string.ascii_lowercase, min_size=3, max_size=6)


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(word, min_size=1, max_size=32, unique=True),
    filler=st.text(alphabet="xyz ,.", max_size=6),
    data=st.data(),
)
def test_every_term_occurrence_is_covered_when_the_budget_allows(words: list[str], filler: str, data) -> None:
    order = data.draw(st.permutations(words))
    content = filler.join(w.upper() if i % 2 else w for i, w in enumerate(order))
    spans = match_spans(" ".join(words), content)
    check_shape(spans, content)
    budget = 100 // len(words)
    lower = content.lower()
    for w in words:
        pos, found = lower.find(w), 0
        while pos >= 0 and found < budget:
            assert any(s <= pos and pos + len(w) <= e for s, e in spans), (w, pos)
            found += 1
            pos = lower.find(w, pos + len(w))


query_word = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters='"', exclude_categories=["Zs", "Cc"]),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(words=st.lists(query_word, min_size=1, max_size=12), content=st.one_of(any_text, mixed), data=st.data())
def test_spans_do_not_depend_on_word_order(words: list[str], content: str, data) -> None:
    query = " ".join(words)
    if len(query_phrases(query)) >= 32:
        return
    shuffled = " ".join(data.draw(st.permutations(words)))
    assert match_spans(shuffled, content) == match_spans(query, content)


def groove_reference(query: str, content: str) -> list[tuple[int, int]] | None:
    """§H for ASCII text, transcribed step by step (byte offsets = character offsets here)."""
    ascii_ws = " \t\n\v\f\r"
    q = query.strip(ascii_ws)
    if not q:
        return None
    terms = list(query_phrases(q)) or [t for t in q.translate({ord(c): " " for c in ascii_ws}).split(" ") if t]
    terms = sorted({t.lower() for t in terms})[:100]
    budget = max(1, 100 // len(terms))
    lower = content.lower()
    spans = []
    for t in terms:
        start, n = 0, 0
        while n < budget and (i := lower.find(t, start)) >= 0:
            spans.append((i, i + len(t)))
            start, n = i + len(t), n + 1
    merged: list[list[int]] = []
    for s, e in sorted(spans):
        if merged and s < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return [(s, e) for s, e in merged]


ascii_text = st.text(alphabet="abcABC -_:\"',\t", max_size=120)


@settings(max_examples=400, deadline=None)
@given(query=ascii_text, content=st.text(alphabet="abcABC -_:\"',\t\n", max_size=400))
def test_ascii_results_equal_groove(query: str, content: str) -> None:
    assert match_spans(query, content) == groove_reference(query, content)


@pytest.mark.parametrize("n", [1, 99, 100, 101, 150])
def test_at_most_100_terms(n: int) -> None:
    words = [f"t{i:03}" for i in range(n)]
    content = " ".join(words)
    spans = match_spans(" ".join(f'"{w}"' for w in words), content)  # quoted: no 32-phrase cap
    check_shape(spans, content)
    assert len(spans) == min(n, 32)  # query_phrases still caps at 32 distinct phrases
    ws = match_spans(" ".join(f"{w[:2]}" for w in words), content)  # 2-char words: whitespace fallback
    check_shape(ws, content)


def test_nfd_content_against_nfc_query() -> None:
    content = unicodedata.normalize("NFD", "Crème brûlée à la française")
    assert texts(content, match_spans("crème brûlée française", content)) == [
        unicodedata.normalize("NFD", w) for w in ("Crème", "brûlée", "française")
    ]


def test_occurrences_do_not_overlap() -> None:
    """Rust `match_indices`: after a match the scan resumes at its end, so `aaa` in `aaaa` is one span
    (an overlapping scan would find [1, 4) too and merge them into [0, 4))."""
    assert match_spans("aaa", "aaaa") == [(0, 3)]
    assert match_spans("aaa", "aaaaaa") == [(0, 3), (3, 6)]  # adjacent, not merged
    assert match_spans("abab", "abababab") == [(0, 4), (4, 8)]
    assert len(match_spans("aaa", "a" * 400)) == 100 and match_spans("aaa", "a" * 400)[1] == (3, 6)


_WORD_VOCAB = [
    "extract", "extracting", "Extracts", "EXTRACTED", "tar", "target", "tars", "café", "CAFE", "cafés",
    "İstanbul", "istanbul", "straße", "STRASSE", "x2", "x²", "groove.toml", "snake_case", "don't",
    "running", "runs", "ran", "1984", "naïve", "naive", "ﬁle", "file", "Files", "ΣΊΣΥΦΟΣ", "σίσυφος",
]  # fmt: skip


def _word_spans_by_fts5(words, content):
    """The reference: every distinct content word in a scratch word table, asked with FTS5's MATCH."""
    import re

    import sqlean

    from groove_tui.engine.analysis.query import fts_phrase
    from groove_tui.engine.analysis.words import WORDS_TOKENIZE

    token = re.compile(r"[^\W_]+")
    found = [(m.start(), m.end(), m.group().lower()) for m in token.finditer(content)]
    distinct = list(dict.fromkeys(t for *_, t in found))
    pieces = list(dict.fromkeys(p for w in words for p in token.findall(w)))
    if not distinct or not pieces:
        return []
    conn = sqlean.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE w USING fts5(x, tokenize='{WORDS_TOKENIZE}')")
    conn.executemany("INSERT INTO w(rowid, x) VALUES (?, ?)", enumerate(distinct))
    matched = set()
    for piece in pieces:
        matched.update(
            distinct[r] for (r,) in conn.execute("SELECT rowid FROM w WHERE w MATCH ?", (fts_phrase(piece),))
        )
    return [(s, e) for s, e, t in found if t in matched][:100]


@settings(max_examples=300, deadline=None)
@given(
    content=st.lists(st.sampled_from([*_WORD_VOCAB, " ", ", ", "-", "\n", "(", ")"]), max_size=40).map("".join),
    words=st.lists(st.sampled_from(_WORD_VOCAB), min_size=1, max_size=4),
)
def test_whole_word_spans_are_the_words_fts5_matches(content, words):
    """The word leg's highlights, found through the tokenizer's remembered terms, equal asking FTS5's
    MATCH of every distinct word of the content (stems, folds, diacritics, phrases of several tokens)."""
    from groove_tui.engine.stages.spans import _word_spans

    assert _word_spans(words, content) == _word_spans_by_fts5(words, content)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(["a", "b", " ", "é", "東", "😀", "\n"]), max_size=40),
    data=st.data(),
)
def test_byte_spans_are_the_utf8_offsets_of_the_character_spans(text, data):
    """The JSON's byte spans: each character span's start and end counted in UTF-8 bytes, for ASCII text
    (one byte a character) and for text with two-, three- and four-byte characters alike."""
    from groove_tui.engine.types import Span, byte_spans

    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    spans = [Span(a, b) for a, b in zip(cuts[::2], cuts[1::2], strict=False)]
    want = [(len(text[: s.start].encode()), len(text[: s.end].encode())) for s in spans]
    assert byte_spans(text, spans) == want


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(["a", "b", "_", " ", "2", "²", "é", "\u0301", "東", "-", "ǅ"]), max_size=60),
    words=st.sets(
        st.text(alphabet=st.sampled_from(["a", "b", "2", "²", "é", "東", "ǅ"]), min_size=1, max_size=3), max_size=4
    ),
)
def test_whole_words_found_by_search_are_the_tokens_equal_to_them(text, words):
    """Finding each matched word with `str.find` and checking its sides gives exactly the tokens a walk
    over every word token gives (underscores, combining marks, digits and superscripts as neighbours)."""
    import re

    from groove_tui.engine.stages.spans import _whole_word_places

    walked = [m.span() for m in re.finditer(r"[^\W_]+", text) if m.group() in words]
    assert _whole_word_places(text, set(words)) == walked


_ASCII_VOCAB = [
    "relational", "relate", "related", "relating", "happy", "happiness", "happily", "ability", "able",
    "sensibility", "sensible", "conditional", "generalization", "general", "generate", "the", "these",
    "thesis", "then", "run", "running", "runner", "cells", "cell", "cellular", "x2", "1984", "groove.toml",
    "snake_case", "don't", "ies", "sses", "agreed", "hopping", "hoping", "fizzed", "Tar", "TARGET", "tars",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    content=st.lists(st.sampled_from([*_ASCII_VOCAB, " ", ", ", "-", "\n", "(", ")", "_"]), max_size=40).map("".join),
    words=st.lists(st.sampled_from(_ASCII_VOCAB), min_size=1, max_size=4),
)
def test_whole_word_spans_in_ascii_text_are_the_words_fts5_matches(content, words):
    """ASCII text takes the short way (only the tokens that may stem to a query term are asked of the
    tokenizer): its highlights still equal FTS5's MATCH of every distinct word."""
    from groove_tui.engine.stages.spans import _ascii_candidates, _pieces, _word_spans

    assert _ascii_candidates(_pieces(tuple(words))) is not None
    assert _word_spans(words, content) == _word_spans_by_fts5(words, content)


def test_a_porter_stem_keeps_the_start_of_its_word():
    """What the short way for ASCII text relies on: FTS5's stem of a word is the word's own start up to
    its last `_STEM_TAIL` characters, for words built from every suffix the stemmer rewrites."""
    import itertools

    import sqlean

    from groove_tui.engine.analysis.words import WORDS_TOKENIZE
    from groove_tui.engine.stages.spans import _STEM_TAIL

    suffixes = [
        "s", "es", "ies", "sses", "ss", "ed", "eed", "ing", "y", "ly", "ily", "ably", "ibly", "ality",
        "ility", "ibility", "ability", "bility", "iviti", "ivity", "aliti", "ational", "tional", "ation",
        "ization", "izer", "ator", "alism", "iveness", "fulness", "ousness", "ousli", "ously", "entli",
        "ently", "eli", "ely", "alli", "ally", "enci", "ency", "anci", "ancy", "logi", "logy", "icate",
        "ative", "alize", "iciti", "icity", "ical", "ically", "ful", "ness", "al", "ance", "ence", "er", "ic",
        "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
        "e", "ll", "at", "bl", "iz", "ied", "ying",
    ]  # fmt: skip
    roots = ["a", "ab", "con", "rel", "happ", "sens", "hop", "fizz", "y", "eye", "i", "oa", "spr", "gen"]
    words = sorted({r + a + b for r in roots for a, b in itertools.product(["", *suffixes], repeat=2)})
    conn = sqlean.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE w USING fts5(x, tokenize='{WORDS_TOKENIZE}')")
    conn.execute("CREATE VIRTUAL TABLE wv USING fts5vocab(w, 'instance')")
    conn.executemany("INSERT INTO w(rowid, x) VALUES (?, ?)", enumerate(words))
    stems = dict(conn.execute("SELECT doc, term FROM wv"))
    assert len(stems) == len(words)
    for i, word in enumerate(words):
        stem = stems[i]
        assert word.startswith(stem[: max(1, len(stem) - _STEM_TAIL)]), (word, stem)
