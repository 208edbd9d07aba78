"""Parameter sweeps: a golden set scored once per value (or grid point) of one or two ranking settings.

    axes = (parse_axis("mmr_lambda=0:1:0.1"),)
    result = run_sweep(engine, golden, params, axes, k_values)     # params under eval semantics

Each point searches through `Engine.ranking_variant`, which shares the engine's caches: the query
embeddings and the retrieval legs are computed once for the whole sweep (unless the setting is a bm25
column weight, which changes what the full-text leg fetches), so a point costs only the stages after
the swept setting. A point's scores are exactly those of a separate eval run at that value.
"""

from __future__ import annotations

import itertools
import math
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from groove_tui.engine.errors import SearchCancelled
from groove_tui.engine.evaluate.golden import GoldenSet
from groove_tui.engine.evaluate.knobs import (
    MAX_AXIS_VALUES,
    Knob,
    KnobError,
    Setting,
    apply_settings,
    format_value,
    knob,
)
from groove_tui.engine.evaluate.metrics import Aggregate, QueryResult, aggregate, evaluate_query, ranked_hits

if TYPE_CHECKING:
    from groove_tui.engine import Engine
    from groove_tui.engine.types import SearchParams

MAX_POINTS = 400  # a grid bigger than this is a typo more often than a plan
METRICS = ("ndcg", "recall", "mrr")


@dataclass(frozen=True, slots=True)
class SweepAxis:
    name: str
    values: tuple[Any, ...]

    @property
    def knob(self) -> Knob:
        return knob(self.name)


def parse_axis(spec: str) -> SweepAxis:
    """`NAME=START:STOP:STEP` (inclusive) or `NAME=V1,V2,...`. Errors name the spec and what is allowed."""
    name, sep, raw = spec.partition("=")
    if not sep or not raw.strip():
        raise KnobError(f"--param {spec!r} is invalid: expected NAME=START:STOP:STEP or NAME=V1,V2,...")
    try:
        k = knob(name)
    except KnobError as exc:
        raise KnobError(f"--param {spec!r}: {exc}") from None
    if not k.sweepable():
        raise KnobError(f"--param {spec!r}: {k.name} cannot be swept; compare two settings with eval --compare")
    try:
        values = _range(spec, k, raw) if ":" in raw else tuple(k.parse(v) for v in raw.split(",") if v.strip())
    except KnobError as exc:
        text = str(exc)
        raise KnobError(text if text.startswith("--param") else f"--param {spec!r}: {text}") from None
    if not values:
        raise KnobError(f"--param {spec!r} is invalid: no values")
    if len(values) > MAX_AXIS_VALUES:
        raise KnobError(f"--param {spec!r} gives {len(values)} values: at most {MAX_AXIS_VALUES}")
    return SweepAxis(k.name, tuple(dict.fromkeys(values)))


def _range(spec: str, k: Knob, raw: str) -> tuple[Any, ...]:
    parts = raw.split(":")
    if k.kind not in ("float", "int") or len(parts) != 3:
        what = f"{k.name} takes a list: {k.allowed}" if k.kind not in ("float", "int") else "expected START:STOP:STEP"
        raise KnobError(f"--param {spec!r} is invalid: {what}")
    start, stop = k.parse(parts[0]), k.parse(parts[1])
    try:
        step = int(parts[2]) if k.kind == "int" else float(parts[2])
    except ValueError:
        step = math.nan
    if not (math.isfinite(step) and step > 0):
        kind = "an integer" if k.kind == "int" else "a number"
        raise KnobError(f"--param {spec!r} is invalid: the step {parts[2]!r} must be {kind} > 0")
    if stop < start:
        raise KnobError(f"--param {spec!r} is invalid: STOP {parts[1]} is below START {parts[0]}")
    if k.kind == "int":
        count = (stop - start) // step + 1
        if count > MAX_AXIS_VALUES:
            raise KnobError(f"--param {spec!r} gives {count} values: at most {MAX_AXIS_VALUES}")
        return tuple(int(start + i * step) for i in range(count))
    # Decimal arithmetic on the numbers as typed: the values are exactly START, START+STEP, … (0.1 steps
    # give 0.3, not 0.30000000000000004, and a START of 0.0004 stays 0.0004 whatever the step).
    d_start, d_stop, d_step = (Decimal(p.strip()) for p in parts)
    try:
        count = int((d_stop - d_start) // d_step) + 1
    except InvalidOperation:  # a quotient beyond Decimal's 28 digits: far too many values anyway
        count = MAX_AXIS_VALUES + 1
    if count > MAX_AXIS_VALUES:
        raise KnobError(f"--param {spec!r} gives {count} values: at most {MAX_AXIS_VALUES}")
    return tuple(float(d_start + i * d_step) for i in range(count))


def grid(axes: Sequence[SweepAxis]) -> tuple[tuple[Setting, ...], ...]:
    """Every combination, the first axis varying slowest."""
    names = [a.name for a in axes]
    if len(set(names)) != len(names):
        raise KnobError(f"--param names {', '.join(names)}: each setting may be swept once")
    points = tuple(tuple(zip(names, combo, strict=True)) for combo in itertools.product(*(a.values for a in axes)))
    if len(points) > MAX_POINTS:
        raise KnobError(f"the sweep has {len(points)} points: at most {MAX_POINTS} (use fewer values)")
    return points


@dataclass(frozen=True, slots=True)
class SweepPoint:
    settings: tuple[Setting, ...]
    aggregate: Aggregate
    diversity: float  # mean number of distinct documents in each query's top `k`
    search_ms: float  # median per-query search time (the stages this point had to recompute)
    seconds: float  # wall time of the point
    results: tuple[QueryResult, ...]

    def metric(self, name: str, k: int) -> float:
        if name == "mrr":
            return self.aggregate.mrr
        table = self.aggregate.ndcg_at_k if name == "ndcg" else self.aggregate.recall_at_k
        return table.get(k, math.nan)

    def label(self) -> str:
        return " ".join(f"{n}={format_value(v)}" for n, v in self.settings)

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": {n: v for n, v in self.settings},
            "aggregate": self.aggregate.to_json(),
            "diversity": round(self.diversity, 4),
            "search_ms_p50": round(self.search_ms, 3),
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True, slots=True)
class SweepResult:
    axes: tuple[SweepAxis, ...]
    points: tuple[SweepPoint, ...]
    k_values: tuple[int, ...]
    diversity_k: int
    seconds: float
    notes: tuple[str, ...] = ()  # e.g. "MMR is on for every point (a λ sweep needs it)"

    def best(self, metric: str = "ndcg", k: int | None = None) -> SweepPoint:
        """The point with the highest metric; ties go to the first (the lowest value swept)."""
        kk = k if k is not None else max(self.k_values)
        return max(self.points, key=lambda p: (_finite(p.metric(metric, kk)), -self.points.index(p)))

    def to_json(self) -> dict[str, Any]:
        return {
            "axes": [{"name": a.name, "values": list(a.values)} for a in self.axes],
            "k_values": list(self.k_values),
            "diversity_k": self.diversity_k,
            "points": [p.to_json() for p in self.points],
            "best": {m: self.best(m).to_json()["settings"] for m in METRICS},
            "seconds": round(self.seconds, 3),
            "notes": list(self.notes),
        }


def _finite(x: float) -> float:
    return x if math.isfinite(x) else -math.inf


def distinct_documents(result: QueryResult, k: int) -> int:
    return len({h.path for h in result.top_k[:k]})


Progress = Callable[[int, int], None]


def score_golden(
    search: Callable[..., Any],
    golden: GoldenSet,
    params: SearchParams,
    k_values: Sequence[int],
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> tuple[tuple[QueryResult, ...], list[float]]:
    """Every golden query through `search(query, params, cancel)`, scored; and each search's total
    milliseconds. The same loop as `groove-tui eval`'s, so the numbers agree exactly."""
    results: list[QueryResult] = []
    times: list[float] = []
    for j, q in enumerate(golden.queries):
        if cancel is not None and cancel.is_set():
            raise SearchCancelled("cancelled")
        if progress is not None:
            progress(j, len(golden.queries))
        resp = search(q.query, params, cancel)
        times.append(resp.timings_ms.get("total", 0.0))
        top = ranked_hits(resp.results)
        results.append(QueryResult(q, top, evaluate_query(q, top, k_values)))
    return tuple(results), times


def run_sweep(
    engine: Engine,
    golden: GoldenSet,
    params: SearchParams,
    axes: Sequence[SweepAxis],
    k_values: Sequence[int],
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    snapshot: bool = True,
) -> SweepResult:
    """Score `golden` at every grid point. `params` are eval params (limit = max k, no filters); each
    point applies its settings on top of them and of `engine.config`. One read snapshot for the whole
    sweep (`snapshot=False` when the caller already holds one, or shares the engine with live searches,
    as the explorer does). Raises SearchCancelled on `cancel`."""
    points = grid(axes)
    ks = tuple(k_values)
    dk = max(ks)
    total = len(points) * len(golden.queries)
    conn = engine.store.conn() if snapshot else None
    if conn is not None:
        conn.execute("BEGIN")  # deferred: the first read pins the WAL snapshot for every point
    started = time.perf_counter()
    out: list[SweepPoint] = []
    try:
        for i, settings in enumerate(points):
            config, p = apply_settings(engine.config, params, settings)
            # per-call settings need no variant (and any engine-like object with `search` will do)
            searcher = engine if config == engine.config else engine.ranking_variant(config)
            t0 = time.perf_counter()
            offset = i * len(golden.queries)
            step = None if progress is None else (lambda done, _n, o=offset: progress(o + done, total))
            results, times = score_golden(searcher.search, golden, p, ks, progress=step, cancel=cancel)
            judged = [r for r in results if r.query.expected]
            diversity = statistics.fmean(distinct_documents(r, dk) for r in judged) if judged else 0.0
            out.append(
                SweepPoint(
                    settings=settings,
                    aggregate=aggregate([r.metrics for r in results], ks),
                    diversity=diversity,
                    search_ms=statistics.median(times) if times else 0.0,
                    seconds=time.perf_counter() - t0,
                    results=results,
                )
            )
        if progress is not None:
            progress(total, total)
    finally:
        if conn is not None and conn.in_transaction:
            conn.execute("COMMIT")
    notes = tuple(
        f"MMR is on at every point: {a.name} acts only inside MMR" for a in axes if a.knob.needs_mmr and not params.mmr
    )
    if any(a.knob.where == "reranker" for a in axes) and params.reranker is None:
        notes += ("no reranker is on: the reranker's pool and blend change nothing (pass --reranker)",)
    return SweepResult(tuple(axes), tuple(out), ks, dk, time.perf_counter() - started, notes)
