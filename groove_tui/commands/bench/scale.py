"""Search latency at a synthetic scale.

Scale mode (`--scale N`) replicates the KB's Markdown under `rep{i}/` in a temporary directory until it
holds at least N chunks (counted with the indexer's own parser), indexes that into a temporary index with
the hashing embedder at 384 dimensions (`SCALE_MODEL`, unless `--model` is given), and times cold searches
over it as search mode does. The KB and its own index are never touched; the temporary files are removed.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from groove_tui.commands.bench.search import (
    FULLTEXT_LEGS,
    STAGES,
    clear_caches,
    clear_phrase_stats,
    cold_searches,
    load_queries,
    percentiles,
)
from groove_tui.commands.bench.targets import verdicts

if TYPE_CHECKING:
    import argparse


# Scale mode's default embedder: feature hashing (fast to index) at multilingual-e5-small's dimension,
# so the brute-force KNN scans as many bytes per chunk as it would with the default model.
SCALE_MODEL = "hashing-384"

# ================================================================ scale mode


def note_texts(kb: Path, exclude_dirs: tuple[str, ...]) -> list[tuple[str, str]]:
    """(path, text) of every Markdown file the indexer would read, as the indexer reads and decodes it."""
    from groove_tui.engine.index.walk import decode_markdown, read_file, walk_kb
    from groove_tui.engine.types import FileIssue

    out = []
    for rel in walk_kb(kb, exclude_dirs):
        f = read_file(kb, rel)
        if isinstance(f, FileIssue):
            continue
        try:
            out.append((rel, decode_markdown(f.raw or b"")))
        except ValueError:
            continue
    return out


def chunks_per_file(kb: Path, config) -> list[tuple[str, int]]:
    """(path, chunks) of every Markdown file the indexer would index, counted with its own parser."""
    from groove_tui.engine.index.markdown import parse_markdown

    out = []
    for rel, text in note_texts(kb, config.exclude_dirs):
        # The chunk count does not depend on the path, so the count of the original holds for its copies.
        n = len(
            parse_markdown(
                rel, text, exclude_headings=config.exclude_headings, max_chunk_bytes=config.chunking.max_chunk_bytes
            ).chunks
        )
        if n:
            out.append((rel, n))
    return out


def synthesise_kb(kb: Path, dest: Path, target: int, config, notify=None) -> dict[str, int]:
    """Copy `kb`'s Markdown files into `dest`, copy i of a file at `rep{i}/<path>`, until at least
    `target` chunks; copies, not links, so nothing can reach back into the KB."""
    files = chunks_per_file(kb, config)
    if not files:
        raise ValueError(f"{kb}: no Markdown with text to replicate")
    chunks = docs = copies = 0
    while chunks < target:
        for rel, n in files:
            target_path = dest / f"rep{copies}" / rel
            target_path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(kb / rel, target_path)
            chunks += n
            docs += 1
            if notify and docs % 500 == 0:
                notify("copy", min(chunks, target), target)
            if chunks >= target:
                break
        copies += 1
    return {
        "source_documents": len(files),
        "source_chunks": sum(n for _r, n in files),
        "documents": docs,
        "chunks": chunks,
        "copies": copies,
    }


def bench_scale(
    kb: Path,
    config,
    target: int,
    queries: Sequence[str],
    repeat: int,
    *,
    progress: Callable[[str, int, int], None] | None = None,
    keep_dir: Path | None = None,
) -> dict[str, Any]:
    """Synthesise a KB of ~`target` chunks and an index of it (in `keep_dir`, reused when it already holds
    them, else in a temporary directory removed after), then time cold searches over it. The given KB
    and its index are only read."""
    notify = progress or (lambda _label, _done, _total: None)
    if keep_dir is not None:
        keep_dir.mkdir(parents=True, exist_ok=True)
        return _bench_scale_in(kb, config, target, queries, repeat, notify, keep_dir)
    with tempfile.TemporaryDirectory(prefix="groove-tui-scale-") as tmp:
        return _bench_scale_in(kb, config, target, queries, repeat, notify, Path(tmp))


# The configurations scale mode compares, pass by pass: the default (full-text leg pruned, its phrase
# statistics kept across searches as in a session), the plain FTS5 statement, and pruned with the phrase
# statistics forgotten before every search (each query as if it were the first of a session).
SCALE_VARIANTS = ("pruned", "plain", "pruned_cold")


def _bench_scale_in(kb, config, target, queries, repeat, notify, root: Path) -> dict[str, Any]:
    from dataclasses import replace as dc_replace

    from groove_tui.engine import Engine as EngineCls
    from groove_tui.engine.index import phrase_stats

    out: dict[str, Any] = {"target_chunks": target, "kept_in": str(root) if root.exists() else None}
    synth, idx = root / "kb", root / "idx"
    t0 = time.perf_counter()
    if not synth.exists() or not any(synth.iterdir()):
        out["synthesised"] = synthesise_kb(kb, synth, target, config, notify)
        (root / "synthesised.json").write_text(__import__("json").dumps(out["synthesised"]))
    else:  # reused: the record of what was made
        out["synthesised"] = __import__("json").loads((root / "synthesised.json").read_text())
    out["synthesise_s"] = round(time.perf_counter() - t0, 2)
    plain_config = dc_replace(config, search=dc_replace(config.search, fulltext_pruning=False))
    with (
        EngineCls.open(synth, config=config, index_dir=idx) as eng,
        EngineCls.open(synth, config=plain_config, index_dir=idx) as plain,
    ):
        rep = eng.index(progress=lambda p: notify(p.phase, p.done, p.total))
        docs, chunks, pending = eng.store.counts()
        out["index"] = {
            "documents": docs,
            "chunks": chunks,
            "pending_embeddings": pending,
            "phase_one_s": round(rep.fulltext_seconds, 2),
            "embed_s": round(rep.embed_seconds, 2),
            "seconds": round(rep.seconds, 2),
        }
        engines = {"pruned": eng, "plain": plain, "pruned_cold": eng}
        base = eng.default_params(reranker=None, mmr=False, parent_retriever=False, explain=False)
        for e in (eng, plain):
            for q in (queries[0], *queries[:3]):  # warm-up: model, pages (not measured)
                clear_caches(e)
                e.search(q, base)
        clear_phrase_stats(eng)
        stages: dict[str, dict[str, list[float]]] = {}
        minus_embed: dict[str, list[float]] = {v: [] for v in SCALE_VARIANTS}
        answers: dict[str, list] = {}
        for _r in range(repeat):  # alternating passes, so machine noise hits every variant alike
            for variant in SCALE_VARIANTS:
                st, me, ans = cast(
                    tuple[dict[str, list[float]], list[float], list[Any]],
                    cold_searches(
                        engines[variant],
                        queries,
                        1,
                        base,
                        notify,
                        vector_first=True,
                        forget_phrases=variant == "pruned_cold",
                    ),
                )
                for name, samples in st.items():
                    stages.setdefault(variant, {s: [] for s in STAGES}).setdefault(name, []).extend(samples)
                minus_embed[variant].extend(me)
                answers.setdefault(variant, ans)
        out["index"]["bytes"] = sum(f.stat().st_size for f in idx.rglob("*") if f.is_file())
        out["index"]["token_lists"] = phrase_stats.token_list_sizes(eng.store.conn())
        out["pruning"] = dict(eng._searcher.pruned.stats) if hasattr(eng, "_searcher") else None
    n = len(queries)
    same = sum(a == b == c for a, b, c in zip(answers["pruned"], answers["plain"], answers["pruned_cold"], strict=True))
    out["search"] = {
        "queries": n,
        "repeat": repeat,
        "stages_ms": {s: percentiles(v) for s, v in stages["pruned"].items()},
        "total_minus_embed_ms": percentiles(minus_embed["pruned"]),
        "total_minus_embed_p50_per_repeat": [
            percentiles(minus_embed["pruned"][r * n : (r + 1) * n])["p50"] for r in range(repeat)
        ],
        "total_p50_per_repeat": [
            percentiles(stages["pruned"]["total"][r * n : (r + 1) * n])["p50"] for r in range(repeat)
        ],
        "variants": {
            v: {
                "total_minus_embed_ms": percentiles(minus_embed[v]),
                "fts_ms": percentiles(stages[v]["fts"]),
                "bigram_ms": percentiles(stages[v]["bigram"]),
                "word_ms": percentiles(stages[v]["word"]),
                "fulltext_legs_ms": percentiles(stages[v].get(FULLTEXT_LEGS, [])),
                "vector_ms": percentiles(stages[v]["vector"]),
            }
            for v in SCALE_VARIANTS
        },
        "identical_results": {"queries": n, "same": same},
    }
    notify("done", 1, 1)
    return out


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # not on every platform
        return None


def run_scale(kb: Path, config, args: argparse.Namespace, *, progress=None) -> dict[str, Any]:
    from groove_tui.engine.models.embedders import describe_model

    repeat = max(1, int(getattr(args, "repeat", 3) or 1))
    result: dict[str, Any] = {
        "kb": str(kb),
        "model": describe_model(config.embedding.model),
        "mode": "scale",
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_before": _loadavg(),
    }
    keep = getattr(args, "scale_dir", None)
    result["scale"] = bench_scale(
        kb,
        config,
        args.scale,
        load_queries(getattr(args, "queries", None)),
        repeat,
        progress=progress,
        keep_dir=Path(keep).expanduser() if keep else None,
    )
    result["load_after"] = _loadavg()
    result["targets"] = verdicts(result)
    return result
