"""Dump reranker pools like rerank_dump.py, but with each passage scored in windows (MaxP): the
cross-encoder reads the passage's heading line plus WORDS words at a time, STRIDE apart, and the passage's
score is its best window's.

    python benchmarks/rerank_windows.py KB GOLDEN INDEX_DIR MODEL RERANKER OUT.jsonl [FIRST_N] [WORDS] [STRIDE]

MS MARCO's passages, which ms-marco-l12 was trained on, are ~60 words; a scifact abstract is ~200. Reading
it in passage-sized windows is the classic way to use such a model on longer text (Dai and Callan, 2019).
Replay the dump with rerank_replay.py; the pair count goes to stderr at the end. OUT is appended to, as
rerank_dump.py does.
"""

from __future__ import annotations

import sys

import numpy as np
from rerank_dump import dump_pools, open_engine  # the script's folder is on sys.path

from groove_tui.engine.stages.rerank import get_reranker


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
    engine = open_engine(kb, index_dir, model)
    windowed = WindowedReranker(get_reranker(reranker), int(words), int(stride))
    engine._searcher._get_reranker = lambda name: windowed  # every pool goes through the windows
    dump_pools(engine, golden_path, reranker, out, first)
    print(f"\n{windowed.pairs} pairs", file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:])
