"""Full text beside two inverted indexes (`--mode peers`): the same KB and golden queries through
groove-tui's full-text legs, tantivy and bm25s (the optional `bench` extra), each built fresh in a
temporary directory (the KB and its own index are only read). Per system: the full-text index's build
time and size, each query's wall time (in-process, warm: the index open, its caches kept as in a session;
groove-tui's retrieval caches cleared before each search so every query runs its legs), p50 / p95 over
alternating rounds, and nDCG@10 against the golden file — each also as a ratio to groove-tui's. For
groove-tui also its full-text legs alone (`legs_ms`: the legs' own times summed, each query's rows read,
without the fusion, the highlight spans and the hits a search adds; what the peers' figures compare with).

What differs between the systems, and is said beside the table (docs/performance.md):

* **Units.** groove-tui indexes chunks (a note's sections) and answers with them, a note possibly more
  than once, as `groove-tui eval` scores them; tantivy and bm25s index and answer whole notes.
* **Tokenisers and stemming.** groove-tui: FTS5 trigrams (no stemming) fused with its word leg (whole
  words, Porter-stemmed); tantivy: `en_stem` (words, lower case, Snowball English, no stop words); bm25s:
  its word splitter, English stop words, Snowball English (PyStemmer).
* **BM25.** FTS5's bm25 (k1 1.2, b 0.75) per leg, fused by the configured method; tantivy BM25 (k1 1.2,
  b 0.75); bm25s "lucene" (k1 1.5, b 0.75).
* **Queries.** groove-tui reads its query language (a leading `-` excludes, quotes make a phrase); the
  peers get the query's words only, as a disjunction.
"""

from __future__ import annotations

import importlib.util
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groove_tui.commands.bench.scale import note_texts
from groove_tui.commands.bench.search import clear_caches, percentiles
from groove_tui.commands.common import CLIError

PEER_MODULES = {"tantivy": "tantivy", "bm25s": "bm25s", "PyStemmer": "Stemmer"}
INSTALL_HINT = "pip install 'groove-tui[bench]' (tantivy, bm25s and PyStemmer), or: make bench"
SYSTEMS = ("groove-tui", "tantivy", "bm25s")
K = 10
_WORDS = re.compile(r"\w+")


def missing_peers() -> list[str]:
    """The `bench` extra's packages that are not installed."""
    return [name for name, module in PEER_MODULES.items() if importlib.util.find_spec(module) is None]


@dataclass
class Peer:
    """One system over the KB: `build()` makes its index (timed by the caller), `search(query)` returns
    the ranked (path, heading) results, `size()` the index's bytes on disk."""

    build: Callable[[], None]
    search: Callable[[str], list[tuple[str, str | None]]]
    size: Callable[[], int]
    legs_ms: list[float] | None = None  # groove-tui: each search's full-text legs, summed, in order


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def groove_peer(kb: Path, config: Any, root: Path) -> tuple[Peer, Callable[[], None]]:
    from groove_tui.commands.bench.indexing import index_sizes
    from groove_tui.engine import Engine

    engine = Engine.open(kb, config=config, index_dir=root / "groove-tui")
    params = engine.default_params(legs="fts", limit=K, reranker=None, mmr=False, parent_retriever=False, explain=False)

    legs_ms: list[float] = []

    def search(query: str) -> list[tuple[str, str | None]]:
        clear_caches(engine)
        response = engine.search(query, params)
        legs_ms.append(sum(response.timings_ms.get(leg, 0.0) for leg in ("fts", "bigram", "word")))
        return [(h.path, h.heading) for h in response.results]

    def size() -> int:
        return int(index_sizes(engine)["without_vectors"])

    def build() -> None:
        engine.index(embed=False)

    return Peer(build, search, size, legs_ms), engine.close


def tantivy_peer(notes: Sequence[tuple[str, str]], root: Path) -> Peer:
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("path", stored=True, tokenizer_name="raw")
    builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
    schema = builder.build()
    where = root / "tantivy"
    where.mkdir()
    index = tantivy.Index(schema, path=str(where))
    state: dict[str, Any] = {}

    def build() -> None:
        writer = index.writer(heap_size=128_000_000)
        for path, text in notes:
            writer.add_document(tantivy.Document(path=path, body=text))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        state["searcher"] = index.searcher()

    def search(query: str) -> list[tuple[str, str | None]]:
        words = " ".join(_WORDS.findall(query))
        if not words:
            return []
        parsed, _errors = index.parse_query_lenient(words, ["body"])
        searcher = state["searcher"]
        return [(searcher.doc(address)["path"][0], None) for _score, address in searcher.search(parsed, K).hits]

    return Peer(build, search, lambda: _dir_bytes(where))


def bm25s_peer(notes: Sequence[tuple[str, str]], root: Path) -> Peer:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    paths = [p for p, _t in notes]
    retriever = bm25s.BM25()
    where = root / "bm25s"

    def build() -> None:
        tokens = bm25s.tokenize([t for _p, t in notes], stopwords="en", stemmer=stemmer, show_progress=False)
        retriever.index(tokens, show_progress=False)
        retriever.save(str(where))

    def search(query: str) -> list[tuple[str, str | None]]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.ids[0]:
            return []  # only stop words: nothing to rank by
        docs, scores = retriever.retrieve(tokens, k=min(K, len(paths)), show_progress=False)
        return [(paths[int(d)], None) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    return Peer(build, search, lambda: _dir_bytes(where))


def run_peers(kb: Path, config: Any, args: Any, *, progress: Callable[[str, int, int], None] | None = None) -> dict:
    """Build each system's index and time its queries (module docstring); the figures and their ratios."""
    from groove_tui.engine.evaluate.golden import GoldenError, load_golden
    from groove_tui.engine.evaluate.metrics import ndcg_at_k

    missing = missing_peers()
    if missing:
        raise CLIError(f"bench --mode peers needs {', '.join(missing)}: {INSTALL_HINT}")
    golden_path = getattr(args, "queries", None)
    if not golden_path:
        raise CLIError("bench --mode peers needs --queries GOLDEN.yml: nDCG@10 is measured against its judgments")
    try:
        golden = load_golden(golden_path)
    except (GoldenError, OSError) as exc:
        raise CLIError(f"--queries {golden_path}: {exc}") from None
    queries = [q for q in golden.queries if q.expected]
    if not queries:
        raise CLIError(f"--queries {golden_path}: no query has expected results to measure nDCG@10 against")
    repeat = max(1, int(getattr(args, "repeat", 2) or 1))
    notify = progress or (lambda _label, _done, _total: None)
    out: dict[str, Any] = {"queries": len(queries), "repeat": repeat, "k": K, "golden": str(golden_path)}
    with tempfile.TemporaryDirectory(prefix="groove-tui-peers-") as tmp:
        root = Path(tmp)
        notes = note_texts(kb, config.exclude_dirs)
        out["notes"] = len(notes)
        out["text_bytes"] = sum(len(t.encode("utf-8")) for _p, t in notes)
        groove, close = groove_peer(kb, config, root)
        try:
            peers = {"groove-tui": groove, "tantivy": tantivy_peer(notes, root), "bm25s": bm25s_peer(notes, root)}
            systems: dict[str, dict[str, Any]] = {}
            for name, peer in peers.items():
                notify(f"index {name}", 0, 1)
                t0 = time.perf_counter()
                peer.build()
                systems[name] = {"index_s": round(time.perf_counter() - t0, 3), "index_bytes": peer.size()}
            ranked = {name: [peer.search(q.query) for q in queries] for name, peer in peers.items()}  # warm-up
            for peer in peers.values():
                if peer.legs_ms is not None:
                    peer.legs_ms.clear()  # the timed rounds' only
            samples: dict[str, list[float]] = {name: [] for name in peers}
            names = list(peers)
            for r in range(repeat):  # alternating, so machine noise hits every system alike
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    search = peers[name].search
                    for i, q in enumerate(queries):
                        notify(f"search {name}", i, len(queries))
                        t0 = time.perf_counter()
                        search(q.query)
                        samples[name].append((time.perf_counter() - t0) * 1000)
        finally:
            close()
    for name in peers:
        ndcg = statistics.fmean(ndcg_at_k(q.expected, res, K) for q, res in zip(queries, ranked[name], strict=True))
        systems[name].update(ndcg_at_10=round(ndcg, 4), query_ms=percentiles(samples[name]))
        legs = peers[name].legs_ms
        if legs is not None:
            systems[name]["legs_ms"] = percentiles(legs)
    base = systems["groove-tui"]
    for figures in systems.values():
        figures["ratio_to_groove_tui"] = {
            "query_p50": _ratio(figures["query_ms"]["p50"], base["query_ms"]["p50"]),
            "query_p95": _ratio(figures["query_ms"]["p95"], base["query_ms"]["p95"]),
            "index_s": _ratio(figures["index_s"], base["index_s"]),
            "index_bytes": _ratio(figures["index_bytes"], base["index_bytes"]),
            "ndcg_at_10": _ratio(figures["ndcg_at_10"], base["ndcg_at_10"]),
        }
    out["systems"] = systems
    notify("done", 1, 1)
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else round(a / b, 3)


def format_peers(peers: dict[str, Any]) -> list[str]:
    """The text report's peers table: each system's figures, then its ratio to groove-tui's."""
    lines = [
        "",
        f"peers: {peers['queries']} queries × {peers['repeat']} (nDCG@{peers['k']} against {peers['golden']}), "
        f"{peers['notes']:,} notes, {peers['text_bytes']:,} bytes of text",
        f"  {'system':<11} {'nDCG@10':>8} {'p50 ms':>8} {'p95 ms':>8} {'index s':>8} {'index MB':>9}"
        "   ratio to groove-tui",
    ]
    for name, s in peers["systems"].items():
        q, r = s["query_ms"], s["ratio_to_groove_tui"]
        ratios = (
            ""
            if name == "groove-tui"
            else (
                f"   ×{r['query_p50']:g} p50, ×{r['query_p95']:g} p95, ×{r['index_s']:g} index time, "
                f"×{r['index_bytes']:g} size, ×{r['ndcg_at_10']:g} nDCG"
            )
        )
        lines.append(
            f"  {name:<11} {s['ndcg_at_10']:>8.4f} {q['p50']:>8.2f} {q['p95']:>8.2f} {s['index_s']:>8.2f} "
            f"{s['index_bytes'] / 1e6:>9.1f}{ratios}"
        )
    legs = peers["systems"].get("groove-tui", {}).get("legs_ms")
    if legs and legs.get("p50") is not None:
        lines.append(
            f"  groove-tui's full-text legs alone (no fusion, spans or hits): p50 {legs['p50']:.2f} ms, "
            f"p95 {legs['p95']:.2f} ms"
        )
    return lines
