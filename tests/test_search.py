"""Engine.search end to end on real SQLite + sqlite-vec (hashing embedder)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groove_tui.engine import SearchCancelled, SearchParams
from groove_tui.engine.analysis.query import QueryError
from groove_tui.engine.retrieve.filters import FilterError
from groove_tui.engine.retrieve.fusion import confidence_reading

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


def test_a_re_run_with_another_lambda_reuses_the_hits_spans(engine, monkeypatch):
    """Moving λ re-shows mostly the same hits for the same query: their spans come from the cache,
    equal to computing them again; a query or a text the cache has not seen is computed."""
    from groove_tui.engine.retrieve import searcher as searcher_module
    from groove_tui.engine.stages.spans import match_spans

    first = engine.search("tokio runtime", SearchParams(limit=5, mmr=True, mmr_lambda=0.5))
    computed = []
    real = searcher_module._spans
    monkeypatch.setattr(searcher_module, "_spans", lambda *a: computed.append(a[1]) or real(*a))
    again = engine.search("tokio runtime", SearchParams(limit=5, mmr=True, mmr_lambda=0.9))
    seen = {h.content for h in first.results}
    assert [c for c in computed if c in seen] == []
    for hit in again.results:
        expected = match_spans("tokio runtime", hit.content, words=("tokio", "runtime"))
        assert [(s.start, s.end) for s in hit.match_spans or ()] == expected
    engine.search("tokio", SearchParams(limit=5, mmr=True, mmr_lambda=0.9))
    assert computed, "another query's spans are computed, not taken from the cache"


def test_a_re_run_with_another_lambda_reuses_the_fusion_and_each_search_owns_its_traces(engine, monkeypatch):
    """The same legs fuse the same way: moving λ re-uses the fused candidates and MMR's vectors, and the
    answer equals a search that fused and read them afresh. MMR writes its rows into the traces of the
    candidates it picks, never into the remembered ones."""
    from groove_tui.engine.retrieve import searcher as searcher_module

    explained = SearchParams(limit=5, mmr=True, mmr_lambda=0.5, explain=True)
    engine.search("tokio runtime", explained)
    fused, read = [], []
    real = searcher_module.fuse
    monkeypatch.setattr(searcher_module, "fuse", lambda *a: fused.append(1) or real(*a))
    real_vectors = engine._searcher.vectors_of
    monkeypatch.setattr(engine._searcher, "vectors_of", lambda ids: read.append(ids) or real_vectors(ids))
    again = engine.search("tokio runtime", SearchParams(limit=5, mmr=True, mmr_lambda=0.9, explain=True))
    assert fused == [] and read == [], "the same legs fused again, or MMR's vectors read again"
    assert any(h.trace is not None and h.trace.mmr is not None for h in again.results)
    kept = [c for _rows, candidates in engine._searcher.fused_cache._data.values() for c in candidates]
    assert kept and not any("mmr" in c.trace for c in kept), "MMR wrote into the remembered fusion"
    for cache in (engine._searcher.fused_cache, engine._searcher.spans_cache, engine._searcher.mmr_inputs):
        cache.clear()
    fresh = engine.search("tokio runtime", SearchParams(limit=5, mmr=True, mmr_lambda=0.9, explain=True))
    assert fused == [1]
    assert fresh.results == again.results


def test_forgetting_results_makes_the_next_search_run_every_stage_but_the_embedding(engine, monkeypatch):
    """What a benchmark's cold search relies on: after `forget_results(query_vectors=False)` the legs,
    the named-section lookup, the fusion and the spans all run again; only the query vector is kept, and
    without `query_vectors=False` it goes too."""
    from groove_tui.engine.retrieve import searcher as searcher_module

    params = SearchParams(limit=5)
    first = engine.search("tokio runtime", params)
    vector = engine._searcher.query_vectors.get("tokio runtime")
    assert vector is not None
    ran: list[str] = []
    for name in ("fuse", "_spans", "look_up_named"):
        real = getattr(searcher_module, name)
        monkeypatch.setattr(searcher_module, name, lambda *a, _n=name, _r=real, **k: ran.append(_n) or _r(*a, **k))
    real_leg = engine._searcher._fts_leg
    monkeypatch.setattr(engine._searcher, "_fts_leg", lambda *a, **k: ran.append("fts") or real_leg(*a, **k))
    engine._searcher.forget_results(query_vectors=False)
    again = engine.search("tokio runtime", params)
    assert {"fts", "fuse", "_spans", "look_up_named"} <= set(ran), ran
    assert again.results == first.results
    assert engine._searcher.query_vectors.get("tokio runtime") is vector, "the query was embedded again"
    engine._searcher.forget_results()
    assert engine._searcher.query_vectors.get("tokio runtime") is None


def test_with_the_query_vector_at_hand_the_vector_leg_runs_after_the_full_text_on_one_thread(engine, monkeypatch):
    import threading

    params = SearchParams(limit=5)
    first = engine.search("tokio runtime", params)  # embedded: the vector side on a pool thread
    threads: list[str] = []
    real = engine._searcher._vector_side
    monkeypatch.setattr(
        engine._searcher,
        "_vector_side",
        lambda *a, **k: threads.append(threading.current_thread().name) or real(*a, **k),
    )
    handlers: list[object] = []  # the search thread's progress handlers: cancellation holds to the end

    class Recording:
        def __init__(self, conn):
            self._conn = conn

        def set_progress_handler(self, handler, n):
            handlers.append(handler)
            return self._conn.set_progress_handler(handler, n)

        def __getattr__(self, name):
            return getattr(self._conn, name)

    real_conn = engine.store.conn
    main = threading.current_thread()
    monkeypatch.setattr(
        engine.store, "conn", lambda: Recording(real_conn()) if threading.current_thread() is main else real_conn()
    )
    engine._searcher.forget_results(query_vectors=False)
    again = engine.search("tokio runtime", params, cancel=threading.Event())
    assert threads == [threading.current_thread().name]
    assert again.results == first.results and [h.score for h in again.results] == [h.score for h in first.results]
    assert handlers and handlers[-1] is None and all(h is not None for h in handlers[:-1]), handlers


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
    assert confidence_reading([0.6, 0.1, 0.1, 0.1], 1.5).low is False
    assert confidence_reading([0.3] * 4, 1.5).low is True
    assert confidence_reading([0.3], 1.5).low is False
    assert confidence_reading([0.3] * 4, 0.0).low is False
    assert confidence_reading([-1.0, -2.0], 1.5).low is False


def test_low_confidence_at_exactly_the_ratio_is_not_low():
    """groove §D.8: max/mean *below* the ratio. Exactly at it (3/2 = 1.5, exact in f32) is not low."""
    assert confidence_reading([3.0, 1.0], 1.5).low is False
    assert confidence_reading([3.0, 1.0], 1.5000001).low is True  # the next f32 above 1.5
    assert confidence_reading([3.0, 1.0], 1.4999999).low is False


def test_dbsf_low_confidence_needs_a_flat_page_a_best_hit_that_does_not_stand_out_and_a_near_tie():
    # two families of weight 1: a hit at mean + 3 sd in both scores 2.0, the line between sure and unsure;
    # one sd of a family's window is 1/6
    assert confidence_reading([1.9, 1.8, 1.7], 1.5, 2.0, 2).low is True  # flat, nothing stands out, a near tie
    assert confidence_reading([1.7, 2.1, 1.0], 1.5, 2.0, 2).low is False  # max, not the first (MMR reorders)
    assert confidence_reading([2.0, 1.9], 1.5, 2.0, 2).low is False  # exactly at the top of the range is sure
    # groove's max/mean calls this page flat (2.2 / 2.03 < 1.5), but its best hit is far above its windows
    assert confidence_reading([2.2, 2.0, 1.9], 1.5).low is True
    assert confidence_reading([2.2, 2.0, 1.9], 1.5, 2.0, 2).low is False
    # under the top of the range, yet the page is not flat: one hit leads the rest by far
    assert confidence_reading([1.8, 0.3, 0.2], 1.5).low is False
    assert confidence_reading([1.8, 0.3, 0.2], 1.5, 2.0, 2).low is False
    # flat and under the top, but the first leads the second by more than one sd: not a tie
    assert confidence_reading([1.9, 1.7, 1.5, 1.5], 1.5).low is True
    assert confidence_reading([1.9, 1.7, 1.5, 1.5], 1.5, 2.0, 2).low is False
    assert confidence_reading([1.9, 1.75, 1.5, 1.5], 1.5, 2.0, 2).low is True  # a lead of .15 < 1/6
    # the sd is a family's: with one family answering (full 1.0) a lead of .15 is under 1/6 too, .2 is not
    assert confidence_reading([0.9, 0.75, 0.7], 1.5, 1.0, 1).low is True
    assert confidence_reading([0.95, 0.75, 0.7], 1.5, 1.0, 1).low is False
    # and with both families answering at weight 0.5 (full 1.0, one sd 1/12), a lead of .1 is no tie
    assert confidence_reading([0.9, 0.8, 0.75], 1.5, 1.0, 2).low is False
    assert confidence_reading([0.3, 0.2], 0.0, 2.0, 2).low is False  # ratio 0 turns the flag off everywhere
    assert confidence_reading([0.3], 1.5, 2.0, 2).low is False  # one hit: nothing to compare with
    assert confidence_reading([0.3, 0.2], 1.5, 0.0, 0).low is False  # no leg returned anything


def test_answering_families_count_the_full_text_legs_once_and_skip_a_zero_weight():
    from groove_tui.engine.retrieve.candidates import Legs
    from groove_tui.engine.retrieve.fusion import _answering_families
    from groove_tui.settings.config import FusionConfig

    hit = ((1, -1.0),)

    def legs(vector=(), fts=(), bigram=(), word=()):
        return Legs(vector=vector, fts=fts, rows={}, embed_ms=0.0, vector_ms=0.0, fts_ms=0.0, bigram=bigram, word=word)

    f = FusionConfig()
    assert _answering_families(legs(vector=((1, 0.1),), fts=hit, bigram=hit, word=hit), f) == 2
    assert _answering_families(legs(fts=hit, word=hit), f) == 1
    assert _answering_families(legs(vector=((1, 0.1),)), f) == 1
    assert _answering_families(legs(), f) == 0
    assert _answering_families(legs(vector=((1, 0.1),), fts=hit), FusionConfig(vector_weight=0.0)) == 1
    assert _answering_families(legs(vector=((1, 0.1),), fts=hit), FusionConfig(fts_weight=0.0)) == 1


def test_the_confidence_reading_shows_each_test_and_its_line():
    from groove_tui.engine.retrieve.fusion import confidence_reading

    tie = confidence_reading([1.9, 1.75, 1.5, 1.5], 1.5, 2.0, 2)
    assert (tie.rule, tie.low, tie.is_flat, tie.under_full, tie.near_tie) == ("dbsf", True, True, True, True)
    assert tie.best == 1.9 and tie.full == 2.0 and tie.tie_line == pytest.approx(1 / 6)
    assert tie.lead == pytest.approx(0.15) and tie.flat == pytest.approx(1.9 / 1.6625, rel=1e-6)
    lead = confidence_reading([1.9, 1.7, 1.5, 1.5], 1.5, 2.0, 2)  # flat and under the top, but no tie
    assert (lead.low, lead.is_flat, lead.under_full, lead.near_tie) == (False, True, True, False)
    shuffled = confidence_reading([1.7, 1.9, 1.5], 1.5, 2.0, 2)  # MMR's order: the best two, wherever they are
    assert shuffled.best == 1.9 and shuffled.lead == pytest.approx(0.2)
    groove = confidence_reading([0.3] * 4, 1.5)
    assert (groove.rule, groove.low, groove.is_flat, groove.flat) == ("groove", True, True, 1.0)
    assert groove.best is None and groove.to_json() == {
        "rule": "groove",
        "low": True,
        "ratio": 1.5,
        "flat": 1.0,
        "is_flat": True,
    }
    lonely = confidence_reading([0.3], 1.5, 2.0, 2)
    assert lonely.low is False and lonely.flat is None and lonely.lead is None
    silent = confidence_reading([0.3, 0.2], 1.5, 0.0, 0)
    assert silent.low is False and silent.tie_line is None and not silent.under_full


def test_low_confidence_under_dbsf_flags_look_alike_pages_not_a_unique_answer(tmp_path):
    """tldr-like short pages: a how-to shared by twenty look-alike pages has no right first hit; the one
    page that names a rare tool does. Under RRF groove's rule is kept as it is."""
    from groove_tui.engine import Engine

    files = {
        f"tools/tool{i}.md": f"# tool{i}\n\n> A command line tool number {i}.\n\n"
        f"- Display the help of the tool:\n\n`tool{i} --help`\n"
        for i in range(20)
    }
    files["tools/zebra.md"] = (
        "# zebracopy\n\n> Copy zebra striped archives between quagga hosts.\n\n"
        "- Copy an archive:\n\n`zebracopy src dst`\n"
    )
    write_kb(tmp_path / "kb", files)
    eng = Engine.open(tmp_path / "kb", config=hashing_config(), index_dir=tmp_path / "idx")
    eng.index()
    try:
        shared = eng.search("Display the help of the tool", SearchParams(limit=10, fusion="dbsf"))
        unique = eng.search("copy zebra striped archives between quagga hosts", SearchParams(limit=10, fusion="dbsf"))
        assert len(shared.results) == 10 and shared.low_confidence is True
        assert unique.results[0].path == "tools/zebra.md" and unique.low_confidence is False
        rrf = eng.search("Display the help of the tool", SearchParams(limit=10, fusion="rrf"))
        assert rrf.low_confidence is confidence_reading([h.score for h in rrf.results], 1.5).low
        # the reading behind each verdict is the response's own: its tests, on its scores
        for resp in (shared, unique):
            c = resp.confidence
            assert c is not None and c.rule == "dbsf" and c.low is resp.low_confidence
            assert c.low is (c.is_flat and c.under_full and c.near_tie)
            scores = sorted((h.score for h in resp.results), reverse=True)
            assert c.best == scores[0] and c.lead == scores[0] - scores[1]
        assert shared.confidence.near_tie and not unique.confidence.under_full
        assert rrf.confidence is not None and rrf.confidence.rule == "groove"
        assert rrf.confidence.low is rrf.low_confidence
        # the banner says which reading flagged the page
        from groove_tui.output.textout import format_response

        assert "[low_confidence: the first two hits are nearly tied and neither stands out" in format_response(
            shared, color=False
        )
        assert "low_confidence" not in format_response(unique, color=False)
        flat = format_response(dataclasses.replace(rrf, low_confidence=True), color=False)
        assert "[low_confidence: no result stands out — the first hit may well be wrong]" in flat
    finally:
        eng.close()


def test_scores_are_in_order_and_json_keeps_them_in_f32(engine):
    resp = engine.search("notes", SearchParams(limit=10, min_quality=0))
    scores = [h.score for h in resp.results]
    assert scores == sorted(scores, reverse=True)
    assert json.loads(resp.to_json())["results"][0]["score"] == pytest.approx(scores[0], rel=1e-6)


def _row(cid: int, doc: int, path: str | None = None, index: int = 0):
    from groove_tui.engine.index.store import CandidateRow

    return CandidateRow(
        cid, doc, index, "H", 2, f"text {cid}", 10, 1.0, None, 1, 0, path or f"d{doc}.md", None, None, None, None, ()
    )


@pytest.mark.parametrize("method", ["rrf", "dbsf", "relative"])
def test_fusion_ties_break_by_path_then_position_not_chunk_id(engine, method):
    """A real tie: each chunk is first in one leg and second in the other, so every method sums the same
    two terms for both (under RRF 1/61 + 1/62). The path decides, then the position in the note, whichever
    leg put a chunk first and whatever its id (ids follow the edit history, a fresh build renumbers)."""
    from groove_tui.engine.retrieve.candidates import Legs

    cases = (
        ({7: _row(7, 1, "a.md"), 3: _row(3, 2, "b.md")}, [7, 3]),  # a.md before b.md, though 3 < 7
        ({7: _row(7, 1, "b.md"), 3: _row(3, 2, "a.md")}, [3, 7]),
        ({7: _row(7, 1, "n.md", index=0), 3: _row(3, 1, "n.md", index=4)}, [7, 3]),  # one note: position
    )
    for rows, expected in cases:
        for vector, fts in (
            (((7, 0.1), (3, 0.2)), ((3, -2.0), (7, -1.0))),
            (((3, 0.1), (7, 0.2)), ((7, -2.0), (3, -1.0))),
        ):
            legs = Legs(vector=vector, fts=fts, rows=rows, embed_ms=0.0, vector_ms=0.0, fts_ms=0.0)
            fused = engine._searcher._fuse(legs, None, False, method=method)
            assert [c.row.chunk_id for c in fused] == expected
            assert fused[0].score == fused[1].score  # it is a tie


QUERY_ALPHABET = st.sampled_from(
    [
        *list("abcxyz \"'*^():-,.!?\\/[]{}<>NEAROTD\x00\t\n\u3000あいう検索設定ランキング東京é🙂"),
        "NEAR",
        "AND",
        "OR",
        "NOT",
        "heading:",
        "content:",
        "NEAR(",
        '""',
        "-",
        "*",
        "^",
    ]
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
        with contextlib.suppress(QueryError):
            engine.search(q, SearchParams(limit=3))
    with pytest.raises(QueryError):
        engine.search("x" * 10_000)


def test_dbsf_low_confidence_full_score_weighs_each_leg_by_its_own_weight():
    """The dbsf banner's `full` (a hit at the top of every family's window) sums each returning family's
    own weight, so counting the full-text family with the vector weight fails here; the full-text legs
    count once, however many of them return candidates."""
    from groove_tui.engine.retrieve.candidates import Legs
    from groove_tui.engine.retrieve.fusion import _fused_weight
    from groove_tui.settings.config import FusionConfig

    f = FusionConfig(vector_weight=2.0, fts_weight=0.5)
    hit = ((1, -1.0),)

    def legs(vector=(), fts=(), bigram=()):
        return Legs(vector=vector, fts=fts, rows={}, embed_ms=0.0, vector_ms=0.0, fts_ms=0.0, bigram=bigram)

    assert _fused_weight(legs(vector=((1, 0.1),), fts=hit), f) == 2.5
    assert _fused_weight(legs(vector=((1, 0.1),), fts=hit, bigram=hit), f) == 2.5
    assert _fused_weight(legs(fts=hit, bigram=hit), f) == 0.5  # the bigram leg is a full-text leg
    assert _fused_weight(legs(bigram=hit), f) == 0.5
    assert _fused_weight(legs(vector=((1, 0.1),)), f) == 2.0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    quality=st.one_of(
        st.floats(0.0, 1.0),
        st.sampled_from([0.3, 0.30000001192092896, 0.29999998211860657, 0.2999999999, 0.30000000001]),
    ),
    threshold=st.sampled_from([None, 0.0, 0.3, 0.7]),
    tags=st.sampled_from([(), ("rust",)]),
)
def test_a_legs_row_check_is_the_filters_own(engine, quality, threshold, tags):
    """The legs check each candidate with a check made once per search (no filter; the quality threshold
    alone, at its float32 edge too; any other filter): it passes exactly the rows the filter accepts."""
    from dataclasses import replace

    searcher = engine._searcher
    for params in (SearchParams(min_quality=threshold), SearchParams(min_quality=threshold, tags_any=["rust"])):
        doc_filter = searcher.doc_filter(params)
        row = replace(_row(1, 1), quality_score=quality, tags=tags)
        assert searcher._acceptor(doc_filter)(row) == searcher._accept(row, doc_filter)
        assert searcher._acceptor(doc_filter)(None) is False
