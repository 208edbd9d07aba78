"""`groove-tui bench`: search latency per stage and indexing throughput, measured in one process.

Search mode (`--mode search`) runs every query of a golden file (or a built-in English/Japanese mix)
`--repeat` times through `Engine.search` with the default parameters and no reranker. Before each of
those searches the retrieval caches are cleared, so every stage — the query embedding included — runs
for real; p50/p95 per stage (embed, vector, fts, bigram, fuse, rerank, mmr, parent, spans, total) and for
"total minus embed": the sum of every stage but the embedding (the query is embedded on its own thread
while the full-text legs run, so `total - embed` would hide the overlap). Then, cache warm, the same queries re-run after a settings change (MMR on, λ 0.7 →
0.5: the explorer's slider case), with MMR on, with the parent retriever on, the bare MMR selection of a
250-candidate pool down to 10, and cancellation: a search is started in a worker thread, its cancel event
is set ~5 ms later, and the time until `SearchCancelled` is raised is measured.

Index mode (`--mode index`) never touches the KB or its index: it copies the first `--docs` documents into
a temporary directory (outside the KB; the walker does not follow symlinks), indexes them into a fresh
temporary index and compares phase two's chunks/s with the embedder's own passages/s on the same chunk
texts (`embed_passages` in batches of `[embedding] batch_size`, no SQLite) in the same run, alternating
the two so machine noise hits both alike. It also times phase one on a fresh copy of the whole KB's full
text (temporary index, no embeddings) and a no-change re-index of the KB's own index (if it exists).

Scale mode (`--scale N`) replicates the KB's Markdown under `rep{i}/` in a temporary directory until it
holds at least N chunks (counted with the indexer's own parser), indexes that into a temporary index with
the hashing embedder at 384 dimensions (`SCALE_MODEL`, unless `--model` is given), and times cold searches
over it as search mode does. The KB and its own index are never touched; the temporary files are removed.

Readers mode (`--mode readers`) copies the first `--docs` documents into a temporary KB, indexes them into a
temporary index, and times readers as `groove-tui search` runs them — open the index read-only, search
(default parameters, no reranker), close — first with nothing else running (idle), then while another
process indexes another copy of the documents into another index (the control: the same CPU and disk
load), then while that process indexes the readers' own KB over and over (adding a second copy of the
documents, then deleting it: one write transaction per document, back to back, the write lock re-taken
the moment it is released). It reports p50/p95/max of each, the writer's commits during the last phase,
and any reader that failed (a reader never waits for the write lock, so there should be none). The KB
and its index are untouched.

Machines are noisy: compare ratios within one run; medians over repeats.
"""

from __future__ import annotations

from groove_tui.commands.common import CLIError, config_for, load_engine

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from groove_tui.output import textout

if TYPE_CHECKING:
    import argparse

    from groove_tui.engine import Engine

STAGES = ("embed", "vector", "fts", "bigram", "fuse", "rerank", "mmr", "parent", "spans", "total")
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

TARGETS = {
    "total_minus_embed_p50_ms": 20.0,
    "total_minus_embed_p95_ms": 50.0,
    "warm_rerun_p50_ms": 5.0,
    "mmr_250_to_10_p50_ms": 5.0,
    "parent_10_hits_p50_ms": 5.0,
    "cancel_p50_ms": 50.0,
    "throughput_ratio": 0.85,
    "phase_one_s": 15.0,
    "no_change_reindex_s": 3.0,
    "cli_help_s": 0.3,
    "scale_total_minus_embed_p50_ms": 150.0,
    "rerank_p50_ms": 1500.0,
    "rerank_cached_p50_ms": 5.0,
    "readers_failed": 0,
}

# Scale mode's default embedder: feature hashing (fast to index) at multilingual-e5-small's dimension,
# so the brute-force KNN scans as many bytes per chunk as it would with the default model.
SCALE_MODEL = "hashing-384"

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


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


# ================================================================ queries


def load_queries(path: str | None) -> list[str]:
    if not path:
        return list(BUILTIN_QUERIES)
    from groove_tui.engine.evaluate.golden import load_golden
    from groove_tui.engine.evaluate.golden import validate_query

    golden = load_golden(path, validate_query=validate_query)
    if not golden.queries:
        raise ValueError(f"{path}: no queries to run")
    return [q.query for q in golden.queries]


# ================================================================ search mode


def _clear_caches(engine: Engine) -> None:
    """Forget retrieval results and query vectors so the next search runs every stage."""
    searcher = getattr(engine, "_searcher", None)
    for name in ("legs_cache", "query_vectors"):
        cache = getattr(searcher, name, None)
        if cache is not None:
            cache.clear()


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
    warmup_ms = _ms(t0)
    for q in queries[:3]:
        _clear_caches(engine)
        engine.search(q, base)

    # 1. Cold: every stage for real, `repeat` passes over the queries.
    stages, minus_embed = cold_searches(engine, queries, repeat, base, notify)
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
            rerun.append(_ms(t0))
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
    engine: Engine, queries: Sequence[str], repeat: int, params, notify: Callable[[str, int, int], None],
    *, vector_first: bool = False, forget_phrases: bool = False,
) -> tuple[dict[str, list[float]], list[float]] | tuple[dict[str, list[float]], list[float], list]:
    """`repeat` passes over the queries with the caches cleared before each search: the samples of every
    stage, and of everything but the query embedding, in run order.

    "Everything but the embedding" is the wall-clock total of the same search run again with only the
    retrieval caches cleared, so the query vector comes from its cache: the legs run in parallel, so
    summing their stage times would count the shorter one twice. With `vector_first` (scale mode) the
    query is embedded first, outside the timing, and one search gives both, so no statistic the first run
    left behind (the full-text leg's phrase statistics) can flatter the second; it also returns each
    query's results, to compare configurations. `forget_phrases` clears those statistics too."""
    stages: dict[str, list[float]] = {s: [] for s in STAGES}
    minus_embed: list[float] = []
    answers: list = []
    total_runs = repeat * len(queries)
    searcher = getattr(engine, "_searcher", None)
    legs_cache = getattr(searcher, "legs_cache", None)
    for r in range(repeat):
        for i, q in enumerate(queries):
            notify("search", r * len(queries) + i, total_runs)
            _clear_caches(engine)
            if forget_phrases:
                _clear_phrase_stats(engine)
            if vector_first:
                from groove_tui.engine.analysis.query import parse_query

                text = parse_query(q).positive_text
                import numpy as np

                searcher.query_vectors.put(text, np.asarray(engine.embedder().embed_query(text), dtype=np.float32))
                resp = engine.search(q, params)
                for s in STAGES:
                    if s in resp.timings_ms:
                        stages[s].append(resp.timings_ms[s])
                minus_embed.append(resp.timings_ms["total"])
                answers.append([(h.chunk_id, h.score) for h in resp.results])
                continue
            t = engine.search(q, params).timings_ms
            for s in STAGES:
                if s in t:
                    stages[s].append(t[s])
            if legs_cache is not None:
                legs_cache.clear()
            minus_embed.append(engine.search(q, params).timings_ms["total"])
    if vector_first:
        return stages, minus_embed, answers
    return stages, minus_embed


def bench_rerank(engine: Engine, queries: Sequence[str], repeat: int, reranker: str, *,
                 progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
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
            resp = engine.search(q, base, progress=lambda _s, done, n: counted.append(n) if done == 0 else None)
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
        hits = engine.search(q, base).results
        vecs = engine.store.embeddings_for([h.chunk_id for h in hits])
        hits = [h for h in hits if h.chunk_id in vecs]
        if len(hits) < 2:
            continue
        scores = [h.score for h in hits]
        matrix = np.stack([vecs[h.chunk_id] for h in hits])
        docs = [h.document_id for h in hits]
        sizes.append(len(hits))
        for _ in range(max(1, repeat)):
            t0 = time.perf_counter()
            mmr_select_traced(scores, matrix, docs, limit, 0.7, 0.0)
            samples.append(_ms(t0))
    out = percentiles(samples)
    out["pool"] = round(statistics.median(sizes)) if sizes else 0
    out["limit"] = limit
    return out


def bench_cancel(engine: Engine, queries: Sequence[str], params, repeat: int, cancelled_exc: type) -> dict:
    """Set the cancel event ~5 ms into a cold search (another thread) and time until SearchCancelled."""
    latencies: list[float] = []
    finished_first = 0
    with ThreadPoolExecutor(max_workers=1) as pool:  # one worker: its SQLite connection is reused
        pool.submit(engine.search, queries[0], params).result()  # open the worker's connection
        for _ in range(max(1, repeat)):
            for q in queries[:CANCEL_QUERIES]:
                _clear_caches(engine)
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


# ================================================================ index mode


def copy_subset(kb: Path, dest: Path, docs: int | None, exclude_dirs: tuple[str, ...]) -> int:
    """Copy the first `docs` Markdown files (walk order) of `kb` into `dest`; how many were copied."""
    from groove_tui.engine.index.indexer import walk_kb

    paths = walk_kb(kb, exclude_dirs)
    if docs is not None:
        paths = paths[:docs]
    for rel in paths:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(kb / rel, target)
    return len(paths)


def bench_index(
    engine: Engine,
    docs: int | None,
    repeat: int,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    from groove_tui.engine import Engine as EngineCls
    from groove_tui.engine.index.indexer import embedding_input

    notify = progress or (lambda _label, _done, _total: None)
    config = engine.config
    batch = config.embedding.batch_size
    out: dict[str, Any] = {"batch_size": batch}
    with tempfile.TemporaryDirectory(prefix="groove-tui-bench-") as tmp:
        tmpdir = Path(tmp)
        # Phase one on the whole KB (full text only), fresh index.
        full = tmpdir / "full"
        n_full = copy_subset(engine.kb_path, full / "kb", None, config.exclude_dirs)
        p1: list[float] = []
        for r in range(max(1, min(repeat, 3))):
            notify("phase one", r, repeat)
            with EngineCls.open(full / "kb", config=config, index_dir=full / f"idx{r}") as eng:
                rep = eng.index(embed=False)
            p1.append(rep.fulltext_seconds)
            shutil.rmtree(full / f"idx{r}", ignore_errors=True)
        p1_s = statistics.median(p1)
        out["phase_one"] = {
            "documents": n_full,
            "chunks": rep.chunks,
            "seconds": round(p1_s, 3),
            "runs": [round(x, 3) for x in p1],
            "docs_per_s": round(n_full / p1_s, 1) if p1_s else None,
        }
        shutil.rmtree(full, ignore_errors=True)

        # Phase two vs the embedder alone, on the same chunk texts, alternating.
        sub = tmpdir / "subset"
        n_sub = copy_subset(engine.kb_path, sub / "kb", docs, config.exclude_dirs)
        embedder = engine.embedder()
        embedder.embed_passages(["warm up the model"])  # lazy weights load outside both timings
        index_rates: list[float] = []
        alone_rates: list[float] = []
        p1_sub: list[float] = []
        chunks = 0
        texts: list[str] = []
        rounds = max(1, repeat)
        for r in range(rounds):
            notify("phase two", r, rounds)
            idx = sub / f"idx{r}"
            with EngineCls.open(sub / "kb", config=config, index_dir=idx) as eng:
                rep = eng.index()
                contextual = eng.store.get_meta("context_mode") == "static"
                rows = eng.store.conn().execute("SELECT content, context_text FROM chunks ORDER BY id").fetchall()
            texts = [embedding_input(c, ctx, contextual) for c, ctx in rows]
            chunks = rep.embedded
            p1_sub.append(rep.fulltext_seconds)
            if rep.embed_seconds > 0:
                index_rates.append(rep.embedded / rep.embed_seconds)
            shutil.rmtree(idx, ignore_errors=True)
            notify("embedder alone", r, rounds)
            t0 = time.perf_counter()
            for start in range(0, len(texts), batch):
                embedder.embed_passages(texts[start : start + batch])
            dt = time.perf_counter() - t0
            if dt > 0 and texts:
                alone_rates.append(len(texts) / dt)
        idx_rate = statistics.median(index_rates) if index_rates else None
        alone_rate = statistics.median(alone_rates) if alone_rates else None
        out["phase_two"] = {
            "documents": n_sub,
            "chunks": chunks,
            "index_chunks_per_s": _round(idx_rate, 2),
            "embedder_passages_per_s": _round(alone_rate, 2),
            "ratio": _round(idx_rate / alone_rate, 3) if idx_rate and alone_rate else None,
            "index_runs_chunks_per_s": [round(x, 2) for x in index_rates],
            "embedder_runs_passages_per_s": [round(x, 2) for x in alone_rates],
            "subset_phase_one_s": round(statistics.median(p1_sub), 3) if p1_sub else None,
        }

    # No-change re-index of the KB's own index (phase two has nothing to do on an unchanged index;
    # embed=False also keeps a half-embedded index from starting phase two here).
    docs_now, _chunks, _pending = engine.store.counts()
    if docs_now:
        runs = []
        for r in range(max(1, min(repeat, 5))):
            notify("re-index", r, repeat)
            rep = engine.index(embed=False)
            runs.append(rep.seconds)
        changed = rep.added + rep.updated + rep.deleted + rep.renamed
        out["no_change_reindex"] = {
            "seconds": round(statistics.median(runs), 3),
            "runs": [round(x, 3) for x in runs],
            "documents": docs_now,
            "changed": changed,
        }
    else:
        out["no_change_reindex"] = None
    return out


def _round(x: float | None, nd: int) -> float | None:
    return None if x is None else round(x, nd)


# ================================================================ readers mode

READERS_QUERIES = 24  # the first queries of --queries (or the built-in mix), × --repeat, per phase


def bench_readers(
    engine: Engine, docs: int | None, repeat: int, queries: Sequence[str],
    *, progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Reader latency (open read-only + search + close): idle, while another process indexes another
    index (the control), and while it indexes the readers' own."""
    from groove_tui.engine import Engine as EngineCls

    notify = progress or (lambda _label, _done, _total: None)
    config = engine.config
    queries = list(queries)[:READERS_QUERIES]
    with tempfile.TemporaryDirectory(prefix="groove-tui-bench-") as tmp:
        tmpdir = Path(tmp)
        kb, spare, idx, stop = tmpdir / "kb", tmpdir / "spare", tmpdir / "idx", tmpdir / "stop"
        n_docs = copy_subset(engine.kb_path, kb, docs, config.exclude_dirs)
        copy_subset(engine.kb_path, spare, docs, config.exclude_dirs)
        notify("index", 0, 1)
        with EngineCls.open(kb, config=config, index_dir=idx) as eng:
            report = eng.index()
            model_id = eng.model_id
            db_path = eng.store.db_path
        params = engine.default_params(reranker=None, mmr=False, parent_retriever=False, explain=False)

        def generation() -> int:
            with EngineCls.open(kb, config=config, index_dir=idx, readonly=True) as eng:
                return eng.store.generation()

        def readers(label: str) -> dict[str, Any]:
            samples: list[float] = []
            errors: list[str] = []
            total = repeat * len(queries)
            for r in range(repeat):
                for i, q in enumerate(queries):
                    notify(label, r * len(queries) + i, total)
                    t0 = time.perf_counter()
                    try:
                        with EngineCls.open(kb, config=config, index_dir=idx, readonly=True) as eng:
                            eng.search(q, params)
                    except Exception as exc:  # counted and reported: a reader must never fail here
                        errors.append(str(exc))
                        continue
                    samples.append(_ms(t0))
            return {"ms": percentiles(samples), "failed": len(errors), "first_error": errors[0] if errors else None}

        def while_indexing(label: str, target_kb: Path, target_idx: Path) -> tuple[dict[str, Any], dict[str, Any]]:
            stop.unlink(missing_ok=True)
            writer = subprocess.Popen(
                [sys.executable, "-c", "from groove_tui.commands.bench.command import _writer_main; _writer_main()",
                 str(target_kb), str(target_idx), str(spare), str(stop), model_id],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            try:
                assert writer.stdout is not None
                started = writer.stdout.readline().strip()  # "ready": its engine is open, the first run begins
                gen0 = generation()
                measured = readers(label)
                gen1 = generation()
            finally:
                stop.touch()
                out, err = writer.communicate(timeout=600)
            if started != "ready" or writer.returncode != 0:
                raise RuntimeError(f"the benchmark's indexing process failed: {(err or out).strip()[-500:]}")
            try:
                runs: int | None = int(out.strip().splitlines()[-1])
            except (ValueError, IndexError):
                runs = None
            return measured, {"index_runs": runs, "commits_while_reading": gen1 - gen0}

        EngineCls.open(kb, config=config, index_dir=idx, readonly=True).close()  # load the model, warm the pages
        idle = readers("readers, idle")
        # The control: the same indexing work on another KB and index, so the same CPU and disk load
        # without sharing this index; what "indexing" costs beyond it is what sharing the index costs.
        other_kb = tmpdir / "other"
        copy_subset(engine.kb_path, other_kb, docs, config.exclude_dirs)
        control, control_writer = while_indexing("readers, other index busy", other_kb, tmpdir / "other-idx")
        busy, writer = while_indexing("readers, indexing", kb, idx)

    def ratio(a: dict[str, Any], b: dict[str, Any]) -> float | None:
        return _round(a["ms"]["p50"] / b["ms"]["p50"], 3) if a["ms"]["p50"] and b["ms"]["p50"] else None

    return {
        "documents": n_docs,
        "chunks": report.chunks,
        "queries": len(queries),
        "repeat": repeat,
        "index": str(db_path),
        "idle": idle,
        "other_index_busy": control,
        "indexing": busy,
        "writer": writer,
        "control_writer": control_writer,
        "p50_ratio": ratio(busy, idle),
        "p50_ratio_to_control": ratio(busy, control),
    }


def _writer_main() -> None:
    """The benchmark's indexing process (argv: kb, index dir, spare documents, stop file, model): indexes
    the KB again and again, alternately with a copy of the spare documents added and deleted, until the
    stop file exists (at least once); prints "ready" first and the number of runs last."""
    from groove_tui.settings.config import Config, EmbeddingConfig
    from groove_tui.engine import Engine as EngineCls

    kb, idx, spare, stop = (Path(a) for a in sys.argv[1:5])
    config = Config(embedding=EmbeddingConfig(model=sys.argv[5], explicit=True))
    runs = 0
    with EngineCls.open(kb, config=config, index_dir=idx) as eng:
        print("ready", flush=True)
        while runs == 0 or not stop.exists():  # at least one run, however fast the readers were
            extra = kb / "zz-bench-writer"
            if extra.exists():
                shutil.rmtree(extra)
            else:
                shutil.copytree(spare, extra)
            eng.index(embed=False)  # phase one: one write transaction per document, back to back
            runs += 1
    print(runs, flush=True)


# ================================================================ scale mode


def chunks_per_file(kb: Path, config) -> list[tuple[str, int]]:
    """(path, chunks) of every Markdown file the indexer would index, counted with its own parser."""
    from groove_tui.engine.index.indexer import decode_markdown, read_file, walk_kb
    from groove_tui.engine.index.markdown import parse_markdown
    from groove_tui.engine.types import FileIssue

    out = []
    for rel in walk_kb(kb, config.exclude_dirs):
        f = read_file(kb, rel)
        if isinstance(f, FileIssue):
            continue
        try:
            text = decode_markdown(f.raw)
        except ValueError:
            continue
        # The chunk count does not depend on the path, so the count of the original holds for its copies.
        n = len(parse_markdown(rel, text, exclude_headings=config.exclude_headings,
                               max_chunk_bytes=config.chunking.max_chunk_bytes).chunks)
        if n:
            out.append((rel, n))
    return out


def synthesise_kb(kb: Path, dest: Path, target: int, config, notify=None) -> dict[str, int]:
    """Copy `kb`'s Markdown files into `dest`, copy i of a file at `rep{i}/<path>`, until at least
    `target` chunks; copies, not links, so nothing can reach back into the KB."""
    files = chunks_per_file(kb, config)
    if not files:
        raise ValueError(f"{kb}: no Markdown with text to replicate")
    chunks = docs = copies = 0
    while chunks < target:
        for rel, n in files:
            target_path = dest / f"rep{copies}" / rel
            target_path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(kb / rel, target_path)
            chunks += n
            docs += 1
            if notify and docs % 500 == 0:
                notify("copy", min(chunks, target), target)
            if chunks >= target:
                break
        copies += 1
    return {"source_documents": len(files), "source_chunks": sum(n for _r, n in files),
            "documents": docs, "chunks": chunks, "copies": copies}


def bench_scale(
    kb: Path,
    config,
    target: int,
    queries: Sequence[str],
    repeat: int,
    *,
    progress: Callable[[str, int, int], None] | None = None,
    keep_dir: Path | None = None,
) -> dict[str, Any]:
    """Synthesise a KB of ~`target` chunks and an index of it (in `keep_dir`, reused when it already holds
    them, else in a temporary directory removed after), then time cold searches over it. The given KB
    and its index are only read."""
    notify = progress or (lambda _label, _done, _total: None)
    if keep_dir is not None:
        keep_dir.mkdir(parents=True, exist_ok=True)
        return _bench_scale_in(kb, config, target, queries, repeat, notify, keep_dir)
    with tempfile.TemporaryDirectory(prefix="groove-tui-scale-") as tmp:
        return _bench_scale_in(kb, config, target, queries, repeat, notify, Path(tmp))


# The configurations scale mode compares, pass by pass: the default (full-text leg pruned, its phrase
# statistics kept across searches as in a session), the plain FTS5 statement, and pruned with the phrase
# statistics forgotten before every search (each query as if it were the first of a session).
SCALE_VARIANTS = ("pruned", "plain", "pruned_cold")


def _bench_scale_in(kb, config, target, queries, repeat, notify, root: Path) -> dict[str, Any]:
    from dataclasses import replace as dc_replace

    from groove_tui.engine import Engine as EngineCls

    out: dict[str, Any] = {"target_chunks": target, "kept_in": str(root) if root.exists() else None}
    synth, idx = root / "kb", root / "idx"
    t0 = time.perf_counter()
    if not synth.exists() or not any(synth.iterdir()):
        out["synthesised"] = synthesise_kb(kb, synth, target, config, notify)
        (root / "synthesised.json").write_text(__import__("json").dumps(out["synthesised"]))
    else:  # reused: the record of what was made
        out["synthesised"] = __import__("json").loads((root / "synthesised.json").read_text())
    out["synthesise_s"] = round(time.perf_counter() - t0, 2)
    plain_config = dc_replace(config, search=dc_replace(config.search, fulltext_pruning=False))
    with EngineCls.open(synth, config=config, index_dir=idx) as eng, \
            EngineCls.open(synth, config=plain_config, index_dir=idx) as plain:
        rep = eng.index(progress=lambda p: notify(p.phase, p.done, p.total))
        docs, chunks, pending = eng.store.counts()
        out["index"] = {
            "documents": docs,
            "chunks": chunks,
            "pending_embeddings": pending,
            "phase_one_s": round(rep.fulltext_seconds, 2),
            "embed_s": round(rep.embed_seconds, 2),
            "seconds": round(rep.seconds, 2),
        }
        engines = {"pruned": eng, "plain": plain, "pruned_cold": eng}
        base = eng.default_params(reranker=None, mmr=False, parent_retriever=False, explain=False)
        for e in (eng, plain):
            for q in (queries[0], *queries[:3]):  # warm-up: model, pages (not measured)
                _clear_caches(e)
                e.search(q, base)
        _clear_phrase_stats(eng)
        stages: dict[str, dict[str, list[float]]] = {}
        minus_embed: dict[str, list[float]] = {v: [] for v in SCALE_VARIANTS}
        answers: dict[str, list] = {}
        for r in range(repeat):  # alternating passes, so machine noise hits every variant alike
            for variant in SCALE_VARIANTS:
                st, me, ans = cold_searches(engines[variant], queries, 1, base, notify, vector_first=True,
                                            forget_phrases=variant == "pruned_cold")
                for name, samples in st.items():
                    stages.setdefault(variant, {s: [] for s in STAGES})[name].extend(samples)
                minus_embed[variant].extend(me)
                answers.setdefault(variant, ans)
        out["index"]["bytes"] = sum(f.stat().st_size for f in idx.rglob("*") if f.is_file())
        out["pruning"] = dict(eng._searcher.pruned.stats) if hasattr(eng, "_searcher") else None
    n = len(queries)
    same = sum(a == b == c for a, b, c in zip(answers["pruned"], answers["plain"], answers["pruned_cold"]))
    out["search"] = {
        "queries": n,
        "repeat": repeat,
        "stages_ms": {s: percentiles(v) for s, v in stages["pruned"].items()},
        "total_minus_embed_ms": percentiles(minus_embed["pruned"]),
        "total_minus_embed_p50_per_repeat": [percentiles(minus_embed["pruned"][r * n:(r + 1) * n])["p50"]
                                             for r in range(repeat)],
        "total_p50_per_repeat": [percentiles(stages["pruned"]["total"][r * n:(r + 1) * n])["p50"] for r in range(repeat)],
        "variants": {
            v: {"total_minus_embed_ms": percentiles(minus_embed[v]), "fts_ms": percentiles(stages[v]["fts"]),
                "bigram_ms": percentiles(stages[v]["bigram"]), "vector_ms": percentiles(stages[v]["vector"])}
            for v in SCALE_VARIANTS
        },
        "identical_results": {"queries": n, "same": same},
    }
    notify("done", 1, 1)
    return out


def _clear_phrase_stats(engine) -> None:
    pruned = getattr(getattr(engine, "_searcher", None), "pruned", None)
    if pruned is not None:
        pruned.clear()


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # not on every platform
        return None


def run_scale(kb: Path, config, args: argparse.Namespace, *, progress=None) -> dict[str, Any]:
    from groove_tui.engine.models.embedders import describe_model

    repeat = max(1, int(getattr(args, "repeat", 3) or 1))
    result: dict[str, Any] = {
        "kb": str(kb),
        "model": describe_model(config.embedding.model),
        "mode": "scale",
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_before": _loadavg(),
    }
    keep = getattr(args, "scale_dir", None)
    result["scale"] = bench_scale(kb, config, args.scale, load_queries(getattr(args, "queries", None)), repeat,
                                  progress=progress, keep_dir=Path(keep).expanduser() if keep else None)
    result["load_after"] = _loadavg()
    result["targets"] = verdicts(result)
    return result


# ================================================================ CLI start-up


def bench_cli_help(runs: int = 5) -> dict[str, Any] | None:
    """Wall time of `groove-tui --help` in a fresh process (median)."""
    exe = Path(sys.executable).parent / "groove-tui"
    cmd = [str(exe), "--help"] if exe.exists() else [sys.executable, "-m", "groove_tui.cli", "--help"]
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        samples.append(time.perf_counter() - t0)
    return {"seconds": round(statistics.median(samples), 3), "runs": [round(x, 3) for x in samples]}


# ================================================================ output


def verdicts(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each measured target: value, target, met."""
    out: dict[str, dict[str, Any]] = {}

    def put(name: str, value: float | None) -> None:
        if value is None:
            return
        target = TARGETS[name]
        met = value >= target if name == "throughput_ratio" else value <= target
        out[name] = {"value": value, "target": target, "met": met}

    s = result.get("search")
    if s:
        put("total_minus_embed_p50_ms", s["total_minus_embed_ms"]["p50"])
        put("total_minus_embed_p95_ms", s["total_minus_embed_ms"]["p95"])
        put("warm_rerun_p50_ms", s["warm_rerun_ms"]["p50"])
        put("mmr_250_to_10_p50_ms", s["mmr_250_to_10_ms"]["p50"])
        put("parent_10_hits_p50_ms", s["parent_on"]["parent_stage_ms"]["p50"])
        put("cancel_p50_ms", s["cancellation"]["p50"])
    i = result.get("index")
    if i:
        put("throughput_ratio", i["phase_two"]["ratio"])
        put("phase_one_s", i["phase_one"]["seconds"])
        if i.get("no_change_reindex"):
            put("no_change_reindex_s", i["no_change_reindex"]["seconds"])
    if result.get("cli_help"):
        put("cli_help_s", result["cli_help"]["seconds"])
    sc = result.get("scale")
    if sc:
        put("scale_total_minus_embed_p50_ms", sc["search"]["total_minus_embed_ms"]["p50"])
    rr = result.get("rerank")
    if rr and rr["per_query_ms"]["n"]:
        put("rerank_p50_ms", rr["per_query_ms"]["p50"])
        put("rerank_cached_p50_ms", rr["cached_rerank_ms"]["p50"])
    rd = result.get("readers")
    if rd:
        put("readers_failed", sum(rd[k]["failed"] for k in ("idle", "other_index_busy", "indexing")))
    return out


def _format_scale(result: dict[str, Any], sc: dict[str, Any]) -> list[str]:
    syn, ix, s = sc["synthesised"], sc["index"], sc["search"]
    model = result["model"]
    note = " (hashing: no semantics, but e5's dimension, so the KNN scan costs what it would with e5)" \
        if model == SCALE_MODEL else ""
    lines = [
        "",
        f"scale: {syn['source_documents']:,} docs / {syn['source_chunks']:,} chunks replicated "
        f"{syn['copies']}× under rep{{i}}/ → {ix['documents']:,} docs, {ix['chunks']:,} chunks "
        f"(target {sc['target_chunks']:,}), " + (f"kept in {sc['kept_in']}" if sc.get("kept_in") and
                                                  "groove-tui-scale-" not in sc["kept_in"] else "temporary KB and index (removed)"),
        f"  embedder {model}{note}",
        f"  index: phase one {ix['phase_one_s']:.1f} s, embedding {ix['embed_s']:.1f} s, "
        f"total {ix['seconds']:.1f} s; size {ix['bytes'] / 1e6:,.1f} MB",
        f"  search: {s['queries']} queries × {s['repeat']}, default params, no reranker, retrieval caches cleared before "
        "each; passes alternate pruned (phrase stats kept, as in a session) / plain / pruned cold",
        f"  {'stage':<18} {'p50 ms':>9} {'p95 ms':>9} {'n':>6}",
    ]
    for name in STAGES:
        st = s["stages_ms"][name]
        if st["n"]:
            lines.append(f"  {name:<18} {_fmt(st['p50']):>9} {_fmt(st['p95']):>9} {st['n']:>6}")
    tm = s["total_minus_embed_ms"]
    lines.append(f"  {'total − embed':<18} {_fmt(tm['p50']):>9} {_fmt(tm['p95']):>9} {tm['n']:>6}   "
                 "wall clock, query vector cached")
    for v, label in (("plain", "plain FTS5 statement"), ("pruned_cold", "pruned, phrase stats cold")):
        vs = s.get("variants", {}).get(v)
        if vs:
            lines.append(f"  {'total − embed':<18} {_fmt(vs['total_minus_embed_ms']['p50']):>9} "
                         f"{_fmt(vs['total_minus_embed_ms']['p95']):>9} {vs['total_minus_embed_ms']['n']:>6}   {label} "
                         f"(fts {_fmt(vs['fts_ms']['p50'])} / {_fmt(vs['fts_ms']['p95'])})")
    if s.get("identical_results"):
        same = s["identical_results"]
        lines.append(f"  results identical in all three: {same['same']} of {same['queries']} queries")
    per = ", ".join(_fmt(x) for x in s["total_minus_embed_p50_per_repeat"])
    lines.append(f"  p50 of each pass: total − embed {per}; total "
                 + ", ".join(_fmt(x) for x in s["total_p50_per_repeat"]))
    load = result.get("load_before"), result.get("load_after")
    if all(load):
        lines.append(f"  load average before {load[0][0]:.2f}, after {load[1][0]:.2f} (1 min); {result['cpus']} CPUs")
    return lines


def _fmt(x: float | None, unit: str = "") -> str:
    return "—" if x is None else f"{x:.2f}{unit}"


def format_text(result: dict[str, Any]) -> str:
    lines = [f"kb       {result['kb']}", f"model    {result['model']}"]
    if result.get("index_path"):
        lines.append(f"index    {result['index_path']}")
    sc = result.get("scale")
    if sc:
        lines += _format_scale(result, sc)
    s = result.get("search")
    if s:
        lines += [
            "",
            f"search: {s['queries']} queries × {s['repeat']}, default params, no reranker, caches cleared "
            f"before each search (first search incl. model load: {s['warmup_ms']:.0f} ms)",
            f"  {'stage':<18} {'p50 ms':>9} {'p95 ms':>9} {'n':>6}",
        ]
        for name in STAGES:
            st = s["stages_ms"][name]
            lines.append(f"  {name:<18} {_fmt(st['p50']):>9} {_fmt(st['p95']):>9} {st['n']:>6}")
        tm = s["total_minus_embed_ms"]
        lines.append(f"  {'total − embed':<18} {_fmt(tm['p50']):>9} {_fmt(tm['p95']):>9} {tm['n']:>6}   "
                     "wall clock, query vector cached")
        w = s["warm_rerun_ms"]
        lines.append(f"  {'λ re-run (warm)':<18} {_fmt(w['p50']):>9} {_fmt(w['p95']):>9} {w['n']:>6}   end to end")
        m = s["mmr_on"]["mmr_stage_ms"]
        lines.append(f"  {'mmr stage (on)':<18} {_fmt(m['p50']):>9} {_fmt(m['p95']):>9} {m['n']:>6}")
        p = s["parent_on"]["parent_stage_ms"]
        lines.append(f"  {'parent stage (on)':<18} {_fmt(p['p50']):>9} {_fmt(p['p95']):>9} {p['n']:>6}   10 hits")
        mp = s["mmr_250_to_10_ms"]
        label = f"MMR {mp['pool']}→{mp['limit']}"
        lines.append(f"  {label:<18} {_fmt(mp['p50']):>9} {_fmt(mp['p95']):>9} {mp['n']:>6}   selection only")
        c = s["cancellation"]
        lines.append(
            f"  {'cancellation':<18} {_fmt(c['p50']):>9} {_fmt(c['max']):>9} {c['n']:>6}   p50 / max after "
            f"cancel at {c['cancel_after_ms']:g} ms ({c['finished_before_cancel']} finished first)"
        )
    rr = result.get("rerank")
    if rr:
        lines += [
            "",
            f"rerank: {rr['model']}, pool {rr['pool']}, max_tokens {rr['max_tokens']}, {rr['queries']} queries × "
            f"{rr['repeat']}, pair scores not cached ({rr['skipped']} skipped by the language guard)",
            f"  {'measure':<18} {'p50':>9} {'p95':>9} {'n':>6}",
        ]
        for label, key, unit in (("pairs scored", "pairs", ""), ("per query", "per_query_ms", "ms"),
                                 ("per pair", "per_pair_ms", "ms"), ("cached re-rank", "cached_rerank_ms", "ms"),
                                 ("cached total", "cached_total_ms", "ms")):
            st = rr[key]
            lines.append(f"  {label:<18} {_fmt(st['p50']):>9} {_fmt(st['p95']):>9} {st['n']:>6}   {unit}")
    rd = result.get("readers")
    if rd:
        lines += [
            "",
            f"readers: open read-only + search + close, {rd['queries']} queries × {rd['repeat']}, on a copy of "
            f"{rd['documents']} docs / {rd['chunks']} chunks",
            f"  {'phase':<18} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9} {'n':>6} {'failed':>7}",
        ]
        for label, key in (("idle", "idle"), ("other index busy", "other_index_busy"),
                           ("while indexing", "indexing")):
            ph = rd[key]
            lines.append(f"  {label:<18} {_fmt(ph['ms']['p50']):>9} {_fmt(ph['ms']['p95']):>9} "
                         f"{_fmt(ph['ms']['max']):>9} {ph['ms']['n']:>6} {ph['failed']:>7}")
        w = rd["writer"]
        lines.append(f"  p50 while indexing / idle: {_fmt(rd['p50_ratio'])}; / other index busy (the same "
                     f"CPU and disk load, not this index): {_fmt(rd['p50_ratio_to_control'])}")
        lines.append(f"  the indexer committed {w['commits_while_reading']} transactions while the readers ran "
                     f"({w['index_runs']} index runs)")
        for key in ("idle", "other_index_busy", "indexing"):
            if rd[key]["first_error"]:
                lines.append(f"  first failure ({key}): {rd[key]['first_error']}")
    i = result.get("index")
    if i:
        p1, p2, nc = i["phase_one"], i["phase_two"], i.get("no_change_reindex")
        lines += [
            "",
            f"index: phase one (full text, whole KB, fresh index): {p1['seconds']:.2f} s, "
            f"{p1['documents']:,} docs ({_fmt(p1['docs_per_s'])} docs/s), {p1['chunks']:,} chunks",
            f"  phase two on {p2['documents']} docs / {p2['chunks']} chunks (batch {i['batch_size']}): "
            f"index {_fmt(p2['index_chunks_per_s'])} chunks/s, embedder alone "
            f"{_fmt(p2['embedder_passages_per_s'])} passages/s, ratio {_fmt(p2['ratio'])}",
        ]
        if nc:
            lines.append(f"  no-change re-index of {nc['documents']:,} docs: {nc['seconds']:.3f} s")
        else:
            lines.append("  no-change re-index: the KB has no index yet (run groove-tui index first)")
    if result.get("cli_help"):
        lines.append(f"\ngroove-tui --help: {result['cli_help']['seconds']:.3f} s (median of 5)")
    v = result.get("targets") or {}
    if v:
        lines += ["", "targets:"]
        for name, t in v.items():
            mark = "ok  " if t["met"] else "MISS"
            op = "≥" if name == "throughput_ratio" else "≤"
            lines.append(f"  {mark} {name:<26} {t['value']:.3f} {op} {t['target']:g}")
    return "\n".join(lines) + "\n"


# ================================================================ the command


def run_bench(engine: Engine, args: argparse.Namespace, *, progress=None) -> dict[str, Any]:
    mode = getattr(args, "mode", "search") or "search"
    repeat = max(1, int(getattr(args, "repeat", 3) or 1))
    result: dict[str, Any] = {
        "kb": str(engine.kb_path),
        "model": engine.model_id,
        "index_path": str(engine.store.db_path),
        "mode": mode,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    if mode in ("search", "all"):
        docs, chunks, pending = engine.store.counts()
        if docs == 0:
            raise ValueError(
                f"{engine.kb_path} has not been indexed yet (index: {engine.store.db_path}). "
                f"Run: {textout.index_command(args, engine.kb_path)}"
            )
        result["corpus"] = {"documents": docs, "chunks": chunks, "pending_embeddings": pending}
        result["search"] = bench_search(engine, load_queries(getattr(args, "queries", None)), repeat, progress=progress)
    if mode == "rerank":
        name = getattr(args, "reranker", None) or engine.config.reranker.model or "ms-marco-l12"
        queries = load_queries(getattr(args, "queries", None))[: max(1, getattr(args, "rerank_queries", 30) or 30)]
        result["rerank"] = bench_rerank(engine, queries, repeat, name, progress=progress)
    if mode == "readers":
        docs_arg = getattr(args, "docs", None)
        result["readers"] = bench_readers(engine, docs_arg if docs_arg and docs_arg > 0 else None, repeat,
                                          load_queries(getattr(args, "queries", None)), progress=progress)
    if mode in ("index", "all"):
        docs_arg = getattr(args, "docs", None)
        result["index"] = bench_index(engine, docs_arg if docs_arg and docs_arg > 0 else None, repeat, progress=progress)
    if not getattr(args, "no_cli", False):
        result["cli_help"] = bench_cli_help()
    result["targets"] = verdicts(result)
    return result


def run_bench_command(engine: Engine, args: argparse.Namespace) -> int:
    return _run_and_print(lambda progress: run_bench(engine, args, progress=progress), args)


def run_scale_command(kb: Path, config, args: argparse.Namespace) -> int:
    return _run_and_print(lambda progress: run_scale(kb, config, args, progress=progress), args)


def _run_and_print(run: Callable[[Any], dict[str, Any]], args: argparse.Namespace) -> int:
    from groove_tui.output.progress import ProgressLine

    bar = ProgressLine(sys.stderr, enabled=sys.stderr.isatty())
    try:
        result = run(bar.step)
    finally:
        bar.close()
    if getattr(args, "format", "text") == "json":
        from groove_tui.engine.types import json_text

        print(json_text(result))
    else:
        sys.stdout.write(format_text(result))
    return 0


BENCH_LIMITS = (("repeat", 1, 1000, ""), ("docs", 0, 10_000_000, " (0 = all)"),
                ("rerank_queries", 1, 100_000, ""), ("scale", 1, 100_000_000, " chunks"))


def run(args: argparse.Namespace) -> int:
    for name, lo, hi, note in BENCH_LIMITS:
        value = getattr(args, name)
        if value is not None and not lo <= value <= hi:
            raise CLIError(f"--{name.replace('_', '-')} {value} is invalid: expected an integer in [{lo}, {hi:,}]{note}")
    if args.scale is not None:
        return _bench_scale(args)
    with load_engine(args) as engine:
        return run_bench_command(engine, args)


def _bench_scale(args: argparse.Namespace) -> int:
    # The KB's own engine is never opened: opening would create an index for it in the cache.
    from dataclasses import replace

    kb = Path(args.kb).expanduser()
    if not kb.is_dir():
        raise CLIError(f"knowledge base {str(kb)!r} is not a directory")
    config = config_for(args)
    if not args.model:
        config = replace(config, embedding=replace(config.embedding, model=SCALE_MODEL))
    return run_scale_command(kb.resolve(), config, args)
