"""Readers (search, status, eval, sweep) never take the write lock: they answer from the last commit while a
writer holds and re-takes it, and say clearly when there is no index they can read without writing."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import sqlean as sqlite3

from groove_tui.cli import main
from groove_tui.engine import Engine, IndexNotReady

from helpers import SAMPLE_KB, hashing_config, write_kb

GOLDEN = "queries:\n  - id: q1\n    query: tokio runtime\n    expected:\n      - path: notes/rust/async.md\n"


@pytest.fixture
def indexed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """(kb, --index-dir, the database file)."""
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    idx = tmp_path / "idx"
    with Engine.open(kb, config=hashing_config(), index_dir=idx) as eng:
        eng.index()
        db = eng.store.db_path
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "golden.yml").write_text(GOLDEN, encoding="utf-8")
    return kb, idx, db


class Writer(threading.Thread):
    """Another connection that commits a document, takes the write lock again at once and keeps writing
    under it until told to stop: an indexer in the middle of a long transaction, with no gap a lucky
    reader could slip through."""

    def __init__(self, db: Path) -> None:
        super().__init__(daemon=True)
        self.db = db
        self.holding = threading.Event()
        self.stop = threading.Event()
        self.rounds = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        conn = sqlite3.connect(str(self.db), isolation_level=None)
        try:
            conn.execute("PRAGMA busy_timeout=5000")
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO documents(path, content_hash, last_indexed) VALUES ('committed.md', 'h', 'now')")
            conn.execute("COMMIT")
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO documents(path, content_hash, last_indexed) VALUES ('uncommitted.md', 'h', 'now')"
            )
            self.holding.set()
            while not self.stop.wait(0.001):
                conn.execute(
                    "INSERT OR REPLACE INTO index_meta(key, value) VALUES ('writer_round', ?)", (str(self.rounds),)
                )
                self.rounds += 1
            conn.execute("ROLLBACK")
        except BaseException as exc:  # surfaced by the test
            self.error = exc
            self.holding.set()
        finally:
            conn.close()


def test_search_status_eval_and_sweep_answer_while_a_writer_holds_the_write_lock(indexed, capsys) -> None:
    kb, idx, db = indexed
    writer = Writer(db)
    writer.start()
    assert writer.holding.wait(30) and writer.error is None
    common = ["--model", "hashing", "--index-dir", str(idx)]
    try:
        for _ in range(3):
            assert main(["search", str(kb), "tokio runtime", *common, "--format", "json"]) == 0, capsys.readouterr().err
            hits = json.loads(capsys.readouterr().out)["results"]
            assert hits and hits[0]["path"] == "notes/rust/async.md"
        assert main(["status", str(kb), *common, "--format", "json"]) == 0
        status = json.loads(capsys.readouterr().out)
        assert status["documents"] == len(SAMPLE_KB) + 1  # the last commit, not the writer's open transaction
        assert main(["eval", str(kb), *common, "--golden", "golden.yml", "--no-history", "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["aggregate"]["mrr"] == 1.0
        assert main(["sweep", str(kb), *common, "--golden", "golden.yml", "--param", "mmr_lambda=0.5,1"]) == 0
        capsys.readouterr()
    finally:
        writer.stop.set()
        writer.join(30)
    assert writer.error is None and writer.rounds > 0


def test_opening_an_index_that_is_set_up_takes_no_write_lock_either(indexed) -> None:
    """The explorer opens its engine for writing (it indexes too): while another process indexes, opening
    and searching must not wait for that process's lock either; only a write would."""
    kb, idx, db = indexed
    writer = Writer(db)
    writer.start()
    assert writer.holding.wait(30) and writer.error is None
    try:
        with Engine.open(kb, config=hashing_config(), index_dir=idx) as eng:
            assert eng.search("tokio runtime").results[0].path == "notes/rust/async.md"
            assert eng.status().documents == len(SAMPLE_KB) + 1
    finally:
        writer.stop.set()
        writer.join(30)
    assert writer.error is None


def test_a_reader_opens_while_a_writer_commits_and_retakes_the_lock_in_a_loop(indexed) -> None:
    """The indexer's own pattern: one short transaction after another, each begun the moment the last ends."""
    kb, idx, db = indexed
    stop = threading.Event()
    commits = []

    def churn() -> None:
        conn = sqlite3.connect(str(db), isolation_level=None)
        conn.execute("PRAGMA busy_timeout=5000")
        n = 0
        while not stop.is_set():
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT OR REPLACE INTO index_meta(key, value) VALUES ('churn', ?)", (str(n),))
            conn.execute("COMMIT")
            n += 1
            commits.append(n)
        conn.close()

    t = threading.Thread(target=churn, daemon=True)
    t.start()
    try:
        for _ in range(20):
            with Engine.open(kb, config=hashing_config(), index_dir=idx, readonly=True) as eng:
                assert eng.search("tokio runtime").results[0].path == "notes/rust/async.md"
    finally:
        stop.set()
        t.join(30)
    assert commits


def test_a_reader_writes_nothing_and_cannot_index(indexed) -> None:
    kb, idx, _db = indexed
    with Engine.open(kb, config=hashing_config(), index_dir=idx, readonly=True) as eng:
        eng.search("tokio")
        eng.status()
        with pytest.raises(Exception, match=r"readonly|read-only|reading only"):
            eng.store.conn().execute("INSERT INTO index_meta(key, value) VALUES ('x', 'y')")
        with pytest.raises(Exception, match="searching only"):
            eng.index()


def test_a_reader_on_a_kb_never_indexed_says_so_and_creates_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    idx = tmp_path / "idx"
    monkeypatch.chdir(tmp_path)
    for argv in (
        ["search", str(kb), "tokio"],
        ["status", str(kb)],
        ["eval", str(kb), "--golden", str(tmp_path / "g.yml")],
    ):
        assert main([*argv, "--model", "hashing", "--index-dir", str(idx)]) == 1
        err = capsys.readouterr().err
        assert "has not been indexed yet" in err and f"Run: groove-tui index {kb}" in err, err
        assert len(err.strip().splitlines()) == 1
    assert not idx.exists()  # a reader creates no index directory, no database
    with pytest.raises(IndexNotReady):
        Engine.open(kb, config=hashing_config(), index_dir=idx, readonly=True)


def test_a_reader_on_an_index_needing_a_migration_says_so_without_writing(indexed, capsys) -> None:
    kb, idx, db = indexed
    conn = sqlite3.connect(str(db), isolation_level=None)
    conn.execute("DELETE FROM index_meta WHERE key = 'schema_version'")  # as an index from before the key
    conn.close()
    assert main(["search", str(kb), "tokio", "--model", "hashing", "--index-dir", str(idx)]) == 1
    err = capsys.readouterr().err
    assert "must be updated" in err and f"Run: groove-tui index {kb}" in err and len(err.strip().splitlines()) == 1
    conn = sqlite3.connect(str(db), isolation_level=None)
    assert conn.execute("SELECT value FROM index_meta WHERE key = 'schema_version'").fetchone() is None
    conn.close()
    # the indexing run the message names brings it up to date; readers then answer
    assert main(["index", str(kb), "--model", "hashing", "--index-dir", str(idx), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["search", str(kb), "tokio", "--model", "hashing", "--index-dir", str(idx)]) == 0


def test_an_index_an_indexer_is_still_creating_reads_as_not_indexed_yet(tmp_path: Path, monkeypatch, capsys) -> None:
    """Tables created, nothing committed into them yet: "not indexed yet", not "made by another version"."""
    from groove_tui.engine.index.store import _SCHEMA, BIGRAM_DDL, FTS_DDL

    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    monkeypatch.chdir(tmp_path)
    from groove_tui.settings.paths import index_dir_for

    db = index_dir_for(kb.resolve(), tmp_path / "idx") / "index.db"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(str(db), isolation_level=None)
    conn.executescript(_SCHEMA + FTS_DDL + BIGRAM_DDL)
    conn.close()
    assert main(["search", str(kb), "tokio", "--model", "hashing", "--index-dir", str(tmp_path / "idx")]) == 1
    assert "has not been indexed yet" in capsys.readouterr().err
