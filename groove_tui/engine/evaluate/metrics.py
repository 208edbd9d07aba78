"""The metrics of one golden query and their aggregate (reference §I.2), and groove's eval semantics: the
limit a run needs for its k values and the search parameters it runs with (§I.3)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groove_tui.engine.types import SearchParams

from groove_tui.engine.evaluate.golden import Expected, GoldenQuery, Result, norm_heading

METRIC_VERSION = 2
K_MAX = 1000


# ================================================================ metrics (§I.2)


def is_hit(expected: Expected, path: str, heading: str | None) -> bool:
    """Path exact; an expected heading needs a hit heading equal after lower-case + outer trim."""
    if expected.path != path:
        return False
    if expected.heading is None:
        return True
    return heading is not None and norm_heading(expected.heading) == norm_heading(heading)


def recall_at_k(expected: Sequence[Expected], results: Sequence[Result], k: int) -> float:
    """Share of expected entries (duplicates each count) hit by some result among the first k."""
    if not expected or not results or k <= 0:
        return 0.0
    top = results[:k]
    found = sum(1 for e in expected if any(is_hit(e, p, h) for p, h in top))
    return found / len(expected)


def reciprocal_rank(expected: Sequence[Expected], results: Sequence[Result]) -> float:
    for rank, (p, h) in enumerate(results, start=1):
        if any(is_hit(e, p, h) for e in expected):
            return 1.0 / rank
    return 0.0


def ndcg_at_k(expected: Sequence[Expected], results: Sequence[Result], k: int) -> float:
    """Binary-gain nDCG with groove's greedy consumption: each result credits at most one unconsumed
    expected entry (heading-specified first, then declaration order); each entry is credited once."""
    if not expected or not results or k <= 0:
        return 0.0
    # heading-specified entries first, stable so ties keep declaration order
    order = sorted(range(len(expected)), key=lambda i: expected[i].heading is None)
    consumed = [False] * len(expected)
    dcg = 0.0
    for rank, (p, h) in enumerate(results[:k], start=1):
        pick = next((i for i in order if not consumed[i] and is_hit(expected[i], p, h)), None)
        if pick is not None:
            consumed[pick] = True
            dcg += 1.0 / math.log2(rank + 1)
    idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(expected), k) + 1))
    return dcg / idcg


@dataclass(frozen=True, slots=True)
class QueryMetrics:
    recall_at_k: dict[int, float]
    reciprocal_rank: float
    ndcg_at_k: dict[int, float]
    expected_count: int  # queries with none are skipped in the means

    def to_json(self) -> dict[str, Any]:
        return {
            "recall_at_k": _by_k(self.recall_at_k),
            "reciprocal_rank": _finite(self.reciprocal_rank),
            "ndcg_at_k": _by_k(self.ndcg_at_k),
        }


@dataclass(frozen=True, slots=True)
class Aggregate:
    recall_at_k: dict[int, float]
    mrr: float
    ndcg_at_k: dict[int, float]
    query_count: int

    def to_json(self) -> dict[str, Any]:
        return {
            "recall_at_k": _by_k(self.recall_at_k),
            "mrr": _finite(self.mrr),
            "ndcg_at_k": _by_k(self.ndcg_at_k),
            "query_count": self.query_count,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Aggregate | None:
        """From a history record; None when it is not an aggregate. Unreadable numbers become NaN
        (serde writes NaN as null), which the regression check skips."""
        if not isinstance(obj, Mapping):
            return None
        try:
            return cls(
                recall_at_k=_k_map(obj.get("recall_at_k", {})),
                mrr=_num(obj.get("mrr")),
                ndcg_at_k=_k_map(obj.get("ndcg_at_k", {})),
                query_count=int(obj.get("query_count", 0)),
            )
        except (TypeError, ValueError):
            return None


def evaluate(expected: Sequence[Expected], results: Sequence[Result], k_values: Sequence[int]) -> QueryMetrics:
    return QueryMetrics(
        recall_at_k={k: recall_at_k(expected, results, k) for k in k_values},
        reciprocal_rank=reciprocal_rank(expected, results),
        ndcg_at_k={k: ndcg_at_k(expected, results, k) for k in k_values},
        expected_count=len(expected),
    )


def aggregate(per_query: Sequence[QueryMetrics], k_values: Sequence[int] | None = None) -> Aggregate:
    """Arithmetic means over queries with a non-empty expected list (0.0 when there are none)."""
    judged = [m for m in per_query if m.expected_count > 0]
    ks = list(k_values) if k_values is not None else sorted({k for m in per_query for k in m.recall_at_k})
    n = len(judged)

    def mean(values: Iterable[float]) -> float:
        return math.fsum(values) / n if n else 0.0

    return Aggregate(
        recall_at_k={k: mean(m.recall_at_k.get(k, 0.0) for m in judged) for k in ks},
        mrr=mean(m.reciprocal_rank for m in judged),
        ndcg_at_k={k: mean(m.ndcg_at_k.get(k, 0.0) for m in judged) for k in ks},
        query_count=n,
    )


def normalise_k_values(k_values: Iterable[int]) -> tuple[int, ...]:
    """Sorted, deduplicated, each capped at 1000 (§I.3)."""
    return tuple(sorted({min(int(k), K_MAX) for k in k_values}))


def eval_limit(k_values: Sequence[int], limit: int | None = None) -> int:
    """limit = max(max(k), --limit), capped at 1000 (§I.3)."""
    return min(max(max(k_values, default=0), limit or 0), K_MAX)


# ================================================================ per-query results (what the runner collects)


@dataclass(frozen=True, slots=True)
class RankedHit:
    rank: int  # 1-based
    path: str
    heading: str | None
    score: float

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "path": self.path, "heading": self.heading, "score": _finite(self.score)}


def ranked_hits(hits: Iterable[Any]) -> tuple[RankedHit, ...]:
    """From anything with .path, .heading and .score (e.g. SearchResponse.results), in rank order."""
    return tuple(RankedHit(i, h.path, h.heading, float(h.score)) for i, h in enumerate(hits, start=1))


def evaluate_query(query: GoldenQuery, hits: Sequence[RankedHit], k_values: Sequence[int]) -> QueryMetrics:
    return evaluate(query.expected, [(h.path, h.heading) for h in hits], k_values)


@dataclass(frozen=True, slots=True)
class MissReason:
    """Why an expected entry missed the first k: the pipeline stage that lost it (a `WHY_VERDICTS`
    verdict; "shown" and "merged" mean it is on the page below k) and that stage's one-line account."""

    path: str
    heading: str | None
    verdict: str
    summary: str
    fused_rank: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "heading": self.heading,
            "stage": self.verdict,
            "reason": self.summary,
            "fused_rank": self.fused_rank,
        }


@dataclass(frozen=True, slots=True)
class QueryResult:
    query: GoldenQuery
    top_k: tuple[RankedHit, ...]
    metrics: QueryMetrics
    misses: tuple[MissReason, ...] = ()  # why each expected entry missing from the first k is missing

    def to_json(self, max_k: int | None = None) -> dict[str, Any]:
        top = self.top_k if max_k is None else self.top_k[:max_k]
        return {
            "id": self.query.id,
            "query": self.query.query,
            "expected": [{"path": e.path, "heading": e.heading} for e in self.query.expected],
            "top_k": [h.to_json() for h in top],
            "metrics": self.metrics.to_json(),
        }


# ================================================================ small JSON helpers


def _by_k(values: Mapping[int, float]) -> dict[str, float | None]:
    return {str(k): _finite(v) for k, v in sorted(values.items())}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None  # JSON has no NaN; serde writes null too


def _num(x: Any) -> float:
    if x is None:
        return math.nan
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"not a number: {x!r}")
    return float(x)


def _k_map(obj: Any) -> dict[int, float]:
    if not isinstance(obj, Mapping):
        raise TypeError("not a mapping")
    return {int(k): _num(v) for k, v in obj.items()}


def eval_params(params: SearchParams, *, limit: int, legs: str, reranker_given: bool) -> SearchParams:
    """§I.3: no filters (min_quality 0), the reranker only if asked for on the command line."""
    return replace(
        params,
        limit=limit,
        path_globs=(),
        tags_any=(),
        tags_all=(),
        date_from=None,
        date_to=None,
        category=None,
        topic=None,
        min_quality=0.0,
        explain=False,
        legs=legs,  # type: ignore[arg-type]
        reranker=params.reranker if reranker_given else None,
    )
