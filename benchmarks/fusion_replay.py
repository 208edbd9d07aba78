"""Replay score fusions over dumped legs (benchmarks/dump_legs.py): nDCG@10 per normalisation.

    python benchmarks/fusion_replay.py LEGS.json

Each leg's first 50 candidates set the scale (the engine's window); candidates below it are clamped at 0.
The replay ranks documents, not chunks, and breaks ties by insertion order, so it can sit up to .003
from `groove-tui eval`; it is for comparing normalisations with each other on the same candidates.
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np

WINDOW = 50


def ndcg10(ranked: list[str], expected: list[str]) -> float:
    want, seen, dcg = set(expected), set(), 0.0
    for i, path in enumerate(ranked[:10]):
        if path in want and path not in seen:
            seen.add(path)
            dcg += 1 / math.log2(i + 2)
    return dcg / sum(1 / math.log2(i + 2) for i in range(min(len(want), 10)))


def normalise(good: np.ndarray, how: str, window: int) -> np.ndarray:
    """`good` is higher-is-better. Returns each candidate's term before the leg weight."""
    w = good[:window]
    if how == "minmax":
        lo, span = w.min(), w.max() - w.min()
    elif how == "max":
        lo, span = 0.0, w.max()
    elif how == "z":
        return (good - w.mean()) / max(w.std(), 1e-9)
    else:  # dbsf / dbsf-clip: mean ± 3 sd
        lo, span = w.mean() - 3 * w.std(), 6 * w.std()
    out = np.maximum(0.0, (good - lo) / max(span, 1e-9))
    return np.minimum(out, 1.0) if how == "dbsf-clip" else out


def fuse(q: dict, vec_how: str, fts_how: str, *, cosine=True, window=WINDOW, wv=1.0) -> list[str]:
    scores: dict[str, float] = {}
    for leg, how, weight in (("vector", vec_how, wv), ("fts", fts_how, 1.0)):
        if not q[leg]:
            continue
        raw = np.array([r for _, r in q[leg]], dtype=np.float64)
        good = (1 - raw * raw / 2) if (leg == "vector" and cosine) else -raw
        for (path, _), term in zip(q[leg], normalise(good, how, window)):
            scores[path] = scores.get(path, 0.0) + weight * float(term)
    return sorted(scores, key=lambda p: -scores[p])


def main(path: str) -> None:
    queries = json.load(open(path, encoding="utf-8"))

    def mean(**kw) -> str:
        return f"{np.mean([ndcg10(fuse(q, **kw), q['exp']) for q in queries]):.4f}"

    print("legs alone: fts", f"{np.mean([ndcg10([p for p, _ in q['fts']], q['exp']) for q in queries]):.4f}",
          "vector", f"{np.mean([ndcg10([p for p, _ in q['vector']], q['exp']) for q in queries]):.4f}")
    for vec_how, fts_how in (("minmax", "minmax"), ("minmax", "max"), ("z", "z"), ("dbsf-clip", "dbsf-clip"),
                             ("dbsf", "dbsf")):
        print(f"{vec_how} / {fts_how}", mean(vec_how=vec_how, fts_how=fts_how))
    print("dbsf on raw -distance", mean(vec_how="dbsf", fts_how="dbsf", cosine=False))
    for window in (30, 100):
        print(f"dbsf window {window}", mean(vec_how="dbsf", fts_how="dbsf", window=window))
    for wv in (0.75, 1.25):
        print(f"dbsf vector weight {wv}", mean(vec_how="dbsf", fts_how="dbsf", wv=wv))


if __name__ == "__main__":
    main(*sys.argv[1:])
