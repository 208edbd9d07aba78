"""What an eval run records (reference §I.4): the configuration fingerprint, the corpus digest, the run
history with its size cap, and the comparison with the latest comparable run (regression check).

The runner that calls `Engine.search` is a thin loop over the `evaluate` modules:

and corpus digest. The runner that calls `Engine.search` is a thin loop over this API:

    golden = load_golden(path, validate_query=check)          # check raises on exclusion-only queries
    ks = normalise_k_values(cfg.eval.k_values); limit = eval_limit(ks)
    fp = ConfigFingerprint.from_settings(cfg, params, model=..., limit=limit, k_values=ks,
                                         golden_hash=golden.sha256, context_static=...)
    results = []
    for q in golden.queries:
        top = ranked_hits(engine.search(q.query, params).results)
        results.append(QueryResult(q, top, evaluate_query(q, top, ks)))
    agg = aggregate([r.metrics for r in results])
    store = HistoryStore(history_path_for(kb), cfg.eval.history_size)
    cmp = compare(store.latest(), fp, agg, cfg.eval.regression_threshold)
    store.append(make_run(fp, corpus, results, agg))
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import stat
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groove_tui.engine.types import SearchParams
    from groove_tui.settings.config import Config

from groove_tui.engine.evaluate.golden import atomic_write
from groove_tui.engine.evaluate.metrics import METRIC_VERSION, Aggregate, QueryResult

log = logging.getLogger(__name__)

FTS_QUERY_VERSION = 3  # v1.1.0 exclusion syntax
HISTORY_MAX_BYTES = 64 * 1024 * 1024


# ================================================================ fingerprint (§I.4)


@dataclass(frozen=True, slots=True)
class ConfigFingerprint:
    """Everything that makes two runs comparable. The corpus is reported beside it, never part of it."""

    model: str
    reranker: str | None
    limit: int
    k_values: tuple[int, ...]
    golden_hash: str
    metric_version: int = METRIC_VERSION
    fts_query_version: int = FTS_QUERY_VERSION
    mmr: tuple[float, float] | None = None  # (lambda, same_doc_penalty) when MMR is on
    parent_retriever: tuple[int, int] | None = None  # (whole_doc_threshold_tokens, max_expanded_tokens)
    fusion: tuple[tuple[str, float | str], ...] | None = None  # every fusion knob, when any differs from groove's
    context_static: bool = False  # the index was built in contextual (static) mode
    cjk_bigram: bool = False  # ours: the bigram leg changes ranking, so runs with it differ from groove's
    merge_parts: bool = False  # ours: split sections fused as one hit
    heading_first: bool = False  # ours: a query naming a heading or title ranks that section first
    word_leg: bool = False  # ours: the word table's leg fused beside the character legs
    japanese_words: str | None = None  # the analyzer a KB's Japanese words were cut with (identity), if any
    passage_tokens: int = 0  # ours: tokens of a passage the index's vectors read; 0 = all the model can

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model,
            "reranker": self.reranker,
            "limit": self.limit,
            "k_values": list(self.k_values),
            "golden_hash": self.golden_hash,
            "metric_version": self.metric_version,
            "fts_query_version": self.fts_query_version,
        }
        if self.mmr is not None:
            out["mmr"] = {"lambda": self.mmr[0], "same_doc_penalty": self.mmr[1]}
        if self.parent_retriever is not None:
            t, mx = self.parent_retriever
            out["parent_retriever"] = {"whole_doc_threshold_tokens": t, "max_expanded_tokens": mx}
        if self.fusion is not None:
            out["fusion"] = dict(self.fusion)
        if self.context_static:
            out["context"] = {"mode": "static"}
        if self.cjk_bigram:
            out["cjk_bigram"] = True
        if self.merge_parts:
            out["merge_parts"] = True
        if self.heading_first:
            out["heading_first"] = True
        if self.word_leg:
            out["word_leg"] = True
        if self.japanese_words:
            out["japanese_words"] = self.japanese_words
        if self.passage_tokens:
            out["passage_tokens"] = self.passage_tokens
        return out

    @classmethod
    def from_settings(
        cls,
        config: Config,
        params: SearchParams,
        *,
        model: str,
        limit: int,
        k_values: Sequence[int],
        golden_hash: str,
        context_static: bool,
        japanese_words: str | None = None,
        passage_tokens: int = 0,
    ) -> ConfigFingerprint:
        """The fingerprint of an eval run with these per-call params over this config; `japanese_words`
        is the analyzer identity of a word table whose KB holds Japanese, `passage_tokens` what the
        index's vectors read of a passage."""
        fusion = config.search.fusion
        if params.fusion is not None:
            fusion = replace(fusion, method=params.fusion)
        parent = config.search.parent_retriever
        return cls(
            model=model,
            reranker=params.reranker,
            limit=limit,
            k_values=tuple(k_values),
            golden_hash=golden_hash,
            mmr=(float(params.mmr_lambda), float(params.mmr_same_doc_penalty)) if params.mmr else None,
            parent_retriever=(parent.whole_doc_threshold_tokens, parent.max_expanded_tokens)
            if params.parent_retriever
            else None,
            fusion=None if fusion.is_groove() else _fusion_items(fusion),
            context_static=context_static,
            cjk_bigram=config.search.cjk_bigram,
            merge_parts=config.search.merge_parts,
            heading_first=config.search.heading_first,
            word_leg=config.search.word_leg if params.word_leg is None else bool(params.word_leg),
            japanese_words=japanese_words,
            passage_tokens=passage_tokens,
        )


def _fusion_items(fusion: Any) -> tuple[tuple[str, float | str], ...]:
    return tuple((f.name, v if isinstance(v := getattr(fusion, f.name), str) else float(v)) for f in fields(fusion))


# ================================================================ corpus digest (§I.4)


def corpus_digest(rows: Iterable[tuple[str, int, str | None, str, str | None]]) -> str:
    """SHA-256 over (path, index, heading, content, context) of every chunk, fed in path/index order
    (the caller's ORDER BY). Length prefixes and null markers keep field boundaries unambiguous."""
    h = hashlib.sha256()
    for path, index, heading, content, context in rows:
        _feed(h, path)
        h.update(struct.pack("<q", index))
        _feed(h, heading)
        _feed(h, content)
        _feed(h, context)
    return h.hexdigest()


def _feed(h: Any, value: str | None) -> None:
    if value is None:
        h.update(b"\x00")
        return
    data = value.encode("utf-8", "surrogatepass")
    h.update(b"\x01" + struct.pack("<Q", len(data)) + data)


@dataclass(frozen=True, slots=True)
class CorpusInfo:
    documents: int
    chunks: int
    digest: str

    def to_json(self) -> dict[str, Any]:
        return {"documents": self.documents, "chunks": self.chunks, "digest": self.digest}


# ================================================================ run records and history (§I.4)


def rfc3339_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def make_run(
    fingerprint: ConfigFingerprint,
    corpus: CorpusInfo,
    per_query: Sequence[QueryResult],
    agg: Aggregate,
    timestamp: str | None = None,
) -> dict[str, Any]:
    """One history record; top_k keeps the first max(k) hits of each query."""
    max_k = max(fingerprint.k_values, default=None)
    return {
        "timestamp": timestamp or rfc3339_now(),
        "fingerprint": fingerprint.to_json(),
        "corpus": corpus.to_json(),
        "per_query": [r.to_json(max_k) for r in per_query],
        "aggregate": agg.to_json(),
    }


class HistoryError(RuntimeError):
    """The history file cannot be used safely (symlink, hard link, not a regular file, oversize)."""


def history_path_for(kb: str | os.PathLike[str]) -> Path:
    """`<user data dir>/eval-history/<kb key>.json`: never inside the KB (groove writes there; we don't)."""
    from groove_tui.settings.paths import index_dir_for, user_data_dir

    return user_data_dir() / "eval-history" / f"{index_dir_for(Path(kb), '/').name}.json"


class HistoryStore:
    """`{"runs": [newest, ...]}`, capped at `history_size` runs and `max_bytes`, written atomically."""

    def __init__(self, path: str | os.PathLike[str], history_size: int = 10, max_bytes: int = HISTORY_MAX_BYTES):
        self.path = Path(path)
        self.history_size = max(1, history_size)
        self.max_bytes = max_bytes
        self.warning: str | None = None  # set when an unparseable file was set aside

    def load(self) -> list[dict[str, Any]]:
        """The runs, newest first. Unparseable → [] with a warning (the next append replaces it)."""
        data = self._read()
        if data is None:
            return []
        try:
            obj = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            return self._fresh(f"unparseable ({exc})")
        runs = obj.get("runs") if isinstance(obj, dict) else None
        if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
            return self._fresh('not a {"runs": [...]} object')
        return runs

    def latest(self) -> dict[str, Any] | None:
        runs = self.load()
        return runs[0] if runs else None

    def append(self, run: Mapping[str, Any]) -> None:
        runs = [dict(run), *self.load()][: self.history_size]
        data = self._encode(runs)
        while len(data) > self.max_bytes and runs:
            runs.pop()  # oldest first
            data = self._encode(runs)
        if len(runs) == 0:
            self.warning = f"eval history {self.path}: one run exceeds {self.max_bytes} bytes; not saved"
            log.warning(self.warning)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, data)

    @staticmethod
    def _encode(runs: list[dict[str, Any]]) -> bytes:
        return json.dumps({"runs": runs}, ensure_ascii=False, indent=2, allow_nan=False).encode("utf-8")

    def _read(self) -> bytes | None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise HistoryError(f"eval history {self.path}: {exc.strerror or exc}") from exc
        if stat.S_ISLNK(st.st_mode):
            raise HistoryError(f"eval history {self.path} is a symlink; refusing to follow it")
        if not stat.S_ISREG(st.st_mode):
            raise HistoryError(f"eval history {self.path} is not a regular file")
        if st.st_nlink > 1:
            raise HistoryError(f"eval history {self.path} has {st.st_nlink} hard links; refusing to use it")
        if st.st_size > self.max_bytes:
            raise HistoryError(f"eval history {self.path} is larger than {self.max_bytes} bytes")
        try:
            with open(self.path, "rb") as fh:
                return fh.read(self.max_bytes + 1)
        except OSError as exc:
            raise HistoryError(f"eval history {self.path}: {exc.strerror or exc}") from exc

    def _fresh(self, why: str) -> list[dict[str, Any]]:
        self.warning = f"eval history {self.path} is {why}; starting a fresh history"
        log.warning(self.warning)
        return []


# ================================================================ comparison and regression (§I.4)


@dataclass(frozen=True, slots=True)
class Comparison:
    previous: Aggregate
    current: Aggregate
    previous_timestamp: str | None
    recall_delta: dict[int, float]  # now − prev; a k missing in prev counts as 0
    mrr_delta: float
    ndcg_delta: dict[int, float]
    threshold: float
    is_regression: bool


def compare(
    prev_run: Mapping[str, Any] | None,
    fingerprint: ConfigFingerprint,
    now: Aggregate,
    threshold: float,
) -> Comparison | None:
    """Compare with the most recent run, only if its whole fingerprint equals this run's."""
    if prev_run is None or prev_run.get("fingerprint") != fingerprint.to_json():
        return None
    prev = Aggregate.from_json(prev_run.get("aggregate"))
    if prev is None:
        return None
    ts = prev_run.get("timestamp")
    return Comparison(
        previous=prev,
        current=now,
        previous_timestamp=ts if isinstance(ts, str) else None,
        recall_delta={k: v - prev.recall_at_k.get(k, 0.0) for k, v in now.recall_at_k.items()},
        mrr_delta=now.mrr - prev.mrr,
        ndcg_delta={k: v - prev.ndcg_at_k.get(k, 0.0) for k, v in now.ndcg_at_k.items()},
        threshold=threshold,
        is_regression=is_regression(prev, now, threshold),
    )


def is_regression(prev: Aggregate, now: Aggregate, threshold: float) -> bool:
    """True iff some recall@k, MRR or nDCG@k dropped by more than `threshold`; non-finite values skip."""
    pairs = [(prev.recall_at_k.get(k, 0.0), v) for k, v in now.recall_at_k.items()]
    pairs.append((prev.mrr, now.mrr))
    pairs += [(prev.ndcg_at_k.get(k, 0.0), v) for k, v in now.ndcg_at_k.items()]
    return any(math.isfinite(p) and math.isfinite(n) and p - n > threshold for p, n in pairs)


@dataclass(frozen=True, slots=True)
class DeltaText:
    text: str  # "—", "↑0.012", "↓0.034" or "n/a"
    beyond_threshold: bool  # the UI colours these

    def __str__(self) -> str:
        return self.text


def format_delta(delta: float, threshold: float) -> DeltaText:
    if not math.isfinite(delta):
        return DeltaText("n/a", False)
    if abs(delta) < 1e-9:
        return DeltaText("—", False)
    return DeltaText(f"{'↑' if delta > 0 else '↓'}{abs(delta):.3f}", abs(delta) > threshold)
