"""Fusion: the legs combined into one ranking (`fuse`) as two families — the vector leg, and the full-text
legs read as one — plus the name term; each leg's term under rrf, relative or dbsf, the scale explain
shows, the score a hit at the top of every family earns, and the low-confidence test on the fused page
(groove §D.6-§D.8)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from groove_tui.engine.index.store import CandidateRow
from groove_tui.engine.retrieve.candidates import Legs, _Candidate
from groove_tui.engine.types import ConfidenceReading
from groove_tui.settings.config import FusionConfig

# What fusion sums scores under: a chunk id, or with merged parts a section's (document id, first part).
FuseKey = Any

# The score-based fusions normalise each leg over its first 50 candidates (groove's pool for limit 10), a
# fixed window so that a hit's score does not depend on the page size.
SCORE_WINDOW = 50


F32 = np.float32
_ZERO = F32(0.0)  # the zero every sum of float32 terms starts from


def _terms(
    method: str, leg: Sequence[tuple[int, float]], weight: np.float32, rrf_k: float, vector: bool = False
) -> list[np.float32]:
    """Each candidate's fusion term, in leg order (best first; raw scores are lower-is-better)."""
    if method == "rrf":
        k = F32(rrf_k)
        return list(weight * (F32(1.0) / (k + np.arange(len(leg), dtype=F32) + F32(1.0))))
    if not leg:
        return []
    if method == "relative":
        raw = np.array([r for _, r in leg], dtype=F32)
        best, floor = raw[0], raw[min(SCORE_WINDOW, len(raw)) - 1]
        span = floor - best
        if not span > 0:  # one candidate, or all equal: each is the leg's best
            return [weight] * len(leg)
        return list(weight * np.maximum(_ZERO, F32(1.0) - (raw - best) / span))
    good = _dbsf_readings(leg, vector)
    lo, span = _dbsf_bounds(good)
    if not span > 0:
        return [weight] * len(leg)
    # Not clipped at 1: a first hit far above the rest of its window keeps that lead.
    return list(weight * np.maximum(0.0, (good - lo) / span).astype(F32))


def _dbsf_readings(leg: Sequence[tuple[int, float]], vector: bool) -> np.ndarray:
    """dbsf reads scores higher-is-better. A vector's L2 distance becomes its cosine similarity (the
    vectors are unit length, so cos = 1 - d²/2): the scale the leg's score distribution is meant to be
    read on. bm25 is negated."""
    raw = np.array([r for _, r in leg], dtype=np.float64)
    return 1.0 - raw * raw / 2.0 if vector else -raw


def _dbsf_bounds(good: np.ndarray) -> tuple[float, float]:
    """The reading that maps to 0 (the window's mean - 3 sd) and the span up to the one that maps to 1."""
    window = good[:SCORE_WINDOW]
    mean = window.sum() / len(window)
    sd = math.sqrt(np.dot(window - mean, window - mean) / len(window))
    return mean - 3.0 * sd, 6.0 * sd


def _scale(method: str, leg: Sequence[tuple[int, float]], vector: bool) -> tuple[float, float] | None:
    """For explain: the leg's score that a score fusion maps to term 0 and the one it maps to 1 (before
    the weight), in the units the trace shows: cosine similarity for dbsf's vector leg, else the raw score
    (L2 distance, bm25). None for RRF, an empty leg, or a flat one (every candidate earns the weight)."""
    if method == "rrf" or not leg:
        return None
    if method == "relative":
        best, floor = leg[0][1], leg[min(SCORE_WINDOW, len(leg)) - 1][1]
        return (float(floor), float(best)) if floor > best else None
    lo, span = _dbsf_bounds(_dbsf_readings(leg, vector))
    if not span > 0:
        return None
    if vector:
        return float(lo), float(lo + span)
    return float(-lo), float(-(lo + span))


def _fused_weight(legs: Legs, fusion: FusionConfig, method: str = "dbsf") -> float:
    """The score a hit earns by sitting at the top of every family's normal range: 1 for the vector leg
    and 1 for the full-text family, each times its weight, counting only what returned candidates (under
    RRF, where each full-text leg votes on its own, every leg's top)."""
    lexical = sum(float(w) for w in lexical_shares(legs, fusion, method).values())
    return fusion.vector_weight * legs.vector_share * bool(legs.vector) + lexical


def _top_term(method: str, rrf_k: float) -> np.float32:
    """What the first candidate of a leg reads before its weight: 1 under the score fusions (the top of
    the window), 1/(k + 1) under RRF."""
    return F32(1.0) / (F32(rrf_k) + F32(1.0)) if method == "rrf" else F32(1.0)


def _answering_families(legs: Legs, fusion: FusionConfig, method: str = "dbsf") -> int:
    """How many families (the vector leg; the full-text legs as one) returned candidates at a weight
    above 0: the terms `_fused_weight` sums."""
    vector = fusion.vector_weight * legs.vector_share > 0 and bool(legs.vector)
    lexical = any(float(w) > 0 for w in lexical_shares(legs, fusion, method).values())
    return int(vector) + int(lexical)


def _flatness(scores: Sequence[float]) -> float | None:
    """The page's max / mean score in f32 (groove §D.8's reading), or None under two hits or a mean
    score of 0 or less."""
    if len(scores) < 2:
        return None
    arr = np.asarray(scores, dtype=np.float32)
    mean = F32(arr.sum(dtype=np.float32) / F32(len(arr)))
    return float(arr.max() / mean) if mean > 0.0 else None


def _is_flat(flat: float | None, ratio: float) -> bool:
    """groove §D.8, in f32: max/mean below the ratio means the ranking is flat (ratio 0: never)."""
    return flat is not None and ratio != 0.0 and bool(F32(flat) < F32(ratio))


def confidence_reading(
    scores: Sequence[float], ratio: float, full: float | None = None, families: int = 0
) -> ConfidenceReading:
    """The page's low-confidence verdict with the readings it rests on. Without `full`, groove's rule
    (§D.8): the page is flat, its max/mean under `ratio`. With it, ours for dbsf: flat *and* a best hit
    that does not stand out of the legs' windows — its fused score under `full`, i.e. on average over
    the legs below mean + 3 sd, where dbsf maps a window's top — *and* a best hit that leads the next by
    less than one standard deviation of a family's window (dbsf maps 6 sd to a family's weight:
    `full / (6 · families)`). Flat pages under the top are common and many still have one hit the
    families agree on; the near tie is what tells a page that cannot choose its first hit from one that
    is merely flat (docs/evaluation.md). No new constant: 1.5 is groove's, 3 sd and 1 sd are dbsf's."""
    flat = _flatness(scores)
    is_flat = _is_flat(flat, ratio)
    if full is None:
        return ConfidenceReading("groove", is_flat, ratio, flat, is_flat)
    ordered = sorted(scores, reverse=True)  # MMR may order the page by its picks
    best = ordered[0] if ordered else None
    lead = ordered[0] - ordered[1] if len(ordered) >= 2 else None
    tie_line = full / (6.0 * families) if families > 0 else None
    under_full = best is not None and full > 0.0 and best < full
    near_tie = lead is not None and tie_line is not None and lead < tie_line
    return ConfidenceReading(
        "dbsf",
        is_flat and under_full and near_tie,
        ratio,
        flat,
        is_flat,
        best=best,
        full=full,
        under_full=under_full,
        lead=lead,
        tie_line=tie_line,
        near_tie=near_tie,
    )


# The legs in the order their terms are summed (the order explain lists them in): the vector leg, the
# full-text family (character legs, then words), then the name term.
LEXICAL_LEGS = ("fts", "bigram", "word")
TERM_ORDER = ("vector", *LEXICAL_LEGS, "name")
_RAW_NAME = {"vector": "vector_distance", "fts": "fts_bm25", "bigram": "bigram_bm25", "word": "word_bm25"}


def lexical_shares(legs: Legs, fusion: FusionConfig, method: str) -> dict[str, np.float32]:
    """Each full-text leg's weight: under the score fusions, `fts_weight` split by the legs' sub-weights
    (`trigram_weight` for the character leg, trigram or bigram; `word_weight`) over the legs that
    returned candidates, so the family's term is the weighted mean of its legs' readings times
    `fts_weight` and lexical evidence votes once however many full-text legs run. Under RRF each leg is
    a rank vote of its own, as in groove's fusion: `fts_weight` times its sub-weight."""
    sub = {"fts": F32(fusion.trigram_weight), "bigram": F32(fusion.trigram_weight), "word": F32(fusion.word_weight)}
    ran = [name for name, leg in (("fts", legs.fts), ("bigram", legs.bigram), ("word", legs.word)) if leg]
    if method == "rrf":
        return {n: F32(F32(fusion.fts_weight) * sub[n]) for n in ran}
    total = F32(sum((sub[n] for n in ran), _ZERO))
    if not total > 0:
        return dict.fromkeys(ran, _ZERO)
    return {n: F32(F32(fusion.fts_weight) * sub[n] / total) for n in ran}


def fuse(
    legs: Legs,
    fusion: FusionConfig,
    merge: bool,
    size: int | None,
    explain: bool,
    bigram_leg: bool = False,
    method: str = "rrf",
    word_leg: bool = False,
    named: Sequence[tuple[int, CandidateRow]] = (),
) -> list[_Candidate]:
    """Combine the legs into one ranking, best score first (ties by path and position).

    Each leg's candidates earn a term: "rrf" is groove's reciprocal rank fusion in f32 (§D.6); the score
    methods (ours) let a leg that is far more sure of its first hit than of its second say so, where RRF
    only sees ranks: "dbsf" (distribution-based) maps the mean ± 3 standard deviations of a leg's first
    SCORE_WINDOW scores to 0..1, "relative" their min..max (clamped at 0 below). The legs fuse as two
    families: the vector leg at `vector_weight`, and the full-text legs (trigram or bigram, and words) as
    one lexical reading at `fts_weight` (`lexical_shares`), so that two full-text legs agreeing on a wrong
    note do not outvote the vector leg twice over. A section named by the query (`named`: its heading or
    its note's title equals the query) earns a name term worth what topping every family earns, times
    `name_weight`. A hit's score is the sum of its terms in TERM_ORDER; a candidate that earned nothing
    is not a result.
    With `[search] merge_parts` (ours) the parts of a section split at the size cap fuse as one
    candidate, as groove's unsplit chunk would: each leg ranks sections by their best part, and the
    part the legs liked best stands for the section. Without split sections this changes nothing."""
    f = fusion
    rows = legs.rows
    if named:
        rows = dict(rows)
        for _, row in named:
            rows.setdefault(row.chunk_id, row)
    terms_of: dict[FuseKey, dict[str, np.float32]] = {}
    traces: dict[FuseKey, dict[str, Any]] = {}
    part_scores: dict[int, np.float32] = {}  # merge: each part's own score, to pick the section's face
    scales: dict[str, tuple[float, float] | None] = {}  # explain: each leg's score-fusion scale
    awaiting_vector: set[FuseKey] = set()  # found by full text, no vector yet
    wv = F32(f.vector_weight)
    if legs.vector_share < 1.0:  # vectors pending: the leg counts as far as it has looked (see below)
        wv = F32(wv * F32(legs.vector_share))
    shares = lexical_shares(legs, f, method)
    # Each candidate's section, looked up once (merging parts keys every leg by it).
    unit: dict[int, FuseKey] = (
        {cid: (r.document_id, r.chunk_index - r.part) for cid, r in rows.items()} if merge else {}
    )
    for name, leg, weight in (
        ("vector", legs.vector, wv),
        ("fts", legs.fts, shares.get("fts", _ZERO)),
        ("bigram", legs.bigram, shares.get("bigram", _ZERO)),
        ("word", legs.word, shares.get("word", _ZERO)),
    ):
        if not leg:
            continue
        vector = name == "vector"
        leg = _ties_by_place(leg, rows)
        if merge:
            for cid, term in zip((c for c, _ in leg), _terms(method, leg, weight, f.rrf_k, vector), strict=True):
                part_scores[cid] = part_scores.get(cid, _ZERO) + term
            leg = _best_part_per_section(leg, unit)
        terms = _terms(method, leg, weight, f.rrf_k, vector)
        if explain:
            scales[f"{name}_scale"] = _scale(method, leg, vector)
        for rank, ((cid, raw), term) in enumerate(zip(leg, terms, strict=True)):
            key = unit[cid] if merge else cid
            terms_of.setdefault(key, {})[name] = term
            if not vector and cid in legs.unembedded:
                awaiting_vector.add(key)
            if explain:
                tr = traces.setdefault(key, {})
                tr[f"{name}_rank"] = rank + 1
                tr[_RAW_NAME[name]] = float(raw)
    # While vectors are pending, a full-text candidate with none yet cannot earn a vector term, and
    # fused as is it would lose to every embedded candidate the vector leg merely tolerates. Where the
    # leg has not looked, take it to agree with the full text: the candidate's lexical reading (its
    # full-text terms over the full-text legs' weights) stands in for its vector reading. Unembedded
    # candidates then keep the full-text order among themselves and meet embedded ones on equal terms.
    # The leg's weight still follows the share of the full-text candidates it has seen: the nearest of
    # a small sample read far above the leg's window and would outvote the full text on the few chunks
    # embedded first. Nothing is imputed or scaled once every chunk has a vector.
    lexical_weight = F32(sum(shares.values(), _ZERO))
    if awaiting_vector and lexical_weight > 0:
        for key in awaiting_vector:
            found = terms_of[key]
            if "vector" in found:  # merged parts: another part of the section has a vector term
                continue
            lexical = F32(sum((found[n] for n in LEXICAL_LEGS if n in found), _ZERO))
            found["vector"] = F32(wv * F32(lexical / lexical_weight))
            if explain:
                traces.setdefault(key, {})["vector_imputed"] = True
    name_kind: dict[FuseKey, str] = {}
    if named and f.name_weight > 0:
        name_term = F32(F32(f.name_weight) * _top_term(method, f.rrf_k) * F32(_fused_weight(legs, f, method)))
        for kind, row in sorted(named, key=lambda kr: kr[0]):  # a heading before a title of the same section
            key = unit[row.chunk_id] if merge else row.chunk_id
            if key in name_kind:
                continue
            name_kind[key] = "heading" if kind == 0 else "title"
            terms_of.setdefault(key, {})["name"] = name_term
            if merge:
                part_scores.setdefault(row.chunk_id, _ZERO)
    scores: dict[FuseKey, np.float32] = {}
    for key, found in terms_of.items():
        score = _ZERO
        for name in TERM_ORDER:
            earned = found.get(name)
            if earned is not None:
                score = score + earned  # float32 + float32: float32, rounded as F32(…) would round it
        if score > 0:  # a candidate that earned nothing from any leg is not a result
            scores[key] = score
    if merge:
        parts: dict[FuseKey, list[int]] = {}
        for cid in part_scores:
            parts.setdefault(unit[cid], []).append(cid)
        face = {
            key: cids[0] if len(cids) == 1 else min(cids, key=lambda c: (-part_scores[c], rows[c].chunk_index))
            for key, cids in parts.items()
        }
    else:
        face = {cid: cid for cid in scores}
    # Equal scores break by path and position, never by chunk id: ids follow the edit history, so an
    # index updated in place must rank a tie exactly as a fresh build of the same notes does.
    order = sorted(scores, key=lambda key: (-scores[key], rows[face[key]].path, rows[face[key]].chunk_index))
    if size is not None:
        order = order[:size]
    out = []
    for rank, key in enumerate(order):
        trace = traces.get(key, {})
        if explain:
            found = terms_of[key]
            for name in ("vector", *LEXICAL_LEGS):
                if name in found:
                    trace[f"rrf_{name}"] = float(found[name])
            trace.update(scales)  # the legs' scales, also for a hit a leg did not find
            trace["fusion"] = method
            trace["rrf_score"] = float(scores[key])
            trace["rrf_rank"] = rank + 1
            trace["bigram_leg"] = bigram_leg
            trace["word_leg"] = word_leg
            trace["vector_weight"] = float(wv)
            trace["lexical_shares"] = tuple((n, float(w)) for n, w in shares.items())
            if key in name_kind:
                trace["named"] = True
                trace["name_kind"] = name_kind[key]
                trace["name_term"] = float(found["name"])
            if legs.vector_share < 1.0:
                trace["vector_share"] = legs.vector_share
            if merge and len(parts[key]) > 1:
                trace["merged_parts"] = tuple(sorted(rows[c].part for c in parts[key]))
        out.append(_Candidate(rows[face[key]], float(scores[key]), trace))
    return out


def _ties_by_place(leg: Sequence[tuple[int, float]], rows: dict[int, CandidateRow]) -> tuple[tuple[int, float], ...]:
    """The leg with candidates of equal score ordered by path and position. SQLite orders them by chunk
    id, which follows the edit history: two legs that agree on such a tie would hand the later-added
    copy of a note a rank the earlier one gets in a fresh build, and the fused order would differ."""
    if len({raw for _, raw in leg}) == len(leg):
        return tuple(leg)
    return tuple(sorted(leg, key=lambda item: (item[1], rows[item[0]].path, rows[item[0]].chunk_index)))


def _best_part_per_section(leg: Sequence[tuple[int, float]], unit: dict[int, FuseKey]) -> tuple[tuple[int, float], ...]:
    """The leg with only the first (best) part of each section (`unit`: each candidate's), in order."""
    seen: set[tuple[int, int]] = set()
    out = []
    for cid, raw in leg:
        key = unit[cid]
        if key not in seen:
            seen.add(key)
            out.append((cid, raw))
    return tuple(out)
