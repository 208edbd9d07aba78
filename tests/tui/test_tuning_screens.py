"""The explorer's tuning screens: the sweep chart, wins and losses, settings saved as groove.toml.

Pilot tests check behaviour against the same loops run separately; snapshots check the look at the
three breakpoint sizes."""

from __future__ import annotations

import tomllib
from dataclasses import replace

import pytest

from groove_tui.engine.evaluate.golden import load_golden
from groove_tui.engine.evaluate.winloss import wins_losses
from groove_tui.settings.config import Config, parse_config
from groove_tui.tui.golden.session import eval_params, run_golden
from groove_tui.tui.golden.tuning import side_results
from groove_tui.tui.screens.compare import CompareScreen
from groove_tui.tui.screens.save_settings import SaveSettingsScreen
from groove_tui.tui.screens.sweep import SweepScreen
from groove_tui.tui.screens.winloss import WinLossScreen

from .fakes import FakeEngine
from .helpers import SIZE, make_app, notifications, settle, wait_until
from .test_golden import KS, write_golden

SIZES = {"narrow": (60, 20), "medium": (100, 30), "wide": (160, 45)}

GOLDEN = """\
queries:
  - id: "q1"
    query: "rust"
    expected:
      - path: "rust/tokio-spawn.md"
      - path: "rust/errors.md"
  - id: "q2"
    query: "tokio"
    expected:
      - path: "python/asyncio.md"
  - id: "q3"
    query: "async"
    expected:
      - path: "rust/errors.md"
  - id: "q4"
    query: "runtime"
    expected:
      - path: "rust/tokio-spawn.md"
"""


def _expected(golden, rc, base):
    params = eval_params(rc.to_params(base, None, explain=False), KS)
    return run_golden(FakeEngine().search, golden, params, KS)


async def _sweep(pilot, widget: str = "#left-lambda"):
    app = pilot.app
    await settle(app, pilot)
    app.screen.query_one(widget).focus()
    await pilot.press("ctrl+r")
    await wait_until(
        pilot, lambda: isinstance(app.screen, SweepScreen) and app.screen.result is not None, what="the sweep"
    )
    await settle(app, pilot)
    app.clear_notifications()  # the golden file's toast names a tmp path
    await pilot.pause()
    return app.screen


async def _wins_losses(pilot):
    """Compare mode, the right side at MMR λ 0.2, then the wins-and-losses screen."""
    app = pilot.app
    await settle(app, pilot)
    await pilot.press("f5")
    await settle(app, pilot)
    app.set_run_config("right", replace(app.run_configs["left"], mmr=True, lam=0.2))
    await settle(app, pilot)
    await pilot.press("ctrl+b")
    await settle(app, pilot)
    app.clear_notifications()  # the golden file's toast names a tmp path
    await pilot.pause()
    return app.screen


async def test_a_lambda_sweep_equals_separate_runs_and_b_uses_the_best(tmp_path):
    app = make_app(tmp_path, golden=str(write_golden(tmp_path, GOLDEN)))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _sweep(pilot)
        golden = app.golden_session.golden
        result = screen.result
        assert [p.settings[0] for p in result.points] == [("mmr_lambda", i / 10) for i in range(11)]
        rc = app.run_configs["left"]
        for p in result.points:
            want = _expected(golden, replace(rc, mmr=True, lam=p.settings[0][1]), app.base_params)
            assert p.aggregate == want.aggregate, p.label()
        assert len({p.aggregate.ndcg_at_k[10] for p in result.points}) > 1  # λ matters on this set
        best = result.best("ndcg").settings[0][1]
        await pilot.press("b")
        await settle(app, pilot)
        assert app.run_configs["left"].lam == best and app.run_configs["left"].mmr
        await pilot.press("escape")
        await settle(app, pilot)
        assert not isinstance(app.screen, SweepScreen)
        # the live metrics now show the best point's scores
        assert app.eval_outcomes["left"].aggregate == result.best("ndcg").aggregate


async def test_the_sweep_follows_the_cursor_and_enter_uses_a_row(tmp_path):
    app = make_app(tmp_path, golden=str(write_golden(tmp_path, GOLDEN)))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _sweep(pilot, "#left-fusion")
        assert [p.settings[0][1] for p in screen.result.points] == ["dbsf", "relative", "rrf"]
        table = screen.query_one("#sweep-table")
        table.move_cursor(row=2)
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.run_configs["left"].fusion == "rrf"
        await pilot.press("m")  # best by recall now: the status line says so
        await settle(app, pilot)
        assert "best recall@10" in str(screen.query_one("#sweep-status").render())


async def test_a_running_sweep_cancels_on_escape_and_the_app_stays_usable(tmp_path):
    eng = FakeEngine(delays={"runtime": 0.3}, ignore_cancel=False)
    app = make_app(tmp_path, eng, golden=str(write_golden(tmp_path, GOLDEN)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen), what="the sweep screen")
        screen = app.screen
        await pilot.pause(0.1)
        assert screen.result is None  # still running: 11 × a slow query
        await pilot.press("escape")
        await settle(app, pilot)
        assert not isinstance(app.screen, SweepScreen) and screen.result is None
        calls = len(eng.calls)
        app.screen.query_one("#query").value = "tokio"
        await settle(app, pilot)
        assert app.responses["left"] is not None and len(eng.calls) > calls


async def test_without_a_golden_file_the_keys_say_what_is_missing(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+r")
        await pilot.press("ctrl+b")
        await settle(app, pilot)
        said = notifications(app)
        assert any("load one first" in n for n in said) and any("enter compare mode first" in n for n in said)


async def test_wins_and_losses_list_every_query_and_enter_runs_it_in_both_panes(tmp_path):
    app = make_app(tmp_path, golden=str(write_golden(tmp_path, GOLDEN)))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _wins_losses(pilot)
        assert isinstance(screen, WinLossScreen)
        golden = load_golden(app.golden_session.path)
        want = wins_losses(
            side_results(_expected(golden, app.run_configs["left"], app.base_params), golden),
            side_results(_expected(golden, app.run_configs["right"], app.base_params), golden),
        )
        assert screen.table_data == want
        assert want.improved + want.worsened > 0  # the sides differ on this set
        table = screen.query_one("#winloss-table")
        assert table.row_count == 4
        shown = {b.binding.key: b.binding.description for b in screen.active_bindings.values() if b.binding.show}
        assert shown.get("enter") == "Run query"  # the footer says what enter does
        first = want.rows[0].query
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, CompareScreen)
        assert app.query_text == first and app.screen.query_one("#query").value == first
        assert app.response_queries["left"] == app.response_queries["right"] == first


async def test_each_loss_says_which_stage_of_the_right_side_lost_its_note(tmp_path):
    app = make_app(tmp_path, golden=str(write_golden(tmp_path, GOLDEN)))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _wins_losses(pilot)
        worsened = [r.query for r in screen.table_data.rows if r.outcome == "worsened"]
        assert worsened
        await wait_until(pilot, lambda: all(q in screen.reasons for q in worsened), what="the losses' reasons")
        await settle(app, pilot)
        table = screen.query_one("#winloss-table")
        for r in screen.table_data.rows:
            cell = str(table.get_cell(r.query, list(table.columns)[4]))
            if r.outcome == "worsened":
                stage, _, account = cell.partition(": ")
                assert stage in ("below_page", "not_matched", "below k") and account
            else:
                assert cell == ""


async def test_settings_save_as_a_fragment_that_reads_back(tmp_path, monkeypatch):
    """No groove.toml in use: the default target is groove.toml in the user config directory (read when
    no other is found), created there, shown in full before it is written."""
    from groove_tui.settings.paths import user_config_dir

    monkeypatch.chdir(tmp_path)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        app.set_run_config("left", replace(app.run_configs["left"], mmr=True, lam=0.35, fusion="rrf", parent=True))
        await settle(app, pilot)
        await pilot.press("ctrl+f")
        await settle(app, pilot)
        assert isinstance(app.screen, SaveSettingsScreen)
        saved = user_config_dir() / "groove.toml"
        assert str(tmp_path) in str(saved)  # the isolated XDG_CONFIG_HOME
        assert f"→ {saved} (a new file)" in str(app.screen.query_one("#settings-target").content)
        await pilot.press("enter")
        await settle(app, pilot)
        back = parse_config(tomllib.loads(saved.read_text(encoding="utf-8")))
        assert (
            back.search.mmr.enabled,
            back.search.mmr.lambda_,
            back.search.fusion.method,
            back.search.parent_retriever.enabled,
        ) == (True, 0.35, "rrf", True)
        assert not (tmp_path / "groove-tui-settings.toml").exists()  # nothing in the current directory
        await pilot.press("ctrl+f")
        await settle(app, pilot)
        await pilot.press("ctrl+y")
        await settle(app, pilot)
        assert "[search.mmr]" in app.clipboard and "lambda = 0.35" in app.clipboard


async def test_settings_merge_into_the_groove_toml_in_use_keeping_its_comments(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    toml = tmp_path / "conf" / "groove.toml"
    toml.parent.mkdir()
    original = (
        '# my settings\nmodel = "bge-small-en-v1.5"  # the English one\n\n[search.mmr]\n'
        "enabled = false  # off for now\nlambda = 0.5\n"
    )
    toml.write_text(original, encoding="utf-8")
    cfg = replace(parse_config(tomllib.loads(original)), source=str(toml))
    app = make_app(tmp_path, FakeEngine(config=cfg), config=cfg)
    app.kb_path = kb
    async with app.run_test(size=SIZE) as pilot:
        app.set_run_config("left", replace(app.run_configs["left"], mmr=True, lam=0.35))
        await settle(app, pilot)
        await pilot.press("ctrl+f")
        await settle(app, pilot)
        assert f"→ {toml} (merged in" in str(app.screen.query_one("#settings-target").content)
        await pilot.press("enter")
        await settle(app, pilot)
    text = toml.read_text(encoding="utf-8")
    assert text.startswith('# my settings\nmodel = "bge-small-en-v1.5"  # the English one\n')
    assert "enabled = true  # off for now" in text and "lambda = 0.35" in text
    back = parse_config(tomllib.loads(text))
    assert back.embedding.model == cfg.embedding.model and back.search.mmr.lambda_ == 0.35
    assert list(kb.iterdir()) == []


async def test_settings_are_never_written_into_the_kb(tmp_path):
    from groove_tui.settings.paths import user_config_dir

    kb = tmp_path / "kb"
    kb.mkdir()
    inside = kb / "groove.toml"
    inside.write_text("[search.mmr]\nenabled = false\n", encoding="utf-8")
    cfg = replace(Config(), source=str(inside))
    app = make_app(tmp_path, FakeEngine(config=cfg), config=cfg)
    app.kb_path = kb
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+f")
        await settle(app, pilot)
        field = app.screen.query_one("#settings-path")
        assert field.value == str(user_config_dir() / "groove.toml")  # not the KB's groove.toml
        field.value = str(inside)
        await settle(app, pilot)
        assert "never writes into it" in str(app.screen.query_one("#settings-target").content)
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, SaveSettingsScreen)  # refused: the dialog stays
    assert inside.read_text(encoding="utf-8") == "[search.mmr]\nenabled = false\n"
    assert sorted(p.name for p in kb.iterdir()) == ["groove.toml"]


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
async def test_the_settings_dialog_fits_the_terminal(tmp_path, size):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZES[size]) as pilot:
        await pilot.press("ctrl+f")
        await settle(app, pilot)
        screen = app.screen
        dialog = screen.query_one("Vertical")
        for widget in (
            screen.query_one("#settings-path"),
            screen.query_one("#settings-target"),
            screen.query_one(".dialog-keys"),
            screen.query_one("#settings-preview"),
        ):
            region = widget.region
            assert region.height > 0 and region.y >= 0 and region.bottom <= SIZES[size][1], widget
            assert region.x >= 0 and region.right <= SIZES[size][0], widget
            assert dialog.region.contains_region(region), widget


# ---------------------------------------------------------------- snapshots


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_snapshot_sweep_at(snap_compare, tmp_path, size):
    async def run_before(pilot):
        await _sweep(pilot)

    app = make_app(tmp_path, golden=str(write_golden(tmp_path, GOLDEN)))
    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_snapshot_wins_losses_at(snap_compare, tmp_path, size):
    async def run_before(pilot):
        await _wins_losses(pilot)

    app = make_app(tmp_path, golden=str(write_golden(tmp_path, GOLDEN)))
    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", ["narrow", "medium"])
def test_snapshot_save_settings(snap_compare, tmp_path, size):
    async def run_before(pilot):
        await pilot.press("ctrl+f")
        await settle(pilot.app, pilot)

    cfg = replace(Config(), source="/srv/team/groove.toml")  # a fixed path (it need not exist)
    app = make_app(tmp_path, FakeEngine(config=cfg), config=cfg)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)
