"""Pilot tests of the explorer's flows against the deterministic FakeEngine."""

from __future__ import annotations

import json
import threading
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import pytest
from rich.text import Text

from groove_tui.settings.config import Config, RerankerConfig, TuiConfig
from groove_tui.tui.messages import SearchFinished
from groove_tui.tui.screens.detail import DetailScreen
from groove_tui.tui.screens.help import HelpScreen
from groove_tui.tui.widgets.detail import DetailView
from groove_tui.tui.widgets.explain import ExplainPanel
from groove_tui.tui.widgets.results import ResultsPane
from groove_tui.tui.widgets.slider import Slider
from groove_tui.tui.widgets.status import IndexStatusBar

from .fakes import FakeEngine
from .helpers import SIZE, make_app, notifications, paths, search, settle, wait_until


async def test_type_shows_results(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*"tokio")
        await settle(app, pilot)
        pane = app.screen.query_one("#pane-left", ResultsPane)
        assert len(pane.rows) == 3
        assert [r.hit.path for r in pane.rows] == ["rust/async.md", "rust/tokio-spawn.md", "python/asyncio.md"]
        prompt = pane.list.get_option_at_index(1).prompt
        assert isinstance(prompt, Text)
        assert "rust/tokio-spawn.md › Spawning" in prompt.plain
        assert "3 hits" in str(pane.summary.content)


async def test_typing_is_debounced(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng, debounce_ms=60_000)  # no keystroke gap on a loaded machine reaches this
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*"tokio runtim")
        await pilot.pause()
        assert eng.calls == [] and app._debounce_timers["left"] is not None
        app.debounce = 0.05  # the next keystroke restarts the timer with a short delay
        await pilot.press("e")
        await settle(app, pilot)  # waits for the pending debounce timer, then the worker
        assert [q for q, _ in eng.calls] == ["tokio runtime"]  # one search for the whole burst


async def test_history_persisted_and_recalled(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        for q in ("tokio", "borrow"):
            await search(app, pilot, q)
            app.screen.query_one("#query").focus()
            await pilot.press("enter")
            await settle(app, pilot)
    data = json.loads((tmp_path / "state" / "history.json").read_text())
    assert data["queries"] == ["tokio", "borrow"]
    app2 = make_app(tmp_path)
    async with app2.run_test(size=SIZE) as pilot:
        qi = app2.screen.query_one("#query")
        await pilot.press("up")
        assert qi.value == "borrow"
        await pilot.press("up")
        assert qi.value == "tokio"
        await pilot.press("down", "down")
        assert qi.value == ""


async def test_quotes_and_exclusions(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, '"tokio runtime" -spawn')
        assert paths(app) == ["python/asyncio.md"]  # rust/async.md mentions tokio::spawn
        assert app.responses["left"].query.exclude == ("spawn",)


async def test_settle_lets_an_unexpected_worker_failure_fail_the_test(tmp_path):
    """The helper must not swallow every WorkerFailed, or a bug inside a search worker would pass unseen."""
    import pytest

    from .fakes import FakeEngine

    class Broken(FakeEngine):
        def _search(self, query, params, cancel):
            if query == "boom":
                raise TypeError("a bug, not a user error")
            return super()._search(query, params, cancel)

    app = make_app(tmp_path, Broken())
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tokio")  # fine
        with pytest.raises(AssertionError, match="a worker failed: TypeError"):
            await search(app, pilot, "boom")
        await search(app, pilot, "tokio again")  # the reported failure was consumed: settling goes on
        await search(app, pilot, "-rust")  # a user error the app shows as a message is not a failure
        assert app.unexpected_failures == []


async def test_exclusion_only_and_long_query_show_message(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "-rust")
        pane = app.screen.query_one("#pane-left", ResultsPane)
        assert "only exclusions" in str(pane.summary.content)
        assert pane.summary.has_class("-error")
        assert pane.rows == []
        await search(app, pilot, "x" * 400)
        assert "too long" in str(pane.summary.content)
        await search(app, pilot, "tokio")
        assert not pane.summary.has_class("-error") and pane.rows


async def test_toggle_mmr_changes_order(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "rust")
        before = paths(app)
        await pilot.press("f2")
        await settle(app, pilot)
        assert app.run_configs["left"].mmr
        after = paths(app)
        assert sorted(before) == sorted(after) and before != after
        assert app.screen.query_one("#left-mmr").value is True
        await pilot.press("f2")
        await settle(app, pilot)
        assert paths(app) == before


async def test_lambda_slider_reruns(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")
        await search(app, pilot, "rust")
        n = len(eng.calls)
        slider = app.screen.query_one("#left-lambda", Slider)
        slider.focus()
        await pilot.press("left")
        await settle(app, pilot)
        assert app.run_configs["left"].lam == 0.69
        assert eng.calls[-1][1].mmr_lambda == 0.69
        await pilot.press("shift+left")
        await settle(app, pilot)
        assert eng.calls[-1][1].mmr_lambda == 0.59
        assert len(eng.calls) == n + 2
        order_059 = paths(app)
        slider.value = 0.1
        await settle(app, pilot)
        assert eng.calls[-1][1].mmr_lambda == 0.1
        assert paths(app) != order_059


async def test_slider_mouse_click(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        slider = app.screen.query_one("#left-lambda", Slider)
        start, width = slider._track()
        await pilot.click(slider, offset=(start, 0))
        await settle(app, pilot)
        assert slider.value == 0.0 and app.run_configs["left"].lam == 0.0
        await pilot.click(slider, offset=(start + width - 1, 0))
        await settle(app, pilot)
        assert slider.value == 1.0


async def test_limit_and_filters_rerun(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "rust")
        app.screen.query_one("#left-limit").value = "2"
        await settle(app, pilot)
        assert len(paths(app)) == 2
        app.screen.query_one("#left-limit").value = "10"
        app.screen.query_one("#left-globs").value = "rust/*.md"
        await settle(app, pilot)
        assert all(p.startswith("rust/") for p in paths(app))
        pane = app.screen.query_one("#pane-left", ResultsPane)
        assert "path_globs=rust/*.md" in str(pane.summary.content)
        app.screen.query_one("#left-tags").value = "async"
        await settle(app, pilot)
        assert eng.calls[-1][1].tags_any == ("async",)
        assert set(paths(app)) == {"rust/async.md", "rust/errors.md", "rust/tokio-spawn.md"}


async def test_stale_result_never_overwrites_newer(tmp_path):
    eng = FakeEngine(delays={"slow": 0.6}, ignore_cancel=True)
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        app.set_query("slow")
        await wait_until(pilot, lambda: eng.calls, what="the slow search to start")
        app.set_query("tokio")
        await settle(app, pilot)
        await wait_until(pilot, lambda: "slow" in eng.finished, what="the slow search to return")
        await settle(app, pilot)
        assert [q for q, _ in eng.calls] == ["slow", "tokio"]
        assert app.responses["left"].query.positive_text == "tokio"
        # even if an old result is delivered late, it is dropped by its serial
        old = eng.search("rust", app.base_params)
        app.post_message(SearchFinished("left", 1, "rust", app.run_configs["left"], old, 1.0))
        await settle(app, pilot)
        assert app.responses["left"].query.positive_text == "tokio"


async def test_stale_result_with_cancel_aware_engine(tmp_path):
    eng = FakeEngine(delays={"slow": 0.5}, ignore_cancel=False)
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        app.set_query("slow")
        await wait_until(pilot, lambda: eng.calls, what="the slow search to start")
        app.set_query("borrow")
        await settle(app, pilot)
        await wait_until(pilot, lambda: "slow" in eng.finished, what="the slow search to stop")
        await settle(app, pilot)
        assert paths(app) == ["rust/ownership.md"]
        assert not notifications(app)  # SearchCancelled is silent


async def test_result_flags_low_confidence_filters_pending(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        eng.pending = 12  # phase two still running
        await search(app, pilot, "vague borrow")
        summary = str(app.screen.query_one("#pane-left", ResultsPane).summary.content)
        assert "low confidence" in summary
        assert "12 chunks awaiting embeddings" in summary


async def test_parent_retriever_shading_in_detail(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tokio runtime")
        await pilot.press("f3")
        await settle(app, pilot)
        hit = app.responses["left"].results[0]
        assert hit.expanded_from is not None
        view = app.screen.query_one("#preview", DetailView)
        text = view._body.content
        shade = view.get_component_rich_style("result--expanded", partial=True)
        match = view.get_component_rich_style("result--match", partial=True)
        shaded = [text.plain[s.start : s.end] for s in text.spans if s.style == shade]
        matched = [text.plain[s.start : s.end] for s in text.spans if s.style == match]
        assert any("Async Rust needs an executor." in s for s in shaded)
        assert any("Blocking inside a task" in s for s in shaded)
        assert "tokio" in matched and "runtime" in matched
        # full detail screen
        app.screen.query_one("#pane-left", ResultsPane).list.focus()
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DetailScreen)
        assert "context" in app.screen.query_one("#detail", DetailView)._body.content.plain
        await pilot.press("escape")
        await settle(app, pilot)
        assert not isinstance(app.screen, DetailScreen)


async def test_markup_and_ansi_shown_literally(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "bell")
        pane = app.screen.query_one("#pane-left", ResultsPane)
        prompt = pane.list.get_option_at_index(0).prompt
        assert isinstance(prompt, Text)
        assert "Weird [bold]markup[" in prompt.plain
        view = app.screen.query_one("#preview", DetailView)
        body = view._body.content.plain
        assert "[link=https://x.test]link[/link]" in body
        assert "\x1b" not in body and "\x07" not in body and "␛[31m" in body and "␇" in body


async def test_explain_panel(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tokio -python")
        assert app.screen.query_one("#explain", ExplainPanel).display is False
        await pilot.press("f6")
        await pilot.pause()
        panel = app.screen.query_one("#explain", ExplainPanel)
        assert panel.display is True
        text = panel._body.content.plain
        for needle in (
            "Query",
            "exclude",
            "python",
            "Vector leg",
            "Full-text leg",
            "Fusion: DBSF (scores by spread)",
            "MMR",
            "Parent retriever",
            "Timings",
        ):
            assert needle in text
        assert app.run_configs["left"].to_params(app.base_params, None).explain


async def test_help_screen_lists_bindings(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f1")
        await settle(app, pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(app, pilot)
        assert not isinstance(app.screen, HelpScreen)


async def test_keymap_remap(tmp_path):
    cfg = replace(Config(), tui=TuiConfig(keymap=(("search.toggle_mmr", "f11"),)))
    app = make_app(tmp_path, FakeEngine(config=cfg), config=cfg)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f11")
        await settle(app, pilot)
        assert app.run_configs["left"].mmr
        from groove_tui.tui.screens.help import binding_rows

        rows = dict(binding_rows(app))["Global"]
        assert ("f11", "MMR on / off (diversify the results)", "search.toggle_mmr") in rows


async def test_reranker_switch_disabled_without_model(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        sw = app.screen.query_one("#left-reranker")
        assert sw.disabled
        assert "[reranker] model" in str(sw.tooltip)
        await pilot.press("f4")
        await pilot.pause()
        assert not app.run_configs["left"].reranker


async def test_reranker_switch_uses_configured_model(tmp_path):
    cfg = replace(Config(), reranker=RerankerConfig(model="tiny-ce"))
    eng = FakeEngine(config=cfg)
    app = make_app(tmp_path, eng, config=cfg)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "rust")
        sw = app.screen.query_one("#left-reranker")
        assert not sw.disabled
        await pilot.press("f4")
        await settle(app, pilot)
        assert sw.value is True
        assert eng.calls[-1][1].reranker == "tiny-ce"


async def test_open_in_editor_copy_and_export(tmp_path, monkeypatch):
    monkeypatch.setenv("EDITOR", "myedit --wait")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.chdir(tmp_path)
    app = make_app(tmp_path)
    calls = []
    app.run_editor = lambda cmd: calls.append(cmd) or 0
    monkeypatch.setattr(app, "suspend", lambda: nullcontext())
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "borrow")
        app.screen.query_one("#pane-left", ResultsPane).list.focus()
        await pilot.press("ctrl+o")
        assert calls == [["myedit", "--wait", "+6", "/kb/rust/ownership.md"]]
        await pilot.press("ctrl+y")
        assert app.clipboard == "/kb/rust/ownership.md"
        await pilot.press("alt+y")
        assert app.clipboard.startswith("Rust ownership")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        inp = app.screen.query_one("#export-path")
        inp.value = "out/res.json"
        await pilot.press("enter")
        await settle(app, pilot)
        out = tmp_path / "out" / "res.json"
        data = json.loads(out.read_text())
        assert data["query"] == "borrow"
        assert data["sides"][0]["run_config"]["mmr"] is False
        assert data["sides"][0]["response"]["results"][0]["path"] == "rust/ownership.md"
        assert any(str(out) in n for n in notifications(app))


async def test_editor_falls_back_to_vi(monkeypatch):
    from groove_tui.tui.app import editor_command

    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    assert editor_command(Path("/kb"), "a b/c.md", 0) == ["vi", "+1", "/kb/a b/c.md"]


async def test_index_progress_both_phases_and_search_during_embedding(tmp_path):
    gate = threading.Event()
    eng = FakeEngine(stale=True, index_gate=gate)
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        app.set_query("borrow")
        await wait_until(pilot, lambda: app.responses["left"] is not None, what="a search during phase two")
        bar = app.screen.query_one(IndexStatusBar)
        await wait_until(  # (the progress shown follows the indexer by up to a tenth of a second)
            pilot,
            lambda: bar.has_class("-active") and "Embedding" in str(bar.query_one("#index-label").content),
            what="the embedding phase shown",
        )
        assert paths(app) == ["rust/ownership.md"]  # search works after phase one
        gate.set()
        await settle(app, pilot)
        assert not bar.has_class("-active")
        assert any("Index updated" in n for n in notifications(app))


async def test_palette_commands_are_context_aware(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "search: turn MMR on" in titles and "view: compare mode" in titles
        assert not any(t.startswith("hit:") for t in titles)
        assert not any(t.startswith("search: turn reranker") for t in titles)
        assert "compare: swap sides" not in titles
        assert any(t.startswith("theme: ") for t in titles)
        await search(app, pilot, "rust")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "hit: open in $EDITOR" in titles and "export: the results as JSON" in titles
        await pilot.press("f5")
        await settle(app, pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "compare: swap sides" in titles and "view: compare mode" not in titles


async def test_command_palette_opens(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        from textual.command import CommandList, CommandPalette

        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press(*"turn MMR")
        await wait_until(
            pilot, lambda: app.screen.query_one(CommandList).highlighted is not None, what="palette matches"
        )
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.run_configs["left"].mmr


async def test_themes_cycle_through_shipped_and_user_files_and_screenshots_say_where(tmp_path, monkeypatch):
    user = tmp_path / "user-themes"
    user.mkdir()
    (user / "mine.toml").write_text('name = "mine"\ndark = true\nprimary = "#88aaff"\n', encoding="utf-8")
    app = make_app(tmp_path, user_theme_dir=user)
    monkeypatch.setattr("groove_tui.settings.paths.user_data_dir", lambda: tmp_path / "data")
    async with app.run_test(size=SIZE) as pilot:
        assert app.own_themes == ("groove", "groove-light", "mine")
        seen = []
        for _ in range(4):
            await pilot.press("ctrl+t")
            await pilot.pause()
            seen.append(app.theme)
        assert seen == ["groove-light", "mine", "groove", "groove-light"]  # none of Textual's built-ins
        titles = [c.title for c in app.get_system_commands(app.screen)]
        themes_offered = {t.removeprefix("theme: ") for t in titles if t.startswith("theme: ")}
        assert themes_offered == {"groove", "mine"}  # every own theme but the current one
        app.action_save_screenshot()
        await pilot.pause()
        shots = list((tmp_path / "data" / "screenshots").glob("*.svg"))
        assert len(shots) == 1 and f"Screenshot saved: {shots[0]}" == notifications(app)[-1]


async def test_the_focused_pane_changes_its_border_and_switches_say_their_state(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "rust")
        results, settings = app.screen.query_one("#pane-left"), app.screen.query_one("#config-left")
        app.screen.query_one("#results-left").focus()
        await pilot.pause()
        focused, blurred = results.styles.border_top, settings.styles.border_top
        assert focused != blurred and focused[0] == "heavy" and blurred[0] == "round"
        assert results.styles.border_title_color != settings.styles.border_title_color
        app.screen.query_one("#left-mmr").focus()
        await pilot.pause()
        assert settings.styles.border_top[0] == "heavy" and results.styles.border_top[0] == "round"
        label = app.screen.query_one("#left-mmr-label")
        assert str(label.content) == "MMR  off"
        await pilot.press("f2")
        await settle(app, pilot)
        assert str(label.content) == "MMR   on"
        assert str(app.screen.query_one("#left-reranker-label").content) == "Rerank none"


async def test_the_header_says_kb_model_index_state_and_reranker(tmp_path):
    import threading

    gate = threading.Event()
    eng = FakeEngine(stale=True, index_gate=gate)
    eng.model_id = "hashing-64"
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(
            pilot,
            lambda: "embedding" in str(app.screen.query_one("#header").content),
            what="the indexing state in the header",
        )
        assert str(app.screen.query_one("#header").content).startswith("/kb · model hashing-64  · embedding 0/")
        gate.set()
        await settle(app, pilot)
        text = str(app.screen.query_one("#header").content)
        assert text == (
            f"/kb · model hashing-64  · {eng.status().documents} docs, {eng.status().chunks} chunks"
            "  · rerank none (groove-tui models pull ms-marco-l12)"
        )
        await pilot.press("f5")
        await settle(app, pilot)
        assert str(app.screen.query_one("#header").content) == text  # compare mode too


async def test_empty_states_say_what_is_wrong(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "zzzqqq")
        pane = app.screen.query_one("#pane-left")
        assert "No hits: try other words" in str(pane.summary.content)
        globs = app.screen.query_one("#left-globs")
        assert globs.placeholder.startswith("all paths") and app.screen.query_one("#left-tags").placeholder.startswith(
            "any tags"
        )
        app.index_counts = (0, 0, 0)
        app.header_signal.publish("index")
        await pilot.pause()
        assert "no Markdown files indexed" in str(app.screen.query_one("#header").content)


async def test_no_hits_while_the_index_builds_says_so(tmp_path):
    import threading

    gate = threading.Event()
    eng = FakeEngine(stale=True, index_gate=gate)
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.indexing, what="indexing")
        app.set_query("zzzqqq")
        await wait_until(pilot, lambda: app.responses["left"] is not None, what="the empty page")
        await pilot.pause()
        assert "the index is still being built" in str(app.screen.query_one("#pane-left").summary.content)
        gate.set()
        await settle(app, pilot)


@pytest.mark.parametrize("size", [(60, 20), (100, 30), (160, 45)], ids=["60", "100", "160"])
async def test_the_header_names_the_kb_by_its_path(tmp_path, monkeypatch, size):
    from .helpers import screen_lines

    home = tmp_path / "home"
    kb = home / "notes" / "projects" / "groove" / "knowledge-base"
    kb.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    app = make_app(tmp_path)
    app.kb_path = kb
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        header = screen_lines(app)[0].strip()
        if size[0] >= 100:
            assert header.startswith("~/notes/projects/groove/knowledge-base · model")
        else:  # shortened in the middle, the KB's own folder kept
            assert header.startswith("~/…/groove/knowledge-base · model"), header
        assert Path.home() == home


async def test_typing_in_the_result_list_goes_to_the_query_and_starts_no_editor(tmp_path, monkeypatch):
    """As in fzf: after enter and the arrow keys, what is typed lands in the query, not on the hit."""
    monkeypatch.setenv("EDITOR", "myedit")
    app = make_app(tmp_path)
    calls = []
    app.run_editor = lambda cmd: calls.append(cmd) or 0
    monkeypatch.setattr(app, "suspend", lambda: nullcontext())
    async with app.run_test(size=SIZE) as pilot:
        query = app.screen.query_one("#query")
        query.focus()
        await pilot.press(*"rust ")
        await settle(app, pilot)
        await pilot.press("enter", "down", "down")
        await settle(app, pilot)
        results = app.screen.query_one("#pane-left", ResultsPane)
        assert app.focused is results.list and results.list.highlighted == 2
        await pilot.press(*"-foo")  # "o" opened the editor, "-" and "f" went nowhere
        await settle(app, pilot)
        assert calls == []
        assert query.value == "rust -foo" and app.focused is query and app.query_text == "rust -foo"
        assert app.engine.calls[-1][0] == "rust -foo"
