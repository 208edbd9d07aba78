"""Live golden metrics and judgments: each side's recall@k / MRR / nDCG@k, rescored in a worker whenever
its settings or a judgment change, and the 0-3 grades given to hits (saved on ctrl+g and on exit). The
session and the scoring loop are session.py's; this is the App's part of it.

A mixin, like the app's other parts: the metrics bar and result panes read `app.eval_outcomes` and
`app.golden_session`, and Textual sends the eval messages and `action_judge` to the App.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.timer import Timer
from textual.worker import get_current_worker

from groove_tui.engine.errors import SearchCancelled
from groove_tui.engine.types import SearchParams
from groove_tui.tui.messages import EvalFinished, EvalProgressed
from groove_tui.tui.search.runconfig import SIDES

if TYPE_CHECKING:
    from groove_tui.tui.shell import AppShell as _AppPart
else:
    _AppPart = object


class GoldenMetrics(_AppPart):
    """App mixin. Owns the golden session, each side's outcome, progress and serial, and the debounce
    timers of the rescoring."""

    def _init_golden_metrics(self, golden: str | None) -> None:
        self.golden_arg = golden  # a path from --golden (or [eval] golden), loaded on mount
        self.golden_session = None  # tui.golden.GoldenSession once loaded or once judging starts
        self.eval_outcomes: dict[str, Any] = {s: None for s in SIDES}  # tui.golden.EvalOutcome per side
        self.eval_previous: dict[str, Any] = {s: None for s in SIDES}  # the Aggregate shown before it
        self.eval_progress: dict[str, tuple[int, int] | None] = {s: None for s in SIDES}
        self.eval_requested: dict[str, int] = {s: 0 for s in SIDES}
        self._eval_timers: dict[str, Timer | None] = {s: None for s in SIDES}

    def load_startup_golden(self) -> None:
        """On mount: the golden file given on the command line, else the configured one."""
        golden = self.golden_arg or self._configured_golden()
        if golden:
            self.load_golden(golden)

    def _configured_golden(self) -> str | None:
        configured = self.config.eval.golden
        if not configured:
            return None
        p = Path(configured).expanduser()
        if not p.is_absolute() and self.config.source:
            p = Path(self.config.source).expanduser().resolve().parent / p
        return str(p)

    def load_golden(self, path: str | os.PathLike[str]) -> bool:
        """Load a golden file (replacing the current set; unsaved judgments are saved first) and score it."""
        from groove_tui.engine.evaluate.golden import GoldenError
        from groove_tui.tui.golden.session import GoldenSession

        if self.golden_session is not None and self.golden_session.dirty:
            self.save_judgments()
        try:
            session = GoldenSession.load(
                path, self.config.eval.k_values, kb_path=self.kb_path, validate_query=_query_validator()
            )
        except (GoldenError, OSError) as exc:
            self.notify(f"Golden file not loaded: {exc}", severity="error", markup=False, timeout=10)
            return False
        self._set_golden_session(session)
        note = f"Golden file {session.loaded_from}: {len(session.golden.queries)} queries"
        if session.path != session.loaded_from:
            note += f" (inside the KB: judgments will save to {session.path})"
        self.notify(note, markup=False, timeout=4)
        return True

    def _set_golden_session(self, session) -> None:
        self.golden_session = session
        for side in SIDES:
            self.workers.cancel_group(self, f"eval-{side}")
            self.eval_outcomes[side] = None
            self.eval_previous[side] = None
            self.eval_progress[side] = None
        for side in self.active_sides:
            self.schedule_eval(side, 0)
        self._refresh_judgment_views()

    def rescore_golden(self) -> None:
        """The index changed under the metrics (an indexing run finished): score the set again with the
        same settings; the old scores stay on screen, dimmed, until the new ones arrive."""
        if self.golden_session is None:
            return
        for side in SIDES:
            old = self.eval_outcomes[side]
            if old is not None:
                self.eval_outcomes[side] = replace(old, params=None)  # its cached hits are out of date
        for side in self.active_sides:
            self.schedule_eval(side, 0)

    def schedule_eval(self, side: str, delay: float | None = None) -> None:
        """(Re)score the golden set for a side's current settings, debounced like searches."""
        if self.golden_session is None:
            return
        self.debounced(self._eval_timers, side, delay, self.start_eval)

    def start_eval(self, side: str) -> None:
        from groove_tui.tui.golden.session import eval_params, rescore

        self._eval_timers[side] = None
        session = self.golden_session
        if session is None:
            return
        self.eval_requested[side] += 1
        serial = self.eval_requested[side]
        params = eval_params(
            self.run_configs[side].to_params(self.base_params, self.reranker_model, explain=False), session.k_values
        )
        old = self.eval_outcomes[side]
        cache = old.hits if old is not None and old.params == params else None
        if old is not None and old.params == params:
            again = rescore(old, session.golden, session.k_values)
            if again is not None:  # a judgment: cached hits cover every query, no search needed
                self.workers.cancel_group(self, f"eval-{side}")
                self._apply_eval(side, again)
                return
        self.eval_progress[side] = (0, len(session.golden.queries))
        self.run_worker(
            partial(self._eval, side, serial, session.golden, params, session.k_values, cache),
            name=f"eval-{side}-{serial}",
            group=f"eval-{side}",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )
        self.eval_signal.publish(side)

    def _eval(self, side: str, serial: int, golden, params: SearchParams, ks, cache) -> None:
        """Worker thread: run the golden queries (cancellable between queries), post the outcome."""
        from groove_tui.tui.golden.session import run_golden

        worker = get_current_worker()
        if not self.wait_until_searchable(worker) or self._engine is None:
            return
        step = max(1, len(golden.queries) // 50)

        def progress(done: int, total: int) -> None:
            if done % step == 0 and not worker.is_cancelled:
                self.post_message(EvalProgressed(side, serial, done, total))

        def pace() -> None:  # typing comes first: wait (bounded) while an interactive search runs
            deadline = time.monotonic() + 2.0
            while self._interactive and time.monotonic() < deadline and not worker.is_cancelled:
                time.sleep(0.005)

        try:
            outcome = run_golden(
                self._engine.search,
                golden,
                params,
                ks,
                cache=cache,
                cancel=worker.cancelled_event,
                progress=progress,
                pace=pace,
            )
        except SearchCancelled:
            return
        if outcome is not None and not worker.is_cancelled:
            self.post_message(EvalFinished(side, serial, outcome))

    def on_eval_progressed(self, msg: EvalProgressed) -> None:
        if msg.serial == self.eval_requested[msg.side] and self.eval_progress[msg.side] is not None:
            self.eval_progress[msg.side] = (msg.done, msg.total)
            self.eval_signal.publish(msg.side)

    def on_eval_finished(self, msg: EvalFinished) -> None:
        if msg.serial != self.eval_requested[msg.side]:
            return  # superseded by a newer settings change
        self._apply_eval(msg.side, msg.outcome)

    def _apply_eval(self, side: str, outcome) -> None:
        old = self.eval_outcomes[side]
        if old is not None and old.aggregate != outcome.aggregate:
            # the bar shows the change since the last value that differed: a change that moves nothing
            # (e.g. a grade-0 judgment of a hit no query expects) keeps the last movement visible
            self.eval_previous[side] = old.aggregate
        self.eval_outcomes[side] = outcome
        self.eval_progress[side] = None
        self.eval_signal.publish(side)

    def query_metrics(self, side: str):
        """The current query's own metrics on a side, from the hits shown (None if not in the set)."""
        from groove_tui.engine.evaluate.metrics import evaluate_query, ranked_hits

        session = self.golden_session
        resp = self.responses.get(side)
        if session is None or resp is None or self.response_queries.get(side) != self.query_text:
            return None
        q = session.golden.find(self.query_text)
        if q is None:
            return None
        return evaluate_query(q, ranked_hits(resp.results), session.k_values)

    def grade_of(self, hit) -> int | None:
        """The current query's judgment of a hit (None: unjudged or no golden set)."""
        session = self.golden_session
        if session is None or not self.query_text.strip():
            return None
        return session.grade_of(self.query_text, hit.path, hit.heading)

    def action_judge(self, grade: int) -> None:
        """Grade the focused hit for the current query (0 irrelevant … 3 highly relevant)."""
        from groove_tui.engine.evaluate.golden import GoldenError
        from groove_tui.tui.golden.session import GoldenSession

        row = self.focused_row
        query = self.query_text
        if row is None or row.gone or not query.strip():
            self.notify("Focus a hit of a query to judge it", severity="warning", markup=False)
            return
        if self.golden_session is None:
            try:
                session = GoldenSession.new(self.config.eval.k_values)
            except (GoldenError, OSError) as exc:
                self.notify(f"Cannot record judgments: {exc}", severity="error", markup=False, timeout=10)
                return
            self._set_golden_session(session)
            self.notify(
                f"New golden set: judgments save to {session.path} (ctrl+g, and on exit)", markup=False, timeout=6
            )
        had = self._bindings_state()
        assert self.golden_session is not None  # loaded, or created just above
        try:
            self.golden_session.judge(query, row.hit.path, row.hit.heading, int(grade))
        except ValueError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        if self._bindings_state() != had:
            self.refresh_bindings()
        self._refresh_judgment_views()
        for side in self.active_sides:
            self.schedule_eval(side, 0)

    def _refresh_judgment_views(self) -> None:
        from groove_tui.tui.widgets.results import ResultsPane

        for screen in self.screen_stack:
            for pane in screen.query(ResultsPane):
                pane.refresh_judgments()
        self.eval_signal.publish("left")

    def save_judgments(self) -> Path | None:
        """Write the golden set (groove-compatible) if it has unsaved judgments; notify where."""
        from groove_tui.engine.evaluate.golden import GoldenError

        session = self.golden_session
        if session is None or not session.dirty:
            return None
        try:
            target = session.save()
        except (GoldenError, OSError) as exc:
            self.notify(f"Judgments not saved: {exc}", severity="error", markup=False, timeout=15)
            return None
        self.notify(f"Judgments saved to {target} ({len(session.golden.queries)} queries)", markup=False)
        self.refresh_bindings()
        self.eval_signal.publish("left")
        return target

    def action_save_judgments(self) -> None:
        if self.golden_session is None or not self.golden_session.dirty:
            self.notify("No unsaved judgments", markup=False, timeout=2)
            return
        self.save_judgments()

    def action_sweep(self) -> None:
        from groove_tui.tui.screens.sweep import open_sweep

        open_sweep(self)

    def action_wins_losses(self) -> None:
        from groove_tui.tui.screens.winloss import open_wins_losses

        open_wins_losses(self)

    def action_load_golden(self) -> None:
        from groove_tui.tui.screens.export import PathScreen

        def done(path: str | None) -> None:
            if path:
                self.load_golden(path)

        default = str(self.golden_session.loaded_from or "") if self.golden_session else ""
        self.push_screen(
            PathScreen(
                "Load a golden file",
                "Golden YAML (relative paths are in the current directory):",
                default,
                accept="load",
            ),
            callback=done,
        )


def _query_validator():
    """groove refuses exclusion-only golden queries; so does the loader (as `groove-tui eval` does)."""
    from groove_tui.engine.evaluate.golden import validate_query

    return validate_query
