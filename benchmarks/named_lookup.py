"""What the named-section lookup costs a search, from the keys the index keeps (`named_keys`) against the
full-text phrase statements an index without them runs: the same searches both ways, alternating per
round, on an already built index (opened read-only). Each golden query is searched typed to its last
character and whole, as two keystrokes, retrieval caches cleared before each.

    .venv/bin/python benchmarks/named_lookup.py --kb KB --index-dir INDEX --queries GOLDEN.yml
        [--model hashing-384] [--count 40] [--rounds 3] [--record benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import yaml

from groove_tui.commands.bench.search import clear_caches
from groove_tui.output import records

WAYS = ("keys", "phrases")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", required=True, type=Path)
    ap.add_argument("--index-dir", required=True, type=Path)
    ap.add_argument("--queries", required=True, type=Path, help="a golden file: its first --count queries")
    ap.add_argument("--model", default="hashing-384")
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--record", default=None, metavar="DIR", help="write a measurement record into DIR")
    args = ap.parse_args()
    recording = records.begin(args.record, "bench", sys.argv[1:], program="python benchmarks/named_lookup.py")

    from groove_tui.engine import Engine
    from groove_tui.engine.index.store import Store
    from groove_tui.settings.config import Config, EmbeddingConfig

    config = replace(Config(), embedding=EmbeddingConfig(model=args.model))

    golden = yaml.safe_load(args.queries.read_text(encoding="utf-8"))
    typed = [cut for q in golden["queries"][: args.count] for cut in (q["query"][:-1], q["query"])]
    kept_keys = Store.names_ready
    samples: dict[str, dict[str, list[float]]] = {way: {"named": [], "total": []} for way in WAYS}
    with Engine.open(args.kb, config=config, index_dir=args.index_dir, readonly=True) as eng:
        if not eng.store.names_ready():
            raise SystemExit("the index keeps no named_keys yet: run `groove-tui index` on it first")
        params = eng.default_params(reranker=None, mmr=False, parent_retriever=False, explain=False)
        eng.search(typed[0], params)
        eng._searcher.vectors.wait_loaded()  # a big index's vectors in memory, as after a first search
        chunks = eng.store.counts()[1]
        for _round in range(args.rounds):
            for way in WAYS:
                Store.names_ready = kept_keys if way == "keys" else (lambda self, conn=None: False)  # type: ignore[method-assign]
                try:
                    for query in typed:
                        clear_caches(eng)
                        eng._searcher.named_cache.clear()
                        t0 = time.perf_counter()
                        timings = eng.search(query, params).timings_ms
                        samples[way]["total"].append((time.perf_counter() - t0) * 1000)
                        samples[way]["named"].append(timings.get("named", 0.0))
                finally:
                    Store.names_ready = kept_keys  # type: ignore[method-assign]

    def p95(values: list[float]) -> float:
        return round(sorted(values)[int(0.95 * (len(values) - 1))], 2)

    result = {
        "model": args.model,
        "chunks": chunks,
        "searches": len(typed),
        "rounds": args.rounds,
        "p50_ms": {way: {k: round(statistics.median(v), 2) for k, v in by.items()} for way, by in samples.items()},
        "p95_ms": {
            way: {k: round(sorted(v)[int(0.95 * (len(v) - 1))], 2) for k, v in by.items()}
            for way, by in samples.items()
        },
    }
    if recording is not None:
        recording.write(
            result,
            what="the named-section lookup from kept keys against full-text phrase statements "
            "(benchmarks/named_lookup.py): p50/p95 of the lookup and of the whole search",
            subject={
                "kb": str(args.kb),
                "kb_name": args.kb.name if args.kb.name != "kb" else args.kb.resolve().parent.name,
                "golden": args.queries.name,
                "model": args.model,
                "variant": "named-lookup",
            },
        )
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
