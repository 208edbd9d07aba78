"""What a sweep costs against separate eval runs at the same values (docs/performance.md, issue 15).

    python benchmarks/sweep_cost.py KB GOLDEN INDEX_DIR MODEL [REPEAT] > out.json

Per repeat, in one process with the embedder already loaded (so model start-up is not counted on
either side): the λ sweep 0:1:0.1 through `run_sweep` on a fresh engine, and 11 plain eval runs (a
fresh engine each, as 11 `groove-tui eval --mmr --lambda X` would have: query embeddings and legs
recomputed). Checks the aggregates agree exactly and prints medians and the ratio.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from groove_tui.settings.config import load_config  # noqa: E402
from groove_tui.engine import Engine  # noqa: E402
from groove_tui.engine.evaluate.metrics import aggregate, eval_params  # noqa: E402
from groove_tui.engine.evaluate.golden import load_golden, validate_query  # noqa: E402
from groove_tui.engine.evaluate.sweep import parse_axis, run_sweep, score_golden  # noqa: E402


def main(kb: str, golden_path: str, index_dir: str, model: str, repeat: str = "3") -> None:
    config = load_config(None)
    config = replace(config, embedding=replace(config.embedding, model=model, explicit=True))
    golden = load_golden(golden_path, validate_query=validate_query)
    ks = (1, 5, 10)
    axis = parse_axis("mmr_lambda=0:1:0.1")
    warm = Engine.open(kb, config, index_dir)
    warm.embedder().embed_query("warm up")  # the model loads once per process, as for one CLI run
    base = eval_params(warm.default_params(), limit=10, legs="hybrid", reranker_given=False)
    sweeps, plains, firsts = [], [], []
    for r in range(int(repeat)):
        with Engine.open(kb, config, index_dir) as eng:
            t = time.perf_counter()
            result = run_sweep(eng, golden, base, (axis,), ks)
            sweeps.append(time.perf_counter() - t)
        t = time.perf_counter()
        for i, lam in enumerate(axis.values):
            with Engine.open(kb, config, index_dir) as eng:
                t1 = time.perf_counter()
                p = replace(base, mmr=True, mmr_lambda=lam)
                results, _ = score_golden(eng.search, golden, p, ks)
                if i == 0:
                    firsts.append(time.perf_counter() - t1)
                agg = aggregate([x.metrics for x in results], ks)
                assert agg == result.points[i].aggregate, f"λ={lam}: sweep and eval differ"
        plains.append(time.perf_counter() - t)
        print(f"repeat {r + 1}: sweep {sweeps[-1]:.1f} s, 11 evals {plains[-1]:.1f} s", file=sys.stderr)
    out = {
        "queries": len(golden.queries),
        "values": len(axis.values),
        "sweep_s": sweeps,
        "eleven_evals_s": plains,
        "one_eval_s": firsts,
        "median_sweep_s": statistics.median(sweeps),
        "median_eleven_evals_s": statistics.median(plains),
        "ratio_sweep_to_eleven_evals": statistics.median(s / p for s, p in zip(sweeps, plains)),
        "sweep_in_plain_evals": statistics.median(s / f for s, f in zip(sweeps, firsts)),
        "points": [{"lambda": p.settings[0][1], "ndcg10": p.aggregate.ndcg_at_k[10], "docs10": p.diversity}
                   for p in result.points],
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:])
