"""Search runs: each side's debounced search in a thread worker, its serial (a result older than the one
shown is dropped), the busy state, the fused results painted while the reranker runs and its progress,
the one worker-error handler, and the results pushed into the panes.

A mixin, like the app's other parts: screens and widgets read `app.responses` and `app.errors`, and
Textual delivers SearchFinished / RerankProgressed / Worker.StateChanged to the App. Mixins are plain
classes, so their handlers use `on_<message>` names (Textual's `@on` only registers on its own classes).
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual.timer import Timer
from textual.worker import Worker, WorkerState, get_current_worker

from groove_tui.engine.errors import EngineError, SearchCancelled
from groove_tui.engine.types import SearchParams, SearchResponse
from groove_tui.tui.look.render import one_line as render_one_line
from groove_tui.tui.messages import RerankProgressed, SearchFinished
from groove_tui.tui.search.runconfig import SIDES, RunConfig

if TYPE_CHECKING:
    from groove_tui.tui.shell import AppShell as _AppPart
else:
    _AppPart = object


class SearchRuns(_AppPart):
    """App mixin. Owns what each side shows (response, fused response, rerank progress, error), the
    serials requested and applied, the debounce and busy timers, and the count of running searches."""

    def _init_search_runs(self) -> None:
        self.responses: dict[str, SearchResponse | None] = {s: None for s in SIDES}
        # while a reranker runs: the fused response shown meanwhile, and how far the reranker is
        self.fused_responses: dict[str, SearchResponse | None] = {s: None for s in SIDES}
        self.rerank_progress: dict[str, tuple[int, int] | None] = {s: None for s in SIDES}
        self.shown_final: dict[str, bool] = {s: True for s in SIDES}
        self.response_queries: dict[str, str | None] = {s: None for s in SIDES}  # query text of each response
        # the settings the painted results were found with (a reranker still running counts as off)
        self.shown_configs: dict[str, RunConfig | None] = {s: None for s in SIDES}
        self.errors: dict[str, str | None] = {s: None for s in SIDES}
        self.requested: dict[str, int] = {s: 0 for s in SIDES}  # newest serial started per side
        self.applied: dict[str, int] = {s: 0 for s in SIDES}  # newest serial shown per side
        self.search_count = 0
        self._debounce_timers: dict[str, Timer | None] = {s: None for s in SIDES}
        self._busy_timers: dict[str, Timer | None] = {s: None for s in SIDES}
        self._busy_shown: set[str] = set()  # sides whose pane says a search is on its way
        self._worker_meta: dict[Worker, tuple[str, int]] = {}
        self._interactive = 0  # search threads running now (golden scoring yields to them)
        self._interactive_lock = threading.Lock()

    def schedule_search(self, side: str, delay: float | None = None) -> None:
        self.debounced(self._debounce_timers, side, delay, self.start_search)

    def search_now(self) -> None:
        for side in self.active_sides:
            self.schedule_search(side, 0)

    def start_search(self, side: str) -> None:
        self._debounce_timers[side] = None
        self.requested[side] += 1
        serial = self.requested[side]
        query = self.query_text
        if not query.strip():
            self.applied[side] = serial
            self.responses[side] = None
            self.response_queries[side] = None
            self.shown_configs[side] = None
            self.errors[side] = None
            self.workers.cancel_group(self, f"search-{side}")
            self.results_signal.publish(side)
            return
        rc = self.run_configs[side]
        params = rc.to_params(self.base_params, self.reranker_model)
        worker = self.run_worker(
            partial(self._search, side, serial, query, rc, params),
            name=f"search-{side}-{serial}",
            group=f"search-{side}",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )
        self._worker_meta[worker] = (side, serial)
        busy = self._busy_timers.get(side)
        if busy is not None:
            busy.stop()
        self._busy_timers[side] = self.set_timer(0.15, partial(self._show_busy, side, serial))

    def _show_busy(self, side: str, serial: int) -> None:
        if self.applied[side] < serial == self.requested[side]:
            from groove_tui.tui.widgets.results import ResultsPane

            self._busy_shown.add(side)
            for pane in self.screen.query(ResultsPane):
                if pane.side == side:
                    pane.set_busy(True, self.waiting_for_index())

    def refresh_waiting(self) -> None:
        """Index progress while searches wait for the index: their panes say how far along it is."""
        from groove_tui.tui.widgets.results import ResultsPane

        waiting = self.waiting_for_index()
        for side in list(self._busy_shown):
            if self.applied[side] >= self.requested[side]:
                self._busy_shown.discard(side)
                continue
            for pane in self.screen.query(ResultsPane):
                if pane.side == side:
                    pane.set_busy(True, waiting)

    def _search(self, side: str, serial: int, query: str, rc: RunConfig, params: SearchParams) -> None:
        """Worker thread: wait until the engine can search, run it, post the result with its serial."""
        worker = get_current_worker()
        if not self.wait_until_searchable(worker):
            return
        if self._engine is None:
            raise EngineError(f"the knowledge base could not be opened: {self._open_error}")
        t0 = time.perf_counter()
        with self._interactive_lock:
            self._interactive += 1
        try:
            fused = None
            if params.reranker is not None:
                # The fused order paints at once; the cross-encoder (seconds on 2 cores) replaces it.
                fused = self._engine.search(query, replace(params, reranker=None), cancel=worker.cancelled_event)
                if worker.is_cancelled:
                    return
                self.post_message(
                    SearchFinished(side, serial, query, rc, fused, (time.perf_counter() - t0) * 1000, final=False)
                )

                def progress(_stage: str, done: int, total: int) -> None:
                    self.post_message(RerankProgressed(side, serial, done, total))

                resp = self._engine.search(query, params, cancel=worker.cancelled_event, progress=progress)
            else:
                resp = self._engine.search(query, params, cancel=worker.cancelled_event)
        finally:
            with self._interactive_lock:
                self._interactive -= 1
        elapsed = (time.perf_counter() - t0) * 1000
        if not worker.is_cancelled:
            self.post_message(SearchFinished(side, serial, query, rc, resp, elapsed, fused=fused))

    def on_search_finished(self, msg: SearchFinished) -> None:
        side = msg.side
        if msg.serial < self.applied[side] or (msg.serial == self.applied[side] and self.shown_final[side]):
            return  # an older search finished after a newer one was shown
        self.applied[side] = msg.serial
        self.shown_final[side] = msg.final
        self.fused_responses[side] = msg.fused if msg.final else msg.response
        self.rerank_progress[side] = None if msg.final else (0, 0)
        if msg.final:
            self.search_count += 1
        had = self._bindings_state()
        self.responses[side] = msg.response
        self.response_queries[side] = msg.query
        if msg.final:
            self.note_update_marks(side, msg.serial, msg.response)
        self.shown_configs[side] = msg.run_config if msg.final else replace(msg.run_config, reranker=False)
        self.errors[side] = None
        self.results_signal.publish(side)
        self.header_signal.publish("settings")  # the header names the reranker state the list shows
        if self._bindings_state() != had:
            self.refresh_bindings()

    def on_rerank_progressed(self, msg: RerankProgressed) -> None:
        side = msg.side
        if msg.serial != self.applied[side] or self.shown_final[side]:
            return
        self.rerank_progress[side] = (msg.done, msg.total)
        from groove_tui.tui.widgets.results import ResultsPane

        for pane in self.screen.query(ResultsPane):
            if pane.side == side:
                pane.set_note(self.rerank_note(side))

    def rerank_note(self, side: str) -> Text | None:
        """What the reranker is doing for a side's shown results: running (with progress), or the reason
        it did not run; None when nothing needs saying."""
        progress = self.rerank_progress[side]
        if progress is not None:
            done, total = progress
            counted = f" {done}/{total} pairs" if total else ""
            return Text(f"fused order · reranking{counted}…", style="italic")
        resp = self.responses[side]
        if resp is not None and resp.rerank_skipped and resp.rerank_skipped.startswith("not reranked"):
            return Text(render_one_line(resp.rerank_skipped), style="dim")
        return None

    def pending_settings(self, side: str) -> set[str]:
        """The settings (RunConfig.describe_parts keys) a side asks for that its painted results were not
        found with yet: a label or header naming them must say they are pending. Empty while no results
        are shown (there is nothing to disagree with)."""
        shown = self.shown_configs[side]
        want = self.run_configs[side]
        if shown is None or shown == want:
            return set()
        had = dict(shown.describe_parts(fusion=True))
        return {k for k, t in want.describe_parts(fusion=True) if had.get(k) != t}

    def same_query_shown(self) -> bool:
        """Both sides show a response to the current query text (compare mode may mark them)."""
        q = self.query_text
        return all(self.responses[s] is not None and self.response_queries[s] == q for s in SIDES)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place worker errors are reported: a search's here, the index worker's by index_failed."""
        worker = event.worker
        if event.state in (WorkerState.SUCCESS, WorkerState.CANCELLED):
            self._worker_meta.pop(worker, None)
            return
        if event.state != WorkerState.ERROR:
            return
        err = worker.error
        meta = self._worker_meta.pop(worker, None)
        if meta is not None:
            side, serial = meta
            if isinstance(err, SearchCancelled) or serial <= self.applied[side] or serial != self.requested[side]:
                return
            self.applied[side] = serial
            self.shown_final[side] = True
            self.rerank_progress[side] = None
            self.responses[side] = None
            self.response_queries[side] = None
            self.shown_configs[side] = None
            if isinstance(err, ValueError):  # QueryError, FilterError: the engine's user message
                self.errors[side] = str(err) or type(err).__name__
            else:
                msg = str(err) if isinstance(err, EngineError) else f"{type(err).__name__}: {err}"
                self.errors[side] = f"Search failed: {msg}"
                self.notify(f"Search failed: {msg}", severity="error", markup=False, timeout=8)
            self.results_signal.publish(side)
            return
        if worker.group == "index":
            self.index_failed(err)

    def refresh_side(self, side: str) -> None:
        """Push a side's current response (or error) into the result pane(s) of the active screen."""
        from groove_tui.tui.screens.compare import CompareScreen
        from groove_tui.tui.widgets.results import ResultsPane

        screen = self.screen
        busy = self._busy_timers.get(side)
        if self.applied[side] >= self.requested[side]:
            self._busy_shown.discard(side)
            if busy is not None:
                busy.stop()
        if isinstance(screen, CompareScreen):
            screen.refresh_comparison()
            return
        for pane in screen.query(ResultsPane):
            if pane.side != side:
                continue
            error = self.errors[side]
            if error:
                pane.show(None)
                pane.set_message(error, error=True)
            else:
                rerank = self.rerank_markers(side)
                update = None if rerank is not None else self.shown_update_marks(side)
                if update is not None:  # what the last edit to the notes changed in this list
                    marks, left = update
                    pane.show(self.responses[side], markers=marks, gone=left, note=self.rerank_note(side))
                else:
                    pane.show(self.responses[side], markers=rerank, note=self.rerank_note(side))

    def rerank_markers(self, side: str):
        """Rank changes of a reranked response against the fused order it replaced (None otherwise)."""
        resp, fused = self.responses[side], self.fused_responses[side]
        if resp is None or fused is None or resp is fused or not resp.reranked:
            return None
        from groove_tui.tui.search.compare import markers

        return markers([h.chunk_id for h in resp.results], [h.chunk_id for h in fused.results])
