"""The reranker stage: the language guard, a reranker that never breaks a search, one pool with and without
MMR (so settings changes re-rank from cache), progress and cancellation between batches, and its knobs."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from groove_tui.engine import Engine, SearchCancelled, SearchParams
from groove_tui.engine.analysis.scripts import scripts_in, uncovered_reason
from groove_tui.engine.stages.rerank import clear_reranker_cache
from groove_tui.settings.config import ConfigError, RerankerConfig, parse_config

from helpers import hashing_config, write_kb
from tinymodels import build_tiny_cross_encoder

DOCS = {
    "en/db.md": "# Databases\n\n## Index\n\nA database index makes queries fast on large tables.\n\n"
    "## Search\n\nFull text search with vector embeddings ranks documents.\n",
    "en/garden.md": "# Garden\n\n## Soil\n\nCompost makes garden soil rich; search the garden for worms.\n",
    "en/rust.md": "# Rust\n\n## Tokio\n\nRust async runtimes such as tokio spawn tasks; search the docs.\n",
    "ja/tokyo.md": (
        "# 東京\n\n## 天気\n\n東京の天気は夏に暑く冬に寒いです。検索します。\n\n"
        "## 設定\n\n設定ファイルを編集して検索します。\n"
    ),
    "ja/cat.md": "# 猫\n\n## マット\n\n猫がマットの上に座っていました。検索の例です。\n",
    # enough English sections that every pool below fills up
    **{
        f"en/notes{i}.md": f"# Notes {i}\n\n## Search notes {i}\n\nNotes number {i} on how search ranks "
        f"documents, gardens and databases, with enough words to pass the quality filter {i}.\n"
        for i in range(10)
    },
}


@pytest.fixture(scope="module")
def ce_dir(tmp_path_factory) -> Path:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("ce"))


def english_only(ce: Path, tmp: Path) -> Path:
    """The tiny cross-encoder declaring English only, as a pulled ms-marco-l12 does."""
    folder = tmp / "ce-en"
    if not folder.exists():
        folder.mkdir()
        for p in ce.iterdir():
            (folder / p.name).write_bytes(p.read_bytes())
        (folder / "groove-model.json").write_text(
            json.dumps({"name": "tiny-en", "kind": "reranker", "languages": ["en"]})
        )
    return folder


@pytest.fixture
def make_engine(tmp_path: Path):
    opened = []

    def make(reranker: RerankerConfig | None = None) -> Engine:
        kb = write_kb(tmp_path / "kb", DOCS) if not (tmp_path / "kb").exists() else tmp_path / "kb"
        cfg = hashing_config()
        if reranker is not None:
            cfg = replace(cfg, reranker=reranker)
        eng = Engine.open(kb, config=cfg, index_dir=tmp_path / "idx")
        if not opened:
            eng.index()
        opened.append(eng)
        return eng

    yield make
    for e in opened:
        e.close()
    clear_reranker_cache()


def ids_scores(resp):
    return [(h.chunk_id, h.score) for h in resp.results]


def test_scripts() -> None:
    assert scripts_in("rust -async 2024!") == {"latin"}
    assert scripts_in("東京の天気") == {"cjk", "kana"}
    assert scripts_in("Ｔｏｋｙｏ ｶﾀｶﾅ") == {"latin", "kana"}
    assert scripts_in("Привет мир") == {"cyrillic"}
    assert scripts_in("  123 … ✓ 🎉 ") == frozenset()
    assert uncovered_reason("database index", ("en",), "m") is None
    assert uncovered_reason("東京 database", ("multilingual",), "m") is None
    assert uncovered_reason("東京 database", (), "m") is None  # nothing declared: no guard
    reason = uncovered_reason("東京の天気", ("en",), "ms-marco-l12")
    assert reason == (
        "the query uses CJK (Chinese/Japanese), Japanese kana script, which ms-marco-l12 (en) does not cover"
    )
    assert uncovered_reason("東京", ("ja",), "m") is None and uncovered_reason("서울", ("ja",), "m") is not None
    # a few Greek letters in an English claim are English science, not Greek; any CJK is not English
    assert uncovered_reason("NF-κB signaling and IL-1β in TNF-α knockout mice", ("en",), "m") is None
    assert uncovered_reason("Привет мир", ("en",), "m") is not None  # a Russian sentence
    assert uncovered_reason("the 設定 file", ("en",), "m") is not None


def test_language_guard_keeps_the_fused_order_exactly(make_engine, ce_dir, tmp_path) -> None:
    eng = make_engine()
    model = str(english_only(ce_dir, tmp_path))
    plain = eng.search("東京の天気", SearchParams(limit=5))
    guarded = eng.search("東京の天気", SearchParams(limit=5, reranker=model, explain=True))
    assert ids_scores(guarded) == ids_scores(plain) and plain.results
    assert not guarded.reranked and "rerank" not in guarded.timings_ms
    assert guarded.rerank_skipped.startswith("not reranked: the query uses CJK")
    assert guarded.warnings == ()  # a guard is not a failure
    out = json.loads(guarded.to_json())
    assert (
        out["rerank_skipped"] == guarded.rerank_skipped and out["explain"]["rerank_skipped"] == guarded.rerank_skipped
    )
    english = eng.search("database search", SearchParams(limit=5, reranker=model))
    assert english.reranked and english.rerank_skipped is None
    assert "rerank_skipped" not in json.loads(english.to_json())


def test_languages_any_forces_the_reranker(make_engine, ce_dir, tmp_path) -> None:
    eng = make_engine(RerankerConfig(languages=("any",)))
    resp = eng.search("東京の天気", SearchParams(limit=5, reranker=str(english_only(ce_dir, tmp_path))))
    assert resp.reranked and resp.rerank_skipped is None
    # and a configured list overrides the model's own declaration
    eng = make_engine(RerankerConfig(languages=("ja",)))
    assert eng.search("東京の天気", SearchParams(limit=5, reranker=str(english_only(ce_dir, tmp_path)))).reranked
    eng = make_engine(RerankerConfig(languages=("ru",)))
    assert not eng.search("東京の天気", SearchParams(limit=5, reranker=str(english_only(ce_dir, tmp_path)))).reranked


def test_a_reranker_failing_mid_run_leaves_the_fused_results(make_engine, ce_dir, monkeypatch) -> None:
    eng = make_engine()
    plain = eng.search("database search", SearchParams(limit=3))
    from groove_tui.engine.stages.rerank import get_reranker

    reranker = get_reranker(str(ce_dir))

    def broken(*_a, **_k):
        raise RuntimeError("onnxruntime: bad allocation\nwith a second line")

    monkeypatch.setattr(reranker, "score", broken)
    resp = eng.search("database search", SearchParams(limit=3, reranker=str(ce_dir)))
    assert not resp.reranked and [h.chunk_id for h in resp.results] == [h.chunk_id for h in plain.results]
    assert len(resp.results) == 3
    assert resp.rerank_skipped == f"reranker {reranker.model_id} failed: onnxruntime: bad allocation with a second line"
    assert resp.warnings == (resp.rerank_skipped + "; showing the fused order",)


def test_one_pool_with_and_without_mmr_so_toggles_cost_no_model_calls(make_engine, ce_dir, monkeypatch) -> None:
    eng = make_engine(RerankerConfig(pool=12))
    from groove_tui.engine.stages.rerank import get_reranker

    reranker = get_reranker(str(ce_dir))
    scored: list[int] = []
    real = reranker.score

    def counting(query, docs, progress=None, cancel=None):
        scored.append(len(docs))
        return real(query, docs, progress=progress, cancel=cancel)

    monkeypatch.setattr(reranker, "score", counting)
    base = SearchParams(limit=3, reranker=str(ce_dir), explain=True)
    first = eng.search("search", base)
    assert scored == [12]  # the configured pool, not groove's max(5·limit, 50)
    assert max(h.trace.rerank_rank for h in first.results) <= 3
    for params in (
        replace(base, mmr=True),
        replace(base, mmr=True, mmr_lambda=0.3),
        replace(base, parent_retriever=True),
        replace(base, mmr=True, mmr_same_doc_penalty=0.5),
    ):
        resp = eng.search("search", params)
        assert resp.reranked and len(resp.results) == 3
    assert scored == [12]  # every later run re-ranked from the score cache


def test_progress_is_reported_and_a_cancel_stops_between_batches(make_engine, ce_dir) -> None:
    eng = make_engine(RerankerConfig(pool=11, batch_size=4))
    seen: list[tuple[str, int, int]] = []
    eng.search("search", SearchParams(limit=3, reranker=str(ce_dir)), progress=lambda *a: seen.append(a))
    assert seen == [("rerank", 0, 11), ("rerank", 4, 11), ("rerank", 8, 11), ("rerank", 11, 11)]
    cancel = threading.Event()
    calls: list[tuple[str, int, int]] = []

    def cancel_after_first_batch(stage: str, done: int, total: int) -> None:
        calls.append((stage, done, total))
        if done >= 4:
            cancel.set()

    with pytest.raises(SearchCancelled):
        eng.search(
            "garden soil", SearchParams(limit=3, reranker=str(ce_dir)), cancel=cancel, progress=cancel_after_first_batch
        )
    assert calls == [("rerank", 0, 11), ("rerank", 4, 11)]  # the second batch never ran
    # nothing half-scored was cached as if complete: the next run scores the rest and succeeds
    again = eng.search("garden soil", SearchParams(limit=3, reranker=str(ce_dir)))
    assert again.reranked


def test_batching_and_truncation_do_not_reorder_scores(ce_dir) -> None:
    from groove_tui.engine.stages.rerank import RerankerSettings, load_reranker

    docs = ["a database index", "the cat sat on the mat", "tokio spawns tasks", "garden soil"] * 3
    a = load_reranker(str(ce_dir), RerankerSettings(batch_size=1)).score("database", docs)
    b = load_reranker(str(ce_dir), RerankerSettings(batch_size=5)).score("database", docs)
    # padding a batch changes float accumulation in the last bits, so compare with an absolute floor too:
    # a score near zero moved by 1e-7 (1.5e-5 relative) in one CI run
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert np.argsort(-a[:4]).tolist() == np.argsort(-b[:4]).tolist()  # the four distinct passages keep their order
    # a passage longer than max_tokens is cut to it: its score equals that of its first tokens
    long = "database index " * 400
    short = load_reranker(str(ce_dir), RerankerSettings(max_tokens=16))
    assert short.score("database", [long])[0] == pytest.approx(short.score("database", [long[:200]])[0], rel=1e-5)


def test_reranker_config_keys_are_validated() -> None:
    cfg = parse_config(
        {"reranker": {"model": "ms-marco-l12", "pool": 20, "max_tokens": 128, "threads": 2, "languages": ["en", "de"]}}
    )
    rr = cfg.reranker
    assert (rr.model, rr.pool, rr.max_tokens, rr.threads, rr.languages) == ("ms-marco-l12", 20, 128, 2, ("en", "de"))
    assert parse_config({"reranker": {"languages": "any"}}).reranker.languages == ("any",)
    assert parse_config({}).reranker == RerankerConfig()
    for key, value, words in (
        ("pool", 0, "[1, 1000]"),
        ("max_tokens", 8, "[16, 8192]"),
        ("threads", -1, "[0, 256]"),
        ("languages", ["english"], "language codes"),
        ("languages", [], "language codes"),
        ("pool", 2.5, "an integer"),
    ):
        with pytest.raises(ConfigError) as info:
            parse_config({"reranker": {key: value}})
        assert f"reranker.{key}" in str(info.value) and words in str(info.value)
