"""The embedding phase's rate, time left and order: a smoothed recent rate, an ETA counted in work, and a
pending queue that embeds what search wants first, deterministically and resumably."""

from __future__ import annotations

import io
import os
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from groove_tui.engine import Engine
from groove_tui.engine.index.indexer import IndexCancelled, Indexer
from groove_tui.engine.index.throughput import RateMeter, chunk_work, format_eta, format_rate, pending_in_order
from groove_tui.engine.types import IndexProgress, IndexReport
from groove_tui.output.progress import ProgressLine, embed_speed
from groove_tui.output.textout import format_index_report
from groove_tui.settings.config import EmbeddingConfig

from helpers import hashing_config, write_kb

# ---------------------------------------------------------------- the meter


def test_the_first_batch_pays_for_loading_the_model_and_is_left_out():
    meter = RateMeter()
    meter.add(8, 100.0, 12.0)  # lazy model set-up inside the first batch
    assert meter.rate is None and meter.eta(1000) is None  # hidden until a real batch was timed
    meter.add(8, 100.0, 2.0)
    assert meter.rate == pytest.approx(4.0)  # the whole-run mean would say 16 / 14 s = 1.1
    assert meter.eta(1000) == pytest.approx(20.0)


def test_the_rate_follows_recent_batches_not_the_whole_run_mean():
    meter = RateMeter(time_constant=30.0, warmup_batches=0)
    for _ in range(300):  # ten minutes at 8 chunks/s
        meter.add(8, 8.0, 1.0)
    for _ in range(30):  # the machine gets busy: 2 chunks/s for two minutes
        meter.add(8, 8.0, 4.0)
    run_mean = (300 * 8 + 30 * 8) / (300 + 30 * 4)
    assert run_mean > 6 and meter.rate == pytest.approx(2.0, rel=0.1)


def test_a_short_batch_weighs_by_its_time_not_as_one_batch_in_n():
    meter = RateMeter(warmup_batches=0)
    meter.add(10, 10.0, 10.0)  # 1 chunk/s for ten seconds
    meter.add(1, 1.0, 0.01)  # one quick chunk
    assert meter.rate == pytest.approx(1.1, abs=0.1)


def test_the_time_left_is_counted_in_work_so_longer_chunks_later_do_not_fool_it():
    meter = RateMeter(warmup_batches=0)
    meter.add(8, 8 * chunk_work(200), 1.0)  # short chunks first: 8 chunks/s
    long_chunks = 80 * chunk_work(2000)
    assert meter.rate == pytest.approx(8.0)
    assert meter.eta(long_chunks) == pytest.approx(long_chunks / (8 * chunk_work(200)))
    assert meter.eta(long_chunks) > 80 / 8 * 5  # a chunks/s estimate would say 10 s


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.4, "about 5 s left"),
        (38, "about 40 s left"),
        (56, "about 55 s left"),
        (61, "about 1 min left"),
        (755, "about 13 min left"),
        (3599, "about 1 h left"),
        (7790, "about 2 h 10 min left"),
        (36_000, "about 10 h left"),
    ],
)
def test_time_left_is_worded_as_coarsely_as_an_estimate_deserves(seconds, text):
    assert format_eta(seconds) == text


@pytest.mark.parametrize(
    ("rate", "text"),
    [
        (0.004, "0.004 chunks/s"),
        (0.42, "0.42 chunks/s"),
        (5.83, "5.8 chunks/s"),
        (118.4, "118 chunks/s"),
        (2345.0, "2,345 chunks/s"),
    ],
)
def test_rates_keep_two_significant_figures_or_so(rate, text):
    assert format_rate(rate) == text


def test_the_progress_bar_shows_rate_and_time_left_once_known():
    out = io.StringIO()
    bar = ProgressLine(out, enabled=True)
    bar.update(IndexProgress("embed", 8, 7917))
    assert "chunks/s" not in out.getvalue()
    bar._last = 0.0  # the bar redraws at most ten times a second
    bar.update(IndexProgress("embed", 3210, 7917, rate=5.83, eta_seconds=7790))
    assert out.getvalue().endswith("3,210/7,917 · 5.8 chunks/s · about 2 h 10 min left")
    assert embed_speed(IndexProgress("embed", 7917, 7917, rate=5.83, eta_seconds=0.0)) == "5.8 chunks/s"
    assert embed_speed(IndexProgress("fulltext", 1, 2, rate=5.0)) == ""


def test_the_report_states_the_runs_embedding_rate_in_text_and_json():
    r = IndexReport(chunks=120, embedded=120, embed_seconds=21.0, embed_rate=6.0)
    assert "embedded 120 this run at 6.0 chunks/s" in format_index_report(r)
    assert r.to_dict()["embed_rate"] == 6.0
    assert IndexReport().to_dict()["embed_rate"] is None
    assert "chunks/s" not in format_index_report(IndexReport(chunks=3))


# ---------------------------------------------------------------- the indexer


def _note(title: str, sections: int) -> str:
    body = "".join(
        f"\n## {title} part {i}\n\n{title} section {i} says something worth finding, at length.\n"
        for i in range(1, sections + 1)
    )
    return f"# {title}\n\nThe {title} note opens here with its own words.\n{body}"


def ordered_kb(root: Path) -> Path:
    kb = write_kb(
        root,
        {
            "old-long.md": _note("oldlong", 5),
            "new-long.md": _note("newlong", 5),
            "short-a.md": _note("shorta", 2),
            "short-b.md": _note("shortb", 1),
        },
    )
    for i, name in enumerate(("old-long.md", "short-a.md", "short-b.md", "new-long.md")):
        os.utime(kb / name, ns=(1_700_000_000_000_000_000 + i * 10**12,) * 2)  # new-long.md is newest
    return kb


def small_batches():
    return replace(hashing_config(), embedding=EmbeddingConfig(model="hashing-64", batch_size=2))


def _labels(eng: Engine, ids: list[int]) -> list[str]:
    rows = dict(
        eng.store.conn().execute(
            "SELECT c.id, d.path || '#' || c.chunk_index FROM chunks c JOIN documents d ON d.id = c.document_id"
        )
    )
    return [rows[i] for i in ids]


def test_pending_chunks_go_first_chunks_then_short_documents_then_the_rest_newest_first(tmp_path):
    kb = ordered_kb(tmp_path / "kb")
    with Engine.open(kb, config=small_batches(), index_dir=tmp_path / "idx") as eng:
        eng.index(embed=False)
        order = _labels(eng, [p.id for p in pending_in_order(eng.store.conn(), False)])
    assert order == [
        # tier 1: every document's first chunk, newest file first
        "new-long.md#0",
        "short-b.md#0",
        "short-a.md#0",
        "old-long.md#0",
        # tier 2: the rest of the short documents (at most 3 chunks), newest first
        "short-b.md#1",
        "short-a.md#1",
        "short-a.md#2",
        # tier 3: the rest, newest document first, each in document order
        *(f"new-long.md#{i}" for i in range(1, 6)),
        *(f"old-long.md#{i}" for i in range(1, 6)),
    ]


class Recorder:
    """Wraps an embedder and records which chunk texts it was handed, in order, batch by batch."""

    def __init__(self, inner, stop_after: int | None = None, cancel: threading.Event | None = None) -> None:
        self.inner, self.dim = inner, inner.dim
        self.seen: list[str] = []
        self.batches: list[list[str]] = []
        self.stop_after, self.cancel = stop_after, cancel

    def embed_passages(self, texts):
        self.seen.extend(texts)
        self.batches.append(list(texts))
        if self.stop_after is not None and len(self.seen) >= self.stop_after:
            self.cancel.set()  # checked before the next batch: this one still commits
        return self.inner.embed_passages(texts)


def _texts_in_order(eng: Engine) -> list[str]:
    ids = [p.id for p in pending_in_order(eng.store.conn(), False)]
    content = dict(eng.store.conn().execute("SELECT id, content FROM chunks"))
    return [content[i] for i in ids]


def test_an_interrupted_run_resumes_in_the_same_order_and_ends_with_the_same_vectors(tmp_path):
    kb = ordered_kb(tmp_path / "kb")
    with Engine.open(kb, config=small_batches(), index_dir=tmp_path / "idx") as eng:
        eng.index(embed=False)
        planned = _texts_in_order(eng)
        cancel = threading.Event()
        first = Recorder(eng.embedder(), stop_after=5, cancel=cancel)
        eng._embedder = first
        with pytest.raises(IndexCancelled):
            eng.index(cancel=cancel)
        assert 0 < len(first.seen) < len(planned)
        assert _texts_in_order(eng) == [t for t in planned if t not in first.seen]  # the rest keeps its place
        second = Recorder(first.inner)
        eng._embedder = second
        report = eng.index()
        assert sorted(first.seen + second.seen) == sorted(planned) and report.pending_embeddings == 0
        assert len(first.seen + second.seen) == len(planned)  # none embedded twice
        resumed = _vectors(eng)

    # the same KB embedded in plain id order ends with exactly the same vectors
    kb2 = ordered_kb(tmp_path / "kb2")
    import groove_tui.engine.index.indexer as indexer_module

    def by_id(conn, contextual):
        return sorted(pending_in_order(conn, contextual), key=lambda p: p.id)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(indexer_module, "pending_in_order", by_id)
        with Engine.open(kb2, config=small_batches(), index_dir=tmp_path / "idx2") as eng:
            eng.index()
            assert _vectors(eng) == resumed


def test_the_queue_is_embedded_in_its_order_in_batches_of_the_configured_size(tmp_path):
    notes = {f"n{i:02}.md": f"# Note {i}\n\n" + " ".join(["word"] * ((i * 37) % 50 + 1)) + "\n" for i in range(23)}
    kb = write_kb(tmp_path / "kb", notes)
    with Engine.open(kb, config=small_batches(), index_dir=tmp_path / "idx") as eng:
        eng.index(embed=False)
        planned = _texts_in_order(eng)
        rec = Recorder(eng.embedder())
        eng._embedder = rec
        eng.index()
        vectors = _vectors(eng)
        text_of = {
            label: content
            for label, content in eng.store.conn().execute(
                "SELECT d.path || '#' || c.chunk_index, c.content FROM chunks c "
                "JOIN documents d ON d.id = c.document_id"
            )
        }
    assert rec.seen == planned  # no reordering: the queue's order is the order of likely searches
    assert [len(b) for b in rec.batches] == [2] * (len(planned) // 2) + [1] * (len(planned) % 2)
    for label, blob in vectors.items():  # each vector is its own text's, whatever its batch
        assert blob == rec.inner.embed_passages([text_of[label]])[0].astype("float32").tobytes()


class Bulk(Recorder):
    """A recorder whose embedder has something to build before a long run, and to let go after it."""

    def __init__(self, inner) -> None:
        super().__init__(inner)
        self.prepared_at: list[int] = []  # how many passages it had embedded each time it was asked
        self.ended_at: list[int] = []

    def prepare_for_bulk(self) -> None:
        self.prepared_at.append(len(self.seen))

    def end_bulk(self) -> None:
        self.ended_at.append(len(self.seen))


@pytest.mark.parametrize("path", ["index run", "embedding beside edits"])
def test_more_than_a_batch_waiting_lets_the_embedder_prepare_first_and_one_edit_does_not(tmp_path, path):
    notes = {f"n{i:02}.md": f"# Note {i}\n\nwords of note {i}\n" for i in range(5)}
    kb = write_kb(tmp_path / "kb", notes)
    with Engine.open(kb, config=small_batches(), index_dir=tmp_path / "idx") as eng:
        eng.index(embed=False)
        rec = Bulk(eng.embedder())
        eng._embedder = rec
        embed = eng.index if path == "index run" else eng.embed_pending
        embed()
        assert rec.prepared_at == [0] and len(rec.seen) == 5  # once, before the first batch
        assert rec.ended_at == [5]  # and let go after the last
        (kb / "n00.md").write_text("# Note 0\n\nother words\n", encoding="utf-8")
        eng.index(embed=False)
        embed()
        assert rec.prepared_at == [0] and len(rec.seen) == 6  # one chunk, one batch: nothing to prepare
        assert rec.ended_at == [5]


def _vectors(eng: Engine) -> dict[str, bytes]:
    return dict(
        eng.store.conn().execute(
            "SELECT d.path || '#' || c.chunk_index, v.embedding FROM chunks c JOIN documents d ON d.id = c.document_id "
            "JOIN vec_chunks v ON v.chunk_id = c.id"
        )
    )


def test_embed_progress_carries_rate_and_time_left_after_the_first_batch(tmp_path, monkeypatch):
    ticks = iter(range(10_000))
    monkeypatch.setattr(Indexer, "clock", staticmethod(lambda: float(next(ticks))))  # one second a batch
    kb = ordered_kb(tmp_path / "kb")
    seen: list[IndexProgress] = []
    with Engine.open(kb, config=small_batches(), index_dir=tmp_path / "idx") as eng:
        report = eng.index(progress=seen.append)
    embed = [p for p in seen if p.phase == "embed"]
    assert [p.done for p in embed] == [0, 2, 4, 6, 8, 10, 12, 14, 16, 17]
    assert embed[0].rate is None and embed[1].rate is None  # nothing timed; the warm-up batch
    assert all(p.rate == pytest.approx(2.0) for p in embed[2:-1])  # two chunks a second
    etas = [p.eta_seconds for p in embed[2:]]
    assert etas == sorted(etas, reverse=True) and etas[-1] == 0.0 and etas[0] > 0
    assert report.embedded == 17 and report.embed_rate == pytest.approx(17 / 9)  # nine one-second batches
    assert report.to_dict()["embed_rate"] == 1.89


@pytest.mark.parametrize(("columns", "expect_bar"), [(0, True), (80, True), (60, False)])
def test_the_bar_gives_way_to_the_rate_and_time_left_on_a_narrow_terminal(monkeypatch, columns, expect_bar):
    out = io.StringIO()
    bar = ProgressLine(out, enabled=True)
    monkeypatch.setattr(ProgressLine, "_columns", lambda self: columns if columns > 0 else 10_000)
    bar.update(IndexProgress("embed", 16, 164, rate=1.4, eta_seconds=110))
    line = out.getvalue().removeprefix("\r\x1b[2K")
    assert line.endswith("16/164 · 1.4 chunks/s · about 2 min left") and len(line) < (columns or 10_000)
    assert ("█" in line or "░" in line) == expect_bar


def test_a_terminal_that_reports_no_width_cuts_nothing(monkeypatch):
    import os as os_module

    out = io.StringIO()
    out.fileno = lambda: 2  # type: ignore[method-assign]
    monkeypatch.setattr(os_module, "get_terminal_size", lambda fd: os_module.terminal_size((0, 0)))
    ProgressLine(out, enabled=True).step("full text", 33, 33)
    assert out.getvalue().endswith("100% 33/33")
