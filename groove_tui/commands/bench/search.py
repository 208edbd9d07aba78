"""Search latency, one stage at a time.

Search mode (`--mode search`) runs every query of a golden file (or a built-in English/Japanese mix)
`--repeat` times through `Engine.search` with the default parameters and no reranker. Before each of
those searches the retrieval caches are cleared, so every stage — the query embedding included — runs
for real; p50/p95 per stage (embed, vector, fts, bigram, word, fuse, rerank, mmr, parent, spans, total)
and for "total minus embed": the sum of every stage but the embedding (the query is embedded on its own
thread while the full-text legs run, so `total - embed` would hide the overlap). Then, cache warm, the same queries
re-run after a settings change (MMR on, λ 0.7 →
0.5: the explorer's slider case), with MMR on, with the parent retriever on, the bare MMR selection of a
250-candidate pool down to 10, and cancellation: a search is started in a worker thread, its cancel event
is set ~5 ms later, and the time until `SearchCancelled` is raised is measured.

Machines are noisy: compare ratios within one run; medians over repeats.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from groove_tui.engine import Engine, SearchParams


STAGES = ("embed", "vector", "fts", "bigram", "word", "fuse", "rerank", "mmr", "parent", "spans", "total")
FULLTEXT = ("fts", "bigram", "word")
FULLTEXT_LEGS = "fulltext_legs"  # (scale mode) a search's full-text legs, their own times summed
# "Everything but the query embedding": the query is embedded on its own thread while the full-text legs
# run, so `total - embed` would hide the overlap; the sum of the other stages is the work it leaves.

# Used when no --queries file is given: English and Japanese, short and long, phrases and exclusions.
BUILTIN_QUERIES = (
    "tokio runtime spawn",
    "how does vector search work",
    "full-text search with a trigram tokenizer",
    '"exact phrase" search',
    "rust -async",
    "protein expression in cancer cells",
    "effect of vitamin D on bone density in older adults",
    "設定ファイル",
    "東京の天気",
    "検索 ランキング 評価",
    "クロスエンコーダで再ランキングすると品質は上がるか",
    "database index performance tuning",
)

CANCEL_AFTER_S = 0.005
CANCEL_QUERIES = 100  # cancellation is measured on the first 100 queries (× repeat)


# ================================================================ statistics


def percentiles(samples: Sequence[float]) -> dict[str, Any]:
    """p50 / p95 / max / n of milliseconds (None when there are no samples)."""
    if not samples:
        return {"p50": None, "p95": None, "max": None, "n": 0}
    import numpy as np

    arr = np.asarray(samples, dtype=np.float64)
    return {
        "p50": round(float(np.percentile(arr, 50)), 3),
        "p95": round(float(np.percentile(arr, 95)), 3),
        "max": round(float(arr.max()), 3),
        "n": len(samples),
    }


def ms_since(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


# ================================================================ queries


def load_queries(path: str | None) -> list[str]:
    if not path:
        return list(BUILTIN_QUERIES)
    from groove_tui.engine.evaluate.golden import load_golden, validate_query

    golden = load_golden(path, validate_query=validate_query)
    if not golden.queries:
        raise ValueError(f"{path}: no queries to run")
    return [q.query for q in golden.queries]


# ================================================================ search mode


def clear_caches(engine: Engine, *, query_vectors: bool = True) -> None:
    """Forget what earlier searches found (and with `query_vectors` the query embeddings) so the next
    search runs every stage (`Searcher.forget_results`)."""
    searcher = getattr(engine, "_searcher", None)
    if searcher is not None:
        searcher.forget_results(query_vectors=query_vectors)


def bench_search(
    engine: Engine,
    queries: Sequence[str],
    repeat: int,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    from groove_tui.engine import SearchCancelled

    notify = progress or (lambda _label, _done, _total: None)
    base = engine.default_params(reranker=None, mmr=False, parent_retriever=False, explain=False)

    # Warm-up: load the model, touch the pages (not measured).
    t0 = time.perf_counter()
    engine.search(queries[0], base)
    warmup_ms = ms_since(t0)
    for q in queries[:3]:
        clear_caches(engine)
        engine.search(q, base)

    # 1. Cold: every stage for real, `repeat` passes over the queries.
    stages, minus_embed = cast(
        tuple[dict[str, list[float]], list[float]], cold_searches(engine, queries, repeat, base, notify)
    )
    total_runs = repeat * len(queries)

    # 2. Cache warm: a settings change re-runs only the later stages (the λ slider).
    mmr_a = replace(base, mmr=True, mmr_lambda=0.7)
    mmr_b = replace(base, mmr=True, mmr_lambda=0.5)
    parent = replace(base, parent_retriever=True)
    rerun: list[float] = []
    mmr_stage: list[float] = []
    mmr_total: list[float] = []
    parent_stage: list[float] = []
    parent_total: list[float] = []
    for r in range(repeat):
        for i, q in enumerate(queries):
            notify("warm", r * len(queries) + i, total_runs)
            engine.search(q, base)  # legs cached (if evicted)
            ta = engine.search(q, mmr_a).timings_ms
            t0 = time.perf_counter()
            tb = engine.search(q, mmr_b).timings_ms
            rerun.append(ms_since(t0))
            for t in (ta, tb):
                if "mmr" in t:
                    mmr_stage.append(t["mmr"])
                    mmr_total.append(t["total"])
            tp = engine.search(q, parent).timings_ms
            if "parent" in tp:
                parent_stage.append(tp["parent"])
                parent_total.append(tp["total"])

    out: dict[str, Any] = {
        "queries": len(queries),
        "repeat": repeat,
        "warmup_ms": round(warmup_ms, 1),
        "stages_ms": {s: percentiles(v) for s, v in stages.items()},
        "total_minus_embed_ms": percentiles(minus_embed),
        "warm_rerun_ms": percentiles(rerun),
        "mmr_on": {"mmr_stage_ms": percentiles(mmr_stage), "total_ms": percentiles(mmr_total)},
        "parent_on": {"parent_stage_ms": percentiles(parent_stage), "total_ms": percentiles(parent_total)},
        "mmr_250_to_10_ms": bench_mmr_pool(engine, queries, repeat),
        "cancellation": bench_cancel(engine, queries, base, repeat, SearchCancelled),
    }
    notify("done", total_runs, total_runs)
    return out


def cold_searches(
    engine: Engine,
    queries: Sequence[str],
    repeat: int,
    params,
    notify: Callable[[str, int, int], None],
    *,
    vector_first: bool = False,
    forget_phrases: bool = False,
) -> tuple[dict[str, list[float]], list[float]] | tuple[dict[str, list[float]], list[float], list]:
    """`repeat` passes over the queries with the caches cleared before each search: the samples of every
    stage, and of everything but the query embedding, in run order.

    "Everything but the embedding" is the wall-clock total of the same search run again with only the
    retrieval caches cleared, so the query vector comes from its cache: the legs run in parallel, so
    summing their stage times would count the shorter one twice. With `vector_first` (scale mode) the
    query is embedded first, outside the timing, and one search gives both, so no statistic the first run
    left behind (the full-text leg's phrase statistics) can flatter the second; it also returns each
    query's results, to compare configurations, and the full-text legs' own times summed per search
    (FULLTEXT_LEGS). `forget_phrases` clears those statistics too."""
    stages: dict[str, list[float]] = {s: [] for s in STAGES}
    minus_embed: list[float] = []
    answers: list = []
    total_runs = repeat * len(queries)
    for r in range(repeat):
        for i, q in enumerate(queries):
            notify("search", r * len(queries) + i, total_runs)
            clear_caches(engine)
            if forget_phrases:
                clear_phrase_stats(engine)
            if vector_first:
                from groove_tui.engine.analysis.query import parse_query

                text = parse_query(q).positive_text
                import numpy as np

                engine._searcher.query_vectors.put(
                    text, np.asarray(engine.embedder().embed_query(text), dtype=np.float32)
                )
                resp = engine.search(q, params)
                for s in STAGES:
                    if s in resp.timings_ms:
                        stages[s].append(resp.timings_ms[s])
                stages.setdefault(FULLTEXT_LEGS, []).append(sum(resp.timings_ms.get(leg, 0.0) for leg in FULLTEXT))
                minus_embed.append(resp.timings_ms["total"])
                answers.append([(h.chunk_id, h.score) for h in resp.results])
                continue
            t = engine.search(q, params).timings_ms
            for s in STAGES:
                if s in t:
                    stages[s].append(t[s])
            clear_caches(engine, query_vectors=False)  # every stage again, but the embedding
            minus_embed.append(engine.search(q, params).timings_ms["total"])
    if vector_first:
        return stages, minus_embed, answers
    return stages, minus_embed


def bench_rerank(
    engine: Engine,
    queries: Sequence[str],
    repeat: int,
    reranker: str,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """The reranker at the configured pool: each query cold (its pair scores not cached) `repeat` times,
    then re-run warm after a settings change (MMR on, λ 0.5: the explorer's slider with a reranker)."""
    notify = progress or (lambda _label, _done, _total: None)
    base = engine.default_params(reranker=reranker, mmr=False, parent_retriever=False, explain=False)
    searcher = getattr(engine, "_searcher", None)
    first = engine.search(queries[0], base)  # warm-up: loads the model (not measured)
    if not first.reranked:
        raise ValueError(f"the reranker did not run: {first.rerank_skipped or 'no candidates'}")
    per_query: list[float] = []
    per_pair: list[float] = []
    cached: list[float] = []
    cached_total: list[float] = []
    pairs: list[int] = []
    skipped = 0
    total = repeat * len(queries)
    for r in range(repeat):
        for i, q in enumerate(queries):
            notify("rerank", r * len(queries) + i, total)
            if searcher is not None:
                searcher.rerank_scores.clear()
            counted: list[int] = []

            def count(_stage: str, done: int, n: int, counted: list[int] = counted) -> None:
                if done == 0:
                    counted.append(n)

            resp = engine.search(q, base, progress=count)
            if not resp.reranked:
                skipped += 1
                continue
            ms = resp.timings_ms["rerank"]
            per_query.append(ms)
            n = counted[0] if counted else 0
            pairs.append(n)
            if n:
                per_pair.append(ms / n)
            warm = engine.search(q, replace(base, mmr=True, mmr_lambda=0.5))
            cached.append(warm.timings_ms.get("rerank", 0.0))
            cached_total.append(warm.timings_ms["total"])
    notify("rerank", total, total)
    return {
        "model": reranker,
        "pool": engine.config.reranker.pool,
        "max_tokens": engine.config.reranker.max_tokens,
        "queries": len(queries),
        "repeat": repeat,
        "skipped": skipped,
        "pairs": percentiles([float(p) for p in pairs]),
        "per_query_ms": percentiles(per_query),
        "per_pair_ms": percentiles(per_pair),
        "cached_rerank_ms": percentiles(cached),
        "cached_total_ms": percentiles(cached_total),
    }


def bench_mmr_pool(engine: Engine, queries: Sequence[str], repeat: int, pool: int = 250, limit: int = 10) -> dict:
    """The bare MMR selection: a real 250-candidate pool (scores and stored vectors) down to 10."""
    import numpy as np

    from groove_tui.engine.stages.mmr import mmr_select_traced

    base = engine.default_params(reranker=None, mmr=False, parent_retriever=False, limit=pool)
    samples: list[float] = []
    sizes: list[int] = []
    for q in queries[: max(1, min(len(queries), 20))]:
        found = engine.search(q, base).results
        vecs = engine.store.embeddings_for([h.chunk_id for h in found])
        hits = [h for h in found if h.chunk_id in vecs]
        if len(hits) < 2:
            continue
        scores = [h.score for h in hits]
        matrix = np.stack([vecs[h.chunk_id] for h in hits])
        docs = [h.document_id for h in hits]
        sizes.append(len(hits))
        for _ in range(max(1, repeat)):
            t0 = time.perf_counter()
            mmr_select_traced(scores, matrix, docs, limit, 0.7, 0.0)
            samples.append(ms_since(t0))
    out = percentiles(samples)
    out["pool"] = round(statistics.median(sizes)) if sizes else 0
    out["limit"] = limit
    return out


def bench_cancel(
    engine: Engine, queries: Sequence[str], params: SearchParams, repeat: int, cancelled_exc: type[BaseException]
) -> dict[str, Any]:
    """Set the cancel event ~5 ms into a cold search (another thread) and time until SearchCancelled."""
    latencies: list[float] = []
    finished_first = 0
    with ThreadPoolExecutor(max_workers=1) as pool:  # one worker: its SQLite connection is reused
        pool.submit(engine.search, queries[0], params).result()  # open the worker's connection
        for _ in range(max(1, repeat)):
            for q in queries[:CANCEL_QUERIES]:
                clear_caches(engine)
                cancel = threading.Event()
                started = threading.Event()
                box: dict[str, float] = {}

                def work(q=q, cancel=cancel, started=started, box=box) -> None:
                    started.set()
                    try:
                        engine.search(q, params, cancel)
                    except cancelled_exc:
                        box["raised"] = time.perf_counter()

                fut = pool.submit(work)
                started.wait()
                time.sleep(CANCEL_AFTER_S)
                t_set = time.perf_counter()
                cancel.set()
                fut.result()
                if "raised" in box:
                    latencies.append((box["raised"] - t_set) * 1000.0)
                else:
                    finished_first += 1
    out = percentiles(latencies)
    out["cancelled"] = len(latencies)
    out["finished_before_cancel"] = finished_first
    out["cancel_after_ms"] = CANCEL_AFTER_S * 1000
    return out


def clear_phrase_stats(engine) -> None:
    pruned = getattr(getattr(engine, "_searcher", None), "pruned", None)
    if pruned is not None:
        pruned.clear()
