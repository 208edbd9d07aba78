"""The sweep screen: the golden set scored at every value of one setting, drawn as a chart.

The setting is the one under the cursor in the settings pane (λ, the same-document penalty or the
fusion method; λ otherwise). The sweep runs in a thread worker through `engine.sweep.run_sweep` with the
side's live settings under eval semantics, so each point equals what the metrics bar would show at that
value; esc cancels it. `b` jumps the side's setting to the best value, enter to the row under the cursor.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, ProgressBar, Static
from textual.worker import Worker, WorkerState, get_current_worker
from textual_plot import HiResMode, PlotWidget

from groove_tui.engine.errors import SearchCancelled
from groove_tui.engine.evaluate.knobs import format_value
from groove_tui.engine.evaluate.sweep import SweepResult, run_sweep
from groove_tui.tui.golden.tuning import SweepTarget, current_value, with_value
from groove_tui.tui.keys.footer import GrooveFooter

if TYPE_CHECKING:
    from textual import getters

    from groove_tui.tui.shell import AppShell

METRIC_LINES = (("ndcg", "nDCG@{k}", "green"), ("recall", "recall@{k}", "cyan"), ("mrr", "MRR", "magenta"))


class SweepProgressed(Message):
    def __init__(self, done: int, total: int) -> None:
        super().__init__()
        self.done = done
        self.total = total

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SweepProgressed)


class SweepFinished(Message):
    def __init__(self, result: SweepResult) -> None:
        super().__init__()
        self.result = result


class SweepScreen(Screen):
    if TYPE_CHECKING:
        app = getters.app(AppShell)

    BINDING_GROUP_TITLE = "Sweep"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", tooltip="Back (cancels a running sweep)", id="sweep.back"),
        Binding("b", "apply_best", "Use best", tooltip="Set the side's setting to the best value", id="sweep.best"),
        Binding(
            "m", "next_metric", "Metric", tooltip="Which metric 'best' means: nDCG → recall → MRR", id="sweep.metric"
        ),
    ]
    DEFAULT_CSS = """
    SweepScreen { layout: vertical; }
    SweepScreen #sweep-title { height: 1; padding: 0 1; background: $panel; text-style: bold; }
    SweepScreen #sweep-chart { height: 1fr; min-height: 6; }
    SweepScreen #sweep-foot { height: auto; }
    SweepScreen #sweep-legend { height: 1; padding: 0 1; }
    SweepScreen #sweep-status { height: auto; padding: 0 1; }
    SweepScreen #sweep-progress { height: 1; padding: 0 1; }
    SweepScreen #sweep-table { height: 35%; min-height: 4; }
    """

    def __init__(self, side: str, target: SweepTarget) -> None:
        super().__init__()
        self.side = side
        self.target = target
        self.result: SweepResult | None = None
        self.metric = "ndcg"
        self.error: str | None = None

    # ------------------------------------------------------------ layout

    def compose(self):
        where = f" ({self.side} side)" if self.app.compare_active else ""
        yield Static(Text(f"Sweep: {self.target.label}{where}"), id="sweep-title")
        plot = PlotWidget(id="sweep-chart", allow_pan_and_zoom=False)
        plot.can_focus = False  # its arrow keys would pan; the table keeps the cursor
        yield plot
        with Vertical(id="sweep-foot"):
            yield Static("", id="sweep-legend")
            yield ProgressBar(total=None, show_eta=False, id="sweep-progress")
            yield Static("", id="sweep-status")
        table: DataTable[Text | str] = DataTable(id="sweep-table", cursor_type="row", zebra_stripes=True)
        yield table
        yield GrooveFooter()

    def on_mount(self) -> None:
        plot = self.query_one(PlotWidget)
        plot.margin_top = 0  # no legend box above (the legend is a line below): rows go to the lines
        plot.margin_bottom = 2  # tick labels and the setting's name
        table = self.query_one(DataTable)
        k = max(self._ks())
        # The figures' columns are as wide as their format from the start (0.0000, 10.00, 9999.9): widths
        # that grew with the rows let a row drawn early keep a cut value ("0.3" for 0.3333).
        table.add_column(self.target.knob)
        for label, figures in ((f"nDCG@{k}", 6), (f"recall@{k}", 6), ("MRR", 6), (f"docs@{k}", 5), ("ms", 6)):
            table.add_column(label, width=max(len(label), figures))
        self._status(Text("Scoring the golden set at each value… (esc cancels)"))
        table.focus()
        self.run_worker(self._sweep, name="sweep", group="sweep", thread=True, exclusive=True, exit_on_error=False)

    # ------------------------------------------------------------ the worker

    def _ks(self) -> tuple[int, ...]:
        session = self.app.golden_session
        assert session is not None  # the screen opens only with a golden set loaded
        return session.k_values

    def _sweep(self) -> None:
        from groove_tui.tui.golden.session import eval_params

        app = self.app
        worker = get_current_worker()
        session = app.golden_session
        assert session is not None  # the screen opens only with a golden set loaded
        rc = app.run_configs[self.side]
        params = eval_params(rc.to_params(app.base_params, app.reranker_model, explain=False), session.k_values)
        step = max(1, len(session.golden.queries) * len(self.target.values) // 100)

        def progress(done: int, total: int) -> None:
            if (done % step == 0 or done == total) and not worker.is_cancelled:
                self.post_message(SweepProgressed(done, total))

        try:
            result = run_sweep(
                app.engine,
                session.golden,
                params,
                (self.target.axis(),),
                session.k_values,
                progress=progress,
                cancel=worker.cancelled_event,
                snapshot=False,
            )
        except SearchCancelled:
            return
        if not worker.is_cancelled:
            self.post_message(SweepFinished(result))

    def on_sweep_progressed(self, msg: SweepProgressed) -> None:
        bar = self.query_one(ProgressBar)
        bar.update(total=msg.total, progress=msg.done)

    def on_sweep_finished(self, msg: SweepFinished) -> None:
        self.result = msg.result
        self.query_one(ProgressBar).display = False
        self._draw()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "sweep" or event.state != WorkerState.ERROR:
            return
        event.stop()
        err = event.worker.error
        self.error = str(err) if isinstance(err, ValueError) else f"{type(err).__name__}: {err}"
        self.query_one(ProgressBar).display = False
        self._status(Text(f"Sweep failed: {self.error}", style="bold red"))

    # ------------------------------------------------------------ drawing

    def _xs(self) -> list[float]:
        """Numeric settings plot at their value; the fusion method at its position in the list."""
        values = self.target.values
        return [float(v) if isinstance(v, (int, float)) else float(i) for i, v in enumerate(values)]

    def _x_of(self, value: Any) -> float | None:
        try:
            return self._xs()[list(self.target.values).index(value)]
        except ValueError:
            return None

    def _draw(self) -> None:
        result = self.result
        if result is None:
            return
        k = max(result.k_values)
        xs = self._xs()
        plot = self.query_one(PlotWidget)
        plot.clear()
        # Two lines, the metric "best" means and the diversity it costs: more overdraw each other in a
        # 60×20 terminal (the table below has every metric). A cell shows the last line drawn into it,
        # so the metric goes on top.
        ys = [p.diversity / k for p in result.points]
        plot.plot(xs, ys, line_style="yellow", hires_mode=HiResMode.BRAILLE, label=f"docs@{k} ÷ {k}")
        _m, label, colour = next(m for m in METRIC_LINES if m[0] == self.metric)
        ys = [p.metric(self.metric, k) for p in result.points]
        plot.plot(xs, ys, line_style=colour, hires_mode=HiResMode.BRAILLE, label=label.format(k=k))
        now = self._x_of(current_value(self.app.run_configs[self.side], self.target))
        if now is not None:
            plot.add_v_line(now, line_style="grey50", label="current")
        best = result.best(self.metric)
        best_x = self._x_of(best.settings[0][1])
        if best_x is not None and best_x != now:
            plot.add_v_line(best_x, line_style="bold green", label="best")
        plot.set_ylimits(0.0, 1.0)
        plot.set_yticks([0.0, 0.5, 1.0])  # more labels crowd and drift at a few rows' height
        plot.set_xlimits(min(xs) - 0.02 * max(1.0, xs[-1] - xs[0]), max(xs) + 0.02 * max(1.0, xs[-1] - xs[0]))
        plot.set_xticks(xs if len(xs) <= 6 else xs[::2])
        names = (
            ""
            if all(isinstance(v, (int, float)) for v in self.target.values)
            else "  (" + ", ".join(f"{i}={v}" for i, v in enumerate(self.target.values)) + ")"
        )
        plot.set_xlabel(self.target.knob + names)
        plot.show_legend(is_visible=False)  # a legend box covers the lines at 60×20: one line below instead
        self._legend(k, now is not None, best_x is not None and best_x != now)
        self._fill_table(result, best)
        self._status(self._summary(result, best))

    def _legend(self, k: int, current: bool, best: bool) -> None:
        text = Text()
        _m, label, colour = next(m for m in METRIC_LINES if m[0] == self.metric)
        text.append("━ ", style=colour)
        text.append(label.format(k=k) + "  ")
        text.append("━ ", style="yellow")
        text.append(f"docs@{k} ÷ {k}  ")
        if current:
            text.append("│ ", style="grey50")
            text.append("current  ")
        if best:
            text.append("│ ", style="bold green")
            text.append("best")
        self.query_one("#sweep-legend", Static).update(text)

    def _fill_table(self, result: SweepResult, best) -> None:
        table = self.query_one(DataTable)
        table.clear()
        k = max(result.k_values)
        now = current_value(self.app.run_configs[self.side], self.target)
        for p in result.points:
            value = p.settings[0][1]
            mark = "▶ " if p is best else ("· " if value == now else "  ")
            a = p.aggregate
            table.add_row(
                Text(mark + format_value(value)),
                Text(f"{a.ndcg_at_k.get(k, 0.0):.4f}"),
                Text(f"{a.recall_at_k.get(k, 0.0):.4f}"),
                Text(f"{a.mrr:.4f}"),
                Text(f"{p.diversity:.2f}"),
                Text(f"{p.search_ms:.1f}"),
            )
        table.move_cursor(row=result.points.index(best))

    def _summary(self, result: SweepResult, best) -> Text:
        k = max(result.k_values)
        label = {"ndcg": f"nDCG@{k}", "recall": f"recall@{k}", "mrr": "MRR"}[self.metric]
        now = current_value(self.app.run_configs[self.side], self.target)
        value = best.metric(self.metric, k)
        text = Text()
        text.append(f"best {label} {value:.4f} at {format_value(best.settings[0][1])}", style="bold")
        text.append(f" · now {format_value(now)} · b: use best · docs@{k}: distinct documents")
        if not math.isfinite(value):
            text = Text("no judged queries: nothing to score")
        return text

    def _status(self, text: Text) -> None:
        self.query_one("#sweep-status", Static).update(text)

    # ------------------------------------------------------------ actions

    def _use(self, value: Any) -> None:
        app = self.app
        app.set_run_config(self.side, with_value(app.run_configs[self.side], self.target, value))
        app.notify(f"{self.target.label}: {format_value(value)}", markup=False, timeout=2)
        self._draw()

    def action_apply_best(self) -> None:
        if self.result is not None:
            self._use(self.result.best(self.metric).settings[0][1])

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if self.result is not None and 0 <= event.cursor_row < len(self.result.points):
            self._use(self.result.points[event.cursor_row].settings[0][1])

    def action_next_metric(self) -> None:
        order = [m for m, _l, _c in METRIC_LINES]
        self.metric = order[(order.index(self.metric) + 1) % len(order)]
        self._draw()

    def action_close(self) -> None:
        self.workers.cancel_group(self, "sweep")
        self.dismiss(None)


def open_sweep(app) -> None:
    """Sweep the setting under the cursor in a settings pane (λ when the cursor is elsewhere)."""
    from groove_tui.tui.golden.tuning import DEFAULT_TARGET, TARGETS, target_for_widget

    if app.golden_session is None:
        app.notify(
            "A sweep scores a golden file: load one first (palette: eval: load golden file…)",
            severity="warning",
            markup=False,
        )
        return
    side: str | None = None
    target = None
    node = app.focused
    while node is not None and target is None:  # a Select's inner parts report the Select's id
        side, target = target_for_widget(getattr(node, "id", None))
        node = node.parent
    if target is None:
        side, target = (app.active_side if app.compare_active else "left"), TARGETS[DEFAULT_TARGET]
    app.push_screen(SweepScreen(side or "left", target))
