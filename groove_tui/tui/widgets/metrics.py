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

    def on_resize(self) -> None:
        if self.app.golden_session is not None:
            self.refresh_metrics()  # which metrics fit depends on the width

    def _table(self) -> Table:
        app = self.app
        session = app.golden_session
        assert session is not None  # the bar is drawn only while a golden set is loaded
        st = {c: self.get_component_rich_style(c, partial=True) for c in self.COMPONENT_CLASSES}
        ks = session.k_values
        names = [f"R@{k}" for k in ks] + ["MRR"] + [f"nDCG@{k}" for k in ks]
        title = Text(
            f"{session.name}{'*' if session.dirty else ''} · {len(session.golden.queries)} q", style=st["metric--title"]
        )
        p = app.index_progress
        if p is not None and p.phase == "embed" and p.total:
            # scores of a partly embedded index: they move as vectors arrive and are taken again at the end
            title.append(f" · {100 * p.done // p.total} % embedded", style=st["metric--label"])
        rows: list[tuple[Text, list[Text]]] = []  # label, one cell per metric; a row with a message has one
        compare = len(self.sides) > 1
        for side in self.sides:
            label = Text(side, style=st["metric--title"] if compare else st["metric--label"])
            outcome = app.eval_outcomes.get(side)
            progress = app.eval_progress.get(side)
            if progress is not None:
                label.append(f" {progress[0]}/{progress[1]}…", style="italic")
            if outcome is None:
                msg = "no judged queries yet" if not session.golden.queries else (app.waiting_for_index() or "")
                rows.append((label, [Text(msg, style=st["metric--label"])]))
                continue
            prev = app.eval_previous.get(side)
            values = _values(outcome.aggregate, ks)
            before = _values(prev, ks) if prev is not None else [None] * len(values)
            cells = [
                cell(v, b, up=st["metric--up"], down=st["metric--down"], dim=progress is not None)
                for v, b in zip(values, before, strict=True)
            ]
            rows.append((label, cells))
        query = app.query_text
        q = session.golden.find(query) if query.strip() else None
        if q is None:
            what = "query: not in the set" if query.strip() else "query: none"
            rows.append((Text(what, style=st["metric--label"]), []))
        else:
            for side in self.sides:
                qm = app.query_metrics(side)
                label = Text(f"query · {len(q.expected)} expected", style=st["metric--label"])
                if compare:
                    label = Text(f"{side} query", style=st["metric--label"])
                rows.append((label, [Text(f"{v:.3f}") for v in _values(qm, ks)] if qm is not None else []))

        label_width = max(22, title.cell_len, *(label.cell_len for label, _ in rows))
        shown = _fitting(names, rows, label_width, self.content_size.width)
        table = Table(
            box=None, padding=(0, 1), pad_edge=False, show_header=True, header_style=st["metric--label"], expand=False
        )
        table.add_column(title, no_wrap=True, min_width=22)
        for i in shown:
            table.add_column(names[i], no_wrap=True)
        for label, cells in rows:
            if len(cells) == 1 and len(names) > 1:  # a message spans the metric columns
                table.add_row(label, cells[0], *[""] * (len(shown) - 1))
            else:
                table.add_row(label, *[cells[i] if i < len(cells) else "" for i in shown])
        return table


# Which metrics a narrow bar keeps, most telling first: MRR, then the deepest nDCG and recall, then the
# shallowest, then the rest. A metric is shown whole or not at all (`groove-tui eval` prints every one).
def _priority(names: list[str]) -> list[int]:
    n_k = (len(names) - 1) // 2
    mrr = n_k
    order = [mrr]
    if n_k:
        order += [2 * n_k, n_k - 1, 0, n_k + 1]
        order += [i for k in range(n_k - 2, 0, -1) for i in (k + n_k + 1, k)]
    seen: list[int] = []
    for i in order:
        if i not in seen:
            seen.append(i)
    return seen


def _fitting(names: list[str], rows: list[tuple[Text, list[Text]]], label_width: int, width: int) -> list[int]:
    """The metric columns (indices into `names`, in their order) that fit `width` cells whole beside the
    label column; all of them before the bar knows its width."""
    if width <= 0:
        return list(range(len(names)))
    widths = [
        max([len(name), *(cells[i].cell_len for _label, cells in rows if len(cells) == len(names))])
        for i, name in enumerate(names)
    ]
    used = label_width
    shown: list[int] = []
    for i in _priority(names):
        if used + 2 + widths[i] > width:
            continue
        used += 2 + widths[i]
        shown.append(i)
    return sorted(shown)


def _values(m: Aggregate | QueryMetrics, ks: tuple[int, ...]) -> list[float]:
    return [v for _name, v in metric_items(m, ks)]


class _Null(io.StringIO):
    def write(self, _s: str) -> int:
        return 0

    def flush(self) -> None:
        pass
