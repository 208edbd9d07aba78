"""Opening the knowledge base and keeping its index fresh: the open/index worker (the engine from its
factory, then a stale index updated in two phases while searches wait for the first), its progress
messages, the document/chunk counts and the header line that shows them.

A mixin, like the app's other parts: the header and status bar read `app.index_progress` and
`app.header_text()`, and Textual delivers EngineReady / IndexProgressed / IndexFinished to the App.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import get_current_worker

from groove_tui.engine.index.throughput import format_rate
from groove_tui.engine.index.watch import queued_message
from groove_tui.engine.types import IndexProgress, IndexReport, SearchParams
from groove_tui.output.progress import embed_speed
from groove_tui.tui.look.render import one_line as render_one_line
from groove_tui.tui.messages import EngineReady, IndexFinished, IndexProgressed
from groove_tui.tui.search.runconfig import SIDES, RunConfig

# How often the index's progress is shown while it runs (the latest report, at the end of each interval).
# Shown at every file's report, the repaints held the interpreter most of the time, and the indexer, which
# needs it between SQLite calls, waited: the tldr pages' full-text phase took over ten times as long in
# the explorer as in `groove-tui index`.
PROGRESS_EVERY_S = 0.1

if TYPE_CHECKING:
    from groove_tui.tui.shell import AppShell as _AppPart
else:
    _AppPart = object


class KbIndexing(_AppPart):
    """App mixin. Owns the engine-ready and searchable events the search and golden workers wait on
    (through `wait_until_searchable`), the open error, and the index progress, report and counts."""

    def _init_kb_indexing(self) -> None:
        self._engine_ready = threading.Event()
        self._searchable = threading.Event()
        self._progress_shown = 0.0  # when the index's progress was last shown (monotonic)
        self._progress_repaint: Timer | None = None  # the next showing, when one is due
        # The indexer's latest report, and whether a message about it is on its way: one at a time, so a
        # run of thousands of files posts a message per showing, not per file.
        self._progress_latest: IndexProgress | None = None
        self._progress_posted = threading.Event()
        self._open_error: BaseException | None = None
        self.index_progress = None
        self.index_report: IndexReport | None = None
        self.indexing = False
        self.index_counts: tuple[int, int, int] | None = None  # documents, chunks, pending embeddings

    def wait_until_searchable(self, worker) -> bool:
        """Worker thread: block until the engine is open and the index can answer (nothing was stale, or
        the embedding phase began); False if `worker` was cancelled meanwhile."""
        for event in (self._engine_ready, self._searchable):
            while not event.wait(0.05):
                if worker.is_cancelled:
                    return False
        return not worker.is_cancelled

    def start_indexing(self) -> None:
        """On mount: the counts of an engine given ready-made, then the open/index worker."""
        if self._engine is not None:
            self._read_index_counts()
        self.run_worker(
            self._open_and_index, name="index", group="index", thread=True, exclusive=True, exit_on_error=False
        )

    def _adopt_engine(self, engine: Any) -> None:
        self._engine = engine
        try:
            self.base_params = engine.default_params()
        except Exception:
            self.base_params = SearchParams()
        if self.base_params.reranker is not None and not self.reranker_model:
            self.base_params = replace(self.base_params, reranker=None)
        # the engine resolves fusion=None from its own config, so that is the method the sides start with
        engine_config = getattr(engine, "config", None)
        if engine_config is not None:
            self.default_fusion = engine_config.search.fusion.method
        rc = RunConfig.from_params(self.base_params, self.default_fusion, self.config.search.word_leg)
        if not any(self.responses.values()):
            self.run_configs = {"left": rc, "right": replace(rc, mmr=not rc.mmr)}
        self._engine_ready.set()

    def _open_and_index(self) -> None:
        """Worker: open the engine (if a factory was given), then update a stale index in two phases."""
        worker = get_current_worker()
        if self._engine is None:
            factory = self._engine_factory
            assert factory is not None  # GrooveApp takes an engine or a factory
            try:
                engine = factory()
            except Exception as exc:
                self._open_error = exc
                self._engine_ready.set()
                self._searchable.set()
                raise
            self._adopt_engine(engine)
            self.post_message(EngineReady())
        eng = self._engine
        needs = bool(eng.needs_index())
        try:
            status = eng.status()
            pending, held = status.pending_embeddings, status.documents
        except Exception:
            pending, held = 0, 0
        if not needs or held:
            # An index that already holds documents answers while it is brought up to date: each document
            # is written whole (a savepoint in its batch's transaction), so a search sees every file either
            # as it was or as it is.
            # A new index waits for its full-text phase: a part of it would answer with whole folders
            # missing (files go in path order) and no word that they are, and the golden metrics scored
            # on it would be wrong; the wait says how far along the phase is (`waiting_for_index`).
            self._searchable.set()
        if needs or pending:
            self.indexing = True
            # Edits saved while this run holds the index are gathered by the watcher from the start and
            # counted on screen ("N edits queued until indexing finishes"), then indexed once it ends.
            held = threading.Event()
            held.set()
            if not worker.is_cancelled:
                self.call_from_thread(self.start_watching, held)

            def progress(p) -> None:
                if p.phase in ("embed", "done"):
                    first = not self._searchable.is_set()
                    self._searchable.set()
                    if first:
                        self.call_from_thread(self.search_now)
                self._progress_latest = p
                if not self._progress_posted.is_set():  # else the showing on its way reads this one
                    self._progress_posted.set()
                    self.post_message(IndexProgressed(p))

            try:
                report = eng.index(progress=progress, force=False, cancel=worker.cancelled_event)
            except BaseException:
                if not worker.is_cancelled:  # (a cancelled worker: the app is closing and stops them all)
                    self.call_from_thread(self.workers.cancel_group, self, "watch")  # nothing to catch up onto
                raise
            finally:
                self._searchable.set()
                self.indexing = False
                held.clear()
            self.post_message(IndexFinished(report))
        elif not worker.is_cancelled:
            self.call_from_thread(self.start_watching)  # the index is current: follow edits from here
        if self.warmup and not worker.is_cancelled:
            # load the embedding model now, in this background thread, so the first query does not wait
            warm = getattr(eng, "warm_up", None) or getattr(eng, "embedder", None)
            try:
                if callable(warm):
                    warm()
            except Exception:
                pass

    def on_engine_ready(self, _msg: EngineReady) -> None:
        self._read_index_counts()
        for side in SIDES:
            self.run_config_signal.publish(side)
        if self.query_text.strip():
            self.search_now()

    def on_index_progressed(self, msg: IndexProgressed) -> None:
        # The latest report, not the message's: one posted earlier can arrive after a newer one was read.
        self.index_progress = self._progress_latest or msg.progress
        if self._progress_repaint is not None:
            return  # (the repaint on its way shows this one)
        wait = self._progress_shown + PROGRESS_EVERY_S - time.monotonic()
        if wait > 0:
            self._progress_repaint = self.set_timer(wait, self._show_index_progress)
        else:
            self._show_index_progress()

    def _show_index_progress(self) -> None:
        self._progress_repaint = None
        self._progress_shown = time.monotonic()
        self._progress_posted.clear()  # the indexer's next report is posted again
        if self.index_progress is None:
            return  # finished meanwhile: the report is shown instead
        self.index_progress = self._progress_latest or self.index_progress
        self.show_index_state(None)
        self.header_signal.publish("index")
        if not self._searchable.is_set():
            self.refresh_waiting()  # the waiting searches say how far along the full-text phase is

    def waiting_for_index(self) -> str | None:
        """What a search waits for before it can run and how far along that is; None once it can run."""
        if self._searchable.is_set():
            return None
        if not self._engine_ready.is_set():
            return "waiting for the index to open…"
        p = self.index_progress
        if p is None or p.phase not in ("scan", "fulltext") or p.total <= 0:
            return "waiting for the full-text index…"
        pct = min(99, round(100 * p.done / p.total)) if p.done < p.total else 100
        if p.phase == "scan":
            return f"waiting for the full-text index: reading {p.done:,} / {p.total:,} files ({pct} %)"
        return f"waiting for the full-text index: {p.done:,} / {p.total:,} files ({pct} %)"

    def on_index_finished(self, msg: IndexFinished) -> None:
        self.index_report = msg.report
        self.index_progress = None
        self.show_index_state(None)
        self._read_index_counts()
        r = msg.report
        if r is not None:
            text = (
                f"Index updated: {r.added} added, {r.updated} updated, {r.deleted} deleted, "
                f"{r.chunks} chunks in {r.seconds:.1f}s"
            )
            if r.embed_rate is not None:
                text += f"; {r.embedded:,} embedded at {format_rate(r.embed_rate)}"
            if r.pending_embeddings:
                text += f"; {r.pending_embeddings} chunks still without vectors"
            if r.skipped:
                text += f"; {len(r.skipped)} files skipped"
            self.notify(text, markup=False)
            for note in r.notes:  # the model chosen for the KB, a hint, a language warning
                self.notify(
                    note, markup=False, timeout=10, severity="warning" if note.startswith("warning") else "information"
                )
        if self.query_text.strip():
            self.search_now()  # now with vectors for every chunk
        if r is not None and (r.embedded or r.added or r.updated or r.deleted or r.renamed):
            self.rescore_golden()  # the metrics shown were scored on the index as it was

    def _read_index_counts(self) -> None:
        try:
            st = self._engine.status()
            self.index_counts = (st.documents, st.chunks, st.pending_embeddings)
        except Exception:
            self.index_counts = None
        self.header_signal.publish("index")

    def header_text(self, width: int | None = None) -> Text:
        """KB · model · index state · reranker, for the header line (`width` cells: the KB's path is
        shortened to leave the rest some room)."""
        from groove_tui.tui.widgets.status import PHASES

        t = Text()
        t.append(self.kb_label(width), style="bold")
        after_label = len(t)
        model = getattr(self._engine, "model_id", None) or self.config.embedding.model
        t.append(f" · model {render_one_line(str(model))}", style="")
        p = self.index_progress
        if p is not None and p.phase != "done":
            t.append(
                f"  · {PHASES.get(p.phase, p.phase).split(' (')[0].lower()} {p.done:,}/{p.total:,}", style="italic"
            )
            speed = embed_speed(p)
            if speed:
                t.append(f" · {speed}", style="italic")
        elif self.index_counts is not None and self.index_counts[0] == 0 and not self.indexing:
            t.append("  · no Markdown files indexed (*.md outside excluded folders)", style="italic")
        elif self.index_counts is not None:
            docs, chunks, pending = self.index_counts
            t.append(f"  · {docs:,} docs, {chunks:,} chunks")
            if pending:
                t.append(f", {pending:,} awaiting vectors", style="italic")
        elif self._engine is None:
            t.append("  · opening…", style="italic")
        note = None
        if p is None or p.phase == "done":
            if self.queued_edits:  # the build ended: they are indexed next
                note = Text(f"  · {queued_message(self.queued_edits)}", style="italic")
            elif self.watch_note is not None:
                note = Text(f"  · {self.watch_note[0]}", style=self.watch_note[1])
        if note is not None:
            note_at = len(t)
            t.append_text(note)
        rr = self.reranker_model
        if not rr:
            t.append("  · rerank none (groove-tui models pull ms-marco-l12)", style="dim")
        elif self.compare_active:  # each side's own state is in the compare header
            t.append(f"  · rerank {render_one_line(rr)}")
        else:  # the installed model alone would read as "on" while F4 has it off
            on = self.run_configs["left"].reranker
            if "reranker" in self.pending_settings("left"):  # the list still shows the other state
                t.append(f"  · rerank {render_one_line(rr)} {'on' if on else 'off'} (pending)", style="italic")
            else:
                t.append(f"  · rerank {render_one_line(rr)} {'on' if on else 'off (F4)'}", style="" if on else "dim")
        if note is not None and width is not None and t.cell_len > width:
            # The line is cut at the right: what the watcher just did goes ahead of the model and counts.
            t = Text.assemble(t[:after_label], note, t[after_label:note_at], t[note_at + len(note) :])
        return t

    def kb_label(self, width: int | None = None) -> str:
        """The KB's absolute path, `~` for home; in a header `width` cells wide it takes up to half the
        line (at least 24 cells), shortened in the middle, so the model and counts stay in view."""
        from groove_tui.tui.look.render import short_path

        path = self.kb_path.expanduser()
        with contextlib.suppress(OSError):  # a path that cannot be resolved is shown as given
            path = path.resolve()
        return short_path(path, max(24, width // 2) if width else 1_000)

    def show_index_state(self, screen: Screen | None) -> None:
        from groove_tui.tui.widgets.status import IndexStatusBar

        screens = [screen] if screen is not None else list(self.screen_stack)
        for s in screens:
            for bar in s.query(IndexStatusBar):
                if self.index_progress is not None:
                    bar.show_progress(self.index_progress, self.queued_edits)
                else:
                    bar.finish()

    def index_failed(self, err: BaseException | None) -> None:
        """The index worker failed (reported by the one worker-error handler, in search/runs.py)."""
        self.index_progress = None
        self.show_index_state(None)
        self.notify(f"Opening/indexing the KB failed: {err}", severity="error", markup=False, timeout=15)
