"""Frozen dataclasses that cross the engine boundary.

Offsets in `Hit.match_spans` and `ExpandedFrom.hit_start/hit_end` are CHARACTER offsets (Python string
indices) into `Hit.content`; `SearchResponse.to_json()` converts spans to UTF-8 byte offsets, groove's unit.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

# ---------------------------------------------------------------- parsing / indexing


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk as the Markdown parser cuts it (before it is stored)."""

    index: int
    heading: str | None
    level: int | None  # 2 or 3 for heading chunks, None for the preamble
    content: str
    context: str | None  # breadcrumb "Title > Parent > Heading" (stored only in contextual mode)
    token_count: int  # floor(utf8 bytes / 4), groove's estimator
    quality_score: float
    line: int  # 1-based line in the file where the chunk's heading (or text) starts
    part: int = 0  # 0, or 1.. for the continuation chunks of a section split at the size cap


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    path: str  # KB-relative, '/' separators
    title: str | None
    topic: str | None
    category: str | None
    depth: str | None
    tags: tuple[str, ...]
    date: str | None
    chunks: tuple[Chunk, ...]
    warnings: tuple[str, ...] = ()  # e.g. "invalid frontmatter: ..." (the document is still indexed)


@dataclass(frozen=True, slots=True)
class FileIssue:
    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class IndexProgress:
    """Reported through `Engine.index(progress=...)`. In the embed phase `rate` is the recent rate in
    chunks per second and `eta_seconds` the estimated time left (engine/index/throughput.py); both are None
    until a batch after the first (which pays for loading the model) has been timed."""

    phase: Literal["scan", "fulltext", "embed", "building model", "done"]  # "building model": path says which
    done: int
    total: int
    path: str | None = None
    rate: float | None = None
    eta_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class IndexReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    renamed: int = 0
    deleted: int = 0
    skipped: tuple[FileIssue, ...] = ()
    degraded: tuple[FileIssue, ...] = ()  # indexed, but with a warning (e.g. broken frontmatter)
    metadata_only: int = 0  # of `updated`: chunks identical, only the document row changed
    chunks: int = 0  # chunks in the index after the run
    embedded: int = 0  # chunks embedded by this run
    pending_embeddings: int = 0  # chunks still without a vector (interrupted or cancelled phase two)
    seconds: float = 0.0
    fulltext_seconds: float = 0.0
    embed_seconds: float = 0.0
    # chunks per second over this run's embedding batches (model loading excluded); None: none embedded
    embed_rate: float | None = None
    notes: tuple[str, ...] = ()  # one line each: the model chosen for the KB, a hint, a language warning

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "renamed": self.renamed,
            "deleted": self.deleted,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "degraded": [{"path": s.path, "reason": s.reason} for s in self.degraded],
            "metadata_only": self.metadata_only,
            "chunks": self.chunks,
            "embedded": self.embedded,
            "pending_embeddings": self.pending_embeddings,
            "seconds": round(self.seconds, 3),
            "fulltext_seconds": round(self.fulltext_seconds, 3),
            "embed_seconds": round(self.embed_seconds, 3),
            "embed_rate": round(self.embed_rate, 2) if self.embed_rate is not None else None,
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class IndexStatus:
    documents: int
    chunks: int
    model: str
    dim: int | None
    index_path: str
    index_bytes: int
    last_indexed: str | None
    pending_embeddings: int
    context_mode: str
    # the Japanese analyzer the word table was built with (SudachiPy, dictionary, recipe); None: none
    japanese_words: str | None = None
    # tokens of each passage the vectors read (0: all the model can)
    passage_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "documents": self.documents,
            "chunks": self.chunks,
            "model": self.model,
            "dim": self.dim,
            "index_path": self.index_path,
            "index_bytes": self.index_bytes,
            "last_indexed": self.last_indexed,
            "pending_embeddings": self.pending_embeddings,
            "context_mode": self.context_mode,
            "japanese_words": self.japanese_words,
            "passage_tokens": self.passage_tokens,
        }


# ---------------------------------------------------------------- searching


@dataclass(frozen=True, slots=True)
class SearchParams:
    """Per-call settings. Defaults are groove's (docs/configuration.md); `Engine.default_params()` applies
    groove.toml."""

    limit: int = 10
    mmr: bool = False
    mmr_lambda: float = 0.7
    mmr_same_doc_penalty: float = 0.0
    parent_retriever: bool = False
    reranker: str | None = None  # catalog name or local ONNX directory; None = no reranking
    path_globs: tuple[str, ...] = ()
    tags_any: tuple[str, ...] = ()
    tags_all: tuple[str, ...] = ()
    date_from: str | None = None
    date_to: str | None = None
    category: str | None = None
    topic: str | None = None
    min_quality: float | None = None  # None = the [quality_filter] threshold; 0 disables
    min_confidence_ratio: float | None = None  # None = [search] min_confidence_ratio
    explain: bool = False
    legs: Literal["hybrid", "vector", "fts"] = "hybrid"  # evaluation: one retrieval leg alone
    fusion: Literal["dbsf", "relative", "rrf"] | None = None  # None = [search.fusion] method
    word_leg: bool | None = None  # None = [search] word_leg


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class ExpandedFrom:
    """What the parent retriever merged into a hit's content."""

    kind: Literal["adjacent", "whole_document"]
    from_index: int | None = None  # adjacent: first and last chunk_index merged (inclusive)
    to_index: int | None = None
    total_chunks: int | None = None  # whole_document
    hit_start: int = 0  # character range of the hit chunk's own text inside the expanded content
    hit_end: int = 0

    def to_json(self) -> dict[str, Any]:
        if self.kind == "whole_document":
            return {"kind": "whole_document", "total_chunks": self.total_chunks}
        return {"kind": "adjacent", "from_index": self.from_index, "to_index": self.to_index}


@dataclass(frozen=True, slots=True)
class MMRTrace:
    pick: int  # 1-based selection order
    relevance: float  # min-max normalised score
    max_similarity: float
    penalty: float
    value: float
    most_similar_pick: int | None = None  # the earlier pick this one is most like (max_similarity's)


@dataclass(frozen=True, slots=True)
class HitTrace:
    """Why a hit is where it is, stage by stage (filled with SearchParams(explain=True))."""

    vector_rank: int | None = None  # 1-based rank in the vector leg, None if it did not find the chunk
    vector_distance: float | None = None
    fts_rank: int | None = None
    fts_bm25: float | None = None
    # Fusion (named rrf_* after groove's method; `fusion` says which method made them): each leg's term as
    # it enters the sum, the sum and the fused rank. score = vector + fts + bigram + word + name terms.
    rrf_vector: float | None = None
    rrf_fts: float | None = None
    rrf_score: float | None = None
    rrf_rank: int | None = None
    fusion: str = "dbsf"
    rerank_score: float | None = None  # the cross-encoder's raw score
    rerank_rank: int | None = None
    rerank_blend: float | None = None  # [reranker] blend: 1 = the raw score is the hit's score
    # Below blend 1, the cross-encoder's score and the fused one z-scored over the reranked pool: the
    # hit's score is blend × rerank_z + (1 − blend) × fused_z.
    rerank_z: float | None = None
    fused_z: float | None = None
    mmr: MMRTrace | None = None
    parent: str | None = None  # human-readable description of the merge
    # The CJK bigram leg (ours, docs/groove-compatibility.md, 6); bigram_leg says whether it ran for this query.
    bigram_leg: bool = False
    bigram_rank: int | None = None
    bigram_bm25: float | None = None
    rrf_bigram: float | None = None
    # The word leg (ours: whole words, stemmed); word_leg says whether it ran for this query.
    word_leg: bool = False
    word_rank: int | None = None
    word_bm25: float | None = None
    rrf_word: float | None = None
    # Parts (0 = the section's first) of a split section that retrieval found and fused as this one hit.
    merged_parts: tuple[int, ...] | None = None
    # Score fusions (dbsf, relative): per leg, the score its window maps to term 0 and the one it maps to
    # 1, before the weight. Cosine similarity for dbsf's vector leg, else the raw distance or bm25; None
    # under RRF or for a flat leg.
    vector_scale: tuple[float, float] | None = None
    fts_scale: tuple[float, float] | None = None
    bigram_scale: tuple[float, float] | None = None
    word_scale: tuple[float, float] | None = None
    # While vectors are pending: the share of the full-text candidates that have one, by which the vector
    # weight was scaled (None when every chunk is embedded), and whether this hit has none yet, so its
    # vector term is its full-text reading at that weight.
    vector_share: float | None = None
    vector_imputed: bool = False
    # The query equals this section's heading (name_kind "heading") or its note's title ("title"): the
    # section earns the name term ([search] heading_first, [search.fusion] name_weight).
    named: bool = False
    name_kind: str | None = None
    name_term: float | None = None
    # The weights the terms were made with: the vector leg's (after the share of vectors pending), and
    # each full-text leg's part of `fts_weight` inside the full-text family.
    vector_weight: float | None = None
    lexical_shares: tuple[tuple[str, float], ...] = ()

    def fusion_terms(self) -> tuple[tuple[str, float], ...]:
        """The terms that sum to the fused score (`rrf_score`), in the order fusion adds them."""
        items = (
            ("vector", self.rrf_vector),
            ("fts", self.rrf_fts),
            ("bigram", self.rrf_bigram),
            ("word", self.rrf_word),
            ("name", self.name_term),
        )
        return tuple((leg, value) for leg, value in items if value is not None)

    def leg_ranks(self) -> tuple[tuple[str, int | str], ...]:
        """Each leg that returned the hit, with its rank there ("heading" or "title" for the name lookup)."""
        items: tuple[tuple[str, int | str | None], ...] = (
            ("vector", self.vector_rank),
            ("fts", self.fts_rank),
            ("bigram", self.bigram_rank),
            ("word", self.word_rank),
            ("name", self.name_kind),
        )
        return tuple((leg, rank) for leg, rank in items if rank is not None)

    def scales(self) -> tuple[tuple[str, str, tuple[float, float] | None], ...]:
        """(leg, what its scale reads, the scale) for each leg the query ran."""
        vector_reads = "cosine" if self.fusion == "dbsf" else "distance"
        legs = [("vector", vector_reads, self.vector_scale), ("fts", "bm25", self.fts_scale)]
        if self.bigram_leg:
            legs.append(("bigram", "bm25", self.bigram_scale))
        if self.word_leg:
            legs.append(("word", "bm25", self.word_scale))
        return tuple(legs)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "vector": None
            if self.vector_rank is None
            else {"rank": self.vector_rank, "distance": _num(self.vector_distance)},
            "fts": None if self.fts_rank is None else {"rank": self.fts_rank, "bm25": _num(self.fts_bm25)},
            "fusion": {
                "method": self.fusion,
                "vector_term": _num(self.rrf_vector),
                "fts_term": _num(self.rrf_fts),
                "score": _num(self.rrf_score),
                "rank": self.rrf_rank,
            },
        }
        if self.bigram_leg:
            out["bigram"] = (
                None if self.bigram_rank is None else {"rank": self.bigram_rank, "bm25": _num(self.bigram_bm25)}
            )
            out["fusion"]["bigram_term"] = _num(self.rrf_bigram)
        if self.word_leg:
            out["word"] = None if self.word_rank is None else {"rank": self.word_rank, "bm25": _num(self.word_bm25)}
            out["fusion"]["word_term"] = _num(self.rrf_word)
        if self.vector_share is not None:
            out["fusion"]["vector_share"] = _num(self.vector_share)
        if self.vector_imputed:
            out["fusion"]["vector_imputed"] = True
        if self.named:
            out["named"] = True
            out["fusion"]["name"] = {"kind": self.name_kind, "term": _num(self.name_term)}
        if self.vector_weight is not None:
            out["fusion"]["weights"] = {
                "vector": _num(self.vector_weight),
                **{leg: _num(w) for leg, w in self.lexical_shares},
            }
        if self.merged_parts is not None:
            out["fusion"]["merged_parts"] = list(self.merged_parts)
        scales = {
            leg: {"reads": reads, "zero": _num(scale[0]), "one": _num(scale[1])}
            for leg, reads, scale in self.scales()
            if scale is not None
        }
        if scales:
            out["fusion"]["scales"] = scales
        if self.rerank_score is not None:
            out["rerank"] = {"score": _num(self.rerank_score), "rank": self.rerank_rank, "blend": self.rerank_blend}
            if self.rerank_z is not None:
                out["rerank"]["rerank_z"] = _num(self.rerank_z)
                out["rerank"]["fused_z"] = _num(self.fused_z)
        if self.mmr is not None:
            m = self.mmr
            out["mmr"] = {
                "pick": m.pick,
                "relevance": _num(m.relevance),
                "max_similarity": _num(m.max_similarity),
                "penalty": _num(m.penalty),
                "value": _num(m.value),
            }
        if self.parent is not None:
            out["parent"] = self.parent
        return out


@dataclass(frozen=True, slots=True)
class Hit:
    chunk_id: int
    document_id: int
    path: str
    title: str | None
    heading: str | None
    level: int | None
    chunk_index: int
    topic: str | None
    category: str | None
    date: str | None
    tags: tuple[str, ...]
    content: str  # the chunk text, or the parent retriever's expansion
    score: float  # fused score (relative or RRF), or the raw reranker score when a reranker ran
    line: int = 1  # 1-based line of the chunk in its file (for opening an editor)
    match_spans: tuple[Span, ...] | None = None  # characters into `content`; None = not computed
    expanded_from: ExpandedFrom | None = None
    context: str | None = None
    trace: HitTrace | None = None
    part: int = 0  # 1.. when `content` is a later part of a section split at the size cap (not its start)

    @property
    def part_label(self) -> str:
        """ " (part N)" when the text shown starts inside its section, so heading and text agree; else ""."""
        return f" (part {self.part + 1})" if self.part and self.expanded_from is None else ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "score": _f32(self.score),
            "path": self.path,
            "title": self.title,
            "heading": self.heading,
            "topic": self.topic,
            "date": self.date,
            "tags": list(self.tags),
            "content": self.content,
        }
        if self.match_spans is not None:
            out["match_spans"] = [{"start": s, "end": e} for s, e in byte_spans(self.content, self.match_spans)]
        if self.expanded_from is not None:
            out["expanded_from"] = self.expanded_from.to_json()
        return out


@dataclass(frozen=True, slots=True)
class ConfidenceReading:
    """Why a page is (or is not) flagged `low_confidence`: each test's reading, its line and whether it
    holds. groove's rule ("groove": RRF, min-max and reranked pages) is the flat test alone; under dbsf
    ("dbsf") all three must hold. A reading is None where the page has too little to read (under two
    hits, a mean score of 0, no leg answered)."""

    rule: str  # "groove" or "dbsf"
    low: bool
    ratio: float  # min_confidence_ratio; 0 turns the flag off
    flat: float | None  # the page's max / mean score, in f32 ...
    is_flat: bool  # ... under `ratio`
    best: float | None = None  # dbsf: the best score on the page ...
    full: float | None = None  # ... against what sitting at the top of every family's window earns
    under_full: bool = False
    lead: float | None = None  # dbsf: the best score minus the second ...
    tie_line: float | None = None  # ... against one sd of a family's window: full / (6 · families)
    near_tie: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "low": self.low, "ratio": self.ratio}
        out.update(flat=self.flat, is_flat=self.is_flat)
        if self.rule == "dbsf":
            out.update(best=self.best, full=self.full, under_full=self.under_full)
            out.update(lead=self.lead, tie_line=self.tie_line, near_tie=self.near_tie)
        return out


@dataclass(frozen=True, slots=True)
class QueryInfo:
    """The compiled query, as the explain views show it."""

    include: tuple[str, ...]
    exclude: tuple[str, ...]
    match_expr: str | None
    positive_text: str
    bigram_expr: str | None = None
    word_expr: str | None = None  # the word leg's expression (None: the leg did not run)


@dataclass(frozen=True, slots=True)
class SearchResponse:
    results: tuple[Hit, ...]
    low_confidence: bool
    filter_applied: Mapping[str, Any]
    timings_ms: Mapping[str, float]
    query: QueryInfo
    pending_embeddings: int = 0  # chunks that had no vector yet (phase two of indexing still running)
    # While vectors are pending, the share of the full-text candidates that have one: the factor fusion
    # applied to the vector weight (1.0 when nothing is pending or no vector leg ran); the others' vector
    # terms are their full-text readings.
    vector_share: float = 1.0
    reranked: bool = False
    rerank_skipped: str | None = None  # why a requested reranker did not run (unavailable, language, failure)
    warnings: tuple[str, ...] = ()
    explain: bool = False
    confidence: ConfidenceReading | None = None  # the readings behind `low_confidence` (None: no search ran)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "results": [h.to_json() for h in self.results],
            "low_confidence": self.low_confidence,
            "filter_applied": dict(self.filter_applied),
        }
        if self.rerank_skipped is not None:
            out["rerank_skipped"] = self.rerank_skipped
        if self.explain:
            out["explain"] = {
                "query": {
                    "include": list(self.query.include),
                    "exclude": list(self.query.exclude),
                    "match_expr": self.query.match_expr,
                    "bigram_expr": self.query.bigram_expr,
                    "word_expr": self.query.word_expr,
                    "positive_text": self.query.positive_text,
                },
                "pending_embeddings": self.pending_embeddings,
                "vector_share": self.vector_share,
                "reranked": self.reranked,
                "rerank_skipped": self.rerank_skipped,
                "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
                "confidence": self.confidence.to_json() if self.confidence is not None else None,
                "hits": [
                    {
                        "path": h.path,
                        "heading": h.heading,
                        "chunk_index": h.chunk_index,
                        **(h.trace.to_json() if h.trace else {}),
                    }
                    for h in self.results
                ],
            }
        return out

    def to_json(self) -> str:
        """groove's response shape (§D.9), pretty-printed like serde_json."""
        return json_text(self.to_dict())


# ---------------------------------------------------------------- why a note is (not) on the page

# Where a note's walk through the pipeline ended, furthest last. "shown" and "merged" mean it is on the page.
WHY_VERDICTS = (
    "not_indexed",  # the index holds no text for it (skipped, emptied, or not indexed yet)
    "filtered",  # a filter dropped it (path, tags, date, category, topic)
    "quality",  # the quality filter: its score under min_quality
    "excluded",  # an exclusion term of the query matches it
    "not_matched",  # no leg found it: no full-text leg matched, and no vector to compare
    "below_pool",  # legs matched it, but below each leg's candidate pool
    "below_page",  # fused, below the last hit of the page
    "reranker",  # on the fused page, moved off by the reranker
    "mmr",  # on the fused page, moved off by MMR
    "merged",  # on the page inside another hit (the parent retriever's expansion)
    "shown",  # on the page
)


@dataclass(frozen=True, slots=True)
class LegStanding:
    """Where one retrieval leg put the note: whether it matched, its rank among the rows the leg keeps
    (after filters and exclusions; None when it was not worked out), the leg's pool for this page, the
    raw score, and for a full-text leg the query words or phrases the note lacks."""

    leg: str  # vector, fts, bigram, word or name
    matched: bool
    rank: int | None
    pool: int
    raw: float | None = None  # bm25, or the L2 distance for the vector leg
    missing: tuple[str, ...] = ()
    note: str = ""

    @property
    def in_pool(self) -> bool:
        return self.matched and self.rank is not None and self.rank <= self.pool

    def to_dict(self) -> dict[str, Any]:
        return {
            "leg": self.leg,
            "matched": self.matched,
            "rank": self.rank,
            "pool": self.pool,
            "raw": _num(self.raw),
            "missing": list(self.missing),
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class WhyStep:
    """One stage of the walk: whether the note got past it, and what happened there."""

    stage: str
    passed: bool
    summary: str

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "passed": self.passed, "summary": self.summary}


@dataclass(frozen=True, slots=True)
class WhyFix:
    """One setting change that puts the note on the page, found by running the search with it."""

    setting: str  # limit, mmr_lambda, a fusion weight, rerank_pool, reranker
    value: Any
    rank: int  # where the note then shows

    def text(self) -> str:
        return f"{self.setting} = {self.value} shows it at rank {self.rank}"

    def to_dict(self) -> dict[str, Any]:
        return {"setting": self.setting, "value": self.value, "rank": self.rank}


@dataclass(frozen=True, slots=True)
class WhyReport:
    """Why a note (or one of its sections) is, or is not, on the page for a query: the walk through the
    pipeline up to where it fell out, each leg's standing, its fused score against the last shown hit's,
    and the single setting changes that would bring it in."""

    query: str
    path: str
    heading: str | None  # the section asked about; None for the whole note
    verdict: str  # one of WHY_VERDICTS
    summary: str  # one sentence saying where it fell out, and by what
    steps: tuple[WhyStep, ...]
    legs: tuple[LegStanding, ...] = ()
    section: str | None = None  # the heading of the section examined (the note's furthest)
    line: int | None = None
    fused_rank: int | None = None
    fused_score: float | None = None
    fused_terms: tuple[tuple[str, float], ...] = ()
    last_shown: tuple[int, float, tuple[tuple[str, float], ...]] | None = None  # rank, score, terms
    shown_rank: int | None = None  # on the page: its rank (merged: the rank of the hit holding it)
    by: str | None = None  # what moved it off or holds it: "#3 path" for MMR and the parent retriever
    fixes: tuple[WhyFix, ...] = ()

    @property
    def on_page(self) -> bool:
        return self.verdict in ("shown", "merged")

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "path": self.path,
            "heading": self.heading,
            "verdict": self.verdict,
            "summary": self.summary,
            "section": self.section,
            "line": self.line,
            "steps": [s.to_dict() for s in self.steps],
            "legs": [leg.to_dict() for leg in self.legs],
            "fused": None
            if self.fused_rank is None
            else {
                "rank": self.fused_rank,
                "score": _num(self.fused_score),
                "terms": {leg: _num(v) for leg, v in self.fused_terms},
            },
            "last_shown": None
            if self.last_shown is None
            else {
                "rank": self.last_shown[0],
                "score": _num(self.last_shown[1]),
                "terms": {leg: _num(v) for leg, v in self.last_shown[2]},
            },
            "shown_rank": self.shown_rank,
            "by": self.by,
            "fixes": [f.to_dict() for f in self.fixes],
        }


# An embedding model, as the indexer and the searcher use it (the backends live in engine.models.embedders).
@runtime_checkable
class Embedder(Protocol):
    model_id: str  # stable id recorded in the index
    dim: int

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (len(texts), dim), rows L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """float32 (dim,), L2-normalised."""
        ...


# ---------------------------------------------------------------- helpers

_JSON_C1 = re.compile("[\x7f-\x9f]")


def json_text(value: Any, **kw: Any) -> str:
    """json.dumps (UTF-8 kept, indent 2) with DEL and the C1 controls escaped too (`escape_controls`)."""
    return escape_controls(json.dumps(value, ensure_ascii=False, indent=2, **kw))


def escape_controls(text: str) -> str:
    """JSON text with DEL and the C1 controls escaped: JSON allows them raw, but a terminal showing the
    output would obey one (0x9b is CSI). In JSON text they occur only inside strings."""
    return _JSON_C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def byte_spans(text: str, spans: tuple[Span, ...] | list[Span]) -> list[tuple[int, int]]:
    """Convert sorted character spans into UTF-8 byte spans with one running pass over `text`."""
    if text.isascii():  # one byte a character: the spans are their own byte spans
        return [(span.start, span.end) for span in spans]
    out: list[tuple[int, int]] = []
    char_pos = byte_pos = 0
    for span in spans:
        if span.start < char_pos:  # not sorted: restart the running count
            char_pos = byte_pos = 0
        byte_pos += len(text[char_pos : span.start].encode("utf-8"))
        start = byte_pos
        byte_pos += len(text[span.start : span.end].encode("utf-8"))
        char_pos = span.end
        out.append((start, byte_pos))
    return out


def _f32(x: float) -> float:
    """Round like an f32 printed with shortest round-trip digits (serde's output)."""
    if not math.isfinite(x):
        return x
    import numpy as np

    return float(str(np.float32(x)))  # str gives the shortest digits that round-trip the f32


def _num(x: float | None) -> float | None:
    return None if x is None else float(x)
