"""The CJK character-bigram side index (docs/groove-compatibility.md, 6): segmentation, query compilation, the
bigram full-text leg, exclusions, spans, index consistency, migration and `cjk_bigram = false`."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.analysis.bigram import SEGMENTATION_VERSION, compile_bigram, has_cjk, segment
from groove_tui.engine.stages.spans import match_spans
from groove_tui.settings.config import SearchConfig

from helpers import hashing_config, write_kb

JA_KB = {
    "tokyo.md": "# 東京\n\n## 首都\n\n東京は日本の首都です。設定ファイルを編集すると表示が変わります。\n",
    "kyoto.md": "# 京都\n\n## 観光\n\n京都には寺が多く、古都の観光で知られています。\n",
    "rust.md": "# Rust\n\n## Rust の非同期\n\nRust の非同期ランタイム tokio の設定について説明します。\n",
    "width.md": "# 幅\n\n## ｶﾞｲﾄﾞ\n\nｶﾞｲﾄﾞﾌﾞｯｸと ＡＢＣ の使い方をまとめました。\n",
    "english.md": "# Notes\n\n## Gardening\n\nTomatoes need sun, compost and regular watering in summer.\n",
}

ALL = SearchParams(limit=10, min_quality=0)
FTS = replace(ALL, legs="fts")


def open_engine(kb: Path, tmp_path: Path, cjk_bigram: bool = True, idx: str = "idx") -> Engine:
    cfg = hashing_config()
    cfg = replace(cfg, search=replace(cfg.search, cjk_bigram=cjk_bigram))
    return Engine.open(kb, config=cfg, index_dir=tmp_path / idx)


@pytest.fixture
def ja_kb(tmp_path: Path) -> Path:
    return write_kb(tmp_path / "ja", JA_KB)


@pytest.fixture
def ja(ja_kb: Path, tmp_path: Path):
    eng = open_engine(ja_kb, tmp_path)
    eng.index()
    yield eng
    eng.close()


def paths(resp) -> list[str]:
    return [h.path for h in resp.results]


def bigram_rows(eng: Engine) -> int:
    return eng.store.conn().execute("SELECT count(*) FROM fts_bigram").fetchone()[0]


def chunk_rows(eng: Engine) -> int:
    return eng.store.conn().execute("SELECT count(*) FROM chunks").fetchone()[0]


# ---------------------------------------------------------------- segmentation and compilation


def test_segment_makes_overlapping_bigrams_and_leaves_latin_alone():
    assert segment("東京都").split() == ["東京", "京都", "都"]
    assert segment("東").split() == ["東"]
    assert segment("groove.toml です").split() == ["groove.toml", "です", "す"]
    assert segment("Rust の非同期 tokio").split() == ["Rust", "の非", "非同", "同期", "期", "tokio"]
    assert segment("ラーメン").split() == ["ラー", "ーメ", "メン", "ン"]
    assert segment("한국어").split() == ["한국", "국어", "어"]
    assert segment(None) is None


def test_segment_normalises_nfkc():
    assert segment("ｶﾞｲﾄﾞ").split() == ["ガイ", "イド", "ド"]
    assert segment("ＡＢＣ") == "ABC"


def test_compile_bigram_is_none_without_cjk():
    assert compile_bigram("rust tokio -async") is None
    assert not has_cjk("café ＡＢＣ")


def test_compile_bigram_expressions():
    assert compile_bigram("設定").match_expr == '"設定"'
    assert compile_bigram("東").match_expr == '"東" *'
    assert compile_bigram("東京都の設定").match_expr == '"東京" OR "京都" OR "都の" OR "の設" OR "設定"'
    assert compile_bigram("Rust の非同期").match_expr == '"Rust" OR "の非" OR "非同" OR "同期"'
    assert compile_bigram('"東京都" 設定').match_expr == '"東京 京都" OR "設定"'
    assert compile_bigram("設定 -東京").match_expr == '("設定") NOT ("東京")'
    only_negative = compile_bigram("rust -設定")
    assert only_negative.match_expr is None and only_negative.explain == 'NOT ("設定")'


# ---------------------------------------------------------------- the full-text leg


def test_two_character_word_finds_the_chunks_that_contain_it(ja):
    resp = ja.search("設定", FTS)
    assert sorted(paths(resp)) == ["rust.md", "tokyo.md"]
    assert all("設定" in h.content for h in resp.results)
    assert resp.query.bigram_expr == '"設定"'


def test_one_character_query_matches_anywhere_in_a_run(ja):
    assert paths(ja.search("寺", FTS)) == ["kyoto.md"]
    assert paths(ja.search("首", FTS)) == ["tokyo.md"]  # first character of 首都
    # the last character of 京都 / 古都 / 首都: found through the trailing unigram
    assert set(paths(ja.search("都", FTS))) == {"kyoto.md", "tokyo.md"}


def test_sentence_query_ranks_by_bigrams_not_glued_phrases(ja):
    resp = ja.search("日本の首都はどこですか", FTS)
    assert paths(resp)[0] == "tokyo.md"
    assert "NOT" not in resp.query.bigram_expr and '"首都"' in resp.query.bigram_expr


def test_mixed_japanese_and_latin_query(ja):
    resp = ja.search("tokio の非同期", FTS)
    assert paths(resp)[0] == "rust.md"
    assert '"tokio"' in resp.query.bigram_expr


def test_half_width_katakana_and_full_width_latin_match_their_usual_forms(ja):
    hit = ja.search("ガイドブック", FTS).results[0]
    assert hit.path == "width.md"
    assert "ｶﾞｲﾄﾞﾌﾞｯｸ" in [hit.content[s.start : s.end] for s in hit.match_spans]
    hit = ja.search("ABCの使い方", FTS).results[0]
    assert hit.path == "width.md"
    assert "ＡＢＣ" in [hit.content[s.start : s.end] for s in hit.match_spans]


@pytest.mark.parametrize("legs", ["hybrid", "vector", "fts"])
def test_negative_cjk_terms_drop_chunks_in_every_leg(ja, legs):
    params = replace(ALL, legs=legs)
    assert any("東京" in h.content for h in ja.search("設定", params).results)
    resp = ja.search("設定 -東京", params)
    assert all("東京" not in h.content for h in resp.results)
    if legs == "fts":
        assert paths(resp) == ["rust.md"]
    resp = ja.search("Tomatoes compost -設定", params)  # English positive side, CJK exclusion
    assert all("設定" not in h.content for h in resp.results)
    assert resp.query.bigram_expr == 'NOT ("設定")'


def test_latin_exclusion_applies_to_the_bigram_leg(ja):
    assert "rust.md" in paths(ja.search("設定", FTS))
    assert "rust.md" not in paths(ja.search("設定 -tokio", FTS))


# ---------------------------------------------------------------- spans


def test_spans_highlight_short_cjk_terms_and_bigrams(ja):
    hit = next(h for h in ja.search("設定", FTS).results if h.path == "tokyo.md")
    assert [hit.content[s.start : s.end] for s in hit.match_spans] == ["設定"]
    hit = ja.search("日本の首都", FTS).results[0]
    assert [hit.content[s.start : s.end] for s in hit.match_spans] == ["日本の首都"]


def test_spans_are_groove_s_without_the_flag():
    content = "東京都の設定"
    assert match_spans("設定", content) == [(4, 6)]  # the whitespace fallback, as before
    assert match_spans("東京の設定", content) == []  # groove's glued phrases 東京の設定 / 東京の do not occur
    assert match_spans("東京の設定", content, cjk_bigram=True) == [(0, 2), (3, 6)]
    assert match_spans("ガイド", "ｶﾞｲﾄﾞ") == []
    assert match_spans("ガイド", "ｶﾞｲﾄﾞ", cjk_bigram=True) == [(0, 5)]


# ---------------------------------------------------------------- explain


def test_explain_shows_the_bigram_leg(ja):
    resp = ja.search("設定", replace(FTS, explain=True))
    assert resp.query.bigram_expr == '"設定"'
    data = json.loads(resp.to_json())["explain"]
    assert data["query"]["bigram_expr"] == '"設定"'
    top = data["hits"][0]
    assert top["bigram"]["rank"] == 1 and top["bigram"]["bm25"] < 0
    assert top["fusion"]["bigram_term"] > 0 and top["fts"] is None
    english = json.loads(ja.search("tomatoes", replace(ALL, explain=True)).to_json())["explain"]
    assert english["query"]["bigram_expr"] is None and "bigram" not in english["hits"][0]


# ---------------------------------------------------------------- index consistency


def test_bigram_rows_follow_edits_renames_and_deletes(ja_kb, tmp_path):
    with open_engine(ja_kb, tmp_path) as eng:
        eng.index()
        assert bigram_rows(eng) == chunk_rows(eng) > 0
        (ja_kb / "kyoto.md").unlink()
        (ja_kb / "tokyo.md").write_text("# 東京\n\n## 首都\n\n東京には皇居があります。\n", encoding="utf-8")
        (ja_kb / "rust.md").rename(ja_kb / "rust-async.md")
        report = eng.index()
        assert (report.deleted, report.updated, report.renamed) == (1, 1, 1)
        assert bigram_rows(eng) == chunk_rows(eng)
        assert eng.search("寺", FTS).results == ()  # the deleted document's terms are gone
        assert paths(eng.search("皇居", FTS)) == ["tokyo.md"]  # the edit's new terms match
        assert "tokyo.md" not in paths(eng.search("編集", FTS))  # and its old ones no longer do
        assert paths(eng.search("非同期", FTS)) == ["rust-async.md"]
        eng.index(force=True)
        assert bigram_rows(eng) == chunk_rows(eng)
        assert eng.store.bigram_ready()


def _make_legacy(eng: Engine, version: str | None) -> None:
    """Turn an index into one from before the table (version None) or with an older segmentation."""
    with eng.store.transaction() as conn:
        if version is None:
            conn.execute("DROP TABLE fts_bigram")
            conn.execute("DELETE FROM index_meta WHERE key = 'bigram_version'")
        else:
            conn.execute("INSERT INTO fts_bigram(fts_bigram) VALUES ('delete-all')")
            eng.store.set_meta("bigram_version", version, conn)


@pytest.mark.parametrize("version", [None, "0"])
def test_migration_builds_the_table_with_progress(ja_kb, tmp_path, version):
    with open_engine(ja_kb, tmp_path) as eng:
        eng.index()
        chunks = chunk_rows(eng)
        _make_legacy(eng, version)
    with open_engine(ja_kb, tmp_path) as eng:  # opening an old index works and searches with trigrams
        assert not eng.store.bigram_ready() and eng.needs_index()
        before = eng.search("設定", FTS)
        assert before.results == () and before.query.bigram_expr is None
        assert any("bigram index is not built" in w for w in before.warnings)
        seen = []
        report = eng.index(progress=seen.append)
        assert report.unchanged == len(JA_KB) and report.added == 0
        build = seen[: next(i for i, p in enumerate(seen) if p.phase == "scan")]  # before the KB walk
        assert {p.phase for p in build} == {"fulltext"}
        assert build[0].total == chunks and build[-1].done == chunks
        assert eng.store.get_meta("bigram_version") == SEGMENTATION_VERSION
        assert bigram_rows(eng) == chunks and not eng.needs_index()
        assert sorted(paths(eng.search("設定", FTS))) == ["rust.md", "tokyo.md"]


def test_fresh_and_empty_indexes_need_no_migration(tmp_path):
    kb = write_kb(tmp_path / "empty", {})
    with open_engine(kb, tmp_path) as eng:
        assert eng.store.bigram_ready()


# ---------------------------------------------------------------- cjk_bigram = false


QUERIES = ["設定", "東京の首都", "tokio の非同期", "設定 -東京", "Tomatoes -設定", "compost sun", "寺", "ガイド"]


def _snapshot(eng: Engine, query: str, legs: str) -> list[tuple]:
    resp = eng.search(query, replace(ALL, legs=legs, explain=True))
    plain = eng.search(query, replace(ALL, legs=legs))
    return [(h.path, h.chunk_id, h.score, h.match_spans, h.trace.to_json()) for h in resp.results] + [
        resp.query.bigram_expr,
        plain.to_json(),
        plain.warnings,
    ]


def test_flag_off_is_groove_with_or_without_the_table(ja_kb, tmp_path):
    with open_engine(ja_kb, tmp_path, cjk_bigram=False) as eng:
        eng.index()
        with_table = {(q, legs): _snapshot(eng, q, legs) for q in QUERIES for legs in ("hybrid", "fts")}
        _make_legacy(eng, None)  # as if the table had never existed
        eng._searcher.legs_cache.clear()
        without = {(q, legs): _snapshot(eng, q, legs) for q in QUERIES for legs in ("hybrid", "fts")}
    assert with_table == without
    assert all(snap[-3] is None for snap in with_table.values())  # no bigram_expr
    assert with_table[("設定", "fts")][:-3] == []  # groove: a 2-character word is under the trigram floor


def test_english_queries_are_the_same_with_the_flag_on(ja_kb, tmp_path):
    with open_engine(ja_kb, tmp_path, cjk_bigram=False) as off, open_engine(ja_kb, tmp_path, cjk_bigram=True) as on:
        off.index()
        for q in ("compost sun", "tomatoes -compost", "rust tokio"):
            assert _snapshot(off, q, "hybrid") == _snapshot(on, q, "hybrid")


def test_flag_defaults_on():
    assert SearchConfig().cjk_bigram is True
