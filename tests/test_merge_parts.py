"""`[search] merge_parts`: the parts of a section split at the size cap fuse as one hit."""

from __future__ import annotations

from dataclasses import replace

import pytest

from groove_tui.engine import Engine, SearchParams
from groove_tui.settings.config import ChunkingConfig, ConfigError, SearchConfig, parse_config

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
    text = "\n\n".join(_paragraph(i, "quasar telescopes" if i == 4 else "compost heaps") for i in range(6))
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


def _starving_kb() -> dict[str, str]:
    """One section that splits into ~255 parts, every one matching, beside 25 small matching documents."""
    big = "\n\n".join(
        (
            f"compost heaps garden soil, compost heaps garden soil, "
            f"compost heaps garden soil, compost heaps garden soil {i}"
        )
        for i in range(255)
    )
    files = {"big.md": f"## Everything about compost\n\n{big}\n"}
    for i in range(25):  # each ranks below every part of big.md in both legs
        files[f"small/s{i:02}.md"] = (
            f"## Note {i}\n\nA note {i} that mentions compost heaps and garden soil once, among many other words "
            "about weather, birds, paths, fences, sheds, ponds and the allotment committee.\n"
        )
    return files


@pytest.mark.parametrize("legs", ["fts", "hybrid", "vector"])
def test_one_document_with_many_parts_does_not_starve_the_page(tmp_path, legs):
    cfg = hashing_config(chunking=ChunkingConfig(max_chunk_bytes=200))
    with Engine.open(write_kb(tmp_path / "kb", _starving_kb()), config=cfg, index_dir=tmp_path / "idx") as eng:
        eng.index()
        parts = (
            eng.store.conn()
            .execute("SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.path = 'big.md'")
            .fetchone()[0]
        )
        assert parts >= 200
        resp = eng.search("compost heaps garden soil", SearchParams(limit=30, legs=legs, min_quality=0))
        paths = [h.path for h in resp.results]
        assert len(paths) == 26 and len(set(paths)) == 26  # every matching document; was 2 hits
        assert sorted(paths) == sorted(_starving_kb())


def test_a_merged_hit_is_labelled_with_the_part_it_shows(tmp_path, files):
    from groove_tui.output.textout import format_response
    from groove_tui.tui.look.render import hit_title

    with _engine(tmp_path, True, files) as eng:
        resp = eng.search("Paragraph 5 explains", SearchParams(limit=10))
        hit = next(h for h in resp.results if h.path == "long.md")
        assert hit.part > 0 and "Paragraph 5" in hit.content and hit.heading == "Compost"
        assert not hit.content.startswith("Paragraph 0")  # the text is the part's, not the section's start
        label = f"long.md#Compost (part {hit.part + 1})"
        assert label in format_response(resp, color=False).splitlines()
        assert hit_title(hit).plain == f"long.md › Compost (part {hit.part + 1})"
        first = next(
            h for h in eng.search("Paragraph 0 explains", SearchParams(limit=10)).results if h.path == "long.md"
        )
        assert first.part == 0 and hit_title(first).plain == "long.md › Compost"  # part 0 starts at its heading
