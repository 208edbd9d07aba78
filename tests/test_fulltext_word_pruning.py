"""Exact top-k pruning of the word leg (engine/retrieve/fulltext.py over fts_words, word_text.py): on
generated tables, random queries and edits between searches it must return exactly the plain bm25
statement's rows — ids, scores to the last bit, tie order — with stemmed forms, diacritics, numbers,
repeated words, quoted phrases of several words and NOT exclusions; answer rather than fall back wherever
it must (a silent fallback would pass every equality), and leave the rows that hold only common words
unscored; the phrase counts it reads back from rows rebuilt and tokenized again are FTS5's; and a search
through the engine must not change at all when it is switched on."""

from __future__ import annotations

import random
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.analysis.query import fts_phrase
from groove_tui.engine.analysis.words import compile_words
from groove_tui.engine.index import phrase_stats as ps
from groove_tui.engine.index.store import Store
from groove_tui.engine.retrieve import fulltext as fp
from groove_tui.engine.retrieve import word_text as wt

from helpers import hashing_config, pruning_kb, with_and_without_pruning

PLAIN = "SELECT rowid, bm25(fts_words, ?, ?, ?) AS s FROM fts_words WHERE fts_words MATCH ? ORDER BY s LIMIT ?"
NO_ANALYZER = wt.WordsText(None)

# Stems (run, runs, running, runner; connect…), stop words, case and diacritics (café, CAFÉ, cafe), numbers
# and pieces unicode61 splits (4.2, x86_64, e-mail, don't), a word the stemmer leaves alone (sqlite), and
# CJK, which the word table's copy leaves out without an analyzer.
VOCAB = [
    "the", "the", "the", "and", "of", "with",
    "run", "runs", "running", "runner", "ran",
    "cell", "cells", "cellular",
    "protein", "proteins", "connect", "connected", "connection", "connections",
    "café", "cafe", "CAFÉ", "naïve", "naive", "Éclair", "eclair", "straße", "İstanbul",
    "42", "4.2", "2026", "v2", "x86_64", "e-mail", "don't",
    "banana", "bananas", "aaaa", "tokio", "runtime", "sqlite", "vector", "search", "searching",
    "東京", "設定",
]  # fmt: skip


@pytest.fixture(autouse=True, scope="module")
def _prune_small_tables():
    """Tables under MIN_ROWS are left to the plain statement; these tests generate small ones."""
    saved = fp.MIN_ROWS
    fp.MIN_ROWS = ps.MIN_ROWS = 0
    yield
    fp.MIN_ROWS = ps.MIN_ROWS = saved


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def _rows(rng: random.Random, first: int, count: int, copies: list[tuple]) -> list[tuple]:
    """(id, heading, context, content) chunks, a third of them copies of an earlier one (ties)."""
    out = []
    for i in range(first, first + count):
        if copies and rng.random() < 0.33:
            _cid, heading, context, content = rng.choice(copies)
        else:
            heading = _text(rng, rng.randint(0, 3)) or None
            context = _text(rng, rng.randint(1, 6)) if rng.random() < 0.3 else None
            content = _text(rng, rng.randint(1, 80))
        out.append((i, heading, context, content))
        copies.append(out[-1])
    return out


def _add(store: Store, document: int, rows: list[tuple]) -> None:
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO documents(id, path, content_hash, last_indexed) VALUES (?, ?, 'x', 'now')",
            (document, f"d{document}.md"),
        )
        conn.executemany(
            "INSERT INTO chunks(id, document_id, chunk_index, heading, content, context_text) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(cid, document, cid, h, body, ctx) for cid, h, ctx, body in rows],
        )
        store.insert_fulltext(rows, conn)
        store.bump_generation(conn)


def _fill(store: Store, rng: random.Random, docs: int) -> None:
    copies: list[tuple] = []
    rows = _rows(rng, 1, docs, copies)
    for d, start in enumerate(range(0, len(rows), 50), start=1):  # documents of 50 chunks (deleted whole)
        _add(store, d, rows[start : start + 50])


def _plain(store: Store, expr: str, weights, limit: int) -> list[tuple[int, float]]:
    return [tuple(r) for r in store.conn().execute(PLAIN, (*weights, expr, limit)).fetchall()]


def _ranked(pruned: fp.PrunedFulltext, store: Store, expr: str, weights, limit: int, words=NO_ANALYZER):
    return pruned.ranked(store.conn(), "fts_words", expr, weights, limit, store.generation(), words=words)


WEIGHTS = st.sampled_from([(2.0, 1.0, 1.0), (1.0, 1.0, 1.0), (1.3, 0.7, 0.9), (3.0, 2.0, 1.0), (0.7, 2.0, 1.0)])
LIMITS = st.sampled_from([1, 3, 10, 50, 100, 400])


@st.composite
def _queries(draw) -> str:
    """What a user types: words (some repeated, some in capitals), quoted phrases of several words
    (repeats too: "run run"), exclusions."""
    words = draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=10))
    out = []
    for w in words:
        kind = draw(st.sampled_from(["word", "word", "word", "twice", "upper", "exclude", "quote"]))
        if kind == "quote":
            more = draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=2))
            out.append('"' + " ".join([w, *more]) + '"')
        else:
            out.append({"exclude": f"-{w}", "twice": f"{w} {w}", "upper": w.upper()}.get(kind, w))
    return " ".join(out)


@st.composite
def _expressions(draw) -> str:
    """The word query compiler's expression for a typed query, or an OR of phrases with a NOT side (the
    shape the pruning accepts on every table; the engine applies the word leg's exclusions itself)."""
    if draw(st.booleans()):
        expr = compile_words(draw(_queries())).positive_expr
        return expr if expr is not None else '"run"'
    positive = draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8))
    negative = draw(st.lists(st.sampled_from(VOCAB), min_size=0, max_size=2))
    pos = " OR ".join(fts_phrase(w) for w in positive)
    return f"({pos}) NOT ({' OR '.join(fts_phrase(w) for w in negative)})" if negative else pos


def _should_prune(expr: str, limit: int) -> bool:
    """Whether the pruned path must answer: the only shapes it declines on the word table are listed in
    the module docstring — a phrase FTS5 makes no term of, more phrases than it takes, a limit past its
    own (the tables are consistent and smaller than it ever gives up at; MIN_ROWS is lifted here)."""
    parsed = fp.parse_or_expression(expr)
    if parsed is None or len(parsed.positive) + len(parsed.negative) > fp.MAX_PHRASES:
        return False
    if not 0 < limit <= fp.MAX_LIMIT:
        return False
    return all(wt.phrase_tokens(fp.unquote(p) or "") is not None for p in parsed.positive)


def _assert_exact(got, expected, expr: str, limit: int) -> None:
    if _should_prune(expr, limit):
        assert got is not None, f"pruning fell back where it must answer: {expr!r} limit {limit}"
    assert got is None or got == expected, (expr, limit)


@pytest.fixture(scope="module")
def tables():
    """Three generated tables: small, medium, and one of many copies (ties decide most places)."""
    with tempfile.TemporaryDirectory() as tmp:
        stores = []
        for seed, docs in ((1, 40), (2, 600), (3, 1500)):
            store = Store(Path(tmp) / f"s{seed}" / "index.db")
            _fill(store, random.Random(seed), docs)
            stores.append(store)
        yield stores
        for store in stores:
            store.close()


# Rows of the rarest phrases ranked first: its own setting, or so few that a second statement is the rule.
FIRST_ROWS = st.sampled_from([fp.FIRST_ROWS, 1, 50])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    expr=_expressions(), weights=WEIGHTS, limit=LIMITS, which=st.integers(0, 2), warm=st.booleans(), first=FIRST_ROWS
)
def test_the_pruned_word_leg_equals_the_plain_statement(tables, expr, weights, limit, which, warm, first):
    store = tables[which]
    pruned = fp.PrunedFulltext()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fp, "FIRST_ROWS", first)
        if warm:  # caches filled by another limit first: must not leak into this answer
            _ranked(pruned, store, expr, weights, max(1, limit // 3))
        got = _ranked(pruned, store, expr, weights, limit)
        # With the rows tying the last one, rebuilt from the chunks or every score FTS5's own.
        with_ties = [
            pruned.ranked(store.conn(), "fts_words", expr, weights, limit, store.generation(), words=w, ties=True)
            for w in (NO_ANALYZER, None)
        ]
    _assert_exact(got, _plain(store, expr, weights, limit), expr, limit)
    expected = fp.plain_ranked(store.conn(), "fts_words", expr, weights, limit, ties=True)
    for found in with_ties:
        _assert_exact(found, expected, expr, limit)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(exprs=st.lists(_expressions(), min_size=1, max_size=4), weights=WEIGHTS, limit=LIMITS, which=st.integers(0, 2))
def test_summed_word_lists_equal_the_plain_statement(tables, exprs, weights, limit, which):
    """A small word table's path (every phrase's list summed, kept across queries) is the plain
    statement's answer bit for bit, and always answers."""
    store = tables[which]
    summed = fp.PrunedFulltext()
    summed.min_rows = 10**9  # every generated table counts as small
    for expr in exprs:
        for ties in (False, True):
            got = summed.ranked(store.conn(), "fts_words", expr, weights, limit, store.generation(), ties=ties)
            assert got is not None, expr
            assert got == fp.plain_ranked(store.conn(), "fts_words", expr, weights, limit, ties=ties), expr
    assert summed.stats["scored"] == 0 and summed.stats["pruned"] == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(queries=st.lists(_queries(), min_size=2, max_size=6), weights=WEIGHTS, limit=LIMITS, which=st.integers(0, 2))
def test_a_session_shares_word_statistics_across_stems_and_case(tables, queries, weights, limit, which):
    """One PrunedFulltext for a run of queries, each also typed in capitals and with its words' other
    forms: the statistics are kept by FTS5's terms, so "Running" answers from the list "runs" left."""
    store = tables[which]
    pruned = fp.PrunedFulltext()
    other = {"run": "running", "runs": "run", "running": "runs", "cells": "cell", "connected": "connection"}
    for query in queries:
        for variant in (query, query.upper(), " ".join(other.get(w, w) for w in query.split(" "))):
            expr = compile_words(variant).positive_expr
            if expr is None:
                continue
            got = _ranked(pruned, store, expr, weights, limit)
            _assert_exact(got, _plain(store, expr, weights, limit), expr, limit)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3), weights=WEIGHTS, which=st.integers(1, 2))
def test_rebuilt_rows_give_fts5s_own_term_for_any_phrase(tables, words, weights, which):
    """The text path alone, against FTS5: for a phrase of one to three words (stems, repeats, pieces
    unicode61 splits), every row's term computed from its rebuilt text is the term FTS5's bm25 gives that
    row for the phrase alone, bit for bit, and a row FTS5 does not match holds no instance."""
    store = tables[which]
    conn = store.conn()
    text = " ".join(words)
    terms = wt.phrase_tokens(text)
    if terms is None:  # (CJK only: no term without an analyzer)
        return
    found = conn.execute(
        "SELECT rowid, bm25(fts_words, ?, ?, ?) FROM fts_words WHERE fts_words MATCH ? ORDER BY rowid",
        (*weights, fts_phrase(text)),
    ).fetchall()
    matched = {r for r, _ in found}
    others = [r for (r,) in conn.execute("SELECT id FROM chunks ORDER BY id LIMIT 200") if r not in matched]
    (f,), lengths = wt.WordRows(NO_ANALYZER, weights).frequencies(
        conn, "fts_words", [r for r, _ in found] + others, [terms]
    )
    n_rows, n_tokens = fp.PrunedFulltext()._totals(conn, "fts_words")
    terms_here = ps.tf_terms(f[: len(found)], lengths[: len(found)], ps.idf_of(n_rows, len(found)), n_tokens / n_rows)
    assert terms_here.tolist() == [-s for _r, s in found]
    assert not f[len(found) :].any()


def test_the_word_leg_really_prunes(tables, monkeypatch):
    """Not a vacuous pass: on the larger table the pruned path answers every query. With the rows rebuilt
    from their chunks it scores far fewer rows than match (MaxScore over the phrases' lists); without,
    it runs at most two statements, and most queries leave common phrases out of the rows ranked (here
    the first rows are few: the table is small)."""
    monkeypatch.setattr(fp, "FIRST_ROWS", 100)
    store = tables[2]
    session = fp.PrunedFulltext()
    rng = random.Random(7)
    answered = left = matched = 0
    for _ in range(60):
        expr = compile_words(" ".join(rng.choice(VOCAB) for _ in range(rng.randint(2, 8)))).positive_expr
        if expr is None:
            continue
        expected = _plain(store, expr, (2.0, 1.0, 1.0), 10)
        got = _ranked(session, store, expr, (2.0, 1.0, 1.0), 10)
        _assert_exact(got, expected, expr, 10)
        answered += got is not None
        matched += store.conn().execute("SELECT count(*) FROM fts_words WHERE fts_words MATCH ?", (expr,)).fetchone()[0]
        fresh = fp.PrunedFulltext()
        assert _ranked(fresh, store, expr, (2.0, 1.0, 1.0), 10, words=None) == expected
        assert fresh.stats["statements"] <= 2
        left += fresh.stats["left"] > 0
    assert answered >= 50
    assert session.stats["scored"] < matched / 20  # rows scored in full, of the rows matching
    assert left >= 20  # queries whose common phrases no row had to hold


@pytest.fixture(scope="module")
def stored_tables():
    """The generated tables again, each with its common terms' statistics stored as the indexer stores
    them, for two whole-number weightings (the only kind the word table's lists are kept for)."""
    with tempfile.TemporaryDirectory() as tmp:
        stores = []
        for seed, docs in ((1, 40), (2, 600), (3, 1500)):
            store = Store(Path(tmp) / f"s{seed}" / "index.db")
            _fill(store, random.Random(seed), docs)
            for weights in ((2.0, 1.0, 1.0), (3.0, 2.0, 1.0)):
                assert ps.store_common_phrases(store.conn(), weights, "fts_words", min_rows=0) > 0
            assert ps.store_common_phrases(store.conn(), (1.3, 0.7, 0.9), "fts_words", min_rows=0) == 0
            stores.append(store)
        yield stores
        for store in stores:
            store.close()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=_expressions(), weights=WEIGHTS, limit=LIMITS, which=st.integers(0, 2), rebuilt=st.booleans())
def test_stored_word_statistics_give_the_plain_statements_rows(stored_tables, expr, weights, limit, which, rebuilt):
    """A new session (empty caches) reading the stored lists: still exactly the plain statement. Two of
    the five weightings have lists stored; the others must not use them (their terms differ)."""
    store = stored_tables[which]
    got = _ranked(fp.PrunedFulltext(), store, expr, weights, limit, words=NO_ANALYZER if rebuilt else None)
    _assert_exact(got, _plain(store, expr, weights, limit), expr, limit)


def test_stored_word_lists_are_read_and_spare_every_row_from_its_text(stored_tables, monkeypatch):
    """Every common word's list comes from the index, every rare one is fetched at once: for a query of
    single words no row is rebuilt from its chunk (a phrase of several terms is, as it is not stored)."""
    rebuilt = []
    original = wt.WordRows.frequencies
    monkeypatch.setattr(wt.WordRows, "frequencies", lambda self, *a: rebuilt.append(1) or original(self, *a))
    store = stored_tables[2]
    pruned = fp.PrunedFulltext()
    rng = random.Random(3)
    single = [w for w in VOCAB if len(wt.phrase_tokens(w) or ()) == 1]
    for _ in range(30):
        expr = compile_words(" ".join(rng.choice(single) for _ in range(rng.randint(2, 8)))).positive_expr
        if expr is not None:
            assert _ranked(pruned, store, expr, (2.0, 1.0, 1.0), 10) == _plain(store, expr, (2.0, 1.0, 1.0), 10)
    assert pruned.stats["stored_lists"] > 0 and pruned.stats["pruned"] >= 25 and not rebuilt


def test_stems_share_one_phrase_key(tables):
    """ "running", "runs" and "run" are one term to FTS5, hence one cached list."""
    assert wt.phrase_tokens("running") == wt.phrase_tokens("RUNS") == wt.phrase_tokens("run") == ("run",)
    assert wt.phrase_tokens("Café naïve 4.2") == ("cafe", "naiv", "4", "2")
    assert wt.phrase_tokens("--") is None
    store = tables[1]
    pruned = fp.PrunedFulltext()
    for expr in ('"running" OR "cells"', '"runs" OR "cell"', '"run" OR "Cells"'):
        assert _ranked(pruned, store, expr, (2.0, 1.0, 1.0), 10) == _plain(store, expr, (2.0, 1.0, 1.0), 10)
    keys = {k[1] for k in pruned.df_cache._data if isinstance(k, tuple) and k[0] == "fts_words"}
    assert keys == {"run", "cell"}


def test_a_phrase_without_a_term_declines(tables):
    store = tables[1]
    assert _ranked(fp.PrunedFulltext(), store, '"--" OR "run"', (2.0, 1.0, 1.0), 10) is None


def test_a_table_built_another_way_is_still_pruned_exactly(tables, monkeypatch):
    """Without a way to rebuild its rows (none given, or the table records another analyzer) the word
    table is still pruned exactly: the phrases' row counts are counted instead of read back."""
    rebuilt = []
    original = wt.WordRows.frequencies
    monkeypatch.setattr(wt.WordRows, "frequencies", lambda self, *a: rebuilt.append(1) or original(self, *a))
    store = tables[2]
    expr = compile_words("the running cells of connected proteins café 42").positive_expr
    assert expr is not None
    expected = _plain(store, expr, (2.0, 1.0, 1.0), 10)
    pruned = fp.PrunedFulltext()
    assert _ranked(pruned, store, expr, (2.0, 1.0, 1.0), 10, words=None) == expected
    assert pruned.stats["pruned"] == 1 and not rebuilt
    recorded = store.get_meta("words_version")
    try:
        with store.transaction() as conn:
            store.set_meta("words_version", f"{recorded}+another-dictionary", conn)
        pruned = fp.PrunedFulltext()
        assert _ranked(pruned, store, expr, (2.0, 1.0, 1.0), 10) == expected
        assert pruned.stats["pruned"] == 1 and not rebuilt
    finally:
        with store.transaction() as conn:
            store.set_meta("words_version", recorded or "", conn)
    pruned = fp.PrunedFulltext()
    assert _ranked(pruned, store, expr, (2.0, 1.0, 1.0), 10) == expected
    assert pruned.stats["pruned"] == 1 and rebuilt


def test_a_row_that_is_not_its_chunks_copy_is_never_scored_from_it(tmp_path):
    """A chunk whose text changed under its word-table row (the tables disagree): rebuilding the row
    gives other token counts, so the pruning declines rather than score it from the wrong text."""
    store = Store(tmp_path / "index.db")
    try:
        _fill(store, random.Random(4), 300)
        conn = store.conn()
        with store.transaction() as w:  # not through the store: the word table keeps the old row
            w.execute("UPDATE chunks SET content = content || ' running running cells' WHERE id = 5")
        with pytest.raises(ps.Inconsistent):
            wt.WordRows(NO_ANALYZER, (2.0, 1.0, 1.0)).frequencies(conn, "fts_words", [4, 5], [("run",)])
        for expr in ('"running" OR "cells" OR "the"', '"banana" OR "run"'):
            got = _ranked(fp.PrunedFulltext(), store, expr, (2.0, 1.0, 1.0), 10)
            assert got is None or got == _plain(store, expr, (2.0, 1.0, 1.0), 10)
    finally:
        store.close()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    steps=st.lists(
        st.tuples(st.sampled_from(["add", "delete", "none"]), _expressions(), LIMITS), min_size=2, max_size=6
    ),
    weights=WEIGHTS,
)
def test_edits_between_searches_keep_the_word_leg_exact(seed, steps, weights):
    """One PrunedFulltext across a run of edits (documents added and deleted, every FTS5 total moving):
    its caches are keyed by generation, so each search answers for the table as it is then."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "index.db")
        try:
            _fill(store, rng, 200)
            pruned = fp.PrunedFulltext()
            next_doc, next_id = 100, 10_000
            copies: list[tuple] = []
            for op, expr, limit in steps:
                if op == "add":
                    _add(store, next_doc, _rows(rng, next_id, rng.randint(1, 60), copies))
                    next_doc, next_id = next_doc + 1, next_id + 100
                elif op == "delete":
                    docs = [r[0] for r in store.conn().execute("SELECT id FROM documents ORDER BY id")]
                    if docs:
                        with store.transaction() as conn:
                            doc = rng.choice(docs)
                            store.delete_chunks_of(doc, conn)
                            conn.execute("DELETE FROM documents WHERE id = ?", (doc,))
                            store.bump_generation(conn)
                _assert_exact(
                    _ranked(pruned, store, expr, weights, limit), _plain(store, expr, weights, limit), expr, limit
                )
        finally:
            store.close()


def test_the_platform_computes_word_bm25_as_the_pruned_path_does():
    assert fp.calibrated()


# ---------------------------------------------------------------- Japanese words (the tiny dictionary)

JAPANESE = ["東京都の設定を変更します。", "ユーザの引越し", "引っ越しの手続きは", "京都と大阪", "検索の結果です"]


def test_japanese_words_are_pruned_exactly_and_bounded(tmp_path, japanese_dictionary, monkeypatch):
    """With the Japanese analyzer the rows are rebuilt with it (its words stand in the copy); the
    analysis a search may ask for is bounded, past it every score is FTS5's own (no more rows rebuilt)."""
    from groove_tui.engine.models.analyzers import japanese_analyzer

    analyzer = japanese_analyzer().analyzer
    assert analyzer is not None
    store = Store(tmp_path / "index.db", japanese=analyzer)
    try:
        rng = random.Random(5)
        rows = []
        for i in range(1, 400):
            words = [rng.choice(VOCAB + JAPANESE * 3) for _ in range(rng.randint(1, 30))]
            rows.append((i, None, None, " ".join(words)))
        _add(store, 1, rows)
        assert store.words_current()
        words = wt.WordsText(analyzer)
        monkeypatch.setattr(fp, "FIRST_ROWS", 20)
        for query in ("東京都の設定", "引っ越し ユーザー running", '"京都と大阪" cells', "検索 the 42"):
            expr = compile_words(query, analyzer).positive_expr
            assert expr is not None
            for limit in (1, 10, 50):
                pruned = fp.PrunedFulltext()
                got = _ranked(pruned, store, expr, (2.0, 1.0, 1.0), limit, words=words)
                assert got == _plain(store, expr, (2.0, 1.0, 1.0), limit), (query, limit)
                assert pruned.stats["pruned"] == 1
        # Rebuilt without the analyzer the Japanese rows would not be the table's: it is used as recorded.
        pruned = fp.PrunedFulltext()
        expr = compile_words("東京都 running cells", analyzer).positive_expr
        assert _ranked(pruned, store, expr, (2.0, 1.0, 1.0), 10, words=NO_ANALYZER) == _plain(
            store, expr, (2.0, 1.0, 1.0), 10
        )
        assert pruned.stats["pruned"] == 1  # (counted: the table records the analyzer)
        monkeypatch.setattr(wt, "MAX_ANALYZED_CHARS", 10)
        rebuilt = []
        original = wt.WordRows.frequencies
        monkeypatch.setattr(wt.WordRows, "frequencies", lambda self, *a: rebuilt.append(1) or original(self, *a))
        pruned = fp.PrunedFulltext()
        assert _ranked(pruned, store, expr, (2.0, 1.0, 1.0), 50, words=words) == _plain(
            store, expr, (2.0, 1.0, 1.0), 50
        )
        assert rebuilt and pruned.stats["pruned"] == 1 and pruned.stats["statements"] > 0  # past it: FTS5's scores
    finally:
        store.close()


# ---------------------------------------------------------------- through the engine

QUERIES = (
    "the running cells and connected proteins",
    "runs -banana",
    '"running cells" café',
    "CAFÉ naïve 4.2 x86_64",
    "don't e-mail 2026 v2",
    "tokio runtime -sqlite search searching",
    "東京 設定 running",
)


def _kb(tmp_path: Path) -> Path:
    return pruning_kb(tmp_path / "kb", _text)


def test_engine_word_leg_results_do_not_change_with_pruning(tmp_path):
    kb = _kb(tmp_path)
    config = hashing_config()
    config = replace(config, search=replace(config.search, word_leg=True))
    with Engine.open(kb, config=config, index_dir=tmp_path / "idx") as eng:
        eng.index()
    params = [
        SearchParams(limit=10, explain=True),
        SearchParams(limit=3, legs="fts", explain=True),
        SearchParams(limit=40, legs="fts", min_quality=0, explain=True),
        SearchParams(limit=10, path_globs=("sub/**",), legs="fts", explain=True),
        SearchParams(limit=10, tags_any=("a",), date_from="2026-03-01", explain=True),
    ]
    answers, stats = with_and_without_pruning(
        kb, config, tmp_path / "idx", QUERIES, params, lambda h: (h.chunk_id, h.score, h.part, h.trace)
    )
    assert stats["pruned"] > 0 and stats["scored"] > 0
    assert answers[True] == answers[False]


def test_rows_holding_only_a_commoner_word_are_ranked_when_they_beat_the_rarest_words_rows(tmp_path):
    """The rarest phrase's rows ranked first need not be the answer: 9,000 long rows hold "beta" once, and
    10,000 rows are "alpha" alone — commoner, but so short that each outscores every "beta" row. The
    rows holding only "alpha" must be ranked too (every score FTS5's own: no rows rebuilt)."""
    store = Store(tmp_path / "index.db")
    try:
        filler = " ".join(["lorem"] * 19)
        rows = [(i, None, None, f"beta {filler}" if i <= 9_000 else f"lorem {filler}") for i in range(1, 30_001)]
        rows += [(i, None, None, "alpha") for i in range(30_001, 40_001)]
        with store.transaction() as conn:
            conn.executemany("INSERT INTO fts_words(rowid, heading, context, content) VALUES (?, ?, ?, ?)", rows)
        assert fp.FIRST_ROWS <= 9_000  # "beta" alone fills the first statement
        expr, weights = '"alpha" OR "beta"', (2.0, 1.0, 1.0)
        pruned = fp.PrunedFulltext()
        got = pruned.ranked(store.conn(), "fts_words", expr, weights, 10, 0)
        assert got == _plain(store, expr, weights, 10)
        assert all(rowid > 30_000 for rowid, _ in got)  # the "alpha" rows
        assert pruned.stats["statements"] == 2
    finally:
        store.close()
