"""The explorer's orientation: a header line (KB, model, index state, reranker) and the index status line
(a progress bar for both indexing phases: full text, then embeddings)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.containers import Horizontal
from textual.widgets import ProgressBar, Static

from groove_tui.engine.index.watch import queued_message
from groove_tui.engine.types import IndexProgress
from groove_tui.output.progress import embed_speed

if TYPE_CHECKING:
    from textual import getters

    from groove_tui.tui.shell import AppShell

PHASES = {
    "scan": "Scanning",
    "fulltext": "Indexing full text (1/2)",
    "embed": "Embedding (2/2) — search works",
    "done": "Index ready",
}


class IndexStatusBar(Horizontal):
    DEFAULT_CSS = """
    IndexStatusBar { height: 1; display: none; padding: 0 1; background: $panel; }
    IndexStatusBar.-active { display: block; }
    IndexStatusBar > #index-label { width: 1fr; padding: 0 1 0 0; text-wrap: nowrap; text-overflow: ellipsis; }
    IndexStatusBar > ProgressBar { width: auto; }
    IndexStatusBar Bar { width: 20; }
    """

    def compose(self):
        yield Static("", id="index-label", markup=False)
        yield ProgressBar(total=None, show_eta=False, id="index-bar")

    def show_progress(self, p: IndexProgress, queued_edits: int = 0) -> None:
        """The phase and how far along it is; then edits saved meanwhile (right after the counts, so a
        narrow line that cuts the rest still says them), the rate and time left."""
        self.add_class("-active")
        name, _, note = PHASES.get(p.phase, p.phase).partition(" (")
        text = f"{name} {p.done:,}/{p.total:,}"
        if queued_edits:
            text += f" · {queued_message(queued_edits)}"
        speed = embed_speed(p)  # "5.8 chunks/s · about 2 h 10 min left", once the rate is known
        if speed:
            text += f" · {speed}"
        self.query_one("#index-label", Static).update(Text(f"{text} ({note}" if note else text))
        bar = self.query_one("#index-bar", ProgressBar)
        if p.total > 0:
            bar.update(total=p.total, progress=p.done)
        else:
            bar.update(total=None)

    def finish(self) -> None:
        self.remove_class("-active")


class OrientationHeader(Static):
    """One line on top of each search screen: which KB, which model, what the index holds, which reranker."""

    if TYPE_CHECKING:
        app = getters.app(AppShell)

    DEFAULT_CSS = """
    OrientationHeader { height: 1; padding: 0 1; background: $panel; color: $foreground; text-wrap: nowrap;
                        text-overflow: ellipsis; }
    """

    def on_mount(self) -> None:
        self.app.header_signal.subscribe(self, lambda _=None: self.refresh_text())
        self.refresh_text()

    def on_resize(self) -> None:  # the KB's path is shortened to the width
        self.refresh_text()

    def refresh_text(self) -> None:
        self.update(self.app.header_text(self.content_size.width or None))
