"""The fusion method as a live setting: switch, F12, palette, compare labels, golden metrics.

The FakeEngine honours `params.fusion`: "rrf" orders hits by document (its vector leg) with other
scores, so a re-run under the other method is visible in the result order.
"""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Label, Switch

from groove_tui.config import Config, FusionConfig, TuiConfig
from groove_tui.tui.screens.help import binding_rows
from groove_tui.tui.widgets.explain import ExplainPanel
from groove_tui.tui.widgets.results import ResultsPane

from .fakes import FakeEngine
from .helpers import SIZE, make_app, notifications, paths, search, settle
from .test_compare_mode import open_compare
from .test_golden import expected_aggregate, write_golden


def rrf_config(**tui) -> Config:
    base = Config()
    return replace(base, search=replace(base.search, fusion=FusionConfig(method="rrf")), tui=TuiConfig(**tui))


def label(app, side: str) -> str:
    return str(app.screen.query_one(f"#label-{side}").content)


async def test_f12_switches_fusion_and_reruns(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        assert app.run_configs["left"].fusion == "relative"  # the config's default method
        await search(app, pilot, "rust")
        assert eng.calls[-1][1].fusion == "relative"
        before, n = paths(app), len(eng.calls)
        await pilot.press("f12")
        await settle(app, pilot)
        assert app.run_configs["left"].fusion == "rrf"
        assert len(eng.calls) == n + 1 and eng.calls[-1][1].fusion == "rrf"
        after = paths(app)
        assert sorted(after) == sorted(before) and after != before
        assert app.screen.query_one("#left-fusion", Switch).value is True
        assert str(app.screen.query_one("#left-fusion-label", Label).content) == "Fusion: RRF"
        assert "Fusion: RRF" in notifications(app)
        await pilot.press("f6")
        await settle(app, pilot)
        assert "Fusion: RRF" in app.screen.query_one("#explain", ExplainPanel)._body.content.plain
        # the settings pane's switch goes back to relative scores
        app.screen.query_one("#left-fusion", Switch).value = False
        await settle(app, pilot)
        assert app.run_configs["left"].fusion == "relative" and eng.calls[-1][1].fusion == "relative"
        assert paths(app) == before
        assert str(app.screen.query_one("#left-fusion-label", Label).content) == "Fusion: relative"
        assert "Fusion: relative scores" in app.screen.query_one("#explain", ExplainPanel)._body.content.plain


async def test_fusion_changes_are_debounced(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "rust")
        n = len(eng.calls)
        app.debounce = 60.0
        await pilot.press("f12", "f12")
        await pilot.pause()
        assert len(eng.calls) == n and app._debounce_timers["left"] is not None
        app.debounce = 0.05  # the next change restarts the timer with a short delay
        await pilot.press("f12")
        await settle(app, pilot)
        assert len(eng.calls) == n + 1 and eng.calls[-1][1].fusion == "rrf"  # one search for the burst


async def test_initial_method_comes_from_the_engine_config(tmp_path):
    eng = FakeEngine(config=rrf_config())
    app = make_app(tmp_path, eng, config=Config())  # the engine resolves fusion=None from its own config
    async with app.run_test(size=SIZE) as pilot:
        assert app.run_configs["left"].fusion == app.run_configs["right"].fusion == "rrf"
        assert app.screen.query_one("#left-fusion", Switch).value is True
        await search(app, pilot, "rust")
        assert eng.calls[-1][1].fusion == "rrf"


async def test_palette_help_and_keymap(tmp_path):
    cfg = replace(Config(), tui=TuiConfig(keymap=(("search.toggle_fusion", "ctrl+r"),)))
    eng = FakeEngine(config=cfg)
    app = make_app(tmp_path, eng, config=cfg)
    async with app.run_test(size=SIZE) as pilot:
        assert ("ctrl+r", "Fusion", "search.toggle_fusion") in dict(binding_rows(app))["Global"]
        await search(app, pilot, "rust")
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        assert app.run_configs["left"].fusion == "rrf" and eng.calls[-1][1].fusion == "rrf"
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        assert "search: switch fusion to RRF" not in commands
        commands["search: switch fusion to relative"].callback()
        await settle(app, pilot)
        assert app.run_configs["left"].fusion == "relative" and eng.calls[-1][1].fusion == "relative"
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE):
        assert ("f12", "Fusion", "search.toggle_fusion") in dict(binding_rows(app))["Global"]


async def test_golden_metrics_follow_the_method(tmp_path):
    app = make_app(tmp_path, golden=str(write_golden(tmp_path)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        relative = app.eval_outcomes["left"]
        assert relative.params.fusion == "relative"
        await pilot.press("f12")
        await settle(app, pilot)
        rrf = app.eval_outcomes["left"]
        assert rrf.params.fusion == "rrf" and rrf.aggregate == expected_aggregate(app)
        assert rrf.aggregate.mrr < relative.aggregate.mrr  # tokio-spawn.md is last in the fake's RRF order
        assert app.eval_previous["left"] == relative.aggregate


async def test_compare_sides_differ_in_fusion(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await open_compare(app, pilot)
        assert "fusion" not in label(app, "left") + label(app, "right")  # both the configured method
        app.screen.query_one("#pane-right", ResultsPane).list.focus()
        await settle(app, pilot)
        n = len(eng.calls)
        await pilot.press("f12")  # the focused side only
        await settle(app, pilot)
        assert (app.run_configs["left"].fusion, app.run_configs["right"].fusion) == ("relative", "rrf")
        assert len(eng.calls) == n + 1 and eng.calls[-1][1].fusion == "rrf" and eng.calls[-1][1].mmr
        assert "Fusion: RRF (right)" in notifications(app)
        assert label(app, "left").startswith("LEFT: limit 10 · fusion relative · MMR off")
        assert label(app, "right").startswith("RIGHT: limit 10 · fusion RRF · MMR λ0.70")
        assert app.screen.comparison is not None  # both sides answered: markers and summary
        await pilot.press("ctrl+x")
        await settle(app, pilot)
        assert (app.run_configs["left"].fusion, app.run_configs["right"].fusion) == ("rrf", "relative")
        assert app.screen.query_one("#left-fusion", Switch).value is True
        assert "fusion RRF" in label(app, "left")
        # the preset (palette) sets both sides at once
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        commands["compare: preset fusion relative / RRF"].callback()
        await settle(app, pilot)
        assert (app.run_configs["left"].fusion, app.run_configs["right"].fusion) == ("relative", "rrf")
        assert [p.fusion for _q, p in eng.calls[-2:]] in (["relative", "rrf"], ["rrf", "relative"])


async def test_compare_labels_name_a_method_that_is_not_the_configured_one(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await open_compare(app, pilot)
        for side in ("left", "right"):
            app.set_run_config(side, replace(app.run_configs[side], fusion="rrf"))
        await settle(app, pilot)
        assert "fusion RRF" in label(app, "left") and "fusion RRF" in label(app, "right")
