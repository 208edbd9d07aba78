"""Golden files in the explorer: loading, live metrics as settings move, judging and saving, compare mode."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from groove_tui.engine.evaluate.golden import load_golden
from groove_tui.engine.evaluate.metrics import normalise_k_values
from groove_tui.settings.config import Config, EvalConfig
from groove_tui.tui.golden.session import DEFAULT_JUDGMENTS_FILE, eval_params, run_golden
from groove_tui.tui.screens.compare import CompareScreen
from groove_tui.tui.widgets.metrics import MetricsBar
from groove_tui.tui.widgets.results import ResultsPane

from .fakes import FakeEngine
from .helpers import SIZE, make_app, notifications, search, settle

GOLDEN = """\
# a tiny golden set for the FakeEngine
queries:
  - id: "q1"
    query: "rust"
    expected:
      - path: "rust/tokio-spawn.md"
  - id: "q2"
    query: "tokio"
    expected:
      - path: "python/asyncio.md"
      - path: "rust/async.md"
        heading: "Tokio runtime"
"""

KS = normalise_k_values(Config().eval.k_values)


def write_golden(tmp_path: Path, text: str = GOLDEN) -> Path:
    p = tmp_path / "golden.yml"
    p.write_text(text, encoding="utf-8")
    return p


def expected_aggregate(app, side: str = "left"):
    """What the explorer must show: the same loop over a fresh FakeEngine, eval semantics."""
    params = eval_params(app.run_configs[side].to_params(app.base_params, None, explain=False), KS)
    return run_golden(FakeEngine().search, app.golden_session.golden, params, KS).aggregate


def bar_text(app) -> str:
    return app.screen.query_one(MetricsBar).plain


async def test_golden_file_loads_and_scores(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng, golden=str(write_golden(tmp_path)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.golden_session is not None and len(app.golden_session.golden.queries) == 2
        outcome = app.eval_outcomes["left"]
        assert outcome is not None
        assert outcome.aggregate == expected_aggregate(app)
        assert outcome.params.min_quality == 0.0 and outcome.params.limit == max(KS)
        assert outcome.params.path_globs == () and not outcome.params.explain
        bar = app.screen.query_one(MetricsBar)
        assert bar.display and bar.has_class("-active")
        text = bar_text(app)
        assert "golden.yml · 2 q" in text and "R@1" in text and "MRR" in text and f"nDCG@{max(KS)}" in text
        assert any("2 queries" in n for n in notifications(app))
        # the current query's own metrics and ✓ on its expected hits
        await search(app, pilot, "tokio")
        text = bar_text(app)
        assert "query · 2 expected" in text
        pane = app.screen.query_one("#pane-left", ResultsPane)
        prompts = {r.hit.path: pane.list.get_option_at_index(i).prompt.plain for i, r in enumerate(pane.rows)}
        assert "✓" in prompts["python/asyncio.md"] and "✓" in prompts["rust/async.md"]
        assert "✓" not in prompts["rust/tokio-spawn.md"]


async def test_eval_filters_are_off_even_when_the_ui_filters(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng, golden=str(write_golden(tmp_path)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        before = app.eval_outcomes["left"].aggregate
        app.set_run_config("left", replace(app.run_configs["left"], path_globs=("rust/*.md",), limit=2))
        await settle(app, pilot)
        assert app.eval_outcomes["left"].aggregate == before  # same eval params: globs/limit do not apply


async def test_metric_moves_with_lambda(tmp_path):
    eng = FakeEngine()
    app = make_app(tmp_path, eng, golden=str(write_golden(tmp_path)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.set_run_config("left", replace(app.run_configs["left"], mmr=True, lam=0.9))
        await settle(app, pilot)
        high = app.eval_outcomes["left"].aggregate
        assert high == expected_aggregate(app)
        app.screen.query_one("#left-lambda").value = 0.2  # one slider move (a drag or a debounced burst)
        await settle(app, pilot)
        assert app.run_configs["left"].lam == 0.2
        low = app.eval_outcomes["left"].aggregate
        assert low == expected_aggregate(app)
        assert low.mrr < high.mrr  # tokio-spawn.md (3× "rust") sinks as λ weights diversity
        assert app.eval_previous["left"] is not None
        text = bar_text(app)
        assert f"{low.mrr:.3f} ↓{high.mrr - low.mrr:.3f}".replace("↓0.", "↓.") in text


async def test_judging_creates_saves_and_reloads_a_groove_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tokio")
        assert app.screen.query_one(MetricsBar).display is False  # no golden set yet
        pane = app.screen.query_one("#pane-left", ResultsPane)
        pane.list.focus()
        first = pane.highlighted_row.hit
        await pilot.press("alt+2")
        await settle(app, pilot)
        target = tmp_path / DEFAULT_JUDGMENTS_FILE
        assert any(str(target) in n for n in notifications(app))
        assert app.golden_session.dirty and app.golden_session.path == target
        assert pane.list.get_option_at_index(0).prompt.plain.split()[2] == "✓2"
        await pilot.press("down", "alt+0")
        await settle(app, pilot)
        second = pane.highlighted_row.hit
        assert "✗" in pane.list.get_option_at_index(1).prompt.plain
        assert f"{DEFAULT_JUDGMENTS_FILE}* · 1 q" in bar_text(app)  # * = unsaved
        assert app.eval_outcomes["left"] is not None  # the new set is scored too
        await pilot.press("ctrl+g")
        await settle(app, pilot)
        assert not app.golden_session.dirty
        assert any(f"Judgments saved to {target}" in n for n in notifications(app))
    golden = load_golden(target, strict=True)  # exactly what groove accepts
    (q,) = golden.queries
    assert q.query == "tokio"
    assert [(e.path, e.grade) for e in q.expected] == [(first.path, 2)]
    assert [p for p, _h in q.judged_irrelevant] == [second.path]
    assert "grade:" not in target.read_text().replace("# grade:", "")  # grades only in comments


async def test_loaded_golden_saves_back_on_quit(tmp_path):
    path = write_golden(tmp_path)
    app = make_app(tmp_path, golden=str(path))
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "rust")
        pane = app.screen.query_one("#pane-left", ResultsPane)
        pane.list.focus()
        await pilot.press("down", "alt+3")  # rank 2 for "rust" is notes/markup.md
        await settle(app, pilot)
        judged = pane.highlighted_row.hit
        assert app.golden_session.dirty
        await pilot.press("ctrl+q")
        await pilot.pause()
    golden = load_golden(path, strict=True)
    q = golden.find("rust")
    assert [(e.path, e.grade) for e in q.expected] == [("rust/tokio-spawn.md", None), (judged.path, 3)]
    assert golden.find("tokio").expected[1].heading == "Tokio runtime"  # untouched entries survive


async def test_palette_loads_a_golden_file(tmp_path):
    path = write_golden(tmp_path)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "eval: load golden file…" in titles and "eval: save judgments" not in titles
        app.action_load_golden()
        await settle(app, pilot)
        app.screen.query_one("#path-input").value = str(path)
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.golden_session is not None and app.golden_session.loaded_from == path
        assert app.eval_outcomes["left"] is not None
        assert not app.load_golden(tmp_path / "missing.yml")
        await settle(app, pilot)
        assert any("Golden file not loaded" in n for n in notifications(app))


async def test_compare_mode_shows_both_sides_metrics(tmp_path):
    cfg = replace(Config(), eval=EvalConfig(k_values=(1, 10)))
    eng = FakeEngine(config=cfg)
    app = make_app(tmp_path, eng, config=cfg, golden=str(write_golden(tmp_path)))
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "rust")
        app.action_preset("lambda")  # palette "compare: preset MMR λ low 0.3 / high 0.9" opens compare mode
        await settle(app, pilot)
        assert isinstance(app.screen, CompareScreen)
        left, right = app.eval_outcomes["left"], app.eval_outcomes["right"]
        assert left is not None and right is not None
        assert left.params.mmr_lambda == 0.3 and right.params.mmr_lambda == 0.9
        assert left.aggregate.mrr < right.aggregate.mrr
        lines = [line.split() for line in bar_text(app).splitlines()]
        assert lines[0][-5:] == ["R@1", "R@10", "MRR", "nDCG@1", "nDCG@10"]
        assert lines[1][0] == "left" and lines[2][0] == "right"
        assert f"{right.aggregate.mrr:.3f}" in lines[2] and f"{left.aggregate.mrr:.3f}" in lines[1]
        assert lines[3][:2] == ["left", "query"] and lines[4][:2] == ["right", "query"]
        assert lines[4][2:] == ["1.000"] * 5  # tokio-spawn.md is first on the λ 0.9 side


def test_run_golden_cancels_between_queries_and_paces():
    import threading

    from groove_tui.engine.evaluate.golden import parse_golden

    golden = parse_golden(GOLDEN)
    cancel = threading.Event()
    seen = []

    def search(q, params, cancel=None):
        seen.append(q)
        cancel.set()  # the user moved the slider again during the first query
        return FakeEngine().search(q, params)

    paced = []
    out = run_golden(
        search, golden, eval_params(FakeEngine().default_params(), KS), KS, cancel=cancel, pace=lambda: paced.append(1)
    )
    assert out is None and seen == ["rust"] and paced == [1]


def test_session_labels_and_kb_guard(tmp_path, monkeypatch):
    from groove_tui.tui.golden.session import GoldenSession

    kb = tmp_path / "kb"
    kb.mkdir()
    inside = write_golden(kb)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("groove_tui.settings.paths.user_data_dir", lambda: tmp_path / "data")
    from groove_tui.settings.paths import kb_state_dir

    s = GoldenSession.load(inside, (1, 10), kb_path=kb)
    state = kb_state_dir(kb)
    assert state.is_relative_to(tmp_path / "data")
    # never written into the KB, nor into the directory the explorer was started from
    assert s.path == state / "golden.yml" and s.loaded_from == inside
    assert s.label_of("tokio", "rust/async.md", "tokio runtime ") == "✓"  # heading: lower-case + trim
    assert s.label_of("tokio", "rust/async.md", "Other") is None
    assert s.label_of("tokio", "python/asyncio.md", "anything") == "✓"  # no heading: whole document
    s.judge("tokio", "python/asyncio.md", "asyncio", 3)
    s.judge("tokio", "rust/errors.md", None, 0)
    assert s.label_of("tokio", "python/asyncio.md", "asyncio") == "✓3"
    assert s.label_of("tokio", "rust/errors.md", None) == "✗"
    assert s.save() == state / "golden.yml" and inside.read_text() == GOLDEN
    assert not (tmp_path / "golden.yml").exists()


HAND_WRITTEN = """\
# Golden set for the team notes
# maintained by hand: keep the comments
defaults: {limit: 10, rerank: false}
queries:
  # tokio questions first
  - id: tokio-spawn
    query: "tokio spawn"   # the classic
    tags: [rust, async]
    expected:
      - path: rust/async.md
        heading: 'Tokio runtime'
      - path: "rust/tokio-spawn.md"  # grade: 2
  - id: 'borrow'
    query: borrowing rules
    expected:
      - path: rust/ownership.md
    # judged-0: {"path": "notes/markup.md", "heading": null}

  - id: 東京
    query: 東京の設定
    expected: []
"""


def test_saving_judgments_edits_the_users_golden_file_in_place(tmp_path):
    """Comments, order, quoting and flow style stay byte for byte; only the judged lines change."""
    from groove_tui.tui.golden.session import GoldenSession

    path = write_golden(tmp_path, HAND_WRITTEN)
    s = GoldenSession.load(path, (1, 10))
    assert s.save() == path and path.read_text(encoding="utf-8") == HAND_WRITTEN  # nothing judged: no change
    s.judge("tokio spawn", "rust/tokio-spawn.md", None, 3)  # re-graded: its comment changes
    s.judge("tokio spawn", "rust/errors.md", "Error handling", 2)  # a new entry
    s.judge("borrowing rules", "notes/markup.md", None, 1)  # judged 0 before: now expected
    s.judge("borrowing rules", "rust/async.md", None, 0)  # a new grade-0 judgment
    s.judge("東京の設定", "ja/設定.md", "東京の設定", 3)
    s.save()
    assert (
        path.read_text(encoding="utf-8")
        == """\
# Golden set for the team notes
# maintained by hand: keep the comments
defaults: {limit: 10, rerank: false}
queries:
  # tokio questions first
  - id: tokio-spawn
    query: "tokio spawn"   # the classic
    tags: [rust, async]
    expected:
      - path: rust/async.md
        heading: 'Tokio runtime'
      - path: "rust/tokio-spawn.md"  # grade: 3
      - path: "rust/errors.md"  # grade: 2
        heading: "Error handling"
  - id: 'borrow'
    query: borrowing rules
    # judged-0: {"path": "rust/async.md", "heading": null}
    expected:
      - path: rust/ownership.md
      - path: "notes/markup.md"  # grade: 1

  - id: 東京
    query: 東京の設定
    expected:
      - path: "ja/設定.md"  # grade: 3
        heading: "東京の設定"
"""
    )
    back = load_golden(path, strict=True)  # still a groove golden file
    assert [(e.path, e.grade) for e in back.find("borrowing rules").expected] == [
        ("rust/ownership.md", None),
        ("notes/markup.md", 1),
    ]
    assert back.find("borrowing rules").judged_irrelevant == (("rust/async.md", None),)
    s.judge("a new query", "rust/async.md", None, 1)  # a query the file does not have: appended
    s.save()
    assert path.read_text(encoding="utf-8").endswith(
        '  - id: "a new query"\n    query: "a new query"\n    expected:\n      - path: "rust/async.md"  # grade: 1\n'
    )


def test_a_new_judgments_file_is_written_in_groove_format(tmp_path):
    from groove_tui.engine.evaluate.golden import dump_golden
    from groove_tui.tui.golden.session import GoldenSession

    s = GoldenSession.new((1, 10), tmp_path)
    s.judge("rust", "rust/async.md", "Tokio runtime", 2)
    path = s.save()
    assert path.read_text(encoding="utf-8") == dump_golden(s.golden)
