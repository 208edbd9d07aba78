"""Every list in the order of the score it shows, every score rebuilt from its explain trace, and no hit
that no leg returned — over random queries and settings on fixture KBs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groove_tui.engine import Engine
from groove_tui.engine.types import Hit, SearchParams
from tests.helpers import SAMPLE_KB, hashing_config, write_kb
from tests.test_pipeline import generated_kb
from tests.tinymodels import build_tiny_cross_encoder

WORDS = ["tokio", "runtime", "search", "ranking", "garden", "soil", "vector", "parent", "retriever", "sqlite"]
WORDS += ["index", "設定", "ファイル", "fusion", "note", "-tokio", '"tokio runtime"', "Async Rust", "ab", "xyzzy"]


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("order")
    sample = Engine.open(write_kb(root / "sample", SAMPLE_KB), config=hashing_config(), index_dir=root / "i1")
    sample.index()
    generated = Engine.open(generated_kb(root / "gen"), config=hashing_config(), index_dir=root / "i2")
    generated.index()
    yield {"sample": sample, "generated": generated}
    sample.close()
    generated.close()


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_tiny_cross_encoder(tmp_path_factory.mktemp("ce")))


def _f32_close(a: float, b: float) -> bool:
    """Equal to float32 rounding: a few units in the last place of the larger magnitude."""
    return abs(a - b) <= 4 * float(np.finfo(np.float32).eps) * max(1.0, abs(a), abs(b))


def assert_one_order_one_score(hits: tuple[Hit, ...], mmr: bool) -> None:
    scores = [h.score for h in hits]
    if not mmr:
        assert scores == sorted(scores, reverse=True), scores
    for h in hits:
        t = h.trace
        assert t is not None
        assert t.leg_ranks(), f"{h.path}: no leg returned it"
        assert t.fusion in ("dbsf", "relative", "rrf")
        assert h.score > 0 or t.rerank_score is not None, f"{h.path}: earned nothing"
        fused = np.float32(0.0)
        for _, term in t.fusion_terms():
            fused = np.float32(fused + np.float32(term))
        assert _f32_close(float(fused), t.rrf_score), (t.fusion_terms(), t.rrf_score)
        if t.rerank_score is None:
            assert _f32_close(h.score, t.rrf_score)
        elif t.rerank_z is None:  # blend 1: the cross-encoder's raw score is the score
            assert _f32_close(h.score, t.rerank_score)
        else:
            b = t.rerank_blend
            assert _f32_close(h.score, b * t.rerank_z + (1 - b) * t.fused_z)
        if mmr:
            assert t.mmr is not None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kb=st.sampled_from(["sample", "generated"]),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)
    .map(" ".join)
    .filter(lambda q: set(q.split()) != {"-tokio"}),
    limit=st.sampled_from([1, 3, 10, 15, 40]),
    fusion=st.sampled_from(["dbsf", "relative", "rrf"]),
    mmr=st.booleans(),
    parent=st.booleans(),
    word_leg=st.booleans(),
)
def test_scores_never_increase_down_the_list_and_every_score_is_its_terms(
    engines, kb, query, limit, fusion, mmr, parent, word_leg
):
    params = SearchParams(
        limit=limit, fusion=fusion, mmr=mmr, parent_retriever=parent, word_leg=word_leg, explain=True, min_quality=0
    )
    resp = engines[kb].search(query, params)
    assert_one_order_one_score(resp.results, mmr)
    # The JSON answer carries the same scores in the same order.
    doc = json.loads(resp.to_json())
    assert [r["score"] for r in doc["results"]] == pytest.approx([h.score for h in resp.results], rel=1e-6)


@pytest.mark.parametrize("blend", [1.0, 0.5])
@pytest.mark.parametrize("mmr", [False, True])
def test_a_reranked_page_shows_its_blended_score_in_order(engines, cross_encoder, blend, mmr):
    from dataclasses import replace

    gen = engines["generated"]
    eng = Engine(gen.kb_path, replace(gen.config, reranker=replace(gen.config.reranker, blend=blend)), gen.index_dir)
    try:
        for query in ("search ranking", "tokio runtime", "garden soil"):
            params = SearchParams(limit=12, reranker=cross_encoder, mmr=mmr, explain=True, min_quality=0)
            resp = eng.search(query, params)
            assert resp.reranked and resp.results
            assert_one_order_one_score(resp.results, mmr)
    finally:
        eng.close()


def test_a_section_no_leg_scores_is_not_filler(tmp_path: Path):
    """A query only a few notes match by their words: the page holds those and what the vector leg found
    near them, never the rest of the KB at score 0 (under "relative" the window's last candidate reads 0)."""
    files = {f"en/n{i}.md": f"# Note {i}\n\nPlain English words about topic {i} and nothing else.\n" for i in range(30)}
    files["ja/圧縮.md"] = "# 圧縮\n\nファイルを圧縮する方法。tar と gzip で圧縮します。\n"
    files["ja/解凍.md"] = "# 解凍\n\n圧縮したファイルを解凍する。\n"
    eng = Engine.open(write_kb(tmp_path / "kb", files), config=hashing_config(), index_dir=tmp_path / "idx")
    try:
        eng.index()
        for fusion in ("dbsf", "relative"):
            resp = eng.search("圧縮", SearchParams(limit=40, explain=True, min_quality=0, fusion=fusion))
            assert resp.results and all(h.score > 0 for h in resp.results)
            assert all(h.trace.leg_ranks() for h in resp.results)
            assert resp.results[0].path == "ja/圧縮.md" and len(resp.results) < len(files)
    finally:
        eng.close()
