"""MMR selection (groove §F): hand-computed cases, a naive float32 reference, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groove_tui.engine.stages.mmr import mmr_select, mmr_select_traced

f32 = np.float32
EPS = f32(1.1920929e-07)


def orthogonal(n: int) -> np.ndarray:
    return np.eye(n, dtype=np.float32)


# ---------------------------------------------------------------- naive reference (groove's loops)


def _cos(a: np.ndarray, b: np.ndarray) -> np.float32:
    dot = na = nb = f32(0.0)
    for x, y in zip(a, b, strict=True):  # sequential float32 sums, as groove's iterator sums
        dot = f32(dot + f32(x * y))
        na = f32(na + f32(x * x))
        nb = f32(nb + f32(y * y))
    na, nb = f32(math.sqrt(na)), f32(math.sqrt(nb))
    if na == 0 or nb == 0:
        return f32(0.0)
    return f32(dot / f32(na * nb))


def naive_mmr(scores, emb, docs, limit, lam, pen) -> list[int]:
    s = [f32(x) for x in scores]
    n = len(s)
    lo, hi = min(s), max(s)
    spread = f32(hi - lo)
    rel = [f32((x - lo) / spread) if spread > EPS else f32(0.0) for x in s]
    lam, pen = f32(lam), f32(pen)
    selected: list[int] = []
    while len(selected) < min(limit, n):
        best, best_val = -1, None
        for i in range(n):
            if i in selected:
                continue
            max_sim = max((_cos(emb[i], emb[j]) for j in selected), default=f32(0.0))
            same = any(docs[j] == docs[i] for j in selected)
            val = lam * rel[i] - (f32(1.0) - lam) * max_sim - (pen if same else f32(0.0))
            if best_val is None or val > best_val:  # strict: ties keep the lowest index
                best, best_val = i, val
        selected.append(best)
    return selected


@st.composite
def pools(draw):
    n = draw(st.integers(1, 12))
    d = draw(st.integers(1, 6))
    # small integer components keep every dot product and squared norm exact in float32, so the
    # vectorised and the sequential sums agree bit for bit; duplicates and zero rows create ties
    rows = draw(st.lists(st.lists(st.integers(-3, 3), min_size=d, max_size=d), min_size=n, max_size=n))
    score = st.one_of(
        st.sampled_from([0.0, 0.5, 1.0, 0.016393442, 0.032786883]),
        st.floats(-5, 5, width=32, allow_nan=False),
    )
    scores = draw(st.lists(score, min_size=n, max_size=n))
    docs = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    unit = st.one_of(st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0]), st.floats(0, 1, width=32))
    return scores, np.array(rows, dtype=np.float32), docs, draw(st.integers(0, n + 2)), draw(unit), draw(unit)


@settings(max_examples=300, deadline=None)
@given(pools())
def test_matches_naive_reference(pool):
    scores, emb, docs, limit, lam, pen = pool
    assert mmr_select(scores, emb, docs, limit, lam, pen) == naive_mmr(scores, emb, docs, limit, lam, pen)


# ---------------------------------------------------------------- hand-computed cases


def test_lambda_one_is_relevance_order():
    emb = np.array([[1, 0], [1, 0], [1, 0], [1, 0]], dtype=np.float32)  # identical: diversity irrelevant
    assert mmr_select([0.1, 0.9, 0.5, 0.7], emb, [1, 2, 3, 4], 4, 1.0, 0.0) == [1, 3, 2, 0]


def test_lambda_zero_picks_index_zero_then_most_dissimilar():
    emb = np.array([[1, 0], [1, 0.1], [0, 1], [-1, 0]], dtype=np.float32)
    # first step: every value is 0 → index 0; then -max_sim: [-1,0] (cos −1) beats [0,1] (cos 0)
    assert mmr_select([0.1, 0.9, 0.8, 0.2], emb, [1, 2, 3, 4], 4, 0.0, 0.0) == [0, 3, 2, 1]


def test_ties_go_to_the_lowest_index():
    assert mmr_select([0.5, 0.9, 0.9], orthogonal(3), [1, 2, 3], 3, 0.7, 0.0) == [1, 2, 0]


def test_relevance_is_shifted_by_the_pool_minimum():
    """Scores whose minimum is not 0: rel = (s - min) / (max - min), not s / max or s / spread."""
    picks, trace = mmr_select_traced([5.0, 3.0, 4.0], orthogonal(3), [1, 2, 3], 3, 1.0, 0.0)
    assert picks == [0, 2, 1]
    assert [t.relevance for t in trace] == [1.0, 0.5, 0.0]
    picks, trace = mmr_select_traced([-1.0, -3.0, -2.5], orthogonal(3), [1, 2, 3], 3, 1.0, 0.0)
    assert picks == [0, 2, 1] and [t.relevance for t in trace] == [1.0, 0.25, 0.0]


def test_equal_scores_normalise_to_zero():
    picks, trace = mmr_select_traced([3.0, 3.0, 3.0], orthogonal(3), [1, 2, 3], 3, 1.0, 0.0)
    assert picks == [0, 1, 2]
    assert [t.relevance for t in trace] == [0.0, 0.0, 0.0]


def test_epsilon_rule_is_strict():
    one_ulp = float(np.nextafter(f32(1.0), f32(2.0)))  # spread == f32::EPSILON → not above it
    two_ulp = float(np.nextafter(f32(one_ulp), f32(2.0)))
    emb = orthogonal(2)
    assert mmr_select([1.0, one_ulp], emb, [1, 2], 2, 1.0, 0.0) == [0, 1]
    assert mmr_select([1.0, two_ulp], emb, [1, 2], 2, 1.0, 0.0) == [1, 0]


def test_zero_vectors_have_zero_similarity():
    emb = np.array([[1, 0], [1, 0], [0, 0]], dtype=np.float32)
    with np.errstate(all="raise"):  # no NaN/inf warnings from the zero norm
        picks, trace = mmr_select_traced([1.0, 0.9, 0.0], emb, [1, 2, 3], 3, 0.5, 0.0)
    # after 0: candidate 1 = .5·.9 − .5·1 = −0.05, candidate 2 = 0 − .5·0 = 0
    assert picks == [0, 2, 1]
    assert trace[1].max_similarity == 0.0
    assert mmr_select([1.0, 0.5], np.zeros((2, 3), np.float32), [1, 2], 2, 0.0, 0.0) == [0, 1]


def test_same_doc_penalty_changes_picks():
    emb = orthogonal(3)
    assert mmr_select([1.0, 0.9, 0.8], emb, [7, 7, 8], 3, 0.7, 0.0) == [0, 1, 2]
    picks, trace = mmr_select_traced([1.0, 0.9, 0.8], emb, [7, 7, 8], 3, 0.7, 0.5)
    assert picks == [0, 2, 1]
    assert [t.penalty for t in trace] == [0.0, 0.0, 0.5]


def test_negative_similarity_is_not_clamped():
    # groove's max_sim is the plain maximum over the picked set, so an opposite vector earns a bonus
    emb = np.array([[1, 0], [0, 1], [-1, 0]], dtype=np.float32)
    picks, trace = mmr_select_traced([1.0, 0.5, 0.5], emb, [1, 2, 3], 3, 0.5, 0.0)
    assert picks == [0, 2, 1]
    assert trace[1].max_similarity == -1.0


def test_limit_bounds():
    emb = orthogonal(3)
    assert mmr_select([0.3, 0.2, 0.1], emb, [1, 2, 3], 10, 0.7, 0.0) == [0, 1, 2]
    assert mmr_select([0.3, 0.2, 0.1], emb, [1, 2, 3], 2, 0.7, 0.0) == [0, 1]
    assert mmr_select([0.3, 0.2, 0.1], emb, [1, 2, 3], 0, 0.7, 0.0) == []
    assert mmr_select([], np.zeros((0, 4), np.float32), [], 5, 0.7, 0.0) == []


def test_trace_terms():
    emb = np.array([[1, 0], [1, 1], [0, 1]], dtype=np.float32)
    picks, trace = mmr_select_traced([2.0, 1.0, 0.0], emb, [1, 1, 2], 3, 0.6, 0.25)
    assert picks == mmr_select([2.0, 1.0, 0.0], emb, [1, 1, 2], 3, 0.6, 0.25)
    assert [t.pick for t in trace] == [1, 2, 3]
    first = trace[0]
    assert (first.relevance, first.max_similarity, first.penalty) == (1.0, 0.0, 0.0)
    assert first.value == pytest.approx(0.6)
    for t in trace:  # value is recomputable from the recorded terms (float32)
        expect = f32(0.6) * f32(t.relevance) - (f32(1) - f32(0.6)) * f32(t.max_similarity) - f32(t.penalty)
        assert t.value == float(expect)


def test_accepts_float64_embeddings_and_numpy_scores():
    emb = np.eye(3, dtype=np.float64)
    assert mmr_select(np.array([0.1, 0.3, 0.2]), emb, (1, 2, 3), 3, np.float32(0.7), 0.0) == [1, 2, 0]


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan"), float("inf"), True, "0.5"])
def test_lambda_validation(value):
    with pytest.raises(ValueError, match="mmr_lambda") as info:
        mmr_select([1.0], orthogonal(1), [1], 1, value, 0.0)
    assert repr(value) in str(info.value)


@pytest.mark.parametrize("value", [-1.0, 1.0001, float("nan")])
def test_penalty_validation(value):
    with pytest.raises(ValueError, match="mmr_same_doc_penalty") as info:
        mmr_select([1.0], orthogonal(1), [1], 1, 0.7, value)
    assert repr(value) in str(info.value)


def test_bounds_are_inclusive():
    assert mmr_select([1.0, 0.0], orthogonal(2), [1, 2], 2, 0.0, 1.0) == [0, 1]
    assert mmr_select([1.0, 0.0], orthogonal(2), [1, 2], 2, 1.0, 0.0) == [0, 1]


def test_shape_validation():
    with pytest.raises(ValueError, match="embeddings"):
        mmr_select([1.0, 2.0], orthogonal(3), [1, 2], 2, 0.7, 0.0)
    with pytest.raises(ValueError, match="doc_ids"):
        mmr_select([1.0, 2.0], orthogonal(2), [1], 2, 0.7, 0.0)
    with pytest.raises(ValueError, match="finite"):
        mmr_select([1.0, float("nan")], orthogonal(2), [1, 2], 2, 0.7, 0.0)
