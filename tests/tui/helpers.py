from __future__ import annotations

from pathlib import Path

from textual import on
from textual.worker import Worker, WorkerState

from groove_tui.engine.errors import EngineError
from groove_tui.settings.config import Config
from groove_tui.tui import app as app_module
from groove_tui.tui.app import GrooveApp

from .fakes import FakeEngine

SIZE = (120, 36)


class TestApp(GrooveApp):
    """GrooveApp that records worker failures the app does not expect: the app shows EngineErrors and
    ValueErrors (bad queries, missing KBs) as messages, but anything else is a bug a test must see."""

    __test__ = False  # not a pytest class
    CSS_PATH = Path(app_module.__file__).with_name(GrooveApp.CSS_PATH)  # relative paths follow the subclass

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.unexpected_failures: list[BaseException] = []
        self.notified: list[str] = []  # every toast, even one that already timed out on a slow machine

    def notify(self, message, *args, **kw) -> None:
        self.notified.append(str(message))
        super().notify(message, *args, **kw)

    @on(Worker.StateChanged)
    def _record_failure(self, event: Worker.StateChanged) -> None:
        err = event.worker.error
        if event.state == WorkerState.ERROR and not isinstance(err, (EngineError, ValueError)):
            self.unexpected_failures.append(err)


def make_app(
    tmp_path: Path, engine: FakeEngine | None = None, *, debounce_ms: int = 0, config: Config | None = None, **kw
) -> GrooveApp:
    engine = engine or FakeEngine()
    kw.setdefault("user_theme_dir", tmp_path / "no-user-themes")
    return TestApp(
        engine,
        config=config or engine.config,
        kb_path=Path("/kb"),
        history_path=tmp_path / "state" / "history.json",
        debounce_ms=debounce_ms,
        warmup=False,
        **kw,
    )


def _quiet(app: GrooveApp) -> bool:
    """No worker running, no debounce pending and no message waiting anywhere in the DOM."""
    if any(w.state.name in ("PENDING", "RUNNING") for w in app.workers if w.group != "watch"):
        return False
    if any(t is not None for t in (*app._debounce_timers.values(), *app._eval_timers.values())):
        return False
    pumps = [app, *(n for screen in app.screen_stack for n in screen.walk_children(with_self=True))]
    return all(p._message_queue.empty() for p in pumps)


async def settle(app: GrooveApp, pilot, *, max_rounds: int = 200, allow_failures: bool = False) -> None:
    """Let timers fire, workers finish and their messages be handled: waits on state (workers, message
    queues), not on wall time, so it holds on a loaded machine. Two quiet checks in a row end it.

    A worker that failed with an error the app does not expect (not an EngineError or ValueError, which
    it shows as messages) fails the test, unless `allow_failures=True`; a superseded search is fine."""
    from textual.worker import WorkerCancelled, WorkerFailed

    quiet = 0
    for _ in range(max_rounds):
        try:
            # the KB watcher runs as long as the app: everything else must finish (an empty list would
            # mean every worker to wait_for_complete)
            others = [w for w in app.workers if w.group != "watch"]
            if others:
                await app.workers.wait_for_complete(others)
        except WorkerCancelled:
            pass  # a superseded search; the loop waits on the rest
        except WorkerFailed:
            pass  # recorded below when the app did not expect it
        await pilot.pause()
        failures = getattr(app, "unexpected_failures", [])
        if failures:
            first = failures[0]
            failures.clear()  # reported once
            if not allow_failures:
                raise AssertionError(f"a worker failed: {first!r}") from first
        quiet = quiet + 1 if _quiet(app) else 0
        if quiet >= 2:
            return
    raise AssertionError("the app did not settle")


async def wait_until(pilot, condition, *, timeout: float = 30.0, what: str = "condition") -> None:
    """Poll `condition()` between short pauses; generous timeout so a loaded machine only makes it slower."""
    import time

    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


async def search(app: GrooveApp, pilot, query: str) -> None:
    app.screen.query_one("#query").value = query
    await settle(app, pilot)


def notifications(app: GrooveApp) -> list[str]:
    """Every notification the app raised, in order (a toast's timeout does not drop it here)."""
    recorded = getattr(app, "notified", None)
    return list(recorded) if recorded is not None else [n.message for n in app._notifications]


def paths(app: GrooveApp, side: str = "left") -> list[str]:
    resp = app.responses[side]
    return [h.path for h in resp.results] if resp else []


def screen_lines(app: GrooveApp) -> list[str]:
    """The screen as the terminal shows it, one string per row (what a snapshot draws, as text)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]
