"""A big note's embedding holds up no other edit: a watched batch writes its full text, its vectors are
computed behind it on a thread of their own, and notes saved or deleted meanwhile are found (or gone) by
full text as soon as their own batch is written. The embedder here is held at its first batch until the
test lets it go, so "meanwhile" is a fact, not a timing."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from test_watcher import TIMEOUT, Running

from groove_tui.engine import Engine, SearchParams

from helpers import hashing_config, write_kb


class HeldEmbedder:
    """The hashing embedder, held before each batch of passages until `release` is set."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner = inner
        self.dim = inner.dim
        self.model_id = inner.model_id
        self.started = threading.Event()
        self.release = threading.Event()

    def embed_query(self, text: str):  # type: ignore[no-untyped-def]
        return self.inner.embed_query(text)

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        self.started.set()
        assert self.release.wait(TIMEOUT), "the test never let the embedder go"
        return self.inner.embed_passages(texts)


def _fts(eng: Engine, query: str) -> set[str]:
    return {h.path for h in eng.search(query, SearchParams(limit=50, legs="fts", min_quality=0)).results}


def test_a_big_note_embeds_behind_while_later_edits_are_found_by_full_text(tmp_path: Path) -> None:
    kb = write_kb(tmp_path / "kb", {"start.md": "# Start\n\nnothing here but kiwifruit\n"})
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index()
        held = HeldEmbedder(eng.embedder())
        eng._embedder = held
        run = Running(eng)
        run.thread.start()
        try:
            run.next(lambda e: e.kind == "watching")
            parts = [f"## Part {i}\n\nA long note about archives, part {i}, in many sections." for i in range(300)]
            (kb / "big.md").write_text("# Big\n\n" + "\n\n".join(parts) + "\n", "utf-8")
            batch = run.until_indexed("big.md")  # its full text landed with its batch, vectors pending
            assert batch.report is not None and batch.report.pending_embeddings >= 300
            assert "big.md" in _fts(eng, "archives")
            assert held.started.wait(TIMEOUT)  # the embedding has begun, and is held

            (kb / "small.md").write_text("# Small\n\nzebrafish migration\n", "utf-8")
            run.until_indexed("small.md")
            (kb / "start.md").unlink()
            run.until_indexed("start.md")
            assert not held.release.is_set()  # both batches were written while the big note waited
            assert _fts(eng, "zebrafish") == {"small.md"}
            assert _fts(eng, "kiwifruit") == set()

            held.release.set()
            deadline = time.monotonic() + TIMEOUT
            while eng.store.pending_count() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert eng.store.pending_count() == 0  # every vector written behind the batches
            done = run.next(lambda e: e.kind == "embedded")  # and said, for a view to search again
            assert done.report is not None and done.report.embedded >= 300
            assert done.message == f"{done.report.embedded:,} chunks embedded behind the edits"
            hits = eng.search("zebrafish migration", SearchParams(limit=5, legs="vector", min_quality=0)).results
            assert hits and hits[0].path == "small.md"
        finally:
            held.release.set()
            run.stop.set()
            run.thread.join(TIMEOUT)
        assert not run.thread.is_alive()
