"""GrooveApp: the explorer shell. It builds the app from its parts, owns what they all share (the config,
the engine, the signals screens subscribe to) and delegates the rest:

  search/settings.py      the query and each side's RunConfig, and the keys that change them
  search/runs.py          debounced search workers, serials, progressive rerank, the worker-error handler
  search/compare_mode.py  compare mode, presets, swapping sides
  search/export.py        JSON export, $EDITOR, clipboard, screenshots
  kb/indexing.py          opening the KB, the index worker, counts and the header line
  kb/watching.py          following edits to the KB, and the marks of the re-run they trigger
  golden/metrics.py       live golden metrics and judgments
  keys/bindings.py        the global keys and when each applies; keys/commands.py is the palette
  look/themes.py          theme files, registered on mount
  screens/, widgets/      what is drawn; screens/__init__.py says how to add a screen

The packages group the modules by concern: kb/, search/, golden/, keys/ hold the App's parts and what
they alone use; look/ is what every screen and widget renders with and imports nothing of the others.

Each part is a mixin with one concern and its own state (set up by its `_init_*`), because screens,
widgets, the palette and tests reach that state as `app.<name>` and Textual sends actions and messages
to the App: a mixin keeps that surface with no forwarding layer. Parts call each other only through
`self` (an import-linter contract keeps them from importing each other or this module). As plain
classes they name handlers `on_<message>`; Textual's `@on` registers only on its own classes.

Threading: every engine call runs in a thread worker (groups "index", "search-left", "search-right",
"eval-left", "eval-right"); results come back only as messages carrying a serial, and a result older than
the newest one shown for its side is dropped.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.signal import Signal
from textual.timer import Timer

from groove_tui.settings.config import Config
from groove_tui.tui.golden.metrics import GoldenMetrics
from groove_tui.tui.kb.indexing import KbIndexing
from groove_tui.tui.kb.watching import KbWatching
from groove_tui.tui.keys.bindings import APP_BINDINGS, KeyAvailability
from groove_tui.tui.search.compare_mode import CompareMode
from groove_tui.tui.search.export import ExportActions, editor_command
from groove_tui.tui.search.history import QueryHistory
from groove_tui.tui.search.runs import SearchRuns
from groove_tui.tui.search.settings import SearchSettings

_START = time.perf_counter()

EngineFactory = Callable[[], Any]
__all__ = ["GrooveApp", "editor_command", "run"]  # editor_command: its old home, kept for imports


class GrooveApp(
    SearchSettings, SearchRuns, KbIndexing, KbWatching, CompareMode, GoldenMetrics, ExportActions, KeyAvailability, App
):
    TITLE = "groove-tui"
    CSS_PATH = "groove.tcss"
    BINDING_GROUP_TITLE = "Global"
    BINDINGS = APP_BINDINGS

    def __init__(
        self,
        engine: Any | None = None,
        *,
        engine_factory: EngineFactory | None = None,
        config: Config | None = None,
        kb_path: Path | None = None,
        history_path: Path | None = None,
        debounce_ms: int | None = None,
        warmup: bool = True,
        user_theme_dir: Path | None = None,
        golden: str | None = None,
        watch: bool | None = None,
    ) -> None:
        """`watch`: follow edits to the KB (None: `[tui] watch`, else `[watch] enabled`)."""
        super().__init__()
        if engine is None and engine_factory is None:
            raise ValueError("GrooveApp needs an engine or an engine_factory")
        self._engine = engine
        self._engine_factory = engine_factory
        self.config: Config = config or getattr(engine, "config", None) or Config()
        self.kb_path = Path(kb_path) if kb_path is not None else Path(getattr(engine, "kb_path", "."))
        if history_path is None and kb_path is not None:
            from groove_tui.settings.paths import kb_state_dir

            history_path = kb_state_dir(self.kb_path) / "history.json"
        self.history = QueryHistory(history_path)
        ms = self.config.tui.debounce_ms if debounce_ms is None else debounce_ms
        self.debounce = max(0, ms) / 1000.0
        self.warmup = warmup
        self.user_theme_dir = user_theme_dir
        self.ready_seconds: float | None = None
        self._pulled_reranker: str | bool | None = False  # False: not looked up yet
        self.own_themes: tuple[str, ...] = ("groove",)
        self.theme_errors: tuple[str, ...] = ()

        self.run_config_signal: Signal[str] = Signal(self, "run-config")
        self.results_signal: Signal[str] = Signal(self, "results")
        self.eval_signal: Signal[str] = Signal(self, "eval")
        self.header_signal: Signal[str] = Signal(self, "header")

        self._init_search_settings()
        self._init_search_runs()
        self._init_kb_indexing()
        self._init_kb_watching(watch)
        self._init_compare_mode()
        self._init_golden_metrics(golden)
        self._init_export_actions()
        self._init_key_availability()
        if engine is not None:
            self._adopt_engine(engine)

    # ------------------------------------------------------------ startup

    def get_theme_variable_defaults(self) -> dict[str, str]:
        from groove_tui.tui.look.themes import VARIABLE_DEFAULTS

        return dict(VARIABLE_DEFAULTS)

    def get_default_screen(self) -> Screen:
        from groove_tui.tui.screens.main import MainScreen

        return MainScreen()

    def on_mount(self) -> None:
        from groove_tui.tui.look.themes import register_themes

        register_themes(self)
        if self.config.tui.keymap:
            self.set_keymap(dict(self.config.tui.keymap))
        self.start_indexing()
        self.load_startup_golden()

    def on_ready(self) -> None:
        self.ready_seconds = time.perf_counter() - _START
        ready_file = os.environ.get("GROOVE_TUI_READY_FILE")
        if ready_file:  # benchmark hook (tests/tui/bench_keystroke.py): report first paint, then exit
            Path(ready_file).write_text(repr(time.time()), encoding="utf-8")
            self.exit()

    # ------------------------------------------------------------ what the parts share

    def debounced(
        self, timers: dict[str, Timer | None], side: str, delay: float | None, start: Callable[[str], None]
    ) -> None:
        """Restart a side's timer in `timers`: `start(side)` after `delay` seconds (the typing debounce
        if None), at once if 0. Searches and golden scoring both wait like this."""
        timer = timers.get(side)
        if timer is not None:
            timer.stop()
        delay = self.debounce if delay is None else delay
        if delay <= 0:
            timers[side] = None
            start(side)
        else:
            timers[side] = self.set_timer(delay, partial(start, side))

    @property
    def engine(self) -> Any:
        return self._engine

    @property
    def reranker_model(self) -> str | None:
        """The configured reranker, else a pulled one (so F4 and the compare preset work without a
        config edit once `groove-tui models pull ms-marco-l12` has run)."""
        if self.config.reranker.model:
            return self.config.reranker.model
        if self._pulled_reranker is False:
            from groove_tui.engine.models.catalog import pulled_reranker

            self._pulled_reranker = pulled_reranker()
        return self._pulled_reranker if isinstance(self._pulled_reranker, str) else None

    # ------------------------------------------------------------ app-wide actions (each part has its own)

    def action_help(self) -> None:
        from groove_tui.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_focus_query(self) -> None:
        with contextlib.suppress(Exception):
            self.screen.query_one("#query").focus()

    def action_detail(self) -> None:
        from groove_tui.tui.screens.detail import DetailScreen

        row = self.focused_row
        if row is None or row.gone:
            return
        self.history.add(self.query_text)
        self.push_screen(DetailScreen(self.active_side))

    def action_why_not(self) -> None:
        """Pick a note, then walk it through the current query's pipeline on the active side."""
        from groove_tui.tui.screens.note_picker import NotePicker
        from groove_tui.tui.screens.why import WhyScreen

        query = self.query_text
        if not query.strip():
            self.notify("Type a query first: the walk is of a note through a search", markup=False, timeout=3)
            return
        side = self.active_side if self.compare_active else "left"
        rc = self.run_configs[side]
        params = rc.to_params(self.base_params, self.reranker_model)
        settings = (f"{side} side: " if self.compare_active else "") + rc.describe(
            fusion=True, reranker_available=self.reranker_model is not None
        )
        on_page: dict[str, int] = {}
        resp = self.responses[side]
        if resp is not None and self.response_queries[side] == query:
            for rank, hit in enumerate(resp.results, 1):
                on_page.setdefault(hit.path, rank)

        def chosen(target: str | None) -> None:
            if target:
                self.push_screen(WhyScreen(target, query, params, settings))

        self.push_screen(NotePicker(on_page), chosen)

    def action_cycle_theme(self) -> None:
        order = list(self.own_themes)
        i = order.index(self.theme) if self.theme in order else -1
        self.theme = order[(i + 1) % len(order)]
        self.notify(f"Theme: {self.theme}", markup=False, timeout=1.5)

    async def action_quit(self) -> None:
        self.save_judgments()  # unsaved judgments are never lost on exit
        self.exit()

    # ------------------------------------------------------------ palette

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        from groove_tui.tui.keys.commands import groove_commands

        yield from groove_commands(self, screen)
        for cmd in super().get_system_commands(screen):
            if cmd.title == "Screenshot":  # Textual's saves to a Downloads folder that may not exist
                yield SystemCommand(
                    "Screenshot",
                    "Save an SVG of the screen in the groove-tui data directory",
                    lambda: self.set_timer(0.1, self.action_save_screenshot),
                )
            elif cmd.title not in ("Theme",):
                yield cmd


def run(
    kb: Path,
    *,
    config: Config,
    index_dir: str | None,
    golden: str | None = None,
    explain_mismatch: Callable[[Exception], str] | None = None,
    watch: bool | None = None,
) -> int:
    """Open the explorer on `kb` (the CLI's default command). Returns the exit code. `explain_mismatch`
    words a model mismatch with the user's own command-line flags."""

    def factory():
        from groove_tui.engine import Engine, ModelMismatch

        try:
            return Engine.open(kb, config=config, index_dir=index_dir)
        except ModelMismatch as exc:
            if explain_mismatch is None:
                raise
            raise ModelMismatch(explain_mismatch(exc), recorded=exc.recorded, configured=exc.configured) from None

    app = GrooveApp(engine_factory=factory, config=config, kb_path=Path(kb), golden=golden, watch=watch)
    app.run()
    session = app.golden_session
    if session is not None and session.dirty:  # e.g. closed by a signal: still keep the judgments
        try:
            print(f"groove-tui: judgments saved to {session.save()}", file=sys.stderr)
        except Exception as exc:
            print(f"groove-tui: judgments NOT saved: {exc}", file=sys.stderr)
    code = app.return_code or 0
    if _still_busy(app, QUIT_GRACE_S):
        # A model call (an embedding batch, a rerank batch) cannot be interrupted and Python would wait for
        # it at exit, leaving a blank terminal for seconds. Every batch commits alone and SQLite's journal
        # makes a cut one vanish, so the next run resumes where this one stopped.
        print("groove-tui: stopping… (the indexing resumes next time)", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    eng = app.engine
    if eng is not None:
        with contextlib.suppress(Exception):
            eng.close()
    return code


QUIT_GRACE_S = 0.5  # how long quitting waits for cancelled workers to finish their batch


def _still_busy(app: GrooveApp, seconds: float) -> bool:
    """Wait up to `seconds` for the cancelled indexing and searches to stop; True if one still runs."""
    end = time.monotonic() + seconds
    while app.indexing or app._interactive > 0:
        if time.monotonic() >= end:
            return True
        time.sleep(0.02)
    return False
