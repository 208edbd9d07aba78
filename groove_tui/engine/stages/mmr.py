"""MMR diversity re-rank (groove §F), vectorised with numpy and computed in float32 like groove.

Greedy selection of `min(limit, n)` candidates. At each step every remaining candidate `i` gets

    value_i = λ·rel_i − (1 − λ)·max_sim_i − (same_doc_penalty if its document was already picked else 0)

and the largest value wins, ties going to the lowest index (the better fused / rerank position).

* `rel` is the score min–max normalised over the pool; when `max − min` is not above f32::EPSILON every
  `rel` is 0.0 (so the first pick is index 0).
* `max_sim` is 0.0 before the first pick, then the maximum cosine to any picked candidate. It is not
  clamped at 0: a candidate dissimilar to everything picked (negative cosines) gets a bonus, as in groove.
* cosine = dot / (‖a‖·‖b‖) in float32, 0.0 when either norm is zero.

Everything is float32 so near-ties resolve as groove resolves them. The one difference left is the order
of the float32 additions inside a dot product (BLAS vs groove's sequential sum): it can move a value by
an ulp and so only flip picks whose values tie to within an ulp.

Cost: the norms are computed once; each pick does one matrix-vector product (O(n·d)) to update a running
max-similarity vector and one O(n) update of the "document already picked" mask.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import numpy as np

from groove_tui.engine.types import MMRTrace
from groove_tui.settings.config import check_unit

F32_EPSILON = np.float32(1.1920929e-07)  # Rust f32::EPSILON
_ZERO = np.float32(0.0)


def mmr_select(
    relevance: Sequence[float] | np.ndarray,
    embeddings: np.ndarray,
    doc_ids: Sequence[int],
    limit: int,
    lambda_: float,
    same_doc_penalty: float,
) -> list[int]:
    """Indices of the selected candidates, in pick order."""
    picks, _ = mmr_select_traced(relevance, embeddings, doc_ids, limit, lambda_, same_doc_penalty)
    return picks


def mmr_select_traced(
    relevance: Sequence[float] | np.ndarray,
    embeddings: np.ndarray,
    doc_ids: Sequence[int],
    limit: int,
    lambda_: float,
    same_doc_penalty: float,
) -> tuple[list[int], list[MMRTrace]]:
    """Like `mmr_select`, plus the terms of each pick (for explain views), among them the earlier pick
    each one is most like: the one that held it back."""
    lam = np.float32(_check_param("mmr_lambda", lambda_))
    penalty = np.float32(_check_param("mmr_same_doc_penalty", same_doc_penalty))
    scores = np.asarray(relevance, dtype=np.float32).reshape(-1)
    n = scores.shape[0]
    emb = _check_inputs(scores, embeddings, doc_ids)
    target = min(max(int(limit), 0), n)
    if target == 0:
        return [], []

    rel = normalise(scores)
    norms = np.sqrt(np.einsum("ij,ij->i", emb, emb, dtype=np.float32))
    docs = np.asarray(doc_ids, dtype=np.int64)
    one_minus = np.float32(1.0) - lam
    lam_rel = lam * rel  # constant across steps

    taken = np.zeros(n, dtype=bool)
    doc_seen = np.zeros(n, dtype=bool)
    max_sim = np.zeros(n, dtype=np.float32)  # stays 0.0 until the first pick
    nearest = np.zeros(n, dtype=np.int64)  # the pick (1-based) that gives max_sim
    picks: list[int] = []
    trace: list[MMRTrace] = []
    for step in range(target):
        pen = np.where(doc_seen, penalty, _ZERO)
        values = (lam_rel - one_minus * max_sim) - pen
        values[taken] = -np.inf
        best = int(np.argmax(values))  # first among equal maxima: groove's rule
        picks.append(best)
        trace.append(
            MMRTrace(
                pick=step + 1,
                relevance=float(rel[best]),
                max_similarity=float(max_sim[best]),
                penalty=float(pen[best]),
                value=float(values[best]),
                most_similar_pick=int(nearest[best]) if step else None,
            )
        )
        taken[best] = True
        doc_seen |= docs == docs[best]
        sims = _cosines_to(emb, norms, best)
        closer = sims > max_sim if step else np.ones(n, dtype=bool)
        nearest[closer] = step + 1
        max_sim = sims if step == 0 else np.maximum(max_sim, sims)
    return picks, trace


def normalise(scores: np.ndarray) -> np.ndarray:
    """Min–max normalisation in float32; all zeros when the spread is within f32::EPSILON."""
    lo = scores.min()
    spread = np.float32(scores.max() - lo)
    if not spread > F32_EPSILON:
        return np.zeros_like(scores)
    return cast(np.ndarray, ((scores - lo) / spread).astype(np.float32, copy=False))


def _cosines_to(emb: np.ndarray, norms: np.ndarray, j: int) -> np.ndarray:
    """Cosine of every row with row `j`, float32, 0.0 where either norm is zero."""
    dots = emb @ emb[j]
    denom = norms * norms[j]
    with np.errstate(divide="ignore", invalid="ignore"):
        sims = dots / denom
    sims[(norms == 0) | (norms[j] == 0)] = 0.0
    return cast(np.ndarray, sims.astype(np.float32, copy=False))


def _check_param(key: str, value: float) -> float:
    # numpy scalars are fine too; check_unit gives the config-style message naming key and value
    if isinstance(value, np.floating):
        value = float(value)
    return check_unit(key, value)


def _check_inputs(scores: np.ndarray, embeddings: np.ndarray, doc_ids: Sequence[int]) -> np.ndarray:
    n = scores.shape[0]
    emb = np.asarray(embeddings, dtype=np.float32)
    if emb.ndim != 2 or emb.shape[0] != n:
        raise ValueError(f"embeddings must have shape ({n}, d), got {emb.shape}")
    if len(doc_ids) != n:
        raise ValueError(f"doc_ids has {len(doc_ids)} entries for {n} candidates")
    if n and not all(math.isfinite(s) for s in (float(scores.min()), float(scores.max()))):
        raise ValueError("relevance scores must be finite")
    return emb
