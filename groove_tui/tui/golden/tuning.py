"""What the explorer's tuning screens act on (no Textual here): the setting a settings-pane widget stands
for, the values a sweep of it tries, how a swept value goes back into a side's RunConfig, and the
golden-set results of a side in the shape `engine.winloss` compares."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from groove_tui.engine.evaluate.golden import GoldenSet
from groove_tui.engine.evaluate.metrics import QueryResult
from groove_tui.engine.evaluate.sweep import SweepAxis
from groove_tui.settings.config import FUSION_METHODS
from groove_tui.tui.search.runconfig import RunConfig


@dataclass(frozen=True, slots=True)
class SweepTarget:
    knob: str  # engine.knobs name
    field: str  # the RunConfig field the value goes back into
    values: tuple[Any, ...]
    label: str

    def axis(self) -> SweepAxis:
        return SweepAxis(self.knob, self.values)


_STEPS = tuple(round(i / 10, 1) for i in range(11))
TARGETS = {
    "lambda": SweepTarget("mmr_lambda", "lam", _STEPS, "MMR λ"),
    "penalty": SweepTarget("mmr_same_doc_penalty", "same_doc_penalty", _STEPS, "same-doc penalty"),
    "fusion": SweepTarget("fusion", "fusion", FUSION_METHODS, "fusion method"),
}
DEFAULT_TARGET = "lambda"  # when the cursor is on no sweepable setting


def target_for_widget(widget_id: str | None) -> tuple[str | None, SweepTarget | None]:
    """`left-lambda` → ("left", λ's target); a widget that is no sweepable setting → (side or None, None)."""
    if not widget_id or "-" not in widget_id:
        return None, None
    side, _, what = widget_id.partition("-")
    if side not in ("left", "right"):
        return None, None
    return side, TARGETS.get(what)


def current_value(rc: RunConfig, target: SweepTarget) -> Any:
    return getattr(rc, target.field)


def with_value(rc: RunConfig, target: SweepTarget, value: Any) -> RunConfig:
    """The side's settings at a swept value; λ and the penalty act inside MMR, so they turn it on."""
    changes: dict[str, Any] = {target.field: value}
    if target.knob in ("mmr_lambda", "mmr_same_doc_penalty"):
        changes["mmr"] = True
    return replace(rc, **changes)


def side_results(outcome: Any, golden: GoldenSet) -> tuple[QueryResult, ...] | None:
    """A side's live evaluation (tui.golden.EvalOutcome) as per-query results, in golden order; None
    while some query has no score yet."""
    if outcome is None or any(q.query not in outcome.per_query for q in golden.queries):
        return None
    return tuple(QueryResult(q, outcome.hits.get(q.query, ()), outcome.per_query[q.query]) for q in golden.queries)
