"""The fusion method as a live setting: settings-pane select, F12, palette, compare labels, golden metrics.

The FakeEngine honours `params.fusion` and orders hits differently under each method ("dbsf" by count,
"relative" by count with ties the other way round, "rrf" by document), so a re-run is visible in the order.
"""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Label, OptionList, Select

from groove_tui.settings.config import FUSION_METHODS, Config, FusionConfig, TuiConfig
from groove_tui.tui.screens.help import binding_rows
from groove_tui.tui.widgets.explain import ExplainPanel
from groove_tui.tui.widgets.results import ResultsPane

from .fakes import FakeEngine
from .helpers import SIZE, make_app, notifications, paths, search, settle
from .test_compare_mode import open_compare
from .test_golden import expected_aggregate, write_golden

HEADINGS = {
    "dbsf": "Fusion: DBSF (scores by spread)",
    "relative": "Fusion: relative scores (min-max)",
    "rrf": "Fusion: RRF",
}
LABELS = {"dbsf": "DBSF", "relative": "relative", "rrf": "RRF"}


def rrf_config(**tui) -> Config:
    base = Config()
    return replace(base, search=replace(base.search, fusion=FusionConfig(method="rrf")), tui=TuiConfig(**tui))


def label(app, side: str) -> str:
    return str(app.screen.query_one(f"#label-{side}").content)


def explain(app) -> str:
    return app.screen.query_one("#explain", ExplainPanel)._body.content.plain


async def test_f12_cycles_fusion_and_reruns(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        assert app.run_configs["left"].fusion == "dbsf"  # the config's default method
        await search(app, pilot, "rust")
        assert eng.calls[-1][1].fusion == "dbsf"
        await pilot.press("f6")
        await settle(app, pilot)
        assert HEADINGS["dbsf"] in explain(app)
        orders = {"dbsf": paths(app)}
        for method in ("relative", "rrf", "dbsf"):  # FUSION_METHODS order, wrapping round
            n = len(eng.calls)
            await pilot.press("f12")
            await settle(app, pilot)
            assert app.run_configs["left"].fusion == method
            assert len(eng.calls) == n + 1 and eng.calls[-1][1].fusion == method
            assert app.screen.query_one("#left-fusion", Select).value == method
            assert f"Fusion: {LABELS[method]}" == notifications(app)[-1]
            assert HEADINGS[method] in explain(app)
            assert sum(h in explain(app) for h in HEADINGS.values()) == 1
            orders.setdefault(method, paths(app))
            assert paths(app) == orders[method]  # back at dbsf: the first order again
        assert sorted(orders["relative"]) == sorted(orders["rrf"]) == sorted(orders["dbsf"])
        assert len({tuple(o) for o in orders.values()}) == 3  # each method re-ranked the same hits
        assert str(app.screen.query_one("#left-fusion-label", Label).content) == "Fusion"


async def test_select_sets_the_method_of_its_side(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "rust")
        select = app.screen.query_one("#left-fusion", Select)
        options = select.query_one(OptionList)  # the list the select opens: one option per method, no blank
        assert [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)] == [
            "DBSF",
            "relative",
            "RRF",
        ]
        assert "F12" in str(select.tooltip) and all(w in str(select.tooltip) for w in ("DBSF", "relative", "RRF"))
        select.focus()
        await pilot.press("enter")  # opens the list on the current method
        await pilot.pause()
        assert select.expanded
        await pilot.press("down", "down", "enter")  # dbsf -> relative -> rrf
        await settle(app, pilot)
        assert not select.expanded and select.value == "rrf"
        assert app.run_configs["left"].fusion == "rrf" and eng.calls[-1][1].fusion == "rrf"
        n = len(eng.calls)
        await pilot.press("enter", "up", "enter")  # rrf -> relative
        await settle(app, pilot)
        assert app.run_configs["left"].fusion == "relative"
        assert len(eng.calls) == n + 1 and eng.calls[-1][1].fusion == "relative"
        await pilot.press("f6")
        await settle(app, pilot)
        assert HEADINGS["relative"] in explain(app)
        # F12 moves the select along, and the change runs one search
        n = len(eng.calls)
        await pilot.press("f12")
        await settle(app, pilot)
        assert select.value == "rrf" and len(eng.calls) == n + 1


async def test_compare_select_changes_one_side(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await open_compare(app, pilot)
        await pilot.press("f10")
        await settle(app, pilot)
        right = app.screen.query_one("#right-fusion", Select)
        right.focus()
        await pilot.press("enter", "down", "enter")
        await settle(app, pilot)
        assert (app.run_configs["left"].fusion, app.run_configs["right"].fusion) == ("dbsf", "relative")
        assert eng.calls[-1][1].fusion == "relative" and eng.calls[-1][1].mmr  # the right side's search
        assert app.screen.query_one("#left-fusion", Select).value == "dbsf"
        assert "fusion relative" in label(app, "right") and "fusion DBSF" in label(app, "left")


async def test_fusion_changes_are_debounced(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "rust")
        n = len(eng.calls)
        app.debounce = 60.0
        await pilot.press("f12", "f12", "f12")  # dbsf -> relative -> rrf -> dbsf
        await pilot.pause()
        assert len(eng.calls) == n and app._debounce_timers["left"] is not None
        assert app.run_configs["left"].fusion == "dbsf"
        app.debounce = 0.05  # the next change restarts the timer with a short delay
        await pilot.press("f12")
        await settle(app, pilot)
        assert len(eng.calls) == n + 1 and eng.calls[-1][1].fusion == "relative"  # one search for the burst


async def test_initial_method_comes_from_the_engine_config(tmp_path):
    eng = FakeEngine(config=rrf_config())
    app = make_app(tmp_path, eng, config=Config())  # the engine resolves fusion=None from its own config
    async with app.run_test(size=SIZE) as pilot:
        assert app.run_configs["left"].fusion == app.run_configs["right"].fusion == "rrf"
        assert app.screen.query_one("#left-fusion", Select).value == "rrf"
        await search(app, pilot, "rust")
        assert eng.calls[-1][1].fusion == "rrf"
        await pilot.press("f12")  # the cycle wraps from the last method to the first
        await settle(app, pilot)
        assert app.run_configs["left"].fusion == "dbsf" and eng.calls[-1][1].fusion == "dbsf"


def fusion_commands(app) -> dict:
    return {c.title: c for c in app.get_system_commands(app.screen) if c.title.startswith("search: switch fusion")}


async def test_palette_help_and_keymap(tmp_path):
    cfg = replace(Config(), tui=TuiConfig(keymap=(("search.toggle_fusion", "ctrl+r"),)))
    eng = FakeEngine(config=cfg)
    app = make_app(tmp_path, eng, config=cfg)
    async with app.run_test(size=SIZE) as pilot:
        assert ("ctrl+r", "Next fusion method: DBSF → relative → RRF", "search.toggle_fusion") in dict(
            binding_rows(app)
        )["Global"]
        await search(app, pilot, "rust")
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        assert app.run_configs["left"].fusion == "relative" and eng.calls[-1][1].fusion == "relative"
        # one entry per method other than the current one; each of them runs its own method
        for method in ("rrf", "dbsf", "relative"):
            current = app.run_configs["left"].fusion
            commands = fusion_commands(app)
            assert set(commands) == {f"search: switch fusion to {LABELS[m]}" for m in FUSION_METHODS if m != current}
            assert all("F12" in c.help and "DBSF / relative / RRF" in c.help for c in commands.values())
            n = len(eng.calls)
            commands[f"search: switch fusion to {LABELS[method]}"].callback()
            await settle(app, pilot)
            assert app.run_configs["left"].fusion == method
            assert len(eng.calls) == n + 1 and eng.calls[-1][1].fusion == method
            assert notifications(app)[-1] == f"Fusion: {LABELS[method]}"
            assert app.screen.query_one("#left-fusion", Select).value == method
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE):
        assert ("f12", "Next fusion method: DBSF → relative → RRF", "search.toggle_fusion") in dict(binding_rows(app))[
            "Global"
        ]


async def test_golden_metrics_follow_the_method(tmp_path):
    app = make_app(tmp_path, golden=str(write_golden(tmp_path)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        outcomes = {"dbsf": app.eval_outcomes["left"]}
        assert outcomes["dbsf"].params.fusion == "dbsf" and outcomes["dbsf"].aggregate == expected_aggregate(app)
        for method in ("relative", "rrf"):
            previous = app.eval_outcomes["left"]
            await pilot.press("f12")
            await settle(app, pilot)
            outcomes[method] = app.eval_outcomes["left"]
            assert outcomes[method].params.fusion == method
            assert outcomes[method].aggregate == expected_aggregate(app)
            assert app.eval_previous["left"] == previous.aggregate
        # the fake's orders: q2's expected hits trail under relative, q1's under RRF (tokio-spawn.md last)
        mrr = {m: o.aggregate.mrr for m, o in outcomes.items()}
        assert mrr["dbsf"] > mrr["relative"] > mrr["rrf"]


async def test_compare_sides_differ_in_fusion(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await open_compare(app, pilot)
        assert "fusion" not in label(app, "left") + label(app, "right")  # both the configured method
        app.screen.query_one("#pane-right", ResultsPane).list.focus()
        await settle(app, pilot)
        for method in ("relative", "rrf"):  # the focused side only
            n = len(eng.calls)
            await pilot.press("f12")
            await settle(app, pilot)
            assert (app.run_configs["left"].fusion, app.run_configs["right"].fusion) == ("dbsf", method)
            assert len(eng.calls) == n + 1 and eng.calls[-1][1].fusion == method and eng.calls[-1][1].mmr
        assert notifications(app)[-2:] == ["Fusion: relative (right)", "Fusion: RRF (right)"]
        # at 120 columns the limit, the same on both sides, makes room for what differs
        assert label(app, "left").startswith("LEFT: fusion DBSF · MMR off")
        assert label(app, "right").startswith("RIGHT: fusion RRF · MMR λ0.70")
        assert app.screen.comparison is not None  # both sides answered: markers and summary
        # the palette names the focused side and offers its other methods
        assert set(fusion_commands(app)) == {
            "search: switch fusion to DBSF (right side)",
            "search: switch fusion to relative (right side)",
        }
        await pilot.press("ctrl+x")
        await settle(app, pilot)
        assert (app.run_configs["left"].fusion, app.run_configs["right"].fusion) == ("rrf", "dbsf")
        assert app.screen.query_one("#left-fusion", Select).value == "rrf"
        assert app.screen.query_one("#right-fusion", Select).value == "dbsf"
        assert "fusion RRF" in label(app, "left") and "fusion DBSF" in label(app, "right")
        # the presets (palette) set both sides at once: our default on the left, the other method on the right
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        # (from rrf / dbsf both sides change; then only the right side does, and only it re-runs)
        for title, right, runs in (
            ("compare: preset fusion DBSF / RRF", "rrf", ["dbsf", "rrf"]),
            ("compare: preset fusion DBSF / relative", "relative", ["relative"]),
        ):
            n = len(eng.calls)
            commands[title].callback()
            await settle(app, pilot)
            assert (app.run_configs["left"].fusion, app.run_configs["right"].fusion) == ("dbsf", right)
            assert sorted(p.fusion for _q, p in eng.calls[n:]) == runs
            assert label(app, "left").startswith("LEFT: fusion DBSF")  # the shared limit made room
            assert label(app, "right").startswith(f"RIGHT: fusion {LABELS[right]}")
            assert notifications(app)[-1] == f"Preset: {title.removeprefix('compare: preset ')}"
        assert "compare: preset fusion relative / RRF" not in commands


async def test_compare_labels_name_a_method_that_is_not_the_configured_one(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await open_compare(app, pilot)
        for method in ("relative", "rrf"):
            for side in ("left", "right"):
                app.set_run_config(side, replace(app.run_configs[side], fusion=method))
            await settle(app, pilot)
            assert all(f"fusion {LABELS[method]}" in label(app, side) for side in ("left", "right"))
