"""A full disk during `index`: one line that says what happened and what to do, a non-zero exit, and the
documents committed before it stay searchable (the next run finishes the job)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groove_tui.cli import main
from groove_tui.engine import Engine, EngineError
from groove_tui.engine.index.store import Store, sqlite3

from helpers import hashing_config, write_kb

FIRST = {f"first/{i}.md": f"# Alpha {i}\n\nalpha notes number {i} about tokio runtimes.\n" for i in range(5)}
# big enough that the database must grow by many pages to take them
SECOND = {f"second/{i}.md": f"# Beta {i}\n\n" + "beta lorem ipsum words " * 400 + "\n" for i in range(40)}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    kb = write_kb(tmp_path / "kb", FIRST)
    idx = tmp_path / "idx"
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["index", str(kb), "--model", "hashing", "--index-dir", str(idx), "--quiet"]) == 0
    write_kb(kb, SECOND)
    return kb, idx


def _disk_fills_up(monkeypatch: pytest.MonkeyPatch, spare_pages: int) -> None:
    """Every connection to the index may grow the database by `spare_pages` pages only: SQLite's own
    SQLITE_FULL, as on a disk that has no space left."""
    real = Store.open_connection

    def limited(self):
        conn = real(self)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + spare_pages}")
        return conn

    monkeypatch.setattr(Store, "open_connection", limited)


def test_a_full_disk_is_one_line_with_what_to_do_and_the_index_stays_searchable(env, monkeypatch, capsys) -> None:
    kb, idx = env
    common = ["--model", "hashing", "--index-dir", str(idx)]
    capsys.readouterr()
    with monkeypatch.context() as m:
        _disk_fills_up(m, spare_pages=12)
        assert main(["index", str(kb), *common, "--quiet"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("groove-tui: the disk holding the index is full")
    assert "Free some space" in line and "--index-dir" in line and "GROOVE_TUI_INDEX_DIR" in line
    assert "database or disk is full" not in line  # SQLite's words stay out of it

    # what was committed before the disk filled up still searches
    assert main(["search", str(kb), "alpha notes", *common, "--format", "json", "--limit", "20"]) == 0
    paths = {r["path"] for r in json.loads(capsys.readouterr().out)["results"]}
    assert {p for p in FIRST} <= paths
    assert main(["status", str(kb), *common, "--format", "json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert len(FIRST) <= status["documents"] < len(FIRST) + len(SECOND)  # part of the second batch, or none

    # with space again, the next run finishes the job
    assert main(["index", str(kb), *common, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["status", str(kb), *common, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == len(FIRST) + len(SECOND)


def test_a_write_failing_with_disk_full_mid_run_keeps_every_earlier_document(tmp_path: Path, monkeypatch) -> None:
    """The error injected at the third document's write: the engine raises its own one-line error (not
    SQLite's), rolls that document back whole, and the two before it are searchable."""
    from groove_tui.engine.index import indexer

    kb = write_kb(tmp_path / "kb", {f"d{i}.md": f"# Doc {i}\n\nkeyword{i} gamma text.\n" for i in range(5)})
    real = indexer.Indexer._write_rows
    calls = []

    def write(self, doc, f, doc_id, contextual, conn, fulltext, now):
        calls.append(doc.path)
        if len(calls) == 3:  # a write inside the document's transaction, then the disk is full
            conn.execute("INSERT INTO documents(path, content_hash, last_indexed) VALUES ('half.md', 'h', 'now')")
            raise sqlite3.OperationalError("database or disk is full")
        return real(self, doc, f, doc_id, contextual, conn, fulltext, now)

    monkeypatch.setattr(indexer.Indexer, "_write_rows", write)
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        with pytest.raises(EngineError, match=r"^the disk holding the index is full .*--index-dir") as e:
            eng.index()
        assert "\n" not in str(e.value)
        paths = {p for (p,) in eng.store.conn().execute("SELECT path FROM documents")}
        assert paths == {"d0.md", "d1.md"}  # nothing of the failed document, not even its row
        assert eng.search("keyword1").results[0].path == "d1.md"


def test_a_disk_too_full_to_create_the_index_says_so(tmp_path: Path, monkeypatch, capsys) -> None:
    kb = write_kb(tmp_path / "kb", FIRST)
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    real = Store.open_connection

    def tiny(self):
        conn = real(self)
        conn.execute("PRAGMA max_page_count = 2")  # room for barely a table
        return conn

    monkeypatch.setattr(Store, "open_connection", tiny)
    assert main(["index", str(kb), "--model", "hashing", "--index-dir", str(tmp_path / "idx"), "--quiet"]) == 1
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and line.startswith("groove-tui: the disk holding the index is full")
    assert "delete it or re-index" not in line  # not a damaged index
