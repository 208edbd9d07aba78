"""Messages posted from worker threads to the app. Results travel only as messages carrying a serial."""

from __future__ import annotations

from textual.message import Message

from groove_tui.engine.index.watch import WatchEvent
from groove_tui.engine.types import IndexProgress, IndexReport, SearchResponse
from groove_tui.tui.search.runconfig import RunConfig


class SearchFinished(Message):
    """`final` is False for the fused results painted while the reranker still runs; the final message
    of the same serial replaces them and carries those fused results as `fused` (for rank markers)."""

    def __init__(
        self,
        side: str,
        serial: int,
        query: str,
        run_config: RunConfig,
        response: SearchResponse,
        elapsed_ms: float,
        *,
        final: bool = True,
        fused: SearchResponse | None = None,
    ) -> None:
        super().__init__()
        self.side = side
        self.serial = serial
        self.query = query
        self.run_config = run_config
        self.response = response
        self.elapsed_ms = elapsed_ms
        self.final = final
        self.fused = fused


class SideProgressed(Message):
    """One side's long run got `done` of `total` further; a newer one of the same kind and side replaces
    a queued one, so bursts coalesce."""

    def __init__(self, side: str, serial: int, done: int, total: int) -> None:
        super().__init__()
        self.side = side
        self.serial = serial
        self.done = done
        self.total = total

    def can_replace(self, message: Message) -> bool:
        return type(message) is type(self) and message.side == self.side


class RerankProgressed(SideProgressed):
    """The reranker of one side's search has scored `done` of `total` pairs."""


class EngineReady(Message):
    pass


class IndexProgressed(Message):
    def __init__(self, progress: IndexProgress) -> None:
        super().__init__()
        self.progress = progress

    def can_replace(self, message: Message) -> bool:  # coalesce bursts of progress of the same phase
        return isinstance(message, IndexProgressed) and message.progress.phase == self.progress.phase


class KbChanged(Message):
    """The KB watcher did something (engine/index/watch.py's WatchEvent: a batch indexed, the folder gone
    or back, polling, waiting for another indexer)."""

    def __init__(self, event: WatchEvent) -> None:
        super().__init__()
        self.event = event


class IndexFinished(Message):
    def __init__(self, report: IndexReport | None) -> None:
        super().__init__()
        self.report = report


class EvalProgressed(SideProgressed):
    """A golden-set run of one side got `done` of `total` queries further."""


class EvalFinished(Message):
    def __init__(self, side: str, serial: int, outcome) -> None:  # outcome: tui.golden.EvalOutcome
        super().__init__()
        self.side = side
        self.serial = serial
        self.outcome = outcome
