"""The demo: the explorer on the packaged handbook with its golden file shows live metrics as soon as the
index answers, and the sweep (ctrl+r) and wins/losses (F5, ctrl+b) work without writing a golden file."""

from __future__ import annotations

import dataclasses
import hashlib

from groove_tui.demo import golden_path, kb_path
from groove_tui.settings.config import Config, EmbeddingConfig
from groove_tui.tui.screens.sweep import SweepScreen
from groove_tui.tui.screens.winloss import WinLossScreen
from groove_tui.tui.widgets.metrics import MetricsBar

from .helpers import SIZE, TestApp, settle, wait_until


def demo_app(tmp_path) -> TestApp:
    """As `groove-tui demo` builds it (commands.demo.run → tui.app.run), with the hashing embedder."""
    from groove_tui.engine import Engine

    cfg = dataclasses.replace(Config(), embedding=EmbeddingConfig(model="hashing"))

    def factory():
        return Engine.open(kb_path(), config=cfg, index_dir=tmp_path / "idx")

    return TestApp(
        engine_factory=factory,
        config=cfg,
        kb_path=kb_path(),
        golden=str(golden_path()),
        history_path=tmp_path / "h.json",
        debounce_ms=0,
        warmup=False,
        user_theme_dir=tmp_path / "none",
    )


async def test_the_demo_opens_with_golden_metrics_and_sweeps_and_wins_losses_work_at_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where judgments of a golden file inside a KB would go
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in kb_path().rglob("*") if p.is_file()}
    app = demo_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        bar = app.screen.query_one(MetricsBar)
        assert bar.has_class("-active") and "golden-demo.yml · 36 q" in bar.plain  # on first paint
        await wait_until(pilot, lambda: app.eval_outcomes["left"] is not None, what="the golden metrics")
        await settle(app, pilot)
        agg = app.eval_outcomes["left"].aggregate
        assert agg.query_count == 36 and 0 < agg.mrr <= 1
        assert f"{agg.mrr:.3f}" in bar.plain and "MRR" in bar.plain

        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen), what="the sweep chart")
        await settle(app, pilot)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, SweepScreen), what="back from the sweep")

        await pilot.press("f5")
        await settle(app, pilot)
        await pilot.press("ctrl+b")
        await wait_until(pilot, lambda: isinstance(app.screen, WinLossScreen), what="wins and losses")
        await settle(app, pilot)
        assert not app.unexpected_failures
    after = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in kb_path().rglob("*") if p.is_file()}
    assert after == before and not list(tmp_path.glob("*.yml"))  # nothing written, nothing to save
