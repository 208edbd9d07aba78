"""Appearance: SVG snapshots (pytest-textual-snapshot) at a fixed size with the deterministic FakeEngine.

Regenerate after a reviewed change: `pytest tests/tui/test_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

from dataclasses import replace

from groove_tui.settings.config import Config, TuiConfig

from .fakes import FakeEngine
from .helpers import SIZE, make_app, settle


async def _query(pilot, text="rust"):
    app = pilot.app
    app.screen.query_one("#query").value = text
    await settle(app, pilot)


def test_snapshot_main(snap_compare, tmp_path):
    async def run_before(pilot):
        await _query(pilot, "tokio runtime")

    assert snap_compare(make_app(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_snapshot_detail_with_highlights(snap_compare, tmp_path):
    async def run_before(pilot):
        app = pilot.app
        app.set_run_config("left", replace(app.run_configs["left"], parent=True))
        await _query(pilot, "tokio runtime")
        app.screen.query_one("#pane-left").list.focus()
        await pilot.press("enter")
        await settle(pilot.app, pilot)

    assert snap_compare(make_app(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_snapshot_detail_japanese_emoji(snap_compare, tmp_path):
    async def run_before(pilot):
        app = pilot.app
        app.set_run_config("left", replace(app.run_configs["left"], parent=True))
        await _query(pilot, "東京 rust")
        app.screen.query_one("#pane-left").list.focus()
        await pilot.press("enter")
        await settle(pilot.app, pilot)

    assert snap_compare(make_app(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_snapshot_compare(snap_compare, tmp_path):
    async def run_before(pilot):
        await _query(pilot, "rust")
        await pilot.press("f5")
        await settle(pilot.app, pilot)
        await pilot.press("down")
        await settle(pilot.app, pilot)

    assert snap_compare(make_app(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_snapshot_compare_settings(snap_compare, tmp_path):
    async def run_before(pilot):
        await _query(pilot, "async")
        await pilot.press("f5")
        await settle(pilot.app, pilot)
        await pilot.press("f10")
        await settle(pilot.app, pilot)

    assert snap_compare(make_app(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_snapshot_explain(snap_compare, tmp_path):
    async def run_before(pilot):
        app = pilot.app
        app.set_run_config("left", replace(app.run_configs["left"], mmr=True))
        await _query(pilot, "tokio -python")
        await pilot.press("f6")
        await settle(pilot.app, pilot)

    assert snap_compare(make_app(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_snapshot_help(snap_compare, tmp_path):
    async def run_before(pilot):
        await pilot.press("f1")
        await settle(pilot.app, pilot)

    assert snap_compare(make_app(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_snapshot_light_theme(snap_compare, tmp_path):
    cfg = replace(Config(), tui=TuiConfig(theme="groove-light"))

    async def run_before(pilot):
        await _query(pilot, "rust")

    assert snap_compare(
        make_app(tmp_path, FakeEngine(config=cfg), config=cfg), terminal_size=SIZE, run_before=run_before
    )


def test_snapshot_golden_metrics(snap_compare, tmp_path):
    """The metrics bar after a λ move (deltas), the query's own scores and ✓ on expected hits."""
    from .test_golden import write_golden

    app = make_app(tmp_path, golden=str(write_golden(tmp_path)))

    async def run_before(pilot):
        app = pilot.app
        app.set_run_config("left", replace(app.run_configs["left"], mmr=True, lam=0.9))
        await settle(app, pilot)
        app.set_run_config("left", replace(app.run_configs["left"], lam=0.2))
        await _query(pilot, "tokio")
        app.screen.query_one("#pane-left").list.focus()
        app.clear_notifications()  # the load notice names the temporary path
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
