"""Fusion at every embedding coverage: nDCG@10 / recall@10 / MRR of the hybrid at seeded shares of chunks
embedded, against the full-text leg alone, written as a measurement record.

    python benchmarks/coverage.py KB GOLDEN --index-dir DIR --model NAME [--shares 0,0.1,0.5,0.9,1]
        [--seed 0] [--record benchmarks/results]

Each share is a copy of the finished index with only that seeded share of its chunks embedded (the state
the indexer leaves part way through its embedding phase: `groove-tui eval --embedded-share` does the same
for one share). One process serves every share so each golden query is embedded once. The index given is
only read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from groove_tui.commands.eval import run_eval
from groove_tui.engine import DB_NAME, Engine
from groove_tui.engine.evaluate.golden import load_golden, validate_query
from groove_tui.engine.evaluate.metrics import eval_limit, eval_params
from groove_tui.engine.index.coverage import copy_with_share
from groove_tui.engine.retrieve.candidates import LRU
from groove_tui.engine.types import SearchParams
from groove_tui.output import records
from groove_tui.settings.config import Config, EmbeddingConfig
from groove_tui.settings.paths import index_dir_for

K_VALUES = (1, 5, 10)


def _measure(engine: Engine, golden, legs: str) -> dict[str, float]:
    params = eval_params(SearchParams(), limit=eval_limit(K_VALUES), legs=legs, reranker_given=False)  # as `eval`
    _results, agg, _corpus = run_eval(engine, golden, params, K_VALUES)
    return {
        "ndcg@10": round(agg.ndcg_at_k[10], 4),
        "recall@10": round(agg.recall_at_k[10], 4),
        "mrr": round(agg.mrr, 4),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kb")
    ap.add_argument("golden")
    ap.add_argument("--index-dir", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--shares", default="0,0.1,0.5,0.9,1")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--queries", type=int, default=None, metavar="N", help="only the golden file's first N queries")
    ap.add_argument(
        "--record",
        default=None,
        metavar="DIR",
        help="write a measurement record into DIR (or to DIR if it ends in .json)",
    )
    ap.add_argument(
        "--keep-copies",
        default=None,
        metavar="DIR",
        help="keep each share's index copy under DIR/s<share> (to evaluate it with other code)",
    )
    args = ap.parse_args(argv)
    shares = [float(s) for s in args.shares.split(",")]
    config = replace(Config(), embedding=EmbeddingConfig(model=args.model, explicit=True))
    golden = load_golden(Path(args.golden), validate_query=validate_query)
    if args.queries is not None:
        golden = replace(golden, queries=golden.queries[: args.queries])
    recording = records.begin(args.record, "coverage", argv, Path(args.kb), program="python benchmarks/coverage.py")
    base = Engine.open(args.kb, config=config, index_dir=args.index_dir)
    query_vectors = LRU(len(golden.queries) + 16)
    rows: list[dict] = []
    started = time.time()
    try:
        fts = _measure(base, golden, "fts")
        print(f"full text          {fts}", file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix="groove-tui-coverage-") as scratch:
            root = args.keep_copies or scratch
            for share in shares:
                dest = Path(root) / f"s{share}"
                kept, pending = copy_with_share(
                    base.store.db_path, index_dir_for(base.kb_path, dest) / DB_NAME, share, args.seed
                )
                eng = Engine.open(args.kb, config=config, index_dir=dest)
                eng._embedder = base.embedder()  # one model for every share
                eng._searcher.query_vectors = query_vectors
                try:
                    hybrid = _measure(eng, golden, "hybrid")
                finally:
                    eng.close()
                row = {
                    "share": share,
                    "embedded": kept,
                    "pending": pending,
                    "hybrid": hybrid,
                    "hybrid_minus_fts_ndcg@10": round(hybrid["ndcg@10"] - fts["ndcg@10"], 4),
                }
                print(f"share {share:<4} hybrid {hybrid}  Δ {row['hybrid_minus_fts_ndcg@10']:+.4f}", file=sys.stderr)
                rows.append(row)
    finally:
        base.close()
    figures = {
        "queries": len(golden.queries),
        "seed": args.seed,
        "full_text": fts,
        "shares": rows,
        "seconds": round(time.time() - started, 1),
    }
    if recording is not None:
        kb = Path(args.kb).resolve()
        recording.write(
            figures,
            what="fusion at seeded shares of chunks embedded (benchmarks/coverage.py)",
            subject={
                "kb": str(kb),
                "kb_name": kb.parent.name if kb.name == "kb" else kb.name,
                "golden": os.path.basename(args.golden),
                "model": args.model,
                "variant": "coverage",
            },
        )
    text = json.dumps(figures, indent=2, ensure_ascii=False)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
