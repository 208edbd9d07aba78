"""Indexing throughput.

Index mode (`--mode index`) never touches the KB or its index: it copies the first `--docs` documents into
a temporary directory (outside the KB; the walker does not follow symlinks), indexes them into a fresh
temporary index and compares phase two's chunks/s with the embedder's own passages/s on the same chunk
texts (`embed_passages` in batches of `[embedding] batch_size`, no SQLite) in the same run, alternating
the two so machine noise hits both alike. It also times phase one on a fresh copy of the whole KB's full
text (temporary index, no embeddings), what the word leg's side table adds to that index (its share of
the pages, and the time to build it again) and a no-change re-index of the KB's own index (if it exists).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groove_tui.engine import Engine
    from groove_tui.engine.types import IndexProgress


# ================================================================ index mode


def copy_subset(kb: Path, dest: Path, docs: int | None, exclude_dirs: tuple[str, ...]) -> int:
    """Copy the first `docs` Markdown files (walk order) of `kb` into `dest`; how many were copied."""
    from groove_tui.engine.index.walk import walk_kb

    paths = walk_kb(kb, exclude_dirs)
    if docs is not None:
        paths = paths[:docs]
    for rel in paths:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(kb / rel, target)
    return len(paths)


def bench_index(
    engine: Engine,
    docs: int | None,
    repeat: int,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    from groove_tui.engine import Engine as EngineCls
    from groove_tui.engine.index.indexer import embedding_input

    notify = progress or (lambda _label, _done, _total: None)
    config = engine.config
    batch = config.embedding.batch_size
    out: dict[str, Any] = {"batch_size": batch}
    with tempfile.TemporaryDirectory(prefix="groove-tui-bench-") as tmp:
        tmpdir = Path(tmp)
        # Phase one on the whole KB (full text only), fresh index.
        full = tmpdir / "full"
        n_full = copy_subset(engine.kb_path, full / "kb", None, config.exclude_dirs)
        p1: list[float] = []
        for r in range(max(1, min(repeat, 3))):
            notify("phase one", r, repeat)
            with EngineCls.open(full / "kb", config=config, index_dir=full / f"idx{r}") as eng:
                rep = eng.index(embed=False)
                if r == 0:
                    out["sizes"] = index_sizes(eng)
                    out["word_table"] = word_table_cost(eng)
            p1.append(rep.fulltext_seconds)
            shutil.rmtree(full / f"idx{r}", ignore_errors=True)
        p1_s = statistics.median(p1)
        out["phase_one"] = {
            "documents": n_full,
            "chunks": rep.chunks,
            "seconds": round(p1_s, 3),
            "runs": [round(x, 3) for x in p1],
            "docs_per_s": round(n_full / p1_s, 1) if p1_s else None,
        }
        shutil.rmtree(full, ignore_errors=True)

        # Phase two vs the embedder alone, on the same chunk texts, alternating.
        sub = tmpdir / "subset"
        n_sub = copy_subset(engine.kb_path, sub / "kb", docs, config.exclude_dirs)
        embedder = engine.embedder()
        embedder.embed_passages(["warm up the model"])  # lazy weights load outside both timings
        index_rates: list[float] = []
        alone_rates: list[float] = []
        p1_sub: list[float] = []
        chunks = 0
        texts: list[str] = []
        rounds = max(1, repeat)
        for r in range(rounds):
            notify("phase two", r, rounds)
            idx = sub / f"idx{r}"
            with EngineCls.open(sub / "kb", config=config, index_dir=idx) as eng:
                rep = eng.index()
                contextual = eng.store.get_meta("context_mode") == "static"
                rows = eng.store.conn().execute("SELECT content, context_text FROM chunks ORDER BY id").fetchall()
            texts = [embedding_input(c, ctx, contextual) for c, ctx in rows]
            chunks = rep.embedded
            p1_sub.append(rep.fulltext_seconds)
            if rep.embed_seconds > 0:
                index_rates.append(rep.embedded / rep.embed_seconds)
            shutil.rmtree(idx, ignore_errors=True)
            notify("embedder alone", r, rounds)
            t0 = time.perf_counter()
            for start in range(0, len(texts), batch):
                embedder.embed_passages(texts[start : start + batch])
            dt = time.perf_counter() - t0
            if dt > 0 and texts:
                alone_rates.append(len(texts) / dt)
        idx_rate = statistics.median(index_rates) if index_rates else None
        alone_rate = statistics.median(alone_rates) if alone_rates else None
        out["phase_two"] = {
            "documents": n_sub,
            "chunks": chunks,
            "index_chunks_per_s": round_or_none(idx_rate, 2),
            "embedder_passages_per_s": round_or_none(alone_rate, 2),
            "ratio": round_or_none(idx_rate / alone_rate, 3) if idx_rate and alone_rate else None,
            "index_runs_chunks_per_s": [round(x, 2) for x in index_rates],
            "embedder_runs_passages_per_s": [round(x, 2) for x in alone_rates],
            "subset_phase_one_s": round(statistics.median(p1_sub), 3) if p1_sub else None,
        }

    # No-change re-index of the KB's own index (phase two has nothing to do on an unchanged index;
    # embed=False also keeps a half-embedded index from starting phase two here).
    docs_now, _chunks, _pending = engine.store.counts()
    if docs_now:
        runs = []
        for r in range(max(1, min(repeat, 5))):
            notify("re-index", r, repeat)
            rep = engine.index(embed=False)
            runs.append(rep.seconds)
        changed = rep.added + rep.updated + rep.deleted + rep.renamed
        out["no_change_reindex"] = {
            "seconds": round(statistics.median(runs), 3),
            "runs": [round(x, 3) for x in runs],
            "documents": docs_now,
            "changed": changed,
        }
    else:
        out["no_change_reindex"] = None
    return out


# What each part of the index is, by the tables (and their indexes) dbstat names.
SIZE_PARTS = (
    ("trigram", ("fts_chunks",)),
    ("bigram", ("fts_bigram",)),
    ("words", ("fts_words",)),
    ("phrase statistics", ("fts_phrase",)),
    ("chunks", ("chunks", "idx_chunks")),
    ("documents", ("documents", "idx_documents", "sqlite_autoindex_documents")),
    ("vectors", ("vec_",)),
)


def index_sizes(eng: Engine) -> dict[str, Any]:
    """A fresh index's bytes by part against the text it holds (the chunks' heading, context and content
    in UTF-8): the full-text tables' positional postings are most of it."""
    conn = eng.store.conn()
    pages = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
    parts: dict[str, int] = {name: 0 for name, _prefixes in SIZE_PARTS} | {"other": 0}
    for name, size in pages:
        part = next((label for label, prefixes in SIZE_PARTS if name.startswith(prefixes)), "other")
        parts[part] += int(size)
    text = conn.execute(
        "SELECT coalesce(sum(length(CAST(coalesce(heading, '') AS BLOB)) + length(CAST(coalesce(context_text, '') "
        "AS BLOB)) + length(CAST(content AS BLOB))), 0) FROM chunks"
    ).fetchone()[0]
    without_vectors = sum(parts.values()) - parts["vectors"]
    return {
        "text_bytes": int(text),
        "bytes": parts,
        "without_vectors": without_vectors,
        "ratio_to_text": round(without_vectors / text, 2) if text else None,
    }


def word_table_cost(eng: Engine) -> dict[str, Any]:
    """What the word leg's side table costs a freshly indexed KB: its pages against the whole index's,
    the time to build it again from the chunks (the run's first full-text progress, which is the side
    table's build, from its start until it has every chunk), and the time and bytes of its common terms'
    stored statistics."""
    conn = eng.store.conn()
    pages = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
    words = sum(size for name, size in pages.items() if name.startswith("fts_words"))
    total = sum(pages.values())
    chunks = eng.store.counts()[1]
    with eng.store.transaction() as wconn:
        eng.store.set_meta("words_version", "", wconn)  # the table is built again by the next run
    seen: list[tuple[float, int]] = []

    def progress(p: IndexProgress) -> None:
        if p.phase == "fulltext" and p.total == chunks:
            seen.append((time.perf_counter(), p.done))

    eng.index(embed=False, progress=progress)
    done_at = next((t for t, done in seen if done >= chunks), None)
    # The statistics of its common terms the pruned leg reads (stored only for a table big enough to
    # prune): stored again from scratch, timed alone.
    from groove_tui.engine.index import phrase_stats

    weights = eng.config.search.fusion.bm25_weights
    with eng.store.transaction() as wconn:
        phrase_stats.forget_table(wconn, "fts_words")
    t0 = time.perf_counter()
    terms = phrase_stats.store_common_phrases(conn, weights, "fts_words", japanese=eng.store.japanese)
    stats_s = time.perf_counter() - t0
    stats_bytes = (
        conn.execute(
            "SELECT coalesce(sum(length(rowids) + length(terms) + length(phrase)), 0) FROM fts_phrase_stats "
            "WHERE tbl LIKE 'fts_words%'"
        ).fetchone()[0]
        if terms
        else 0
    )
    return {
        "bytes": words,
        "index_bytes": total,
        "share": round(words / total, 4) if total else None,
        "build_s": round(done_at - seen[0][0], 3) if seen and done_at is not None else None,
        "rebuilt": eng.store.words_ready(),
        "stored_terms": terms,
        "stored_bytes": stats_bytes,
        "stored_s": round(stats_s, 3),
    }


def round_or_none(x: float | None, nd: int) -> float | None:
    return None if x is None else round(x, nd)
