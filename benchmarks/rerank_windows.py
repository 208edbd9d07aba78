"""Dump reranker pools like rerank_dump.py, but with each passage scored in windows (MaxP): the
cross-encoder reads the passage's heading line plus WORDS words at a time, STRIDE apart, and the passage's
score is its best window's.

    python benchmarks/rerank_windows.py KB GOLDEN INDEX_DIR MODEL RERANKER OUT.jsonl [FIRST_N] [WORDS] [STRIDE]

MS MARCO's passages, which ms-marco-l12 was trained on, are ~60 words; a scifact abstract is ~200. Reading
it in passage-sized windows is the classic way to use such a model on longer text (Dai and Callan, 2019).
Replay the dump with rerank_replay.py. Each line prints nothing; the pair count goes to stderr at the end.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from groove_tui.config import load_config  # noqa: E402
from groove_tui.engine import Engine, SearchParams  # noqa: E402
from groove_tui.engine.eval import eval_params, load_golden, validate_query  # noqa: E402
from groove_tui.engine.rerank import get_reranker  # noqa: E402


class WindowedReranker:
    """A reranker whose score of a passage is the best of its windows' scores."""

    def __init__(self, inner, words: int, stride: int) -> None:
        self.inner, self.words, self.stride = inner, words, stride
        self.model_id = f"{inner.model_id} windows {words}/{stride}"
        self.languages = inner.languages
        self.pairs = 0

    def windows(self, text: str) -> list[str]:
        first, _, rest = text.partition("\n")
        head, body = (first + "\n", rest) if first.startswith("#") and rest else ("", text)
        words = body.split()
        out = []
        for start in range(0, max(1, len(words)), self.stride):
            out.append(head + " ".join(words[start : start + self.words]))
            if start + self.words >= len(words):
                break
        return out

    def score(self, query, documents, progress=None, cancel=None):
        texts, owner = [], []
        for i, doc in enumerate(documents):
            for w in self.windows(doc):
                texts.append(w)
                owner.append(i)
        self.pairs += len(texts)
        scores = self.inner.score(query, texts, cancel=cancel)
        out = np.full(len(documents), -np.inf, np.float32)
        for i, s in zip(owner, scores):
            out[i] = max(out[i], s)
        return out


def main(kb: str, golden_path: str, index_dir: str, model: str, reranker: str, out: str, first: str = "0",
         words: str = "150", stride: str = "120") -> None:
    config = load_config(None)
    config = replace(config, embedding=replace(config.embedding, model=model, explicit=True))
    engine = Engine.open(kb, config, index_dir)
    golden = load_golden(golden_path, validate_query=validate_query)
    queries = golden.queries[: int(first)] if int(first) else golden.queries
    windowed = WindowedReranker(get_reranker(reranker), int(words), int(stride))
    searcher = engine._searcher  # a benchmark may reach in: the pool is only visible inside the stage
    searcher._get_reranker = lambda name: windowed
    real = searcher._rerank
    captured: list = []

    def capture(rr, query, pool_items, limit, keep_all, cancel, progress):
        fused = [(c.row.path, c.row.heading, c.score) for c in pool_items]
        result = real(rr, query, pool_items, limit, keep_all, cancel, progress)
        captured[:] = [(p, h, s, c.trace["rerank_score"]) for (p, h, s), c in zip(fused, pool_items)]
        return result

    searcher._rerank = capture
    params = replace(eval_params(SearchParams(), limit=10, legs="hybrid", reranker_given=True), reranker=reranker)
    with open(out, "w", encoding="utf-8") as f:
        for q in queries:
            captured.clear()
            engine.search(q.query, params)
            row = {"id": q.id, "query": q.query, "expected": [[e.path, e.heading] for e in q.expected],
                   "pool": captured}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            f.flush()
    print(f"{windowed.pairs} pairs for {len(queries)} queries", file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:])
