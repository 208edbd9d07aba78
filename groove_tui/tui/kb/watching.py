"""Following edits to the KB while the explorer is open: a worker runs the engine's watcher from the time the
index is opened (holding what it gathers while this app's first indexing runs); after each batch, and
again when the vectors the batches left pending are written, the current query runs again on every side
shown (compare included), and the main screen marks what changed — a new hit, a hit that moved, a hit
that left — while the header says when and how many notes (`updated 14:02:31 · 3 notes`).

The update itself never waits for the user: it runs on the watcher's thread while searches run on
theirs. A side whose query is being typed (its debounce timer pending) is not re-run: the search the
keystroke schedules runs on the updated index anyway.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from textual.worker import get_current_worker

from groove_tui.tui.messages import KbChanged
from groove_tui.tui.search.compare import Marker, markers

if TYPE_CHECKING:
    from groove_tui.engine.types import Hit, SearchResponse
    from groove_tui.tui.shell import AppShell as _AppPart
else:
    _AppPart = object


def update_stamp() -> str:
    """The wall-clock time the header gives an update (a function, so a picture of it can be fixed)."""
    return time.strftime("%H:%M:%S")


def hit_key(hit: Hit) -> tuple[str, int]:
    """A hit's identity across an update: an edited note's chunks are written again under new ids."""
    return (hit.path, hit.chunk_index)


def update_marks(
    now: SearchResponse, before: SearchResponse
) -> tuple[tuple[Marker | None, ...], tuple[tuple[Hit, int], ...]]:
    """Markers of `now`'s hits against the same query's results `before` the update (None: unchanged),
    and the hits that left, each with its rank before."""
    keys = [hit_key(h) for h in now.results]
    old = [hit_key(h) for h in before.results]
    marks = tuple(None if m.kind == "same" else m for m in markers(keys, old))
    present = set(keys)
    left = tuple((h, rank) for rank, h in enumerate(before.results, 1) if hit_key(h) not in present)
    return marks, left


class KbWatching(_AppPart):
    """App mixin: the watch worker, its header note and the marks of the re-run it triggers."""

    def _init_kb_watching(self, watch: bool | None) -> None:
        cfg = self.config
        if watch is None:
            watch = cfg.tui.watch if cfg.tui.watch is not None else cfg.watch.enabled
        self.watch_enabled = watch
        self.watch_note: tuple[str, str] | None = None  # (text, style) for the header
        self.queued_edits = 0  # edits saved during this app's first indexing, not indexed yet
        # side -> (response shown before the update, newest serial requested before the re-run)
        self._watch_before: dict[str, tuple[SearchResponse, int]] = {}
        # side -> (serial, markers, hits that left) of the re-run that answered after an update
        self.watch_marks: dict[str, tuple[int, tuple[Marker | None, ...], tuple[tuple[Hit, int], ...]]] = {}
        # side -> the response those marks compare with: the vectors of the same notes, written after
        # them, re-run the query against it again, so the notes' marks stay until the next edit
        self._marked_against: dict[str, SearchResponse] = {}

    def start_watching(self, held: threading.Event | None = None) -> None:
        """Called once the index is open (main thread): current, or being indexed by this app while
        `held` is set — edits meanwhile are counted (`queued_edits`) and indexed when it is cleared."""
        if not self.watch_enabled or not callable(getattr(self._engine, "watch", None)):
            return
        self.run_worker(
            lambda: self._watch_kb(held), name="watch", group="watch", thread=True, exclusive=True, exit_on_error=False
        )

    def _watch_kb(self, held: threading.Event | None) -> None:
        worker = get_current_worker()
        on_event = lambda event: self.post_message(KbChanged(event))  # noqa: E731
        if held is None:
            self._engine.watch(on_event, worker.cancelled_event)
        else:
            self._engine.watch(on_event, worker.cancelled_event, held=held)

    def on_kb_changed(self, msg: KbChanged) -> None:
        ev: Any = msg.event
        if ev.kind in ("batch", "error") and self.queued_edits:
            self.queued_edits = 0  # the queued edits were indexed (or failed, which says so)
            self.header_signal.publish("index")
        if ev.kind == "queued":
            self.queued_edits = len(ev.paths)
            self.show_index_state(None)
        elif ev.kind == "batch":
            r = ev.report
            if r is not None and r.skipped:
                # Otherwise silent: a saved note that never shows up would look like a search problem.
                first, n = r.skipped[0], len(r.skipped)
                more = f" (and {n - 1} more)" if n > 1 else ""
                self.notify(
                    f"not indexed: {first.path}: {first.reason}{more}", severity="warning", markup=False, timeout=10
                )
            notes = (r.added + r.updated + r.deleted + r.renamed) if r is not None else 0
            if r is None or not (notes or r.embedded):
                return  # a save that changed nothing the index holds
            if notes:
                stamp = update_stamp()
                self.watch_note = (f"updated {stamp} · {notes} note{'s' if notes != 1 else ''}", "")
            # Vectors a batch wrote change the ranking as much as notes do: a search that began before
            # they were written showed the notes without them.
            self.rerun_after_update()
            self._read_index_counts()
            self.rescore_golden()  # the metrics shown were scored on the index as it was
        elif ev.kind == "embedded":
            # The vectors of notes saved earlier are written: what was found without them ranks anew.
            self.rerun_after_update(vectors_only=True)
            self._read_index_counts()
            self.rescore_golden()
        elif ev.kind == "watching":
            if self.watch_note is not None and self.watch_note[1]:
                self.watch_note = None  # a problem shown before is over
        elif ev.kind == "missing":
            self.watch_note = ("KB folder gone · index kept, watching for it", "bold")
            self.notify(ev.message, severity="warning", markup=False, timeout=10)
        elif ev.kind == "restored":
            self.watch_note = ("KB folder back · catching up", "italic")
        elif ev.kind == "polling":
            self.watch_note = ("polling the KB", "italic")
            self.notify(ev.message, severity="warning", markup=False, timeout=15)
        elif ev.kind == "waiting":
            self.watch_note = ("waiting: another groove-tui is indexing this KB", "italic")
        elif ev.kind == "error":
            self.notify(ev.message, severity="error", markup=False, timeout=10)
        self.header_signal.publish("index")

    def rerun_after_update(self, *, vectors_only: bool = False) -> None:
        """The current query again on every side shown, remembering what each showed before. `vectors_only`:
        the update wrote vectors of notes already indexed; a side still showing the marks of those notes'
        update is marked against what it showed before that update, so a saved note stays marked new."""
        if not self.query_text.strip():
            return
        for side in self.active_sides:
            if self._debounce_timers.get(side) is not None:
                continue  # being typed: the search it schedules sees the updated index
            before = self.responses[side]
            if vectors_only and self.shown_update_marks(side) is not None and side in self._marked_against:
                before = self._marked_against[side]
            if before is not None:
                self._watch_before[side] = (before, self.requested[side])
            self.schedule_search(side, 0)

    def note_update_marks(self, side: str, serial: int, response: SearchResponse) -> None:
        """A final response arrived: if it answers the query shown before an update, mark the changes."""
        pending = self._watch_before.get(side)
        if pending is None or serial <= pending[1]:
            return
        before = self._watch_before.pop(side)[0]
        if before.query != response.query:
            return
        marks, left = update_marks(response, before)
        if any(m is not None for m in marks) or left:
            self.watch_marks[side] = (serial, marks, left)
            self._marked_against[side] = before
        else:
            self.watch_marks.pop(side, None)
            self._marked_against.pop(side, None)

    def shown_update_marks(self, side: str) -> tuple[tuple[Marker | None, ...], tuple[tuple[Hit, int], ...]] | None:
        """The marks to paint with the side's current response (only the re-run's own response)."""
        marks = self.watch_marks.get(side)
        if marks is None or marks[0] != self.applied[side]:
            return None
        return marks[1], marks[2]
