"""Dump, per golden query, the reranker's pool in fused order with both scores, for offline replays of how
the cross-encoder's score should combine with the fused one.

    python benchmarks/rerank_dump.py KB GOLDEN INDEX_DIR MODEL RERANKER OUT.jsonl [FIRST_N] [MAX_TOKENS]

Each line: {"id", "query", "expected": [[path, heading], …], "pool": [[path, heading, fused, ce], …]}. The
pool is exactly what `Engine.search` hands the reranker (captured around the pipeline's rerank stage), so
a replay ranks what search would rank. Lines are flushed as they are written: a partial run is usable.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from groove_tui.settings.config import load_config  # noqa: E402
from groove_tui.engine import Engine, SearchParams  # noqa: E402
from groove_tui.engine.evaluate.metrics import eval_params  # noqa: E402
from groove_tui.engine.evaluate.golden import load_golden, validate_query  # noqa: E402


def open_engine(kb: str, index_dir: str, model: str, max_tokens: str = "") -> Engine:
    config = load_config(None)
    config = replace(config, embedding=replace(config.embedding, model=model, explicit=True))
    if max_tokens:  # [reranker] max_tokens: how much of each pair the cross-encoder reads
        config = replace(config, reranker=replace(config.reranker, max_tokens=int(max_tokens)))
    return Engine.open(kb, config, index_dir)


def dump_pools(engine: Engine, golden_path: str, reranker: str, out: str, first: str = "0") -> None:
    """Search every golden query (the first N if N > 0) with `reranker`, writing each pool as a line;
    lines already in `out` are kept and their queries skipped (a killed run resumes)."""
    golden = load_golden(golden_path, validate_query=validate_query)
    queries = golden.queries[: int(first)] if int(first) else golden.queries
    searcher = engine._searcher  # a benchmark may reach in: the pool is only visible inside the stage
    real = searcher._rerank
    captured: list = []

    def capture(rr, query, pool_items, limit, keep_all, cancel, progress):
        fused = [(c.row.path, c.row.heading, c.score) for c in pool_items]
        result = real(rr, query, pool_items, limit, keep_all, cancel, progress)
        captured[:] = [(p, h, s, c.trace["rerank_score"]) for (p, h, s), c in zip(fused, pool_items)]
        return result

    searcher._rerank = capture
    params = replace(eval_params(SearchParams(), limit=10, legs="hybrid", reranker_given=True), reranker=reranker)
    done = 0
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            done = sum(1 for _ in f)
    with open(out, "a", encoding="utf-8") as f:
        for i, q in enumerate(queries):
            if i < done:
                continue
            captured.clear()
            engine.search(q.query, params)
            row = {"id": q.id, "query": q.query, "expected": [[e.path, e.heading] for e in q.expected],
                   "pool": captured}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            f.flush()
            print(f"\r{i + 1}/{len(queries)}", end="", file=sys.stderr)


def main(kb: str, golden_path: str, index_dir: str, model: str, reranker: str, out: str, first: str = "0",
         max_tokens: str = "") -> None:
    dump_pools(open_engine(kb, index_dir, model, max_tokens), golden_path, reranker, out, first)


if __name__ == "__main__":
    main(*sys.argv[1:])
