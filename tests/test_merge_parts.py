"""`[search] merge_parts`: the parts of a section split at the size cap fuse as one hit."""

from __future__ import annotations

from dataclasses import replace

import pytest

from groove_tui.config import ChunkingConfig, ConfigError, SearchConfig, parse_config
from groove_tui.engine import Engine, SearchParams

from helpers import SAMPLE_KB, hashing_config, write_kb


def _paragraph(i: int, topic: str) -> str:
    return f"Paragraph {i} explains {topic} with enough words to fill the chunk. " * 4


LONG = "\n\n".join(_paragraph(i, "compost heaps and garden soil") for i in range(6))  # ~1,700 bytes


def _engine(tmp_path, merge: bool, files: dict[str, str]) -> Engine:
    cfg = hashing_config(
        chunking=ChunkingConfig(max_chunk_bytes=600),
        search=replace(SearchConfig(), merge_parts=merge),
    )
    eng = Engine.open(write_kb(tmp_path / "kb", files), config=cfg, index_dir=tmp_path / f"idx-{merge}")
    eng.index()
    return eng


@pytest.fixture
def files() -> dict[str, str]:
    return {
        "long.md": f"# Long\n\n## Compost\n\n{LONG}\n",
        "short.md": "# Short\n\n## Soil\n\nGarden soil and compost heaps, in one short paragraph.\n",
        "other.md": "# Other\n\n## Rust\n\nNothing about gardens here; tokio runtime tasks only.\n",
    }


def test_parts_of_one_section_are_one_hit(tmp_path, files):
    with _engine(tmp_path, True, files) as merged, _engine(tmp_path, False, files) as split:
        query = "compost heaps garden soil"
        parts = [h for h in split.search(query, SearchParams(limit=10)).results if h.path == "long.md"]
        assert len(parts) >= 3, "the long section is split into parts that each match"
        resp = merged.search(query, SearchParams(limit=10, explain=True))
        longs = [h for h in resp.results if h.path == "long.md"]
        assert len(longs) == 1
        hit = longs[0]
        assert hit.trace.merged_parts == tuple(range(len(parts)))
        assert resp.to_dict()["explain"]["hits"][[h.path for h in resp.results].index("long.md")]["fusion"][
            "merged_parts"
        ] == list(range(len(parts)))
        # Sections are ranked densely in each leg: the next section's rank follows the merged one's.
        ranks = sorted(h.trace.fts_rank for h in resp.results if h.trace.fts_rank is not None)
        assert ranks == list(range(1, len(ranks) + 1))
        # The hit stands for the whole section: the parent retriever grows it back to all of it.
        parent = merged.search(query, SearchParams(limit=10, parent_retriever=True))
        whole = next(h for h in parent.results if h.path == "long.md")
        assert all(f"Paragraph {i} explains" in whole.content for i in range(6))


def test_the_face_of_a_section_is_its_best_part(tmp_path):
    # Only the fifth paragraph mentions the query's rare word, so its part must stand for the section.
    text = "\n\n".join(
        _paragraph(i, "quasar telescopes" if i == 4 else "compost heaps") for i in range(6)
    )
    with _engine(tmp_path, True, {"long.md": f"# Long\n\n## Mixed\n\n{text}\n"}) as eng:
        hit = eng.search("quasar telescopes", SearchParams(limit=5)).results[0]
        assert "quasar" in hit.content


def test_without_split_sections_merging_changes_nothing(tmp_path):
    with _engine(tmp_path, True, SAMPLE_KB) as merged, _engine(tmp_path, False, SAMPLE_KB) as split:
        for query in ("tokio runtime", "search", "設定", "sqlite-vec KNN", "-tokio rust"):
            for legs in ("hybrid", "fts", "vector"):
                params = SearchParams(limit=10, legs=legs, explain=True)
                a, b = merged.search(query, params).to_dict(), split.search(query, params).to_dict()
                del a["explain"]["timings_ms"], b["explain"]["timings_ms"]
                assert a == b


def test_merge_parts_must_be_a_boolean():
    with pytest.raises(ConfigError, match=r"search\.merge_parts.*'yes'"):
        parse_config({"search": {"merge_parts": "yes"}})
    assert parse_config({"search": {"merge_parts": False}}).search.merge_parts is False
    assert parse_config({}).search.merge_parts is True
