"""Golden files: parsing (errors name key and line), grades and judgments, writing them back, limits."""

from __future__ import annotations

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
    g = GoldenSet(queries=(GoldenQuery("q1", "first", (Expected("a.md"),)),))
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
