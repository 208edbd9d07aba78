"""Merging the full-text segments after bulk changes: when it runs, that results do not move, and that a
cancel before it loses nothing."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.index.indexer import UNMERGED_KEY, IndexCancelled, Indexer
from groove_tui.engine.index.store import Store

from helpers import hashing_config, write_kb

QUERIES = ("sqlite search", "note about tokio", "東京の検索", "runtime -sqlite")


def _kb(tmp_path, n=20):
    files = {
        f"n{i:02}.md": f"# Note {i}\n\nNote {i} is about sqlite search{' and tokio' * (i % 3)}. 東京の検索 {i}.\n"
        for i in range(n)
    }
    return write_kb(tmp_path / "kb", files)


def _engine(kb, tmp_path) -> Engine:
    return Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx")


def _results(eng: Engine) -> list:
    return [
        [(h.chunk_id, h.score) for h in eng.search(q, SearchParams(limit=10, min_quality=0)).results] for q in QUERIES
    ]


def _spy(monkeypatch) -> list[bool]:
    calls: list[bool] = []
    real = Store.optimize_fulltext
    monkeypatch.setattr(Store, "optimize_fulltext", lambda self: calls.append(True) or real(self))
    return calls


def test_a_bulk_index_merges_and_small_edits_wait_for_a_tenth_of_the_kb(tmp_path, monkeypatch):
    kb = _kb(tmp_path)
    calls = _spy(monkeypatch)
    with _engine(kb, tmp_path) as eng:
        eng.index()
        assert calls == [True] and eng.store.get_meta(UNMERGED_KEY) == "0"
        eng.index()  # nothing changed: nothing to merge
        assert calls == [True]
        (kb / "n01.md").write_text("# Note 1\n\nRewritten about gardening.\n")
        eng.index()  # 1 of 20 documents: automerge's job
        assert calls == [True] and eng.store.get_meta(UNMERGED_KEY) == "1"
        (kb / "n02.md").unlink()
        eng.index()  # 2 of 19 changed since the last merge: over a tenth
        assert calls == [True, True] and eng.store.get_meta(UNMERGED_KEY) == "0"


def test_merging_changes_no_result(tmp_path, monkeypatch):
    kb = _kb(tmp_path)
    with _engine(kb, tmp_path) as eng:
        monkeypatch.setattr(Store, "optimize_fulltext", lambda self: None)  # keep every segment for now
        eng.index()
        for i in range(0, 20, 2):  # one commit, hence one more segment, per edited document
            (kb / f"n{i:02}.md").write_text(f"# Note {i}\n\nNote {i} is about sqlite search, edited. 東京 {i}.\n")
            eng.index()
        monkeypatch.undo()
        segments = _leaf_rows(eng)
        before = _results(eng)
        eng.store.optimize_fulltext()
        assert _leaf_rows(eng) < segments, "the merge rewrote the index into fewer pieces"
        assert _results(eng) == before


def _leaf_rows(eng: Engine) -> int:
    """Rows of the FTS5 segment index tables: more segments, more rows."""
    conn = eng.store.conn()
    return sum(conn.execute(f"SELECT count(*) FROM {t}_idx").fetchone()[0] for t in ("fts_chunks", "fts_bigram"))


def test_an_index_never_merged_is_merged_on_its_next_run(tmp_path, monkeypatch):
    kb = _kb(tmp_path)
    with _engine(kb, tmp_path) as eng:
        eng.index()
        with eng.store.transaction() as conn:  # as an index built before merging existed
            conn.execute("DELETE FROM index_meta WHERE key = ?", (UNMERGED_KEY,))
        calls = _spy(monkeypatch)
        report = eng.index()
        assert report.unchanged == 20 and calls == [True]
        with eng.store.transaction() as conn:  # an unreadable count is treated as unknown, not an error
            eng.store.set_meta(UNMERGED_KEY, "garbage", conn)
        eng.index()
        assert calls == [True, True] and eng.store.get_meta(UNMERGED_KEY) == "0"


def test_cancelling_before_the_merge_keeps_the_index_and_the_next_run_merges(tmp_path, monkeypatch):
    kb = _kb(tmp_path)
    with _engine(kb, tmp_path) as eng:
        eng.index()
        before = _results(eng)
        with eng.store.transaction() as conn:
            conn.execute("DELETE FROM index_meta WHERE key = ?", (UNMERGED_KEY,))
        cancel = threading.Event()
        real_phase = Indexer._fulltext_phase

        def phase_then_cancel(self, *args, **kwargs):
            real_phase(self, *args, **kwargs)
            cancel.set()  # as if the user quit as phase one finished

        monkeypatch.setattr(Indexer, "_fulltext_phase", phase_then_cancel)
        calls = _spy(monkeypatch)
        with pytest.raises(IndexCancelled, match="before merging the full-text index"):
            eng.index(cancel=cancel)
        assert calls == [] and eng.store.get_meta(UNMERGED_KEY) is None, "the merge is still owed"
        assert _results(eng) == before
        monkeypatch.setattr(Indexer, "_fulltext_phase", real_phase)
        eng.index()
        assert calls == [True] and eng.store.get_meta(UNMERGED_KEY) == "0"
        assert _results(eng) == before


def _automerge_seen_by_inserts(monkeypatch) -> list[bool]:
    """Whether FTS5's incremental merging was on at each batch of full-text rows written."""
    seen: list[bool] = []
    real = Store.insert_fulltext

    def spying(self, rows, conn):
        seen.append(self.automerge(conn))
        return real(self, rows, conn)

    monkeypatch.setattr(Store, "insert_fulltext", spying)
    return seen


def _automerge_settings(eng: Engine) -> dict[str, object]:
    conn = eng.store.conn()
    return {
        t: (conn.execute(f"SELECT v FROM {t}_config WHERE k = 'automerge'").fetchone() or [None])[0]
        for t in ("fts_chunks", "fts_bigram", "fts_words")
    }


def test_a_run_that_ends_in_a_merge_writes_without_automerge_and_turns_it_back_on(tmp_path, monkeypatch):
    kb = _kb(tmp_path)
    seen = _automerge_seen_by_inserts(monkeypatch)
    with _engine(kb, tmp_path) as eng:
        eng.index()  # a bulk index: the optimize at its end merges every segment
        assert seen and not any(seen)
        assert eng.store.automerge(eng.store.conn())
        assert set(_automerge_settings(eng).values()) == {4}, "every table back at FTS5's default"
        seen.clear()
        (kb / "n01.md").write_text("# Note 1\n\nRewritten about gardening.\n")
        eng.index()  # 1 of 20: no merge at the end, so FTS5 keeps merging as it writes
        assert seen == [True]


def test_a_run_cancelled_in_the_full_text_phase_leaves_automerge_on(tmp_path):
    kb = _kb(tmp_path)
    cancel = threading.Event()

    def progress(p) -> None:
        if p.phase == "fulltext" and p.done >= 5:
            cancel.set()

    with _engine(kb, tmp_path) as eng:
        with pytest.raises(IndexCancelled):
            eng.index(progress=progress, cancel=cancel)
        assert eng.store.automerge(eng.store.conn())
        assert 0 < eng.store.counts()[0] < 20, "stopped partway, the notes written before it kept"


def test_a_batch_whose_full_text_rows_fail_is_rolled_back_and_the_index_stays_writable(tmp_path, monkeypatch):
    kb = _kb(tmp_path)
    real = Store.insert_fulltext

    def failing(self, rows, conn):
        real(self, rows, conn)
        raise sqlite3.OperationalError("disk I/O error")

    with _engine(kb, tmp_path) as eng:
        monkeypatch.setattr(Store, "insert_fulltext", failing)
        with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
            eng.index()
        assert not eng.store.conn().in_transaction
        assert eng.store.counts()[0] == 0, "no note without its full-text rows"
        monkeypatch.undo()
        eng.index()
        assert eng.store.counts()[0] == 20 and eng.store.automerge(eng.store.conn())


def test_a_run_after_one_killed_without_automerge_turns_it_on(tmp_path):
    kb = _kb(tmp_path)
    with _engine(kb, tmp_path) as eng:
        eng.index()
        eng.store.set_automerge(False)  # as a process killed mid-phase leaves it
        eng.index()  # nothing changed
        assert eng.store.automerge(eng.store.conn())
