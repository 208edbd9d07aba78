"""The metrics bar: live recall@k / MRR / nDCG@k of the golden set for each side (with the change since
the previous value), the current query's own scores, and the judgment state. Hidden without a golden set."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, ClassVar

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from groove_tui.engine.evaluate.metrics import Aggregate, QueryMetrics

if TYPE_CHECKING:
    from textual import getters

    from groove_tui.tui.shell import AppShell

EPS = 0.0005  # deltas below this print as unchanged


def metric_items(agg: Aggregate | QueryMetrics, k_values: tuple[int, ...]) -> list[tuple[str, float]]:
    mrr = agg.mrr if isinstance(agg, Aggregate) else agg.reciprocal_rank
    items = [(f"R@{k}", agg.recall_at_k.get(k, 0.0)) for k in k_values]
    items.append(("MRR" if isinstance(agg, Aggregate) else "RR", mrr))
    items += [(f"nDCG@{k}", agg.ndcg_at_k.get(k, 0.0)) for k in k_values]
    return items


def cell(value: float, previous: float | None, *, up: Style | str, down: Style | str, dim: bool = False) -> Text:
    """`0.571 ↓.429`: the value, and the change since the previous value where it moved."""
    out = Text(f"{value:.3f}", style="dim" if dim else "bold")
    if previous is not None and abs(value - previous) >= EPS:
        d = value - previous
        out.append(f" {'↑' if d > 0 else '↓'}{abs(d):.3f}".replace("0.", ".", 1), style=up if d > 0 else down)
    return out


class MetricsBar(Static):
    """A small table: one column per metric (recall@k, MRR, nDCG@k for `[eval] k_values`), one row per
    side, one row per side for the current query (from the hits shown). `*` after the file name marks
    unsaved judgments."""

    if TYPE_CHECKING:
        app = getters.app(AppShell)

    COMPONENT_CLASSES: ClassVar[set[str]] = {"metric--up", "metric--down", "metric--label", "metric--title"}
    DEFAULT_CSS = """
    MetricsBar { height: auto; max-height: 6; padding: 0 1; background: $panel; display: none; }
    MetricsBar.-active { display: block; }
    MetricsBar > .metric--up { color: $rank-up; text-style: bold; }
    MetricsBar > .metric--down { color: $rank-down; text-style: bold; }
    MetricsBar > .metric--label { color: $foreground-muted; }
    MetricsBar > .metric--title { color: $accent; text-style: bold; }
    """

    def __init__(self, sides: tuple[str, ...] = ("left",), *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.sides = sides

    def on_mount(self) -> None:
        app = self.app
        app.eval_signal.subscribe(self, lambda _side: self.refresh_metrics())
        app.results_signal.subscribe(self, lambda _side: self.refresh_metrics())
        app.theme_changed_signal.subscribe(self, lambda _t: self.refresh_metrics())
        app.header_signal.subscribe(self, lambda _what: self.refresh_metrics())  # index progress
        self.refresh_metrics()

    @property
    def plain(self) -> str:
        """The bar as plain text (tests, screenshots)."""
        from rich.console import Console

        console = Console(width=max(40, self.size.width or 120), record=True, file=_Null(), color_system=None)
        console.print(self._table())
        return console.export_text()

    def refresh_metrics(self) -> None:
        session = self.app.golden_session
        self.set_class(session is not None, "-active")
        self.update(self._table() if session is not None else Text(""))

    def _table(self) -> Table:
        app = self.app
        session = app.golden_session
        assert session is not None  # the bar is drawn only while a golden set is loaded
        st = {c: self.get_component_rich_style(c, partial=True) for c in self.COMPONENT_CLASSES}
        ks = session.k_values
        names = [f"R@{k}" for k in ks] + ["MRR"] + [f"nDCG@{k}" for k in ks]
        table = Table(
            box=None, padding=(0, 1), pad_edge=False, show_header=True, header_style=st["metric--label"], expand=False
        )
        title = Text(
            f"{session.name}{'*' if session.dirty else ''} · {len(session.golden.queries)} q", style=st["metric--title"]
        )
        p = app.index_progress
        if p is not None and p.phase == "embed" and p.total:
            # scores of a partly embedded index: they move as vectors arrive and are taken again at the end
            title.append(f" · {100 * p.done // p.total} % embedded", style=st["metric--label"])
        table.add_column(title, no_wrap=True, min_width=22)
        for n in names:
            table.add_column(n, no_wrap=True)
        compare = len(self.sides) > 1
        for side in self.sides:
            label = Text(side, style=st["metric--title"] if compare else st["metric--label"])
            outcome = app.eval_outcomes.get(side)
            progress = app.eval_progress.get(side)
            if progress is not None:
                label.append(f" {progress[0]}/{progress[1]}…", style="italic")
            if outcome is None:
                msg = "no judged queries yet" if not session.golden.queries else (app.waiting_for_index() or "")
                table.add_row(label, Text(msg, style=st["metric--label"]), *[""] * (len(names) - 1))
                continue
            prev = app.eval_previous.get(side)
            values = _values(outcome.aggregate, ks)
            before = _values(prev, ks) if prev is not None else [None] * len(values)
            table.add_row(
                label,
                *[
                    cell(v, b, up=st["metric--up"], down=st["metric--down"], dim=progress is not None)
                    for v, b in zip(values, before, strict=True)
                ],
            )
        query = app.query_text
        q = session.golden.find(query) if query.strip() else None
        if q is None:
            what = "query: not in the set" if query.strip() else "query: none"
            table.add_row(Text(what, style=st["metric--label"]), *[""] * len(names))
        else:
            for side in self.sides:
                qm = app.query_metrics(side)
                label = Text(f"query · {len(q.expected)} expected", style=st["metric--label"])
                if compare:
                    label = Text(f"{side} query", style=st["metric--label"])
                if qm is None:
                    table.add_row(label, *[""] * len(names))
                    continue
                table.add_row(label, *[Text(f"{v:.3f}") for v in _values(qm, ks)])
        return table


def _values(m: Aggregate | QueryMetrics, ks: tuple[int, ...]) -> list[float]:
    return [v for _name, v in metric_items(m, ks)]


class _Null(io.StringIO):
    def write(self, _s: str) -> int:
        return 0

    def flush(self) -> None:
        pass
