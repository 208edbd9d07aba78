"""The demo knowledge base shipped in the package: it indexes cleanly, its golden file resolves to notes
and sections that exist, it shows what the demo is for, and `groove-tui demo` opens it read-only."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from groove_tui.demo import GOLDEN_NAME, golden_path, kb_path
from groove_tui.engine import Engine
from groove_tui.engine.evaluate.golden import load_golden
from groove_tui.engine.types import SearchParams
from groove_tui.settings.config import Config, EmbeddingConfig

HASHING = replace(Config(), embedding=EmbeddingConfig(model="hashing"))


def kb_snapshot(root: Path) -> dict[str, tuple[str, int]]:
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def demo_engine(tmp_path_factory):
    before = kb_snapshot(kb_path())
    eng = Engine.open(kb_path(), config=HASHING, index_dir=tmp_path_factory.mktemp("demo-idx"))
    report = eng.index()
    yield eng, report
    eng.close()
    assert kb_snapshot(kb_path()) == before  # indexed and searched, never written into


def test_the_demo_kb_ships_inside_the_package_with_its_golden_file():
    import groove_tui

    assert kb_path().is_dir() and kb_path().parent.parent == Path(groove_tui.__file__).parent
    assert golden_path() == kb_path() / GOLDEN_NAME and golden_path().is_file()


def test_the_demo_kb_indexes_cleanly_with_the_hashing_embedder(demo_engine):
    _eng, report = demo_engine
    assert report.skipped == () and report.degraded == ()
    assert report.added >= 25 and report.pending_embeddings == 0 and report.embedded == report.chunks


def test_every_note_has_a_title_tags_and_a_date_and_some_are_japanese(demo_engine):
    eng, _ = demo_engine
    rows = eng.store.conn().execute("SELECT path, title, tags, date FROM documents").fetchall()
    for path, title, tags, date in rows:
        assert title and json.loads(tags) and date, path
    japanese = [p for p, *_ in rows if any("\u3040" <= ch <= "\u30ff" for ch in p)]
    assert len(japanese) >= 3
    texts = [p.read_text(encoding="utf-8") for p in kb_path().rglob("*.md")]
    assert sum("```" in t for t in texts) >= 5  # code blocks, which never split a section


def test_every_golden_entry_resolves_to_a_note_or_section_of_the_demo_kb(demo_engine):
    eng, _ = demo_engine
    golden = load_golden(golden_path())
    assert 20 <= len(golden.queries) <= 40 and golden.groove_compatible
    chunks = (
        eng.store.conn()
        .execute("SELECT d.path, c.heading FROM chunks c JOIN documents d ON d.id = c.document_id")
        .fetchall()
    )
    paths = {p for p, _h in chunks}
    sections = {(p, h.strip().lower()) for p, h in chunks if h}
    for q in golden.queries:
        assert q.expected, q.id
        for e in q.expected:
            assert e.path in paths, (q.id, e.path)
            if e.heading is not None:
                assert (e.path, e.heading.strip().lower()) in sections, (q.id, e.path, e.heading)
    assert any(any("\u3040" <= ch <= "\u9fff" for ch in q.query) for q in golden.queries)  # Japanese queries


def test_the_long_note_is_expanded_by_the_parent_retriever(demo_engine):
    eng, _ = demo_engine
    params = SearchParams(limit=10, path_globs=("ranking/parent-retriever.md",))

    def step_three(p: SearchParams):
        hits = eng.search("tag the release", p).results
        return next(h for h in hits if h.heading == "Step three: tag the release")

    alone, expanded = step_three(params), step_three(replace(params, parent_retriever=True))
    assert alone.expanded_from is None and expanded.expanded_from is not None
    # too long to come back whole: its sibling steps are merged around it, each whole
    assert expanded.expanded_from.kind == "adjacent"
    assert expanded.expanded_from.from_index < alone.chunk_index < expanded.expanded_from.to_index
    for step in ("Announce the freeze", "Run the whole suite", "When the packages are built"):  # steps 1, 2, 4
        assert step in expanded.content
    assert "Two numbers control the expansion" not in expanded.content  # the next chapter is no sibling


def test_the_bigram_leg_finds_two_character_japanese_words(demo_engine):
    eng, _ = demo_engine
    resp = eng.search("設定", SearchParams(limit=10, explain=True))
    assert "ja/設定ファイル.md" in [h.path for h in resp.results]
    assert any(h.trace is not None and h.trace.bigram_rank for h in resp.results)


# ---------------------------------------------------------------- the command


def test_demo_paths_prints_the_kb_and_its_golden_file(capsys):
    from groove_tui.cli import main

    assert main(["demo", "--paths"]) == 0
    assert capsys.readouterr().out.splitlines() == [str(kb_path()), str(golden_path())]


def test_demo_opens_the_explorer_on_the_packaged_kb_with_its_golden_file(monkeypatch, tmp_path):
    from groove_tui.cli import main

    seen = {}

    def fake_run(kb, *, config, index_dir, golden=None, explain_mismatch=None):
        seen.update(kb=kb, index_dir=index_dir, golden=golden, model=config.embedding.model)
        return 0

    monkeypatch.setattr("groove_tui.tui.app.run", fake_run)
    assert main(["demo", "--index-dir", str(tmp_path / "idx"), "--model", "hashing"]) == 0
    assert seen == {
        "kb": kb_path(),
        "index_dir": str(tmp_path / "idx"),
        "golden": str(golden_path()),
        "model": "hashing",
    }


@pytest.mark.parametrize(
    ("query", "path", "heading"),
    [
        ("parent retriever", "ranking/parent-retriever.md", None),  # the note "The parent retriever"
        ("Keyboard shortcuts", "explorer/keyboard-shortcuts.md", None),
        ("exact phrases", "searching/query-language.md", "Exact phrases"),
        ("Finding a good λ", "ranking/mmr.md", "Finding a good λ"),
    ],
)
def test_a_query_naming_a_title_or_heading_of_the_demo_ranks_it_first(demo_engine, query, path, heading):
    eng, _ = demo_engine
    for limit in (1, 5, 14):
        first = eng.search(query, SearchParams(limit=limit)).results[0]
        assert (first.path, first.heading if heading else None) == (path, heading)
