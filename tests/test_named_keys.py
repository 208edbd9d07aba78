"""The keys headings and opening H1s are named by, kept by the index (`named_keys`): the named lookup
reads them in one indexed statement, gives what the full-text phrase lookup gives, follows edits, and an
index made before the table gets them at its next indexing run (read as before until then)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.index.store import Store

from helpers import hashing_config, write_kb

_BODY = "A body long enough to stand as a section of its own, with a few words in it.\n\n"
KB = {
    "guide.md": f"# Guide\n\n{_BODY}## Fusion\n\n{_BODY}## Parent retriever\n\n{_BODY}",
    "tools/tar.md": f"# tar\n\nArchiving utility. Create an archive from files.\n\n{_BODY}",
    "ideas/compost.md": f"# The compost heap\n\nGreens and browns in layers; turn it monthly.\n\n{_BODY}",
    "ideas/garden.md": f"---\ntitle: The kitchen garden\n---\n\nBeds near the door; herbs and salad leaves.\n\n{_BODY}",
    "ja/設定.md": "# 設定ファイル\n\n## 検索の設定\n\n重みと件数を決める。検索の設定は設定ファイルに書き、"
    "件数と重みを選ぶ。\n",
    **{
        f"talk/t{i}.md": f"# Talk {i}\n\n## Why the parent retriever helps\n\nparent retriever {i}. {_BODY}"
        for i in range(3)
    },
}
QUERIES = ["parent retriever", "Parent Retriever:", "fusion", "tar", "compost heap", "the compost heap",
           "kitchen garden", "検索の設定", "設定ファイル", "guide", "nothing named so"]  # fmt: skip
PARAMS = SearchParams(limit=5, min_quality=0, explain=True)


def _named(eng: Engine) -> dict[str, list[tuple[str, str | None]]]:
    out = {}
    for q in QUERIES:
        eng._searcher.named_cache.clear()
        eng._searcher.legs_cache.clear()
        out[q] = [(h.path, h.heading) for h in eng.search(q, PARAMS).results if h.trace and h.trace.named]
    return out


def _forget_names(db: Path) -> None:
    """The index as one made before named_keys: no keys, no record of them."""
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM named_keys")
        conn.execute("DELETE FROM index_meta WHERE key = 'names_version'")


@pytest.fixture
def eng(tmp_path: Path):
    kb = write_kb(tmp_path / "kb", KB)
    engine = Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx")
    engine.index()
    yield engine
    engine.close()


def test_the_kept_keys_name_what_the_phrase_lookup_names(eng, monkeypatch):
    assert eng.store.names_ready()
    by_keys = _named(eng)
    assert by_keys["parent retriever"] == [("guide.md", "Parent retriever")]
    assert by_keys["tar"] == [("tools/tar.md", None)]
    assert by_keys["検索の設定"] == [("ja/設定.md", "検索の設定")]
    assert by_keys["nothing named so"] == []
    monkeypatch.setattr(Store, "names_ready", lambda self, conn=None: False)
    assert _named(eng) == by_keys


def test_the_lookup_reads_the_keys_not_the_full_text(eng, monkeypatch):
    statements: list[str] = []
    eng.store.conn().set_trace_callback(statements.append)
    eng._searcher.named_cache.clear()
    eng.search("parent retriever", PARAMS)
    eng.store.conn().set_trace_callback(None)
    assert any("FROM named_keys" in s for s in statements)
    assert not any("MATCH '{heading}" in s or "{heading} :" in s for s in statements)


def test_keys_follow_edits_and_deletions(eng):
    kb = eng.kb_path
    (kb / "guide.md").write_text(KB["guide.md"].replace("## Parent retriever", "## Parent fetcher"), encoding="utf-8")
    (kb / "tools/tar.md").unlink()
    eng.index()
    named = _named(eng)
    assert named["parent retriever"] == []
    conn = eng.store.conn()
    assert conn.execute("SELECT count(*) FROM named_keys WHERE key = 'parent fetcher'").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM named_keys WHERE key = 'tar'").fetchone()[0] == 0
    orphans = "SELECT count(*) FROM named_keys WHERE chunk_id NOT IN (SELECT id FROM chunks)"
    assert conn.execute(orphans).fetchone()[0] == 0


def test_an_index_made_before_the_keys_names_as_before_then_keeps_them(eng, tmp_path):
    expected = _named(eng)
    db = eng.store.db_path
    eng.close()
    _forget_names(db)
    with Engine.open(eng.kb_path, config=hashing_config(), index_dir=tmp_path / "idx", readonly=True) as reader:
        assert not reader.store.names_ready()
        assert _named(reader) == expected
    with Engine.open(eng.kb_path, config=hashing_config(), index_dir=tmp_path / "idx") as writer:
        writer.index()
        assert writer.store.names_ready()
        assert _named(writer) == expected
        conn = writer.store.conn()
        keys = conn.execute("SELECT count(*), count(DISTINCT chunk_id || ':' || kind) FROM named_keys").fetchone()
        assert keys[0] == keys[1] > 0  # each chunk's key once


def test_a_lookup_interrupted_by_a_cancel_raises_and_a_failing_one_names_nothing(tmp_path, monkeypatch):
    """A cancelled search interrupts its statements: the lookup must not pass that off as "nothing is
    named" (the searcher would remember it for the query). Any other failure of a lookup names nothing,
    and the search goes on."""
    import sqlean

    from groove_tui.engine import Engine
    from groove_tui.engine.analysis.query import parse_query
    from groove_tui.engine.retrieve.named import look_up_named

    scratch = sqlean.connect(":memory:")
    scratch.set_progress_handler(lambda: 1, 1)
    try:
        scratch.execute("WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r")
    except sqlean.OperationalError as exc:
        interrupted = exc
    failing = sqlean.OperationalError("no such table: documents")

    kb = write_kb(tmp_path / "kb", {"tar.md": "# tar\n\nArchive files.\n"})
    engine = Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx")
    engine.index()
    store, searcher = engine.store, engine._searcher
    real = store.conn()

    class TitleFails:
        def __init__(self, error: Exception) -> None:
            self.error = error

        def execute(self, sql: str, *args):
            if "d.title COLLATE NOCASE IN" in sql:  # the title lookup only
                raise self.error
            return real.execute(sql, *args)

    pq = parse_query("tar")
    for error, expect_raise in ((interrupted, True), (failing, False)):
        monkeypatch.setattr(store, "conn", lambda e=error: TitleFails(e))
        if expect_raise:
            with pytest.raises(sqlean.OperationalError, match="interrupted"):
                look_up_named(
                    store, engine.config, pq, searcher.doc_filter(SearchParams()), frozenset(), searcher._accept
                )
        else:
            found = look_up_named(
                store, engine.config, pq, searcher.doc_filter(SearchParams()), frozenset(), searcher._accept
            )
            assert [row.path for _kind, row in found] == ["tar.md"]  # from the keys; the title lookup failed
    monkeypatch.undo()
    engine.close()
