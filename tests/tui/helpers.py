from __future__ import annotations

from pathlib import Path

from groove_tui.config import Config
from groove_tui.tui.app import GrooveApp

from .fakes import FakeEngine

SIZE = (120, 36)


def make_app(tmp_path: Path, engine: FakeEngine | None = None, *, debounce_ms: int = 0,
             config: Config | None = None, **kw) -> GrooveApp:
    engine = engine or FakeEngine()
    return GrooveApp(engine, config=config or engine.config, kb_path=Path("/kb"),
                     history_path=tmp_path / "state" / "history.json", debounce_ms=debounce_ms, warmup=False,
                     user_theme_dir=tmp_path / "no-user-themes", **kw)


async def settle(app: GrooveApp, pilot) -> None:
    """Let timers fire, workers finish and their messages be handled."""
    for _ in range(3):
        await pilot.pause()
        await app.workers.wait_for_complete()
    await pilot.pause()


async def search(app: GrooveApp, pilot, query: str) -> None:
    app.screen.query_one("#query").value = query
    await settle(app, pilot)


def notifications(app: GrooveApp) -> list[str]:
    return [n.message for n in app._notifications]


def paths(app: GrooveApp, side: str = "left") -> list[str]:
    resp = app.responses[side]
    return [h.path for h in resp.results] if resp else []
