"""A one-line progress bar on stderr for headless commands (no dependency, redraws at most 10×/s)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TextIO, TypeVar

from groove_tui.engine.index.throughput import format_eta, format_rate
from groove_tui.engine.types import IndexProgress

T = TypeVar("T")
PHASE_LABELS = {
    "scan": "scanning",
    "fulltext": "full text",
    "embed": "embedding",
    "building model": "model",
    "done": "done",
}


def embed_speed(p: IndexProgress) -> str:
    """`5.8 chunks/s · about 2 h 10 min left` for an embed-phase progress; "" until a rate is known."""
    if p.phase != "embed" or p.rate is None:
        return ""
    text = format_rate(p.rate)
    if p.eta_seconds is not None and p.done < p.total:
        text += " · " + format_eta(p.eta_seconds)
    return text


class ProgressLine:
    def __init__(self, stream: TextIO, *, enabled: bool, width: int = 30, notices: bool | None = None) -> None:
        self.stream = stream
        self.enabled = enabled
        self.notices = enabled if notices is None else notices  # one-line notes also when no bar is drawn
        self.width = width
        self._last = 0.0
        self._drawn = False

    def update(self, p: IndexProgress) -> None:
        """The indexer's progress callback (the embed phase adds its rate and time left)."""
        if p.phase == "building model" and p.done == 0 and p.path and self.notices:
            # a one-time wait of its own: say what it is
            self.stream.write(("\r\x1b[2K" if self.enabled else "") + p.path + "\n")
            self.stream.flush()
        self.step(PHASE_LABELS.get(p.phase, p.phase), p.done, p.total, embed_speed(p))

    def step(self, label: str, done: int, total: int, extra: str = "") -> None:
        """Any long run's progress: `label ████░░ 40% 320/809`, then `extra` if given."""
        if not self.enabled:
            return
        now = time.monotonic()
        final = total and done >= total
        if now - self._last < 0.1 and not final:
            return
        self._last = now
        room = self._columns() - 1  # a line that wraps could not be redrawn in place
        if total:
            frac = min(done / total, 1.0)
            tail = f" {frac:4.0%} {done:,}/{total:,}" + (f" · {extra}" if extra else "")
            width = min(self.width, room - 11 - len(tail))  # the bar gives way to the numbers first
            bar = ""
            if width >= 10:
                filled = int(frac * width)
                bar = " " + "█" * filled + "░" * (width - filled)
            text = f"{label:<10}{bar}{tail}"
        else:
            text = f"{label:<10} …"
        self.stream.write("\r\x1b[2K" + text[:room])
        self.stream.flush()
        self._drawn = True

    def _columns(self) -> int:
        """The terminal's width; a terminal that reports none (0, as some pseudo-terminals do) is wide."""
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            columns = 0
        return columns if columns > 0 else 10_000

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


def with_progress(label: str, run: Callable[[Callable[[int, int], None]], T]) -> T:
    """`run(progress)` with a bar on stderr when it is a terminal, erased afterwards (also on errors)."""
    bar = ProgressLine(sys.stderr, enabled=sys.stderr.isatty())
    try:
        return run(lambda done, total: bar.step(label, done, total))
    finally:
        bar.close()
