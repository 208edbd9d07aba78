"""What one huge note costs the queries that touch it, beyond the text it adds: three KBs made of the first
--docs notes of a KB — those alone ("without"), with one more note of --mb megabytes made of them (each
note's H1 turned into an H2, repeated until the size is reached: "with"), and with the same text as copies
of the notes themselves ("spread") — indexed with the hashing embedder at 384 dimensions, the same queries
through all three.

Every query touches the huge note, which holds every other note's text. Per configuration (plain, the
parent retriever, MMR) the medians of each stage over cold searches, and of whole `get_connection_graph`
walks from the huge note and from a short one. "with" against "spread" is what the note being one note
costs (the same text, chunks and vectors either way); against "without", what its text costs. Ratios are
taken per round, so machine noise hits all alike; medians over rounds.

    .venv/bin/python benchmarks/huge_note.py --kb KB [--docs 2000] [--mb 21] [--rounds 3]
        [--record benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from groove_tui.commands.bench.indexing import copy_subset
from groove_tui.commands.bench.search import BUILTIN_QUERIES, cold_searches
from groove_tui.output import records

MODEL = "hashing-384"
STAGES = ("vector", "fts", "word", "fuse", "mmr", "parent", "spans", "total")
HUGE = "huge-note.md"


def make_kbs(kb: Path, root: Path, docs: int, mb: float, exclude_dirs: tuple[str, ...]) -> tuple[dict[str, Path], int]:
    """The three KBs under `root` (module docstring) by name, and the huge note's size in bytes."""
    kbs = {name: root / name for name in ("without", "spread", "with")}
    for path in kbs.values():
        copy_subset(kb, path, docs, exclude_dirs)
    notes = sorted(kbs["without"].rglob("*.md"))
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in notes]
    one = "\n\n".join(t.replace("# ", "## ", 1) if t.startswith("# ") else t for t in texts)
    target = int(mb * 1_000_000)
    body = (one * (target // max(len(one), 1) + 1))[:target]
    (kbs["with"] / HUGE).write_text("# Everything\n\n" + body, encoding="utf-8")
    copied, copy = 0, 0
    while copied < len(body):  # the same text as whole notes, copy after copy
        for path, text in zip(notes, texts, strict=True):
            dest = kbs["spread"] / f"rep{copy}" / path.relative_to(kbs["without"])
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text, encoding="utf-8")
            copied += len(text) + 2
            if copied >= len(body):
                break
        copy += 1
    return kbs, len(body.encode("utf-8"))


def graph_ms(engine, start: str) -> float:
    from groove_tui.server.kb import KbService

    t0 = time.perf_counter()
    out = KbService(engine).get_connection_graph({"start": start})
    assert "nodes" in out, out
    return (time.perf_counter() - t0) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", required=True, type=Path)
    ap.add_argument("--docs", type=int, default=2000, help="notes of the KB to copy")
    ap.add_argument("--mb", type=float, default=21.0, help="the huge note's size in MB")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--record", default=None, metavar="DIR", help="write a measurement record into DIR")
    ap.add_argument("--label", default=None, help="a word added to the record's variant (e.g. the code measured)")
    args = ap.parse_args()
    recording = records.begin(args.record, "bench", sys.argv[1:], program="python benchmarks/huge_note.py")

    from groove_tui.engine import Engine
    from groove_tui.settings.config import Config, EmbeddingConfig

    config = replace(Config(), embedding=EmbeddingConfig(model=MODEL))
    queries = list(BUILTIN_QUERIES)
    variants = {
        "plain": {"mmr": False, "parent_retriever": False},
        "parent": {"mmr": False, "parent_retriever": True},
        "mmr": {"mmr": True, "parent_retriever": False},
    }
    samples: dict[str, dict[str, dict[str, list[float]]]] = {}  # kb -> variant/graph -> stage -> per round
    ratios: dict[str, dict[str, list[float]]] = {}
    result: dict = {"model": MODEL, "queries": len(queries), "rounds": args.rounds}
    with tempfile.TemporaryDirectory(prefix="groove-tui-huge-") as tmp:
        kbs, size = make_kbs(args.kb, Path(tmp), args.docs, args.mb, config.exclude_dirs)
        short = sorted(p.relative_to(kbs["without"]).as_posix() for p in kbs["without"].rglob("*.md"))[0]
        with (
            Engine.open(kbs["without"], config=config, index_dir=Path(tmp) / "idx-without") as without,
            Engine.open(kbs["spread"], config=config, index_dir=Path(tmp) / "idx-spread") as spread,
            Engine.open(kbs["with"], config=config, index_dir=Path(tmp) / "idx-with") as with_huge,
        ):
            engines = {"without": without, "spread": spread, "with": with_huge}
            for name, eng in engines.items():
                t0 = time.perf_counter()
                eng.index()
                result[f"index_{name}_s"] = round(time.perf_counter() - t0, 1)
                docs, chunks, _pending = eng.store.counts()
                result[f"{name}_chunks"] = chunks
                result[f"{name}_documents"] = docs
                eng._searcher.vectors.knn(eng.embedder().embed_query("warm"), 1, eng.store.generation())
                eng._searcher.vectors.wait_loaded()  # a big index's vectors in memory, as after a first search
            result["huge_note_bytes"] = size
            result["huge_note_chunks"] = (
                with_huge.store.conn()
                .execute(
                    "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.path = ?", (HUGE,)
                )
                .fetchone()[0]
            )
            for r in range(args.rounds):
                round_p50: dict[str, dict[str, dict[str, float]]] = {}
                for name, eng in engines.items():
                    for variant, settings in variants.items():
                        params = eng.default_params(reranker=None, explain=False, **settings)
                        stages = cold_searches(eng, queries, 1, params, lambda *_: None)[0]
                        for stage in STAGES:
                            if stages.get(stage):
                                p50 = statistics.median(stages[stage])
                                samples.setdefault(name, {}).setdefault(variant, {}).setdefault(stage, []).append(p50)
                                round_p50.setdefault(name, {}).setdefault(variant, {})[stage] = p50
                    for start, label in ((HUGE, "graph_from_huge_note"), (short, "graph_from_a_short_note")):
                        if name != "with" and start == HUGE:
                            start = short  # no huge note there: the same walk from a short one
                        ms = statistics.median(graph_ms(eng, start) for _ in range(3))
                        samples.setdefault(name, {}).setdefault(label, {}).setdefault("total", []).append(ms)
                        round_p50.setdefault(name, {}).setdefault(label, {})["total"] = ms
                for against in ("spread", "without"):
                    for what, stages_now in round_p50["with"].items():
                        for stage, ms in stages_now.items():
                            before = round_p50[against].get(what, {}).get(stage)
                            if before:
                                ratios.setdefault(f"{what} against {against}", {}).setdefault(stage, []).append(
                                    ms / before
                                )
                print(f"round {r + 1}: {json.dumps(round_p50)}", file=sys.stderr)
    result["p50_ms"] = {
        name: {what: {s: round(statistics.median(v), 2) for s, v in st.items()} for what, st in by.items()}
        for name, by in samples.items()
    }
    result["ratio_with"] = {
        what: {s: round(statistics.median(v), 2) for s, v in st.items()} for what, st in ratios.items()
    }
    if recording is not None:
        recording.write(
            result,
            what=f"queries touching one {args.mb:g} MB note against its text as ordinary notes and without it "
            "(benchmarks/huge_note.py): stage p50s of cold searches, graph walks, ratios per round",
            subject={
                "kb": str(args.kb),
                "kb_name": args.kb.name if args.kb.name != "kb" else args.kb.resolve().parent.name,
                "golden": None,
                "model": MODEL,
                "variant": "huge-note" + (f"-{args.label}" if args.label else ""),
            },
        )
    print(json.dumps(result, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
