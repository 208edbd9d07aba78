"""What an eval run records (§I.4): the configuration fingerprint, comparison and regression, the run
history, and the corpus digest."""

from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from pathlib import Path

import pytest

from groove_tui.engine.evaluate.golden import (
    Expected,
    GoldenQuery,
)
from groove_tui.engine.evaluate.history import (
    ConfigFingerprint,
    CorpusInfo,
    HistoryError,
    HistoryStore,
    compare,
    corpus_digest,
    format_delta,
    history_path_for,
    is_regression,
    make_run,
)
from groove_tui.engine.evaluate.metrics import (
    Aggregate,
    QueryResult,
    RankedHit,
    aggregate,
    evaluate_query,
)
from groove_tui.engine.types import SearchParams
from groove_tui.settings.config import Config, FusionConfig, SearchConfig

# ================================================================ fingerprint

FP = ConfigFingerprint(model="m", reranker=None, limit=10, k_values=(1, 5, 10), golden_hash="ab")


def test_fingerprint_minimal_json():
    assert FP.to_json() == {
        "model": "m",
        "reranker": None,
        "limit": 10,
        "k_values": [1, 5, 10],
        "golden_hash": "ab",
        "metric_version": 2,
        "fts_query_version": 3,
    }


def test_fingerprint_from_settings():
    cfg = Config()
    fp = ConfigFingerprint.from_settings(
        cfg, SearchParams(), model="m", limit=10, k_values=(1, 5, 10), golden_hash="ab", context_static=False
    )
    # Our defaults differ from groove: the bigram and word legs, merged parts and distribution-based
    # score fusion.
    j = fp.to_json()
    assert {k: v for k, v in j.items() if k != "fusion"} == {
        **FP.to_json(),
        "cjk_bigram": True,
        "merge_parts": True,
        "heading_first": True,
        "word_leg": True,
    }
    off = ConfigFingerprint.from_settings(
        cfg,
        SearchParams(word_leg=False),
        model="m",
        limit=10,
        k_values=(1, 5, 10),
        golden_hash="ab",
        context_static=False,
    )
    assert "word_leg" not in off.to_json()  # a run without the word leg is not compared with one with it
    assert j["fusion"]["method"] == "dbsf" and j["fusion"]["rrf_k"] == 60.0
    groove = ConfigFingerprint.from_settings(
        cfg,
        SearchParams(fusion="rrf"),
        model="m",
        limit=10,
        k_values=(1, 5, 10),
        golden_hash="ab",
        context_static=False,
    )
    assert "fusion" not in groove.to_json(), "groove's RRF is the baseline, so it is not spelled out"

    cfg = replace(cfg, search=SearchConfig(cjk_bigram=False, merge_parts=False, fusion=FusionConfig(rrf_k=30.0)))
    params = SearchParams(mmr=True, mmr_lambda=0.5, parent_retriever=True, reranker="rr")
    j = ConfigFingerprint.from_settings(
        cfg, params, model="m", limit=10, k_values=(1, 5, 10), golden_hash="ab", context_static=True
    ).to_json()
    assert "cjk_bigram" not in j and "merge_parts" not in j
    assert j["reranker"] == "rr"
    assert j["mmr"] == {"lambda": 0.5, "same_doc_penalty": 0.0}
    assert j["parent_retriever"] == {"whole_doc_threshold_tokens": 100, "max_expanded_tokens": 2000}
    assert j["fusion"]["rrf_k"] == 30.0 and j["fusion"]["bm25_heading_weight"] == 2.0
    assert j["context"] == {"mode": "static"}
    assert json.loads(json.dumps(j)) == j


# ================================================================ comparison and regression


def agg(recall: dict[int, float], mrr: float, ndcg: dict[int, float]) -> Aggregate:
    return Aggregate(recall, mrr, ndcg, 3)


def run_with(fp: ConfigFingerprint, a: Aggregate) -> dict:
    return make_run(fp, CorpusInfo(1, 2, "d"), [], a, timestamp="2024-01-01T00:00:00Z")


def test_compare_requires_equal_fingerprints():
    now = agg({1: 0.5}, 0.5, {1: 0.5})
    assert compare(None, FP, now, 0.05) is None
    assert compare(run_with(replace(FP, golden_hash="cd"), now), FP, now, 0.05) is None
    assert compare(run_with(replace(FP, mmr=(0.7, 0.0)), now), FP, now, 0.05) is None
    old_style = run_with(FP, now)
    del old_style["fingerprint"]["fts_query_version"]  # an older run: no longer comparable
    assert compare(old_style, FP, now, 0.05) is None
    c = compare(run_with(FP, now), FP, now, 0.05)
    assert c is not None and not c.is_regression
    assert c.recall_delta == {1: 0.0} and c.mrr_delta == 0.0
    assert c.previous_timestamp == "2024-01-01T00:00:00Z"


def test_compare_deltas_and_missing_k():
    prev = run_with(FP, agg({1: 0.5}, 0.5, {1: 0.5}))
    c = compare(prev, FP, agg({1: 0.75, 5: 0.25}, 0.25, {1: 0.5, 5: 0.5}), 0.05)
    assert c is not None
    assert c.recall_delta == {1: 0.25, 5: 0.25}  # k=5 missing in prev counts as 0
    assert c.mrr_delta == -0.25 and c.is_regression


def test_regression_threshold_edge():
    prev = agg({1: 0.75}, 0.75, {1: 0.75})
    assert not is_regression(prev, agg({1: 0.5}, 0.75, {1: 0.75}), 0.25)  # exactly the threshold: not beyond
    assert is_regression(prev, agg({1: 0.4375}, 0.75, {1: 0.75}), 0.25)
    assert is_regression(prev, agg({1: 0.75}, 0.4375, {1: 0.75}), 0.25)
    assert is_regression(prev, agg({1: 0.75}, 0.75, {1: 0.4375}), 0.25)
    assert not is_regression(prev, agg({1: 1.0}, 1.0, {1: 1.0}), 0.0)  # improvements never regress
    assert not is_regression(agg({1: math.nan}, math.nan, {1: 0.75}), agg({1: 0.0}, 0.0, {1: 0.75}), 0.05)
    assert is_regression(agg({}, 0.0, {}), agg({5: 0.0}, 0.0, {}), -0.5)  # missing prev k is 0, not skipped


def test_null_metrics_in_history_are_skipped():
    prev = run_with(FP, agg({1: 0.5}, 0.5, {1: 0.5}))
    prev["aggregate"]["mrr"] = None
    c = compare(prev, FP, agg({1: 0.5}, 0.0, {1: 0.5}), 0.05)
    assert c is not None and not c.is_regression and format_delta(c.mrr_delta, 0.05).text == "n/a"


def test_format_delta():
    assert format_delta(0.0, 0.05).text == "—"
    assert format_delta(5e-10, 0.05).text == "—"
    d = format_delta(0.0123, 0.05)
    assert (d.text, d.beyond_threshold) == ("↑0.012", False)
    d = format_delta(-0.034, 0.01)
    assert (str(d), d.beyond_threshold) == ("↓0.034", True)
    assert format_delta(-0.05, 0.05).beyond_threshold is False
    assert format_delta(math.nan, 0.05).text == "n/a"


# ================================================================ history


def a_run(n: int) -> dict:
    return run_with(FP, agg({1: n / 10}, 0.5, {1: 0.5}))


def test_history_newest_first_and_capped(tmp_path: Path):
    store = HistoryStore(tmp_path / "sub" / "kb.json", history_size=2)
    assert store.load() == [] and store.latest() is None
    for n in range(3):
        store.append(a_run(n))
    runs = store.load()
    assert [x["aggregate"]["recall_at_k"]["1"] for x in runs] == [0.2, 0.1]
    assert json.loads(store.path.read_text())["runs"] == runs
    assert [p.name for p in store.path.parent.iterdir()] == ["kb.json"]  # no temporary left behind


def test_history_byte_cap_drops_oldest(tmp_path: Path):
    one = len(json.dumps({"runs": [a_run(0)]}, ensure_ascii=False, indent=2))
    store = HistoryStore(tmp_path / "h.json", history_size=10, max_bytes=int(one * 2.5))
    for n in range(5):
        store.append(a_run(n))
    assert [x["aggregate"]["recall_at_k"]["1"] for x in store.load()] == [0.4, 0.3]


def test_unparseable_history_starts_fresh(tmp_path: Path, caplog):
    p = tmp_path / "h.json"
    p.write_text("{not json")
    store = HistoryStore(p)
    assert store.load() == [] and "fresh" in (store.warning or "")
    p.write_text('{"runs": 3}')
    assert HistoryStore(p).load() == []
    store.append(a_run(1))
    assert len(HistoryStore(p).load()) == 1


def test_unsafe_history_files_are_errors(tmp_path: Path):
    real = tmp_path / "real.json"
    real.write_text('{"runs": []}')
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(HistoryError, match="symlink"):
        HistoryStore(link).load()
    with pytest.raises(HistoryError, match="symlink"):
        HistoryStore(link).append(a_run(0))
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(HistoryError, match="regular"):
        HistoryStore(tmp_path / "dir.json").load()
    os.link(real, tmp_path / "hard.json")
    with pytest.raises(HistoryError, match="hard link"):
        HistoryStore(real).load()
    big = tmp_path / "big.json"
    big.write_text('{"runs": []}' + " " * 100)
    with pytest.raises(HistoryError, match="larger"):
        HistoryStore(big, max_bytes=50).load()


def test_history_lives_in_the_data_dir_not_the_kb(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    kb = tmp_path / "kb"
    kb.mkdir()
    p = history_path_for(kb)
    assert p.parent.name == "eval-history" and p.suffix == ".json"
    assert kb not in p.parents
    assert p == history_path_for(kb / ".")  # same KB, same key


def test_run_record_shape_and_end_to_end(tmp_path: Path):
    q = GoldenQuery("q1", "query", (Expected("a.md", "S"),))
    hits = (*tuple(RankedHit(i, f"{i}.md", None, 1.0 / i) for i in range(1, 12)), RankedHit(12, "a.md", "S", math.nan))
    res = QueryResult(q, hits, evaluate_query(q, hits, FP.k_values))
    a = aggregate([res.metrics], FP.k_values)
    run = make_run(FP, CorpusInfo(3, 7, corpus_digest([])), [res], a)
    assert set(run) == {"timestamp", "fingerprint", "corpus", "per_query", "aggregate"}
    assert run["timestamp"].endswith("Z") and "T" in run["timestamp"]
    pq = run["per_query"][0]
    assert pq["expected"] == [{"path": "a.md", "heading": "S"}]
    assert len(pq["top_k"]) == 10 and pq["top_k"][0] == {"rank": 1, "path": "1.md", "heading": None, "score": 1.0}
    assert pq["metrics"] == {
        "recall_at_k": {"1": 0.0, "5": 0.0, "10": 0.0},
        "reciprocal_rank": 1 / 12,
        "ndcg_at_k": {"1": 0.0, "5": 0.0, "10": 0.0},
    }
    assert run["aggregate"]["query_count"] == 1 and run["aggregate"]["mrr"] == 1 / 12
    store = HistoryStore(tmp_path / "h.json")
    store.append(run)
    c = compare(store.latest(), FP, a, 0.05)
    assert c is not None and not c.is_regression and c.previous == a


# ================================================================ corpus digest


def test_corpus_digest():
    import hashlib

    rows = [("a.md", 0, None, "text", None), ("a.md", 1, "H", "more", "A > H")]
    d = corpus_digest(rows)
    assert d == corpus_digest(iter(rows)) and len(d) == 64
    assert corpus_digest([]) == hashlib.sha256(b"").hexdigest()
    assert d != corpus_digest(rows[::-1])  # order is part of it
    assert corpus_digest([("a", 0, None, "x", None)]) != corpus_digest([("a", 0, "", "x", None)])  # null ≠ ""
    assert corpus_digest([("ab", 0, None, "c", None)]) != corpus_digest([("a", 0, None, "bc", None)])
    assert corpus_digest([("a", 0, "x", "", None)]) != corpus_digest([("a", 0, None, "", "x")])
    assert corpus_digest([("a", 1, None, "x", None)]) != corpus_digest([("a", 2, None, "x", None)])
