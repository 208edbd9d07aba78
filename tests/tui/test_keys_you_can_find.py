"""Keys you can find: the footer shows the focused widget's keys and keeps the keys that matter in
compare mode; dialogs say what enter and esc do; help uses words; one click selects, two open."""

from __future__ import annotations

import re

import pytest
from textual.widgets import Label
from textual.widgets._footer import FooterKey

from groove_tui.tui.screens.detail import DetailScreen
from groove_tui.tui.screens.export import ExportScreen
from groove_tui.tui.screens.help import binding_rows

from .helpers import SIZE, make_app, search, settle


def footer_keys(app) -> dict[str, FooterKey]:
    return {k.key: k for k in app.screen.query(FooterKey)}


def visible(app, key: FooterKey) -> bool:
    """Wholly inside the footer and left of the command palette key docked on its right."""
    palette = next(k for k in app.screen.query(FooterKey) if k.key == app.COMMAND_PALETTE_BINDING)
    return key.region.width > 0 and key.region.right <= palette.region.x and key.region.right <= app.size.width


async def test_the_footer_shows_a_focused_sliders_keys(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        app.screen.query_one("#left-lambda").focus()
        await settle(app, pilot)
        keys = footer_keys(app)
        for key in ("left", "right", "shift+left", "shift+right", "home", "end"):
            assert key in keys and visible(app, keys[key]), key


@pytest.mark.parametrize("size", [SIZE, (100, 30)], ids=["120", "100"])
async def test_the_compare_footer_keeps_f5_f12_and_export(tmp_path, size):
    app = make_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        await search(app, pilot, "rust")
        await pilot.press("f5")
        await settle(app, pilot)
        keys = footer_keys(app)
        for key in ("f5", "f1", "f12", "ctrl+s", "f7", "f8", "f9"):
            assert key in keys and visible(app, keys[key]), key


async def test_dialogs_say_what_enter_and_esc_do(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "rust")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert isinstance(app.screen, ExportScreen)
        text = " ".join(str(lbl.content) for lbl in app.screen.query(Label))
        assert "enter: export" in text and "esc: cancel" in text
        await pilot.press("escape")
        await settle(app, pilot)
        app.action_load_golden()
        await settle(app, pilot)
        text = " ".join(str(lbl.content) for lbl in app.screen.query(Label))
        assert "enter: load" in text and "esc: cancel" in text


async def test_help_labels_are_words(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE):
        for _title, rows in binding_rows(app):
            for _keys, desc, _bid in rows:
                assert not re.search(r"\S/\S|\s\.\d", desc), desc  # "off/on", "λ .3/.9"


async def test_one_click_selects_and_previews_two_clicks_open(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tokio")
        pane = app.screen.query_one("#pane-left")
        second = pane.rows[1].hit
        await pilot.click("#results-left", offset=(5, 2))  # the second two-line row
        await settle(app, pilot)
        assert not isinstance(app.screen, DetailScreen)
        assert pane.highlighted_row.hit == second and pane.list.has_focus
        assert app.screen.query_one("#preview").hit == second
        await pilot.click("#results-left", offset=(5, 2), times=2)
        await settle(app, pilot)
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("escape")
        await settle(app, pilot)
        await pilot.press("enter")  # enter opens too
        await settle(app, pilot)
        assert isinstance(app.screen, DetailScreen)


@pytest.mark.parametrize("where", ["main", "detail"])
async def test_a_narrow_footer_keeps_f1_which_lists_the_rest(tmp_path, where):
    app = make_app(tmp_path)
    async with app.run_test(size=(60, 20)) as pilot:
        await search(app, pilot, "tokio")
        app.screen.query_one("#results-left").focus()
        if where == "detail":
            await pilot.press("enter")
        await settle(app, pilot)
        keys = footer_keys(app)
        assert "f1" in keys and visible(app, keys["f1"])
        if where == "detail":
            assert visible(app, keys["escape"])


@pytest.mark.parametrize("size", [(60, 20), (100, 30), (160, 45)], ids=["60", "100", "160"])
@pytest.mark.parametrize("screen", ["main", "compare"])
async def test_footer_keys_are_separated_and_nothing_is_cut(tmp_path, size, screen):
    from .helpers import screen_lines

    app = make_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        await search(app, pilot, "rust")
        if screen == "compare":
            await pilot.press("f5")
            await settle(app, pilot)
        footer = screen_lines(app)[-1].rstrip()
        assert footer.endswith("^p palette"), footer  # nothing stray after it
        assert not re.search(r"[a-z][A-Z]|[a-z]f\d|\df\d|\^[a-z][A-Z]", footer), footer  # "f5Back", "f7f8f9"
        if screen == "compare" and size[0] >= 100:
            assert "f7 f8 f9 Presets" in footer
        palette = next(k for k in app.screen.query(FooterKey) if k.key == app.COMMAND_PALETTE_BINDING)
        shown = [
            k
            for k in app.screen.query(FooterKey)
            if k.display and k is not palette and all(a.display for a in k.ancestors_with_self if hasattr(a, "display"))
        ]
        assert shown and all(visible(app, k) for k in shown)  # a key is shown whole or not at all
        for key in shown:  # "f5 Back", not "f5Back"
            assert not key.description or key.render().plain.strip().endswith(" " + key.description)
