"""The stored phrase statistics of the pruned full-text leg follow edits chunk by chunk
(engine/index/phrase_stats.py, `follow_edits`): after any sequence of removed, added and changed chunks the
stored set is exactly FTS5's answer — every list, row count, frequency and row length, to the last bit of
the terms bm25 computes from them — and a set with an edit still waiting in its journal is never read."""

from __future__ import annotations

import random
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.index import phrase_stats as ps
from groove_tui.engine.index.store import Store
from groove_tui.engine.index.token_lists import TokenVocab, token_frequencies
from groove_tui.engine.index.word_terms import phrase_tokens
from groove_tui.engine.retrieve import fulltext as fp

from helpers import FOLD_VOCAB as VOCAB
from helpers import hashing_config, write_kb

WEIGHTINGS = ((2.0, 1.0, 1.0), (1.3, 0.7, 0.9), (3.0, 2.0, 1.0))  # frequencies, doubles, row counts only


@pytest.fixture(autouse=True)
def _prune_small_tables(monkeypatch):
    """The leg and the indexer leave tables under MIN_ROWS alone; these tests make small ones."""
    monkeypatch.setattr(fp, "MIN_ROWS", 0)
    monkeypatch.setattr(ps, "MIN_ROWS", 0)


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def _chunks(rng: random.Random) -> list[tuple[str | None, str | None, str]]:
    return [
        (
            _text(rng, rng.randint(0, 3)) or None,
            _text(rng, rng.randint(1, 5)) if rng.random() < 0.3 else None,
            _text(rng, rng.randint(1, 60)),
        )
        for _ in range(rng.randint(1, 3))
    ]


def _add_document(store: Store, doc_id: int, chunks: list[tuple[str | None, str | None, str]]) -> None:
    """What the indexer writes for a new or changed document: its chunks and their full-text rows."""
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO documents(id, path, content_hash, last_indexed) VALUES (?, ?, 'x', 'now')",
            (doc_id, f"d{doc_id}.md"),
        )
        for i, (heading, context, content) in enumerate(chunks):
            cid = conn.execute(
                "INSERT INTO chunks(document_id, chunk_index, heading, content, context_text) VALUES (?, ?, ?, ?, ?)",
                (doc_id, i, heading, content, context),
            ).lastrowid
            store.insert_fulltext([(cid, heading, context, content)], conn)
        store.bump_generation(conn)


def _remove_document(store: Store, doc_id: int) -> None:
    with store.transaction() as conn:
        store.delete_chunks_of(doc_id, conn)
        conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
        store.bump_generation(conn)


def _store_all(store: Store) -> None:
    saved = ps.COMMON_LIST_SHARE
    try:
        for weights in WEIGHTINGS:
            ps.COMMON_LIST_SHARE = 0.3 if weights == WEIGHTINGS[2] else saved
            assert ps.store_common_phrases(store.conn(), weights, min_rows=0) > 0
            # The word table's lists are kept only as frequencies: never for fractional weights.
            stored_words = ps.store_common_phrases(store.conn(), weights, "fts_words", min_rows=0)
            assert (stored_words > 0) == (weights != WEIGHTINGS[1])
            assert (ps.store_token_lists(store.conn(), weights, min_rows=0) > 0) == (weights != WEIGHTINGS[1])
    finally:
        ps.COMMON_LIST_SHARE = saved


def assert_stored_words_are_fts5(conn) -> int:
    """Every stored row of the word table equals FTS5's own answer now, for a word it makes that term
    of, bit for bit; and the rows and per-column counts equal the table's own instances (fts5vocab).
    Returns how many lists were checked."""
    n_rows, avgdl = ps.totals(conn, "fts_words")
    lengths = ps._stored_lengths(conn, "fts_words")
    actual = ps.read_lengths(conn, "fts_words")
    live = [cid for (cid,) in conn.execute("SELECT id FROM chunks")]
    assert lengths is not None and np.array_equal(lengths[live], actual[live])
    spelled = {}
    for cols in conn.execute("SELECT heading, context_text, content FROM chunks"):
        for word in re.findall(r"[^\W_]+", " ".join(c for c in cols if c).lower()):
            terms = phrase_tokens(word)
            if terms is not None and len(terms) == 1:
                spelled.setdefault(terms[0], word)
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_instances USING fts5vocab(main, fts_words, instance)")
    checked = 0
    for wkey, term, df, rowids, terms in conn.execute(
        "SELECT weights, phrase, df, rowids, terms FROM fts_phrase_stats WHERE tbl = 'fts_words' AND phrase != ''"
    ).fetchall():
        weights = tuple(float.fromhex(w) for w in wkey.split(","))
        found = conn.execute(
            "SELECT rowid, bm25(fts_words, ?, ?, ?) FROM fts_words WHERE fts_words MATCH ? ORDER BY rowid",
            (*weights, f'"{spelled[term]}"'),
        ).fetchall()
        rows = ps.unpack_rowids(rowids, df)
        assert rows.tolist() == [r for r, _ in found], term
        assert len(terms) in (df, 2 * df), term  # frequencies
        got = ps.unpack_terms(terms, rows, lengths, n_rows, avgdl)
        assert got is not None and got.tolist() == [-s for _, s in found], term  # bit for bit
        f: dict[int, float] = {}
        for doc, col, n in conn.execute(
            "SELECT doc, col, count(*) FROM words_instances WHERE term = ? GROUP BY doc, col", (term,)
        ):
            f[doc] = f.get(doc, 0.0) + n * weights[("heading", "context", "content").index(col)]
        stored_f = np.frombuffer(terms, dtype="<u1" if len(terms) == df else "<u2")
        assert dict(zip(rows.tolist(), stored_f.tolist(), strict=True)) == f, term
        checked += 1
    return checked


def assert_token_lists_are_the_texts(conn) -> int:
    """The lists by token are every token of the chunks' folded text with its f in each row, and nothing
    else; a phrase's list made from them is FTS5's own answer, bit for bit. Returns the weightings checked."""
    texts = conn.execute("SELECT id, heading, context_text, content FROM chunks ORDER BY id").fetchall()
    n_rows, avgdl = ps.totals(conn, "fts_chunks")
    checked = 0
    for wkey, df, blob in conn.execute(
        "SELECT weights, df, terms FROM fts_phrase_stats WHERE tbl = ?", (ps.VOCAB,)
    ).fetchall():
        weights = tuple(float.fromhex(w) for w in wkey.split(","))
        expected: dict[str, dict[int, int]] = {}
        for cid, *cols in texts:
            for token, f in (token_frequencies(cols, [int(w) for w in weights], ps.FOLD.fold) or {}).items():
                expected.setdefault(token, {})[cid] = f
        assert TokenVocab.decode(blob).tokens() == sorted(expected) and df == len(expected)
        for token, tdf, rowids, terms in conn.execute(
            "SELECT phrase, df, rowids, terms FROM fts_phrase_stats WHERE tbl = ? AND weights = ?", (ps.TOKENS, wkey)
        ):
            f = np.frombuffer(terms, dtype="<u1" if len(terms) == tdf else "<u2").tolist()
            assert dict(zip(ps.unpack_rowids(rowids, tdf).tolist(), f, strict=True)) == expected.pop(token), token
        assert not expected  # every token has its list
        pruned = fp.PrunedFulltext()
        epoch = ps.stored_epoch(conn)
        assert epoch is not None
        for phrase in ("cel", "ellula", "aaa", "abab", "eclair", "strasse", "istanbul", "ein", "東京"):
            phrase = ps.FOLD.fold(phrase)
            if len(phrase) < 3:
                continue
            got = pruned._token_impacts(conn, phrase, weights, ("check", epoch), n_rows, avgdl, epoch)
            assert got is not None, phrase
            found = conn.execute(
                "SELECT rowid, bm25(fts_chunks, ?, ?, ?) FROM fts_chunks WHERE fts_chunks MATCH ? ORDER BY rowid",
                (*weights, f'"{phrase}"'),
            ).fetchall()
            assert got[0].tolist() == [r for r, _ in found] and got[1].tolist() == [-v for _, v in found], phrase
        checked += 1
    return checked


def assert_stored_is_fts5(conn) -> set[str]:
    """Every stored row equals FTS5's own answer now; returns the kinds of rows seen."""
    assert ps.stored_epoch(conn) is not None
    n_rows, avgdl = ps.totals(conn, "fts_chunks")
    actual = ps.read_lengths(conn, "fts_chunks")
    (count, blob) = conn.execute(
        "SELECT df, terms FROM fts_phrase_stats WHERE tbl = 'fts_chunks' || ?", (ps.LENGTHS,)
    ).fetchone()
    lengths = np.frombuffer(blob, dtype="<u2" if len(blob) == 2 * count else "<u4").astype(np.float64)
    live = [cid for (cid,) in conn.execute("SELECT id FROM chunks")]
    assert len(lengths) >= len(actual) and np.array_equal(lengths[live], actual[live])
    kinds = set()
    for wkey, phrase, df, rowids, terms in conn.execute(
        "SELECT weights, phrase, df, rowids, terms FROM fts_phrase_stats WHERE tbl = 'fts_chunks' AND phrase != ''"
    ).fetchall():
        weights = tuple(float.fromhex(w) for w in wkey.split(","))
        found = conn.execute(
            "SELECT rowid, bm25(fts_chunks, ?, ?, ?) FROM fts_chunks WHERE fts_chunks MATCH ? ORDER BY rowid",
            (*weights, f'"{phrase}"'),
        ).fetchall()
        assert df == len(found), phrase
        if rowids or not df:
            rows = ps.unpack_rowids(rowids, df)
            assert rows.tolist() == [r for r, _ in found], phrase
            got = ps.unpack_terms(terms, rows, lengths, n_rows, avgdl)
            assert got is not None and got.tolist() == [-s for _, s in found], phrase  # bit for bit
            kinds.add("doubles" if len(terms) == 8 * df and df else "frequencies")
        else:
            kinds.add("count")
    return kinds


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    steps=st.lists(st.sampled_from(["add", "remove", "change", "follow"]), min_size=1, max_size=10),
)
def test_followed_statistics_are_fts5s_answer_after_any_edits(tmp_path_factory, monkeypatch, seed, steps):
    # Ten edits may change more than the share past which the set is stored again rather than followed
    # (tested on its own below); here every edit is followed.
    monkeypatch.setattr(ps, "FOLLOW_MAX_SHARE", 1.0)
    rng = random.Random(seed)
    store = Store(tmp_path_factory.mktemp("follow") / "index.db")
    try:
        docs = list(range(1, 81))
        for doc_id in docs:
            _add_document(store, doc_id, _chunks(rng))
        _store_all(store)
        conn = store.conn()
        assert assert_stored_is_fts5(conn) == {"frequencies", "doubles", "count"}
        assert assert_stored_words_are_fts5(conn) > 0
        assert assert_token_lists_are_the_texts(conn) == 2
        next_id = docs[-1] + 1
        for step in steps:
            if step == "add":
                _add_document(store, next_id, _chunks(rng))
                docs.append(next_id)
                next_id += 1
            elif step in ("remove", "change") and docs:
                doc_id = rng.choice(docs)
                _remove_document(store, doc_id)
                if step == "change":
                    _add_document(store, doc_id, _chunks(rng))
                else:
                    docs.remove(doc_id)
            elif step == "follow":
                with store.transaction() as w:
                    ps.follow_edits(w, min_rows=0)
                assert_stored_is_fts5(conn)
                assert_stored_words_are_fts5(conn)
                assert assert_token_lists_are_the_texts(conn) == 2
            waiting = conn.execute("SELECT count(*) FROM fts_phrase_journal").fetchone()[0]
            assert (ps.stored_epoch(conn) is None) == (waiting > 0)
        with store.transaction() as w:
            ps.follow_edits(w, min_rows=0)
        assert_stored_is_fts5(conn)
        assert assert_stored_words_are_fts5(conn) > 0
        assert assert_token_lists_are_the_texts(conn) == 2
        assert conn.execute("SELECT count(*) FROM fts_phrase_journal").fetchone()[0] == 0
    finally:
        store.close()


def test_text_the_lists_by_token_cannot_hold_gives_them_up_and_the_leg_asks_fts5(tmp_path):
    """A NUL ends the tokenizer's input, which folding does not know: a table holding one has no lists by
    token (marked, so no index run lists it again), and its phrases are answered by FTS5, exactly."""
    store = Store(tmp_path / "index.db")
    try:
        rng = random.Random(5)
        for doc_id in range(1, 30):
            _add_document(store, doc_id, _chunks(rng))
        _add_document(store, 30, [(None, None, "banana\0cellular proteins")])
        conn = store.conn()
        assert ps.store_common_phrases(conn, (2.0, 1.0, 1.0), min_rows=0) > 0
        assert ps.store_token_lists(conn, (2.0, 1.0, 1.0), min_rows=0) == 0
        assert conn.execute("SELECT df FROM fts_phrase_stats WHERE tbl = ?", (ps.VOCAB,)).fetchall() == [(-1,)]
        assert conn.execute("SELECT count(*) FROM fts_phrase_stats WHERE tbl = ?", (ps.TOKENS,)).fetchone() == (0,)
        pruned = fp.PrunedFulltext()
        assert not pruned.token_lists_at_hand(conn, (2.0, 1.0, 1.0))
        expr = '"ellula" OR "anana" OR "the"'
        plain = conn.execute(
            "SELECT rowid, bm25(fts_chunks, 2.0, 1.0, 1.0) AS s FROM fts_chunks WHERE fts_chunks MATCH ? "
            "ORDER BY s LIMIT 10",
            (expr,),
        ).fetchall()
        assert pruned.ranked(conn, "fts_chunks", expr, (2.0, 1.0, 1.0), 10) == [tuple(r) for r in plain]
        assert pruned.stats["token_lists"] == 0
    finally:
        store.close()


def test_a_vocabulary_too_long_to_scan_is_given_up_when_stored_or_grown(tmp_path, monkeypatch):
    store = Store(tmp_path / "index.db")
    try:
        rng = random.Random(6)
        for doc_id in range(1, 30):
            _add_document(store, doc_id, _chunks(rng))
        conn = store.conn()
        assert ps.store_common_phrases(conn, (2.0, 1.0, 1.0), min_rows=0) > 0
        monkeypatch.setattr(ps, "MAX_VOCAB_CHARS", 20)
        assert ps.store_token_lists(conn, (2.0, 1.0, 1.0), min_rows=0) == 0
        assert conn.execute("SELECT df FROM fts_phrase_stats WHERE tbl = ?", (ps.VOCAB,)).fetchall() == [(-1,)]
        # Stored under the cap, then grown past it by an edit: given up as it is followed.
        with store.transaction() as w:
            w.execute("DELETE FROM fts_phrase_stats WHERE tbl = ?", (ps.VOCAB,))
        monkeypatch.setattr(ps, "MAX_VOCAB_CHARS", 10**6)
        assert ps.store_token_lists(conn, (2.0, 1.0, 1.0), min_rows=0) > 0
        size = len(conn.execute("SELECT terms FROM fts_phrase_stats WHERE tbl = ?", (ps.VOCAB,)).fetchone()[0])
        monkeypatch.setattr(ps, "MAX_VOCAB_CHARS", size + 5)
        _add_document(store, 31, [(None, None, "zymurgically unprecedented xylophonists")])
        with store.transaction() as w:
            ps.follow_edits(w, min_rows=0)
        assert conn.execute("SELECT df FROM fts_phrase_stats WHERE tbl = ?", (ps.VOCAB,)).fetchall() == [(-1,)]
        assert not fp.PrunedFulltext().token_lists_at_hand(conn, (2.0, 1.0, 1.0))
        assert assert_stored_is_fts5(conn)  # the common phrases' lists are still followed
    finally:
        store.close()


def test_a_set_with_an_edit_waiting_is_never_read(tmp_path):
    """An edit no one followed (a writer that stopped after its own transaction): the stored list of
    "the" lacks the new chunk that holds it most, so reading it would change the answer."""
    rng = random.Random(5)
    store = Store(tmp_path / "index.db")
    try:
        for doc_id in range(1, 121):
            _add_document(store, doc_id, _chunks(rng))
        _store_all(store)
        conn = store.conn()
        expr, weights = '"the" OR "cells" OR "banana"', (2.0, 1.0, 1.0)
        plain = (
            "SELECT rowid, bm25(fts_chunks, ?, ?, ?) AS s FROM fts_chunks WHERE fts_chunks MATCH ? ORDER BY s LIMIT 10"
        )
        pruned = fp.PrunedFulltext()
        assert pruned.ranked(conn, "fts_chunks", expr, weights, 10) == conn.execute(plain, (*weights, expr)).fetchall()
        assert pruned.stats["stored_lists"] > 0
        _add_document(store, 500, [("the cells", None, "the the the cells cells banana the " * 4)])
        assert ps.stored_epoch(conn) is None
        fresh = fp.PrunedFulltext()
        got = fresh.ranked(conn, "fts_chunks", expr, weights, 10)
        assert got == conn.execute(plain, (*weights, expr)).fetchall() and got[0][0] > 120
        assert fresh.stats["pruned"] == 1 and fresh.stats["stored_lists"] == 0
        with store.transaction() as w:
            assert ps.follow_edits(w, min_rows=0) == 1
        again = fp.PrunedFulltext()
        assert again.ranked(conn, "fts_chunks", expr, weights, 10) == got
        assert again.stats["stored_lists"] > 0
    finally:
        store.close()


def test_a_long_lived_reader_reads_the_set_as_followed_after_an_edit(tmp_path):
    """A reader caches the stored row counts and lengths by the set's epoch: following an edit moves the
    epoch, so the reader that searched before the edit reads the followed set, where what it cached
    lacks the new chunk's length (without the epoch moved, every stored list would be asked of FTS5 again
    for as long as the reader lives)."""
    rng = random.Random(5)
    store = Store(tmp_path / "index.db")
    try:
        for doc_id in range(1, 121):
            _add_document(store, doc_id, _chunks(rng))
        _store_all(store)
        conn = store.conn()
        expr, weights = '"the" OR "cells" OR "banana"', (2.0, 1.0, 1.0)
        plain = (
            "SELECT rowid, bm25(fts_chunks, ?, ?, ?) AS s FROM fts_chunks WHERE fts_chunks MATCH ? ORDER BY s LIMIT 10"
        )
        reader = fp.PrunedFulltext()
        assert reader.ranked(conn, "fts_chunks", expr, weights, 10) == conn.execute(plain, (*weights, expr)).fetchall()
        before = reader.stats["stored_lists"]
        assert before > 0
        _add_document(store, 500, [("the cells", None, "the the the cells cells banana the " * 4)])
        with store.transaction() as w:
            assert ps.follow_edits(w, min_rows=0) == 1
        got = reader.ranked(conn, "fts_chunks", expr, weights, 10)
        assert got == conn.execute(plain, (*weights, expr)).fetchall() and got[0][0] > 120
        assert reader.stats["stored_lists"] > before  # the followed set was read
    finally:
        store.close()


def test_a_rebuilt_table_or_too_many_edits_drop_the_set(tmp_path):
    rng = random.Random(9)
    store = Store(tmp_path / "index.db")
    try:
        for doc_id in range(1, 41):
            _add_document(store, doc_id, _chunks(rng))
        _store_all(store)
        conn = store.conn()
        for doc_id in range(1, 21):  # half the table: storing again costs less than following
            _remove_document(store, doc_id)
        with store.transaction() as w:
            ps.follow_edits(w, min_rows=0)
        assert ps.stored_epoch(conn) is None
        assert conn.execute("SELECT count(*) FROM fts_phrase_stats").fetchone()[0] == 0
        _store_all(store)  # a new set, read again
        assert assert_stored_is_fts5(conn)
        with store.transaction() as w:
            store.recreate_fulltext(w)
        assert ps.stored_epoch(conn) is None
        _add_document(store, 100, _chunks(rng))  # no set kept: nothing journalled
        assert conn.execute("SELECT count(*) FROM fts_phrase_journal").fetchone()[0] == 0
    finally:
        store.close()


def _kb(tmp_path: Path) -> Path:
    rng = random.Random(11)
    files = {}
    for i in range(120):
        sections = "\n\n".join(
            f"## {_text(rng, 2)}\n\n{_text(rng, rng.randint(5, 60))}" for _ in range(rng.randint(1, 3))
        )
        files[f"{'sub/' if i % 3 else ''}n{i:03}.md"] = f"# {_text(rng, 2)}\n\n{sections}\n"
    return write_kb(tmp_path / "kb", files)


def test_the_indexer_keeps_the_set_current_through_watched_and_full_runs(tmp_path, monkeypatch):
    """A watched update (`Engine.update`) and an `index` run each leave the stored set FTS5's answer, and
    searches read it; a writer that follows nothing leaves a set that is not read. Answers equal a
    search without pruning throughout."""
    from groove_tui.engine.index.indexer import Indexer

    kb = _kb(tmp_path)
    config = hashing_config()
    plain_cfg = replace(config, search=replace(config.search, fulltext_pruning=False))
    params = SearchParams(limit=10, legs="fts", min_quality=0)
    queries = ("the cells and protein expression", "banana and the cells", "istanbul café straße", "ellular anana")

    def answers(cfg):
        with Engine.open(kb, config=cfg, index_dir=tmp_path / "idx") as eng:
            out = [[(h.chunk_id, h.score) for h in eng.search(q, params).results] for q in queries]
            return out, eng._searcher.pruned.stats

    with Engine.open(kb, config=config, index_dir=tmp_path / "idx") as eng:
        eng.index()
        assert assert_stored_is_fts5(eng.store.conn())
        assert assert_stored_words_are_fts5(eng.store.conn()) > 0
        (kb / "sub/n001.md").write_text("# the cells\n\nthe cells the cells banana protein\n")
        (kb / "new.md").write_text("# banana\n\nthe banana and the cells of istanbul\n")
        (kb / "n003.md").unlink()
        eng.update(["sub/n001.md", "new.md", "n003.md"])
        assert assert_stored_is_fts5(eng.store.conn())
        assert assert_stored_words_are_fts5(eng.store.conn()) > 0
        assert assert_token_lists_are_the_texts(eng.store.conn()) == 1  # the configured weights'
    got, stats = answers(config)
    assert stats["stored_lists"] > 0 and stats["token_lists"] > 0 and got == answers(plain_cfg)[0]

    for i in range(0, 40, 4):
        (kb / f"sub/n{i + 1:03}.md").write_text(f"# protein\n\nprotein expression of the cells {i}\n")
    with Engine.open(kb, config=config, index_dir=tmp_path / "idx") as eng:
        eng.index()
        assert assert_stored_is_fts5(eng.store.conn())
        assert assert_stored_words_are_fts5(eng.store.conn()) > 0
        assert assert_token_lists_are_the_texts(eng.store.conn()) == 1
    got, stats = answers(config)
    assert stats["stored_lists"] > 0 and stats["token_lists"] > 0 and got == answers(plain_cfg)[0]

    monkeypatch.setattr(Indexer, "follow_phrase_statistics", lambda self: False)
    monkeypatch.setattr(Indexer, "_phrase_statistics", lambda self, cancel: None)
    (kb / "sub/n004.md").write_text("# cells\n\nthe the the cells cells banana\n")
    with Engine.open(kb, config=config, index_dir=tmp_path / "idx") as eng:
        eng.index()
        assert ps.stored_epoch(eng.store.conn()) is None
    got, stats = answers(config)
    assert stats["pruned"] > 0 and stats["stored_lists"] == stats["token_lists"] == 0 and got == answers(plain_cfg)[0]


def test_a_watched_update_defers_the_set_to_the_quiet_moment_and_stays_exact_meanwhile(tmp_path):
    """A batch's index work is its documents' own: `update(defer_statistics=True)` leaves the journal
    waiting, searches meanwhile read no stored list and still equal a search without pruning, and
    `follow_statistics` (the watcher's quiet moment) makes the set FTS5's answer again."""
    kb = _kb(tmp_path)
    config = hashing_config()
    plain_cfg = replace(config, search=replace(config.search, fulltext_pruning=False))
    params = SearchParams(limit=10, legs="fts", min_quality=0)
    queries = ("the cells and protein expression", "banana and the cells")

    def answers(cfg):
        with Engine.open(kb, config=cfg, index_dir=tmp_path / "idx", readonly=True) as eng:
            out = [[(h.chunk_id, h.score) for h in eng.search(q, params).results] for q in queries]
            return out, eng._searcher.pruned.stats

    with Engine.open(kb, config=config, index_dir=tmp_path / "idx") as eng:
        eng.index()
        assert eng.follow_statistics() is False  # nothing waits
        (kb / "sub/n001.md").write_text("# the cells\n\nthe cells the cells banana protein\n")
        (kb / "n003.md").unlink()
        eng.update(["sub/n001.md", "n003.md"], defer_statistics=True)
        conn = eng.store.conn()
        assert ps.edits_waiting(conn) and ps.stored_epoch(conn) is None
        got, stats = answers(config)
        assert stats["stored_lists"] == 0 and got == answers(plain_cfg)[0]
        assert eng.follow_statistics() is True
        assert not ps.edits_waiting(conn) and assert_stored_is_fts5(conn)
    got, stats = answers(config)
    assert stats["stored_lists"] > 0 and got == answers(plain_cfg)[0]


def test_watching_stopped_before_the_quiet_moment_follows_what_it_deferred(tmp_path):
    """Stopped within the quiet time after a batch, the watcher follows the deferred statistics on its
    way out: a search in another process then reads the stored set, as after any index run."""
    import queue
    import threading

    kb = _kb(tmp_path)
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index()
        events: queue.Queue = queue.Queue()
        stop = threading.Event()
        thread = threading.Thread(target=lambda: eng.watch(events.put, stop, debounce_ms=100))
        thread.start()
        try:
            while events.get(timeout=60).kind != "watching":
                pass
            (kb / "sub/n001.md").write_text("# the cells\n\nthe cells the cells banana protein\n")
            while events.get(timeout=60).kind != "batch":
                pass
            assert ps.edits_waiting(eng.store.conn())  # deferred: the quiet moment has not come
        finally:
            stop.set()
            thread.join(60)
        assert not thread.is_alive()
        conn = eng.store.conn()
        assert not ps.edits_waiting(conn) and assert_stored_is_fts5(conn)


def test_the_word_tables_lists_are_forgotten_when_another_analyzer_wrote_it(tmp_path):
    """The word table's lists are followed only while the table records the analyzer the follower writes
    with; otherwise they go, and the trigram table's stay FTS5's answer."""
    rng = random.Random(13)
    store = Store(tmp_path / "index.db")
    try:
        for doc_id in range(1, 61):
            _add_document(store, doc_id, _chunks(rng))
        _store_all(store)
        conn = store.conn()
        assert assert_stored_words_are_fts5(conn) > 0
        with store.transaction() as w:  # as another process with a dictionary would leave it
            store.set_meta("words_version", store.words_version + "+another-dictionary", w)
        _add_document(store, 100, _chunks(rng))  # its words skip the table, which is marked incomplete
        with store.transaction() as w:
            assert ps.follow_edits(w, min_rows=0) > 0
        tables = {t for (t,) in conn.execute("SELECT DISTINCT tbl FROM fts_phrase_stats")}
        assert not {t for t in tables if t.startswith("fts_words")} and "fts_chunks" in tables
        assert assert_stored_is_fts5(conn)
        assert ps.store_common_phrases(conn, WEIGHTINGS[0], "fts_words", min_rows=0) == 0
    finally:
        store.close()
