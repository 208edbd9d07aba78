"""Engine.search end to end on real SQLite + sqlite-vec (hashing embedder)."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groove_tui.engine import Engine, SearchCancelled, SearchParams
from groove_tui.engine.filters import FilterError
from groove_tui.engine.query import QueryError
from groove_tui.engine.search import _low_confidence

from helpers import hashing_config, write_kb


def paths(resp):
    return [h.path for h in resp.results]


def test_keyword_and_vector_legs_find_the_right_notes(engine):
    resp = engine.search("tokio runtime", SearchParams(limit=3))
    assert resp.results[0].path == "notes/rust/async.md"
    assert resp.results[0].heading == "Tokio runtime"
    assert set(resp.timings_ms) >= {"embed", "vector", "fts", "fuse", "spans", "total"}


def test_match_spans_are_character_offsets_and_json_uses_bytes(engine):
    resp = engine.search("設定", SearchParams(limit=5))
    hit = next(h for h in resp.results if h.heading == "設定")
    assert hit.match_spans, "Japanese queries get highlights (our deviation from groove)"
    for s in hit.match_spans:
        assert hit.content[s.start : s.end] == "設定"
    data = json.loads(resp.to_json())
    entry = next(r for r in data["results"] if r["heading"] == "設定")
    raw = entry["content"].encode("utf-8")
    for span in entry["match_spans"]:
        assert raw[span["start"] : span["end"]].decode("utf-8") == "設定"


def test_response_json_has_groove_shape(engine):
    data = json.loads(engine.search("sqlite", SearchParams(limit=2)).to_json())
    assert list(data) == ["results", "low_confidence", "filter_applied"]
    hit = data["results"][0]
    assert list(hit)[:8] == ["score", "path", "title", "heading", "topic", "date", "tags", "content"]
    assert "expanded_from" not in hit and "explain" not in data


def test_exclusions_drop_chunks_from_both_legs(engine):
    base = engine.search("runtime tasks", SearchParams(limit=10, min_quality=0))
    assert any("tokio" in h.content.lower() for h in base.results)
    resp = engine.search("runtime tasks -tokio", SearchParams(limit=10, min_quality=0))
    assert resp.results, "other chunks still match"
    assert all("tokio" not in h.content.lower() for h in resp.results)
    assert resp.filter_applied["excluded_terms"] == ["tokio"]
    assert resp.query.match_expr == '("runtime" OR "tasks") NOT ("tokio")'


def test_exclusion_only_query_is_a_clear_error(engine):
    with pytest.raises(QueryError, match="query has no positive term"):
        engine.search("-tokio")


def test_over_long_query_is_a_clear_error(engine):
    with pytest.raises(QueryError, match="1024"):
        engine.search("x" * 1025)


def test_filters(engine):
    assert set(paths(engine.search("notes", SearchParams(path_globs=("notes/**",), min_quality=0)))) <= {
        "notes/rust/async.md",
        "notes/python/sqlite.md",
    }
    r = engine.search("search", SearchParams(tags_any=("python",)))
    assert paths(r) and set(paths(r)) == {"notes/python/sqlite.md"}
    assert r.filter_applied == {"tags_any": ["python"]}
    r = engine.search("async", SearchParams(date_from="2026-02-01"))
    assert set(paths(r)) == {"notes/rust/async.md"}
    r = engine.search("search", SearchParams(path_globs=("!notes/**",), min_quality=0))
    assert not any(p.startswith("notes/") for p in paths(r))
    with pytest.raises(FilterError):
        engine.search("x y z", SearchParams(path_globs=()) if False else SearchParams(path_globs=("[",)))
    with pytest.raises(FilterError):
        engine.search("async", SearchParams(date_from="March"))


def test_limit_zero_and_blank_query(engine):
    assert engine.search("tokio", SearchParams(limit=0)).results == ()
    assert engine.search("   ", SearchParams()).results == ()


def test_two_char_query_runs_vector_only(engine):
    resp = engine.search("ab", SearchParams(limit=3))
    assert resp.query.match_expr is None and len(resp.results) == 3


def test_explain_fills_traces(engine):
    resp = engine.search("tokio runtime", SearchParams(limit=3, explain=True))
    t = resp.results[0].trace
    assert t is not None and t.rrf_score is not None and (t.vector_rank or t.fts_rank)
    data = json.loads(resp.to_json())
    assert "explain" in data and data["explain"]["query"]["match_expr"]


def test_cancelled_search_raises(engine):
    ev = threading.Event()
    ev.set()
    with pytest.raises(SearchCancelled):
        engine.search("tokio", SearchParams(), cancel=ev)


def test_low_confidence_rule():
    assert _low_confidence([0.6, 0.1, 0.1, 0.1], 1.5) is False
    assert _low_confidence([0.3] * 4, 1.5) is True
    assert _low_confidence([0.3], 1.5) is False
    assert _low_confidence([0.3] * 4, 0.0) is False
    assert _low_confidence([-1.0, -2.0], 1.5) is False


def test_rrf_ties_break_by_chunk_id_and_scores_are_f32(engine):
    resp = engine.search("notes", SearchParams(limit=10, min_quality=0))
    scores = [h.score for h in resp.results]
    assert scores == sorted(scores, reverse=True)
    assert json.loads(resp.to_json())["results"][0]["score"] == pytest.approx(scores[0], rel=1e-6)


QUERY_ALPHABET = st.sampled_from(
    list('abcxyz "\'*^():-,.!?\\/[]{}<>NEAROTD\x00\t\n　あいう検索設定ランキング東京é🙂')
    + ["NEAR", "AND", "OR", "NOT", "heading:", "content:", "NEAR(", '""', "-", "*", "^"]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(QUERY_ALPHABET, max_size=40).map("".join) | st.text(max_size=60))
def test_fuzz_any_query_returns_results_or_a_clear_error(engine, query):
    try:
        resp = engine.search(query, SearchParams(limit=5))
    except QueryError as exc:
        assert str(exc)
    else:
        for h in resp.results:
            for s in h.match_spans or ():
                assert 0 <= s.start < s.end <= len(h.content)


def test_fuzz_long_strings(engine):
    for q in ("a" * 1024, "検" * 341, "NEAR(" * 200, '"' * 1024, "\x00" * 1000):
        try:
            engine.search(q, SearchParams(limit=3))
        except QueryError:
            pass
    with pytest.raises(QueryError):
        engine.search("x" * 10_000)
