"""Fusion arithmetic: each leg's term under rrf, relative or dbsf, the scale explain shows, the score a
hit at the top of every leg earns, and the low-confidence test on the fused page (groove §D.7-§D.8)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from groove_tui.engine.retrieve.candidates import Legs
from groove_tui.settings.config import FusionConfig

# The score-based fusions normalise each leg over its first 50 candidates (groove's pool for limit 10), a
# fixed window so that a hit's score does not depend on the page size.
SCORE_WINDOW = 50


F32 = np.float32


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
        return list(weight * np.maximum(F32(0.0), F32(1.0) - (raw - best) / span))
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


def _fused_weight(legs: Legs, fusion: FusionConfig) -> float:
    """The score a hit earns by sitting at the top of every leg's normal range (1 per leg, times its
    weight), counting only the legs that returned candidates."""
    return (
        fusion.vector_weight * legs.vector_share * bool(legs.vector)
        + fusion.fts_weight * bool(legs.fts)
        + fusion.fts_weight * bool(legs.bigram)
    )


def _dbsf_low_confidence(scores: Sequence[float], full: float, ratio: float) -> bool:
    """Ours, for dbsf: groove's flat page (max/mean under `ratio`) *and* a best hit that does not stand
    out of the legs' windows — its fused score under `full`, i.e. on average over the legs below mean +
    3 sd, where dbsf maps a window's top. Either alone, when it fires, finds the first hit right more
    often than wrong on one of scifact, jsquad and tldr pages; together they fire mostly when it is
    wrong, on all three (docs/evaluation.md). No new constant: 1.5 is groove's, 3 sd is dbsf's own scale."""
    if not full > 0.0 or not max(scores, default=0.0) < full:
        return False
    return _low_confidence(scores, ratio)


def _low_confidence(scores: Sequence[float], ratio: float) -> bool:
    """groove §D.8, in f32: max/mean below the ratio means the ranking is flat."""
    if len(scores) < 2 or ratio == 0.0:
        return False
    arr = np.asarray(scores, dtype=np.float32)
    mean = F32(arr.sum(dtype=np.float32) / F32(len(arr)))
    if not mean > 0.0:
        return False
    return bool(F32(arr.max() / mean) < F32(ratio))
