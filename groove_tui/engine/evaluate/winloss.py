"""Wins and losses: two runs of one golden set compared query by query, with a significance test.

    table = wins_losses(left_results, right_results, metric="ndcg", k=10)
    table.rows            # one per judged query, sorted by delta (right − left), worst first
    table.improved, table.worsened, table.unchanged, table.sign_p, table.bootstrap_p

The sign test is exact (two-sided binomial over the queries that changed); the bootstrap resamples
the per-query differences with a fixed seed, so the same runs always give the same p-value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from groove_tui.engine.evaluate.metrics import QueryMetrics, QueryResult

TIE = 1e-9  # deltas smaller than this are "unchanged" (float noise in the means)
BOOTSTRAP_SAMPLES = 10_000
BOOTSTRAP_SEED = 15


def metric_value(m: QueryMetrics, metric: str, k: int) -> float:
    if metric == "mrr":
        return m.reciprocal_rank
    if metric == "recall":
        return m.recall_at_k.get(k, 0.0)
    if metric == "ndcg":
        return m.ndcg_at_k.get(k, 0.0)
    raise ValueError(f"metric {metric!r} is invalid: expected ndcg, recall or mrr")


def metric_label(metric: str, k: int) -> str:
    return "MRR" if metric == "mrr" else f"{'nDCG' if metric == 'ndcg' else 'recall'}@{k}"


@dataclass(frozen=True, slots=True)
class QueryDelta:
    id: str
    query: str
    left: float
    right: float

    @property
    def delta(self) -> float:
        return self.right - self.left

    @property
    def outcome(self) -> str:
        d = self.delta
        return "unchanged" if abs(d) < TIE else ("improved" if d > 0 else "worsened")

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "query": self.query,
            "left": self.left,
            "right": self.right,
            "delta": self.delta,
            "outcome": self.outcome,
        }


@dataclass(frozen=True, slots=True)
class WinLoss:
    metric: str
    k: int
    rows: tuple[QueryDelta, ...]  # sorted by delta, ascending: the biggest losses first
    improved: int
    worsened: int
    unchanged: int
    mean_left: float
    mean_right: float
    sign_p: float
    bootstrap_p: float

    @property
    def label(self) -> str:
        return metric_label(self.metric, self.k)

    @property
    def mean_delta(self) -> float:
        return self.mean_right - self.mean_left

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.label,
            "improved": self.improved,
            "worsened": self.worsened,
            "unchanged": self.unchanged,
            "mean_left": self.mean_left,
            "mean_right": self.mean_right,
            "mean_delta": self.mean_delta,
            "sign_test_p": self.sign_p,
            "bootstrap_p": self.bootstrap_p,
            "queries": [r.to_json() for r in self.rows],
        }


def wins_losses(
    left: Sequence[QueryResult], right: Sequence[QueryResult], *, metric: str = "ndcg", k: int = 10
) -> WinLoss:
    """Pair the runs by query (both ran the same golden set, in order); queries without expected
    entries are left out, as they are of the means."""
    if len(left) != len(right) or any(a.query.query != b.query.query for a, b in zip(left, right, strict=True)):
        raise ValueError("the two runs did not score the same golden queries")
    rows = [
        QueryDelta(a.query.id, a.query.query, metric_value(a.metrics, metric, k), metric_value(b.metrics, metric, k))
        for a, b in zip(left, right, strict=True)
        if a.query.expected
    ]
    diffs = [r.delta for r in rows]
    improved = sum(1 for d in diffs if d >= TIE)
    worsened = sum(1 for d in diffs if d <= -TIE)
    n = len(rows)
    return WinLoss(
        metric=metric,
        k=k,
        rows=tuple(sorted(rows, key=lambda r: (r.delta, r.id))),
        improved=improved,
        worsened=worsened,
        unchanged=n - improved - worsened,
        mean_left=math.fsum(r.left for r in rows) / n if n else 0.0,
        mean_right=math.fsum(r.right for r in rows) / n if n else 0.0,
        sign_p=sign_test(improved, worsened),
        bootstrap_p=bootstrap_p(diffs),
    )


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: P(a split at least this uneven | wins and losses equally likely)."""
    n = wins + losses
    if n == 0:
        return 1.0
    low = min(wins, losses)
    tail = math.fsum(math.comb(n, i) for i in range(low + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def bootstrap_p(diffs: Sequence[float], samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED) -> float:
    """Two-sided paired bootstrap p-value for mean(diffs) = 0: the differences are centred (the null),
    resampled with replacement, and the share of resampled means at least as far from 0 as the observed
    one is the p-value (with the +1 correction, so it is never exactly 0)."""
    d = np.asarray(diffs, dtype=np.float64)
    if d.size == 0 or not np.any(np.abs(d) >= TIE):
        return 1.0
    observed = abs(d.mean())
    centred = d - d.mean()
    rng = np.random.default_rng(seed)
    extreme = 0
    for start in range(0, samples, 1000):  # in blocks: 10k resamples of a large set would be 100s of MB
        idx = rng.integers(0, d.size, size=(min(1000, samples - start), d.size))
        extreme += int(np.count_nonzero(np.abs(centred[idx].mean(axis=1)) >= observed - 1e-12))
    return float((extreme + 1) / (samples + 1))
