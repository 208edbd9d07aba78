"""The word leg (engine/analysis/words.py): whole words, stemmed, beside the character legs — compiled
from the query as groove's compiler scans it, ranked by FTS5's porter tokenizer, fused with its own
weight, and held to the same exclusions and filters as the other legs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.analysis.words import compile_words

from helpers import hashing_config, write_kb

FTS = SearchParams(limit=10, legs="fts", min_quality=0, explain=True)


def test_a_query_compiles_to_its_words_without_stop_words():
    assert compile_words("tar").positive_expr == '"tar"'
    assert compile_words("extract the tar archive").positive_expr == '"extract" OR "tar" OR "archive"'
    assert compile_words("the who").positive_expr == '"who"'
    assert compile_words("to be or not to be").positive_expr == '"to" OR "be" OR "or" OR "not"'  # only stop words
    assert compile_words('"to be" or not').positive_expr == '"to be"'  # the phrase is something else to find
    quoted = compile_words('"extract files" -gzip tar -"foo bar"')
    assert quoted.positive_expr == '"extract files" OR "tar"'
    assert quoted.words == ("extract files", "tar")  # exclusions are the other legs' (see below)
    assert compile_words("groove.toml 東京").positive_expr == '"groove.toml"'  # CJK is the bigram leg's
    assert compile_words("東京 設定").positive_expr is None
    assert compile_words('say "hi"" there').positive_expr is not None  # groove's scanner decides the quotes


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    return write_kb(
        tmp_path_factory.mktemp("words") / "kb",
        {
            "tar.md": "# tar\n\nArchiving utility. Extract an archive with tar xf.\n",
            "target.md": "# Target\n\nSet the target of the build target. Targets and targeting.\n",
            "restart.md": "# Restart\n\nRestart a service: restart it, then restart the other.\n",
            "start.md": "# Star charts\n\nStars and starlight, a guitar and a star.\n",
            "gzip.md": "# gzip\n\nCompress with gzip, extract a tar.gz archive with tar and gzip.\n",
            "notes/extracting.md": "# Notes\n\nExtracting archives: extracted files land here.\n",
        },
    )


@pytest.fixture(scope="module")
def eng(kb, tmp_path_factory):
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path_factory.mktemp("idx")) as e:
        e.index()
        yield e


def _paths(resp) -> list[str]:
    return [h.path for h in resp.results]


def test_a_whole_word_ranks_first_where_substrings_do_not(eng):
    with_words = eng.search("tar", FTS)
    assert _paths(with_words)[0] == "tar.md"
    assert with_words.query.word_expr == '"tar"'
    top = with_words.results[0].trace
    assert top.word_leg and top.word_rank == 1 and top.rrf_word is not None
    by_path = {h.path: h.trace for h in with_words.results}
    assert by_path["target.md"].word_rank is None  # "tar" is not a word of "target"
    without = eng.search("tar", SearchParams(limit=10, legs="fts", min_quality=0, explain=True, word_leg=False))
    assert without.query.word_expr is None and not without.results[0].trace.word_leg
    assert _paths(without)[0] != "tar.md"  # the trigram leg alone prefers the many "tar" substrings


def test_words_match_by_stem(eng):
    resp = eng.search("extract archive", FTS)
    ranked = {h.path: h.trace.word_rank for h in resp.results}
    assert ranked["notes/extracting.md"] is not None  # "extracting archives" shares the stems


def test_exclusions_and_filters_hold_in_the_word_leg(eng):
    assert "gzip.md" in _paths(eng.search("tar", FTS))
    excluded = eng.search("tar -gzip", FTS)
    assert "gzip.md" not in _paths(excluded) and _paths(excluded)[0] == "tar.md"
    filtered = eng.search("extract", SearchParams(limit=10, legs="fts", min_quality=0, path_globs=("notes/*",)))
    assert _paths(filtered) == ["notes/extracting.md"]


def test_the_word_leg_switch_is_checked(eng):
    from groove_tui.engine.errors import ParamError

    with pytest.raises(ParamError, match=r"word_leg = 'yes' is invalid"):
        eng.search("tar", SearchParams(word_leg="yes"))  # type: ignore[arg-type]


def test_an_index_without_the_word_table_searches_without_it_until_indexed(kb, tmp_path):
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as e:
        e.index()
        with e.store.transaction() as conn:
            conn.execute("DROP TABLE fts_words")
            conn.execute("DELETE FROM index_meta WHERE key = 'words_version'")
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as e:
        assert not e.store.words_ready() and e.needs_index()
        before = e.search("tar", FTS)
        assert before.query.word_expr is None and before.results  # the character legs still answer
        report = e.index()
        assert report.unchanged == 6 and report.added == 0 and e.store.words_ready() and not e.needs_index()
        after = e.search("tar", FTS)
        assert after.query.word_expr == '"tar"' and _paths(after)[0] == "tar.md"


def test_a_hit_highlights_the_whole_words_the_word_leg_matched(eng):
    hit = next(h for h in eng.search("extract archive", FTS).results if h.path == "notes/extracting.md")
    lit = {hit.content[s.start : s.end] for s in hit.match_spans or ()}
    assert {"Extracting", "archives", "extracted"} <= lit
    plain = eng.search("extract archive", replace(FTS, word_leg=False)).results
    hit = next(h for h in plain if h.path == "notes/extracting.md")
    assert "Extracting" not in {hit.content[s.start : s.end] for s in hit.match_spans or ()}  # the substring only
