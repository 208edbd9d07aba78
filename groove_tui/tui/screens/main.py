"""The main screen: query on top; settings, results and a preview/explain panel side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Input

from groove_tui.tui.keys.footer import FooterOrder, GrooveFooter
from groove_tui.tui.look.layout import Responsive
from groove_tui.tui.widgets.config_pane import ConfigPane
from groove_tui.tui.widgets.detail import DetailView
from groove_tui.tui.widgets.explain import ExplainPanel
from groove_tui.tui.widgets.metrics import MetricsBar
from groove_tui.tui.widgets.query_input import QueryInput
from groove_tui.tui.widgets.results import ResultsPane
from groove_tui.tui.widgets.slider import Slider
from groove_tui.tui.widgets.status import IndexStatusBar, OrientationHeader

if TYPE_CHECKING:
    from textual import getters
    from textual.screen import Screen as _ScreenPart

    from groove_tui.tui.shell import AppShell
else:
    _ScreenPart = object


class SearchScreenMixin(_ScreenPart):
    """Shared wiring of a screen with a query input and result panes."""

    if TYPE_CHECKING:
        app = getters.app(AppShell)

    def _query_input(self) -> QueryInput:
        return self.query_one("#query", QueryInput)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "query":
            event.stop()
            self.app.set_query(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "query":
            event.stop()
            self._query_input().remember()
            self.app.search_now()
            self.focus_results()

    def focus_results(self) -> None:
        panes = list(self.query(ResultsPane))
        if panes:
            panes[0].list.focus()

    def action_focus_query(self) -> None:
        self._query_input().focus()

    def on_screen_resume(self) -> None:
        qi = self._query_input()
        if qi.value != self.app.query_text:
            with qi.prevent(Input.Changed):
                qi.value = self.app.query_text
        for pane in self.query(ResultsPane):
            self.app.refresh_side(pane.side)
        self.app.show_index_state(self)


class MainScreen(FooterOrder, Responsive, SearchScreenMixin, Screen):
    if TYPE_CHECKING:
        app = getters.app(AppShell)

    BINDING_GROUP_TITLE = "Main"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "focus_query", "Query", tooltip="Focus the query", id="main.focus_query"),
        Binding("f6", "toggle_explain", "Explain", tooltip="Show / hide the explain panel", id="view.explain"),
        Binding(
            "f10",
            "toggle_settings",
            "Settings",
            tooltip="Open / close the settings (a drawer below 100 columns)",
            id="main.settings",
        ),
        # after F10: a narrow footer with room for only one of the two keeps the drawer key
        Binding(
            "f7",
            "focus_lambda",
            "λ",
            tooltip="Focus the MMR λ slider, opening the settings drawer (← and → then move it)",
            id="main.focus_lambda",
        ),
    ]
    FOOTER_FIRST = ("help",)  # F1 lists whatever a narrow footer cannot show; then the focused widget's keys
    settings_open = True  # the settings drawer; each width class starts it at its own default

    def compose(self):
        yield OrientationHeader(id="header")
        yield QueryInput(history=self.app.history, id="query", value=self.app.query_text)
        with Horizontal(id="main-body"):
            cp = ConfigPane("left", id="config-left")
            cp.border_title = "Settings"
            yield cp
            rp = ResultsPane("left", id="pane-left")
            rp.border_title = "Results"
            yield rp
            with Vertical(id="side-panel"):
                dv = DetailView(id="preview")
                dv.border_title = "Preview"
                yield dv
                ex = ExplainPanel(id="explain")
                ex.border_title = "Explain"
                yield ex
        yield MetricsBar(("left",), id="metrics")
        yield IndexStatusBar()
        yield GrooveFooter()

    def on_mount(self) -> None:
        self.app.results_signal.subscribe(self, self._on_results)
        self._query_input().focus()
        self.app.show_index_state(self)

    def breakpoint_changed(self) -> None:
        self._show_settings(self.width_class != "-narrow")

    def action_toggle_settings(self) -> None:
        pane = self.query_one("#config-left", ConfigPane)
        had_focus = pane.has_focus_within
        self._show_settings(not self.settings_open)
        if self.settings_open:
            pane.focus_first()
        elif had_focus:  # a hidden widget keeps the focus (and the keys) unless it moves
            self.focus_results()

    def action_focus_lambda(self) -> None:
        if not self.settings_open:
            self._show_settings(True)
        slider = self.query_one("#left-lambda", Slider)
        self.call_after_refresh(slider.focus)  # a drawer just opened lays out first

    def _show_settings(self, show: bool) -> None:
        self.settings_open = show
        self.set_class(not show, "-settings-hidden")

    def _on_results(self, side: str) -> None:
        if side == "left":
            self.app.refresh_side("left")

    def action_toggle_explain(self) -> None:
        self.toggle_class("-explain")
        self.update_side_panel()

    def update_side_panel(self) -> None:
        row = self.app.focused_rows.get("left")
        resp = self.app.responses.get("left")
        self.query_one("#preview", DetailView).show(row.hit if row else None, row.rank if row else None)
        if self.has_class("-explain"):
            self.query_one("#explain", ExplainPanel).show(
                row.hit if row else None,
                resp.query if resp else None,
                resp.timings_ms if resp else None,
                row.rank if row else None,
                resp.confidence if resp else None,
            )

    def on_results_pane_hit_highlighted(self, event: ResultsPane.HitHighlighted) -> None:
        self.app.focus_row(event.pane.side, event.row)
        self.update_side_panel()

    def on_results_pane_hit_selected(self, event: ResultsPane.HitSelected) -> None:
        self.app.focus_row(event.pane.side, event.row)
        self.app.action_detail()
