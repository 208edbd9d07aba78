"""While the index is built: a query says what it waits for and how far along that is, then runs; the
embedding phase shows its rate and time left; golden metrics say what they wait for and are taken again
once the index is complete."""

from __future__ import annotations

import threading

from groove_tui.engine.types import IndexProgress, IndexReport
from groove_tui.tui.app import GrooveApp
from groove_tui.tui.widgets.metrics import MetricsBar
from groove_tui.tui.widgets.results import ResultsPane
from groove_tui.tui.widgets.status import IndexStatusBar

from .fakes import FakeEngine
from .helpers import SIZE, make_app, paths, settle, wait_until


def summary(app) -> str:
    return str(app.screen.query_one("#pane-left", ResultsPane).summary.content)


async def test_a_query_on_a_new_index_says_it_waits_for_the_full_text_phase_and_how_far_it_is(tmp_path):
    steps, gate = threading.Semaphore(0), threading.Event()
    eng = FakeEngine(stale=True, fresh=True, fulltext_steps=steps, index_gate=gate)
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.index_progress is not None, what="the full-text phase")
        app.set_query("borrow")
        await wait_until(
            pilot, lambda: "waiting for the full-text index: 0 / 8 files (0 %)" in summary(app), what="the waiting line"
        )
        steps.release(3)
        await wait_until(
            pilot,
            lambda: "waiting for the full-text index: 3 / 8 files (38 %)" in summary(app),
            what="the waiting line to follow the phase",
        )
        assert eng.calls == [] and app.responses["left"] is None  # nothing searched a part of the index
        steps.release(5)
        await wait_until(
            pilot,
            lambda: app.responses["left"] is not None and "waiting" not in summary(app),
            what="the search after phase one, shown",
        )
        assert paths(app) == ["rust/ownership.md"]
        assert {q for q, _ in eng.calls} == {"borrow"}
        gate.set()
        await settle(app, pilot)


async def test_a_burst_of_file_reports_is_shown_a_few_times_a_second_and_ends_on_the_last(tmp_path, monkeypatch):
    """Thousands of files reported at once reach the screen as a few messages, not one each (their
    repaints would hold the interpreter the indexer needs), and what stays shown is the last report."""
    reports, gate = 5000, threading.Event()
    eng = FakeEngine(stale=True, fresh=True)

    def index(progress=None, force=False, cancel=None) -> IndexReport:
        for i in range(reports + 1):
            progress(IndexProgress("fulltext", i, reports))
        gate.wait(60)  # the phase's last report stays the latest until the test has looked
        return IndexReport()

    eng.index = index
    received: list[int] = []
    real = GrooveApp.on_index_progressed
    monkeypatch.setattr(
        GrooveApp, "on_index_progressed", lambda self, msg: received.append(msg.progress.done) or real(self, msg)
    )
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        app.set_query("borrow")
        await wait_until(
            pilot,
            lambda: "waiting for the full-text index: 5,000 / 5,000 files (100 %)" in summary(app),
            what="the last report shown",
        )
        assert 1 <= len(received) < 50, f"{len(received)} messages for {reports + 1} reports"
        gate.set()
        await settle(app, pilot)


async def test_an_index_that_holds_documents_answers_while_it_is_updated(tmp_path):
    steps = threading.Semaphore(0)
    eng = FakeEngine(stale=True, fulltext_steps=steps)
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.index_progress is not None, what="the full-text phase")
        app.set_query("borrow")
        await wait_until(pilot, lambda: app.responses["left"] is not None, what="a search during phase one")
        assert app.index_progress.phase == "fulltext" and paths(app) == ["rust/ownership.md"]
        steps.release(8)
        await settle(app, pilot)


async def test_embedding_shows_chunks_per_second_and_time_left_in_the_header_and_status_line(tmp_path):
    steps = threading.Semaphore(0)
    eng = FakeEngine(stale=True, embed_rate=0.004, embed_steps=steps)  # 0.004 chunks/s: 25 min for 6 more
    app = make_app(tmp_path, eng)
    async with app.run_test(size=(160, 45)) as pilot:
        header = lambda: str(app.screen.query_one("#header").content)  # noqa: E731
        label = lambda: str(app.screen.query_one(IndexStatusBar).query_one("#index-label").content)  # noqa: E731
        steps.release(1)
        await wait_until(pilot, lambda: "embedding 1/8" in header(), what="the first batch")
        assert "chunks/s" not in header() and "left" not in label()  # no rate before a batch was timed
        steps.release(1)
        await wait_until(pilot, lambda: "embedding 2/8" in header(), what="the second batch")
        assert "embedding 2/8 · 0.004 chunks/s · about 25 min left" in header()
        assert label() == "Embedding 2/8 · 0.004 chunks/s · about 25 min left (2/2) — search works"
        steps.release(6)
        await settle(app, pilot)
        assert "chunks/s" not in header() and not app.screen.query_one(IndexStatusBar).has_class("-active")


GOLDEN = """\
queries:
  - id: "q1"
    query: "rust"
    expected:
      - path: "rust/tokio-spawn.md"
"""


async def test_golden_metrics_say_what_they_wait_for_and_are_taken_again_when_the_index_is_complete(tmp_path):
    steps, embed_steps = threading.Semaphore(0), threading.Semaphore(0)
    eng = FakeEngine(stale=True, fresh=True, fulltext_steps=steps, embed_steps=embed_steps)
    golden = tmp_path / "golden.yml"
    golden.write_text(GOLDEN, encoding="utf-8")
    app = make_app(tmp_path, eng, golden=str(golden))
    async with app.run_test(size=SIZE) as pilot:
        bar = lambda: app.screen.query_one(MetricsBar).plain  # noqa: E731
        steps.release(2)
        await wait_until(
            pilot,
            lambda: "waiting for the full-text index: 2 / 8 files (25 %)" in bar(),
            what="the metrics bar's waiting line",
        )
        steps.release(6)
        embed_steps.release(4)
        await wait_until(pilot, lambda: app.eval_outcomes["left"] is not None, what="scores during phase two")
        await wait_until(pilot, lambda: "50 % embedded" in bar(), what="the share embedded beside the scores")
        searched = len(eng.calls)
        embed_steps.release(4)
        await settle(app, pilot)
        assert "embedded" not in bar() and app.eval_outcomes["left"].params is not None
        assert [q for q, _ in eng.calls[searched:]].count("rust") >= 1  # the set was scored again
