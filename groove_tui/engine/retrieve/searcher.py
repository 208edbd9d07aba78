"""The search pipeline: parse → (vector leg ∥ FTS leg) → filters → fusion → reranker → MMR → parent → spans.

One concern: the `Searcher` runs one search through every step and keeps the caches between searches. What
it calls lives beside it: the fusion arithmetic (`fusion`), limits and value checks (`params`), the cached
shapes (`candidates`), the named-section lookup (`named`), and the legs (`fulltext`, `vector_scan`).

Follows groove (reference §C–§H); deviations are listed in docs/groove-compatibility.md. Each optional stage is skipped
entirely when off, so the output is identical to the pipeline without it. Retrieval results are cached per
(query, filters, pool size, index generation), so changing λ, MMR, the reranker or the parent retriever
re-runs only the later stages — that is what makes the explorer's λ slider live.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import sqlean as sqlite3

from groove_tui.engine.analysis.bigram import BigramQuery, compile_bigram
from groove_tui.engine.analysis.japanese import JapaneseAnalyzer
from groove_tui.engine.analysis.names import HEADING_KEY_MAX, heading_key
from groove_tui.engine.analysis.query import ParsedQuery, QueryError, parse_query
from groove_tui.engine.analysis.words import WordQuery, compile_words
from groove_tui.engine.errors import ParamError, SearchCancelled
from groove_tui.engine.index.store import CandidateRow, Store, to_blob
from groove_tui.engine.retrieve import fulltext
from groove_tui.engine.retrieve.candidates import LRU, Legs, _Candidate, _Ranked
from groove_tui.engine.retrieve.filters import DocFilter
from groove_tui.engine.retrieve.fusion import F32, _answering_families, _fused_weight, confidence_reading, fuse
from groove_tui.engine.retrieve.named import _section, look_up_named
from groove_tui.engine.retrieve.params import (
    KNN_MAX,
    LIMIT_MAX,
    OVERFETCH_CAP,
    _check_number,
    check_bool,
    check_limit,
    first_page,
    page_tiers,
    pool,
)
from groove_tui.engine.retrieve.vector_scan import VectorScan
from groove_tui.engine.stages.mmr import mmr_select_traced
from groove_tui.engine.stages.parent import ChunkOutline, ChunkRow, build_expansion, outline_window, plan_expansion
from groove_tui.engine.stages.rerank import blend_terms
from groove_tui.engine.stages.spans import match_spans
from groove_tui.engine.types import Hit, HitTrace, QueryInfo, SearchParams, SearchResponse, Span
from groove_tui.settings.config import Config, check_fusion_method, check_unit

if TYPE_CHECKING:
    from groove_tui.engine.stages.rerank import Reranker
    from groove_tui.engine.types import Embedder

log = logging.getLogger("groove_tui.search")


# How a CJK query's bigram leg joins the pipeline: "replace" the trigram full-text leg, or run as a
# "third" fused leg beside it. Chosen by measurement on jsquad (docs/evaluation.md).
BIGRAM_MODE = "replace"


RerankProgress = Callable[[str, int, int], None]  # (stage, done, total)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:299] + "…"


class Searcher:
    def __init__(
        self,
        store: Store,
        config: Config,
        contextual: Callable[[], bool],
        get_embedder: Callable[[], Embedder],
        get_reranker: Callable[[str], Reranker],
    ) -> None:
        self.store = store
        self.config = config
        self._contextual = contextual
        self._get_embedder = get_embedder
        self._get_reranker = get_reranker
        # Big enough for a golden set's queries, so the explorer's live metrics re-rank from cache.
        # Entries hold only the rows the legs kept (a few hundred KB at most), shared rows are not copied.
        self.legs_cache: LRU[Legs] = LRU(1024)
        self.named_cache: LRU[tuple[tuple[int, CandidateRow], ...]] = LRU(1024)  # see _named_sections
        # The legs beside the trigram one (vector side, word leg) of up to two searches at once (compare).
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="groove-leg")
        self._embed_lock = threading.Lock()
        self.query_vectors: LRU[np.ndarray] = LRU(256)
        self.rerank_scores: LRU[float] = LRU(20_000)
        self.embeddings: LRU[np.ndarray] = LRU(20_000)
        self.spans_cache: LRU[tuple[tuple[Span, ...] | None]] = LRU(2_000)  # (query, content, …) -> (spans,)
        self.fused_cache: LRU[tuple[dict[int, CandidateRow], list[_Candidate]]] = LRU(1024)  # see _fuse
        self.mmr_inputs: LRU[tuple[tuple[int, ...], np.ndarray | None]] = LRU(64)  # see _mmr
        self.pruned = fulltext.PrunedFulltext()  # per-generation phrase statistics live here
        self.vectors = VectorScan(store.open_connection)  # the vector leg's exact in-memory scan (big indexes)

    def forget_results(self, *, query_vectors: bool = True) -> None:
        """Forget what earlier searches found — legs, named sections, fusions, match spans, MMR's inputs
        and, with `query_vectors`, the query embeddings — so the next search runs every stage (a
        benchmark's cold search). The index's own statistics held in memory stay."""
        caches: list[LRU[Any]] = [
            self.legs_cache,
            self.named_cache,
            self.fused_cache,
            self.spans_cache,
            self.mmr_inputs,
        ]
        if query_vectors:
            caches.append(self.query_vectors)
        for cache in caches:
            cache.clear()

    def _spans(
        self,
        query: str,
        content: str,
        cjk_bigram: bool,
        words: tuple[str, ...],
        forms: tuple[str, ...],
        japanese: JapaneseAnalyzer | None,
    ) -> tuple[Span, ...] | None:
        """A hit's match spans, remembered by everything they depend on: moving λ, toggling MMR or
        paging re-shows mostly the same hits for the same query."""
        forms = forms if japanese is not None else ()
        key = (query, content, cjk_bigram, words, forms, japanese.identity if japanese is not None else None)
        found = self.spans_cache.get(key)  # (spans,): a hit may have None for spans
        if found is None:
            found = (_spans(query, content, cjk_bigram, words, forms, japanese),)
            self.spans_cache.put(key, found)
        return found[0]

    # ------------------------------------------------------------ entry

    def search(
        self,
        query: str,
        params: SearchParams,
        cancel: threading.Event | None = None,
        progress: RerankProgress | None = None,
    ) -> SearchResponse:
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        if not isinstance(query, str):
            raise QueryError("the query must be a string")
        pq = parse_query(query)
        limit = min(check_limit(params.limit), LIMIT_MAX)  # over the maximum: clamped, as groove does
        for key in ("mmr", "parent_retriever", "explain"):
            check_bool(key, getattr(params, key))
        if params.reranker is not None and not isinstance(params.reranker, str):
            raise ParamError(f"reranker = {params.reranker!r} is invalid: expected a model name or None")
        try:  # config's checks word the message; a caller catches the engine's own error for them too
            lam = check_unit("mmr_lambda", params.mmr_lambda)
            penalty = check_unit("mmr_same_doc_penalty", params.mmr_same_doc_penalty)
            method = (
                self.config.search.fusion.method
                if params.fusion is None
                else check_fusion_method("fusion", params.fusion)
            )
        except ValueError as exc:
            raise ParamError(str(exc)) from None
        mmr_cfg = self.config.search.mmr
        if not params.mmr and (lam != mmr_cfg.lambda_ or penalty != mmr_cfg.same_doc_penalty):
            log.warning("mmr_lambda / mmr_same_doc_penalty given while MMR is off: ignored")
        doc_filter = self.doc_filter(params)
        ratio = self._confidence_ratio(params.min_confidence_ratio)
        echo = dict(doc_filter.echo())
        if params.min_confidence_ratio is not None:
            echo["min_confidence_ratio"] = params.min_confidence_ratio
        if pq.exclude:
            echo["excluded_terms"] = list(pq.exclude)
        bq, bigram_warning = self._bigram_query(query)
        wq = self._word_query(query, params)
        info = QueryInfo(
            pq.include,
            pq.exclude,
            pq.match_expr,
            pq.positive_text,
            bq.explain if bq else None,
            wq.positive_expr if wq is not None else None,
        )
        warnings: tuple[str, ...] = (
            ("the query has more than 32 distinct phrases; the rest were dropped",) if pq.truncated else ()
        )
        warnings += bigram_warning

        if limit == 0 or not pq.positive_text.strip():
            return SearchResponse(
                results=(),
                low_confidence=False,
                filter_applied=echo,
                timings_ms={"total": 0.0},
                query=info,
                pending_embeddings=self.store.pending_count(),
                warnings=warnings,
                explain=params.explain,
            )

        reranker, rerank_skipped, failed = self._reranker_for(params.reranker, pq.positive_text)
        if failed and rerank_skipped is not None:
            warnings += (rerank_skipped,)

        conn = self.store.conn()
        if cancel is not None:
            # Lets a long FTS/KNN statement stop as soon as the caller gives up on it.
            conn.set_progress_handler(lambda: 1 if cancel.is_set() else 0, 2000)
        try:
            if params.legs not in ("hybrid", "vector", "fts"):
                raise ParamError(f"legs = {params.legs!r} is invalid: expected hybrid, vector or fts")
            # Pages nest: the results up to 10 are chosen as for a page of 10, the next up to 20 as for
            # a page of 20 (less those already placed), and so on, so a larger page holds every hit of a
            # smaller one (pools grow with the page, and a deeper pool can reorder its top). A page of 10
            # or fewer is exactly groove's ranking for 10. The page is then shown in score order: a hit
            # only a deeper pool found, with a term from far down a leg, can outscore one placed before it.
            fused: list[_Candidate] = []
            placed: set[object] = set()
            merge = self.config.search.merge_parts
            first: _Ranked | None = None
            t = time.perf_counter()
            named = self._named_sections(pq, doc_filter, params.legs) if self.config.search.heading_first else ()
            timings["named"] = _ms(t)
            for tier in page_tiers(limit):
                ranked = self._ranked(
                    pq,
                    bq,
                    wq,
                    doc_filter,
                    tier,
                    params,
                    reranker,
                    method,
                    lam,
                    penalty,
                    cancel,
                    progress,
                    timings,
                    named,
                )
                if first is None:
                    first = ranked
                elif ranked.warnings:
                    warnings += tuple(w for w in ranked.warnings if w not in warnings)
                for c in ranked.candidates:
                    if len(fused) == min(tier, limit):
                        break
                    unit = _section(c.row) if merge else c.row.chunk_id  # merged parts: one section, once
                    if unit not in placed:
                        placed.add(unit)
                        fused.append(c)
            assert first is not None
            if not params.mmr:  # MMR orders by its picks, and says so (each pick's trace)
                fused.sort(key=lambda c: (-c.score, c.row.path, c.row.chunk_index))
            legs, reranked = first.legs, first.reranked
            warnings += first.warnings
            if first.rerank_failed is not None:
                rerank_skipped = first.rerank_failed

            scores = [c.score for c in fused]
            if method == "dbsf" and not reranked:
                fusion = self.config.search.fusion
                full, families = _fused_weight(legs, fusion), _answering_families(legs, fusion)
                confidence = confidence_reading(scores, ratio, full, families)
            else:
                confidence = confidence_reading(scores, ratio)

            cjk_spans = bq is not None and bq.positive_expr is not None
            words = wq.words if wq is not None else ()
            forms = wq.japanese if wq is not None else ()
            ja = self.store.words_analyzer() if forms else None

            def spans_of(content: str) -> tuple[Span, ...] | None:
                return self._spans(pq.positive_text, content, cjk_spans, words, forms, ja)

            if params.parent_retriever and fused:  # the spans are those of the expanded text
                hits = [self._to_hit(c, params.explain) for c in fused]
                t = time.perf_counter()
                hits = [self._expand(h) for h in hits]
                timings["parent"] = _ms(t)
                _check(cancel)
                t = time.perf_counter()
                hits = [replace(h, match_spans=spans_of(h.content)) for h in hits]
            else:  # each hit made once, with its spans: copying a frozen hit costs more than a remembered span
                t = time.perf_counter()
                spans = [spans_of(c.row.content) for c in fused]
                hits = [self._to_hit(c, params.explain, found) for c, found in zip(fused, spans, strict=True)]
            timings["spans"] = _ms(t)
        except sqlite3.OperationalError as exc:
            if cancel is not None and cancel.is_set():
                raise SearchCancelled("search cancelled") from None
            # SQLite's wording means nothing to a user: it goes to the log, the query to the message.
            log.warning("full-text statement failed for %r: %s", query, exc)
            raise QueryError(f"the full-text index could not run the query {query!r}; please report it") from None
        finally:
            if cancel is not None:
                conn.set_progress_handler(None, 0)

        timings["total"] = _ms(t0)
        return SearchResponse(
            results=tuple(hits),
            low_confidence=confidence.low,
            filter_applied=echo,
            timings_ms=timings,
            query=info,
            pending_embeddings=self.store.pending_count(),
            vector_share=legs.vector_share,
            reranked=reranked,
            rerank_skipped=rerank_skipped,
            warnings=warnings,
            explain=params.explain,
            confidence=confidence,
        )

    def _ranked(
        self,
        pq: ParsedQuery,
        bq: BigramQuery | None,
        wq: WordQuery | None,
        doc_filter: DocFilter,
        limit: int,
        params: SearchParams,
        reranker: Reranker | None,
        method: str,
        lam: float,
        penalty: float,
        cancel: threading.Event | None,
        progress: RerankProgress | None,
        timings: dict[str, float],
        named: tuple[tuple[int, CandidateRow], ...],
    ) -> _Ranked:
        """The first `limit` candidates of the pipeline up to MMR, for a page of `limit` (timings added up)."""
        if reranker is not None:
            # One pool with and without MMR (ours; groove reranks MMR's whole union): toggling MMR, λ or
            # the parent retriever then re-ranks from the score cache with no new model calls.
            per_leg, fused_size = pool(pool(limit)), max(self.config.reranker.pool, limit)
        elif params.mmr:
            per_leg, fused_size = pool(limit), None
        else:
            per_leg, fused_size = pool(limit), limit
        legs = self._retrieve(pq, doc_filter, per_leg, cancel, params.legs, bq, wq)
        for key, value in (("embed", legs.embed_ms), ("vector", legs.vector_ms), ("fts", legs.fts_ms)):
            timings[key] = timings.get(key, 0.0) + value
        if bq is not None and bq.positive_expr is not None:
            timings["bigram"] = timings.get("bigram", 0.0) + legs.bigram_ms
        word_leg = wq is not None
        if word_leg:
            timings["word"] = timings.get("word", 0.0) + legs.word_ms
        _check(cancel)

        t = time.perf_counter()
        fused = self._fuse(
            legs,
            fused_size,
            params.explain,
            bigram_leg=bq is not None and bq.positive_expr is not None,
            method=method,
            word_leg=word_leg,
            named=named,
        )
        timings["fuse"] = timings.get("fuse", 0.0) + _ms(t)
        _check(cancel)

        failed: str | None = None
        warnings: tuple[str, ...] = ()
        reranked = False
        if reranker is not None and fused:
            t = time.perf_counter()
            try:
                fused = self._rerank(reranker, pq.positive_text, fused, limit, params.mmr, cancel, progress)
                reranked = True
            except SearchCancelled:
                raise
            except Exception as exc:  # a reranker never breaks a search: the fused order stands
                log.warning("reranker %s failed: %s", reranker.model_id, exc)
                failed = f"reranker {reranker.model_id} failed: {_one_line(exc)}"
                warnings += (failed + "; showing the fused order",)
                fused = fused if params.mmr else fused[:limit]
            timings["rerank"] = timings.get("rerank", 0.0) + _ms(t)
            _check(cancel)

        if params.mmr and fused:
            t = time.perf_counter()
            fused = self._mmr(fused, limit, lam, penalty)
            timings["mmr"] = timings.get("mmr", 0.0) + _ms(t)
            _check(cancel)
        return _Ranked(fused[:limit], legs, reranked, failed, warnings)

    def _named_sections(
        self, pq: ParsedQuery, doc_filter: DocFilter, which: str
    ) -> tuple[tuple[int, CandidateRow], ...]:
        """Cached per (query, filters, index generation), so a settings change costs no lookup."""
        if which != "hybrid" or len(heading_key(pq.positive_text)) > HEADING_KEY_MAX:
            return ()
        key = (pq.positive_text, pq.negative_expr, doc_filter, self.store.generation())
        cached = self.named_cache.get(key)
        if cached is None:
            cached = look_up_named(self.store, self.config, pq, doc_filter, self._excluded_ids(pq), self._accept)
            self.named_cache.put(key, cached)
        return cached

    # ------------------------------------------------------------ settings

    def _reranker_for(self, name: str | None, text: str) -> tuple[Reranker | None, str | None, bool]:
        """The reranker to run for this query, or None with the reason it does not run and whether that
        is a failure (not loadable) rather than the guard (the query's script outside its languages).
        Decided before retrieval, so a skipped rerank gives exactly the results of no reranker."""
        if name is None:
            return None, None, False
        from groove_tui.engine.analysis.scripts import uncovered_reason
        from groove_tui.engine.stages.rerank import reranker_enabled

        if not reranker_enabled(name):  # groove's "none" / "off": no stage, and no warning about it
            return None, None, False

        try:
            reranker = self._get_reranker(name)
        except Exception as exc:  # ModelUnavailable above all; never a failed search
            return None, f"reranker unavailable: {_one_line(exc)}", True
        languages = self.config.reranker.languages
        if languages is None:
            languages = getattr(reranker, "languages", ())
        if languages != ("any",):
            reason = uncovered_reason(text, tuple(languages), reranker.model_id)
            if reason is not None:
                return None, f"not reranked: {reason}", False
        return reranker, None, False

    def doc_filter(self, params: SearchParams) -> DocFilter:
        """The filters of `params` (the quality filter's threshold from the config unless given)."""
        return DocFilter.build(
            path_globs=params.path_globs,
            tags_any=params.tags_any,
            tags_all=params.tags_all,
            date_from=params.date_from,
            date_to=params.date_to,
            category=params.category,
            topic=params.topic,
            min_quality=self._min_quality(params.min_quality),
        )

    def _min_quality(self, value: float | None) -> float:
        # Refused, not clamped or replaced by the default as groove does: a NaN or a -1 is a caller's
        # mistake, and the CLI, the explorer and the Python API must all say so the same way.
        if value is None:
            return self.config.quality_filter.effective
        return float(_check_number("min_quality", value, 0.0, 1.0, "a number in [0, 1]"))

    def _confidence_ratio(self, value: float | None) -> float:
        if value is None:
            return self.config.search.min_confidence_ratio
        return float(_check_number("min_confidence_ratio", value, 0.0, math.inf, "a finite number >= 0"))

    def _bigram_query(self, query: str) -> tuple[BigramQuery | None, tuple[str, ...]]:
        """The bigram side of a CJK query (None: flag off, or no CJK in it), and a warning when the
        index has no complete bigram table yet (then groove's trigram path serves the query)."""
        if not self.config.search.cjk_bigram:
            return None, ()
        bq = compile_bigram(query)
        if bq is None:
            return None, ()
        if not self.store.bigram_ready():
            return None, (
                "the CJK bigram index is not built yet (run `groove-tui index`); "
                "Japanese text was searched with the trigram index only",
            )
        return bq, ()

    # ------------------------------------------------------------ retrieval

    def _retrieve(
        self,
        pq: ParsedQuery,
        doc_filter: DocFilter,
        per_leg: int,
        cancel: threading.Event | None,
        which: str = "hybrid",
        bq: BigramQuery | None = None,
        wq: WordQuery | None = None,
    ) -> Legs:
        generation = self.store.generation()
        key = (pq.positive_text, pq.match_expr, pq.negative_expr, doc_filter, per_leg, which, bq, wq, generation)
        cached = self.legs_cache.get(key)
        if cached is not None:
            return replace(cached, embed_ms=0.0, vector_ms=0.0, fts_ms=0.0, bigram_ms=0.0, word_ms=0.0)
        rows: dict[int, CandidateRow] = {}
        bigram_excluded = self._bigram_excluded_ids(bq)
        excluded = self._excluded_ids(pq) | bigram_excluded
        # The vector side (query embedding, then the KNN) runs on its own thread and connection while the
        # full-text legs run on this one; the model and SQLite release the GIL, so a keystroke costs
        # max(vector side, full text) rather than their sum. The embedding mostly outlasts the full-text
        # legs, so the vector leg takes the rows they have read (`rows`, only read there) and reads the rest.
        wants_vector = which != "fts" and self.store.has_vec_table()
        # With the query's vector at hand the vector leg is a short scan: run after the full-text legs, on
        # this thread, it takes the rows they read instead of racing them for the interpreter.
        vector_inline = wants_vector and self.query_vectors.get(pq.positive_text) is not None
        vector_side = (
            self._pool.submit(
                self._vector_side, pq.positive_text, doc_filter, per_leg, excluded, generation, cancel, rows
            )
            if wants_vector and not vector_inline
            else None
        )
        # The word leg too, on its own connection, where its statements are SQLite's work: they and the
        # trigram leg's run with the GIL released, so the two cost max(trigram, word) rather than their
        # sum. Below the size where the legs sum kept lists, or where the trigram table's lists by token
        # answer its phrases, both are mostly Python's work, which a thread only interleaves (measured
        # at 100k chunks: the same wall time either way): the word leg then runs after the trigram leg
        # and reads only the rows it has not.
        word_expr = wq.positive_expr if wq is not None and which != "vector" else None
        word_inline = (
            word_expr is not None
            and self.config.search.fulltext_pruning
            and (
                self.pruned.sums_lists(self.store.conn(), "fts_words")
                or self.pruned.token_lists_at_hand(self.store.conn(), self.config.search.fusion.bm25_weights)
            )
        )
        word_side = (
            self._pool.submit(self._word_side, word_expr, doc_filter, per_leg, excluded, cancel)
            if word_expr is not None and not word_inline
            else None
        )
        bigram_expr = bq.match_expr if bq is not None else None
        # A CJK query's full-text leg is the bigram table (BIGRAM_MODE "replace"), or both tables ("third").
        trigram = which != "vector" and pq.match_expr and (bigram_expr is None or BIGRAM_MODE == "third")
        t = time.perf_counter()
        fts: Sequence[tuple[int, float]] = (
            self._fts_leg(pq.match_expr or "", doc_filter, per_leg, rows, excluded=bigram_excluded) if trigram else ()
        )
        fts_ms = _ms(t)
        _check(cancel)
        t = time.perf_counter()
        bigram: Sequence[tuple[int, float]] = ()
        if bigram_expr is not None and which != "vector":
            bigram = self._fts_leg(bigram_expr, doc_filter, per_leg, rows, excluded=excluded, table="fts_bigram")
        bigram_ms = _ms(t)
        _check(cancel)
        word: Sequence[tuple[int, float]] = ()
        word_ms = 0.0
        if word_inline and word_expr is not None:
            t = time.perf_counter()
            word = self._fts_leg(word_expr, doc_filter, per_leg, rows, excluded=excluded, table="fts_words")
            word_ms = _ms(t)
        elif word_side is not None:
            word, word_rows, word_ms = _await(word_side, cancel)
            rows.update(word_rows)
        vector: Sequence[tuple[int, float]] = ()
        embed_ms, vector_ms = 0.0, 0.0
        if vector_side is not None:
            vector, vector_rows, embed_ms, vector_ms = _await(vector_side, cancel)
            rows.update(vector_rows)
        elif vector_inline:
            vector, vector_rows, embed_ms, vector_ms = self._vector_side(
                pq.positive_text, doc_filter, per_leg, excluded, generation, cancel, rows, inline=True
            )
            rows.update(vector_rows)
        kept = {cid for leg in (vector, fts, bigram, word) for cid, _ in leg}
        rows = {cid: row for cid, row in rows.items() if cid in kept}
        # Measured whatever the vector leg returned: with no chunk embedded yet it returns nothing, and
        # the share is then 0, not "every full-text hit has a vector".
        share, unembedded = self._vector_share(fts, bigram, word)
        legs = Legs(
            vector=tuple(vector),
            fts=tuple(fts),
            rows=rows,
            embed_ms=embed_ms,
            vector_ms=vector_ms,
            fts_ms=fts_ms,
            bigram=tuple(bigram),
            bigram_ms=bigram_ms,
            vector_share=share,
            unembedded=unembedded,
            word=tuple(word),
            word_ms=word_ms,
        )
        self.legs_cache.put(key, legs)
        return legs

    def _vector_share(self, *legs: Sequence[tuple[int, float]]) -> tuple[float, frozenset[int]]:
        """The share of the full-text candidates that have a vector (1.0 when nothing is pending), and
        those that have none yet.

        While the embedding phase runs, the vector leg ranks only the chunks embedded so far, and a chunk
        it never saw earns no vector term: fusion scales the vector weight by the share and lets the
        full text's reading stand in for the missing terms (`fusion.fuse`): the full text's ranking at 0 %,
        the configured fusion at 100 %. With no full-text candidates, the share of the whole index stands in."""
        waiting = self.store.pending_count()
        if waiting == 0:
            return 1.0, frozenset()
        ids = sorted({cid for leg in legs for cid, _ in leg})
        conn = self.store.conn()
        if not ids:
            total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            return (1.0 - waiting / total if total else 1.0), frozenset()
        pending: set[int] = set()
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            pending.update(
                r[0] for r in conn.execute(f"SELECT id FROM chunks WHERE embedded = 0 AND id IN ({marks})", batch)
            )
        return 1.0 - len(pending) / len(ids), frozenset(pending)

    def _word_query(self, query: str, params: SearchParams) -> WordQuery | None:
        """The word side of the query, None when the leg does not run: switched off, a vector-only search,
        an index whose word table is not complete yet, or no word to search for (a query in CJK only)."""
        on = self.config.search.word_leg if params.word_leg is None else check_bool("word_leg", params.word_leg)
        if not on or params.legs == "vector" or not self.store.words_ready():
            return None
        wq = compile_words(query, self.store.words_analyzer())
        return wq if wq.positive_expr is not None else None

    def _bigram_excluded_ids(self, bq: BigramQuery | None) -> frozenset[int]:
        """Chunks an excluded CJK group matches in the bigram table (e.g. `-設定`, under the trigram floor)."""
        if bq is None or not bq.negative_expr:
            return frozenset()
        rows = self.store.conn().execute("SELECT rowid FROM fts_bigram WHERE fts_bigram MATCH ?", (bq.negative_expr,))
        return frozenset(r[0] for r in rows)

    def _excluded_ids(self, pq: ParsedQuery) -> frozenset[int]:
        if not pq.negative_expr:
            return frozenset()
        rows = self.store.conn().execute("SELECT rowid FROM fts_chunks WHERE fts_chunks MATCH ?", (pq.negative_expr,))
        return frozenset(r[0] for r in rows)

    def _vector_side(
        self,
        text: str,
        doc_filter: DocFilter,
        per_leg: int,
        excluded: frozenset[int],
        generation: int,
        cancel: threading.Event | None,
        known: Mapping[int, CandidateRow],
        inline: bool = False,
    ) -> tuple[list[tuple[int, float]], dict[int, CandidateRow], float, float]:
        """Embed the query (cached per text) and run the vector leg, on a pool thread (its connection
        answers `cancel` meanwhile) or, with `inline`, on the search's own, whose connection already does.
        `known`: rows the full-text legs have read so far (filled by another thread; only looked up here)."""
        t = time.perf_counter()
        vec = self.query_vector(text)
        embed_ms = _ms(t)
        _check(cancel)
        conn = self.store.conn()
        watch = cancel is not None and not inline
        if cancel is not None and watch:
            conn.set_progress_handler(lambda: 1 if cancel.is_set() else 0, 2000)
        try:
            t = time.perf_counter()
            rows: dict[int, CandidateRow] = {}
            vector = self._vector_leg(vec, doc_filter, per_leg, excluded, rows, generation, known)
            return vector, rows, embed_ms, _ms(t)
        finally:
            if watch:
                conn.set_progress_handler(None, 0)

    def query_vector(self, text: str) -> np.ndarray:
        """The query's embedding, cached per text."""
        vec = self.query_vectors.get(text)
        if vec is None:
            with self._embed_lock:  # one query embedding at a time: two panes share the model
                vec = np.asarray(self._get_embedder().embed_query(text), dtype=np.float32)
            self.query_vectors.put(text, vec)
        return vec

    def _word_side(
        self, expr: str, doc_filter: DocFilter, per_leg: int, excluded: frozenset[int], cancel: threading.Event | None
    ) -> tuple[list[tuple[int, float]], dict[int, CandidateRow], float]:
        """The word leg on a pool thread. The other legs' exclusions hold here too (`-tar` drops what the
        trigram table finds for it)."""
        conn = self.store.conn()
        if cancel is not None:
            conn.set_progress_handler(lambda: 1 if cancel.is_set() else 0, 2000)
        try:
            t = time.perf_counter()
            rows: dict[int, CandidateRow] = {}
            word = self._fts_leg(expr, doc_filter, per_leg, rows, excluded=excluded, table="fts_words")
            return word, rows, _ms(t)
        finally:
            if cancel is not None:
                conn.set_progress_handler(None, 0)

    def _accept(self, row: CandidateRow | None, doc_filter: DocFilter) -> bool:
        return row is not None and doc_filter.accepts(
            row.path, row.tags, row.date, row.category, row.topic, row.quality_score
        )

    def _acceptor(self, doc_filter: DocFilter) -> Callable[[CandidateRow | None], bool]:
        """`_accept` for one filter, the common cases without a call per check: no filter at all, or only
        the quality threshold (the default search's)."""
        if not doc_filter.has_any:
            return lambda row: row is not None
        if doc_filter.quality_only:
            passes = doc_filter.passes_quality
            return lambda row: row is not None and passes(row.quality_score)
        return lambda row: self._accept(row, doc_filter)

    def _vector_leg(
        self,
        qvec: np.ndarray,
        doc_filter: DocFilter,
        per_leg: int,
        excluded: frozenset[int],
        rows: dict[int, CandidateRow],
        generation: int,
        known: Mapping[int, CandidateRow] | None = None,
    ) -> list[tuple[int, float]]:
        narrowing = doc_filter.has_any or bool(excluded)
        cap = min(min(per_leg * 10, OVERFETCH_CAP) if narrowing else per_leg, KNN_MAX)
        blob = to_blob(qvec)
        first = (
            max(first_page(per_leg, cap), 2 * per_leg) if self.config.search.merge_parts else first_page(per_leg, cap)
        )
        k = min(first, KNN_MAX)  # 2× when merging parts: see _fts_leg

        def nearest(k: int) -> list[tuple[int, float]]:
            return self.knn(qvec, k, generation, blob)

        while True:
            # One more than k says whether a tie crosses the cut; then read on until it ends (as far as
            # sqlite-vec's k goes), so the tie is cut by path and position.
            asked = min(k + 1, KNN_MAX)
            found = nearest(asked)
            while len(found) == asked < KNN_MAX and found[-1][1] == found[k - 1][1]:
                asked = min(asked * 2, KNN_MAX)
                found = nearest(asked)
            found = self._by_place(found[: _tie_end(found, k)], k)
            kept, units = self._keep(found, doc_filter, per_leg, excluded, rows, known)
            if units >= per_leg or len(found) < k or k >= KNN_MAX:
                return kept
            # Short after filters: take groove's full over-fetch, then (ours, and groove's rule for
            # exclusions, §C.7) keep doubling until the page is full or sqlite-vec's k limit is reached.
            k = min(cap if k < cap else k * 2, KNN_MAX)

    def _fts_leg(
        self,
        expr: str,
        doc_filter: DocFilter,
        per_leg: int,
        rows: dict[int, CandidateRow],
        *,
        excluded: frozenset[int] = frozenset(),
        table: str = "fts_chunks",
    ) -> list[tuple[int, float]]:
        """bm25-ranked rows of `table` (fts_chunks or fts_bigram); `excluded` are dropped on top of the
        expression's own NOT (exclusions judged by the other table)."""
        cap = min(per_leg * 10, OVERFETCH_CAP) if doc_filter.has_any or excluded else per_leg
        # Merging parts, a section's parts count once: one note split into hundreds of matching parts
        # must not fill the pool, so the leg reads on (4× a page) until it has per_leg sections.
        merge = self.config.search.merge_parts
        most = OVERFETCH_CAP if merge else cap
        # The first page is 2× when merging: the statement's cost is ranking every match, not the LIMIT,
        # so a few extra rows are far cheaper than a second statement when two parts share the page.
        limit = max(first_page(per_leg, cap), 2 * per_leg) if merge else first_page(per_leg, cap)
        while True:
            found = self.ranked_fulltext(table, expr, limit)
            kept, units = self._keep(found, doc_filter, per_leg, excluded, rows)
            if units >= per_leg or len(found) < limit or limit >= most:
                return kept
            limit = cap if limit < cap else min(limit * 4, most)

    def ranked_fulltext(self, table: str, expr: str, limit: int) -> list[tuple[int, float]]:
        """The first `limit` rows of `table`'s bm25 statement for `expr`: (rowid, bm25), best first, equal
        scores by path and position (`_by_place`).

        Pruned (engine/retrieve/fulltext.py) when that is possible and on, which gives the very same rows,
        scores and ties; else the plain statement, the one definition of the leg's ranking."""
        weights = self.config.search.fusion.bm25_weights
        conn = self.store.conn()
        found = None
        if self.config.search.fulltext_pruning:
            # The word table's rows are scored from the chunks' text only as this store would write them
            # (the pruning checks that the table records that very analyzer, or none).
            words = fulltext.WordsText(self.store.japanese) if table == "fts_words" else None
            found = self.pruned.ranked(conn, table, expr, weights, limit, words=words, ties=True)
        if found is None:
            found = fulltext.plain_ranked(conn, table, expr, weights, limit, ties=True)
        return self._by_place(found, limit)

    def _by_place(self, found: Sequence[tuple[int, float]], limit: int) -> list[tuple[int, float]]:
        """The first `limit` of a leg's (chunk id, score) rows sorted best (lowest) first, with every row
        tying the last one, ordered by score, then path and position. SQLite orders equal scores by chunk
        id, which follows the edit history: cut there, a tie of copies at a pool's edge would let other
        copies into the pool of an index updated in place than into a fresh build's."""
        if len({raw for _, raw in found}) == len(found):
            return list(found[:limit])  # no two scores equal (the common case)
        tied = {
            cid
            for i, (cid, raw) in enumerate(found)
            if (i > 0 and found[i - 1][1] == raw) or (i + 1 < len(found) and found[i + 1][1] == raw)
        }
        if not tied:
            return list(found[:limit])
        places = self.store.places(tied)
        return sorted(found, key=lambda item: (item[1], places.get(item[0], ("", -1))))[:limit]

    def _keep(
        self,
        found: list[tuple[int, float]],
        doc_filter: DocFilter,
        per_leg: int,
        excluded: frozenset[int],
        rows: dict[int, CandidateRow],
        known: Mapping[int, CandidateRow] | None = None,
    ) -> tuple[list[tuple[int, float]], int]:
        """The candidates (in leg order) that pass the exclusions and the filters, up to `per_leg` of them
        — or, merging parts, up to `per_leg` sections (every part of those found) — and how many units
        (candidates or sections) that is.

        Rows are read as far as the pool needs them: the first `per_leg`, then twice what the pool still
        lacks (the filters mostly pass most rows), at least a few. A leg
        asks for more than its pool (for filters and parts), yet mostly fills it from its first rows, and
        reading a candidate's row, its text with it, is most of what a full-text leg costs. A row in
        `known` (another leg's) is taken from there."""
        if per_leg <= 0:
            return [], 0
        merge = self.config.search.merge_parts
        kept: list[tuple[int, float]] = []
        sections: set[tuple[int, int]] = set()
        accept = self._acceptor(doc_filter)
        start, step = 0, per_leg
        while start < len(found):
            batch = found[start : start + step]
            start = start + step
            missing = []
            for cid, _ in batch:
                if cid in rows or cid in excluded:
                    continue
                row = known.get(cid) if known is not None else None
                if row is None:
                    missing.append(cid)
                else:
                    rows[cid] = row
            rows.update(self.store.rows_by_ids(missing))
            for cid, raw in batch:
                if cid in excluded or not accept(rows.get(cid)):
                    continue
                if not merge:
                    kept.append((cid, raw))
                    if len(kept) == per_leg:
                        return kept, per_leg
                    continue
                key = _section(rows[cid])
                if key not in sections:
                    if len(sections) == per_leg:
                        return kept, per_leg
                    sections.add(key)
                kept.append((cid, raw))
            step = max(4, 2 * (per_leg - (len(sections) if merge else len(kept))))
        return kept, len(sections) if merge else len(kept)

    # ------------------------------------------------------------ fusion and later stages

    def _fuse(
        self,
        legs: Legs,
        size: int | None,
        explain: bool,
        bigram_leg: bool = False,
        method: str = "rrf",
        word_leg: bool = False,
        named: Sequence[tuple[int, CandidateRow]] = (),
    ) -> list[_Candidate]:
        """The legs fused under this searcher's settings (`fusion.fuse`), remembered per retrieval: moving
        λ or toggling MMR or the parent retriever fuses the same legs the same way. A retrieval is known
        by its rows dict (one per `_retrieve` that ran, shared by the copies the legs cache hands out),
        which the entry holds, so its id cannot be reused while the entry lives."""
        search = self.config.search
        named_ids = tuple((kind, row.chunk_id) for kind, row in named)
        key = (id(legs.rows), size, explain, bigram_leg, method, word_leg, named_ids, search)
        found = self.fused_cache.get(key)
        if found is not None and found[0] is legs.rows:
            fused = found[1]
        else:
            fused = fuse(legs, search.fusion, search.merge_parts, size, explain, bigram_leg, method, word_leg, named)
            self.fused_cache.put(key, (legs.rows, fused))
        # Later stages write into a candidate's trace (the reranker's and MMR's rows): each search its own.
        return [_Candidate(c.row, c.score, dict(c.trace)) for c in fused]

    def _rerank(
        self,
        reranker: Reranker,
        query: str,
        pool_items: list[_Candidate],
        limit: int,
        keep_all: bool,
        cancel: threading.Event | None,
        progress: RerankProgress | None,
    ) -> list[_Candidate]:
        contextual = self._contextual()
        gen = self.store.generation()
        max_tokens = self.config.reranker.max_tokens  # truncation changes the scores: part of the key
        scores: list[float | None] = []
        missing: list[int] = []
        for i, c in enumerate(pool_items):
            cached = self.rerank_scores.get((reranker.model_id, max_tokens, query, c.row.chunk_id, gen))
            scores.append(cached)
            if cached is None:
                missing.append(i)
        if progress is not None:
            progress("rerank", 0, len(missing))
        if missing:
            from groove_tui.engine.index.indexer import embedding_input  # (the indexer's import is not a search's)

            docs = [embedding_input(pool_items[i].row.content, pool_items[i].row.context, contextual) for i in missing]
            report = None if progress is None else (lambda done, total: progress("rerank", done, total))
            fresh = reranker.score(query, docs, progress=report, cancel=cancel)
            for i, s in zip(missing, fresh, strict=True):
                scores[i] = float(s)
                self.rerank_scores.put(
                    (reranker.model_id, max_tokens, query, pool_items[i].row.chunk_id, gen), float(s)
                )
        blend = self.config.reranker.blend
        blended = blend_terms(cast(list[float], scores), [c.score for c in pool_items], blend)
        # Ranked by the score the hit will show (f32), so the order and the shown scores agree; equal
        # scores by path and position, as at every cut.
        final = [F32(b[0]) for b in blended]
        rows = [c.row for c in pool_items]
        order = sorted(range(len(pool_items)), key=lambda i: (-final[i], rows[i].path, rows[i].chunk_index))
        out = []
        for rank, i in enumerate(order):
            c = pool_items[i]
            c.trace["rerank_score"] = scores[i]
            c.trace["rerank_rank"] = rank + 1
            c.trace["rerank_blend"] = blend
            c.trace["rerank_z"], c.trace["fused_z"] = blended[i][1], blended[i][2]
            out.append(_Candidate(c.row, float(final[i]), c.trace))
        return out if keep_all else out[:limit]

    def _mmr(self, items: list[_Candidate], limit: int, lam: float, penalty: float) -> list[_Candidate]:
        ids = tuple(c.row.chunk_id for c in items)
        key = (self.store.generation(), ids)
        found = self.mmr_inputs.get(key)  # moving λ selects again from the same candidates' vectors
        if found is None:
            embs = self.vectors_of(list(ids))
            kept = tuple(i for i, cid in enumerate(ids) if cid in embs)  # groove drops those without a vector
            matrix = np.stack([embs[ids[i]] for i in kept]) if kept else None
            if matrix is not None:
                matrix.flags.writeable = False  # shared by every selection from these candidates
            found = (kept, matrix)
            self.mmr_inputs.put(key, found)
        kept, matrix = found
        items = [items[i] for i in kept]
        if matrix is None:
            return []
        picks, traces = mmr_select_traced(
            [c.score for c in items], matrix, [c.row.document_id for c in items], limit, lam, penalty
        )
        out = []
        for i, tr in zip(picks, traces, strict=True):
            items[i].trace["mmr"] = tr
            out.append(items[i])
        return out

    def vectors_of(self, ids: list[int]) -> dict[int, np.ndarray]:
        """The stored vectors of chunks `ids` (an id with none is absent), cached per index generation."""
        gen = self.store.generation()
        out: dict[int, np.ndarray] = {}
        missing = []
        for cid in ids:
            v = self.embeddings.get((cid, gen))
            if v is None:
                missing.append(cid)
            else:
                out[cid] = v
        if not missing:
            return out
        # Held in memory (a big index): a list of ids costs sqlite-vec a scan of every row it stores.
        found = self.vectors.vectors(missing, gen) if self.config.search.vector_scan else None
        if found is None:
            found = self.store.embeddings_for(missing)
        for cid, v in found.items():
            self.embeddings.put((cid, gen), v)
            out[cid] = v
        return out

    def _to_hit(self, c: _Candidate, explain: bool, match_spans: tuple[Span, ...] | None = None) -> Hit:
        r = c.row
        trace = None
        if explain:
            t = c.trace
            # The trace keys are HitTrace field names, filled stage by stage.
            trace = HitTrace(**{k: v for k, v in t.items() if k in _TRACE_FIELDS})
        return Hit(
            chunk_id=r.chunk_id,
            document_id=r.document_id,
            path=r.path,
            title=r.title,
            heading=r.heading,
            level=r.level,
            chunk_index=r.chunk_index,
            topic=r.topic,
            category=r.category,
            date=r.date,
            tags=r.tags,
            content=r.content,
            score=c.score,
            line=r.line,
            context=r.context,
            trace=trace,
            part=r.part,
            match_spans=match_spans,
        )

    def _expand(self, hit: Hit) -> Hit:
        cfg = self.config.search.parent_retriever
        cap = cfg.max_expanded_tokens
        try:
            outline = self._outline_around(hit.document_id, hit.chunk_index, cap)
            small = cfg.whole_doc_threshold_tokens
            plan = plan_expansion(hit.chunk_index, outline, whole_doc_threshold_tokens=small, max_expanded_tokens=cap)
            if plan is None:
                return hit
            rows = [ChunkRow(*r) for r in self.store.document_chunks(hit.document_id, plan.first, plan.last)]
        except sqlite3.Error:
            return hit  # groove: any DB error leaves the hit unchanged
        if not any(r.chunk_index == hit.chunk_index for r in rows):
            return hit  # the note was written again between the two reads: the next search expands it
        expansion = build_expansion(plan, hit.chunk_index, rows)
        trace = hit.trace
        if trace is not None:
            trace = replace(trace, parent=expansion.description)
        return replace(hit, content=expansion.content, expanded_from=expansion.expanded_from, trace=trace)

    def knn(self, qvec: np.ndarray, k: int, generation: int, blob: bytes | None = None) -> list[tuple[int, float]]:
        """sqlite-vec's `k` nearest chunks to `qvec` (chunk id, distance), from the in-memory matrix of
        `generation` when it is held (the same rows: engine/retrieve/vector_scan.py says why)."""
        found = self.vectors.knn(qvec, k, generation) if self.config.search.vector_scan else None
        if found is None:
            found = (
                self.store.conn()
                .execute(
                    "SELECT chunk_id, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                    (to_blob(qvec) if blob is None else blob, k),
                )
                .fetchall()
            )
        return found

    def _outline_around(self, document_id: int, hit_index: int, cap: int) -> list[ChunkOutline]:
        """The chunk shapes a hit's expansion can reach (parent.py's `outline_window`): a hit in a note of
        thousands of chunks reads a few dozen rows."""

        def read_page(start: int, forward: bool, limit: int) -> list[ChunkOutline]:
            return [
                ChunkOutline(*r) for r in self.store.chunk_outline(document_id, start, forward=forward, limit=limit)
            ]

        return outline_window(read_page, hit_index, cap)


# ---------------------------------------------------------------- helpers


_TRACE_FIELDS = frozenset(f.name for f in fields(HitTrace))


def _await(future: Future[Any], cancel: threading.Event | None) -> Any:
    """The future's result, giving up as soon as the caller cancels (the worker notices on its own)."""
    while True:
        try:
            return future.result(timeout=0.005)
        except FutureTimeout:
            _check(cancel)


def _tie_end(found: Sequence[tuple[int, float]], k: int) -> int:
    """How many of `found` (best first) are its first k and the rows tying the k-th."""
    end = min(k, len(found))
    while 0 < end < len(found) and found[end][1] == found[end - 1][1]:
        end += 1
    return end


def _check(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise SearchCancelled("search cancelled")


def _ms(t: float) -> float:
    return (time.perf_counter() - t) * 1000.0


def _spans(
    query: str,
    content: str,
    cjk_bigram: bool = False,
    words: tuple[str, ...] = (),
    forms: tuple[str, ...] = (),
    japanese: JapaneseAnalyzer | None = None,
) -> tuple[Span, ...] | None:
    spans = match_spans(query, content, cjk_bigram=cjk_bigram, words=words, japanese_forms=forms, japanese=japanese)
    return None if spans is None else tuple(Span(s, e) for s, e in spans)
