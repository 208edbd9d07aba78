"""parse_query / query_phrases: every example of reference §C (incl. §C.7) plus fuzzing against real FTS5."""

from __future__ import annotations

import logging
import unicodedata

import pytest
import sqlean
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from groove_tui.engine.analysis.query import (
    MAX_PHRASES,
    MAX_QUERY_BYTES,
    MIN_PHRASE_CHARS,
    CharClass,
    ParsedQuery,
    QueryError,
    classify,
    fts_phrase,
    parse_query,
    query_phrases,
    split_terms,
    split_whitespace,
    trim,
)


def expr(raw: str) -> str | None:
    return parse_query(raw).match_expr


def ors(*phrases: str) -> str:
    return " OR ".join(fts_phrase(p) for p in phrases)


# ---------------------------------------------------------------- §C.1 character classes


@pytest.mark.parametrize(
    ("char", "cls"),
    [
        ("再", CharClass.KANJI),
        ("々", CharClass.KANJI),
        ("〆", CharClass.KANJI),
        ("\U0002f800", CharClass.KANJI),
        ("ぁ", CharClass.HIRAGANA),
        ("\u3099", CharClass.HIRAGANA),
        ("ア", CharClass.KATAKANA),
        ("ー", CharClass.KATAKANA),
        ("・", CharClass.KATAKANA),
        ("ｱ", CharClass.KATAKANA),
        ("A", CharClass.OTHER_WORD),
        ("0", CharClass.OTHER_WORD),
        ("Ａ", CharClass.OTHER_WORD),
        ("п", CharClass.OTHER_WORD),
        ("한", CharClass.OTHER_WORD),
        ("_", CharClass.OTHER_WORD),
        ("-", CharClass.OTHER_WORD),
        ("\U00020bb7", CharClass.OTHER_WORD),
        ("〇", CharClass.OTHER_WORD),
        ("²", CharClass.OTHER_WORD),  # No
        # Other_Alphabetic: Devanagari vowel sign, Greek ypogegrammeni, circled letter (So)
        ("\u093f", CharClass.OTHER_WORD),
        ("\u0345", CharClass.OTHER_WORD),
        ("Ⓐ", CharClass.OTHER_WORD),
        ("\u094d", CharClass.SEPARATOR),  # virama is not alphabetic
        ("\u0301", CharClass.SEPARATOR),  # nor is a combining accent
        (" ", CharClass.SEPARATOR),
        ("\u3000", CharClass.SEPARATOR),
        (":", CharClass.SEPARATOR),
        ('"', CharClass.SEPARATOR),
        ("。", CharClass.SEPARATOR),
        ("\0", CharClass.SEPARATOR),
        ("･", CharClass.SEPARATOR),
        ("😀", CharClass.SEPARATOR),
        ("*", CharClass.SEPARATOR),
    ],
)
def test_character_classes(char: str, cls: CharClass) -> None:
    assert classify(char) is cls


def test_whitespace_is_rusts_white_space_not_pythons_isspace() -> None:
    assert trim("\u3000 a\u2003\n") == "a"
    assert trim("\x1ca\x1f") == "\x1ca\x1f"  # str.strip() would remove these
    assert split_whitespace(" a\x1cb  c\u3000d ") == ("a\x1cb", "c", "d")


def test_accepted_roughness_is_kept() -> None:
    # CJK Extension B and 〇 split kanji runs; visible only when both sides are long enough
    assert query_phrases("\U00020bb7野家") == ("\U00020bb7野家",)
    assert query_phrases("\U00020bb7野家具店") == ("\U00020bb7野家具店", "野家具店")
    assert query_phrases("東京〇丁目") == ("東京〇丁目", "東京〇")
    # no normalisation: NFD バ (ハ + U+3099, a Hiragana-class mark) splits differently from NFC
    nfc = "バッテリ"
    nfd = unicodedata.normalize("NFD", nfc)
    assert nfc != nfd and query_phrases(nfc) != query_phrases(nfd)
    # full-width middle dot joins, half-width splits
    assert query_phrases("クロス・エンコーダ") == ("クロス・エンコーダ",)
    assert query_phrases("クロス･エンコーダ") == ("クロス", "エンコーダ")
    # punctuation-only runs are phrases
    assert query_phrases("---") == ("---",)
    assert query_phrases("___") == ("___",)
    assert query_phrases("--") == ()


# ---------------------------------------------------------------- §C.2 quotes


def test_quoted_regions() -> None:
    assert expr('"Foundry Local" の設定') == ors("Foundry Local", "の設定")
    assert parse_query('"say ""hi"""').include == ('say "hi"',)
    assert expr('"say ""hi"""') == '"say ""hi"""'
    assert expr('"ab""cd"') == '"ab""cd"'
    assert expr('"ab" テスト') == ors("テスト")
    assert expr('"" テスト') == ors("テスト")
    assert expr('"再ランキングの評価について"') == ors("再ランキングの評価について")


def test_an_unclosed_quote_is_an_ordinary_character() -> None:
    assert expr('abc "def') == '"abc" OR "def"'
    assert parse_query('abc "de"" fg').include == ("abc",)  # one Plain segment: abc | de | fg
    assert query_phrases('"abc" "de"" fghi') == ("abc", "fghi")


def test_quote_boundaries_stop_joining() -> None:
    assert expr('再"ランキング"') == ors("ランキング")
    assert expr('"ランキング"化') == ors("ランキング")


def test_nul_never_reaches_fts() -> None:
    assert expr('"a\0bc"') is None
    assert expr("a\0b") is None
    assert parse_query("abc\0def").include == ("abc", "def")


# ---------------------------------------------------------------- §C.3 / §C.4 groups, runs, emit_group


@pytest.mark.parametrize(
    ("raw", "phrases"),
    [
        ("再ランキングの評価について", ("再ランキング", "ランキング", "の評価", "について")),
        ("sqlite-vec", ("sqlite-vec",)),
        ("E0382", ("E0382",)),
        ("クロス・エンコーダ", ("クロス・エンコーダ",)),
        ("システム化", ("システム化", "システム")),
        ("の再ランキング", ("の再ランキング", "ランキング")),
        ("の評価は", ("の評価は", "の評価")),
        ("再ランキング化", ("再ランキング化", "再ランキング", "ランキング")),
        ("評価・分析", ("評価・分析", "評価・")),
        ("AI について", ("について",)),
        ("再 ランキング", ("ランキング",)),
        ("sagashiro-embed-r4 の", ("sagashiro-embed-r4",)),
        ("02:00 UTC", ("UTC",)),
        ("retry budget の設定", ("retry", "budget", "の設定")),
        ("ＡＢＣ検索", ("ＡＢＣ検索", "ＡＢＣ")),
        ("abcｶﾀｶﾅ", ("abc", "ｶﾀｶﾅ")),
        ("あ亜ア", ("あ亜ア",)),
        ("サーバー", ("サーバー",)),
        ("代々木", ("代々木",)),
        ("한국어 Привет", ("한국어", "Привет")),
        ("評価", ()),
        ("評価は", ("評価は",)),
        ("abc abc def", ("abc", "def")),
        ("ランキング 再ランキング", ("ランキング", "再ランキング")),
        ("-async", ("-async",)),  # query_phrases has no exclusion syntax (v1.0.0 reading)
    ],
)
def test_phrases(raw: str, phrases: tuple[str, ...]) -> None:
    assert query_phrases(raw) == phrases


def test_the_compiled_expression() -> None:
    assert expr("再ランキングの評価について") == '"再ランキング" OR "ランキング" OR "の評価" OR "について"'
    assert expr("E0382") == '"E0382"'
    assert expr("sqlite-vec") == '"sqlite-vec"'
    assert expr("エラー") == '"エラー"'


# ---------------------------------------------------------------- §C.5 dedup and cap


def words(n: int, prefix: str = "w") -> list[str]:
    return [f"{prefix}{i:02}" for i in range(n)]


def test_the_cap_keeps_the_first_32_distinct_phrases_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="groove_tui.query"):
        pq = parse_query(" ".join(words(40)))
    assert pq.include == tuple(words(32))
    assert pq.match_expr == ors(*words(32))
    assert pq.truncated
    assert len([r for r in caplog.records if r.name == "groove_tui.query"]) == 1


def test_dedup_happens_before_the_cap(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="groove_tui.query"):
        pq = parse_query(" ".join(["w00", *words(32), "w05"]))
        assert pq.include == tuple(words(32)) and not pq.truncated
        assert parse_query(" ".join(words(33))).include == tuple(words(32))
    assert len(caplog.records) == 1  # only the 33-distinct query warned


def test_query_phrases_and_split_terms_never_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="groove_tui.query"):
        assert len(query_phrases(" ".join(words(40)))) == MAX_PHRASES
        split_terms(" ".join(words(40)))
    assert caplog.records == []


def test_realistic_queries_stay_well_under_the_cap() -> None:
    for raw in [
        "ハイブリッド検索の再ランキングをどう評価するか",
        "Foundry Local と ONNX Runtime の互換 API 設定手順",
        "context window compaction strategies for long agent sessions",
    ]:
        assert len(query_phrases(raw)) <= 16


# ---------------------------------------------------------------- §C.6 expression and fallbacks


def test_fts5_operators_are_never_syntax() -> None:
    assert expr("foo OR bar") == '"foo" OR "bar"'
    assert expr("heading:foo") == '"heading" OR "foo"'
    assert expr('foo "bar" AND') == '"foo" OR "bar" OR "AND"'
    assert expr("NEAR(abc def)*") == '"NEAR" OR "abc" OR "def"'


def test_whole_query_fallback() -> None:
    assert expr("AI と ML") == '"AI と ML"'
    assert expr("  AI と ML  ") == '"AI と ML"'
    assert expr("評価･分析") == '"評価･分析"'
    assert expr("!!! ??? 、。") == '"!!! ??? 、。"'
    assert expr('""""') == '"' * 10  # content '"' is 1 char, so the fallback quotes all 4 quotes
    assert parse_query("AI と ML").include == ()


@pytest.mark.parametrize("raw", ["ab", " a ", "", "   ", '"a\0bc"', "\u3000"])
def test_vector_only_queries(raw: str) -> None:
    pq = parse_query(raw)
    assert pq.match_expr is None and pq.positive_expr is None and pq.include == ()
    assert pq.positive_text == raw and pq.exclusion_groups == 0


# ---------------------------------------------------------------- §C.7 exclusions


def test_exclusion_expressions() -> None:
    pq = parse_query('rust tokio -async -"sync io"')
    assert pq.match_expr == '("rust" OR "tokio") NOT ("async" OR "sync io")'
    assert pq.include == ("rust", "tokio") and pq.exclude == ("async", "sync io")
    assert pq.negative_expr == '"async" OR "sync io"' and pq.positive_expr == '"rust" OR "tokio"'
    assert pq.exclusion_groups == 2
    assert expr("foo -bar") == '("foo") NOT ("bar")'
    assert expr("AI と ML -foo") == '("AI と ML") NOT ("foo")'


def test_without_exclusions_the_expression_is_the_v1_0_one() -> None:
    pq = parse_query("rust async")
    assert pq.match_expr == pq.positive_expr == '"rust" OR "async"'
    assert pq.negative_expr is None and pq.exclude == ()


def test_short_positive_regions_leave_the_fts_leg_out_but_still_exclude() -> None:
    pq = parse_query("xy -abc z")
    assert pq.match_expr is None and pq.positive_expr is None
    assert pq.exclude == ("abc",) and pq.negative_expr == '"abc"'
    assert pq.positive_text == "xy z"


def test_fallback_applies_per_positive_region() -> None:
    # joined, the positive text "AI と ML" would be one phrase that is not a substring of the raw query
    assert expr("AI と -foo ML x") == '("AI と" OR "ML x") NOT ("foo")'
    assert expr("AI -foo AI") is None  # each region under 3 chars


def test_excluded_words_are_tokenised_by_the_positive_rules() -> None:
    assert parse_query("foo -再ランキング").exclude == ("再ランキング", "ランキング")
    assert parse_query('foo -"再ランキング"').exclude == ("再ランキング",)
    pq = parse_query("foo -ab")
    assert pq.exclude == () and pq.negative_expr is None and pq.match_expr == '"foo"'
    assert pq.exclusion_groups == 1
    # an excluded word runs to the next whitespace, not the next separator
    assert parse_query("foo -bar,bazz qux").exclude == ("bar", "bazz")
    assert parse_query("foo -bar,bazz qux").positive_text == "foo qux"


@pytest.mark.parametrize(
    ("raw", "include"),
    [
        ("foo,-bar", ("foo", "-bar")),
        ("kb-mcp", ("kb-mcp",)),
        ('"foo"-bar', ("foo", "-bar")),
        ("---", ("---",)),
        ("- foo", ("foo",)),
        ("foo -", ("foo",)),
        ("--foo", ("--foo",)),
        ('rust "async -tokio', ("rust", "async", "-tokio")),
        ('-"abc', ("abc",)),
        ('"-foo"', ("-foo",)),
        ("foo -!bar", ("foo", "bar")),
    ],
)
def test_where_a_hyphen_stays_literal(raw: str, include: tuple[str, ...]) -> None:
    pq = parse_query(raw)
    assert pq.include == include and pq.exclude == () and pq.exclusion_groups == 0
    assert pq.positive_text == raw


def test_a_full_width_space_starts_a_group() -> None:
    pq = parse_query("再ランキング\u3000-評価です")
    assert pq.exclude == ("評価です",) and pq.positive_text == "再ランキング"
    assert pq.include == ("再ランキング", "ランキング")


@pytest.mark.parametrize(
    ("raw", "positive"),
    [
        ("rust -async", "rust"),
        ("-async rust", "rust"),
        ("a -b c", "a c"),
        ("a -b -c", "a"),
        ('foo -"bar baz" qux', "foo qux"),
        ("rust  -async   tokio ", "rust  tokio "),
        ('foo -"bar"baz', "foo baz"),
        ("  rust  ", "  rust  "),  # no exclusion: exactly the raw string
    ],
)
def test_positive_text(raw: str, positive: str) -> None:
    assert parse_query(raw).positive_text == positive


@pytest.mark.parametrize("raw", ["-foo", "-a -b", "  -foo  ", '-"ab"', "-再ランキング", '-"x y z" -q'])
def test_exclusion_only_queries_are_refused(raw: str) -> None:
    with pytest.raises(QueryError, match=r"^query has no positive term"):
        parse_query(raw)


@pytest.mark.parametrize("raw", ["", "   ", '""', "xy -abc z", '"-foo"'])
def test_blank_and_short_queries_are_not_refused(raw: str) -> None:
    assert isinstance(parse_query(raw), ParsedQuery)


def test_each_polarity_has_its_own_cap(caplog: pytest.LogCaptureFixture) -> None:
    raw = " ".join(words(40)) + " " + " ".join("-" + w for w in words(40, "x"))
    with caplog.at_level(logging.WARNING, logger="groove_tui.query"):
        pq = parse_query(raw)
    assert pq.include == tuple(words(32)) and pq.exclude == tuple(words(32, "x"))
    assert pq.truncated and len(caplog.records) == 1
    only_neg = "keep " + " ".join("-" + w for w in words(33, "x"))
    assert parse_query(only_neg).truncated


# ---------------------------------------------------------------- size limit


def test_queries_over_1024_bytes_are_refused() -> None:
    parse_query("a" * MAX_QUERY_BYTES)
    parse_query("あ" * 341)  # 1023 bytes
    with pytest.raises(QueryError, match=r"^query is longer than 1024 bytes"):
        parse_query("a" * 1025)
    with pytest.raises(QueryError, match=r"^query is longer than 1024 bytes"):
        parse_query("あ" * 342)  # 342 chars, 1026 bytes


def test_surrogates_are_refused() -> None:
    with pytest.raises(QueryError):
        parse_query("abc\ud800")


def test_split_terms() -> None:
    assert split_terms('"Foundry Local" x') == ("Foundry Local",)
    assert split_terms("ab cd") == ("ab", "cd")  # whitespace fallback
    assert split_terms("AI と ML") == ("AI", "と", "ML")


def test_fts_phrase() -> None:
    assert fts_phrase('a "b" c') == '"a ""b"" c"'


# ---------------------------------------------------------------- FTS5: the expressions really run


@pytest.fixture(scope="module")
def fts() -> sqlean.Connection:
    db = sqlean.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(heading, context, content, "
        "tokenize='trigram remove_diacritics 1 case_sensitive 0')"
    )
    rows = [
        ("Rust", None, "rust tokio spawn"),
        ("Rust", None, "rust async runtime"),
        ("Sync", None, "tokio sync io helpers"),
        ("評価", None, "再ランキングの評価について"),
        ("ML", "AI > ML", "AI と ML の話"),
    ]
    db.executemany("INSERT INTO t(heading, context, content) VALUES (?, ?, ?)", rows)
    return db


def run(db: sqlean.Connection, match: str) -> set[int]:
    return {r[0] for r in db.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,))}


def test_exclusion_semantics_in_fts5(fts: sqlean.Connection) -> None:
    assert run(fts, expr('rust tokio -async -"sync io"')) == {1}
    assert run(fts, expr("rust tokio")) == {1, 2, 3}
    assert run(fts, parse_query("rust tokio -async").negative_expr) == {2}
    assert run(fts, expr("AI と ML")) == {5}
    assert run(fts, expr("ランキング")) == {4}
    assert run(fts, expr("heading:tokio")) == {1, 3}  # as a column filter it would match no row
    assert run(fts, expr("RUST")) == {1, 2}


_PIECES = [
    '"',
    '""',
    "-",
    '-"',
    " ",
    "  ",
    "\u3000",
    "\t",
    "\n",
    "\0",
    "*",
    "^",
    "(",
    ")",
    ":",
    "+",
    ",",
    "{",
    "}",
    "NEAR",
    "NEAR(",
    "NEAR/2",
    "AND",
    "OR",
    "NOT",
    "heading:",
    "content:",
    "-heading:",
    "abc",
    "rust",
    "x",
    "ab",
    "再",
    "ランキング",
    "の",
    "評価",
    "ー",
    "・",
    "･",
    "é",
    "e\u0301",
    "\u0301",
    "ß",
    "😀",
    "\u200d",
    "\U00020bb7",
    "〇",
    "\x1c",
    "\u0945",
    "--",
    "_",
    "\\",
    "'",
]
query_texts = st.one_of(
    st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=4)), max_size=80).map("".join),
    st.text(max_size=300),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=300, max_size=1100),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=query_texts)
@example(raw='"' * 1024)
@example(raw='-"' + "a" * 1020 + '"')
@example(raw="\0\0\0 -\0\0\0")
def test_fuzz_parse_query(fts: sqlean.Connection, raw: str) -> None:
    try:
        pq = parse_query(raw)
    except QueryError as e:
        too_long = len(raw.encode("utf-8")) > MAX_QUERY_BYTES
        assert too_long or str(e).startswith("query has no positive term")
        return
    assert len(raw.encode("utf-8")) <= MAX_QUERY_BYTES
    assert len(pq.include) <= MAX_PHRASES and len(pq.exclude) <= MAX_PHRASES
    for phrase in (*pq.include, *pq.exclude):
        assert len(phrase) >= MIN_PHRASE_CHARS and "\0" not in phrase
    for e in (pq.match_expr, pq.negative_expr, pq.positive_expr):
        if e is not None:
            assert "\0" not in e
            run(fts, e)  # must not raise: always a valid FTS5 expression
    assert (pq.exclusion_groups == 0) == (pq.positive_text == raw)
    # match_spans re-splits the positive text: it must find the phrases the FTS leg searched for
    assert query_phrases(pq.positive_text) == pq.include


@settings(max_examples=300, deadline=None)
@given(raw=st.text(alphabet=st.characters(exclude_characters='"'), max_size=200))
def test_plain_phrases_are_substrings_of_the_query(raw: str) -> None:
    try:
        pq = parse_query(raw)
    except QueryError:
        return
    for phrase in (*pq.include, *pq.exclude):
        assert phrase in raw
    if pq.positive_expr is not None and not pq.include:  # whole-query fallback
        for part in pq.positive_expr[1:-1].split('" OR "'):
            assert part.replace('""', '"') in raw
