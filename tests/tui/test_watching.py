"""The explorer follows edits to the notes: a real temporary KB, the real engine and its real watcher. A
saved note is found without reopening, the list marks what the edit changed, the header says when and
how many notes, the cursor stays on the same hit, compare mode re-runs both sides, and `watch=False`
indexes once. Waits are on state, with generous timeouts."""

from __future__ import annotations

import dataclasses
import errno
import os
import re
from pathlib import Path

from groove_tui.engine import Engine
from groove_tui.settings.config import Config, EmbeddingConfig
from groove_tui.tui.screens.compare import CompareScreen
from groove_tui.tui.widgets.results import ResultsPane

from .helpers import SIZE, TestApp, notifications, paths, screen_lines, search, settle, wait_until

NOTES = {
    "a.md": "# Alpha\n\n## Tokio\n\ntokio runtime schedules tasks\n",
    "b.md": "# Beta\n\n## Tokio\n\ntokio tokio runtime again\n",
    "c.md": "# Gamma\n\n## Garden\n\nsoil and seeds\n",
}


def watched_app(tmp_path: Path, **kw) -> TestApp:
    kb = tmp_path / "kb"
    kb.mkdir()
    for name, text in NOTES.items():
        (kb / name).write_text(text, encoding="utf-8")
    cfg = dataclasses.replace(Config(), embedding=EmbeddingConfig(model="hashing"))
    cfg = dataclasses.replace(cfg, watch=dataclasses.replace(cfg.watch, debounce_ms=50))
    return TestApp(
        engine_factory=lambda: Engine.open(kb, config=cfg, index_dir=tmp_path / "idx"),
        config=cfg,
        kb_path=kb,
        history_path=tmp_path / "h.json",
        debounce_ms=0,
        warmup=False,
        user_theme_dir=tmp_path / "none",
        **kw,
    )


async def _watching(app: TestApp, pilot) -> None:
    await settle(app, pilot)
    await wait_until(pilot, lambda: any(w.group == "watch" for w in app.workers), what="the watch worker")
    await pilot.pause(0.5)  # the OS watch is set up within its first timeout


async def test_a_saved_note_stays_marked_new_when_its_vectors_land_after_it(tmp_path: Path) -> None:
    """The batch that indexes a note and the later write of its vectors each re-run the query; the second
    marks against the list before the note, not against the first re-run's, so "new" stays."""
    app = watched_app(tmp_path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "tokio runtime")
        (app.kb_path / "new.md").write_text("# New\n\n## Tokio\n\ntokio runtime tokio runtime tokio\n", "utf-8")
        app._engine.index()
        pane = app.screen.query_one("#pane-left", ResultsPane)

        def new_marker():
            rows = {r.hit.path: r.marker for r in pane.rows if not r.gone}
            return rows.get("new.md")

        app.rerun_after_update()  # the batch: the note is found
        await wait_until(pilot, lambda: "new.md" in paths(app), what="the re-run after the batch")
        await settle(app, pilot)
        assert new_marker() is not None and new_marker().kind == "new"
        app.rerun_after_update(vectors_only=True)  # its vectors written: the same list again
        await settle(app, pilot)
        assert new_marker() is not None and new_marker().kind == "new"


async def test_a_saved_note_is_found_and_marked_without_reopening(tmp_path: Path) -> None:
    app = watched_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _watching(app, pilot)
        await search(app, pilot, "tokio runtime")
        assert {"a.md", "b.md"} <= set(paths(app))
        pane = app.screen.query_one("#pane-left", ResultsPane)
        pane._set_cursor(next(i for i, r in enumerate(pane.rows) if r.hit.path == "a.md"))
        kb = app.kb_path
        # One edit at a time: two edits may reach the index in one batch or two, and a hit is "new" only
        # against the list before its own batch.
        (kb / "new.md").write_text("# New\n\n## Tokio\n\ntokio runtime tokio runtime tokio\n", "utf-8")
        await wait_until(pilot, lambda: "new.md" in paths(app), what="the re-run after the save")
        await settle(app, pilot)
        rows = {(r.hit.path, r.gone): r.marker for r in pane.rows}
        assert rows[("new.md", False)] is not None and rows[("new.md", False)].kind == "new"
        (kb / "b.md").unlink()
        await wait_until(pilot, lambda: "b.md" not in paths(app), what="the re-run after the deletion")
        await settle(app, pilot)
        rows = {(r.hit.path, r.gone): r.marker for r in pane.rows}
        assert ("b.md", True) in rows  # the hit that left, shown dimmed
        assert pane.highlighted_row is not None and pane.highlighted_row.hit.path == "a.md"  # the cursor stayed
        header = str(app.header_text(200))
        assert re.search(r"updated \d\d:\d\d:\d\d · [12] notes?", header), header
        assert any("new.md" in line for line in screen_lines(app))


async def test_compare_mode_re_runs_both_sides_after_an_edit(tmp_path: Path) -> None:
    app = watched_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _watching(app, pilot)
        await search(app, pilot, "tokio runtime")
        await pilot.press("f5")
        await settle(app, pilot)
        assert isinstance(app.screen, CompareScreen)
        (app.kb_path / "d.md").write_text("# Delta\n\n## Tokio\n\ntokio runtime in the garden\n", "utf-8")
        await wait_until(
            pilot,
            lambda: "d.md" in paths(app, "left") and "d.md" in paths(app, "right"),
            what="both sides re-run",
        )


async def test_watch_off_indexes_once(tmp_path: Path) -> None:
    app = watched_app(tmp_path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert not any(w.group == "watch" for w in app.workers)
        await search(app, pilot, "tokio runtime")
        assert {"a.md", "b.md"} <= set(paths(app))


async def test_a_note_that_cannot_be_read_is_named_with_its_reason_and_the_rest_is_indexed(
    tmp_path: Path, monkeypatch
) -> None:
    from groove_tui.engine.index import walk

    real = walk._open_nonblocking

    def refusing(path: str, flags: int) -> int:  # root reads through chmod: refuse as the OS would
        if os.path.basename(path) == "locked.md":
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real(path, flags)

    monkeypatch.setattr(walk, "_open_nonblocking", refusing)
    app = watched_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _watching(app, pilot)
        await search(app, pilot, "tokio runtime")
        (app.kb_path / "locked.md").write_text("# Locked\n\n## Tokio\n\ntokio runtime locked\n", "utf-8")
        (app.kb_path / "open.md").write_text("# Open\n\n## Tokio\n\ntokio runtime open\n", "utf-8")
        await wait_until(pilot, lambda: "open.md" in paths(app), what="the readable note found")
        await wait_until(
            pilot,
            lambda: any("locked.md: unreadable: Permission denied" in n for n in notifications(app)),
            what="the unreadable note named",
        )
        assert "locked.md" not in paths(app)
        assert not any("Traceback" in n or "Error" in n for n in notifications(app))


async def test_edits_saved_during_the_first_index_are_counted_on_screen_then_indexed(tmp_path: Path) -> None:
    """The first index is held in its embedding phase; two notes saved meanwhile are counted in the status
    line and indexed once it finishes."""
    import threading

    from groove_tui.tui.widgets.status import IndexStatusBar

    gate, watching = threading.Event(), threading.Event()
    app = watched_app(tmp_path)
    open_engine = app._engine_factory

    def gated_engine() -> Engine:
        eng = open_engine()
        index, watch = eng.index, eng.watch

        def gated_index(progress=None, **kw):
            def held_in_embedding(p) -> None:
                if progress is not None:
                    progress(p)
                if p.phase == "embed":
                    gate.wait(60)

            return index(progress=held_in_embedding, **kw)

        def noted_watch(on_event, stop, **kw):
            def note(event) -> None:
                if event.kind == "watching":
                    watching.set()
                on_event(event)

            return watch(note, stop, **kw)

        eng.index, eng.watch = gated_index, noted_watch  # type: ignore[method-assign]
        return eng

    app._engine_factory = gated_engine
    async with app.run_test(size=SIZE) as pilot:
        label = lambda: str(app.screen.query_one(IndexStatusBar).query_one("#index-label").content)  # noqa: E731
        await wait_until(pilot, lambda: app.index_progress is not None and watching.is_set(), what="a held index")
        (app.kb_path / "d.md").write_text("# Delta\n\n## Heron\n\nheron on the river\n", "utf-8")
        (app.kb_path / "a.md").write_text("# Alpha\n\n## Heron\n\nheron at dawn\n", "utf-8")
        await wait_until(
            pilot, lambda: "2 edits queued until indexing finishes" in label(), what="the queued edits counted"
        )
        # (the progress shown follows the indexer's a tenth of a second behind at most)
        await wait_until(
            pilot,
            lambda: app.index_progress is not None and app.index_progress.phase == "embed",
            what="the index held in its embedding phase",
        )
        gate.set()
        await search(app, pilot, "heron")
        await wait_until(pilot, lambda: set(paths(app)[:2]) == {"a.md", "d.md"}, what="the queued edits indexed")
        await wait_until(pilot, lambda: app.queued_edits == 0, what="the count cleared")
        header = str(app.header_text(200))
        assert "queued" not in header and re.search(r"updated \d\d:\d\d:\d\d · 2 notes", header), header
        assert not app.screen.query_one(IndexStatusBar).display


async def test_results_found_before_a_saved_notes_vectors_are_written_are_searched_again_after(tmp_path: Path) -> None:
    """The watcher writes a saved note's full text with its batch and its vectors behind it: the list
    re-run after the batch ranks the note without a vector; once the vectors are written it runs again."""
    from test_watch_embedding import HeldEmbedder

    app = watched_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _watching(app, pilot)
        eng = app._engine
        held = HeldEmbedder(eng.embedder())
        eng._embedder = held
        await search(app, pilot, "tokio runtime")
        (app.kb_path / "d.md").write_text("# Delta\n\n## Tokio\n\ntokio runtime in the garden\n", "utf-8")
        await wait_until(pilot, lambda: "d.md" in paths(app), what="the note found by its full text")
        assert held.started.wait(30) and app.responses["left"].pending_embeddings > 0
        held.release.set()
        await wait_until(
            pilot,
            lambda: app.responses["left"] is not None and app.responses["left"].pending_embeddings == 0,
            what="the search again once its vectors are written",
        )
        assert "d.md" in paths(app)


async def test_the_header_keeps_the_queued_count_from_the_build_s_end_until_the_batch_lands(tmp_path: Path) -> None:
    from groove_tui.engine.index.watch import WatchEvent
    from groove_tui.engine.types import IndexReport
    from groove_tui.tui.messages import KbChanged

    from .helpers import make_app

    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.post_message(KbChanged(WatchEvent("queued", "", paths=("a.md", "b.md"))))
        await settle(app, pilot)
        assert "2 edits queued until indexing finishes" in str(app.header_text(200))
        app.post_message(KbChanged(WatchEvent("batch", paths=("a.md", "b.md"), report=IndexReport())))
        await settle(app, pilot)
        assert "queued" not in str(app.header_text(200)) and app.queued_edits == 0
