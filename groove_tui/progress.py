"""A one-line progress bar on stderr for headless commands (no dependency, redraws at most 10×/s)."""

from __future__ import annotations

import time
from typing import TextIO

from groove_tui.engine.types import IndexProgress

PHASE_LABELS = {"scan": "scanning", "fulltext": "full text", "embed": "embedding", "done": "done"}


class ProgressLine:
    def __init__(self, stream: TextIO, *, enabled: bool, width: int = 30) -> None:
        self.stream = stream
        self.enabled = enabled
        self.width = width
        self._last = 0.0
        self._drawn = False

    def update(self, p: IndexProgress) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        final = p.total and p.done >= p.total
        if now - self._last < 0.1 and not final:
            return
        self._last = now
        label = PHASE_LABELS.get(p.phase, p.phase)
        if p.total:
            frac = min(p.done / p.total, 1.0)
            filled = int(frac * self.width)
            bar = "█" * filled + "░" * (self.width - filled)
            text = f"{label:<10} {bar} {frac:4.0%} {p.done:,}/{p.total:,}"
        else:
            text = f"{label:<10} …"
        self.stream.write("\r\x1b[2K" + text)
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
