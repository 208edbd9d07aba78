"""Wins and losses: compare mode's two sides over the whole golden set, query by query.

Each query's metric on the left and on the right and the delta, sorted by delta (the biggest losses
first), with counts of improved / worsened / unchanged and a sign-test and bootstrap p-value
(`engine.winloss`). The scores are the sides' live evaluations, so the table follows the settings as
they move; enter on a row runs that query in both panes. Beside each loss, the stage of the right side's
pipeline that lost its expected note (`Engine.why`), worked out in a thread worker after the table shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static

from groove_tui.engine.evaluate.metrics import QueryResult, is_hit
from groove_tui.engine.evaluate.winloss import WinLoss, metric_label, wins_losses
from groove_tui.tui.golden.tuning import side_results
from groove_tui.tui.keys.footer import GrooveFooter

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


class LossesExplained(Message):
    """Why each loss lost: by query, the stage that lost the right side's expected note and its account."""

    def __init__(self, serial: int, reasons: dict[str, tuple[str, str]]) -> None:
        super().__init__()
        self.serial = serial
        self.reasons = reasons


def lost_entry(left: QueryResult, right: QueryResult, k: int) -> str | None:
    """The expected entry ("path" or "path#heading") the right side ranks worst against the left, within k."""

    def rank(result: QueryResult, e: Any) -> int:
        return next((h.rank for h in result.top_k[:k] if is_hit(e, h.path, h.heading)), k + 1)

    worst = max(left.query.expected, key=lambda e: rank(right, e) - rank(left, e), default=None)
    if worst is None or rank(right, worst) <= rank(left, worst):
        return None
    return worst.path + (f"#{worst.heading}" if worst.heading else "")


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
        self.reasons: dict[str, tuple[str, str]] = {}  # query → (stage, account) of its loss on the right
        self._serial = 0

    def compose(self):
        yield Static(Text("Wins and losses: right against left, per golden query"), id="winloss-title")
        yield Static("", id="winloss-sides")
        yield Static("", id="winloss-summary")
        yield QueryTable(id="winloss-table", cursor_type="row", zebra_stripes=True)
        yield GrooveFooter()

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns("Δ", "left", "right", "query", "why the right side lost it")
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
        lost = {
            a.query.query: entry
            for a, b in zip(left, right, strict=True)
            for entry in [lost_entry(a, b, k)]
            if entry is not None
        }
        outcome = app.eval_outcomes["right"]
        self._serial += 1
        if lost and outcome is not None and outcome.params is not None:
            self.reasons = {q: r for q, r in self.reasons.items() if q in lost}
            self._explain(self._serial, lost, outcome.params)
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
                self._reason_cell(r.query) if r.outcome == "worsened" else Text(""),
                key=r.query,
            )
        if t.rows:
            table.move_cursor(row=min(row, len(t.rows) - 1))

    def _reason_cell(self, query: str) -> Text:
        reason = self.reasons.get(query)
        if reason is None:
            return Text("…", style="dim")
        stage, account = reason
        cell = Text(stage, style="bold")
        cell.append(": " + " ".join(account.split()))
        return cell

    @work(thread=True, exclusive=True, group="winloss-why", exit_on_error=False)
    def _explain(self, serial: int, lost: dict[str, str], params: Any) -> None:
        """The right side's walk of each lost note (no fixes: the stage is what the table shows)."""
        from textual.worker import get_current_worker

        from groove_tui.engine.errors import EngineError

        worker = get_current_worker()
        reasons: dict[str, tuple[str, str]] = {}
        for query, entry in lost.items():
            if worker.is_cancelled:
                return
            try:
                report = self.app.engine.why(query, entry, params, fixes=False, ranks=False)
            except (EngineError, ValueError) as exc:
                reasons[query] = ("not_indexed" if "no note" in str(exc) else "error", str(exc))
                continue
            stage = "below k" if report.on_page else report.verdict
            reasons[query] = (stage, f"{entry}: {report.summary}")
        self.post_message(LossesExplained(serial, reasons))

    def on_losses_explained(self, msg: LossesExplained) -> None:
        if msg.serial != self._serial:
            return  # the table moved on since
        self.reasons.update(msg.reasons)
        table = self.query_one(DataTable)
        if self.table_data is None:
            return
        column = list(table.columns)[4]
        for r in self.table_data.rows:
            if r.outcome == "worsened":
                table.update_cell(r.query, column, self._reason_cell(r.query), update_width=True)

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
