"""The focused setting is visible at every size, and F7 reaches the λ slider from anywhere on the main
screen (opening the narrow settings drawer)."""

from __future__ import annotations

import pytest
from textual.widget import Widget

from groove_tui.tui.screens.help import binding_rows

from .helpers import make_app, settle

SIZES = {"narrow": (60, 20), "medium": (100, 30), "wide": (160, 45)}
# every setting Tab reaches, in order (the reranker switch is disabled: no reranker in the fake KB)
TAB_ORDER = ["mmr", "lambda", "penalty", "parent", "words", "fusion", "limit", "globs", "tags"]


def band(control: Widget) -> Widget:
    """The line a setting's focus is shown on: its row (label and control), or the control itself."""
    parent = control.parent
    return parent if isinstance(parent, Widget) and parent.has_class("row") else control


async def _open_settings(app, pilot) -> None:
    if not app.screen.query_one("#config-left").display:
        await pilot.press("f10")
        await settle(app, pilot)
    app.screen.query_one("#query").focus()
    await settle(app, pilot)


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
async def test_tab_walks_the_settings_and_only_the_focused_line_is_banded(tmp_path, size):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZES[size]) as pilot:
        await _open_settings(app, pilot)
        pane = app.screen.query_one("#config-left")
        controls = {name: pane.query_one(f"#left-{name}") for name in TAB_ORDER}
        plain = {name: band(c).styles.background for name, c in controls.items()}
        for name in TAB_ORDER:
            await pilot.press("tab")
            await settle(app, pilot)
            assert app.focused is controls[name], f"Tab should reach {name} next, reached {app.focused}"
            banded = [n for n, c in controls.items() if band(c).styles.background != plain[n]]
            assert banded == [name]
            assert band(controls[name]).styles.background.a > 0.2  # a band, not a faint tint
            assert band(controls[name]).region.height > 0 and pane.region.contains_region(band(controls[name]).region)


@pytest.mark.parametrize("start", ["query", "results"])
async def test_f7_opens_the_narrow_drawer_on_lambda_and_arrows_move_it(tmp_path, start):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZES["narrow"]) as pilot:
        app.screen.query_one("#query").value = "rust"
        await settle(app, pilot)
        if start == "results":
            app.screen.query_one("#results-left").focus()
            await settle(app, pilot)
        assert not app.screen.query_one("#config-left").display
        before = app.run_configs["left"].lam
        await pilot.press("f7")
        await settle(app, pilot)
        slider = app.screen.query_one("#left-lambda")
        assert app.focused is slider and slider.region.height == 1
        await pilot.press("right")
        await settle(app, pilot)
        assert app.run_configs["left"].lam == pytest.approx(before + 0.01)


async def test_f7_is_listed_in_help(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZES["wide"]):
        main = dict(binding_rows(app))["Main screen"]
        words = "Focus the MMR λ slider, opening the settings drawer (← and → then move it)"
        assert ("f7", words, "main.focus_lambda") in main


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_snapshot_lambda_focused_by_f7_at(snap_compare, tmp_path, size):
    async def run_before(pilot):
        pilot.app.screen.query_one("#query").value = "tokio runtime"
        await settle(pilot.app, pilot)
        await pilot.press("f7")
        await settle(pilot.app, pilot)

    assert snap_compare(make_app(tmp_path), terminal_size=SIZES[size], run_before=run_before)
