"""A long-lived engine whose caches are warm answers every search after a watched edit exactly as a fresh
build of the edited KB does: the legs, the named sections, the reranker's scores, the vector matrix, the
pruned full-text leg's idf cache and the phrase statistics stored by the last full run are all keyed on
the index generation, and an update moves it."""

from __future__ import annotations

from pathlib import Path

import pytest

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.index import phrase_stats as ps
from groove_tui.engine.retrieve import fulltext as fp
from groove_tui.engine.retrieve import vector_scan as vs

from helpers import hashing_config, write_kb

QUERIES = ["tokio runtime", "banana", "sqlite vector", "the cells protein", "Setup"]


def _notes(n: int, word: str) -> dict[str, str]:
    return {
        f"d{i % 3}/n{i:02d}.md": f"# Note {i}\n\n## Setup\n\n{word} tokio the {'banana ' * (i % 4)}cells {i}\n\n"
        f"## Usage\n\nsqlite vector search protein {word} {i}\n"
        for i in range(n)
    }


def _answers(eng: Engine) -> list:
    out = []
    for q in QUERIES:
        for legs in ("fts", "vector", "hybrid"):
            hits = eng.search(q, SearchParams(limit=100, legs=legs)).results
            out.append((q, legs, sorted((-h.score, h.path, h.chunk_index, h.content) for h in hits)))
    return out


def _fresh(kb: Path, tmp: Path) -> list:
    with Engine.open(kb, config=hashing_config(), index_dir=tmp) as fresh:
        fresh.index()
        return _answers(fresh)


@pytest.fixture
def above_the_floors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small tables prune and scan as big ones do."""
    monkeypatch.setattr(fp, "MIN_ROWS", 0)
    monkeypatch.setattr(ps, "MIN_ROWS", 0)
    monkeypatch.setattr(vs, "MIN_ROWS", 0)


@pytest.mark.usefixtures("above_the_floors")
def test_a_warm_engine_answers_as_a_fresh_build_after_each_watched_edit(tmp_path: Path) -> None:
    kb = write_kb(tmp_path / "kb", _notes(12, "alpha"))
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index()  # stores the phrase statistics of its generation
        stored = eng.store.conn().execute("SELECT count(*) FROM fts_phrase_stats").fetchone()[0]
        assert stored, "no phrase statistics stored: the test would not see them read at a later generation"
        edits = [
            ("d0/n00.md", "# Note 0\n\n## Setup\n\nbanana banana banana tokio runtime\n"),  # changed
            ("d1/new.md", "# New\n\n## Setup\n\ntokio runtime sqlite vector the the\n"),  # created
            ("d2/n02.md", None),  # deleted
        ]
        for n, (rel, text) in enumerate(edits):
            assert _answers(eng)  # every cache warm at this generation
            eng._searcher.vectors.wait_loaded()
            assert eng._searcher.vectors._base is not None  # the scan answers the vector leg
            assert _answers(eng) == _fresh(kb, tmp_path / f"before{n}")
            if text is None:
                (kb / rel).unlink()
            else:
                (kb / rel).write_text(text, "utf-8")
            eng.update({rel})
            assert _answers(eng) == _fresh(kb, tmp_path / f"after{n}"), rel
