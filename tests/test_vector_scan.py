"""The vector leg's in-memory scan (engine/retrieve/vector_scan.py) must give exactly sqlite-vec's KNN: the same ids,
distances to the last bit and tie order, at every k, on vectors with exact duplicates; and a search
through the engine must not change at all when it is switched on, before or after the index changes."""

from __future__ import annotations

import random
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import pytest
import sqlean as sqlite3
import sqlite_vec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.retrieve import vector_scan as vs
from groove_tui.settings.config import ConfigError, parse_config

from helpers import hashing_config, write_kb


@pytest.fixture(autouse=True)
def _scan_small_tables(monkeypatch):
    """Indexes under MIN_ROWS chunks stay with sqlite-vec; these tests build small ones."""
    monkeypatch.setattr(vs, "MIN_ROWS", 0)
    monkeypatch.setattr(vs, "CANDIDATE_FLOOR", 0)  # and narrow the candidates at any size


def _vec_table(vectors: np.ndarray, chunk_size: int = 1024, ids=None) -> sqlite3.Connection:
    """A vec0 table named as the index's, filled in the order given (ids default to 1..n)."""
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.execute(
        f"CREATE VIRTUAL TABLE vec_chunks USING vec0(chunk_id INTEGER PRIMARY KEY, "
        f"embedding float[{vectors.shape[1]}], chunk_size={chunk_size})"
    )
    ids = list(range(1, len(vectors) + 1)) if ids is None else ids
    conn.executemany(
        "INSERT INTO vec_chunks(chunk_id, embedding) VALUES (?, ?)",
        [(int(i), row.tobytes()) for i, row in zip(ids, vectors, strict=True)],
    )
    return conn


@pytest.mark.parametrize("rows", [50, 600])  # summed by add.accumulate, and one dimension at a time
def test_distances_are_sqlite_vecs_to_the_last_bit(rows):
    conn = _vec_table(np.zeros((1, 4), np.float32))
    assert vs.calibrated(conn)
    assert (rows <= vs._ACCUMULATE_COLUMNS) == (rows == 50)
    rng = np.random.default_rng(7)
    m = (rng.standard_normal((rows, 384)) * rng.choice([1e-4, 1.0, 1e4], (rows, 384))).astype(np.float32)
    q = rng.standard_normal(384).astype(np.float32)
    ours = vs.distances(np.ascontiguousarray(m.T), q)
    theirs = [conn.execute("SELECT vec_distance_l2(?, ?)", (r.tobytes(), q.tobytes())).fetchone()[0] for r in m]
    assert [float(d) for d in ours] == theirs
    # a different summation order is caught: the pairwise sum numpy uses by default differs somewhere
    pairwise = np.sqrt(((m - q) ** 2).sum(axis=1, dtype=np.float32))
    assert [float(d) for d in pairwise] != theirs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 300),
    dim=st.sampled_from([3, 16, 64]),
    k=st.integers(1, 350),
    chunk_size=st.sampled_from([8, 64, 1024]),
    deletes=st.integers(0, 20),
    scaled=st.booleans(),
)
def test_knn_equals_sqlite_vec_with_ties(seed, rows, dim, k, chunk_size, deletes, scaled):
    """Exact copies tie; small storage chunks put ties within one chunk and across chunks; ids are
    inserted shuffled and some rows deleted, so neither id nor insertion order is the scan's order.
    Rows of very different lengths stress the bound by which candidates are narrowed before the exact
    scan; the narrowing runs at every size here."""
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((rows, dim)).astype(np.float32)
    if scaled:
        m *= rng.choice([1e-3, 1.0, 1e3], (rows, 1)).astype(np.float32)
    if rows > 3:
        copies = rng.choice(rows, rows // 3, replace=False)
        m[copies] = m[rng.integers(0, rows, len(copies))]
    ids = [int(i) for i in rng.permutation(np.arange(1, rows + 1) * 7)]
    conn = _vec_table(m, chunk_size, ids)
    gone = [int(i) for i in rng.choice(ids, min(deletes, rows - 1), replace=False)] if rows > 1 else []
    conn.executemany("DELETE FROM vec_chunks WHERE chunk_id = ?", [(i,) for i in gone])
    q = m[rng.integers(rows)] if rng.random() < 0.5 else rng.standard_normal(dim).astype(np.float32)
    want = conn.execute(
        "SELECT chunk_id, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ? ORDER BY distance",
        (q.tobytes(), k),
    ).fetchall()
    read = vs.read_vectors(conn)
    assert read is not None
    got_ids, matrix_t = read
    assert vs.nearest(got_ids, vs.distances(matrix_t, q), k) == want
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(vs, "CANDIDATE_FLOOR", 0)
        cand = vs.candidates(matrix_t, vs.row_norms(matrix_t), q, k)
        assert vs.nearest(got_ids[cand], vs.distances(np.ascontiguousarray(matrix_t[:, cand]), q), k) == want


def _kb(tmp_path, n: int = 60):
    rng = random.Random(3)
    words = [
        "rust",
        "tokio",
        "runtime",
        "spawn",
        "sqlite",
        "vector",
        "search",
        "cells",
        "protein",
        "expression",
        "banana",
    ]
    files = {f"n{i:03}.md": f"# Note {i}\n\n" + " ".join(rng.choice(words) for _ in range(30)) for i in range(n)}
    files.update({"copy-a.md": "# Same\n\nrust tokio", "copy-b.md": "# Same\n\nrust tokio"})  # equal vectors
    return write_kb(tmp_path / "kb", files)


@contextmanager
def _scanned(tmp_path):
    """(kb, engine with the in-memory scan, engine without it on the same index, the scan), indexed and
    the matrix read, so the scan really answers what follows."""
    kb = _kb(tmp_path)
    on = hashing_config()
    off = replace(on, search=replace(on.search, vector_scan=False))
    with (
        Engine.open(kb, config=on, index_dir=tmp_path / "idx") as eng,
        Engine.open(kb, config=off, index_dir=tmp_path / "idx") as plain,
    ):
        eng.index()
        scan = eng._searcher.vectors
        eng.search("warm", SearchParams(legs="vector"))
        scan.wait_loaded()
        assert scan._base is not None
        yield kb, eng, plain, scan


def _hits(resp):
    return [(h.chunk_id, h.score, h.path) for h in resp.results]


def test_engine_results_do_not_change_with_the_scan(tmp_path):
    queries = ["rust tokio", "protein expression in cells", "banana", "zzz"]
    pages = [(legs, limit) for legs in ("vector", "hybrid") for limit in (1, 5, 40)]
    with _scanned(tmp_path) as (kb, eng, plain, scan):

        def both(q, legs, limit):
            p = SearchParams(limit=limit, legs=legs)
            return _hits(eng.search(q, p)), _hits(plain.search(q, p))

        for q in queries:
            for legs, limit in pages:
                ours, theirs = both(q, legs, limit)
                assert ours == theirs, (q, legs, limit)
        # an edit moves the generation: the matrix answers with the edit's delta, never as it was
        (kb / "n000.md").write_text("# Note 0\n\nbanana banana sqlite", encoding="utf-8")
        eng.index()
        for q in queries:
            ours, theirs = both(q, "vector", 10)
            assert ours == theirs
        now = eng.store.generation()
        assert scan._generation != now and scan._deltas.get(now) is not None


def test_a_query_asked_again_for_more_rows_is_bounded_once(tmp_path, monkeypatch):
    """A tie across the k-th place makes the vector leg ask again for more rows of the same query: the
    second answer comes from the first one's bounds, and both are sqlite-vec's."""
    with _scanned(tmp_path) as (_kb_path, eng, plain, scan):
        computed = []
        real = vs.bounds

        def counted(*args, **kwargs):
            computed.append(1)
            return real(*args, **kwargs)

        monkeypatch.setattr(vs, "bounds", counted)
        generation = eng.store.generation()
        q, other, third = (
            np.asarray(eng.embedder().embed_query(t), np.float32) for t in ("rust tokio", "banana", "protein cells")
        )
        for k in (2, 4, 9, 30):
            assert scan.knn(q, k, generation) == plain._searcher.knn(q, k, generation)
        assert len(computed) == 1
        assert scan.knn(other, 3, generation) == plain._searcher.knn(other, 3, generation)
        assert scan.knn(q, 5, generation) == plain._searcher.knn(q, 5, generation)
        assert len(computed) == 2  # the other side's query does not push it out
        assert scan.knn(third, 3, generation) == plain._searcher.knn(third, 3, generation)
        assert scan.knn(other, 7, generation) == plain._searcher.knn(other, 7, generation)
        assert scan.knn(q, 6, generation) == plain._searcher.knn(q, 6, generation)
        assert len(computed) == 4  # two other queries since: computed again
        # a matrix read again drops what was kept of the one before
        scan._load()
        assert scan._recent == []


def test_vectors_still_being_written_or_a_small_table_hold_no_matrix(tmp_path, monkeypatch):
    kb = _kb(tmp_path)
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index(embed=False)  # phase one only: every chunk still lacks its vector
        scan = eng._searcher.vectors
        assert scan.knn(np.zeros(64, np.float32), 5, eng.store.generation()) is None
        scan.wait_loaded()
        assert scan._generation == eng.store.generation() and scan._base is None
        eng.index()
        monkeypatch.setattr(vs, "MIN_ROWS", 10_000)  # the usual floor: a small index stays with sqlite-vec
        eng.search("rust", SearchParams(legs="vector"))
        scan.wait_loaded()
        assert scan._base is None and eng.search("rust", SearchParams(legs="vector")).results


def test_vector_scan_is_a_checked_boolean():
    assert parse_config({"search": {"vector_scan": False}}).search.vector_scan is False
    with pytest.raises(ConfigError, match=r"search.vector_scan"):
        parse_config({"search": {"vector_scan": "yes"}})


def _answers(eng, plain, queries=("rust tokio", "protein expression in cells", "banana", "copy")):
    out = []
    for q in queries:
        for limit in (1, 5, 40):
            p = SearchParams(limit=limit, legs="vector")
            out.append((q, limit, _hits(eng.search(q, p)), _hits(plain.search(q, p))))
    return out


def test_later_generations_are_served_from_the_matrix_and_their_delta_exactly(tmp_path, monkeypatch):
    """Edits after the matrix was read — a changed note, a new one tying another's vector, a deletion, a
    rename, chunks still waiting for their vectors, then written — are answered from the matrix and the
    journal's delta exactly as sqlite-vec answers; a forced rebuild (vectors replaced wholesale) and a
    journal trimmed past the matrix are never served from it."""
    from groove_tui.engine.index import store as store_mod

    with _scanned(tmp_path) as (kb, eng, plain, scan):
        read_at = scan._generation

        def edit_and_compare(edit, embed=True):
            edit()
            eng.index(embed=embed)
            for q, limit, ours, theirs in _answers(eng, plain):
                assert ours == theirs, (q, limit)
            gen = eng.store.generation()
            for q in ("rust tokio", "banana sqlite", "protein cells"):  # the scan's own rows, unfiltered
                qvec = np.asarray(eng.embedder().embed_query(q), np.float32)
                for k in (1, 7, 80):
                    want = (
                        eng.store.conn()
                        .execute(
                            "SELECT chunk_id, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ? "
                            "ORDER BY distance",
                            (qvec.tobytes(), k),
                        )
                        .fetchall()
                    )
                    assert scan.knn(qvec, k, gen) in (None, want), (q, k)
            ids = sorted(
                {r[0] for r in eng.store.conn().execute("SELECT id FROM chunks")} | set(scan._base.ids.tolist())
            )
            ids.append(10**9)  # the chunks now, those the matrix holds (some since deleted), and one unknown
            held, stored = scan.vectors(ids, gen), eng.store.embeddings_for(ids)
            if scan._generation == gen or scan._deltas.get(gen) is not None:  # what knn serves, vectors gives
                assert held is not None and held.keys() == stored.keys()
                assert all(held[i].tobytes() == stored[i].tobytes() for i in held)
            else:
                assert held is None
            return gen

        served = []
        steps = [
            lambda: (kb / "n000.md").write_text("# Note 0\n\nbanana banana sqlite", encoding="utf-8"),
            lambda: (kb / "copy-c.md").write_text("# Same\n\nrust tokio", encoding="utf-8"),  # ties two rows
            lambda: (kb / "n001.md").unlink(),
            lambda: (kb / "n002.md").rename(kb / "moved.md"),
        ]
        for step in steps:
            gen = edit_and_compare(step)
            served.append(scan._generation == read_at and scan._deltas.get(gen) is not None)
        gen = edit_and_compare(lambda: (kb / "n003.md").write_text("# Three\n\nprotein cells", "utf-8"), False)
        assert scan._deltas.get(gen) is not None  # the edited note has no vector yet: absent, as in sqlite-vec
        edit_and_compare(lambda: None)  # its vector written
        assert all(served)

        eng.index(force=True)  # every vector replaced: the matrix's epoch is over
        gen = eng.store.generation()
        for q, limit, ours, theirs in _answers(eng, plain):
            assert ours == theirs, (q, limit)
        assert scan._deltas.get(gen) is None
        scan.wait_loaded()
        eng.search("warm", SearchParams(legs="vector"))
        scan.wait_loaded()
        assert scan._generation == eng.store.generation()

        monkeypatch.setattr(store_mod, "VEC_JOURNAL_KEPT", 1)  # the journal trimmed past the matrix
        for i in range(3):
            (kb / f"n01{i}.md").write_text(f"# Trim {i}\n\nsqlite vector {i}", encoding="utf-8")
        eng.index()
        gen = eng.store.generation()
        for q, limit, ours, theirs in _answers(eng, plain):
            assert ours == theirs, (q, limit)
        assert scan._deltas.get(gen) is None


def test_a_search_the_index_moved_past_is_answered_as_the_index_is_now(tmp_path):
    """A search asks for the generation it began in; when the index has been written since (a batch
    writes its full text, then its vectors), the scan answers for the generation the index holds now,
    as sqlite-vec would read it, rather than leaving the search to sqlite-vec's slower scan."""
    with _scanned(tmp_path) as (kb, eng, _plain, scan):
        read_at = scan._generation

        def now_from_sqlite_vec(qvec, k):
            return (
                eng.store.conn()
                .execute(
                    "SELECT chunk_id, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                    (qvec.tobytes(), k),
                )
                .fetchall()
            )

        qvec = np.asarray(eng.embedder().embed_query("banana sqlite"), np.float32)
        assert scan.knn(qvec, 5, read_at - 1) == now_from_sqlite_vec(qvec, 5)  # begun before the matrix was read
        (kb / "n000.md").write_text("# Note 0\n\nbanana banana sqlite", encoding="utf-8")
        eng.index()
        began_in = eng.store.generation()
        (kb / "n001.md").write_text("# Note 1\n\nsqlite banana bread", encoding="utf-8")
        eng.index()
        now = eng.store.generation()
        assert read_at < began_in < now
        for k in (1, 7, 80):
            assert scan.knn(qvec, k, began_in) == now_from_sqlite_vec(qvec, k), k
        assert began_in not in scan._deltas and scan._deltas.get(now) is not None
        assert scan._generation == read_at  # served from the matrix: nothing read again
