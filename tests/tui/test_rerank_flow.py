"""The reranker in the explorer: fused results paint at once and the reranked ones replace them (progress,
rank markers against the fused order), the next keystroke cancels it, and without a reranker F4 and the
compare preset say what to pull instead of pretending."""

from __future__ import annotations

import threading
from dataclasses import replace

from groove_tui.engine.types import SearchResponse
from groove_tui.settings.config import Config, RerankerConfig
from groove_tui.tui.search.compare import markers
from groove_tui.tui.widgets.results import ResultsPane

from .fakes import FakeEngine
from .helpers import SIZE, make_app, notifications, settle, wait_until

RERANKER_CFG = replace(Config(), reranker=RerankerConfig(model="tiny-ce"))


def summary_text(app, side: str = "left") -> str:
    pane = next(p for p in app.screen.query(ResultsPane) if p.side == side)
    return str(pane.summary.content)


async def test_fused_results_paint_first_then_the_reranked_replace_them(tmp_path):
    release = threading.Event()
    eng = FakeEngine(config=RERANKER_CFG, gate=lambda q, p: release if p.reranker else None)
    app = make_app(tmp_path, eng, config=RERANKER_CFG)
    async with app.run_test(size=SIZE) as pilot:
        app.run_configs["left"] = replace(app.run_configs["left"], reranker=True)
        app.set_query("rust")
        await wait_until(pilot, lambda: app.responses["left"] is not None, what="the fused results")
        fused = app.responses["left"]
        assert not fused.reranked and not app.shown_final["left"] and len(fused.results) >= 2
        await wait_until(pilot, lambda: "reranking" in summary_text(app), what="the progress note")
        assert eng.calls[-1][1].reranker == "tiny-ce" and eng.calls[-2][1].reranker is None
        release.set()
        await settle(app, pilot)
        final = app.responses["left"]
        assert final.reranked and app.shown_final["left"] and "reranking" not in summary_text(app)
        assert "reranked" in summary_text(app)
        pane = app.screen.query_one("#pane-left", ResultsPane)
        expected = markers([h.chunk_id for h in final.results], [h.chunk_id for h in fused.results])
        assert [r.marker for r in pane.rows] == list(expected)
        assert any(m.kind in ("up", "down") for m in expected)  # the fake's rerank reverses the order


async def test_the_next_keystroke_cancels_the_reranker(tmp_path):
    release = threading.Event()
    eng = FakeEngine(config=RERANKER_CFG, gate=lambda q, p: release if (p.reranker and q == "rust") else None)
    eng.delays["rust"] = 0.0
    app = make_app(tmp_path, eng, config=RERANKER_CFG)
    async with app.run_test(size=SIZE) as pilot:
        app.run_configs["left"] = replace(app.run_configs["left"], reranker=True)
        app.set_query("rust")
        await wait_until(pilot, lambda: app.responses["left"] is not None, what="the fused results")
        app.set_query("tokio")  # a new search: the running rerank's worker is cancelled
        release.set()
        await settle(app, pilot)
        assert app.response_queries["left"] == "tokio" and app.responses["left"].reranked
        assert app.shown_final["left"]


async def test_f4_without_a_reranker_says_what_to_pull(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        sw = app.screen.query_one("#left-reranker")
        assert sw.disabled and "groove-tui models pull ms-marco-l12" in str(sw.tooltip)
        await pilot.press("f4")
        await pilot.pause()
        assert not app.run_configs["left"].reranker
        last = notifications(app)[-1]
        assert "groove-tui models pull ms-marco-l12" in last and "\n" not in last


async def test_reranker_preset_without_a_reranker_says_so_in_the_header(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        app.set_query("rust")
        await settle(app, pilot)
        app.action_preset("reranker")
        await settle(app, pilot)
        right = str(app.screen.query_one("#label-right").content)
        assert "rerank: none installed" in right and "rerank on" not in right
        assert "groove-tui models pull ms-marco-l12" in notifications(app)[-1]


async def test_a_skipped_rerank_is_said_in_the_pane_and_the_compare_summary(tmp_path):
    eng = FakeEngine(config=RERANKER_CFG)
    reason = "not reranked: the query uses CJK (Chinese/Japanese) script, which tiny-ce (en) does not cover"
    real = eng.search

    def guarded(query, params, cancel=None, progress=None):
        resp = real(query, replace(params, reranker=None), cancel)
        return replace(resp, rerank_skipped=reason) if params.reranker else resp

    eng.search = guarded
    app = make_app(tmp_path, eng, config=RERANKER_CFG)
    async with app.run_test(size=SIZE) as pilot:
        app.set_query("rust")
        await settle(app, pilot)
        app.action_preset("reranker")
        await settle(app, pilot)
        assert "rerank on" in str(app.screen.query_one("#label-right").content)
        summary = str(app.screen.query_one("#compare-summary").content)
        assert summary.endswith("· right: not reranked")
        assert "not reranked: the query uses CJK" in summary_text(app, "right")


async def test_a_pulled_reranker_works_without_a_config_edit(tmp_path, monkeypatch):
    import json

    root = tmp_path / "models"
    (root / "ms-marco-l12").mkdir(parents=True)
    (root / "ms-marco-l12" / "groove-model.json").write_text(json.dumps({"name": "ms-marco-l12"}))
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(root))
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        assert app.reranker_model == "ms-marco-l12"
        assert not app.screen.query_one("#left-reranker").disabled
        app.set_query("rust")
        await settle(app, pilot)
        await pilot.press("f4")
        await settle(app, pilot)
        assert eng.calls[-1][1].reranker == "ms-marco-l12" and isinstance(app.responses["left"], SearchResponse)
        assert app.responses["left"].reranked


async def test_the_header_says_whether_the_installed_reranker_is_on(tmp_path):
    from groove_tui.tui.widgets.status import OrientationHeader

    app = make_app(tmp_path, FakeEngine(config=RERANKER_CFG), config=RERANKER_CFG)
    async with app.run_test(size=(160, 45)) as pilot:

        def header() -> str:
            return str(app.screen.query_one(OrientationHeader).content)

        await settle(app, pilot)
        assert "rerank tiny-ce off (F4)" in header()  # installed is not on
        await pilot.press("f4")
        await settle(app, pilot)
        assert "rerank tiny-ce on" in header() and "off" not in header()
        app.action_preset("reranker")  # each side's state is in the compare header, not this one
        await settle(app, pilot)
        assert header().endswith("rerank tiny-ce")


def label_text(app, side: str) -> str:
    return str(app.screen.query_one(f"#label-{side}").content)


async def test_a_preset_names_the_reranker_as_pending_until_its_results_are_painted(tmp_path):
    """The compare labels and the header describe the results on screen: a setting whose results are not
    painted yet is "(pending)", never named as if the list already showed it."""
    release = threading.Event()
    eng = FakeEngine(config=RERANKER_CFG, gate=lambda q, p: release if p.reranker else None)
    app = make_app(tmp_path, eng, config=RERANKER_CFG)
    async with app.run_test(size=(100, 30)) as pilot:
        app.set_query("rust")
        await pilot.press("f5")
        await settle(app, pilot)
        assert "rerank off" in label_text(app, "right") and "pending" not in label_text(app, "right")
        await pilot.press("f7")  # reranker off / on: the right side's cross-encoder is held
        await wait_until(pilot, lambda: "rerank on (pending)" in label_text(app, "right"), what="pending")
        assert not app.responses["right"] or not app.responses["right"].reranked
        await wait_until(
            pilot, lambda: app.responses["right"] is not None and not app.shown_final["right"], what="the fused results"
        )
        assert "rerank on (pending)" in label_text(app, "right")  # fused order: still not reranked
        assert "rerank off" in label_text(app, "left") and "pending" not in label_text(app, "left")
        release.set()
        await settle(app, pilot)
        assert app.responses["right"].reranked
        assert "rerank on" in label_text(app, "right") and "pending" not in label_text(app, "right")


async def test_the_header_names_the_reranker_as_pending_until_its_results_are_painted(tmp_path):
    release = threading.Event()
    eng = FakeEngine(config=RERANKER_CFG, gate=lambda q, p: release if p.reranker else None)
    app = make_app(tmp_path, eng, config=RERANKER_CFG)
    async with app.run_test(size=(160, 45)) as pilot:
        app.set_query("rust")
        await settle(app, pilot)
        header = lambda: str(app.screen.query_one("#header").content)  # noqa: E731
        assert "rerank tiny-ce off (F4)" in header()
        await pilot.press("f4")
        await wait_until(pilot, lambda: "rerank tiny-ce on (pending)" in header(), what="pending")
        release.set()
        await settle(app, pilot)
        assert "rerank tiny-ce on" in header() and "pending" not in header()


async def test_compare_labels_keep_the_reranker_state_at_100_columns(tmp_path):
    """At 100x30 each label has ~48 cells: what both sides share goes first, the reranker state stays."""
    app = make_app(tmp_path, FakeEngine(config=RERANKER_CFG), config=RERANKER_CFG)
    async with app.run_test(size=(100, 30)) as pilot:
        app.set_query("rust")
        await pilot.press("f5")
        await settle(app, pilot)
        app.action_set_fusion("rrf")  # a longer label: the fusion method is named on both sides
        app.set_run_config("right", replace(app.run_configs["right"], reranker=True, same_doc_penalty=0.25))
        await settle(app, pilot)
        for side in ("left", "right"):
            label = app.screen.query_one(f"#label-{side}")
            text = label_text(app, side)
            assert "rerank o" in text and "…" not in text, text
            assert len(text) <= label.content_size.width
        assert "MMR λ0.70 pen 0.25" in label_text(app, "right")  # what differs is kept
