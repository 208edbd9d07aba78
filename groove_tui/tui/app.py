"""GrooveApp: the explorer shell. Owns the engine and the index worker; the per-side RunConfigs are
search_settings.py's, the search workers and the single worker-error handler search_runs.py's.

Threading: every engine call runs in a thread worker (groups "open"/"index", "search-left",
"search-right"); results come back only as messages carrying a serial, and a result older than the newest
one shown for its side is dropped.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.signal import Signal
from textual.worker import get_current_worker
from rich.text import Text

from groove_tui.config import Config
from groove_tui.engine.types import SearchParams
from groove_tui.tui.bindings import APP_BINDINGS, KeyAvailability
from groove_tui.tui.compare_mode import CompareMode
from groove_tui.tui.export import ExportActions, editor_command
from groove_tui.tui.golden_metrics import GoldenMetrics
from groove_tui.tui.history import QueryHistory
from groove_tui.tui.search_runs import SearchRuns
from groove_tui.tui.search_settings import SearchSettings
from groove_tui.tui.messages import EngineReady, IndexFinished, IndexProgressed
from groove_tui.tui.runconfig import SIDES, RunConfig
from groove_tui.tui.render import one_line as render_one_line

_START = time.perf_counter()

EngineFactory = Callable[[], Any]
__all__ = ["GrooveApp", "run", "editor_command"]  # editor_command: its old home, kept for imports


class GrooveApp(SearchSettings, SearchRuns, CompareMode, GoldenMetrics, ExportActions, KeyAvailability, App):
    TITLE = "groove-tui"
    CSS_PATH = "groove.tcss"
    BINDING_GROUP_TITLE = "Global"
    BINDINGS = APP_BINDINGS

    def __init__(self, engine: Any | None = None, *, engine_factory: EngineFactory | None = None,
                 config: Config | None = None, kb_path: Path | None = None, history_path: Path | None = None,
                 debounce_ms: int | None = None, warmup: bool = True, user_theme_dir: Path | None = None,
                 golden: str | None = None) -> None:
        super().__init__()
        if engine is None and engine_factory is None:
            raise ValueError("GrooveApp needs an engine or an engine_factory")
        self._engine = engine
        self._engine_factory = engine_factory
        self.config: Config = config or getattr(engine, "config", None) or Config()
        self.kb_path = Path(kb_path) if kb_path is not None else Path(getattr(engine, "kb_path", "."))
        if history_path is None and kb_path is not None:
            from groove_tui.paths import kb_state_dir

            history_path = kb_state_dir(self.kb_path) / "history.json"
        self.history = QueryHistory(history_path)
        ms = self.config.tui.debounce_ms if debounce_ms is None else debounce_ms
        self.debounce = max(0, ms) / 1000.0
        self.warmup = warmup
        self.user_theme_dir = user_theme_dir
        self._init_golden_metrics(golden)

        self._init_search_settings()
        self._init_search_runs()
        self._init_compare_mode()
        self._init_key_availability()
        self._init_export_actions()
        self._engine_ready = threading.Event()
        self._searchable = threading.Event()
        self._open_error: BaseException | None = None
        self.index_progress = None
        self.index_report = None
        self.indexing = False
        self.ready_seconds: float | None = None
        self._pulled_reranker: str | None | bool = False  # False: not looked up yet
        self.own_themes: tuple[str, ...] = ("groove",)
        self.theme_errors: tuple[str, ...] = ()

        self.run_config_signal: Signal[str] = Signal(self, "run-config")
        self.results_signal: Signal[str] = Signal(self, "results")
        self.eval_signal: Signal[str] = Signal(self, "eval")
        self.header_signal: Signal[str] = Signal(self, "header")
        self.index_counts: tuple[int, int, int] | None = None  # documents, chunks, pending embeddings
        if engine is not None:
            self._adopt_engine(engine)

    # ------------------------------------------------------------ startup

    def get_theme_variable_defaults(self) -> dict[str, str]:
        from groove_tui.tui.themes import VARIABLE_DEFAULTS

        return dict(VARIABLE_DEFAULTS)

    def get_default_screen(self) -> Screen:
        from groove_tui.tui.screens.main import MainScreen

        return MainScreen()

    def on_mount(self) -> None:
        self._register_themes()
        if self.config.tui.keymap:
            self.set_keymap(dict(self.config.tui.keymap))
        if self._engine is not None:
            self._read_index_counts()
        self.run_worker(self._open_and_index, name="index", group="index", thread=True, exclusive=True,
                        exit_on_error=False)
        self.load_startup_golden()

    def on_ready(self) -> None:
        self.ready_seconds = time.perf_counter() - _START
        ready_file = os.environ.get("GROOVE_TUI_READY_FILE")
        if ready_file:  # benchmark hook (tests/tui/bench_keystroke.py): report first paint, then exit
            Path(ready_file).write_text(repr(time.time()), encoding="utf-8")
            self.exit()

    def _register_themes(self) -> None:
        from groove_tui.tui.themes import FALLBACK_THEME, load_themes, shipped_theme_dir, user_theme_dir

        loaded = load_themes(shipped_theme_dir(), self.user_theme_dir or user_theme_dir())
        if not any(t.name == "groove" for t in loaded.themes):
            self.register_theme(FALLBACK_THEME)
        for t in loaded.themes:
            self.register_theme(t)
        # ctrl+t and the palette offer these: the shipped themes and the user's files, not Textual's own
        names = [t.name for t in loaded.themes]
        self.own_themes = tuple(dict.fromkeys(["groove", *sorted(n for n in names if n.startswith("groove")),
                                               *sorted(n for n in names if not n.startswith("groove"))]))
        self.theme_errors = loaded.errors
        for err in loaded.errors:
            self.notify(f"Theme file ignored: {err}", severity="warning", markup=False, timeout=8)
        wanted = self.config.tui.theme
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            self.notify(f"Unknown theme {wanted!r}; using 'groove'", severity="warning", markup=False)
            self.theme = "groove"

    def _adopt_engine(self, engine: Any) -> None:
        self._engine = engine
        try:
            self.base_params = engine.default_params()
        except Exception:  # noqa: BLE001 - a broken config must not stop the UI; search will report it
            self.base_params = SearchParams()
        if self.base_params.reranker is not None and not self.reranker_model:
            self.base_params = replace(self.base_params, reranker=None)
        # the engine resolves fusion=None from its own config, so that is the method the sides start with
        engine_config = getattr(engine, "config", None)
        if engine_config is not None:
            self.default_fusion = engine_config.search.fusion.method
        rc = RunConfig.from_params(self.base_params, self.default_fusion)
        if not any(self.responses.values()):
            self.run_configs = {"left": rc, "right": replace(rc, mmr=not rc.mmr)}
        self._engine_ready.set()

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
            from groove_tui.engine.catalog import pulled_reranker

            self._pulled_reranker = pulled_reranker()
        return self._pulled_reranker

    def _open_and_index(self) -> None:
        """Worker: open the engine (if a factory was given), then update a stale index in two phases."""
        worker = get_current_worker()
        if self._engine is None:
            try:
                engine = self._engine_factory()
            except Exception as exc:
                self._open_error = exc
                self._engine_ready.set()
                self._searchable.set()
                raise
            self._adopt_engine(engine)
            self.post_message(EngineReady())
        eng = self._engine
        needs = bool(eng.needs_index())
        pending = 0
        if not needs:
            try:
                pending = eng.status().pending_embeddings
            except Exception:  # noqa: BLE001
                pending = 0
        if not needs:
            self._searchable.set()
        if needs or pending:
            self.indexing = True

            def progress(p) -> None:
                if p.phase in ("embed", "done"):
                    first = not self._searchable.is_set()
                    self._searchable.set()
                    if first:
                        self.call_from_thread(self.search_now)
                self.post_message(IndexProgressed(p))

            try:
                report = eng.index(progress=progress, force=False, cancel=worker.cancelled_event)
            finally:
                self._searchable.set()
                self.indexing = False
            self.post_message(IndexFinished(report))
        if self.warmup and not worker.is_cancelled:
            # load the embedding model now, in this background thread, so the first query does not wait
            warm = getattr(eng, "warm_up", None) or getattr(eng, "embedder", None)
            try:
                if callable(warm):
                    warm()
            except Exception:  # noqa: BLE001 - the first real search reports model problems
                pass

    def on_engine_ready(self, _msg: EngineReady) -> None:
        self._read_index_counts()
        for side in SIDES:
            self.run_config_signal.publish(side)
        if self.query_text.strip():
            self.search_now()

    def on_index_progressed(self, msg: IndexProgressed) -> None:
        self.index_progress = msg.progress
        self.show_index_state(None)
        self.header_signal.publish("index")

    def on_index_finished(self, msg: IndexFinished) -> None:
        self.index_report = msg.report
        self.index_progress = None
        self.show_index_state(None)
        self._read_index_counts()
        r = msg.report
        if r is not None:
            text = (f"Index updated: {r.added} added, {r.updated} updated, {r.deleted} deleted, "
                    f"{r.chunks} chunks in {r.seconds:.1f}s")
            if r.pending_embeddings:
                text += f"; {r.pending_embeddings} chunks still without vectors"
            if r.skipped:
                text += f"; {len(r.skipped)} files skipped"
            self.notify(text, markup=False)
            for note in r.notes:  # the model chosen for the KB, a hint, a language warning
                self.notify(note, markup=False, timeout=10,
                            severity="warning" if note.startswith("warning") else "information")
        if self.query_text.strip():
            self.search_now()  # now with vectors for every chunk

    def _read_index_counts(self) -> None:
        try:
            st = self._engine.status()
            self.index_counts = (st.documents, st.chunks, st.pending_embeddings)
        except Exception:  # noqa: BLE001 - the header then shows no counts; searches report real errors
            self.index_counts = None
        self.header_signal.publish("index")

    def header_text(self) -> Text:
        """KB · model · index state · reranker, for the header line."""
        from groove_tui.tui.widgets.status import PHASES

        t = Text()
        t.append(render_one_line(self.kb_path.name or str(self.kb_path)), style="bold")
        model = getattr(self._engine, "model_id", None) or self.config.embedding.model
        t.append(f" · model {render_one_line(str(model))}", style="")
        p = self.index_progress
        if p is not None and p.phase != "done":
            t.append(f"  · {PHASES.get(p.phase, p.phase).split(' (')[0].lower()} {p.done:,}/{p.total:,}", style="italic")
        elif self.index_counts is not None and self.index_counts[0] == 0 and not self.indexing:
            t.append("  · no Markdown files indexed (*.md outside excluded folders)", style="italic")
        elif self.index_counts is not None:
            docs, chunks, pending = self.index_counts
            t.append(f"  · {docs:,} docs, {chunks:,} chunks")
            if pending:
                t.append(f", {pending:,} awaiting vectors", style="italic")
        elif self._engine is None:
            t.append("  · opening…", style="italic")
        rr = self.reranker_model
        t.append(f"  · rerank {render_one_line(rr) if rr else 'none (groove-tui models pull ms-marco-l12)'}",
                 style="" if rr else "dim")
        return t

    def show_index_state(self, screen: Screen | None) -> None:
        from groove_tui.tui.widgets.status import IndexStatusBar

        screens = [screen] if screen is not None else list(self.screen_stack)
        for s in screens:
            for bar in s.query(IndexStatusBar):
                if self.index_progress is not None:
                    bar.show_progress(self.index_progress)
                else:
                    bar.finish()

    async def action_quit(self) -> None:
        self.save_judgments()  # unsaved judgments are never lost on exit
        self.exit()

    def index_failed(self, err: BaseException | None) -> None:
        """The index worker failed (reported by the one worker-error handler, in search_runs.py)."""
        self.index_progress = None
        self.show_index_state(None)
        self.notify(f"Opening/indexing the KB failed: {err}", severity="error", markup=False, timeout=15)

    # ------------------------------------------------------------ actions

    def action_help(self) -> None:
        from groove_tui.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_focus_query(self) -> None:
        try:
            self.screen.query_one("#query").focus()
        except Exception:  # noqa: BLE001 - screens without a query input
            pass

    def action_detail(self) -> None:
        from groove_tui.tui.screens.detail import DetailScreen

        row = self.focused_row
        if row is None or row.gone:
            return
        self.history.add(self.query_text)
        self.push_screen(DetailScreen(self.active_side))

    def action_cycle_theme(self) -> None:
        order = list(self.own_themes)
        i = order.index(self.theme) if self.theme in order else -1
        self.theme = order[(i + 1) % len(order)]
        self.notify(f"Theme: {self.theme}", markup=False, timeout=1.5)

    # ------------------------------------------------------------ palette

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        from groove_tui.tui.commands import groove_commands

        yield from groove_commands(self, screen)
        for cmd in super().get_system_commands(screen):
            if cmd.title == "Screenshot":  # Textual's saves to a Downloads folder that may not exist
                yield SystemCommand("Screenshot", "Save an SVG of the screen in the groove-tui data directory",
                                    lambda: self.set_timer(0.1, self.action_save_screenshot))
            elif cmd.title not in ("Theme",):
                yield cmd


def run(kb: Path, *, config: Config, index_dir: str | None, golden: str | None = None,
        explain_mismatch: Callable[[Exception], str] | None = None) -> int:
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

    app = GrooveApp(engine_factory=factory, config=config, kb_path=Path(kb), golden=golden)
    app.run()
    session = app.golden_session
    if session is not None and session.dirty:  # e.g. closed by a signal: still keep the judgments
        try:
            print(f"groove-tui: judgments saved to {session.save()}", file=sys.stderr)
        except Exception as exc:  # noqa: BLE001
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
        try:
            eng.close()
        except Exception:  # noqa: BLE001
            pass
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
