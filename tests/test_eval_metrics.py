"""Evaluation metrics (§I.2), hand-computed: the hit rule, recall, MRR, nDCG, aggregates and k values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groove_tui.engine.evaluate.golden import (
    Expected,
    GoldenQuery,
)
from groove_tui.engine.evaluate.metrics import (
    RankedHit,
    aggregate,
    eval_limit,
    evaluate,
    evaluate_query,
    is_hit,
    ndcg_at_k,
    normalise_k_values,
    ranked_hits,
    recall_at_k,
    reciprocal_rank,
)

L2 = 1 / math.log2(3)  # gain at rank 2
L4 = 1 / math.log2(5)  # gain at rank 4

A, B, C = Expected("a.md"), Expected("b.md"), Expected("c.md")


def r(*paths: str) -> list[tuple[str, str | None]]:
    return [(p, None) for p in paths]


# ================================================================ hit rule


def test_is_hit_path_is_exact():
    assert is_hit(A, "a.md", None)
    assert is_hit(A, "a.md", "Any heading")
    assert not is_hit(A, "A.md", None)
    assert not is_hit(A, "./a.md", None)


def test_is_hit_heading_case_and_outer_whitespace_only():
    e = Expected("a.md", "Data Flow")
    assert is_hit(e, "a.md", "data flow")
    assert is_hit(e, "a.md", "  DATA FLOW\u3000\t")  # Unicode White_Space trimmed, like Rust's trim
    assert not is_hit(e, "a.md", "Data  Flow")  # inner whitespace is NOT normalised
    assert not is_hit(e, "a.md", None)  # heading required when the entry names one
    assert not is_hit(e, "b.md", "Data Flow")
    assert is_hit(Expected("a.md", " Ärger "), "a.md", "ärger")  # Unicode lower-case
    assert not is_hit(Expected("a.md", "x"), "a.md", "x\x1c")  # U+001C is not White_Space (Python strips it)


# ================================================================ metrics, hand-computed


def test_spec_example_duplicate_expected_one_result():
    expected = [A, A]
    assert recall_at_k(expected, r("a.md"), 10) == 1.0  # each duplicate entry counts: 2/2
    assert ndcg_at_k(expected, r("a.md"), 10) == pytest.approx(1 / (1 + L2))
    assert ndcg_at_k(expected, r("a.md"), 10) == pytest.approx(0.613, abs=5e-4)
    assert reciprocal_rank(expected, r("a.md")) == 1.0


def test_duplicate_results_earn_one_gain_per_entry():
    assert ndcg_at_k([A], r("a.md", "a.md", "a.md"), 10) == 1.0
    # two chunks of one file, two entries for it: both consumed
    assert ndcg_at_k([A, A], r("a.md", "a.md"), 10) == pytest.approx(1.0)


def test_heading_entries_are_consumed_first():
    expected = [Expected("a.md"), Expected("a.md", "Setup")]
    results = [("a.md", "setup"), ("a.md", "Other")]
    # result 1 takes the heading entry, so result 2 can still take the file-level one
    assert ndcg_at_k(expected, results, 10) == pytest.approx(1.0)
    # declaration order alone would have given 1 / (1 + L2)
    assert recall_at_k(expected, results, 10) == 1.0
    assert recall_at_k(expected, results[1:], 10) == 0.5


def test_a_result_consumes_at_most_one_entry():
    expected = [Expected("a.md", "X"), Expected("a.md", " x ")]
    assert ndcg_at_k(expected, [("a.md", "x")], 10) == pytest.approx(1 / (1 + L2))
    assert recall_at_k(expected, [("a.md", "x")], 10) == 1.0


def test_multi_answer():
    expected = [A, B, C]
    results = r("x.md", "a.md", "y.md", "c.md")
    assert recall_at_k(expected, results, 5) == pytest.approx(2 / 3)
    assert recall_at_k(expected, results, 2) == pytest.approx(1 / 3)
    assert recall_at_k(expected, results, 1) == 0.0
    assert reciprocal_rank(expected, results) == 0.5
    assert ndcg_at_k(expected, results, 5) == pytest.approx((L2 + L4) / (1 + L2 + 0.5))
    assert ndcg_at_k(expected, results, 2) == pytest.approx(L2 / (1 + L2))
    assert ndcg_at_k(expected, results, 1) == 0.0


def test_ranks_beyond_k_do_not_count_but_rr_looks_at_the_whole_list():
    results = r("x.md", "y.md", "a.md")
    assert recall_at_k([A], results, 2) == 0.0
    assert ndcg_at_k([A], results, 2) == 0.0
    assert reciprocal_rank([A], results) == pytest.approx(1 / 3)


def test_idcg_with_fewer_expected_than_k():
    assert ndcg_at_k([A], r("x.md", "a.md"), 10) == pytest.approx(L2)  # IDCG = 1, not Σ over 10
    assert ndcg_at_k([A, B], r("b.md", "a.md"), 10) == pytest.approx(1.0)


def test_empty_inputs_and_zero_k():
    assert recall_at_k([], r("a.md"), 5) == 0.0
    assert ndcg_at_k([], r("a.md"), 5) == 0.0
    assert reciprocal_rank([], r("a.md")) == 0.0
    assert recall_at_k([A], [], 5) == 0.0
    assert ndcg_at_k([A], [], 5) == 0.0
    assert ndcg_at_k([A], r("a.md"), 0) == 0.0
    assert recall_at_k([A], r("a.md"), 0) == 0.0


@given(
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=5),
    st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=8),
    st.integers(0, 10),
)
def test_metrics_stay_in_unit_interval(exp, res, k):
    expected = [Expected(p) for p in exp]
    m = evaluate(expected, r(*res), [k])
    for v in (m.recall_at_k[k], m.ndcg_at_k[k], m.reciprocal_rank):
        assert 0.0 <= v <= 1.0 + 1e-12


def test_aggregate_skips_queries_without_expected():
    judged = evaluate([A], r("x.md", "a.md"), [1, 5])
    empty = evaluate([], r("a.md"), [1, 5])
    perfect = evaluate([B], r("b.md"), [1, 5])
    agg = aggregate([judged, empty, perfect], [1, 5])
    assert agg.query_count == 2
    assert agg.recall_at_k == {1: 0.5, 5: 1.0}
    assert agg.mrr == pytest.approx(0.75)
    assert agg.ndcg_at_k[5] == pytest.approx((L2 + 1) / 2)
    assert aggregate([empty]).query_count == 0
    assert aggregate([empty], [5]).mrr == 0.0


def test_k_values_and_limit():
    assert normalise_k_values([10, 1, 5, 5, 5000]) == (1, 5, 10, 1000)
    assert eval_limit((1, 5, 10)) == 10
    assert eval_limit((1, 5, 10), 20) == 20
    assert eval_limit((1000,), 5000) == 1000


def test_evaluate_query_from_hits():
    class H:
        def __init__(self, path, heading, score):
            self.path, self.heading, self.score = path, heading, score

    hits = ranked_hits([H("x.md", None, 0.5), H("a.md", "S", 0.25)])
    assert hits[1] == RankedHit(2, "a.md", "S", 0.25)
    q = GoldenQuery("q", "query", (A,))
    m = evaluate_query(q, hits, [1, 5])
    assert m.reciprocal_rank == 0.5 and m.recall_at_k == {1: 0.0, 5: 1.0}
