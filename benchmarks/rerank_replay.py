"""Replay ways of combining the cross-encoder's score with the fused one, from a rerank_dump.py file.

    python benchmarks/rerank_replay.py DUMP.jsonl

For each pool: the fused order alone, the cross-encoder alone (groove: its raw score replaces the fused
one), and blends w·norm(ce) + (1 − w)·norm(fused), each score normalised over its own pool (min–max or
z-score). Metrics are the engine's own (engine/evaluate/golden.py) on the top 10 of each ranking.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from groove_tui.engine.evaluate.golden import Expected, GoldenQuery
from groove_tui.engine.evaluate.metrics import aggregate, evaluate_query, RankedHit

KS = (1, 5, 10)


def _norm(x: np.ndarray, how: str) -> np.ndarray:
    if how == "minmax":
        span = x.max() - x.min()
        return (x - x.min()) / span if span > 0 else np.zeros_like(x)
    sd = x.std()
    return (x - x.mean()) / sd if sd > 0 else np.zeros_like(x)


def rankings(pool: list) -> dict[str, list[int]]:
    fused = np.array([p[2] for p in pool], dtype=np.float64)
    ce = np.array([p[3] for p in pool], dtype=np.float64)
    out = {"fused": list(range(len(pool))), "ce": list(np.argsort(-ce, kind="stable"))}
    for how in ("minmax", "z"):
        f, c = _norm(fused, how), _norm(ce, how)
        for w in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
            out[f"{how} w={w}"] = list(np.argsort(-(w * c + (1 - w) * f), kind="stable"))
    # smaller pools are the top of the same fused list (search takes max(pool, limit) of it)
    for size in (10, 15):
        f, c = _norm(fused[:size], "z"), _norm(ce[:size], "z")
        out[f"pool {size} z w=0.5"] = list(np.argsort(-(0.5 * c + 0.5 * f), kind="stable"))
        out[f"pool {size} ce"] = list(np.argsort(-ce[:size], kind="stable"))
    return out


def main(path: str) -> None:
    per: dict[str, list] = {}
    n = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            q = GoldenQuery(id=row["id"], query=row["query"],
                            expected=tuple(Expected(p, h) for p, h in row["expected"]))
            pool = row["pool"]
            if not pool:
                continue
            n += 1
            for name, order in rankings(pool).items():
                hits = [RankedHit(r, pool[i][0], pool[i][1], 0.0) for r, i in enumerate(order[:10], 1)]
                per.setdefault(name, []).append(evaluate_query(q, hits, KS))
    print(f"{n} queries")
    for name, metrics in per.items():
        agg = aggregate(metrics, KS)
        print(f"{name:<14} nDCG@10 {agg.ndcg_at_k[10]:.4f}  R@10 {agg.recall_at_k[10]:.4f}  MRR {agg.mrr:.4f}")


if __name__ == "__main__":
    main(sys.argv[1])
