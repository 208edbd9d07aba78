"""The full-text tables' bm25 statistics never drift.

bm25 reads each table's stored totals (row count, tokens per column) and each row's size. Whatever
sequence of adds, edits, renames, deletes and forced rebuilds an index went through, its full-text and
hybrid results — scores and ties included — must equal those of a fresh build of the same KB.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groove_tui.engine import Engine

from helpers import hashing_config, write_kb

WORDS = [
    "tokio",
    "runtime",
    "async",
    "future",
    "pinning",
    "sqlite",
    "trigram",
    "vector",
    "index",
    "search",
    "ranking",
    "fusion",
    "chunk",
    "heading",
    "parser",
    "summary",
    "detail",
    "network",
    "storage",
    "memory",
    "thread",
    "worker",
    "東京",
    "設定",
    "検索",
    "評価",
    "再ランキング",
]
QUERIES = [
    "tokio",
    "sqlite vector",
    "ranking fusion",
    "memory thread worker",
    "設定",
    "東京の検索",
    "index -chunk",
    "引っ越し",
    '"東京都の設定"',
]
# Japanese sentences for the word table's analyzer (tests/fixtures/sudachi-tiny): words, particles,
# auxiliaries, spelling variants of one normalized word (引越し / 引っ越し, ユーザ / ユーザー)
JAPANESE = [
    "東京都の設定を変更します。",
    "ユーザの引越し",
    "引っ越しの手続きは",
    "京都と大阪",
    "検索の結果です",
    "再ランキングの評価",
    "ユーザーの辞書",
]


def _text(rng: random.Random, vocabulary: list[str] = WORDS) -> str:
    sections = []
    for s in range(rng.randint(1, 3)):
        words = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(12, 40)))
        sections.append(f"## Section {s} {rng.choice(vocabulary)}\n\n{words}.\n")
    return "\n".join(sections)


def _results(eng: Engine) -> list:
    out = []
    for q in QUERIES:
        for legs in ("fts", "hybrid"):
            resp = eng.search(q, eng.default_params(limit=1000, legs=legs))
            hits = sorted((-h.score, h.path, h.chunk_index) for h in resp.results)  # chunk ids differ by history
            out.append((q, legs, hits))
    return out


def _bm25(eng: Engine) -> list:
    """Raw bm25 of every matching row of each table, by (path, chunk_index)."""
    conn = eng.store.conn()
    out = []
    for table, expr in (
        ("fts_chunks", '"ing"'),
        ("fts_chunks", '"tok"'),
        ("fts_bigram", '"東京"'),
        ("fts_words", '"tokio"'),
        ("fts_words", '"searching"'),
        ("fts_words", '"東京都"'),  # Japanese words: only with the dictionary
        ("fts_words", '"引っ越し"'),
    ):
        rows = conn.execute(
            f"SELECT d.path, c.chunk_index, bm25({table}) FROM {table} f JOIN chunks c ON c.id = f.rowid "
            f"JOIN documents d ON d.id = c.document_id WHERE {table} MATCH ? ORDER BY 1, 2",
            (expr,),
        ).fetchall()
        out.append((table, rows))
    return out


def _fresh(kb: Path, root: Path) -> Engine:
    idx = root / "fresh"
    shutil.rmtree(idx, ignore_errors=True)
    eng = Engine.open(kb, config=hashing_config(), index_dir=idx)
    eng.index()
    return eng


def _assert_like_fresh(eng: Engine, kb: Path, root: Path) -> None:
    with _fresh(kb, root) as fresh:
        assert _bm25(eng) == _bm25(fresh)
        assert _results(eng) == _results(fresh)


def _step(rng: random.Random, kb: Path, op: str, vocabulary: list[str] = WORDS) -> bool:
    """Apply one change to the KB; False when it is a forced re-index instead."""
    files = sorted(p for p in kb.rglob("*.md"))
    if op == "force":
        return False
    if op == "add" or not files:
        (kb / f"n{rng.randrange(10_000)}.md").write_text(_text(rng, vocabulary))
    elif op == "edit":
        rng.choice(files).write_text(_text(rng, vocabulary))
    elif op == "rename":
        src = rng.choice(files)
        src.rename(kb / f"moved{rng.randrange(10_000)}.md")
    elif op == "delete":
        rng.choice(files).unlink()
    return True


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    ops=st.lists(st.sampled_from(["add", "edit", "rename", "delete", "force"]), min_size=1, max_size=8),
)
def test_full_text_and_hybrid_results_equal_a_fresh_build(tmp_path_factory, seed, ops):
    rng = random.Random(seed)
    root = tmp_path_factory.mktemp("drift")
    kb = write_kb(root / "kb", {f"d{i}.md": _text(rng) for i in range(6)})
    with Engine.open(kb, config=hashing_config(), index_dir=root / "idx") as eng:
        eng.index()
        for op in ops:
            force = not _step(rng, kb, op)
            eng.index(force=force)
        _assert_like_fresh(eng, kb, root)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    ops=st.lists(st.sampled_from(["add", "edit", "rename", "delete", "force", "dictionary"]), min_size=1, max_size=8),
)
def test_the_japanese_word_table_follows_every_change_exactly(tmp_path_factory, japanese_dictionary, seed, ops):
    # With the Japanese dictionary pulled (a tiny one), and with it removed and pulled again between runs
    # ("dictionary": the next engine opens without it, or with it again, and rebuilds the word table).
    rng = random.Random(seed)
    root = tmp_path_factory.mktemp("ja-drift")
    vocabulary = WORDS + JAPANESE
    kb = write_kb(root / "kb", {f"d{i}.md": _text(rng, vocabulary) for i in range(6)})
    parked = root / "parked"
    eng = Engine.open(kb, config=hashing_config(), index_dir=root / "idx")
    try:
        eng.index()
        assert eng.store.japanese is not None and eng.store.words_current()
        for op in ops:
            if op == "dictionary":
                eng.close()
                if japanese_dictionary.exists():
                    japanese_dictionary.rename(parked)
                else:
                    parked.rename(japanese_dictionary)
                eng = Engine.open(kb, config=hashing_config(), index_dir=root / "idx")
                eng.index()
                continue
            force = not _step(rng, kb, op, vocabulary)
            eng.index(force=force)
        assert eng.store.words_current()
        _assert_like_fresh(eng, kb, root)
    finally:
        eng.close()
        if parked.exists():
            parked.rename(japanese_dictionary)


def test_forced_rebuilds_and_deletes_keep_the_row_count(tmp_path):
    rng = random.Random(7)
    kb = write_kb(tmp_path / "kb", {f"d{i}.md": _text(rng) for i in range(10)})
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index()
        eng.index(force=True)  # a DELETE-based rebuild would leave the table believing it held twice its rows
        for p in sorted(kb.glob("*.md"))[:4]:
            p.unlink()
        for p in sorted(kb.glob("*.md"))[:3]:
            p.write_text(_text(rng))
        eng.index()
        _assert_like_fresh(eng, kb, tmp_path)


OLD_DDL = """
CREATE VIRTUAL TABLE {table} USING fts5(heading, context, content, content='', contentless_delete=1,
    tokenize='{tokenize}');
"""


def _make_drifted_legacy(eng: Engine) -> None:
    """An index as groove-tui wrote it before FULLTEXT_VERSION, after one --force: every row counted twice."""
    from groove_tui.engine.index.store import fulltext_rows

    with eng.store.transaction() as conn:
        rows = conn.execute("SELECT id, heading, context_text, content FROM chunks").fetchall()
        trigram, bigram = fulltext_rows(rows)
        for table, tokenize, values in (
            ("fts_chunks", "trigram remove_diacritics 1 case_sensitive 0", trigram),
            ("fts_bigram", "unicode61 remove_diacritics 2", bigram),
        ):
            conn.execute(f"DROP TABLE {table}")
            conn.execute(OLD_DDL.format(table=table, tokenize=tokenize))
            for _ in range(2):  # the old --force: DELETE (totals kept), then insert everything again
                conn.execute(f"DELETE FROM {table}")
                conn.executemany(f"INSERT INTO {table}(rowid, heading, context, content) VALUES (?, ?, ?, ?)", values)
        conn.execute("DELETE FROM index_meta WHERE key = 'fulltext_version'")


def test_an_existing_drifted_index_is_repaired_on_its_next_run(tmp_path):
    rng = random.Random(11)
    kb = write_kb(tmp_path / "kb", {f"d{i}.md": _text(rng) for i in range(8)})
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index()
        _make_drifted_legacy(eng)
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        with _fresh(kb, tmp_path) as fresh:
            assert _bm25(eng) != _bm25(fresh)  # the drift this repairs
        assert not eng.store.fulltext_current() and eng.needs_index()
        report = eng.index()
        assert (report.added, report.updated, report.unchanged) == (0, 0, 8)  # nothing re-parsed or re-embedded
        assert eng.store.fulltext_current() and not eng.needs_index()
        _assert_like_fresh(eng, kb, tmp_path)
        (kb / "d0.md").unlink()  # and the repaired tables stay exact
        eng.index()
        _assert_like_fresh(eng, kb, tmp_path)
