"""Compare mode: the same query under two configurations side by side."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Static

from groove_tui.engine.types import Hit
from groove_tui.tui.keys.footer import FooterOrder, GrooveFooter
from groove_tui.tui.look.layout import Responsive
from groove_tui.tui.screens.main import SearchScreenMixin
from groove_tui.tui.search.compare import compare
from groove_tui.tui.search.runconfig import SIDES, fit_parts
from groove_tui.tui.widgets.config_pane import ConfigPane
from groove_tui.tui.widgets.metrics import MetricsBar
from groove_tui.tui.widgets.query_input import QueryInput
from groove_tui.tui.widgets.results import ResultsPane
from groove_tui.tui.widgets.status import IndexStatusBar, OrientationHeader

if TYPE_CHECKING:
    from textual import getters

    from groove_tui.tui.shell import AppShell

PRESETS = Binding.Group("Presets", compact=True)


class CompareScreen(FooterOrder, Responsive, SearchScreenMixin, Screen):
    if TYPE_CHECKING:
        app = getters.app(AppShell)

    BINDING_GROUP_TITLE = "Compare"
    BINDINGS: ClassVar[list[BindingType]] = [
        # f5 first: the footer shows the first key, and F5 is the key that entered compare mode
        Binding("f5,escape", "back", "Back", tooltip="Back to the main screen", id="compare.back"),
        # the presets share one footer label so F12 and ctrl+s still fit; F1 lists each
        Binding(
            "f7", "app.preset('reranker')", "Preset: reranker off / on", group=PRESETS, id="compare.preset_reranker"
        ),
        Binding("f8", "app.preset('mmr')", "Preset: MMR off / on", group=PRESETS, id="compare.preset_mmr"),
        Binding("f9", "app.preset('lambda')", "Preset: λ 0.3 / 0.9", group=PRESETS, id="compare.preset_lambda"),
        Binding(
            "f10", "toggle_settings", "Settings", tooltip="Show / hide each side's settings", id="compare.settings"
        ),
        # below 100 columns one side shows at a time
        Binding(
            "f6", "other_side", "Other side", tooltip="Show the other side (below 100 columns)", id="compare.other_side"
        ),
        Binding("ctrl+x", "app.swap_sides", "Swap", tooltip="Swap the sides' settings", show=False, id="compare.swap"),
    ]

    # two result lists leave no room for everything: leaving, help, the toggles and export come first
    FOOTER_FIRST = (
        "back",
        "help",
        "toggle('mmr')",
        "toggle('parent')",
        "toggle('reranker')",
        "toggle('fusion')",
        "export",
        "app.preset('reranker')",
        "app.preset('mmr')",
        "app.preset('lambda')",
        "toggle_settings",
        "other_side",
    )
    comparison = None  # the Comparison shown, None while the sides are not comparable

    def compose(self):
        yield OrientationHeader(id="header")
        yield QueryInput(history=self.app.history, id="query", value=self.app.query_text)
        yield Static("", id="compare-summary", markup=False)
        with Horizontal(id="compare-body"):
            for side in ("left", "right"):
                with Vertical(classes="compare-side", id=f"side-{side}"):
                    yield Static("", classes="side-label", id=f"label-{side}", markup=False)
                    with Horizontal(classes="compare-inner"):
                        cp = ConfigPane(side, id=f"config-{side}", classes="compare-config")
                        cp.border_title = "Settings"
                        yield cp
                        rp = ResultsPane(side, id=f"pane-{side}")
                        rp.border_title = side.capitalize()
                        yield rp
        yield MetricsBar(("left", "right"), id="metrics")
        yield IndexStatusBar()
        yield GrooveFooter(compact=True)

    def on_mount(self) -> None:
        self.app.results_signal.subscribe(self, self._on_results)
        self.app.run_config_signal.subscribe(self, lambda _side: self._labels())
        self._labels()
        self.query_one("#pane-left", ResultsPane).list.focus()
        self.app.show_index_state(self)
        self.refresh_comparison()

    def breakpoint_changed(self) -> None:
        self._show_side(self.app.active_side)
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "other_side":
            return self.width_class == "-narrow"
        return True

    def _show_side(self, side: str) -> None:
        self.set_class(side == "left", "-show-left")
        self.set_class(side == "right", "-show-right")

    def action_other_side(self) -> None:
        other = "right" if self.app.active_side == "left" else "left"
        self._show_side(other)
        # the list was hidden, so it can take the focus only once it is displayed
        self.call_after_refresh(self.query_one(f"#pane-{other}", ResultsPane).list.focus)

    def apply_size(self, width: int, height: int) -> None:
        super().apply_size(width, height)
        self.call_after_refresh(self._labels)  # each label fits its column

    def _labels(self) -> None:
        """Each side's settings, as far as its list shows them: a setting whose results are not painted
        yet is marked "(pending)"; parts the column has no room for go first, the reranker's state last."""
        if not self.is_mounted:
            return
        app = self.app
        rcs = app.run_configs
        # the fusion method is named when the sides differ in it or when it is not the configured one
        methods = {rcs["left"].fusion, rcs["right"].fusion}
        fusion = methods != {app.default_fusion}
        available = app.reranker_model is not None
        parts = {side: rcs[side].describe_parts(fusion=fusion, reranker_available=available) for side in SIDES}
        shared = {k for k, t in parts["left"] if (k, t) in parts["right"]}
        for side in SIDES:
            pending = app.pending_settings(side)
            label = self.query_one(f"#label-{side}", Static)
            prefix = f"{side.upper()}: "
            marked = [(k, t + " (pending)" if k in pending else t) for k, t in parts[side]]
            width = label.content_size.width or 10_000
            text = Text(prefix, style="bold")
            for i, (key, part) in enumerate(fit_parts(marked, shared, width, cell_len(prefix))):
                if i:
                    text.append(" · ", style="bold")
                text.append(part, style="italic" if key in pending else "bold")
            label.update(text)

    def _on_results(self, side: str) -> None:
        self._labels()  # a pending setting's results may have arrived
        self.refresh_comparison()

    def refresh_comparison(self) -> None:
        """Show both sides. Markers, gone rows and the summary are computed only when both sides show
        results for the same query text (a side whose search is still running keeps its older results
        unmarked until it arrives, then this runs again), and the cursors are linked afterwards from the
        active side, so the picture does not depend on which worker finished first."""
        if not self.is_mounted:  # results that arrive while the screen is being pushed: on_mount shows them
            return
        app = self.app
        left, right = app.responses.get("left"), app.responses.get("right")
        lp = self.query_one("#pane-left", ResultsPane)
        rp = self.query_one("#pane-right", ResultsPane)
        summary = self.query_one("#compare-summary", Static)
        for side, pane in (("left", lp), ("right", rp)):
            err = app.errors.get(side)
            if err:
                pane.show(None)
                pane.set_message(err, error=True)
        notes = {side: app.rerank_note(side) for side in ("left", "right")}
        if app.errors.get("left") or app.errors.get("right"):
            for side, pane, resp in (("left", lp, left), ("right", rp, right)):
                if not app.errors.get(side):
                    pane.show(resp, note=notes[side])
            summary.update(Text(""))
            self.comparison = None
            return
        if left is None or right is None or not app.same_query_shown():
            lp.show(left, note=notes["left"])
            rp.show(right, note=notes["right"])
            self.comparison = None
            waiting = left is not None or right is not None
            summary.update(Text("comparing…" if waiting and app.query_text.strip() else "", style="italic"))
            return
        lk = [h.chunk_id for h in left.results]
        rk = [h.chunk_id for h in right.results]
        k = max(app.run_configs["left"].limit, app.run_configs["right"].limit, 1)
        cmp = compare(lk, rk, k=k)
        lpos: dict[Hashable, tuple[int, Hit]] = {h.chunk_id: (i, h) for i, h in enumerate(left.results, 1)}
        rpos: dict[Hashable, tuple[int, Hit]] = {h.chunk_id: (i, h) for i, h in enumerate(right.results, 1)}
        lp.show(left, markers=cmp.left, gone=[(rpos[c][1], rpos[c][0]) for c in cmp.left_gone], note=notes["left"])
        rp.show(right, markers=cmp.right, gone=[(lpos[c][1], lpos[c][0]) for c in cmp.right_gone], note=notes["right"])
        self.comparison = cmp
        text = Text(cmp.summary.as_text(), style="bold")
        for side, resp in (("left", left), ("right", right)):
            if resp.rerank_skipped:  # "reranker off / on" that shows no difference must say why
                text.append(f" · {side}: not reranked", style="italic")
        summary.update(text)
        self._link_cursors(app.active_side)

    def _link_cursors(self, leader: str) -> None:
        """Put the other side's cursor on the leader's chunk (if it shows it)."""
        row = self.query_one(f"#pane-{leader}", ResultsPane).highlighted_row
        if row is not None:
            other = "right" if leader == "left" else "left"
            self.query_one(f"#pane-{other}", ResultsPane).follow(row.hit.chunk_id)

    def action_back(self) -> None:
        self.dismiss(None)

    def on_unmount(self) -> None:
        self.app.leave_compare()

    def on_results_pane_hit_highlighted(self, event: ResultsPane.HitHighlighted) -> None:
        event.stop()
        self.app.focus_row(event.pane.side, event.row, activate=event.pane.list.has_focus)
        if event.user and event.row is not None:
            self._link_cursors(event.pane.side)

    def on_results_pane_hit_selected(self, event: ResultsPane.HitSelected) -> None:
        event.stop()
        self.app.focus_row(event.pane.side, event.row)
        self.app.action_detail()

    def on_descendant_focus(self, event) -> None:
        for side in ("left", "right"):
            if self.query_one(f"#side-{side}").has_focus_within and self.app.active_side != side:
                self.app.active_side = side
                self._show_side(side)
                self.app.refresh_bindings()

    def action_toggle_settings(self) -> None:
        self.toggle_class("-show-settings")
        # Showing the settings narrows both result lists; Textual does not always send each list a
        # Resize for it, so re-fit the rows once the new layout is in place.
        self.call_after_refresh(self._fit_results)

    def _fit_results(self) -> None:
        for pane in self.query(ResultsPane):
            pane.fit_width()
