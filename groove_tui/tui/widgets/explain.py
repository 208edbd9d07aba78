"""The explain panel: the compiled query and the focused hit's trace, stage by stage."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from textual.containers import VerticalScroll
from textual.widgets import Static

from groove_tui.engine.types import ConfidenceReading, Hit, QueryInfo
from groove_tui.tui.look import explain_render


class ExplainPanel(VerticalScroll):
    COMPONENT_CLASSES: ClassVar[set[str]] = {"explain--heading"}
    DEFAULT_CSS = """
    ExplainPanel { height: 1fr; padding: 0 1; }
    ExplainPanel > .explain--heading { color: $accent; text-style: bold; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._body = Static("", markup=False)
        self._args: tuple = (None, None, None, None, None)

    def compose(self):
        yield self._body

    def show(
        self,
        hit: Hit | None,
        query: QueryInfo | None,
        timings: Mapping[str, float] | None = None,
        rank: int | None = None,
        confidence: ConfidenceReading | None = None,
    ) -> None:
        self._args = (hit, query, timings, rank, confidence)
        self.refresh_content()

    def refresh_content(self) -> None:
        hit, query, timings, rank, confidence = self._args
        style = self.get_component_rich_style("explain--heading", partial=True)
        width = self.scrollable_content_region.width or None
        text = explain_render.explain_text(
            hit, query, timings, rank=rank, head_style=style, width=width, confidence=confidence
        )
        self._body.update(text)

    def on_resize(self) -> None:
        self.refresh_content()  # long values wrap to the new width
