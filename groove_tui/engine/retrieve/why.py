"""Why a note is, or is not, on the page for a query ("explain other"): its sections walked through the
pipeline — filters, exclusions, each leg and its pool, fusion, the reranker, MMR, the parent retriever —
up to where they fell out, and the single setting changes that would bring the note in, each found by
running the search with it. The legs come from the searcher's cache (the page's own search fills it), so
the walk costs fusion and a few small statements, not a second retrieval."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from groove_tui.engine.analysis.bigram import compile_bigram
from groove_tui.engine.analysis.names import heading_key
from groove_tui.engine.analysis.query import fts_phrase, parse_query
from groove_tui.engine.analysis.words import compile_words
from groove_tui.engine.index.store import CandidateRow
from groove_tui.engine.retrieve.candidates import Legs, _Candidate
from groove_tui.engine.retrieve.named import _section
from groove_tui.engine.retrieve.params import KNN_MAX, LIMIT_MAX, check_limit, page_tiers, pool
from groove_tui.engine.retrieve.searcher import BIGRAM_MODE, Searcher
from groove_tui.engine.types import Hit, LegStanding, SearchParams, SearchResponse, WhyFix, WhyReport, WhyStep
from groove_tui.settings.config import Config, check_fusion_method

# The fusion weights a "what would bring it in" tries, one at a time, and the values it tries for each.
WEIGHT_KNOBS = ("vector_weight", "fts_weight", "trigram_weight", "word_weight", "name_weight")
WEIGHT_VALUES = (0.0, 0.5, 2.0, 4.0)
LAMBDAS = tuple(round(i / 10, 1) for i in range(11))

Variant = Callable[[Config], Searcher]  # a searcher over the same index with other ranking settings


@dataclass(frozen=True, slots=True)
class _Target:
    document_id: int
    path: str
    heading: str | None
    rows: tuple[CandidateRow, ...]  # the chunks asked about, in order

    @property
    def ids(self) -> frozenset[int]:
        return frozenset(r.chunk_id for r in self.rows)

    @property
    def sections(self) -> frozenset[tuple[int, int]]:
        return frozenset(_section(r) for r in self.rows)


def target_rows(searcher: Searcher, path: str, heading: str | None) -> tuple[int, tuple[CandidateRow, ...]] | None:
    """The note's document id and its chunks (only the named section's with `heading`), or None when the
    index holds no such note."""
    conn = searcher.store.conn()
    found = conn.execute("SELECT id FROM documents WHERE path = ?", (path,)).fetchone()
    if found is None:
        return None
    ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE document_id = ?", (found[0],))]
    rows = sorted(searcher.store.rows_by_ids(ids).values(), key=lambda r: r.chunk_index)
    if heading is not None:
        wanted = heading_key(heading)
        rows = [r for r in rows if heading_key(r.heading or "") == wanted]
    return int(found[0]), tuple(rows)


def explain_absence(
    searcher: Searcher,
    query: str,
    params: SearchParams,
    path: str,
    heading: str | None = None,
    *,
    fixes: bool = True,
    ranks: bool = True,
    variant: Variant | None = None,
    response: SearchResponse | None = None,
) -> WhyReport:
    """Walk `path` (or its section `heading`) through the pipeline for `query` under `params`.

    `response` is the page when the caller already has it (the same query and params, with explain);
    `fixes` tries single setting changes (each a search over the cached legs; `variant` gives the
    searchers for other fusion weights); `ranks` works out a note's rank in a leg below its pool (a
    statement over every match: an evaluation classifying its misses does without)."""
    params = replace(params, explain=True)
    resp = response if response is not None else searcher.search(query, params)
    found = target_rows(searcher, path, heading)
    if found is None or not found[1]:
        what = "this section" if found is not None else "this note"
        return WhyReport(
            query,
            path,
            heading,
            "not_indexed",
            f"the index holds no text for {what}: it was skipped, is empty, or is not indexed yet",
            (WhyStep("index", False, f"no indexed text for {path}" + (f" # {heading}" if heading else "")),),
        )
    target = _Target(found[0], path, heading, found[1])
    return _Walk(searcher, query, params, target, resp, ranks).run(fixes, variant)


class _Walk:
    """One note's walk through one search."""

    def __init__(
        self, searcher: Searcher, query: str, params: SearchParams, target: _Target, resp: SearchResponse, ranks: bool
    ) -> None:
        self.s = searcher
        self.ranks = ranks
        self.query = query
        self.params = params
        self.target = target
        self.resp = resp
        self.pq = parse_query(query)
        self.limit = min(check_limit(params.limit), LIMIT_MAX)
        self.merge = searcher.config.search.merge_parts
        self.steps: list[WhyStep] = []
        n = len(target.sections)
        self.steps.append(WhyStep("index", True, f"{n} section{'s' if n != 1 else ''} of {target.path} indexed"))

    # ------------------------------------------------------------------ the walk

    def run(self, fixes: bool, variant: Variant | None) -> WhyReport:
        on_page = _on_page(self.resp.results, self.target)
        if on_page is not None:
            return self._shown(*on_page)
        if self.limit == 0 or not self.pq.positive_text.strip():
            reason = "the page holds no hits (limit 0)" if self.limit == 0 else "the query has nothing to search for"
            self.steps.append(WhyStep("query", False, reason))
            return self._report("not_matched", reason)
        rows = self._past_filters()
        if isinstance(rows, WhyReport):
            return rows
        rows = self._past_exclusions(rows)
        if isinstance(rows, WhyReport):
            return rows
        report = self._past_retrieval(rows)
        if fixes and report.verdict in ("below_pool", "below_page", "reranker", "mmr"):
            report = replace(report, fixes=self._fixes(variant))
        return report

    def _report(self, verdict: str, summary: str, **more: Any) -> WhyReport:
        return WhyReport(
            self.query,
            self.target.path,
            self.target.heading,
            verdict,
            summary,
            tuple(self.steps),
            **more,
        )

    def _shown(self, rank: int, hit: Hit, merged: bool) -> WhyReport:
        where = f"rank {rank}, {hit.path}" + (f" # {hit.heading}" if hit.heading else "")
        if merged:
            self.steps.append(WhyStep("parent", True, f"merged into {where} by the parent retriever"))
            return self._report(
                "merged",
                f"on the page inside hit {where}: the parent retriever merged it into that hit",
                shown_rank=rank,
                by=where,
                section=hit.heading,
                line=hit.line,
            )
        self.steps.append(WhyStep("page", True, f"shown at rank {rank} with score {hit.score:.4f}"))
        return self._report("shown", f"on the page at rank {rank}", shown_rank=rank, section=hit.heading, line=hit.line)

    def _past_filters(self) -> list[CandidateRow] | WhyReport:
        doc_filter = self.s.doc_filter(self.params)
        self.doc_filter = doc_filter
        kept, reasons = [], []
        for r in self.target.rows:
            why = doc_filter.rejection(r.path, r.tags, r.date, r.category, r.topic, r.quality_score)
            if why is None:
                kept.append(r)
            else:
                reasons.append(why)
        if kept:
            if doc_filter.has_any:
                self.steps.append(WhyStep("filters", True, "passes every filter"))
            return kept
        key, detail = reasons[0]
        if key == "min_quality":
            self.steps.append(WhyStep("quality", False, detail))
            return self._report(
                "quality", f"dropped by the quality filter: {detail}", section=self.target.rows[0].heading
            )
        self.steps.append(WhyStep("filters", False, f"{key}: {detail}"))
        return self._report("filtered", f"excluded by the filter {key}: {detail}", section=self.target.rows[0].heading)

    def _past_exclusions(self, rows: list[CandidateRow]) -> list[CandidateRow] | WhyReport:
        if not self.pq.exclude:
            return rows
        ids = [r.chunk_id for r in rows]
        hit_by: dict[int, str] = {}
        for phrase in self.pq.exclude:
            for cid in self._matching(phrase, ids, exclusion=True):
                hit_by.setdefault(cid, phrase)
        kept = [r for r in rows if r.chunk_id not in hit_by]
        if kept:
            self.steps.append(WhyStep("exclusions", True, "matches no exclusion term"))
            return kept
        phrase = hit_by[rows[0].chunk_id]
        self.steps.append(WhyStep("exclusions", False, f"contains the excluded -{_quote(phrase)}"))
        return self._report(
            "excluded", f"excluded by the query's -{_quote(phrase)}: the note contains it", section=rows[0].heading
        )

    def _past_retrieval(self, rows: list[CandidateRow]) -> WhyReport:
        s, pq = self.s, self.pq
        ids = {r.chunk_id for r in rows}
        sections = {_section(r) for r in rows}
        bq, _ = s._bigram_query(self.query)
        wq = s._word_query(self.query, self.params)
        reranker, _, _ = s._reranker_for(self.params.reranker, pq.positive_text)
        tier = page_tiers(self.limit)[-1]
        per_leg = pool(pool(tier)) if reranker is not None else pool(tier)
        legs = s._retrieve(pq, self.doc_filter, per_leg, None, self.params.legs, bq, wq)
        named = s._named_sections(pq, self.doc_filter, self.params.legs) if s.config.search.heading_first else ()
        standings = self._standings(legs, ids, sections, per_leg, bq, wq, named)
        self.standings = tuple(standings)
        matched = [g for g in standings if g.matched]
        pooled = [g for g in standings if g.in_pool]
        legs_text = "; ".join(_standing_text(g) for g in standings) or "no leg ran"
        self.steps.append(WhyStep("legs", bool(matched), legs_text))
        if not matched:
            return self._report(
                "not_matched",
                "no leg found it: " + legs_text,
                legs=self.standings,
                section=rows[0].heading,
                line=rows[0].line,
            )
        if not pooled:
            self.steps.append(WhyStep("pool", False, "below every leg's candidate pool"))
            return self._report(
                "below_pool",
                "matched, but below every leg's candidate pool: " + legs_text,
                legs=self.standings,
                section=rows[0].heading,
                line=rows[0].line,
            )
        self.steps.append(WhyStep("pool", True, "in the pool of " + ", ".join(g.leg for g in pooled)))
        method = (
            s.config.search.fusion.method
            if self.params.fusion is None
            else check_fusion_method("fusion", self.params.fusion)
        )

        def fuse(size: int | None) -> list[_Candidate]:  # the legs as the page's search fused them
            return s._fuse(
                legs,
                size,
                True,
                bigram_leg=bq is not None and bq.positive_expr is not None,
                method=method,
                word_leg=wq is not None,
                named=named,
            )

        fused = fuse(None)
        last = self._last_shown()
        place = next(
            (
                (i + 1, c)
                for i, c in enumerate(fused)
                if (_section(c.row) in sections if self.merge else c.row.chunk_id in ids)
            ),
            None,
        )
        if place is None:  # in a pool, but every term it earned was 0
            self.steps.append(WhyStep("fusion", False, "earned nothing from the legs that found it (score 0)"))
            return self._report(
                "below_page",
                "fused with score 0: each leg that found it placed it below its scale's zero",
                legs=self.standings,
                last_shown=last,
                section=rows[0].heading,
                line=rows[0].line,
            )
        fused_rank, cand = place
        terms = s._to_hit(cand, True).trace
        assert terms is not None
        fused_terms = terms.fusion_terms()
        more = {
            "legs": self.standings,
            "fused_rank": fused_rank,
            "fused_score": cand.score,
            "fused_terms": fused_terms,
            "last_shown": last,
            "section": cand.row.heading,
            "line": cand.row.line,
        }
        # MMR picks from the whole fused list (from the reranker's pool when one runs): the page's
        # length does not cut it off there.
        if fused_rank > self.limit and not self.params.mmr:
            against = f", under rank {last[0]}'s {last[1]:.4f} ({_terms_text(last[2])})" if last else ""
            self.steps.append(
                WhyStep(
                    "fusion", False, f"fused at rank {fused_rank} with {cand.score:.4f} ({_terms_text(fused_terms)})"
                )
            )
            return self._report(
                "below_page",
                f"fused below the page: rank {fused_rank} with {cand.score:.4f} ({_terms_text(fused_terms)}){against}",
                **more,
            )
        self.steps.append(WhyStep("fusion", True, f"fused at rank {fused_rank} with {cand.score:.4f}"))
        if reranker is not None and self.resp.reranked:
            off = self._reranked_off(reranker, fuse, tier, cand)
            if off is not None:
                return self._report("reranker", off, **more)
        if self.params.mmr:
            held = self._mmr_off(cand)
            if held is not None:
                return self._report("mmr", held[0], by=held[1] or None, **more)
        # Fused within the page but placed by a deeper page's ranking (pages nest) or merged away.
        self.steps.append(
            WhyStep("page", False, f"fused at rank {fused_rank}, not placed on this page of {self.limit}")
        )
        return self._report(
            "below_page", f"fused at rank {fused_rank}, but not placed on this page of {self.limit}", **more
        )

    # ------------------------------------------------------------------ legs

    def _standings(
        self,
        legs: Legs,
        ids: set[int],
        sections: set[tuple[int, int]],
        per_leg: int,
        bq: Any,
        wq: Any,
        named: Sequence[tuple[int, CandidateRow]],
    ) -> list[LegStanding]:
        out: list[LegStanding] = []
        which = self.params.legs
        if which != "fts" and self.s.store.has_vec_table():
            out.append(self._vector_standing(legs.vector, ids, per_leg))
        if which != "vector":
            exprs = (
                ("fts", "fts_chunks", self.pq.match_expr if _trigram_runs(bq) else None),
                ("bigram", "fts_bigram", bq.match_expr if bq is not None and bq.positive_expr else None),
                ("word", "fts_words", wq.positive_expr if wq is not None else None),
            )
            for name, table, expr in exprs:
                if expr is None:
                    continue
                out.append(self._fulltext_standing(name, table, expr, getattr(legs, name), ids, per_leg))
        if named:
            hit = next((kind for kind, row in named if _section(row) in sections or row.chunk_id in ids), None)
            if hit is not None:
                out.append(LegStanding("name", True, 1, 1, note="heading" if hit == 0 else "title"))
        return out

    def _vector_standing(self, leg: Sequence[tuple[int, float]], ids: set[int], per_leg: int) -> LegStanding:
        for rank, (cid, dist) in enumerate(leg, 1):
            if cid in ids:
                return LegStanding("vector", True, rank, per_leg, float(dist))
        embedded = self.s.vectors_of(sorted(ids))
        if not embedded:
            return LegStanding("vector", False, None, per_leg, note="no vector yet: the note is still to be embedded")
        qvec = self.s.query_vector(self.pq.positive_text)
        dist = min(float(np.linalg.norm(v - qvec)) for v in embedded.values())
        if not self.ranks:
            return LegStanding("vector", True, None, per_leg, dist, note="below the pool")
        found = self._vector_rank(qvec, dist)
        return LegStanding(
            "vector",
            True,
            found,
            per_leg,
            dist,
            note="" if found is not None else f"beyond the nearest {KNN_MAX:,}",
        )

    def _vector_rank(self, qvec: np.ndarray, dist: float) -> int | None:
        """Its rank among the accepted rows the vector leg would keep, if within sqlite-vec's k limit."""
        from groove_tui.engine.index.store import to_blob

        found = (
            self.s.store.conn()
            .execute(
                "SELECT chunk_id, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                (to_blob(qvec), KNN_MAX),
            )
            .fetchall()
        )
        closer = [cid for cid, d in found if d < dist - 1e-7]
        if len(closer) == len(found):
            return None
        return 1 + self._accepted_count(closer)

    def _fulltext_standing(
        self,
        name: str,
        table: str,
        expr: str,
        leg: Sequence[tuple[int, float]],
        ids: set[int],
        per_leg: int,
    ) -> LegStanding:
        for rank, (cid, raw) in enumerate(leg, 1):
            if cid in ids:
                return LegStanding(name, True, rank, per_leg, float(raw))
        weights = self.s.config.search.fusion.bm25_weights
        marks = ",".join("?" * len(ids))
        conn = self.s.store.conn()
        scored = conn.execute(
            f"SELECT rowid, bm25({table}, ?, ?, ?) FROM {table} WHERE {table} MATCH ? AND rowid IN ({marks})",
            (*weights, expr, *sorted(ids)),
        ).fetchall()
        if not scored:
            missing = tuple(p for p in self.pq.include if not self._matching(p, sorted(ids), table=table))
            note = "" if missing else "lacks the query's words together as the leg asks for them"
            return LegStanding(name, False, None, per_leg, missing=missing or (), note=note)
        best = min(raw for _, raw in scored)
        if not self.ranks:
            return LegStanding(name, True, None, per_leg, float(best), note="below the pool")
        better = [
            cid
            for cid, raw in conn.execute(
                f"SELECT rowid, bm25({table}, ?, ?, ?) AS s FROM {table} WHERE {table} MATCH ? AND s < ?",
                (*weights, expr, best),
            )
        ]
        return LegStanding(name, True, 1 + self._accepted_count(better), per_leg, float(best))

    def _accepted_count(self, ids: Sequence[int]) -> int:
        """How many of `ids` pass the filters and exclusions (what a leg keeps)."""
        excluded = self.s._excluded_ids(self.pq)
        rows = self.s.store.rows_by_ids([cid for cid in ids if cid not in excluded])
        return sum(1 for r in rows.values() if self.s._accept(r, self.doc_filter))

    def _matching(self, phrase: str, ids: Sequence[int], *, exclusion: bool = False, table: str = "") -> list[int]:
        """Of `ids`, the chunks holding `phrase` as the full-text tables read it (CJK through the bigram
        table, words through the word table, the rest through the trigram table)."""
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        conn = self.s.store.conn()
        lookups: list[tuple[str, str]] = []
        bigram = compile_bigram(phrase) if self.s.config.search.cjk_bigram and self.s.store.bigram_ready() else None
        if table in ("", "fts_bigram") and bigram is not None and bigram.positive_expr:
            lookups.append(("fts_bigram", bigram.positive_expr))
        if table == "fts_words" and self.s.store.words_ready():
            words = compile_words(phrase, self.s.store.words_analyzer())
            if words.positive_expr:
                lookups.append(("fts_words", words.positive_expr))
        if (table in ("", "fts_chunks") or not lookups) and (len(phrase) >= 3 or not exclusion):
            lookups.append(("fts_chunks", fts_phrase(phrase)))
        out: set[int] = set()
        for tbl, expr in lookups:
            try:
                out.update(
                    r[0]
                    for r in conn.execute(
                        f"SELECT rowid FROM {tbl} WHERE {tbl} MATCH ? AND rowid IN ({marks})", (expr, *ids)
                    )
                )
            except Exception:  # a phrase the table cannot read matches nothing there
                continue
        return sorted(out)

    # ------------------------------------------------------------------ after fusion

    def _last_shown(self) -> tuple[int, float, tuple[tuple[str, float], ...]] | None:
        hits = self.resp.results
        if not hits:
            return None
        last = hits[-1]
        return len(hits), last.score, last.trace.fusion_terms() if last.trace is not None else ()

    def _reranked_off(
        self, reranker: Any, fuse: Callable[[int | None], list[_Candidate]], tier: int, cand: _Candidate
    ) -> str | None:
        s = self.s
        size = max(s.config.reranker.pool, tier)
        pool_items = fuse(size)
        if all(c.row.chunk_id != cand.row.chunk_id for c in pool_items):
            self.steps.append(WhyStep("reranker", False, f"outside the reranker's pool of {size}"))
            return f"outside the reranker's pool of {size}"
        order = s._rerank(reranker, self.pq.positive_text, pool_items, self.limit, True, None, None)
        place, mine = next((i + 1, c) for i, c in enumerate(order) if c.row.chunk_id == cand.row.chunk_id)
        if place <= self.limit:
            return None
        last = self.resp.results[-1] if self.resp.results else None
        against = f", under rank {len(self.resp.results)}'s {last.score:.4f}" if last is not None else ""
        text = (
            f"moved off the page by the reranker: rank {place} with {mine.score:.4f} "
            f"(cross-encoder {mine.trace.get('rerank_score', 0.0):.4f}){against}"
        )
        self.steps.append(WhyStep("reranker", False, text))
        return text

    def _mmr_off(self, cand: _Candidate) -> tuple[str, str] | None:
        hits = self.resp.results
        embs = self.s.vectors_of([cand.row.chunk_id, *(h.chunk_id for h in hits)])
        mine = embs.get(cand.row.chunk_id)
        if mine is None:
            text = "dropped by MMR: it has no vector yet, and MMR keeps only candidates with one"
            self.steps.append(WhyStep("mmr", False, text))
            return text, ""
        best: tuple[float, int, Hit] | None = None
        for rank, h in enumerate(hits, 1):
            v = embs.get(h.chunk_id)
            if v is None:
                continue
            sim = float(np.dot(mine, v) / (np.linalg.norm(mine) * np.linalg.norm(v) or 1.0))
            if best is None or sim > best[0]:
                best = (sim, rank, h)
        if best is None:
            return None
        sim, rank, h = best
        by = f"rank {rank}, {h.path}" + (f" # {h.heading}" if h.heading else "")
        text = f"moved off the page by MMR (λ {self.params.mmr_lambda:g}): too like {by} (similarity {sim:.3f})"
        self.steps.append(WhyStep("mmr", False, text))
        return text, by

    # ------------------------------------------------------------------ what would bring it in

    def _fixes(self, variant: Variant | None) -> tuple[WhyFix, ...]:
        found: list[WhyFix] = []

        def attempt(setting: str, value: Any, searcher: Searcher, params: SearchParams) -> bool:
            try:
                resp = searcher.search(self.query, replace(params, explain=False))
            except Exception:  # a setting the engine refuses brings nothing in
                return False
            place = _on_page(resp.results, self.target)
            if place is None:
                return False
            found.append(WhyFix(setting, value, place[0]))
            return True

        # The limit: the smallest page that holds it (a deeper page also deepens every leg's pool).
        start = self.limit
        for tier in (t for t in (10, 20, 50, 100, 200, 500, LIMIT_MAX) if t > start):
            if attempt("limit", tier, self.s, replace(self.params, limit=tier)):
                break
        if self.params.mmr:
            for lam in sorted(LAMBDAS, key=lambda v: abs(v - self.params.mmr_lambda)):
                if lam != self.params.mmr_lambda and attempt(
                    "mmr_lambda", lam, self.s, replace(self.params, mmr_lambda=lam)
                ):
                    break
            else:
                mmr = self.s.config.search.mmr
                off = replace(self.params, mmr=False, mmr_lambda=mmr.lambda_, mmr_same_doc_penalty=mmr.same_doc_penalty)
                attempt("mmr", False, self.s, off)
        if variant is not None:
            fusion = self.s.config.search.fusion
            for knob in WEIGHT_KNOBS:
                current = getattr(fusion, knob)
                for value in sorted(WEIGHT_VALUES, key=lambda v: abs(math.log((v + 0.25) / (current + 0.25)))):
                    if value == current:
                        continue
                    changed = replace(fusion, **{knob: float(value)})  # type: ignore[arg-type]
                    if changed.vector_weight == changed.fts_weight == 0:
                        continue
                    if changed.trigram_weight == changed.word_weight == 0:
                        continue
                    cfg = replace(self.s.config, search=replace(self.s.config.search, fusion=changed))
                    if attempt(knob, value, variant(cfg), self.params):
                        break
            if self.params.reranker is not None and self.resp.reranked:
                rr = self.s.config.reranker
                for size in (rr.pool * 2, rr.pool * 4):
                    cfg = replace(self.s.config, reranker=replace(rr, pool=size))
                    if attempt("rerank_pool", size, variant(cfg), self.params):
                        break
        return tuple(found)


def _on_page(hits: Sequence[Hit], target: _Target) -> tuple[int, Hit, bool] | None:
    """(rank, hit, merged) of the first hit that is the target, or holds it in a parent expansion."""
    merged: tuple[int, Hit, bool] | None = None
    for rank, h in enumerate(hits, 1):
        if h.document_id != target.document_id:
            continue
        if h.chunk_id in target.ids or (h.document_id, h.chunk_index - h.part) in target.sections:
            return rank, h, False
        if merged is None and h.expanded_from is not None:
            ef = h.expanded_from
            if ef.kind == "whole_document" or any(
                ef.from_index is not None and ef.to_index is not None and ef.from_index <= r.chunk_index <= ef.to_index
                for r in target.rows
            ):
                merged = (rank, h, True)
    return merged


def _trigram_runs(bq: Any) -> bool:
    """Whether the trigram leg ran beside a CJK query's bigram leg (the searcher's BIGRAM_MODE)."""
    return bq is None or bq.match_expr is None or BIGRAM_MODE == "third"


def _standing_text(g: LegStanding) -> str:
    if g.leg == "name":
        return f"name: the query is its {g.note}"
    if not g.matched:
        if g.missing:
            return f"{g.leg}: no match (lacks {', '.join(_quote(m) for m in g.missing)})"
        return f"{g.leg}: " + (g.note or "no match")
    where = f"rank {g.rank:,}" if g.rank is not None else g.note or "ranked"
    verdict = "in the pool" if g.in_pool else "below the pool"
    return f"{g.leg}: {where} of pool {g.pool} ({verdict})"


def _terms_text(terms: Sequence[tuple[str, float]]) -> str:
    return " + ".join(f"{leg} {value:.3f}" for leg, value in terms) or "no terms"


def _quote(phrase: str) -> str:
    return f'"{phrase}"' if " " in phrase else phrase
