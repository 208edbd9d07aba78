"""Pilot tests against the REAL engine over a tiny KB built here (hashing embedder: deterministic, offline)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from groove_tui.settings.config import Config, EmbeddingConfig
from groove_tui.tui.app import GrooveApp
from groove_tui.tui.screens.compare import CompareScreen
from groove_tui.tui.widgets.detail import DetailView
from groove_tui.tui.widgets.results import ResultsPane
from groove_tui.tui.widgets.status import IndexStatusBar

from .helpers import SIZE, TestApp, notifications, paths, search, settle

DOCS = {
    "a1.md": "# Tokio\n\n## Runtime\n\nThe tokio runtime schedules async tasks on worker threads. Tokio runtime "
    "tasks are cheap.\n",
    "a2.md": "# Tokio again\n\n## Runtime copy\n\nThe tokio runtime schedules async tasks on worker threads. Tokio "
    "runtime tasks are cheap!\n",
    "b.md": "# Python\n\n## Event loop\n\nPython asyncio has an event loop; the tokio runtime is similar for async "
    "rust code.\n",
    "c.md": "# Notes\n\n## Intro\n\nSome intro text about gardening.\n\n## Middle\n\nThe tokio runtime middle "
    "section mentions async.\n\n## End\n\nClosing words about soil.\n",
    "ja.md": "# 東京\n\n## 設定\n\n東京の設定ファイルを編集します。tokio runtime の話。\n",
    "markup.md": "# Odd\n\n## Literal [bold]x[/bold]\n\nA [link=https://e.test]tokio[/link] line with \x1b[31m "
    "ANSI tokio.\n",
}


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def real_app(tmp_path: Path, kb: Path, **kw) -> GrooveApp:
    from groove_tui.engine import Engine

    cfg = dataclasses.replace(Config(), embedding=EmbeddingConfig(model="hashing"))
    idx = tmp_path / "idx"

    def factory():
        return Engine.open(kb, config=cfg, index_dir=idx)

    return TestApp(
        engine_factory=factory,
        config=cfg,
        kb_path=kb,
        history_path=tmp_path / "h.json",
        debounce_ms=0,
        warmup=False,
        user_theme_dir=tmp_path / "none",
        **kw,
    )


async def test_real_index_then_search(tmp_path, kb):
    app = real_app(tmp_path, kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.engine is not None
        assert any("Index updated" in n for n in notifications(app))
        assert not app.screen.query_one(IndexStatusBar).has_class("-active")
        await search(app, pilot, "tokio runtime")
        assert paths(app)[:2] == ["a1.md", "a2.md"]
        pane = app.screen.query_one("#pane-left", ResultsPane)
        assert pane.rows[0].hit.match_spans
        assert "hits" in str(pane.summary.content)
        assert app.engine.needs_index() is False
    app.engine.close()


async def test_real_mmr_toggle_changes_order(tmp_path, kb):
    app = real_app(tmp_path, kb)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tokio runtime")
        before = paths(app)
        slider = app.screen.query_one("#left-lambda")
        slider.focus()
        await pilot.press("shift+left", "shift+left", "shift+left", "shift+left")  # 0.7 -> 0.3
        await pilot.press("f2")
        await settle(app, pilot)
        assert app.run_configs["left"].mmr and app.run_configs["left"].lam == pytest.approx(0.3)
        after = paths(app)
        assert sorted(before) == sorted(after)
        assert after.index("a2.md") > before.index("a2.md")  # the near-duplicate is pushed down
        assert app.responses["left"].results[0].trace.mmr is not None
    app.engine.close()


async def test_real_parent_retriever_shading(tmp_path, kb):
    app = real_app(tmp_path, kb)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "middle section")
        await pilot.press("f3")
        await settle(app, pilot)
        hit = app.responses["left"].results[0]
        assert hit.path == "c.md" and hit.expanded_from is not None
        view = app.screen.query_one("#preview", DetailView)
        shade = view.get_component_rich_style("result--expanded", partial=True)
        text = view._body.content
        shaded = "".join(text.plain[s.start : s.end] for s in text.spans if s.style == shade)
        if hit.expanded_from.hit_start > 0 or hit.expanded_from.hit_end < len(hit.content):
            assert "gardening" in shaded or "soil" in shaded
        match = view.get_component_rich_style("result--match", partial=True)
        matched = [text.plain[s.start : s.end].lower() for s in text.spans if s.style == match]
        assert "middle" in matched
    app.engine.close()


async def test_real_query_errors_shown_not_crashing(tmp_path, kb):
    app = real_app(tmp_path, kb)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.screen.query_one("#pane-left", ResultsPane)
        await search(app, pilot, "-tokio")
        assert "no positive term" in str(pane.summary.content)
        await search(app, pilot, "x" * 1100)
        assert "longer than 1024 bytes" in str(pane.summary.content)
        await search(app, pilot, '"tokio runtime" -python')
        assert "b.md" not in paths(app) and paths(app)
    app.engine.close()


async def test_real_markup_document_literal(tmp_path, kb):
    app = real_app(tmp_path, kb)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "ANSI")
        row = app.screen.query_one("#pane-left", ResultsPane).rows[0]
        assert row.hit.path == "markup.md"
        body = app.screen.query_one("#preview", DetailView)._body.content.plain
        assert "[link=https://e.test]tokio[/link]" in body and "\x1b" not in body and "␛[31m" in body
    app.engine.close()


async def test_real_compare_lambda_preset(tmp_path, kb):
    app = real_app(tmp_path, kb)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tokio runtime")
        await pilot.press("f5")
        await settle(app, pilot)
        await pilot.press("f9")
        await settle(app, pilot)
        assert isinstance(app.screen, CompareScreen)
        lp = app.screen.query_one("#pane-left", ResultsPane)
        kinds = {r.marker.kind for r in lp.rows}
        assert kinds & {"up", "down"}
        assert "overlap@10" in str(app.screen.query_one("#compare-summary").content)
    app.engine.close()


async def test_real_missing_kb_reports_error(tmp_path):
    app = real_app(tmp_path, tmp_path / "does-not-exist")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert any("does not exist" in n for n in notifications(app))
        await search(app, pilot, "tokio")
        pane = app.screen.query_one("#pane-left", ResultsPane)
        assert "could not be opened" in str(pane.summary.content)


async def test_real_bad_index_dir_is_one_message_not_a_traceback(tmp_path, kb):
    """The explorer is one more command a bad --index-dir must not crash: a file there."""
    (tmp_path / "idx").write_text("not a directory")
    app = real_app(tmp_path, kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)  # an unexpected worker failure (an OSError) would fail here
        said = [n for n in notifications(app) if "cannot use the index directory" in n]
        assert len(said) == 1 and "\n" not in said[0] and str(tmp_path / "idx") in said[0]
        await search(app, pilot, "tokio")
        assert "could not be opened" in str(app.screen.query_one("#pane-left", ResultsPane).summary.content)


async def test_first_paint_does_not_wait_for_the_engine_and_model_loads_in_background(tmp_path, kb):
    """Ordering, not wall time (the 1.5 s target is measured by `python -m tests.tui.bench_keystroke`): the
    screen is ready while the engine is still opening, and the model is loaded by the background worker."""
    import threading

    gate = threading.Event()
    app = real_app(tmp_path, kb)
    open_engine = app._engine_factory

    def slow_open():
        gate.wait(60)
        return open_engine()

    app._engine_factory = slow_open
    app.warmup = True
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.ready_seconds is not None  # first paint happened...
        assert app.engine is None  # ...while the engine was still opening
        gate.set()
        await settle(app, pilot)
        assert app.engine._embedder is not None  # loaded by the background worker, not by a query
    app.engine.close()


async def test_real_explain_panel_says_why_the_page_is_low_confidence_or_not(tmp_path, kb):
    from groove_tui.tui.widgets.explain import ExplainPanel

    app = real_app(tmp_path, kb)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tokio runtime")  # a1 and a2 are copies: a tie the page cannot break
        resp = app.responses["left"]
        assert resp.confidence is not None and resp.confidence.low is resp.low_confidence
        await pilot.press("f6")
        await pilot.pause()
        text = app.screen.query_one("#explain", ExplainPanel)._body.content.plain
        verdict = "yes (all three tests hold)" if resp.low_confidence else "no (it takes all three tests)"
        assert f"Page\n  low confidence  {verdict}\n  flat            max/mean " in text
        assert "under the top" in text and "near tie        the first leads the second by " in text
        summary = app.screen.query_one("#pane-left", ResultsPane).summary
        assert ("⚠ low confidence" in str(summary.content)) is resp.low_confidence
        # hovering the flag says the same as the panel
        if resp.low_confidence:
            assert "near tie: the first leads the second by " in str(summary.tooltip)
        else:
            assert summary.tooltip is None
        await search(app, pilot, "gardening soil")  # another page, another verdict
        resp = app.responses["left"]
        summary = app.screen.query_one("#pane-left", ResultsPane).summary
        assert (summary.tooltip is not None) is resp.low_confidence
    app.engine.close()
