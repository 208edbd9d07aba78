"""nDCG@10 / recall@10 / MRR with a reranker at several pool sizes, in one process, scoring each pair once.

    python benchmarks/rerank_pools.py KB GOLDEN INDEX_DIR MODEL RERANKER 30,20,10 [FIRST_N] > out.json

The pools run largest first: a smaller pool's candidates are the top of the same fused list, so its pair
scores all come from the engine's score cache and only the largest pool costs model calls. A row "0" is
the same run without the reranker. Timings per query are of the largest pool (cold scores).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from groove_tui.settings.config import load_config  # noqa: E402
from groove_tui.engine import Engine, SearchParams  # noqa: E402
from groove_tui.engine.evaluate.golden import load_golden  # noqa: E402
from groove_tui.commands.eval import eval_params, run_eval, validate_query  # noqa: E402


def main(kb: str, golden_path: str, index_dir: str, model: str, reranker: str, pools: str, first: str = "0") -> None:
    config = load_config(None)
    config = replace(config, embedding=replace(config.embedding, model=model, explicit=True))
    engine = Engine.open(kb, config, index_dir)
    golden = load_golden(golden_path, validate_query=validate_query)
    if int(first):
        golden = replace(golden, queries=golden.queries[: int(first)])
    ks = (1, 5, 10)
    searcher = engine._searcher  # one score cache across the pool sizes (a benchmark may reach in)
    searcher.rerank_scores.size = 10 ** 6
    rows = []
    plain = eval_params(SearchParams(), limit=10, legs="hybrid", reranker_given=False)
    for pool in [0] + sorted((int(p) for p in pools.split(",")), reverse=True):
        params = replace(plain, reranker=reranker if pool else None)
        searcher.config = replace(config, reranker=replace(config.reranker, pool=pool or 1))
        latencies: list[float] = []
        t0 = time.perf_counter()
        results, agg, _corpus = run_eval(engine, golden, params, ks, latencies=latencies,
                                         progress=lambda i, n: print(f"\rpool {pool}: {i}/{n}", end="", file=sys.stderr))
        rows.append({
            "pool": pool, "queries": len(results), "seconds": round(time.perf_counter() - t0, 1),
            "ndcg@10": round(agg.ndcg_at_k[10], 4), "recall@10": round(agg.recall_at_k[10], 4), "mrr": round(agg.mrr, 4),
            "latency_p50_ms": round(sorted(latencies)[len(latencies) // 2], 1),
        })
        print("", file=sys.stderr)
        print(json.dumps(rows[-1]), file=sys.stderr)
    print(json.dumps({"kb": kb, "model": engine.model_id, "reranker": reranker,
                      "max_tokens": config.reranker.max_tokens, "rows": rows}, indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:])
