"""Pipeline stages on a real index: reranker, MMR, parent retriever, off-means-off, caching, cancellation."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from groove_tui.engine import Engine, SearchCancelled, SearchParams
from groove_tui.settings.config import MMRConfig, ParentConfig, RerankerConfig

from helpers import hashing_config, write_kb
from tinymodels import build_tiny_cross_encoder


def generated_kb(root: Path, docs: int = 12) -> Path:
    """Documents with several sections each, overlapping vocabulary, so every stage has work to do."""
    topics = ["tokio runtime tasks", "sqlite full text search", "vector embeddings search", "garden compost soil"]
    files = {}
    for d in range(docs):
        t = topics[d % len(topics)]
        sections = "\n\n".join(
            f"## Part {s} of {t}\n\nSection {s} of document {d} talks about {t} and search ranking detail {s * d}. "
            f"It also mentions {topics[(d + s) % len(topics)]} in passing."
            for s in range(4)
        )
        files[f"area{d % 3}/doc{d:02}.md"] = (
            f"---\ntitle: Doc {d}\ntags: [t{d % 2}]\n---\n\nIntro of doc {d} about {t}.\n\n{sections}\n"
        )
    return write_kb(root, files)


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pipe")
    kb = generated_kb(tmp / "kb")
    eng = Engine.open(kb, config=hashing_config(), index_dir=tmp / "idx")
    eng.index()
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory) -> str:
    return str(build_tiny_cross_encoder(tmp_path_factory.mktemp("ce")))


QUERIES = ["search ranking", "tokio runtime", "garden soil", "vector embeddings", "ab"]


# ---------------------------------------------------------------- off means off


@pytest.mark.parametrize("query", QUERIES)
def test_disabled_stages_leave_the_response_byte_identical(gen, query):
    plain = gen.search(query, SearchParams(limit=7)).to_json()
    # MMR off: λ and penalty are ignored entirely.
    assert (
        gen.search(query, SearchParams(limit=7, mmr=False, mmr_lambda=0.1, mmr_same_doc_penalty=0.9)).to_json() == plain
    )
    # Reranker off.
    assert gen.search(query, SearchParams(limit=7, reranker=None)).to_json() == plain
    # Parent retriever off, whatever its knobs say.
    other_knobs = replace(
        gen.config,
        search=replace(gen.config.search, parent_retriever=ParentConfig(False, 5, 50), mmr=MMRConfig(False, 0.2, 0.5)),
    )
    eng2 = Engine(gen.kb_path, other_knobs, gen.index_dir)
    try:
        assert eng2.search(query, SearchParams(limit=7)).to_json() == plain
    finally:
        eng2.close()


def test_lambda_one_mmr_keeps_relevance_order_without_penalty(gen):
    # groove §F: λ = 1 reduces MMR to relevance order over its (larger) pool.
    mmr = gen.search("search ranking", SearchParams(limit=5, mmr=True, mmr_lambda=1.0))
    scores = [h.score for h in mmr.results]
    assert scores == sorted(scores, reverse=True)


# ---------------------------------------------------------------- MMR


def test_mmr_diversifies_and_traces(gen):
    plain = gen.search("search ranking", SearchParams(limit=6, explain=True))
    diverse = gen.search(
        "search ranking", SearchParams(limit=6, mmr=True, mmr_lambda=0.3, mmr_same_doc_penalty=0.5, explain=True)
    )
    assert [h.chunk_id for h in diverse.results] != [h.chunk_id for h in plain.results]
    assert len({h.path for h in diverse.results}) >= len({h.path for h in plain.results})
    picks = [h.trace.mmr.pick for h in diverse.results]
    assert picks == list(range(1, 7))
    assert diverse.results[0].trace.mmr.max_similarity == 0.0


def test_mmr_parameters_are_validated_with_their_names(gen):
    with pytest.raises(ValueError, match="mmr_lambda"):
        gen.search("x y z", SearchParams(mmr=True, mmr_lambda=1.5))
    with pytest.raises(ValueError, match="mmr_same_doc_penalty"):
        gen.search("x y z", SearchParams(mmr=True, mmr_same_doc_penalty=float("nan")))


def test_lambda_while_mmr_off_logs_a_warning(gen, caplog):
    gen.search("search", SearchParams(mmr=False, mmr_lambda=0.3))
    assert any("MMR is off" in r.message for r in caplog.records)


# ---------------------------------------------------------------- parent retriever


def test_parent_retriever_expands_and_recomputes_spans(gen):
    plain = gen.search("compost soil", SearchParams(limit=3))
    expanded = gen.search("compost soil", SearchParams(limit=3, parent_retriever=True, explain=True))
    assert [h.chunk_id for h in expanded.results] == [h.chunk_id for h in plain.results]
    assert [h.score for h in expanded.results] == [h.score for h in plain.results]
    for before, after in zip(plain.results, expanded.results, strict=True):
        ef = after.expanded_from
        assert ef is not None
        assert len(after.content) >= len(before.content)
        assert after.content[ef.hit_start : ef.hit_end] == before.content
        for s in after.match_spans or ():
            assert after.content[s.start : s.end].lower() in ("compost", "soil")
        assert after.trace.parent
    assert '"expanded_from"' in expanded.to_json()


# ---------------------------------------------------------------- reranker


def _with_reranker(gen, **changes) -> Engine:
    return Engine(gen.kb_path, replace(gen.config, reranker=replace(gen.config.reranker, **changes)), gen.index_dir)


def test_blend_one_is_groove_the_raw_cross_encoder_score_replaces_the_fused_one(gen, cross_encoder):
    plain = gen.search("tokio runtime tasks", SearchParams(limit=5, explain=True))
    eng = _with_reranker(gen, blend=1.0)
    try:
        rr = eng.search("tokio runtime tasks", SearchParams(limit=5, reranker=cross_encoder, explain=True))
    finally:
        eng.close()
    assert rr.reranked and len(rr.results) == 5
    scores = [h.score for h in rr.results]
    assert scores == sorted(scores, reverse=True)
    assert all(h.trace.rerank_score == pytest.approx(h.score, rel=1e-6) for h in rr.results)
    assert [h.trace.rerank_rank for h in rr.results] == [1, 2, 3, 4, 5]
    assert scores != [h.score for h in plain.results]
    # The pool is the fused top [reranker] pool (20): every reranked hit came from there.
    assert all(h.trace.rrf_rank <= 20 for h in rr.results)


def test_default_blend_mixes_z_scored_cross_encoder_and_fused_scores(gen, cross_encoder):
    from groove_tui.engine.stages.rerank import blend_scores

    assert gen.config.reranker.blend == 0.5
    eng = _with_reranker(gen, pool=10)
    try:
        resp = eng.search("tokio runtime tasks", SearchParams(limit=10, reranker=cross_encoder, explain=True))
    finally:
        eng.close()
    hits = resp.results
    assert len(hits) == 10 and all(h.trace.rerank_blend == 0.5 for h in hits)
    # recompute every hit's score by hand from its two inputs, over the whole pool of 10
    ce = np.array([h.trace.rerank_score for h in hits], dtype=np.float64)
    fused = np.array([h.trace.rrf_score for h in hits], dtype=np.float64)
    expected = 0.5 * (ce - ce.mean()) / ce.std() + 0.5 * (fused - fused.mean()) / fused.std()
    np.testing.assert_allclose([h.score for h in hits], expected, rtol=1e-5, atol=1e-6)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert blend_scores([3.0, 1.0], [0.1, 0.9], 1.0) == [3.0, 1.0]  # groove's
    assert blend_scores([3.0, 1.0], [0.1, 0.9], 0.0) == [-1.0, 1.0]  # the fused order alone
    assert blend_scores([2.0, 2.0], [0.5, 0.5], 0.5) == [0.0, 0.0]  # flat pools do not divide by zero


def test_reranker_with_mmr_reranks_the_whole_pool(gen, cross_encoder):
    resp = gen.search("search ranking", SearchParams(limit=4, reranker=cross_encoder, mmr=True, explain=True))
    assert len(resp.results) == 4 and all(h.trace.mmr is not None for h in resp.results)


def test_unavailable_reranker_never_breaks_a_search(gen, no_waiting):
    plain = gen.search("tokio", SearchParams())
    resp = gen.search("tokio", SearchParams(reranker="BAAI/bge-reranker-base"))
    # the fused results, exactly as without a reranker, and one line that says why and what to pull
    assert [h.chunk_id for h in resp.results] == [h.chunk_id for h in plain.results]
    assert [h.score for h in resp.results] == [h.score for h in plain.results]
    assert not resp.reranked
    assert "BAAI/bge-reranker-base" in resp.rerank_skipped and "groove-tui models pull bge-base" in resp.rerank_skipped
    assert "\n" not in resp.rerank_skipped and resp.rerank_skipped in resp.warnings
    assert json.loads(resp.to_json())["rerank_skipped"] == resp.rerank_skipped
    assert no_waiting == {"sleep": [], "connect": []}  # no retry, no hub: it gave up at once


def test_rerank_by_default_from_config(gen, cross_encoder):
    cfg = replace(gen.config, reranker=RerankerConfig(model=cross_encoder, rerank_by_default=True))
    eng = Engine(gen.kb_path, cfg, gen.index_dir)
    try:
        assert eng.default_params().reranker == cross_encoder
    finally:
        eng.close()
    cfg = replace(cfg, reranker=RerankerConfig(model=cross_encoder, rerank_by_default=False))
    eng = Engine(gen.kb_path, cfg, gen.index_dir)
    try:
        assert eng.default_params().reranker is None
    finally:
        eng.close()


# ---------------------------------------------------------------- cache


def test_settings_change_reuses_retrieval(gen, monkeypatch, cross_encoder):
    gen.search("vector embeddings search", SearchParams(limit=5, mmr=True, mmr_lambda=0.5))
    calls = {"embed": 0, "sql": 0}
    embedder = gen.embedder()
    real_embed = embedder.embed_query

    def counting_embed(text):
        calls["embed"] += 1
        return real_embed(text)

    monkeypatch.setattr(embedder, "embed_query", counting_embed)
    real_vec = gen._searcher._vector_leg

    def counting_vec(*a, **k):
        calls["sql"] += 1
        return real_vec(*a, **k)

    monkeypatch.setattr(gen._searcher, "_vector_leg", counting_vec)
    for lam in (0.1, 0.4, 0.9):
        resp = gen.search("vector embeddings search", SearchParams(limit=5, mmr=True, mmr_lambda=lam))
        assert resp.timings_ms["vector"] == 0.0
    gen.search("vector embeddings search", SearchParams(limit=5, mmr=True, mmr_lambda=0.3, parent_retriever=True))
    assert calls == {"embed": 0, "sql": 0}
    # Reranker scores are cached per (model, query, chunk) too.
    gen.search("vector embeddings search", SearchParams(limit=5, mmr=True, reranker=cross_encoder))
    reranker = gen._reranker(cross_encoder)
    monkeypatch.setattr(reranker, "score", lambda *a, **k: pytest.fail("reranker re-ran on a warm cache"))
    gen.search("vector embeddings search", SearchParams(limit=5, mmr=True, mmr_lambda=0.2, reranker=cross_encoder))


def test_cache_is_invalidated_by_reindex(tmp_path):
    kb = generated_kb(tmp_path / "kb", docs=4)
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index()
        before = eng.search("tokio runtime", SearchParams(limit=50, min_quality=0))
        (kb / "new.md").write_text(
            "## Tokio\n\ntokio runtime tokio runtime tokio runtime, all about the tokio runtime.\n"
        )
        eng.index()
        after = eng.search("tokio runtime", SearchParams(limit=50, min_quality=0))
        assert "new.md" in {h.path for h in after.results} - {h.path for h in before.results}


# ---------------------------------------------------------------- cancellation


def test_cancel_between_stages(gen, monkeypatch):
    ev = threading.Event()
    real = gen._searcher._fuse

    def fuse_then_cancel(*a, **k):
        out = real(*a, **k)
        ev.set()
        return out

    monkeypatch.setattr(gen._searcher, "_fuse", fuse_then_cancel)
    with pytest.raises(SearchCancelled):
        gen.search("brand new query for cancel", SearchParams(limit=5), cancel=ev)


def test_cancel_interrupts_a_running_sqlite_statement(gen, monkeypatch):
    """The event set while the FTS statement runs stops it through SQLite's progress handler."""
    ev = threading.Event()
    real = gen._searcher._excluded_ids

    def exclusions_then_cancel(pq):
        out = real(pq)
        ev.set()  # arrives just before the FTS leg's statement starts
        return out

    monkeypatch.setattr(gen._searcher, "_excluded_ids", exclusions_then_cancel)
    monkeypatch.setattr("groove_tui.engine.retrieve.searcher._check", lambda cancel: None)  # only SQLite can notice now
    with pytest.raises(SearchCancelled):
        gen.search("section document search ranking", SearchParams(limit=5), cancel=ev)
    # The connection is usable afterwards.
    assert gen.search("section document", SearchParams(limit=3)).results


@pytest.mark.parametrize(
    ("stage", "later", "params"),
    [
        ("_retrieve", "_fuse", SearchParams(limit=5)),
        ("_fuse", "_mmr", SearchParams(limit=5, mmr=True)),
        ("_mmr", "_to_hit", SearchParams(limit=5, mmr=True)),
        ("_fuse", "_to_hit", SearchParams(limit=5)),
    ],
)
def test_a_cancel_is_observed_between_stages(gen, monkeypatch, stage, later, params):
    """Behaviour, not latency (`groove-tui bench` measures that): a cancel that arrives during a stage
    stops the search before the next stage starts."""
    ev = threading.Event()
    searcher = gen._searcher
    real = getattr(searcher, stage)

    def then_cancel(*a, **kw):
        out = real(*a, **kw)
        ev.set()
        return out

    def must_not_run(*a, **kw):
        raise AssertionError(f"{later} ran after the cancel")

    monkeypatch.setattr(searcher, stage, then_cancel)
    monkeypatch.setattr(searcher, later, must_not_run)
    with pytest.raises(SearchCancelled):
        gen.search("section document search ranking", params, cancel=ev)
