"""Appearance: SVG snapshots (pytest-textual-snapshot) at a fixed size with the deterministic FakeEngine.

Regenerate after a reviewed change: `pytest tests/tui/test_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from groove_tui.settings.config import Config, TuiConfig

from .fakes import Doc, FakeEngine
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


# ---------------------------------------------------------------- a watched edit, at every breakpoint

SIZES = {"narrow": (60, 20), "medium": (100, 30), "wide": (160, 45)}


def _edited(docs: tuple[Doc, ...]) -> tuple[Doc, ...]:
    """The fake KB after a save: a note added (a new hit), one note gaining the query's words (moves
    up), one deleted (leaves); the note that led falls back."""
    out = []
    for doc in docs:
        if doc.path == "python/asyncio.md":
            continue
        if doc.path == "rust/tokio-spawn.md":
            doc = replace(doc, content=doc.content + " The tokio runtime, tokio runtime everywhere.")
        out.append(doc)
    out.append(
        Doc("notes/watching.md", "Live notes", "Saved a minute ago: tokio runtime notes, tokio runtime.", ("rust",))
    )
    return tuple(out)


async def _watched_edit(pilot) -> None:
    from groove_tui.engine.index.watch import WatchEvent
    from groove_tui.engine.types import IndexReport
    from groove_tui.tui.messages import KbChanged

    app = pilot.app
    await _query(pilot, "tokio runtime")
    engine = app._engine
    engine.docs = _edited(engine.docs)
    paths = ("notes/watching.md", "python/asyncio.md", "rust/tokio-spawn.md")
    report = IndexReport(added=1, updated=1, deleted=1, chunks=len(engine.docs), embedded=2)
    app.post_message(KbChanged(WatchEvent("batch", paths=paths, report=report, milliseconds=42.0)))
    await settle(app, pilot)
    app.screen.query_one("#pane-left").list.focus()
    await settle(app, pilot)


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_snapshot_marks_after_a_watched_edit_at(snap_compare, tmp_path, monkeypatch, size):
    """new, ↑n / ↓n and the departed hit dimmed, and the header's `updated HH:MM:SS · N notes`."""
    monkeypatch.setattr("groove_tui.tui.kb.watching.update_stamp", lambda: "14:02:31")
    assert snap_compare(make_app(tmp_path), terminal_size=SIZES[size], run_before=_watched_edit)


def test_snapshot_explain_while_vectors_are_pending_narrow(snap_compare, tmp_path):
    """The fusion's longest rows (the vector share, a stand-in vector term) in a 60-column pane."""

    async def run_before(pilot):
        app = pilot.app
        app._engine.pending = 4  # after the opening's index run: half the hits have a vector yet
        await _query(pilot, "tokio runtime")
        await pilot.press("f6")
        app.screen.query_one("#pane-left").list.focus()
        await pilot.press("down")  # the second hit has no vector: its stand-in term is said too
        await settle(app, pilot)
        app.clear_notifications()  # the opening's index report would cover the pane
        panel = app.screen.query_one("#explain")
        body = str(panel._body.render())
        panel.scroll_to(y=body[: body.index("3 · Fusion")].count("\n"), animate=False)
        await settle(app, pilot)

    assert snap_compare(make_app(tmp_path), terminal_size=SIZES["narrow"], run_before=run_before)


def test_snapshot_explain_word_leg_rows_wide(snap_compare, tmp_path):
    """The word leg's rows in the explain pane: its rank and bm25 under the legs, its term and scale
    under the fusion."""

    async def run_before(pilot):
        app = pilot.app
        await _query(pilot, "tokio runtime")
        await pilot.press("f6")
        await settle(app, pilot)
        app.clear_notifications()
        panel = app.screen.query_one("#explain")
        body = str(panel._body.render())
        panel.scroll_to(y=body[: body.index("Hit #1")].count("\n"), animate=False)
        await settle(app, pilot)

    assert snap_compare(make_app(tmp_path), terminal_size=SIZES["wide"], run_before=run_before)
