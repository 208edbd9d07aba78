"""Compare mode: markers, counts, overlap, linked cursors, presets, per-side settings."""

from __future__ import annotations

from dataclasses import replace

from groove_tui.tui.screens.compare import CompareScreen
from groove_tui.tui.search.compare import compare
from groove_tui.tui.widgets.results import ResultsPane

from .fakes import FakeEngine
from .helpers import SIZE, make_app, paths, search, settle, wait_until


def ids(app, side):
    return [h.chunk_id for h in app.responses[side].results]


async def open_compare(app, pilot, query="rust"):
    await search(app, pilot, query)
    await pilot.press("f5")
    await settle(app, pilot)
    assert isinstance(app.screen, CompareScreen)


async def test_compare_markers_counts_and_overlap(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await open_compare(app, pilot)
        assert app.compare_active
        assert not app.run_configs["left"].mmr and app.run_configs["right"].mmr
        lp = app.screen.query_one("#pane-left", ResultsPane)
        rp = app.screen.query_one("#pane-right", ResultsPane)
        expected = compare(ids(app, "left"), ids(app, "right"), k=10)
        assert [r.marker for r in lp.rows if not r.gone] == list(expected.left)
        assert [r.marker for r in rp.rows if not r.gone] == list(expected.right)
        labels = [r.marker.label for r in lp.rows]
        assert "↑1" in labels and "↓1" in labels
        summary = str(app.screen.query_one("#compare-summary").content)
        assert summary == expected.summary.as_text()
        assert "both 8" in summary and "overlap@10 0.80" in summary


async def test_compare_new_and_gone_rows(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await open_compare(app, pilot)
        app.set_run_config("right", replace(app.run_configs["right"], mmr=False, path_globs=("rust/*.md",)))
        await settle(app, pilot)
        lp = app.screen.query_one("#pane-left", ResultsPane)
        rp = app.screen.query_one("#pane-right", ResultsPane)
        left_only = [h.path for h in app.responses["left"].results if not h.path.startswith("rust/")]
        assert [r.hit.path for r in lp.rows if r.marker.kind == "new"] == left_only
        gone = [r for r in rp.rows if r.gone]
        assert [r.hit.path for r in gone] == left_only
        assert all(r.marker.label == "gone" for r in gone)
        prompt = rp.list.get_option_at_index(len(rp.rows) - 1).prompt.plain
        assert "gone" in prompt and f"(#{gone[-1].rank})" in prompt
        summary = str(app.screen.query_one("#compare-summary").content)
        assert f"only left {len(left_only)}" in summary and "only right 0" in summary


async def test_cursor_follows_chunk_on_other_side(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await open_compare(app, pilot)
        lp = app.screen.query_one("#pane-left", ResultsPane)
        rp = app.screen.query_one("#pane-right", ResultsPane)
        lp.list.focus()
        await pilot.press("down")
        await settle(app, pilot)
        assert lp.highlighted_row.rank == 2
        assert rp.highlighted_row.hit.chunk_id == lp.highlighted_row.hit.chunk_id
        assert rp.highlighted_row.rank == 1  # it moved up on the right
        rp.list.focus()
        await pilot.press("down", "down")
        await settle(app, pilot)
        assert lp.highlighted_row.hit.chunk_id == rp.highlighted_row.hit.chunk_id
        assert app.active_side == "right"


async def test_presets_and_side_settings(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await open_compare(app, pilot)
        await pilot.press("f9")
        await settle(app, pilot)
        left, r = app.run_configs["left"], app.run_configs["right"]
        assert (left.mmr, left.lam, r.mmr, r.lam) == (True, 0.3, True, 0.9)
        assert paths(app, "left") != paths(app, "right")
        assert "λ0.30" in str(app.screen.query_one("#label-left").content)
        await pilot.press("f8")
        await settle(app, pilot)
        assert (app.run_configs["left"].mmr, app.run_configs["right"].mmr) == (False, True)
        await pilot.press("f7")  # no reranker configured: both off, with a warning
        await settle(app, pilot)
        assert not app.run_configs["left"].reranker
        # edit the right side's own settings
        await pilot.press("f10")
        await settle(app, pilot)
        sw = app.screen.query_one("#right-parent")
        assert sw.display
        sw.value = True
        await settle(app, pilot)
        assert app.run_configs["right"].parent and not app.run_configs["left"].parent
        assert eng.calls[-1][1].parent_retriever
        # swap
        await pilot.press("ctrl+x")
        await settle(app, pilot)
        assert app.run_configs["left"].parent and not app.run_configs["right"].parent
        assert app.screen.query_one("#left-parent").value is True


async def test_compare_export_has_both_sides(tmp_path, monkeypatch):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await open_compare(app, pilot)
        out = app.export_results(tmp_path / "cmp.json")
        import json

        data = json.loads(out.read_text())
        assert [s["side"] for s in data["sides"]] == ["left", "right"]
        assert data["sides"][1]["run_config"]["mmr"] is True
        assert data["comparison"]["in_both"] == 8


async def test_leaving_compare_stops_right_side(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await open_compare(app, pilot)
        await pilot.press("escape")
        await settle(app, pilot)
        assert not app.compare_active
        n = len(eng.calls)
        await search(app, pilot, "borrow")
        assert len(eng.calls) == n + 1


async def test_markers_wait_for_both_sides_of_the_same_query(tmp_path):
    """A side that answers first is shown unmarked; markers appear when the other side's answer to the
    same query arrives, whatever the order the workers finish in."""
    import threading

    gate = threading.Event()
    eng = FakeEngine(gate=lambda q, p: gate if (p.mmr and q == "tokio") else None)  # the right side is slow
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await open_compare(app, pilot, "rust")
        assert app.screen.comparison is not None
        app.set_query("tokio")
        await wait_until(pilot, lambda: app.response_queries["left"] == "tokio", what="the left side")
        await settle_ui(app, pilot)
        lp = app.screen.query_one("#pane-left", ResultsPane)
        rp = app.screen.query_one("#pane-right", ResultsPane)
        assert app.response_queries["right"] == "rust"  # still the old answer
        assert app.screen.comparison is None
        assert all(r.marker is None for r in lp.rows + rp.rows)
        assert str(app.screen.query_one("#compare-summary").content) == "comparing…"
        gate.set()
        await settle(app, pilot)
        expected = compare(ids(app, "left"), ids(app, "right"), k=10)
        assert app.screen.comparison == expected
        assert [r.marker for r in lp.rows if not r.gone] == list(expected.left)
        assert rp.highlighted_row.hit.chunk_id == lp.highlighted_row.hit.chunk_id  # cursors linked


async def settle_ui(app, pilot):
    for _ in range(3):
        await pilot.pause()
