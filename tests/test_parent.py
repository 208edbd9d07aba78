"""Level-aware parent retriever (docs/groove-compatibility.md, 3; groove §G)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groove_tui.engine.stages.parent import (
    ChunkOutline,
    ChunkRow,
    est_tokens,
    expand_hit,
    outline_of,
    outline_window,
    plan_expansion,
)

NEVER_SMALL = 0  # whole_doc_threshold_tokens = 0: no hit is small, only the level-aware path runs


def doc(*spec: tuple[int | None, int] | tuple[int | None, int, int]) -> list[ChunkRow]:
    """Rows from (level, tokens[, part]) triples; content names the chunk so merges are readable."""
    rows = []
    for i, (level, tokens, *part) in enumerate(spec):
        rows.append(
            ChunkRow(
                chunk_id=100 + i,
                chunk_index=i,
                level=level,
                heading=None if level is None else f"h{i}",
                content=f"c{i}",
                token_count=tokens,
                part=part[0] if part else 0,
            )
        )
    return rows


def merged(hit: int, rows: list[ChunkRow], cap: int, threshold: int = NEVER_SMALL) -> tuple[int | None, int | None]:
    exp = expand_hit(hit, rows, whole_doc_threshold_tokens=threshold, max_expanded_tokens=cap)
    assert exp is not None and exp.expanded_from.kind == "adjacent"
    ef = exp.expanded_from
    assert exp.content == "\n\n".join(r.content for r in rows[ef.from_index : ef.to_index + 1])
    assert exp.content[ef.hit_start : ef.hit_end] == rows[hit].content
    return ef.from_index, ef.to_index


# preamble, ## A (### A1), ## B (### B1 ### B2 ### B3), ## C (### C1), ## D — every chunk 10 tokens
OUTLINE = doc((None, 10), (2, 10), (3, 10), (2, 10), (3, 10), (3, 10), (3, 10), (2, 10), (3, 10), (2, 10))


# ---------------------------------------------------------------- whole document


def test_small_hit_takes_the_whole_document():
    rows = doc((None, 5), (2, 30), (2, 40))
    exp = expand_hit(1, rows, whole_doc_threshold_tokens=31, max_expanded_tokens=75)
    assert exp is not None
    assert exp.expanded_from.kind == "whole_document" and exp.expanded_from.total_chunks == 3
    assert exp.content == "c0\n\nc1\n\nc2"
    assert exp.content[exp.expanded_from.hit_start : exp.expanded_from.hit_end] == "c1"
    assert exp.expanded_from.to_json() == {"kind": "whole_document", "total_chunks": 3}
    assert "whole document" in exp.description and "3 chunks" in exp.description


def test_small_threshold_is_strict():
    rows = doc((None, 5), (2, 30), (2, 40))
    exp = expand_hit(1, rows, whole_doc_threshold_tokens=30, max_expanded_tokens=75)
    assert exp is not None and exp.expanded_from.kind == "adjacent"


def test_whole_document_must_fit_the_cap():
    rows = doc((None, 5), (2, 30), (2, 40))
    exp = expand_hit(1, rows, whole_doc_threshold_tokens=31, max_expanded_tokens=74)
    assert exp.expanded_from.kind == "adjacent"


def test_null_token_count_is_not_small_but_is_estimated_in_sums():
    big_legacy = ChunkRow(9, 2, 2, "legacy", "x" * 4000, None)  # est 1000 from bytes
    tiny_legacy = ChunkRow(8, 1, 2, "tiny", "x" * 8, None)
    hit = ChunkRow(7, 0, None, None, "hello", 3)
    # NULL is never small, even when tiny
    exp = expand_hit(1, [hit, tiny_legacy], whole_doc_threshold_tokens=100, max_expanded_tokens=500)
    assert exp.expanded_from.kind == "adjacent"
    # the legacy row counts 1000 estimated tokens: the small hit cannot take the whole document
    exp = expand_hit(0, [hit, tiny_legacy, big_legacy], whole_doc_threshold_tokens=100, max_expanded_tokens=500)
    assert exp.expanded_from.kind == "adjacent"
    assert est_tokens(big_legacy) == 1000
    assert est_tokens(ChunkRow(1, 0, None, None, "日本語", 0)) == 2  # 0 also falls back: 9 bytes // 4


# ---------------------------------------------------------------- level-aware merge


def test_h2_hit_merges_h2_siblings_with_their_children():
    # own unit B = 3..6 (40); previous A = 1..2 (20) fits exactly at 60; C would make 80
    assert merged(3, OUTLINE, cap=60) == (1, 6)
    # with room for everything: A, B, C, D — but never the preamble, the parent at a lower rank
    assert merged(3, OUTLINE, cap=1000) == (1, 9)


def test_h2_hit_keeps_its_unit_when_no_sibling_fits():
    assert merged(3, OUTLINE, cap=59) == (3, 6)


def test_h3_hit_merges_h3_siblings_only_within_its_h2():
    assert merged(5, OUTLINE, cap=1000) == (4, 6)
    assert merged(8, OUTLINE, cap=1000) == (8, 8)  # C1 has no sibling; ## C (7) and ## D (9) stay out


def test_alternates_previous_first():
    assert merged(5, OUTLINE, cap=20) == (4, 5)  # previous B1 first; then B3 does not fit
    rows = doc((2, 10), (2, 10), (2, 10), (2, 10), (2, 10))
    assert merged(2, rows, cap=30) == (1, 3)
    assert merged(2, rows, cap=40) == (0, 3)


def test_other_side_continues_when_one_side_is_full():
    rows = doc((2, 50), (2, 10), (2, 10), (2, 10), (2, 10))
    # previous unit (50) never fits; the next ones are taken one after the other
    assert merged(1, rows, cap=40) == (1, 4)
    assert merged(1, rows, cap=39) == (1, 3)


def test_cap_is_inclusive():
    rows = doc((2, 10), (2, 10), (2, 10))
    assert merged(1, rows, cap=30) == (0, 2)
    assert merged(1, rows, cap=29) == (0, 1)


def test_never_a_partial_unit():
    # previous sibling ## A is 10 tokens but its ### child makes the unit 40: it does not fit in 30
    rows = doc((2, 10), (3, 30), (2, 10), (2, 10))
    assert merged(2, rows, cap=30) == (2, 3)


def test_split_continuations_stay_together():
    # ## S split in three parts (1..3), ### sub (4), ## T split in two (5..6)
    rows = doc((None, 10), (2, 10), (2, 10, 1), (2, 10, 2), (3, 10), (2, 10), (2, 10, 1))
    assert merged(2, rows, cap=30) == (1, 3)  # the hit's whole section, not its sub-section
    assert merged(2, rows, cap=40) == (1, 4)  # its unit
    assert merged(2, rows, cap=59) == (1, 4)  # ## T (20) would need 60
    assert merged(2, rows, cap=60) == (1, 6)
    assert merged(6, rows, cap=20) == (5, 6)  # a continuation hit brings its heading part
    assert merged(2, rows, cap=29) == (2, 2)  # the section does not fit: hit alone


def test_hit_over_the_cap_is_not_expanded():
    rows = doc((2, 10), (2, 500), (2, 10))
    exp = expand_hit(1, rows, whole_doc_threshold_tokens=100, max_expanded_tokens=400)
    assert exp.content == "c1"
    ef = exp.expanded_from
    assert (ef.kind, ef.from_index, ef.to_index, ef.hit_start, ef.hit_end) == ("adjacent", 1, 1, 0, 2)
    assert ef.to_json() == {"kind": "adjacent", "from_index": 1, "to_index": 1}
    assert exp.description.startswith("not expanded") and "500" in exp.description


def test_preamble_hit():
    rows = doc((None, 10), (None, 10, 1), (2, 10), (3, 10), (2, 10))
    # the preamble's unit is the whole document: everything else is below the H1 level
    assert merged(0, rows, cap=50) == (0, 4)
    assert merged(0, rows, cap=49) == (0, 1)  # only the preamble's own continuation part fits
    assert merged(2, rows, cap=1000) == (2, 4)  # an H2 hit never takes the preamble


def test_single_chunk_document():
    rows = doc((None, 300))
    exp = expand_hit(0, rows, whole_doc_threshold_tokens=100, max_expanded_tokens=2000)
    assert (exp.expanded_from.kind, exp.expanded_from.from_index, exp.expanded_from.to_index) == ("adjacent", 0, 0)
    assert exp.content == "c0"
    small = expand_hit(0, doc((None, 30)), whole_doc_threshold_tokens=100, max_expanded_tokens=2000)
    assert small.expanded_from.kind == "whole_document" and small.expanded_from.total_chunks == 1


def test_japanese_content_offsets_are_characters():
    contents = ["前文：設定の概要。", "## 東京\n東京の設定について詳しく説明する。", "## 大阪\n大阪の設定。"]
    rows = [ChunkRow(i, i, None if i == 0 else 2, None, c, 100) for i, c in enumerate(contents)]
    exp = expand_hit(2, rows, whole_doc_threshold_tokens=50, max_expanded_tokens=1000)
    ef = exp.expanded_from
    assert (ef.from_index, ef.to_index) == (1, 2)
    assert ef.hit_start == len(contents[1]) + 2
    assert exp.content[ef.hit_start : ef.hit_end] == contents[2]
    whole = expand_hit(
        2,
        [*rows[:2], ChunkRow(2, 2, 2, None, contents[2], 10)],
        whole_doc_threshold_tokens=50,
        max_expanded_tokens=1000,
    )
    assert whole.content[whole.expanded_from.hit_start : whole.expanded_from.hit_end] == contents[2]


def test_unknown_hit_is_none():
    assert expand_hit(42, OUTLINE, whole_doc_threshold_tokens=100, max_expanded_tokens=2000) is None
    assert expand_hit(0, [], whole_doc_threshold_tokens=100, max_expanded_tokens=2000) is None


def test_rows_out_of_order_and_gapped_indices():
    rows = [ChunkRow(1, 7, 2, "b", "b", 10), ChunkRow(0, 3, 2, "a", "a", 10), ChunkRow(2, 9, 2, "c", "c", 10)]
    exp = expand_hit(7, rows, whole_doc_threshold_tokens=0, max_expanded_tokens=100)
    assert (exp.expanded_from.from_index, exp.expanded_from.to_index) == (3, 9)
    assert exp.content == "a\n\nb\n\nc"


def test_description_names_range_level_and_tokens():
    exp = expand_hit(3, OUTLINE, whole_doc_threshold_tokens=0, max_expanded_tokens=60)
    assert exp.description == "merged chunks 1–6 at level ##: its section and 1 sibling section (60 tokens)"


# ---------------------------------------------------------------- the window a hit reads

_ROW = st.tuples(
    st.sampled_from([None, 2, 3, 4]),  # level
    st.one_of(st.none(), st.integers(0, 400)),  # token count (None and 0 fall back to bytes / 4)
    st.integers(0, 60),  # content bytes
    st.booleans(),  # a continuation part
)


def _rows(spec: list[tuple[int | None, int | None, int, bool]]) -> list[ChunkRow]:
    out = []
    for i, (level, tokens, size, cont) in enumerate(spec):
        part = 1 if cont and i and out[-1].level == level else 0  # a part continues its section's level
        out.append(ChunkRow(i + 1, i, level, None, "x" * size, tokens, part))
    return out


def _reader(outline: list[ChunkOutline], reads: list[int]):
    def read_page(start: int, forward: bool, limit: int) -> list[ChunkOutline]:
        if forward:
            got = [r for r in outline if r.chunk_index >= start][:limit]
        else:
            got = [r for r in reversed(outline) if r.chunk_index < start][:limit]
        reads.append(len(got))
        return got

    return read_page


@settings(max_examples=300, deadline=None)
@given(st.lists(_ROW, min_size=1, max_size=120), st.data(), st.integers(1, 1500), st.integers(0, 300))
def test_the_window_around_a_hit_plans_as_the_whole_document_does(spec, data, cap, threshold):
    rows = _rows(spec)
    outline = [outline_of(r) for r in rows]
    hit = data.draw(st.integers(0, len(rows) - 1))
    window = outline_window(_reader(outline, []), hit, cap)
    kw = {"whole_doc_threshold_tokens": threshold, "max_expanded_tokens": cap}
    assert plan_expansion(hit, window, **kw) == plan_expansion(hit, outline, **kw)


def test_a_hit_in_a_note_of_thousands_of_chunks_reads_a_window_bounded_by_the_cap():
    """A hit in the middle of 20,000 sections of 50 tokens reads about cap / 50 shapes on each side (pages
    doubling from 32), not the note."""
    rows = [ChunkRow(i + 1, i, 2, f"s{i}", "text", 50) for i in range(20_000)]
    outline = [outline_of(r) for r in rows]
    reads: list[int] = []
    window = outline_window(_reader(outline, reads), 10_000, 2000)
    assert sum(reads) == len(window) <= 2 * (32 + 64)  # 41 shapes reach 2,000 tokens on each side
    plan = plan_expansion(10_000, window, whole_doc_threshold_tokens=100, max_expanded_tokens=2000)
    assert plan == plan_expansion(10_000, outline, whole_doc_threshold_tokens=100, max_expanded_tokens=2000)
    assert plan is not None and plan.kind == "merged" and plan.last - plan.first + 1 == 40


def test_a_search_expands_a_hit_in_a_long_note_from_a_window_as_from_the_whole_note(tmp_path, monkeypatch):
    """Through the engine: a hit deep in a note of 6,000 sections expands exactly as the whole note's
    chunks say it should, and the search reads the shapes of a window, not of the note."""
    from groove_tui.engine import Engine, SearchParams
    from groove_tui.engine.index.store import Store

    from helpers import hashing_config, write_kb

    body = "".join(f"## Section {i}\n\nfiller words about section number {i} marker{i}x\n\n" for i in range(6000))
    kb = write_kb(tmp_path / "kb", {"long.md": "# Long\n\n" + body, "short.md": "# Short\n\nnothing here\n"})
    read: list[int] = []
    outline = Store.chunk_outline

    def counted(self, *a, **kw):
        rows = outline(self, *a, **kw)
        read.append(len(rows))
        return rows

    monkeypatch.setattr(Store, "chunk_outline", counted)
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index(embed=False)
        params = SearchParams(limit=1, legs="fts", parent_retriever=True)
        (hit,) = eng.search("marker3500x", params).results
        rows = [ChunkRow(*r) for r in eng.store.document_chunks(hit.document_id)]
        cfg = eng.config.search.parent_retriever
        want = expand_hit(
            hit.chunk_index,
            rows,
            whole_doc_threshold_tokens=cfg.whole_doc_threshold_tokens,
            max_expanded_tokens=cfg.max_expanded_tokens,
        )
    assert len(rows) > 1000 and want is not None
    assert (hit.content, hit.expanded_from) == (want.content, want.expanded_from)
    assert hit.expanded_from is not None and hit.expanded_from.kind == "adjacent"
    # The hit reads outward until its estimate passes the cap: at most twice that many shapes (the pages
    # double) on each side, whatever the note's length.
    least = min(est_tokens(r) for r in rows)
    assert hit.path == "long.md" and 0 < sum(read) <= 2 * 2 * (cfg.max_expanded_tokens // least + 1) < len(rows) / 2


def test_the_stored_shapes_estimate_tokens_as_the_rows_do(tmp_path):
    """The window's estimate comes from SQL: the stored count, or UTF-8 bytes / 4 when it is NULL or 0 —
    est_tokens' rule, Japanese text included."""
    from groove_tui.engine import Engine

    from helpers import hashing_config, write_kb

    kb = write_kb(tmp_path / "kb", {"a.md": "# A\n\n日本語のテキストです\n", "b.md": "# B\n\nplain words here\n"})
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index(embed=False)
        conn = eng.store.conn()
        for path, count in (("a.md", None), ("b.md", 0)):
            conn.execute(
                "UPDATE chunks SET token_count = ? WHERE document_id = (SELECT id FROM documents WHERE path = ?)",
                (count, path),
            )
        for (doc,) in conn.execute("SELECT id FROM documents").fetchall():
            rows = [ChunkRow(*r) for r in eng.store.document_chunks(doc)]
            shapes = eng.store.chunk_outline(doc, 0, forward=True, limit=100)
            assert rows and [s[4] for s in shapes] == [est_tokens(r) for r in rows]
            assert [tuple(s[:4]) for s in shapes] == [(r.chunk_index, r.level, r.part, r.token_count) for r in rows]
            assert all(r.token_count in (None, 0) for r in rows)  # the estimate came from the bytes
