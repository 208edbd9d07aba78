"""What the explorer's parts, screens and widgets may use of the App, for the type checker only.

GrooveApp is built from mixins (search_settings, search_runs, indexing, compare_mode, golden_metrics,
export, bindings) that reach each other through `self`, and screens and widgets reach it as `self.app`.
`AppShell` names that shared surface — the state each part owns and the methods the others call — so
each use is checked; GrooveApp provides all of it. Nothing imports this module at run time: the parts
subclass it only under TYPE_CHECKING, screens and widgets type `app` with `getters.app(AppShell)`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import App
from textual.screen import Screen
from textual.signal import Signal
from textual.timer import Timer
from textual.worker import Worker

from groove_tui.engine.types import IndexProgress, SearchParams, SearchResponse
from groove_tui.settings.config import Config, FusionMethod
from groove_tui.tui.golden.session import GoldenSession
from groove_tui.tui.search.compare import Row
from groove_tui.tui.search.history import QueryHistory
from groove_tui.tui.search.runconfig import RunConfig


class AppShell(App[None]):
    """The App's shared state and the methods its parts call on each other (see the module docstring)."""

    # the App itself (app.py)
    config: Config
    kb_path: Path
    history: QueryHistory
    warmup: bool
    _engine: Any
    _engine_factory: Callable[[], Any] | None
    run_config_signal: Signal[str]
    results_signal: Signal[str]
    eval_signal: Signal[str]
    header_signal: Signal[str]
    # search/settings.py
    query_text: str
    base_params: SearchParams
    default_fusion: FusionMethod
    run_configs: dict[str, RunConfig]
    # search/runs.py
    responses: dict[str, SearchResponse | None]
    errors: dict[str, str | None]
    response_queries: dict[str, str | None]
    requested: dict[str, int]
    applied: dict[str, int]
    _debounce_timers: dict[str, Timer | None]
    # kb/indexing.py
    index_progress: IndexProgress | None
    _open_error: BaseException | None
    # search/compare_mode.py, keys/bindings.py
    compare_active: bool
    active_side: str
    focused_rows: dict[str, Row | None]
    # golden/metrics.py
    golden_session: GoldenSession | None
    eval_outcomes: dict[str, Any]
    eval_previous: dict[str, Any]
    eval_progress: dict[str, tuple[int, int] | None]
    _interactive: int  # search threads running now
    # kb/watching.py
    watch_note: tuple[str, str] | None
    queued_edits: int

    @abstractmethod
    def _bindings_state(self) -> tuple[Any, ...]: ...
    @abstractmethod
    def action_detail(self) -> None: ...
    @property
    @abstractmethod
    def active_sides(self) -> tuple[str, ...]: ...
    @abstractmethod
    def debounced(
        self, timers: dict[str, Timer | None], side: str, delay: float | None, start: Callable[[str], None]
    ) -> None: ...
    @property
    @abstractmethod
    def engine(self) -> Any: ...
    @abstractmethod
    def focus_row(self, side: str, row: Row | None, *, activate: bool = True) -> None: ...
    @property
    @abstractmethod
    def focused_row(self) -> Row | None: ...
    @abstractmethod
    def header_text(self, width: int | None = None) -> Text: ...
    @abstractmethod
    def index_failed(self, err: BaseException | None) -> None: ...
    @abstractmethod
    def _read_index_counts(self) -> None: ...
    @abstractmethod
    def start_watching(self) -> None: ...
    @abstractmethod
    def note_update_marks(self, side: str, serial: int, response: SearchResponse) -> None: ...
    @abstractmethod
    def shown_update_marks(self, side: str) -> Any: ...
    @abstractmethod
    def leave_compare(self) -> None: ...
    @abstractmethod
    def pending_settings(self, side: str) -> set[str]: ...
    @abstractmethod
    def query_metrics(self, side: str) -> Any: ...
    @abstractmethod
    def refresh_side(self, side: str) -> None: ...
    @abstractmethod
    def refresh_waiting(self) -> None: ...
    @abstractmethod
    def rerank_note(self, side: str) -> Text | None: ...
    @property
    @abstractmethod
    def reranker_model(self) -> str | None: ...
    @abstractmethod
    def rescore_golden(self) -> None: ...
    @abstractmethod
    def same_query_shown(self) -> bool: ...
    @abstractmethod
    def schedule_eval(self, side: str, delay: float | None = None) -> None: ...
    @abstractmethod
    def schedule_search(self, side: str, delay: float | None = None) -> None: ...
    @abstractmethod
    def search_now(self) -> None: ...
    @abstractmethod
    def set_query(self, query: str) -> None: ...
    @abstractmethod
    def set_run_config(self, side: str, rc: RunConfig, *, sync: bool = True) -> None: ...
    @abstractmethod
    def show_index_state(self, screen: Screen | None) -> None: ...
    @abstractmethod
    def wait_until_searchable(self, worker: Worker[Any]) -> bool: ...
    @abstractmethod
    def waiting_for_index(self) -> str | None: ...
