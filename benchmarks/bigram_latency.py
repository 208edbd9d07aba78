"""Search latency with the CJK bigram leg off and on, over one existing index.

    python benchmarks/bigram_latency.py KB GOLDEN INDEX_DIR MODEL [N]

Each of the first N golden queries is searched once per engine to warm the query-embedding cache, then
the retrieval cache is cleared and it is searched again: the time measured is retrieval, fusion and
spans, without the embedding. Engines and legs alternate per query so machine load hits both alike.
"""

from __future__ import annotations

import os
import statistics
import sys
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import yaml  # noqa: E402

from groove_tui.settings.config import Config  # noqa: E402
from groove_tui.engine import Engine, SearchParams  # noqa: E402


def main(kb: str, golden: str, index_dir: str, model: str, n: str = "300") -> None:
    base = replace(Config(), embedding=replace(Config().embedding, model=model))
    engines = {
        flag: Engine.open(kb, replace(base, search=replace(base.search, cjk_bigram=flag)), index_dir)
        for flag in (False, True)
    }
    queries = [q["query"] for q in yaml.safe_load(open(golden, encoding="utf-8"))["queries"]][: int(n)]
    times: dict[tuple[bool, str], list[float]] = {(f, legs): [] for f in engines for legs in ("hybrid", "fts")}
    for _ in range(2):
        for q in queries:
            for flag, engine in engines.items():
                for legs in ("hybrid", "fts"):
                    params = SearchParams(limit=10, legs=legs)
                    engine.search(q, params)
                    engine._searcher.legs_cache.clear()
                    times[(flag, legs)].append(engine.search(q, params).timings_ms["total"])
    for (flag, legs), v in times.items():
        v.sort()
        print(f"cjk_bigram={flag!s:5} {legs:6} p50 {statistics.median(v):6.2f} ms  p95 {v[int(len(v) * 0.95)]:6.2f} ms")


if __name__ == "__main__":
    main(*sys.argv[1:])
