"""Fusion methods: groove's RRF and our score fusions (dbsf, relative), on hand-computed cases and a real index."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.retrieve.fusion import SCORE_WINDOW, _scale, _terms
from groove_tui.settings.config import FusionConfig, SearchConfig

from helpers import SAMPLE_KB, hashing_config, write_kb

F32 = np.float32


def test_rrf_terms_are_groove_formula_in_f32():
    leg = [(7, -3.0), (3, -2.0), (9, -1.0)]
    assert _terms("rrf", leg, F32(1.0), 60.0) == [F32(1.0) / F32(61.0), F32(1.0) / F32(62.0), F32(1.0) / F32(63.0)]
    assert _terms("rrf", leg, F32(2.0), 10.0)[0] == F32(2.0) * (F32(1.0) / F32(11.0))


def test_relative_terms_are_min_max_over_the_window():
    # Lower raw is better (distances, FTS5 bm25): the best gets the full weight, the window's last 0.
    leg = [(1, 0.2), (2, 0.4), (3, 0.6)]
    assert _terms("relative", leg, F32(1.0), 60.0) == pytest.approx([1.0, 0.5, 0.0])
    assert _terms("relative", leg, F32(2.0), 60.0) == pytest.approx([2.0, 1.0, 0.0])
    bm25 = [(1, -9.0), (2, -6.0), (3, -3.0), (4, -3.0)]
    assert _terms("relative", bm25, F32(1.0), 60.0) == pytest.approx([1.0, 0.5, 0.0, 0.0])


def test_relative_terms_below_the_window_are_zero_not_negative():
    leg = [(i, float(i)) for i in range(SCORE_WINDOW + 20)]
    terms = _terms("relative", leg, F32(1.0), 60.0)
    assert terms[0] == 1.0 and terms[SCORE_WINDOW - 1] == 0.0
    assert all(t == 0.0 for t in terms[SCORE_WINDOW:])
    # The window is fixed: a longer leg (a bigger page) does not move the scores inside it.
    assert terms[:SCORE_WINDOW] == _terms("relative", leg[:SCORE_WINDOW], F32(1.0), 60.0)


def test_relative_terms_of_a_flat_or_single_leg_are_full_weight():
    assert _terms("relative", [(1, 0.3)], F32(1.0), 60.0) == [1.0]
    assert _terms("relative", [(1, 0.3), (2, 0.3)], F32(0.5), 60.0) == [0.5, 0.5]
    assert _terms("relative", [], F32(1.0), 60.0) == []


def test_dbsf_terms_map_the_window_mean_to_half_and_three_deviations_to_the_ends():
    # bm25 (lower is better): scores 9, 6, 3 have mean 6 and standard deviation sqrt(6).
    bm25 = [(1, -9.0), (2, -6.0), (3, -3.0)]
    step = 3.0 / (6.0 * np.sqrt(6.0))
    assert _terms("dbsf", bm25, F32(1.0), 60.0) == pytest.approx([0.5 + step, 0.5, 0.5 - step], rel=1e-6)
    assert _terms("dbsf", bm25, F32(2.0), 60.0) == pytest.approx([1.0 + 2 * step, 1.0, 1.0 - 2 * step], rel=1e-6)


def test_dbsf_reads_vector_distances_as_cosine_similarity():
    # Unit vectors at L2 distance 0, 1 and sqrt(2) have cosine 1, 0.5 and 0: evenly spaced, unlike the
    # distances themselves.
    leg = [(1, 0.0), (2, 1.0), (3, float(np.sqrt(2.0)))]
    step = 0.5 / (6.0 * np.sqrt(1.0 / 6.0))
    assert _terms("dbsf", leg, F32(1.0), 60.0, vector=True) == pytest.approx([0.5 + step, 0.5, 0.5 - step], rel=1e-6)
    as_text = _terms("dbsf", leg, F32(1.0), 60.0)
    assert as_text[1] != pytest.approx(0.5, abs=1e-3), "without the cosine the middle hit is not at the mean"


def test_dbsf_window_is_fixed_clamps_at_zero_and_keeps_an_outliers_lead():
    leg = [(0, -100.0)] + [(i, -50.0 + i) for i in range(1, SCORE_WINDOW + 200)]
    terms = _terms("dbsf", leg, F32(1.0), 60.0)
    assert terms[0] > 1.0, "a first hit far above its window is not clipped to the others' scale"
    assert terms == sorted(terms, reverse=True) and min(terms) == 0.0
    assert all(t >= 0.0 for t in terms)
    assert terms[:SCORE_WINDOW] == _terms("dbsf", leg[:SCORE_WINDOW], F32(1.0), 60.0)


def test_dbsf_terms_of_a_flat_or_single_leg_are_full_weight():
    assert _terms("dbsf", [(1, 0.3)], F32(1.0), 60.0, vector=True) == [1.0]
    assert _terms("dbsf", [(1, -2.0), (2, -2.0)], F32(0.5), 60.0) == [0.5, 0.5]
    assert _terms("dbsf", [], F32(1.0), 60.0) == []


def test_scales_name_the_scores_that_map_to_zero_and_one():
    root6 = np.sqrt(6.0)
    assert _scale("dbsf", [(1, -9.0), (2, -6.0), (3, -3.0)], False) == pytest.approx(
        (-(6 - 3 * root6), -(6 + 3 * root6))
    )
    cos_sd = np.sqrt(1.0 / 6.0)
    vec = [(1, 0.0), (2, 1.0), (3, float(np.sqrt(2.0)))]
    assert _scale("dbsf", vec, True) == pytest.approx((0.5 - 3 * cos_sd, 0.5 + 3 * cos_sd))
    assert _scale("relative", [(1, 0.2), (2, 0.4), (3, 0.6)], True) == (0.6, 0.2)  # raw distances
    assert _scale("rrf", vec, True) is None
    assert _scale("dbsf", [], True) is None and _scale("relative", [(1, 0.3)], False) is None


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    return write_kb(tmp_path_factory.mktemp("fusion") / "kb", SAMPLE_KB)


def _engine(kb, tmp_path, **fusion) -> Engine:
    cfg = hashing_config(search=replace(SearchConfig(), fusion=FusionConfig(**fusion)))
    eng = Engine.open(kb, config=cfg, index_dir=tmp_path / "idx")
    eng.index()
    return eng


def _score_fused_traces(eng: Engine, method: str) -> list:
    """Search with explain; check what every score fusion holds (each hit's score is the sum of its leg
    terms, none negative, in order, the method named in traces and JSON); return the traces."""
    resp = eng.search("tokio runtime", SearchParams(limit=10, explain=True))
    traces = [h.trace for h in resp.results]
    assert traces and all(t.fusion == method for t in traces)
    for hit, t in zip(resp.results, traces, strict=True):
        assert t.word_leg
        terms = sum(value for _, value in t.fusion_terms())
        assert hit.score == pytest.approx(terms, rel=1e-6) and t.rrf_score == pytest.approx(terms, rel=1e-6)
        assert (t.rrf_vector or 0.0) >= 0.0 and (t.rrf_fts or 0.0) >= 0.0 and (t.rrf_word or 0.0) >= 0.0
    assert [h.score for h in resp.results] == sorted((h.score for h in resp.results), reverse=True)
    top = resp.to_dict()["explain"]["hits"][0]["fusion"]
    assert top["method"] == method and set(top["scales"]) == {"vector", "fts", "word"}
    # Each hit's term is its leg score placed on the leg's scale (every hit carries both legs' scales),
    # times the leg's weight: the full-text legs share `fts_weight` (1 here) as one family.
    for t in traces:
        assert t.vector_scale is not None and t.fts_scale is not None
        shares = dict(t.lexical_shares)
        assert shares == {"fts": 0.5, "word": 0.5} and t.vector_weight == 1.0
        if t.vector_rank is not None:
            reading = 1 - t.vector_distance**2 / 2 if method == "dbsf" else t.vector_distance
            zero, one = t.vector_scale
            assert t.rrf_vector == pytest.approx(max(0.0, (reading - zero) / (one - zero)), rel=1e-5, abs=1e-6)
        if t.fts_rank is not None:
            zero, one = t.fts_scale
            expected = 0.5 * max(0.0, (t.fts_bm25 - zero) / (one - zero))
            assert t.rrf_fts == pytest.approx(expected, rel=1e-5, abs=1e-6)
        if t.word_rank is not None:
            zero, one = t.word_scale
            expected = 0.5 * max(0.0, (t.word_bm25 - zero) / (one - zero))
            assert t.rrf_word == pytest.approx(expected, rel=1e-5, abs=1e-6)
    return traces


def test_dbsf_is_the_default_and_sums_the_leg_terms(kb, tmp_path):
    with _engine(kb, tmp_path) as eng:
        traces = _score_fused_traces(eng, "dbsf")
        # The full-text leg's best hit reads above 0.5, which its window's mean maps to (half a share).
        assert max(t.rrf_fts or 0.0 for t in traces) > 0.25


def test_relative_fusion_sums_min_max_normalised_leg_scores(kb, tmp_path):
    with _engine(kb, tmp_path, method="relative") as eng:
        traces = _score_fused_traces(eng, "relative")
        assert all((t.rrf_vector or 0.0) <= 1.0 and (t.rrf_fts or 0.0) <= 0.5 for t in traces)
        # Each leg's best candidate earns that leg's full weight (a full-text leg's: its family share).
        assert max(t.rrf_vector or 0.0 for t in traces) == 1.0
        assert next(t for t in traces if t.fts_rank == 1).rrf_fts == 0.5


def test_rrf_per_call_reuses_retrieval_and_matches_an_rrf_config(kb, tmp_path, monkeypatch):
    with _engine(kb, tmp_path) as eng, _engine(kb, tmp_path / "rrf", method="rrf") as rrf_eng:
        eng.search("sqlite vector search", SearchParams(limit=10))
        calls = []
        monkeypatch.setattr(eng._searcher, "_fts_leg", lambda *a, **k: calls.append(a) or [])
        per_call = eng.search("sqlite vector search", SearchParams(limit=10, fusion="rrf", explain=True))
        assert calls == [], "switching the fusion method re-fuses cached legs"
        configured = rrf_eng.search("sqlite vector search", SearchParams(limit=10, explain=True))
        assert [(h.path, h.chunk_index, h.score) for h in per_call.results] == [
            (h.path, h.chunk_index, h.score) for h in configured.results
        ]
        top = per_call.results[0].trace
        assert top.fusion == "rrf" and top.vector_scale is None and top.fts_scale is None
        assert "scales" not in per_call.to_dict()["explain"]["hits"][0]["fusion"], "RRF reads ranks, not scores"
        # groove's fusion: each leg's rank is a vote of its own, the full-text legs included.
        expected = sum(F32(1.0) / (F32(60.0) + F32(r)) for r in (top.vector_rank, top.fts_rank, top.word_rank) if r)
        assert top.rrf_score == pytest.approx(float(expected), rel=1e-6)


def test_fusion_method_is_validated_with_its_name(kb, tmp_path):
    from groove_tui.engine.errors import ParamError

    with _engine(kb, tmp_path) as eng, pytest.raises(ParamError, match=r"fusion = 'rank' is invalid") as err:
        eng.search("tokio", SearchParams(fusion="rank"))
    assert isinstance(err.value, ValueError)  # a search parameter: the engine's own error, still a ValueError


@pytest.mark.parametrize("method", ["dbsf", "relative"])
def test_single_leg_runs_rank_like_the_leg(tmp_path, method):
    # With one leg, a score fusion keeps the leg's own order. Below the normalisation window candidates
    # may read 0: they earned nothing and are not shown, so the page may be shorter than RRF's.
    files = {
        f"n{i:03}.md": f"# Note {i}\n\nNote {i} is about sqlite search" + " and more" * (i % 7) + ".\n"
        for i in range(150)
    }
    with _engine(write_kb(tmp_path / "kb", files), tmp_path) as eng:
        for legs in ("fts", "vector"):
            params = SearchParams(limit=120, legs=legs, min_quality=0, fusion=method)
            rel = eng.search("sqlite search", params)
            rrf = eng.search("sqlite search", replace(params, fusion="rrf"))
            assert len(rrf.results) == 120 and len(rel.results) >= 40
            assert [h.chunk_id for h in rel.results] == [h.chunk_id for h in rrf.results][: len(rel.results)]
            assert all(h.score > 0 for h in rel.results)


@pytest.mark.parametrize("method", ["dbsf", "relative", "rrf"])
def test_each_leg_is_fused_with_its_own_weight(kb, tmp_path, method):
    """Unequal weights: each leg's term is its unit-weight term times that leg's weight. Under the score
    fusions the full-text legs (trigram or bigram, and words) share `fts_weight` in proportion to their
    sub-weights, so with both sub-weights 1 each carries half of it, and a trigram sub-weight of 3 gives
    it three quarters; under RRF each carries `fts_weight` times its sub-weight. Equal weights everywhere
    could not tell them apart."""
    with (
        _engine(kb, tmp_path / "unit", method=method) as unit,
        _engine(
            kb,
            tmp_path / "weighted",
            method=method,
            vector_weight=0.25,
            fts_weight=2.0,
            trigram_weight=3.0,
            word_weight=1.0,
        ) as weighted,
    ):
        for query, full_text in (("tokio runtime", "rrf_fts"), ("設定ファイル", "rrf_bigram")):
            params = SearchParams(limit=10, explain=True, min_quality=0)
            base = {h.chunk_id: h.trace for h in unit.search(query, params).results}
            seen = 0
            for hit in weighted.search(query, params).results:
                t, u = hit.trace, base.get(hit.chunk_id)
                if u is None:
                    continue
                # The shares follow the legs that ran: with the word leg, 1/2 each at unit weights and
                # 2 × 3/4 and 2 × 1/4 weighted; a full-text leg alone carries the whole fts_weight.
                # Under RRF each full-text leg votes on its own, at fts_weight × its sub-weight.
                ran = dict(u.lexical_shares)
                if method == "rrf":
                    assert dict(t.lexical_shares) == {full_text[4:]: 6.0, **({"word": 2.0} if len(ran) == 2 else {})}
                    ratio = {"rrf_vector": 0.25, full_text: 6.0, "rrf_word": 2.0}
                else:
                    assert dict(t.lexical_shares) == (
                        {full_text[4:]: 1.5, "word": 0.5} if len(ran) == 2 else {full_text[4:]: 2.0}
                    )
                    ratio = {"rrf_vector": 0.25, full_text: 3.0 if len(ran) == 2 else 2.0, "rrf_word": 1.0}
                for name, weight in ratio.items():
                    if getattr(u, name) is not None:
                        assert getattr(t, name) == pytest.approx(weight * getattr(u, name), rel=1e-5, abs=1e-7), name
                        seen += 1
                total = (t.rrf_vector or 0) + (getattr(t, full_text) or 0) + (t.rrf_word or 0) + (t.name_term or 0)
                assert hit.score == pytest.approx(total, rel=1e-5)
            assert seen >= 4
