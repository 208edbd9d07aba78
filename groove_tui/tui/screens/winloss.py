"""Wins and losses: compare mode's two sides over the whole golden set, query by query.

Each query's metric on the left and on the right and the delta, sorted by delta (the biggest losses
first), with counts of improved / worsened / unchanged and a sign-test and bootstrap p-value
(`engine.winloss`). The scores are the sides' live evaluations, so the table follows the settings as
they move; enter on a row runs that query in both panes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static

from groove_tui.engine.evaluate.winloss import WinLoss, metric_label, wins_losses
from groove_tui.tui.footer import GrooveFooter
from groove_tui.tui.tuning import side_results

if TYPE_CHECKING:
    from textual import getters

    from groove_tui.tui.shell import AppShell

METRICS = ("ndcg", "recall", "mrr")


class QueryTable(DataTable):
    """The per-query table: enter runs the row's query in both panes, and the footer says so (the
    DataTable's own enter binding is hidden)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Run query", tooltip="Run this query in both panes", id="winloss.run")
    ]


class WinLossScreen(Screen):
    if TYPE_CHECKING:
        app = getters.app(AppShell)

    BINDING_GROUP_TITLE = "Wins and losses"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", tooltip="Back to compare mode", id="winloss.back"),
        Binding("m", "next_metric", "Metric", tooltip="nDCG@k → recall@k → MRR", id="winloss.metric"),
    ]
    DEFAULT_CSS = """
    WinLossScreen { layout: vertical; }
    WinLossScreen #winloss-title { height: 1; padding: 0 1; background: $panel; text-style: bold; }
    WinLossScreen #winloss-sides { height: auto; padding: 0 1; color: $foreground-muted; }
    WinLossScreen #winloss-summary { height: auto; padding: 0 1; }
    WinLossScreen #winloss-table { height: 1fr; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.metric = "ndcg"
        self.table_data: WinLoss | None = None

    def compose(self):
        yield Static(Text("Wins and losses: right against left, per golden query"), id="winloss-title")
        yield Static("", id="winloss-sides")
        yield Static("", id="winloss-summary")
        yield QueryTable(id="winloss-table", cursor_type="row", zebra_stripes=True)
        yield GrooveFooter()

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns("Δ", "left", "right", "query")
        self.app.eval_signal.subscribe(self, lambda _side: self.refresh_table())
        self.app.run_config_signal.subscribe(self, lambda _side: self._sides())
        self._sides()
        self.refresh_table()
        self.query_one(DataTable).focus()

    def _sides(self) -> None:
        rcs = self.app.run_configs
        self.query_one("#winloss-sides", Static).update(
            Text(f"left  {rcs['left'].describe(fusion=True)}\nright {rcs['right'].describe(fusion=True)}")
        )

    def refresh_table(self) -> None:
        app = self.app
        session = app.golden_session
        summary = self.query_one("#winloss-summary", Static)
        table = self.query_one(DataTable)
        if session is None:
            summary.update(Text("No golden file loaded: load one from the palette (eval: load golden file…)"))
            return
        k = max(session.k_values)
        left = side_results(app.eval_outcomes["left"], session.golden)
        right = side_results(app.eval_outcomes["right"], session.golden)
        if left is None or right is None:
            summary.update(Text("Scoring both sides on the golden set…"))
            return
        t = wins_losses(left, right, metric=self.metric, k=k)
        self.table_data = t
        line = Text()
        line.append(f"{metric_label(self.metric, k)}  ", style="bold")
        line.append(f"improved {t.improved}", style="green")
        line.append(" · ")
        line.append(f"worsened {t.worsened}", style="red")
        line.append(
            f" · unchanged {t.unchanged} · mean {t.mean_left:.4f} → {t.mean_right:.4f} "
            f"(Δ {t.mean_delta:+.4f}) · sign test p {t.sign_p:.3g} · bootstrap p {t.bootstrap_p:.3g}"
        )
        summary.update(line)
        row = table.cursor_row
        table.clear()
        for r in t.rows:
            style = "green" if r.outcome == "improved" else "red" if r.outcome == "worsened" else "dim"
            delta = "—" if r.outcome == "unchanged" else f"{r.delta:+.4f}"
            table.add_row(
                Text(delta, style=style, justify="right"),
                Text(f"{r.left:.4f}"),
                Text(f"{r.right:.4f}"),
                Text(" ".join(r.query.split())),
                key=r.query,
            )
        if t.rows:
            table.move_cursor(row=min(row, len(t.rows) - 1))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        query = event.row_key.value
        if query:
            self.dismiss(None)
            self.app.set_query(query)

    def action_next_metric(self) -> None:
        self.metric = METRICS[(METRICS.index(self.metric) + 1) % len(METRICS)]
        self.refresh_table()

    def action_close(self) -> None:
        self.dismiss(None)


def open_wins_losses(app) -> None:
    if not app.compare_active:
        app.notify(
            "Wins and losses compare the two sides: enter compare mode first (F5)", severity="warning", markup=False
        )
        return
    if app.golden_session is None:
        app.notify(
            "Wins and losses need a golden file: load one first (palette: eval: load golden file…)",
            severity="warning",
            markup=False,
        )
        return
    app.push_screen(WinLossScreen())
