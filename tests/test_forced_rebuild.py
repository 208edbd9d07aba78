"""A forced rebuild (`index --force`, `rebuild_index` with `force`) is written beside the live
index and takes its place in one step: searches, in this process or another, read the old index whole
until then and the new one after, never an empty or partial one; a rebuild that fails leaves it as it was."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from helpers import hashing_config, write_kb

NOTES = 30


def _kb(root: Path) -> Path:
    return write_kb(
        root,
        {
            f"topic{i % 3}/sub/note{i:02d}.md": f"# Note {i}\n\nshared harbour words, and zebra{i} alone.\n"
            for i in range(NOTES)
        },
    )


@pytest.fixture
def slow_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each document's write takes a little longer, so readers get many looks at a rebuild in progress."""
    from groove_tui.engine.index.indexer import Indexer

    real = Indexer._write_document

    def slow(self, *args, **kwargs):
        time.sleep(0.01)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Indexer, "_write_document", slow)


def test_searches_during_a_forced_rebuild_see_the_whole_old_index_then_the_new(tmp_path, slow_writes):
    from groove_tui.engine import Engine
    from groove_tui.server import surface as s
    from groove_tui.server.kb import KbService

    kb = _kb(tmp_path / "kb")
    engine = Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx")
    engine.index()
    service = KbService(engine)
    other = Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx", readonly=True)  # another reader
    (kb / "topic0" / "sub" / "note00.md").write_text("# Note 0\n\nshared harbour words, and okapi.\n", "utf-8")
    everything = {"query": "shared harbour", "limit": 1000, "include_low_quality": True}
    done = threading.Event()
    problems: list[str] = []
    looks = {"server": 0, "engine": 0, "resource": 0}

    def server_reader():
        while not done.is_set():
            body, is_error = service.call("search", everything)
            paths = set() if is_error else {h["path"] for h in body["results"]}
            if len(paths) != NOTES:
                problems.append(f"server: {body if is_error else len(paths)}")
            looks["server"] += 1

    def engine_reader():
        while not done.is_set():
            got = other.search("shared harbour", other.default_params(limit=1000, min_quality=0.0))
            if len({h.path for h in got.results}) != NOTES:
                problems.append(f"engine: {len(got.results)}")
            looks["engine"] += 1

    def resource_reader():
        while not done.is_set():
            try:
                text, _mime = service.read_resource(s.doc_uri("topic1/sub/note01.md"))
                assert "zebra1" in text
            except Exception as exc:
                problems.append(f"resource: {exc}")
            looks["resource"] += 1

    threads = [threading.Thread(target=f) for f in (server_reader, engine_reader, resource_reader)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.05)
        before = dict(looks)
        report = engine.index(force=True)
        during = {k: looks[k] - before[k] for k in looks}
        time.sleep(0.05)
    finally:
        done.set()
        for t in threads:
            t.join(30)
    assert problems == []
    assert report.added == NOTES
    assert min(during.values()) >= 3, during  # every reader looked while the rebuild ran
    after = [h.path for h in other.search("okapi").results]  # the new index, seen by the other reader too
    assert after[:1] == ["topic0/sub/note00.md"]
    assert sorted(p.name for p in engine.index_dir.iterdir() if "rebuild" in p.name) == []
    other.close()
    engine.close()


def test_a_forced_rebuild_that_stops_part_way_leaves_the_index_as_it_was(tmp_path, slow_writes):
    from groove_tui.engine import Engine
    from groove_tui.engine.index.indexer import IndexCancelled

    kb = _kb(tmp_path / "kb")
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as engine:
        engine.index()
        generation = engine.store.generation()
        cancel = threading.Event()
        timer = threading.Timer(0.1, cancel.set)
        timer.start()
        with pytest.raises(IndexCancelled):
            engine.index(force=True, cancel=cancel)
        timer.join()
        assert engine.store.counts() == (NOTES, NOTES, 0)
        assert engine.store.generation() == generation
        assert len(engine.search("shared harbour", engine.default_params(limit=1000)).results) == NOTES
        assert [p.name for p in engine.index_dir.iterdir() if "rebuild" in p.name] == []
