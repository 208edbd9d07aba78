"""Full-screen detail of the focused hit, with the explain panel beside it on request."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen

from groove_tui.tui.keys.footer import FooterOrder, GrooveFooter
from groove_tui.tui.look.layout import Responsive
from groove_tui.tui.widgets.detail import DetailView
from groove_tui.tui.widgets.explain import ExplainPanel

if TYPE_CHECKING:
    from textual import getters

    from groove_tui.tui.shell import AppShell


class DetailScreen(FooterOrder, Responsive, Screen):
    if TYPE_CHECKING:
        app = getters.app(AppShell)

    BINDING_GROUP_TITLE = "Detail"
    FOOTER_FIRST = ("app.pop_screen", "help")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "app.pop_screen", "Back", tooltip="Back to the results", id="detail.back"),
        Binding("f6", "toggle_explain", "Explain", tooltip="Show / hide the explain panel", id="view.explain"),
        Binding("o", "app.open_editor", "Editor", tooltip="Open in the editor", id="detail.editor"),
        Binding("y", "app.copy_path", "Copy path", id="detail.copy_path"),
        Binding("Y", "app.copy_content", "Copy text", id="detail.copy_content"),
    ]

    def __init__(self, side: str = "left") -> None:
        super().__init__()
        self.side = side

    def compose(self):
        with Horizontal(id="detail-body"):
            dv = DetailView(id="detail")
            dv.border_title = "Detail"
            yield dv
            ex = ExplainPanel(id="detail-explain")
            ex.border_title = "Explain"
            yield ex
        yield GrooveFooter()

    def on_mount(self) -> None:
        self.refresh_content()
        self.query_one("#detail", DetailView).focus()

    def refresh_content(self) -> None:
        row = self.app.focused_rows.get(self.side)
        resp = self.app.responses.get(self.side)
        dv = self.query_one("#detail", DetailView)
        dv.show(row.hit if row else None, row.rank if row else None)
        side_name = f" ({self.side})" if self.app.compare_active else ""
        dv.border_subtitle = (row.hit.path + side_name) if row else ""
        self.query_one("#detail-explain", ExplainPanel).show(
            row.hit if row else None,
            resp.query if resp else None,
            resp.timings_ms if resp else None,
            row.rank if row else None,
            resp.confidence if resp else None,
        )

    def action_toggle_explain(self) -> None:
        self.toggle_class("-explain")
