"""Full content of one hit: every match span highlighted, the parent retriever's neighbours shaded."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from groove_tui.engine.types import Hit
from groove_tui.tui.look import render


class DetailView(VerticalScroll):
    COMPONENT_CLASSES: ClassVar[set[str]] = {"result--match", "result--expanded", "detail--header"}
    DEFAULT_CSS = """
    DetailView { height: 1fr; padding: 0 1; }
    DetailView > .result--match { background: $match-background; color: $match-foreground; text-style: bold; }
    DetailView > .result--expanded { background: $expanded-background; }
    DetailView > .detail--header { color: $accent; text-style: bold; }
    DetailView > Static { width: 1fr; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.hit: Hit | None = None
        self.rank: int | None = None
        self._body = Static("", id="detail-body", markup=False)

    def compose(self):
        yield self._body

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _t: self.refresh_content())

    def show(self, hit: Hit | None, rank: int | None = None) -> None:
        self.hit, self.rank = hit, rank
        self.refresh_content()
        self.scroll_home(animate=False)

    def refresh_content(self) -> None:
        hit = self.hit
        if hit is None:
            self._body.update(Text("No hit selected.", style="dim"))
            return
        match = self.get_component_rich_style("result--match", partial=True)
        expanded = self.get_component_rich_style("result--expanded", partial=True)
        header = Text()
        if self.rank is not None:
            header.append(f"#{self.rank}  ", style="bold")
        header.append_text(render.hit_title(hit))
        header.append(f"\nline {hit.line} · score {render.fmt_score(hit.score)}", style="dim")
        if hit.tags:
            header.append("  tags: ", style="dim")
            header.append(render.one_line(", ".join(hit.tags)))
        ef = hit.expanded_from
        if ef is not None:
            header.append("\n")
            header.append("  context  ", style=expanded)
            desc = (
                f" parent retriever merged chunks {ef.from_index}–{ef.to_index}"
                if ef.kind == "adjacent"
                else f" parent retriever merged the whole document ({ef.total_chunks} chunks)"
            )
            header.append(desc, style="dim")
        header.append("\n\n")
        header.append_text(render.detail_text(hit, match, expanded))
        self._body.update(header)
