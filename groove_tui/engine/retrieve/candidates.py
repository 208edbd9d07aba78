"""What the searcher caches and passes between its steps: the legs retrieval found, the candidates being
ranked, one page size's ranking, and the small LRU map the caches use."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from groove_tui.engine.index.store import CandidateRow

V = TypeVar("V")


class LRU(Generic[V]):
    """A small thread-safe LRU map."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


@dataclass(frozen=True, slots=True)
class Legs:
    """What retrieval found for one (query, filters, pool) — cached across settings changes."""

    vector: tuple[tuple[int, float], ...]  # (chunk id, L2 distance), best first
    fts: tuple[tuple[int, float], ...]  # (chunk id, bm25), best first
    rows: dict[int, CandidateRow]
    embed_ms: float
    vector_ms: float
    fts_ms: float
    bigram: tuple[tuple[int, float], ...] = ()  # (chunk id, bm25) from fts_bigram, best first
    bigram_ms: float = 0.0
    # The share of the full-text candidates that have a vector (1.0 once every chunk is embedded): how
    # much of what the full text found the vector leg could have scored at all. Fusion scales the
    # vector weight by it (see `vector_share`).
    vector_share: float = 1.0
    unembedded: frozenset[int] = frozenset()  # full-text candidates with no vector yet
    word: tuple[tuple[int, float], ...] = ()  # (chunk id, bm25) from fts_words, best first
    word_ms: float = 0.0


@dataclass(slots=True)
class _Candidate:
    row: CandidateRow
    score: float
    trace: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Ranked:
    """One page size's ranking up to MMR: its candidates, the legs it fused, and how the reranker fared."""

    candidates: list[_Candidate]
    legs: Legs
    reranked: bool
    rerank_failed: str | None
    warnings: tuple[str, ...]
