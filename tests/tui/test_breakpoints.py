"""Every terminal size: snapshots of the main screen, compare mode and help at the three breakpoints,
and the keys that reach what a narrow terminal hides (the settings drawer, compare's other side)."""

from __future__ import annotations

import pytest

from groove_tui.tui.look.layout import width_class

from .fakes import Doc, FakeEngine
from .helpers import make_app, settle

SIZES = {"narrow": (60, 20), "medium": (100, 30), "wide": (160, 45)}


async def _query(pilot, text="tokio runtime"):
    pilot.app.screen.query_one("#query").value = text
    await settle(pilot.app, pilot)


def test_width_classes():
    assert [width_class(w) for w in (60, 99, 100, 139, 140, 200)] == [
        "-narrow",
        "-narrow",
        "-medium",
        "-medium",
        "-wide",
        "-wide",
    ]


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_snapshot_main_at(snap_compare, tmp_path, size):
    async def run_before(pilot):
        await _query(pilot)

    assert snap_compare(make_app(tmp_path), terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_snapshot_compare_at(snap_compare, tmp_path, size):
    async def run_before(pilot):
        await _query(pilot, "rust")
        await pilot.press("f5")
        await settle(pilot.app, pilot)

    assert snap_compare(make_app(tmp_path), terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_snapshot_help_at(snap_compare, tmp_path, size):
    async def run_before(pilot):
        await pilot.press("f1")
        await settle(pilot.app, pilot)

    assert snap_compare(make_app(tmp_path), terminal_size=SIZES[size], run_before=run_before)


async def test_narrow_settings_drawer_opens_and_closes(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZES["narrow"]) as pilot:
        await _query(pilot)
        screen = app.screen
        pane = screen.query_one("#config-left")
        assert screen.has_class("-narrow", "-short") and not pane.display
        assert not screen.query_one("#side-panel").display  # short: the stacked preview hides
        assert screen.query_one("#query").outer_size.height == 1  # …and the query gives up its border
        await pilot.press("f10")
        await settle(app, pilot)
        assert pane.display and pane.has_focus_within
        await pilot.press("f10")
        await settle(app, pilot)
        assert not pane.display
        assert app.focused is screen.query_one("#results-left")  # the focus left the closed drawer
        # widening the terminal brings the settings back, as each width class starts its own default
        await pilot.resize_terminal(160, 45)
        await settle(app, pilot)
        assert screen.has_class("-wide") and pane.display and screen.query_one("#side-panel").display


async def test_medium_stacks_the_preview_under_the_results(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZES["medium"]) as pilot:
        await _query(pilot)
        results, preview = app.screen.query_one("#pane-left"), app.screen.query_one("#side-panel")
        assert preview.region.y >= results.region.bottom
        assert results.region.width >= 70  # not ~40, as beside the preview


async def test_narrow_compare_shows_one_side_and_f6_switches(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZES["narrow"]) as pilot:
        await _query(pilot, "rust")
        await pilot.press("f5")
        await settle(app, pilot)
        left, right = app.screen.query_one("#side-left"), app.screen.query_one("#side-right")
        assert left.display and not right.display
        await pilot.press("f6")
        await settle(app, pilot)
        assert right.display and not left.display
        assert app.active_side == "right" and app.focused is app.screen.query_one("#results-right")
        await pilot.press("f6")
        await settle(app, pilot)
        assert left.display and app.active_side == "left"


async def test_narrow_detail_puts_the_explain_panel_under_the_hit(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZES["narrow"]) as pilot:
        await _query(pilot)
        await pilot.press("enter", "enter", "f6")  # query → results → detail, then explain
        await settle(app, pilot)
        detail, explain = app.screen.query_one("#detail"), app.screen.query_one("#detail-explain")
        assert explain.display and explain.region.y >= detail.region.bottom
        assert explain.region.width >= 50


def _text(pilot, selector: str) -> str:
    """A widget's text (a pane's summary line), "" until the screen has composed it."""
    from textual.css.query import NoMatches

    try:
        widget = pilot.app.screen.query_one(selector)
    except NoMatches:
        return ""
    return str(getattr(widget, "summary", widget).content)


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_snapshot_query_waiting_for_the_full_text_phase_at(snap_compare, tmp_path, size):
    import threading

    from .fakes import FakeEngine
    from .helpers import wait_until

    steps = threading.Semaphore(0)
    app = make_app(tmp_path, FakeEngine(stale=True, fresh=True, fulltext_steps=steps))

    async def run_before(pilot):
        await wait_until(pilot, lambda: _text(pilot, "#header"), what="the screen")
        steps.release(3)
        pilot.app.screen.query_one("#query").value = "borrow"
        await wait_until(pilot, lambda: "3 / 8 files" in _text(pilot, "#pane-left"), what="the waiting line")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


def _embedding_app(tmp_path):
    """An app whose first index is in its embedding phase, held after each batch (0.004 chunks/s: 25 min
    left for the rest), and the step that lets its first two batches through."""
    import threading

    from .fakes import FakeEngine
    from .helpers import wait_until

    steps = threading.Semaphore(0)
    app = make_app(tmp_path, FakeEngine(stale=True, embed_steps=steps, embed_rate=0.004))

    async def two_batches(pilot) -> None:
        await wait_until(pilot, lambda: _text(pilot, "#header"), what="the screen")
        steps.release(2)
        await wait_until(pilot, lambda: "embedding 2/8" in _text(pilot, "#header"), what="the second batch")

    return app, two_batches


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_snapshot_embedding_rate_and_time_left_at(snap_compare, tmp_path, size):
    from .helpers import wait_until

    app, two_batches = _embedding_app(tmp_path)

    async def run_before(pilot):
        await two_batches(pilot)
        pilot.app.screen.query_one("#query").value = "tokio runtime"
        await wait_until(pilot, lambda: pilot.app.responses["left"] is not None, what="the results")
        await pilot.pause()
        await wait_until(pilot, lambda: "embedding 2/8" in _text(pilot, "#header"), what="the second batch")

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_snapshot_edits_queued_during_the_first_index_at(snap_compare, tmp_path, size):
    from groove_tui.engine.index.watch import WatchEvent
    from groove_tui.tui.messages import KbChanged

    from .helpers import wait_until

    app, two_batches = _embedding_app(tmp_path)

    async def run_before(pilot):
        await two_batches(pilot)
        queued = WatchEvent("queued", "2 edits queued until indexing finishes", paths=("a.md", "b.md"))
        pilot.app.post_message(KbChanged(queued))
        await wait_until(pilot, lambda: "2 edits queued" in _text(pilot, "#index-label"), what="the count")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


# ---------------------------------------------------------------- long paths, several sections of a note

LONG_DOCS = tuple(
    Doc(path, heading, f"The parent retriever {text}: ranking notes on the parent retriever.")
    for path, heading, text in (
        ("ranking/parent-retriever.md", "The parent retriever", "merges neighbouring chunks"),
        ("ranking/parent-retriever.md", "Settings in detail", "has two settings"),
        ("searching/query-language.md", "Exact phrases", "as a phrase"),
        ("explorer/keyboard-shortcuts.md", "Search settings", "on F3"),
        ("ranking/parent-retriever.md", "Siblings", "reads siblings"),
        ("ranking/parent-retriever.md", "When to use it", "helps long notes"),
        ("ranking/deep/folders/of/parent-retriever.md", "Hit", "marks a hit"),
    )
)

LONG_GOLDEN = """\
queries:
  - query: "parent retriever"
    expected:
      - path: "ranking/parent-retriever.md"
        heading: "Settings in detail"
  - query: "phrase"
    expected:
      - path: "searching/query-language.md"
"""


def _long_app(tmp_path):
    golden = tmp_path / "golden.yml"
    golden.write_text(LONG_GOLDEN, encoding="utf-8")
    return make_app(tmp_path, FakeEngine(docs=LONG_DOCS), golden=str(golden))


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_snapshot_sections_of_one_note_and_the_metrics_bar_at(snap_compare, tmp_path, size):
    """Each hit of one note names its section (the path is cut in its middle first), and the metrics bar
    shows as many metrics as fit, each whole."""

    async def run_before(pilot):
        await _query(pilot, "parent retriever")
        pilot.app.clear_notifications()
        await settle(pilot.app, pilot)

    assert snap_compare(_long_app(tmp_path), terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_snapshot_compare_sections_of_one_note_at(snap_compare, tmp_path, size):
    async def run_before(pilot):
        await _query(pilot, "parent retriever")
        await pilot.press("f5")
        pilot.app.clear_notifications()
        await settle(pilot.app, pilot)

    assert snap_compare(_long_app(tmp_path), terminal_size=SIZES[size], run_before=run_before)
