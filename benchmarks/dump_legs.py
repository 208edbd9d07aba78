"""Dump each golden query's two retrieval legs (top 100, raw scores) for offline fusion experiments.

    python benchmarks/dump_legs.py KB GOLDEN INDEX_DIR MODEL OUT.json

The full-text leg is the one search would use: the bigram leg for a CJK query, else the trigram leg.
Raw scores are the engine's: L2 distance for vectors, FTS5 bm25 (lower is better) for full text.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import yaml  # noqa: E402

from groove_tui.settings.config import Config  # noqa: E402
from groove_tui.engine import Engine, SearchParams  # noqa: E402


def main(kb: str, golden: str, index_dir: str, model: str, out: str) -> None:
    cfg = replace(Config(), embedding=replace(Config().embedding, model=model))
    engine = Engine.open(kb, cfg, index_dir)
    rows = []
    for q in yaml.safe_load(open(golden, encoding="utf-8"))["queries"]:
        row = {"id": q["id"], "q": q["query"], "exp": [e["path"] for e in q["expected"]]}
        for legs in ("fts", "vector"):
            resp = engine.search(q["query"], SearchParams(limit=100, legs=legs, explain=True, min_quality=0.0))
            row[legs] = [(h.path, _raw(h.trace, legs)) for h in resp.results]
        rows.append(row)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(rows, f, ensure_ascii=False)


def _raw(trace, legs: str) -> float:
    if legs == "vector":
        return trace.vector_distance
    return trace.bigram_bm25 if trace.bigram_leg else trace.fts_bm25


if __name__ == "__main__":
    main(*sys.argv[1:])
