"""How often `low_confidence` fires, and how often the first hit is then wrong, on a golden set.

    python benchmarks/low_confidence.py KB GOLDEN INDEX_DIR MODEL [FIRST_N] > out.json

Runs each query with eval's parameters (limit 10, no filters, no reranker) and records the response's
`low_confidence`, whether the first hit is an expected one, and the page's scores, so other rules can be
replayed offline. Prints the firing table for the engine's rule (under dbsf: a flat page whose best hit
is also below mean + 3 sd of its legs' windows) and for groove's (max/mean below `min_confidence_ratio`),
replayed on the same pages.
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
from groove_tui.engine.evaluate.metrics import eval_params, is_hit  # noqa: E402
from groove_tui.engine.evaluate.golden import load_golden, validate_query  # noqa: E402
from groove_tui.engine.retrieve.fusion import _low_confidence  # noqa: E402


def main(kb: str, golden_path: str, index_dir: str, model: str, first: str = "0") -> None:
    config = load_config(None)
    config = replace(config, embedding=replace(config.embedding, model=model, explicit=True))
    engine = Engine.open(kb, config, index_dir)
    golden = load_golden(golden_path, validate_query=validate_query)
    queries = golden.queries[: int(first)] if int(first) else golden.queries
    params = eval_params(SearchParams(), limit=10, legs="hybrid", reranker_given=False)
    rows = []
    for i, q in enumerate(queries):
        resp = engine.search(q.query, params)
        top = resp.results[0] if resp.results else None
        right = top is not None and any(is_hit(e, top.path, top.heading) for e in q.expected)
        groove = _low_confidence([h.score for h in resp.results], config.search.min_confidence_ratio)
        rows.append({"id": q.id, "fires": resp.low_confidence, "fires_groove": groove, "first_right": right,
                     "scores": [round(h.score, 6) for h in resp.results]})
        print(f"\r{i + 1}/{len(queries)}", end="", file=sys.stderr)
    print("", file=sys.stderr)

    def wrong(rs: list) -> float | None:
        return round(sum(not r["first_right"] for r in rs) / len(rs), 3) if rs else None

    summary: dict = {"queries": len(rows), "first_wrong_overall": wrong(rows)}
    for rule in ("fires", "fires_groove"):
        fired = [r for r in rows if r[rule]]
        quiet = [r for r in rows if not r[rule]]
        summary[rule] = {"share": round(len(fired) / len(rows), 3), "first_wrong_when_fires": wrong(fired),
                         "first_wrong_when_quiet": wrong(quiet)}
    print(json.dumps(summary), file=sys.stderr)
    print(json.dumps({"kb": kb, "model": engine.model_id, "summary": summary, "rows": rows}))


if __name__ == "__main__":
    main(*sys.argv[1:])
