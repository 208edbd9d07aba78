"""Evaluation: golden files, §I.2 metrics (hand-computed), fingerprint, history, regression, digest."""

from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from groove_tui.engine.evaluate import golden as ev
from groove_tui.engine.evaluate.golden import (
    Expected,
    GoldenError,
    GoldenQuery,
    GoldenSet,
    dump_golden,
    load_golden,
    parse_golden,
    save_golden,
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
from groove_tui.engine.types import SearchParams
from groove_tui.settings.config import Config, FusionConfig, SearchConfig

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


# ================================================================ golden parsing

GOOD = """\
# my golden file
defaults: {limit: 10, rerank: false}
queries:
  - id: rrf-basics
    query: "how does fusion work"
    expected:
      - path: "docs/ARCHITECTURE.md"
        heading: "Data flow"
    tags: [x, y]
  - query: "a query that is definitely longer than thirty-two characters"
    expected: []
"""


def golden_error(text: str, **kw) -> GoldenError:
    with pytest.raises(GoldenError) as info:
        parse_golden(text, source="g.yml", **kw)
    return info.value


def test_parse_good_file():
    g = parse_golden(GOOD, source="g.yml")
    q1, q2 = g.queries
    entry = Expected("docs/ARCHITECTURE.md", "Data flow")
    assert q1 == GoldenQuery("rrf-basics", "how does fusion work", (entry,), tags=("x", "y"))
    assert q1.line == 4
    assert q2.id == "a query that is definitely longe"  # first 32 characters
    assert q2.expected == ()
    assert g.defaults == ev.GoldenDefaults(limit=10, rerank=False)
    assert g.header == ("# my golden file",)
    assert g.groove_compatible


def test_plain_scalars_are_strings_like_serde():
    g = parse_golden("queries:\n  - id: 0\n    query: 123\n    expected:\n      - path: 2024.md\n        heading: ~\n")
    assert g.queries[0] == GoldenQuery("0", "123", (Expected("2024.md", None),))


def test_unknown_key_names_key_and_line():
    text = GOOD.replace('        heading: "Data flow"\n', '        heading: "Data flow"\n        relevance: 2\n')
    err = golden_error(text)
    assert err.line == 9 and err.key == "relevance"
    assert str(err).startswith("g.yml:9: ")
    assert "'relevance'" in str(err) and "expected entry" in str(err)


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ("queries: []\nversion: 2\n", 2, "version"),
        ("defaults: {limit: 3, top: 1}\nqueries: []\n", 1, "top"),
        ("queries:\n  - id: q\n    query: x\n    expected: []\n    note: hi\n", 5, "note"),
    ],
)
def test_unknown_keys_everywhere(text, line, key):
    err = golden_error(text)
    assert (err.line, err.key) == (line, key)


def test_missing_required_keys():
    err = golden_error("queries:\n  - id: q1\n    expected: []\n")
    assert (err.line, err.key) == (2, "query") and "missing required key 'query'" in str(err)
    err = golden_error("queries:\n  - query: x\n")
    assert (err.line, err.key) == (2, "expected")
    err = golden_error("queries:\n  - query: x\n    expected:\n      - heading: H\n")
    assert (err.line, err.key) == (4, "path")
    err = golden_error("defaults: {limit: 3}\n")
    assert err.key == "queries"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("queries:\n  - query: [a, b]\n    expected: []\n", "query"),
        ("queries:\n  - query: ~\n    expected: []\n", "query"),
        ("queries:\n  - query: x\n    expected: a.md\n", "expected"),
        ("queries:\n  - query: x\n    expected:\n", "expected"),  # null is not a list
        ("queries:\n  - query: x\n    expected:\n      - path: {a: 1}\n", "path"),
        ("queries: {a: 1}\n", "queries"),
        ("defaults: {limit: many}\nqueries: []\n", "limit"),
        ("defaults: {rerank: 3}\nqueries: []\n", "rerank"),
        ("queries:\n  - query: x\n    tags: tagged\n    expected: []\n", "tags"),
    ],
)
def test_bad_types(text, key):
    err = golden_error(text)
    assert err.key == key and err.line is not None and f"'{key}'" in str(err)


def test_not_a_mapping_and_empty():
    assert "expected a mapping" in str(golden_error("- a\n- b\n"))
    assert "empty golden file" in str(golden_error(""))
    assert "expected a mapping" in str(golden_error("queries:\n  - just a string\n"))


def test_duplicate_key_is_an_error():
    err = golden_error("queries:\n  - query: x\n    query: y\n    expected: []\n")
    assert (err.line, err.key) == (3, "query") and "duplicate" in str(err)


def test_a_duplicate_query_id_is_refused_naming_the_id_and_both_lines():
    text = (
        "queries:\n"
        "  - id: q1\n    query: tokio\n    expected: [{path: a.md}]\n"
        "  - id: q2\n    query: sqlite\n    expected: [{path: b.md}]\n"
        "  - id: q1\n    query: pinning\n    expected: [{path: a.md}]\n"
    )
    err = golden_error(text)
    assert (err.line, err.key) == (8, "id")
    assert str(err) == (
        "g.yml:8: duplicate query id 'q1': the queries at lines 2 and 8 both have it; give one of them another id"
    )
    # no `id:`: both take the first 32 characters of the query as their id, and the message says so
    long = "how does the tokio runtime schedule"
    err = golden_error(
        f"queries:\n  - query: {long} tasks\n    expected: []\n  - query: {long} timers\n    expected: []\n"
    )
    assert err.line == 4 and f"duplicate query id {long[:32]!r}: the queries at lines 2 and 4" in str(err)
    assert "neither has an `id:`" in str(err) and "give one of them an `id:`" in str(err)
    err = golden_error("queries:\n  - id: tokio\n    query: a\n    expected: []\n  - query: tokio\n    expected: []\n")
    assert "lines 2 and 5" in str(err) and "one has no `id:`" in str(err)
    # distinct ids load
    assert [
        q.id for q in parse_golden(text.replace("id: q1\n    query: pinning", "id: q3\n    query: pinning")).queries
    ] == ["q1", "q2", "q3"]


def test_a_judged_new_query_whose_default_id_is_taken_gets_its_own_and_the_file_loads_again():
    long = "how does the tokio runtime schedule"
    g = parse_golden(f"queries:\n  - query: {long} tasks\n    expected: []\n")
    g = g.with_judgment(f"{long} timers", "a.md", None, 1)
    assert [q.id for q in g.queries] == [long[:32], long[:32] + " (2)"]
    assert [q.id for q in parse_golden(dump_golden(g)).queries] == [q.id for q in g.queries]


def test_eval_refuses_a_golden_file_with_a_duplicate_id_in_one_line(engine, tmp_path, capsys):
    from groove_tui.cli import main

    golden = tmp_path / "dup.yml"
    golden.write_text(
        "queries:\n  - id: q1\n    query: tokio\n    expected: [{path: notes/rust/async.md}]\n"
        "  - id: q1\n    query: sqlite\n    expected: [{path: notes/python/sqlite.md}]\n",
        encoding="utf-8",
    )
    code = main(
        [
            "eval",
            str(engine.kb_path),
            "--model",
            "hashing",
            "--index-dir",
            str(engine.index_dir.parent),
            "--golden",
            str(golden),
            "--no-history",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert f"{golden}:5: duplicate query id 'q1': the queries at lines 2 and 5" in err


def test_bad_yaml_has_a_line_number():
    err = golden_error('queries:\n  - query: "unterminated\n    expected: []\n  - [\n')
    assert err.line is not None and "invalid YAML" in str(err) and str(err).startswith("g.yml:")
    err = golden_error("queries:\n  - query: x\n   expected: []\n")
    assert err.line == 3
    err = golden_error('queries:\n  - query: x\n    expected: []\n  - query: "bell \x07"\n')
    assert err.line == 4 and "invalid YAML" in str(err)


def test_file_limits(tmp_path: Path):
    body = b"queries: []\n"
    exact = tmp_path / "exact.yml"
    exact.write_bytes(body + b"#" * (ev.GOLDEN_MAX_BYTES - len(body) - 1) + b"\n")
    assert load_golden(exact).queries == ()
    big = tmp_path / "big.yml"
    big.write_bytes(exact.read_bytes() + b"\n")
    with pytest.raises(GoldenError, match="1 MiB") as info:
        load_golden(big)
    assert str(big) in str(info.value)
    bad = tmp_path / "bad.yml"
    bad.write_bytes(b"queries:\n  - query: \xff\n")
    with pytest.raises(GoldenError, match="UTF-8") as info:
        load_golden(bad)
    assert info.value.line == 2
    with pytest.raises(GoldenError, match="cannot read"):
        load_golden(tmp_path / "missing.yml")


def test_golden_hash_is_sha256_of_the_bytes(tmp_path: Path):
    p = tmp_path / "g.yml"
    p.write_text(GOOD, encoding="utf-8")
    import hashlib

    assert load_golden(p).sha256 == hashlib.sha256(GOOD.encode()).hexdigest()


def test_validate_query_hook_names_id_and_line():
    def no_positive(q: str) -> None:
        if q.startswith("-"):
            raise ValueError("query has no positive term: " + q)

    text = "queries:\n  - query: ok\n    expected: []\n  - id: bad-one\n    query: -foo\n    expected: []\n"
    err = golden_error(text, validate_query=no_positive)
    assert err.line == 4 and "'bad-one'" in str(err) and "query has no positive term" in str(err)
    assert parse_golden(text.replace("-foo", "foo -bar"), validate_query=no_positive).queries[1].id == "bad-one"


# ================================================================ grades and judgments


def test_grade_key_is_ours_and_strict_mode_rejects_it():
    text = "queries:\n  - query: x\n    expected:\n      - path: a.md\n        grade: 2\n"
    g = parse_golden(text)
    assert g.queries[0].expected == (Expected("a.md", None, 2),) and not g.groove_compatible
    err = golden_error(text, strict=True)
    assert (err.line, err.key) == (5, "grade")


def test_grades_and_judgments_in_comments():
    text = (
        "queries:\n"
        "  - query: x  # grade: 1 on the query line is not an entry's\n"
        "    expected:\n"
        '      - path: "a # grade: 2.md"  # grade: 3\n'
        "        heading: Intro\n"
        "      - path: b.md\n"
        "        heading: Setup  # grade: 1\n"
        '      - path: "c.md"\n'
        "    # judged-0: d.md#Some heading\n"
        '    # judged-0: {"path": "e.md", "heading": null}\n'
        "    # judged-0: f.md\n"
    )
    q = parse_golden(text, strict=True).queries[0]
    assert q.expected == (Expected("a # grade: 2.md", "Intro", 3), Expected("b.md", "Setup", 1), Expected("c.md"))
    assert q.judged_irrelevant == (("d.md", "Some heading"), ("e.md", None), ("f.md", None))


def test_bad_grade_comment_is_an_error():
    err = golden_error("queries:\n  - query: x\n    expected:\n      - path: a.md  # grade: 7\n")
    assert (err.line, err.key) == (4, "grade")


def test_multiline_scalars_hide_comment_lookalikes():
    text = 'queries:\n  - query: "line one\n      # judged-0: z.md"\n    expected: []\n'
    q = parse_golden(text).queries[0]
    assert q.judged_irrelevant == () and q.query == "line one # judged-0: z.md"


def test_with_judgment():
    g = GoldenSet(queries=(GoldenQuery("q1", "first", (A,)),))
    g = g.with_judgment("first", "a.md", None, 3)  # existing entry: grade updated in place
    assert g.queries[0].expected == (Expected("a.md", None, 3),)
    g = g.with_judgment("first", "b.md", "Setup", 2)
    g = g.with_judgment("first", "b.md", " setup ", 1)  # same target under the hit rule
    assert g.queries[0].expected == (Expected("a.md", None, 3), Expected("b.md", "Setup", 1))
    g = g.with_judgment("first", "b.md", "Setup", 0)
    assert g.queries[0].expected == (Expected("a.md", None, 3),)
    assert g.queries[0].judged_irrelevant == (("b.md", "Setup"),)
    g = g.with_judgment("first", "b.md", "Setup", 2)  # changed their mind
    assert g.queries[0].judged_irrelevant == ()
    g = g.with_judgment("a brand new query that is longer than 32 chars", "c.md", None, 0)
    new = g.queries[1]
    assert new.id == "a brand new query that is longer" and new.expected == ()
    assert new.judged_irrelevant == (("c.md", None),)
    with pytest.raises(ValueError):
        g.with_judgment("first", "a.md", None, 4)


def test_round_trip_through_a_file_groove_can_read(tmp_path: Path):
    g = parse_golden(GOOD, source="g.yml")
    g = g.with_judgment("how does fusion work", "docs/ARCHITECTURE.md", "Data flow", 3)
    g = g.with_judgment("how does fusion work", "docs/x#y.md", 'Heading with "quotes" and #', 0)
    g = g.with_judgment("new query", "n.md", None, 2)
    path = tmp_path / "out.yml"
    digest = save_golden(path, g)
    text = path.read_text(encoding="utf-8")
    assert "# grade: 3" in text and "# judged-0:" in text
    # groove's view: no unknown keys anywhere, and grades are invisible to a plain YAML load
    plain = yaml.safe_load(text)
    assert all(set(e) <= {"path", "heading"} for q in plain["queries"] for e in q["expected"])
    assert g.sha256 is None  # edited: the old file hash no longer applies
    back = load_golden(path, strict=True)
    assert back.queries == g.queries
    assert back.defaults == g.defaults and back.header == g.header
    assert back.sha256 == digest
    assert not list(tmp_path.glob("*.tmp"))


def test_save_plain_query_list_and_refuse_oversize(tmp_path: Path):
    save_golden(tmp_path / "g.yml", [GoldenQuery("q", "x", ())])
    assert load_golden(tmp_path / "g.yml").queries == (GoldenQuery("q", "x", ()),)
    huge = [GoldenQuery(str(i), "x" * 1000, ()) for i in range(1100)]
    with pytest.raises(GoldenError, match="1 MiB"):
        save_golden(tmp_path / "huge.yml", huge)
    assert not (tmp_path / "huge.yml").exists()


def test_save_refuses_lone_surrogates(tmp_path: Path):
    with pytest.raises(GoldenError, match="surrogate"):
        save_golden(tmp_path / "g.yml", [GoldenQuery("q", "x", (Expected("bad\udcff.md"),))])
    assert not list(tmp_path.iterdir())


def test_pure_python_loader_reads_the_same(monkeypatch):
    q = GoldenQuery("q", "日本語の質問", (Expected("資料.md", "見出し", 2),), (("b.md", "x"),))
    g = GoldenSet(queries=(q,))
    text = dump_golden(g)
    fast = parse_golden(text)
    monkeypatch.setattr(ev, "_Loader", yaml.SafeLoader)
    assert parse_golden(text).queries == fast.queries == g.queries


text_field = st.text(max_size=20)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            text_field,
            text_field,
            st.lists(st.tuples(text_field, st.none() | text_field, st.none() | st.integers(0, 3)), max_size=3),
            st.lists(st.tuples(text_field, st.none() | text_field), max_size=2),
        ),
        max_size=3,
        unique_by=lambda q: q[0],  # ids are unique in a golden file
    )
)
def test_any_text_round_trips(queries):
    g = GoldenSet(
        queries=tuple(
            GoldenQuery(qid, q, tuple(Expected(*e) for e in exp), tuple(dict.fromkeys(judged)))
            for qid, q, exp, judged in queries
        )
    )
    assert parse_golden(dump_golden(g), strict=True).queries == g.queries


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
    # Our defaults differ from groove: the bigram leg, merged parts and distribution-based score fusion.
    j = fp.to_json()
    assert {k: v for k, v in j.items() if k != "fusion"} == {
        **FP.to_json(),
        "cjk_bigram": True,
        "merge_parts": True,
        "heading_first": True,
    }
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
