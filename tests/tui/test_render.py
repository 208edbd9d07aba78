"""Unit tests of the pure rendering helpers (offsets, sanitising, snippets, highlights)."""

from __future__ import annotations

import itertools
import unicodedata
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

from groove_tui.engine.types import ExpandedFrom, Hit, HitTrace, MMRTrace, QueryInfo, SearchResponse, Span
from groove_tui.tui.look import explain_render, render


def mkhit(content: str, spans=(), expanded: ExpandedFrom | None = None, **kw) -> Hit:
    base = dict(
        chunk_id=1,
        document_id=1,
        path="notes/a.md",
        title="A",
        heading="Intro",
        level=2,
        chunk_index=0,
        topic=None,
        category=None,
        date=None,
        tags=(),
        content=content,
        score=0.5,
    )
    base.update(kw)
    return Hit(
        **base, match_spans=tuple(Span(s, e) for s, e in spans) if spans is not None else None, expanded_from=expanded
    )


def styled(text: Text, style: str | Style) -> list[str]:
    """The substrings of `text` that carry `style` (by span)."""
    want = Style.parse(style) if isinstance(style, str) else style
    return [
        text.plain[s.start : s.end]
        for s in sorted(text.spans, key=lambda s: s.start)
        if s.style == want or s.style == str(want)
    ]


MATCH = Style(bold=True, color="red")
EXP = Style(bgcolor="blue")

# ---------------------------------------------------------------- sanitising


def test_sanitize_keeps_newline_and_tab_replaces_controls():
    s = "a\x1b[31mred\x1b[0m\tb\nc\x00\x07\x7f\x9b\u202e"
    out = render.sanitize(s)
    assert len(out) == len(s)
    assert "\x1b" not in out and "\x00" not in out and "\x9b" not in out and "\u202e" not in out
    assert "\t" in out and "\n" in out
    assert out.startswith("a␛[31mred")
    assert "\ufffd" in out


def test_markup_in_content_is_literal():
    hit = mkhit("see [bold]this[/bold] and [link=http://x]y[/link]", spans=[(4, 10)])
    t = render.detail_text(hit, MATCH, EXP)
    assert t.plain == hit.content
    assert styled(t, MATCH) == ["[bold]"]
    snip = render.snippet_text(hit, 200, MATCH)
    assert "[bold]this[/bold]" in snip.plain
    assert "[link=http://x]" in render.hit_title(mkhit("x", heading="[link=http://x]y[/link]")).plain


def test_ansi_and_cr_shown_visibly_in_snippet():
    hit = mkhit("x\x1b[2Jy\r\nz", spans=[])
    snip = render.snippet_text(hit, 100)
    assert "\x1b" not in snip.plain and "\r" not in snip.plain and "\n" not in snip.plain
    assert "␛[2J" in snip.plain


@given(st.text())
def test_sanitize_is_length_preserving_and_clean(s):
    out = render.sanitize(s)
    assert len(out) == len(s)
    for ch in out:
        cat = unicodedata.category(ch)
        assert ch in "\n\t" or cat != "Cc"


# ---------------------------------------------------------------- spans


def test_merge_spans_clamps_sorts_merges():
    spans = [Span(8, 12), Span(0, 3), Span(2, 5), Span(20, 40), Span(-4, 0), Span(5, 6), Span(9, 9)]
    assert render.merge_spans(spans, 25) == [(0, 6), (8, 12), (20, 25)]
    assert render.merge_spans(None, 10) == []
    assert render.merge_spans([(3, 1)], 10) == []


@given(st.lists(st.tuples(st.integers(-20, 80), st.integers(-20, 80))), st.integers(0, 60))
def test_merge_spans_properties(spans, n):
    out = render.merge_spans(spans, n)
    for s, e in out:
        assert 0 <= s < e <= n
    for (_s1, e1), (s2, _e2) in itertools.pairwise(out):
        assert e1 < s2


# ---------------------------------------------------------------- offsets: CJK, emoji, combining


def test_detail_highlight_japanese_is_character_offsets():
    content = "naïve café 数据 search 東京の設定"
    start = content.index("search")
    assert start == 14  # characters, not bytes (20) or cells
    tokyo = content.index("東京")
    hit = mkhit(content, spans=[(start, start + 6), (tokyo, tokyo + 2)])
    t = render.detail_text(hit, MATCH, EXP)
    assert styled(t, MATCH) == ["search", "東京"]


def test_detail_highlight_emoji_zwj_and_combining():
    fam = "👨\u200d👩\u200d👧"
    content = f"e\u0301cole {fam} family cafe\u0301!"
    fs = content.index(fam)
    cs = content.index("cafe\u0301")
    hit = mkhit(content, spans=[(fs, fs + len(fam)), (cs, cs + 5), (0, 2)])
    t = render.detail_text(hit, MATCH, EXP)
    assert styled(t, MATCH) == ["e\u0301", fam, "cafe\u0301"]


def test_expanded_from_shading_outside_hit_range():
    content = "BEFORE text. HIT chunk with match. AFTER text."
    hs, he = content.index("HIT"), content.index(" AFTER")
    m = content.index("match")
    hit = mkhit(
        content,
        spans=[(m, m + 5)],
        expanded=ExpandedFrom(kind="adjacent", from_index=0, to_index=2, hit_start=hs, hit_end=he),
    )
    t = render.detail_text(hit, MATCH, EXP)
    assert styled(t, EXP) == ["BEFORE text. ", " AFTER text."]
    assert styled(t, MATCH) == ["match"]
    assert render.expanded_ranges(hit) == [(0, hs), (he, len(content))]


def test_expanded_from_clamped_when_out_of_range():
    hit = mkhit("short", expanded=ExpandedFrom(kind="whole_document", total_chunks=3, hit_start=2, hit_end=99))
    assert render.hit_range(hit) == (2, 5)
    assert render.expanded_ranges(hit) == [(0, 2)]


def test_out_of_range_spans_do_not_crash():
    hit = mkhit("abc", spans=[(1, 50), (70, 90)])
    t = render.detail_text(hit, MATCH)
    assert styled(t, MATCH) == ["bc"]
    assert render.snippet_text(hit, 40, MATCH).plain == "abc"


# ---------------------------------------------------------------- snippet window


def test_snippet_window_picks_densest_region():
    filler = "lorem ipsum " * 30
    content = filler + "one MATCH here" + filler + "MATCH MATCH MATCH cluster" + filler
    first = content.index("MATCH")
    cluster = content.index("MATCH MATCH")
    spans = [(first, first + 5)] + [(cluster + 6 * i, cluster + 6 * i + 5) for i in range(3)]
    ws, we = render.snippet_window(content, spans, 60)
    assert ws <= cluster and we >= cluster + 17
    assert cell_len(content[ws:we]) <= 60
    hit = mkhit(content, spans=spans)
    snip = render.snippet_text(hit, 60, MATCH)
    assert snip.plain.startswith("…") and snip.plain.endswith("…")
    assert styled(snip, MATCH) == ["MATCH", "MATCH", "MATCH"]


def test_snippet_window_cjk_counts_cells():
    content = "あ" * 100 + "設定" + "い" * 100
    s = content.index("設定")
    ws, we = render.snippet_window(content, [(s, s + 2)], 40)
    assert ws <= s and we >= s + 2
    assert cell_len(content[ws:we]) <= 40
    snip = render.snippet_text(mkhit(content, spans=[(s, s + 2)]), 40, MATCH)
    assert styled(snip, MATCH) == ["設定"]


def test_snippet_never_splits_graphemes():
    fam = "👨\u200d👩\u200d👧"
    content = ("x" * 9 + fam) * 10 + "e\u0301" * 30
    for width in range(5, 50, 3):
        for spans in ([], [(len(content) - 4, len(content) - 2)]):
            ws, we = render.snippet_window(content, spans, width)
            assert not render._joins_previous(content, ws)
            assert not render._joins_previous(content, we)


def test_snippet_without_spans_starts_at_hit_text():
    content = "neighbour before. " * 10 + "THE HIT TEXT" + " after" * 20
    hs = content.index("THE HIT")
    hit = mkhit(
        content,
        spans=None,
        expanded=ExpandedFrom(kind="adjacent", from_index=0, to_index=1, hit_start=hs, hit_end=hs + 12),
    )
    snip = render.snippet_text(hit, 40, MATCH, EXP)
    assert snip.plain.startswith("…THE HIT TEXT")


@given(
    st.text(min_size=0, max_size=200),
    st.lists(st.tuples(st.integers(0, 200), st.integers(0, 200)), max_size=6),
    st.integers(1, 120),
)
def test_snippet_window_in_bounds(content, spans, width):
    merged = render.merge_spans(spans, len(content))
    ws, we = render.snippet_window(content, merged, width)
    assert 0 <= ws <= we <= len(content)
    assert render.snippet_window(content, merged[::-1], width) == (ws, we)
    hit = mkhit(content, spans=spans)
    render.snippet_text(hit, width, MATCH, EXP)  # never raises


@given(
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=300),
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), max_size=40),
    st.integers(1, 160),
    st.integers(0, 300),
)
def test_a_printable_ascii_window_is_the_one_measured_cell_by_cell(content, spans, width, start):
    """Printable ASCII is measured in offsets (one cell a character): the window is the one found by
    asking each character's width."""
    import unittest.mock

    merged = render.merge_spans(spans, len(content))
    fast = render.snippet_window(content, merged, width, default_start=min(start, len(content)))
    assert render.one_cell_each(content)
    with unittest.mock.patch.object(render, "one_cell_each", lambda _text: False):
        slow = render.snippet_window(content, merged, width, default_start=min(start, len(content)))
    assert fast == slow
    # Counted by bisection over the sorted spans, or one by one when they come in another order.
    assert render.snippet_window(content, merged[::-1], width, default_start=min(start, len(content))) == fast


# ---------------------------------------------------------------- rows, summary, explain


def test_hit_row_has_rank_score_path_heading_snippet():
    hit = mkhit("alpha beta gamma", spans=[(6, 10)], heading="Sec [x]", score=0.03279)
    row = render.hit_row(3, hit, 80, marker=Text("↑2"))
    first, second = row.plain.split("\n")
    assert first.split()[:3] == ["3", "0.0328", "↑2"]
    assert "notes/a.md › Sec [x]" in first
    assert "alpha beta gamma" in second


# Text that has broken row heights before: newlines and other controls (0 cells raw, 1 shown), wide CJK,
# emoji with ZWJ and skin tones, combining marks, tabs, bidi controls.
ROW_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("\n\r\t\x00\x1b\x7f\x85\u200d\u202e\u0301\u3000 ab-")),
        st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF),  # CJK, 2 cells
        st.sampled_from(["👨", "👩", "👧", "🎉", "\U0001f3fd", "\ufe0f", "ｶ", "Ａ"]),
        st.characters(codec="utf-8"),
    ),
    max_size=300,
)


@given(
    ROW_TEXT, ROW_TEXT, st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), max_size=5), st.integers(20, 160)
)
def test_every_row_is_two_lines_that_fit_their_width(content, heading, spans, width):
    """One result, one row height: each of the two lines fits the width exactly as the terminal counts
    cells, so no row wraps onto a stray third line (and compare sides stay level)."""
    hit = mkhit(content, spans=spans, heading=heading or None, path="p/" + heading[:20])
    row = render.hit_row(7, hit, width, marker=Text("↑12"), badge=Text("✓2"))
    lines = row.plain.split("\n")
    assert len(lines) == 2
    for line in lines:
        assert cell_len(line) <= width, (line, cell_len(line), width)


def test_a_newline_in_the_snippet_takes_its_cell():
    # the case seen on tldr pages: 40 one-cell lines of text, each ending in a newline
    content = "\n".join("x" * 9 for _ in range(40))
    row = render.hit_row(1, mkhit(content), 60)
    assert cell_len(row.plain.split("\n")[1]) <= 60


def _resp(**kw) -> SearchResponse:
    base = dict(
        results=(),
        low_confidence=False,
        filter_applied={},
        timings_ms={"total": 12.0},
        query=QueryInfo(include=("a",), exclude=(), match_expr='"a"', positive_text="a"),
    )
    base.update(kw)
    return SearchResponse(**base)


def test_response_summary_flags():
    t = render.response_summary(
        _resp(
            low_confidence=True,
            filter_applied={"path_globs": ["docs/**"], "tags_any": []},
            pending_embeddings=7,
            warnings=("w [b]x[/b]",),
        )
    )
    assert "low confidence" in t.plain
    assert "path_globs=docs/**" in t.plain and "tags_any" not in t.plain
    assert "7 chunks awaiting embeddings" in t.plain
    assert "w [b]x[/b]" in t.plain
    assert "awaiting" not in render.response_summary(_resp()).plain


def test_explain_text_every_stage():
    tr = HitTrace(
        vector_rank=3,
        vector_distance=0.41,
        fts_rank=1,
        fts_bm25=-7.2,
        rrf_vector=1 / 64,
        rrf_fts=1 / 62,
        rrf_score=0.0317,
        rrf_rank=1,
        fusion="rrf",
        rerank_score=4.2,
        rerank_rank=2,
        mmr=MMRTrace(pick=2, relevance=0.9, max_similarity=0.3, penalty=0.0, value=0.54),
        parent="merged chunks 1-3",
    )
    hit = mkhit("c", trace=tr, expanded=ExpandedFrom(kind="adjacent", from_index=1, to_index=3, hit_start=0, hit_end=1))
    q = QueryInfo(
        include=("rust", "tokio spawn"),
        exclude=("async",),
        match_expr='"rust" NOT "async"',
        positive_text="rust tokio spawn",
        bigram_expr=None,
    )
    t = explain_render.explain_text(hit, q, {"fts": 1.5}, rank=2).plain
    for needle in (
        "Vector leg",
        "#3",
        "0.4100",
        "Full-text leg",
        "-7.2000",
        "RRF",
        "0.031700",
        "Reranker",
        "4.2000",
        "MMR",
        "max similarity",
        "Parent retriever",
        "merged chunks 1-3",
        "1–3",
        "tokio spawn",
        "async",
        '"rust" NOT "async"',
        "Timings",
    ):
        assert needle in t, needle
    assert "no trace" in explain_render.explain_text(mkhit("c"), None).plain


def test_explain_fusion_heading_names_each_method():
    headings = {
        "dbsf": "3 · Fusion: DBSF (scores by spread)",
        "relative": "3 · Fusion: relative scores (min-max)",
        "rrf": "3 · Fusion: RRF\n",
    }
    for method, heading in headings.items():
        tr = HitTrace(
            vector_rank=1,
            vector_distance=0.2,
            fts_rank=2,
            fts_bm25=-3.0,
            rrf_vector=0.9,
            rrf_fts=0.4,
            rrf_score=1.3,
            rrf_rank=1,
            fusion=method,
        )
        t = explain_render.explain_text(mkhit("c", trace=tr), None).plain
        assert heading in t, method
        assert sum(h in t for h in headings.values()) == 1  # one heading, this method's


def test_explain_shows_each_legs_scale_under_a_score_fusion():
    tr = HitTrace(
        vector_rank=1,
        vector_distance=0.6,
        fts_rank=2,
        fts_bm25=-3.0,
        rrf_vector=0.9,
        rrf_fts=0.4,
        rrf_score=1.3,
        rrf_rank=1,
        fusion="dbsf",
        vector_scale=(0.71, 0.93),
        fts_scale=(1.5, -12.25),
    )
    t = explain_render.explain_text(mkhit("c", trace=tr), None).plain
    assert "cosine" in t and "0.8200" in t  # 1 - 0.6²/2: the reading dbsf places on the vector scale
    assert "vector scale    cosine 0.7100 → 0, 0.9300 → 1" in t
    assert "fts scale       bm25 1.500 → 0, -12.250 → 1" in t
    rrf = explain_render.explain_text(
        mkhit("c", trace=replace(tr, fusion="rrf", vector_scale=None, fts_scale=None)), None
    ).plain
    assert "scale" not in rrf and "cosine" not in rrf


def test_explain_wraps_a_long_value_under_itself_in_a_narrow_pane():
    tr = HitTrace(
        vector_rank=None,
        vector_distance=None,
        fts_rank=2,
        fts_bm25=-3.0,
        rrf_vector=0.4,
        rrf_fts=0.4,
        rrf_score=0.8,
        rrf_rank=1,
        fusion="dbsf",
        vector_share=0.5,
        vector_imputed=True,
    )
    lines = explain_render.explain_text(mkhit("c", trace=tr), None, width=54).plain.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  vector share    50% of full-text hits"))
    rest = lines[start + 1 : start + 4]
    assert all(len(line) <= 54 for line in lines)
    assert all(line.startswith(" " * 18) and line[18] != " " for line in rest)  # clear of the labels
    assert " ".join(line.strip() for line in [lines[start][18:], *rest]).startswith(
        "50% of full-text hits embedded: vector weight × 0.50; the others' vector terms are their full-text readings"
    )
    # Without a width (the detail screen's text, a wide pane) rows are one line each, as before.
    unwrapped = explain_render.explain_text(mkhit("c", trace=tr), None).plain
    assert "the others' vector terms are their full-text readings" in unwrapped


def test_empty_pages_and_mmr_order_are_explained():
    none = _resp(results=())
    assert str(render.order_note(none)).startswith("No hits: try other words")
    filtered = _resp(results=(), filter_applied={"path_globs": ["docs/**"], "excluded_terms": ["async"]})
    assert str(render.order_note(filtered)) == (
        "No hits: remove a filter or an exclusion (path_globs, excluded_terms) to widen it."
    )
    plain = _resp(results=(mkhit("alpha"),))
    assert render.order_note(plain) is None
    mmr = HitTrace(mmr=MMRTrace(pick=1, relevance=1.0, max_similarity=0.0, penalty=0.0, value=0.7))
    resp = _resp(results=(mkhit("alpha", trace=mmr),))
    assert render.order_note(resp) is None  # said on the summary line itself, so compare rows stay level
    assert "· MMR order, not by score" in render.response_summary(resp).plain


def test_a_chunk_before_the_first_heading_shows_its_notes_title():
    h1 = mkhit("# tar\n\nArchiving utility.", title=None, heading=None, level=None)
    assert render.hit_title(h1).plain == "notes/a.md › tar"
    titled = mkhit("Body first.", title="From frontmatter", heading=None, level=None)
    assert render.hit_title(titled).plain == "notes/a.md › From frontmatter"
    bare = mkhit("Body first.", title=None, heading=None, level=None)
    assert render.hit_title(bare).plain == "notes/a.md"
    assert render.hit_title(mkhit("## x", title=None)).plain == "notes/a.md › Intro"  # a heading wins


def test_a_cut_title_keeps_the_heading_and_cuts_the_path_in_its_middle():
    hit = mkhit("x", path="ranking/deep/parent-retriever.md", heading="Settings")
    assert render.hit_title(hit).plain == "ranking/deep/parent-retriever.md › Settings"
    assert render.hit_title(hit, 40).plain == "ranking/…/parent-retriever.md › Settings"
    assert render.hit_title(hit, 32).plain == "…/parent-retriever.md › Settings"
    tight = render.hit_title(hit, 22).plain
    assert tight.endswith(".md › Settings") and "…" in tight and cell_len(tight) == 22
    long_heading = mkhit("x", path="ranking/parent-retriever.md", heading="The parent retriever in detail")
    cut = render.hit_title(long_heading, 30).plain
    assert cut.startswith("parent") and ".md › The parent" in cut and cut.endswith("…") and cell_len(cut) <= 30
    cjk = mkhit("x", path="東京/設定ノート集.md", heading="東京の設定")
    for width in range(1, 60):
        assert cell_len(render.hit_title(cjk, width).plain) <= width


def test_note_path_keeps_the_file_name_whole_while_it_can():
    assert render.note_path("a/b/c/name.md", 40) == "a/b/c/name.md"
    assert render.note_path("a/bbbb/cccc/name.md", 16) == "a/…/cccc/name.md"
    assert render.note_path("ranking/parent-retriever.md", 21) == "…/parent-retriever.md"
    assert render.note_path("ranking/parent-retriever.md", 12) == "parent-r….md"
    assert render.note_path("a/東京の設定.md", 9) == "東京….md"


def test_short_path_uses_tilde_and_an_ellipsis_in_the_middle():
    home = "/home/ann"
    assert render.short_path("/home/ann/notes/kb", 40, home) == "~/notes/kb"
    assert render.short_path("/home/annex/kb", 40, home) == "/home/annex/kb"  # not under home
    assert render.short_path("/work/shared/data/tldr/kb", 16, home) == "/work/…/tldr/kb"
    assert render.short_path("/work/shared/data/tldr/kb", 11, home) == "/work/…/kb"
    long_last = render.short_path("/work/" + "x" * 40, 15, home)
    assert long_last.startswith("/work/x") and "…" in long_last and cell_len(long_last) == 15
    cjk = render.short_path("/home/ann/東京の設定ノート集/メモ", 12, home)
    assert cjk == "~/…/メモ" and cell_len(cjk) <= 12
    for width in range(1, 30):
        assert cell_len(render.short_path("/a/東京の設定ノート集/かなり長いフォルダ名", width, home)) <= width


# ---------------------------------------------------------------- reflow

REFLOW_SOURCE = (
    "# Heading\n"
    "A paragraph hard-wrapped\n"
    "   by its editor at\n"
    "forty columns.\n"
    "\n"
    "- a list item\n"
    "  its continuation\n"
    "- another item\n"
    "\n"
    "> a quote line\n"
    "> and its second line\n"
    "\n"
    "| a | b |\n"
    "|---|---|\n"
    "\n"
    "```\n"
    "code line one\n"
    "code line two\n"
    "```\n"
    "\n"
    "    indented code\n"
    "    second line\n"
    "\n"
    "Hard break here  \n"
    "next line\n"
    "東京の設定\n"
    "ファイル 👨\u200d👩\u200d👧 cafe\u0301"
)


def test_reflow_joins_paragraph_lines_and_keeps_blocks():
    shown, where = render.reflow(REFLOW_SOURCE)
    assert len(where) == len(REFLOW_SOURCE) + 1
    assert "A paragraph hard-wrapped by its editor at forty columns.\n" in shown
    for kept in (
        "# Heading\n",
        "- a list item\n  its continuation\n- another item\n",
        "> a quote line\n> and its second line\n",
        "| a | b |\n|---|---|\n",
        "```\ncode line one\ncode line two\n```\n",
        "    indented code\n    second line\n",
    ):
        assert kept in shown, kept
    assert "Hard break here  \nnext line 東京の設定 ファイル" in shown  # a hard break stays; the rest joins


def test_reflow_leaves_text_without_soft_breaks_alone():
    text = "one line\n\n- list\n- list"
    assert render.reflow(text) == (text, list(range(len(text) + 1)))


def test_highlights_land_on_the_same_characters_after_reflow():
    content = REFLOW_SOURCE
    words = [
        "editor",
        "forty",
        "columns",
        "continuation",
        "second",
        "東京",
        "ファイル",
        "👨\u200d👩\u200d👧",
        "cafe\u0301",
    ]
    spans = [(content.index(w), content.index(w) + len(w)) for w in words]
    across = (content.index("wrapped"), content.index("by its") + 2)  # a span across a joined break
    hs = content.index("A paragraph")
    he = content.index("columns.") + len("columns.")
    hit = mkhit(
        content,
        spans=[*spans, across],
        expanded=ExpandedFrom(kind="adjacent", from_index=0, to_index=2, hit_start=hs, hit_end=he),
    )
    t = render.detail_text(hit, MATCH, EXP)
    assert styled(t, MATCH) == ["wrapped by", *words[:4], "second", *words[5:]]
    shaded = styled(t, EXP)
    assert shaded[0] == "# Heading\n" and shaded[1].startswith("\n\n- a list item")
    assert t.plain[len("# Heading\n") :].startswith("A paragraph hard-wrapped by its editor at forty columns.")


@given(
    st.lists(
        st.sampled_from(["word", "東京", " ", "  ", "\n", "\n\n", "- ", "> ", "```", "    ", "|", "#"]), max_size=40
    ),
    st.data(),
)
def test_reflow_keeps_every_shown_character_where_the_spans_say(parts, data):
    text = "".join(parts)
    shown, where = render.reflow(text)
    assert len(where) == len(text) + 1 and where[0] == 0 and where[-1] == len(shown)
    assert all(a <= b for a, b in itertools.pairwise(where))  # spans keep their order and never invert
    for i, ch in enumerate(text):
        if not ch.isspace():
            assert shown[where[i]] == ch  # every visible character is where the map says
    assert shown.replace("\n", " ").split() == text.replace("\n", " ").split()  # nothing lost or added


def test_the_explain_panel_shows_why_the_page_is_or_is_not_low_confidence():
    from groove_tui.engine.retrieve.fusion import confidence_reading

    low = explain_render.explain_text(None, None, confidence=confidence_reading([1.9, 1.8, 1.7], 1.5, 2.0, 2)).plain
    assert "Page" in low and "low confidence  yes (all three tests hold)" in low
    assert "max/mean 1.0556 < 1.5" in low and "best 1.9000 < 2.0000" in low
    assert "the first leads the second by 0.1000 < 0.1667" in low
    sure = explain_render.explain_text(None, None, confidence=confidence_reading([3.4, 1.7, 1.5], 1.5, 2.0, 2)).plain
    assert "no (it takes all three tests)" in sure and "3.4000 ≥ 2.0000" in sure and "1.7000 ≥ 0.1667" in sure
    groove = explain_render.explain_text(None, None, confidence=confidence_reading([0.3, 0.3], 1.5)).plain
    assert "low confidence  yes" in groove and "near tie" not in groove
    off = explain_render.explain_text(None, None, confidence=confidence_reading([0.3, 0.3], 0.0)).plain
    assert "off (min_confidence_ratio 0)" in off
    lonely = explain_render.explain_text(None, None, confidence=confidence_reading([1.2], 1.5, 2.0, 2)).plain
    assert "no reading (under two hits, or no score above 0)" in lonely and "no reading (under two hits)" in lonely
    assert "best 1.2000 < 2.0000" in lonely and "low confidence  no (" in lonely
    assert "Page" not in explain_render.explain_text(None, None).plain
