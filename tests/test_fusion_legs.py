"""Fusion's handling of what the legs hand it: a stand-in vector term only for a candidate that has no
vector yet, never over a real one; the weight a page's best hit is measured against follows the share of
vectors present; and a tie inside a leg is ranked by path and position, not by the order it came in."""

from __future__ import annotations

from pathlib import Path

import pytest

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.index.store import CandidateRow
from groove_tui.engine.retrieve.candidates import Legs
from groove_tui.engine.retrieve.fusion import _fused_weight, confidence_reading, fuse
from groove_tui.settings.config import FusionConfig

from helpers import hashing_config, write_kb


def _row(cid: int, path: str, index: int = 0, part: int = 0, document: int | None = None) -> CandidateRow:
    return CandidateRow(
        chunk_id=cid,
        document_id=cid if document is None else document,
        chunk_index=index,
        heading=None,
        level=None,
        content="text",
        token_count=1,
        quality_score=1.0,
        context=None,
        line=1,
        part=part,
        path=path,
        title=None,
        topic=None,
        category=None,
        date=None,
        tags=(),
    )


def _legs(**kw) -> Legs:
    return Legs(**{"vector": (), "fts": (), "rows": {}, "embed_ms": 0.0, "vector_ms": 0.0, "fts_ms": 0.0, **kw})


def test_a_tie_in_a_leg_is_ranked_by_path_and_position_not_by_arrival():
    # SQLite hands equal scores over in chunk-id order, which follows the edit history: b.md's copy
    # (id 3) was added first. Under RRF a rank is a term, so the order inside the tie decides the scores.
    rows = {3: _row(3, "b.md"), 5: _row(5, "a.md"), 7: _row(7, "a.md", index=1, document=5)}
    legs = _legs(fts=((3, -2.0), (7, -2.0), (5, -2.0)), rows=rows)
    fused = fuse(legs, FusionConfig(), False, None, True, method="rrf")
    assert [(c.row.path, c.row.chunk_index) for c in fused] == [("a.md", 0), ("a.md", 1), ("b.md", 0)]
    assert [c.trace["fts_rank"] for c in fused] == [1, 2, 3]
    assert fused[0].score > fused[1].score > fused[2].score


def test_a_merged_section_with_a_vector_part_keeps_that_parts_vector_term():
    # One section in two parts: part 0 is embedded and the vector leg ranks it second; part 1 has no
    # vector yet and the full text ranks it first. The section has a real vector term: no stand-in replaces it.
    rows = {1: _row(1, "a.md", 0, 0, document=9), 2: _row(2, "a.md", 1, 1, document=9), 4: _row(4, "c.md")}
    legs = _legs(
        vector=((4, 0.1), (1, 0.2)),
        fts=((2, -5.0), (4, -1.0)),
        rows=rows,
        vector_share=0.5,
        unembedded=frozenset({2}),
    )
    fused = {c.row.document_id: c for c in fuse(legs, FusionConfig(), True, None, True, method="rrf")}
    section = fused[9]
    assert not section.trace.get("vector_imputed")
    weight = 0.5 / 62.0  # the vector leg's weight times the share, at rank 2 under RRF
    assert section.trace["rrf_vector"] == pytest.approx(weight, rel=1e-6)


def test_the_weight_a_page_is_measured_against_follows_the_share_of_vectors():
    legs = _legs(vector=((1, 0.2),), fts=((1, -2.0),), rows={1: _row(1, "a.md")}, vector_share=0.5)
    fusion = FusionConfig()
    assert _fused_weight(legs, fusion) == pytest.approx(0.5 * fusion.vector_weight + fusion.fts_weight)
    # A flat page whose best hit stands out of the legs the half-embedded index can read is not flagged
    # (against the whole vector weight it would be).
    scores = [1.6, 1.5, 1.5]
    assert not confidence_reading(scores, 1.5, _fused_weight(legs, fusion), 2).low
    assert confidence_reading(scores, 1.5, fusion.vector_weight + fusion.fts_weight, 2).low


TOPICS = ["garden soil compost", "tokio runtime tasks", "sqlite full text", "vector search knn", "bread dough yeast"]


def test_with_every_vector_present_no_full_text_hit_gets_a_stand_in_vector_term(tmp_path: Path):
    files = {
        f"{t.split()[0]}/n{i}.md": f"# Note {i} on {t.split()[0]}\n\n{t} and more {t} with notes number {i}.\n\n"
        f"## Detail {i}\n\nSome detail about {t.split()[1]} {i}.\n"
        for t in TOPICS
        for i in range(40)
    }
    with Engine.open(write_kb(tmp_path / "kb", files), config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index()
        assert eng.store.pending_count() == 0
        beside_the_vector_leg = 0
        for q in ["notes number", "garden soil", "detail about", "more with"]:
            resp = eng.search(q, SearchParams(limit=40, min_quality=0, explain=True))
            assert resp.vector_share == 1.0
            for h in resp.results:
                assert not h.trace.vector_imputed, (q, h.path)
                if h.trace.vector_rank is None:  # found by the full text only: no vector term at all
                    assert h.trace.rrf_vector is None, (q, h.path)
                    beside_the_vector_leg += 1
        assert beside_the_vector_leg  # the case the rule is about was there
