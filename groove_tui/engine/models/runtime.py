"""ONNX Runtime sessions whose idle workers sleep instead of spinning.

By default a session's intra-op workers spin on a core for a while after each run, waiting for more
work. A query is embedded while the full-text legs run beside it, and the workers left spinning after
the embedding take the cores those legs need: on 2 cores the trigram statement took ~1.3x as long, the
whole search with it (docs/performance.md). Passage batches run back to back lose nothing measurable
without the spin, so every session the engine builds is quiet: its own (`quiet`), and fastembed's
embedders and cross-encoders, whose options fastembed builds itself (`quiet_fastembed`).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["QUIET_POOL", "LaneSlot", "Lanes", "bulk_lanes", "quiet", "quiet_fastembed"]

T = TypeVar("T")
R = TypeVar("R")
MAX_LANES = 4  # each lane holds its own copy of the model's weights

# ONNX Runtime's session config keys (onnxruntime_session_options_config_keys.h).
QUIET_POOL = {"session.intra_op.allow_spinning": "0", "session.inter_op.allow_spinning": "0"}

_PATCH_LOCK = threading.Lock()


def quiet(options: Any) -> Any:
    """`options` (an onnxruntime.SessionOptions) with spinning off; returned for chaining."""
    for key, value in QUIET_POOL.items():
        options.add_session_config_entry(key, value)
    return options


class _QuietOrt:
    """onnxruntime as fastembed's ONNX loader sees it: the same module, except that the SessionOptions
    it builds are quiet. fastembed exposes no way to pass session options through."""

    def __init__(self, ort: Any) -> None:
        self._ort = ort

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ort, name)

    def SessionOptions(self) -> Any:
        return quiet(self._ort.SessionOptions())


def quiet_fastembed() -> None:
    """Make every session fastembed builds from here on quiet (once per process; idempotent)."""
    from fastembed.common import onnx_model

    with _PATCH_LOCK:
        if not isinstance(onnx_model.ort, _QuietOrt):
            onnx_model.ort = _QuietOrt(onnx_model.ort)


def bulk_lanes() -> int:
    """How many single-threaded sessions a long run embeds with side by side: one per core, up to
    MAX_LANES; 0 (run on one session) on a single core."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(cores, MAX_LANES) if cores > 1 else 0


class Lanes:
    """Single-threaded sessions of one model running side by side, each on its own passage. On N cores, N
    passages at once embed faster than one passage at a time on N threads, whose threads wait for each
    other inside every run (and for any core another process holds); a passage's vector is the same on
    one thread as on several. Each lane takes the next passage when it is done with one."""

    def __init__(self, open_session: Callable[[], Any], count: int) -> None:
        from concurrent.futures import ThreadPoolExecutor  # here: a search process never needs it

        self.sessions = [open_session() for _ in range(count)]
        self._pool = ThreadPoolExecutor(count, thread_name_prefix="groove-embed-lane")

    def map(self, run: Callable[[Any, T], R], items: Sequence[T]) -> list[R]:
        """`run(session, item)` for every item, the results in the items' order."""
        taken = itertools.count()  # shared: next() is atomic under the interpreter lock
        out: list[Any] = [None] * len(items)

        def lane(session: Any) -> None:
            while (i := next(taken)) < len(items):
                out[i] = run(session, items[i])

        lanes = [self._pool.submit(lane, session) for session in self.sessions]
        for done in lanes:
            done.exception()  # every lane finished (no lane left writing), then a lane's error re-raised
        for done in lanes:
            done.result()
        return out

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.sessions.clear()


class LaneSlot:
    """Where an embedder keeps the lanes a long run opens (`open`) and lets go (`close`); a run on them
    holds the slot, so they are not let go under it."""

    def __init__(self) -> None:
        self._lanes: Lanes | None = None
        self._lock = threading.Lock()

    @property
    def sessions(self) -> list[Any]:
        lanes = self._lanes
        return [] if lanes is None else lanes.sessions

    def open(self, open_session: Callable[[], Any], count: int) -> None:
        if self._lanes is not None:
            return
        lanes = Lanes(open_session, count)
        with self._lock:
            first = self._lanes is None
            if first:
                self._lanes = lanes
        if not first:  # another thread opened them first
            lanes.close()

    def close(self) -> None:
        with self._lock:
            lanes, self._lanes = self._lanes, None
        if lanes is not None:
            lanes.close()

    def map(self, run: Callable[[Any, T], R], items: Sequence[T]) -> list[R] | None:
        """`Lanes.map` on the open lanes; None when none are open (or for a single item, which one session
        on every core runs sooner)."""
        if self._lanes is None or len(items) < 2:
            return None
        with self._lock:
            return None if self._lanes is None else self._lanes.map(run, items)
