"""What `low_confidence` is worth: over a golden set, how often the banner fires, its precision (the share
of flagged pages whose first hit is not relevant) and its recall (the share of pages with a wrong first
hit that it flags), written as a measurement record.

    python benchmarks/confidence.py KB GOLDEN --index-dir DIR --model NAME [--fusion dbsf]
        [--record benchmarks/results]

A page counts as wrong when its first hit matches none of the query's expected entries (as eval's
metrics match them). The index given is only read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from groove_tui.engine import Engine
from groove_tui.engine.errors import IndexNotReady
from groove_tui.engine.evaluate.golden import load_golden, validate_query
from groove_tui.engine.evaluate.metrics import eval_limit, eval_params, is_hit
from groove_tui.engine.types import SearchParams
from groove_tui.output import records
from groove_tui.settings.config import Config, EmbeddingConfig

K_VALUES = (1, 5, 10)


def measure(engine: Engine, golden, params: SearchParams) -> dict[str, float | int]:
    """Counts of (flagged, first hit wrong) over the judged queries, and the banner's precision and recall."""
    fired = wrong = fired_wrong = judged = 0
    for q in golden.queries:
        if not q.expected:
            continue
        resp = engine.search(q.query, params)
        judged += 1
        first = resp.results[0] if resp.results else None
        miss = first is None or not any(is_hit(e, first.path, first.heading) for e in q.expected)
        fired += resp.low_confidence
        wrong += miss
        fired_wrong += resp.low_confidence and miss
    return {
        "queries": judged,
        "first_hit_wrong": wrong,
        "fired": fired,
        "fired_and_wrong": fired_wrong,
        "fire_rate": round(fired / judged, 4) if judged else 0.0,
        "precision": round(fired_wrong / fired, 4) if fired else 0.0,
        "recall": round(fired_wrong / wrong, 4) if wrong else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kb")
    ap.add_argument("golden")
    ap.add_argument("--index-dir", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--fusion", default=None, choices=("dbsf", "relative", "rrf"))
    ap.add_argument(
        "--record",
        default=None,
        metavar="DIR",
        help="write a measurement record into DIR (or to DIR if it ends in .json)",
    )
    args = ap.parse_args(argv)
    config = replace(Config(), embedding=EmbeddingConfig(model=args.model, explicit=True))
    golden = load_golden(Path(args.golden), validate_query=validate_query)
    recording = records.begin(args.record, "confidence", argv, Path(args.kb), program="python benchmarks/confidence.py")
    started = time.time()
    params = eval_params(
        SearchParams(fusion=args.fusion), limit=eval_limit(K_VALUES), legs="hybrid", reranker_given=False
    )
    try:
        engine = Engine.open(args.kb, config=config, index_dir=args.index_dir, readonly=True)
    except IndexNotReady as exc:
        print(
            f"confidence: no index of {args.kb} to read ({exc.db_path}, {exc.reason}): index it first", file=sys.stderr
        )
        return 2
    with engine:
        figures = measure(engine, golden, params)
    figures["fusion"] = args.fusion or config.search.fusion.method
    figures["seconds"] = round(time.time() - started, 1)
    if recording is not None:
        kb = Path(args.kb).resolve()
        recording.write(
            figures,
            what="low_confidence against a wrong first hit (benchmarks/confidence.py)",
            subject={
                "kb": str(kb),
                "kb_name": kb.parent.name if kb.name == "kb" else kb.name,
                "golden": os.path.basename(args.golden),
                "model": args.model,
                "variant": f"confidence-{figures['fusion']}",
            },
        )
    print(json.dumps(figures, indent=2), file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
