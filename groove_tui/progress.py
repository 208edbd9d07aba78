"""A one-line progress bar on stderr for headless commands (no dependency, redraws at most 10×/s)."""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO, TypeVar

from groove_tui.engine.types import IndexProgress

T = TypeVar("T")
PHASE_LABELS = {"scan": "scanning", "fulltext": "full text", "embed": "embedding", "building model": "model",
                "done": "done"}


class ProgressLine:
    def __init__(self, stream: TextIO, *, enabled: bool, width: int = 30, notices: bool | None = None) -> None:
        self.stream = stream
        self.enabled = enabled
        self.notices = enabled if notices is None else notices  # one-line notes also when no bar is drawn
        self.width = width
        self._last = 0.0
        self._drawn = False

    def update(self, p: IndexProgress) -> None:
        """The indexer's progress callback."""
        if p.phase == "building model" and p.done == 0 and p.path and self.notices:
            # a one-time wait of its own: say what it is
            self.stream.write(("\r\x1b[2K" if self.enabled else "") + p.path + "\n")
            self.stream.flush()
        self.step(PHASE_LABELS.get(p.phase, p.phase), p.done, p.total)

    def step(self, label: str, done: int, total: int) -> None:
        """Any long run's progress: `label ████░░ 40% 320/809`."""
        if not self.enabled:
            return
        now = time.monotonic()
        final = total and done >= total
        if now - self._last < 0.1 and not final:
            return
        self._last = now
        if total:
            frac = min(done / total, 1.0)
            filled = int(frac * self.width)
            bar = "█" * filled + "░" * (self.width - filled)
            text = f"{label:<10} {bar} {frac:4.0%} {done:,}/{total:,}"
        else:
            text = f"{label:<10} …"
        self.stream.write("\r\x1b[2K" + text)
        self.stream.flush()
        self._drawn = True

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
