"""groove_tui.engine.index.markdown: reference §A (groove's parser) plus our fences and size cap."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groove_tui.engine.index.markdown import (
    Frontmatter,
    build_context,
    filename_title,
    parse_frontmatter,
    parse_markdown,
    path_category_topic,
    quality_score,
)

LONG = "This sentence is comfortably longer than fifty bytes of text."  # 61 bytes
assert len(LONG.encode()) > 50


def parse(text: str, path: str = "doc.md", **kw):
    return parse_markdown(path, text, **kw)


def summary(doc) -> list[tuple]:
    return [(c.heading, c.level, c.content) for c in doc.chunks]


# ---------------------------------------------------------------- §A.3 titles and paths


@pytest.mark.parametrize(
    ("path", "title"),
    [
        ("notes/deep-dive-2026.txt", "deep dive 2026"),
        ("log_file.txt", "log file"),
        ("README", "README"),
        ("a_b--c_d.txt", "a b c d"),
        ("notes/日本語ファイル.txt", "日本語ファイル"),
        ("notes\\win_name.md", "win name"),
        (".bashrc", ".bashrc"),  # a leading dot is not an extension
        ("a.b.md", "a.b"),
        ("--_.md", None),
    ],
)
def test_filename_title(path: str, title: str | None) -> None:
    assert filename_title(path) == title


@pytest.mark.parametrize(
    ("path", "category", "topic"),
    [
        ("deep-dive/chromadb/overview.md", "deep-dive", "chromadb"),
        ("ai-news/2026-04-16.md", "ai-news", None),
        ("index.md", None, None),
    ],
)
def test_category_and_topic_from_path(path: str, category: str | None, topic: str | None) -> None:
    assert path_category_topic(path) == (category, topic)
    doc = parse(LONG, path)
    assert (doc.category, doc.topic) == (category, topic)


def test_frontmatter_topic_wins_over_path_topic_and_category_is_never_read() -> None:
    doc = parse("---\ntopic: mine\ncategory: ignored\n---\n" + LONG, "a/b/c.md")
    assert (doc.category, doc.topic) == ("a", "mine")


def test_title_is_stored_as_is_but_breadcrumb_falls_back_to_filename() -> None:
    doc = parse("---\ntitle: '  '\n---\n## Head\n" + LONG, "notes/my-note.md")
    assert doc.title == "  "
    assert doc.chunks[0].context == "my note > Head"
    untitled = parse("## Head\n" + LONG, "notes/my-note.md")
    assert untitled.title is None
    assert untitled.chunks[0].context == "my note > Head"


# ---------------------------------------------------------------- §A.8 breadcrumb


def test_build_context_rules() -> None:
    assert (
        build_context(["設計ノート", "検索パイプライン", "RRF の実装"]) == "設計ノート > 検索パイプライン > RRF の実装"
    )
    assert build_context(["Intro", "Intro", "Sub"]) == "Intro > Sub"  # title == first heading once
    assert build_context([" T ", None, "", "  ", "H"]) == "T > H"
    assert build_context([None, " ", ""]) is None
    assert build_context([]) is None
    long = build_context(["あ" * 150, "い" * 150])
    assert long is not None and len(long) == 200 and long.startswith("あ" * 150 + " > ")


def test_breadcrumbs_in_documents() -> None:
    text = (
        "---\ntitle: 設計ノート\n---\n"
        f"前書き {LONG}\n"
        f"## 検索パイプライン\n{LONG}\n"
        f"### RRF の実装\n{LONG}\n"
        f"## 次の章\n{LONG}\n"
    )
    contexts = [c.context for c in parse(text).chunks]
    assert contexts == [
        "設計ノート",
        "設計ノート > 検索パイプライン",
        "設計ノート > 検索パイプライン > RRF の実装",
        "設計ノート > 次の章",
    ]


def test_h2_after_h3_has_no_h3_ancestor() -> None:
    text = f"## A\n{LONG}\n### B\n{LONG}\n## C\n{LONG}\n"
    assert [c.context for c in parse(text, "t.md").chunks] == ["t > A", "t > A > B", "t > C"]


def test_title_equal_to_first_heading_appears_once() -> None:
    doc = parse(f"---\ntitle: Intro\n---\n## Intro\n{LONG}\n")
    assert doc.chunks[0].context == "Intro"


def test_context_is_computed_in_both_modes() -> None:
    text = f"## A\n{LONG}\n"
    assert parse(text, contextual=True) == parse(text, contextual=False)
    assert parse(text).chunks[0].context == "doc > A"


# ---------------------------------------------------------------- §A.10 quality


@pytest.mark.parametrize(
    ("content", "score"),
    [
        ("", 0.1),
        ("短い本文。", 0.1),
        ("TBD", 0.0),
        ("TODO。", 0.0),
        ("todo", 0.0),
        ("  tbd .\t", 0.0),
        ("詳細は後述", 0.0),
        ("(準備中)", 0.0),
        ("coming SOON", 0.0),
        ("TBD later", 0.1),  # whole-string match only
        ("x" * 30, 0.7),
        ("x" * 79, 0.7),
        ("x" * 80, 1.0),
        ("これはちょうど三十文字を少しだけ超える程度の説明文で、改行はない。", 0.7),
        ("あ" * 100, 1.0),
        ("two\nlines", 0.4),  # multi-line under 30 chars
        ("line one\r\nline two", 0.4),  # CRLF still has a newline
        ("\n\n  " + "y" * 40 + "  \n", 0.7),  # trimmed before counting
    ],
)
def test_quality_score(content: str, score: float) -> None:
    assert quality_score(content) == score


def test_chunks_carry_quality_and_token_count() -> None:
    doc = parse("あ" * 100)
    (chunk,) = doc.chunks
    assert chunk.quality_score == 1.0
    assert chunk.token_count == 75  # 300 UTF-8 bytes / 4, not 100 chars / 4
    assert parse("abcdefg").chunks[0].token_count == 1


# ---------------------------------------------------------------- §A.2 frontmatter


def test_frontmatter_fields() -> None:
    text = "---\ntitle: T\ndate: 2026-04-10\ntopic: tp\ndepth: 1\ntags: [a, b]\nother: {x: 1}\n---\n" + LONG
    fm, body, offset, warning = parse_frontmatter(text)
    assert fm == Frontmatter(title="T", date="2026-04-10", topic="tp", depth="1", tags=("a", "b"))
    assert (body, offset, warning) == (LONG, 8, None)
    doc = parse(text)
    assert (doc.title, doc.date, doc.topic, doc.depth, doc.tags, doc.warnings) == (
        "T", "2026-04-10", "tp", "1", ("a", "b"), ()
    )  # fmt: skip


@pytest.mark.parametrize(
    ("yaml_line", "field", "value"),
    [
        ("date: 2026-4-1", "date", "2026-4-1"),  # no timestamp resolution: the string as written
        ("date: '2026-04-10'", "date", "2026-04-10"),
        ("date: !!timestamp 2026-04-10", "date", "2026-04-10"),  # datetime.date → ISO
        ("date: 20260410", "date", "20260410"),
        ("depth: 1.5", "depth", "1.5"),
        ("depth: deep", "depth", "deep"),
        ("title: yes", "title", "yes"),  # YAML 1.2: only true/false are booleans
        ("topic: 12:30", "topic", "12:30"),  # no YAML 1.1 sexagesimal ints
        ("title:", "title", None),
        ("tags:", "tags", ()),
    ],
)
def test_frontmatter_scalars(yaml_line: str, field: str, value: object) -> None:
    fm, _, _, warning = parse_frontmatter(f"---\n{yaml_line}\n---\nbody")
    assert warning is None
    assert getattr(fm, field) == value


@pytest.mark.parametrize(
    "yaml_text",
    [
        "title: [unclosed",
        "title: 2024",
        "title: true",
        "topic: [a]",
        "tags: [1]",
        "tags: [[a]]",
        "tags: notalist",
        "just a string",
        "- a\n- b",
        "plain: x\n  bad: indent",
        "key: &a [*b]",  # unknown alias
        "!!python/object:os.system x",  # not safe: refused, not run
    ],
)
def test_bad_frontmatter_is_a_warning_and_empty(yaml_text: str) -> None:
    text = f"---\n{yaml_text}\n---\n{LONG}\n"
    doc = parse(text, "a/b.md")
    assert len(doc.warnings) == 1 and doc.warnings[0].startswith("invalid frontmatter: ")
    assert "\n" not in doc.warnings[0]
    assert (doc.title, doc.date, doc.depth, doc.tags) == (None, None, None, ())
    assert summary(doc) == [(None, None, LONG)]  # the YAML part is dropped from the body
    assert doc.chunks[0].context == "b"


def test_yaml_error_names_the_file_line() -> None:
    _, body, _, warning = parse_frontmatter("---\ntitle: ok\ntags: [a\n---\nbody")
    assert body == "body"
    assert warning is not None and "line 3" in warning


def test_unclosed_frontmatter_is_body() -> None:
    text = "---\ntitle: x\nno closing fence, so this is body text as before and long.\n"
    doc = parse(text)
    assert doc.title is None and doc.warnings == ()
    assert doc.chunks[0].content == text.strip()
    assert doc.chunks[0].line == 1


def test_empty_block_quirk() -> None:
    # `---\n---` is not a frontmatter block: the remainder starts with `---`, no preceding newline.
    text = f"---\n---\n{LONG}\n"
    fm, body, offset, warning = parse_frontmatter(text)
    assert (fm, body, offset, warning) == (Frontmatter(), text, 0, None)
    assert parse(text).chunks[0].content == f"---\n---\n{LONG}"
    # ... but a block holding one blank line is one.
    fm, body, offset, warning = parse_frontmatter(f"---\n\n---\n{LONG}")
    assert (fm, body, offset, warning) == (Frontmatter(), LONG, 3, None)


def test_closing_delimiter_quirks() -> None:
    # `\n---xyz` closes the block; the rest of that line starts the body.
    fm, body, offset, _ = parse_frontmatter("---\ntitle: T\n---tail text\nmore")
    assert (fm.title, body, offset) == ("T", "tail text\nmore", 2)
    doc = parse("---\ntitle: T\n---tail text is long enough to be a chunk on its own.\nmore")
    assert doc.chunks[0].line == 3
    # `----` or `---foo` open a block too.
    assert parse_frontmatter("----\ntitle: T\n---\nbody")[0].title is None  # YAML "-\ntitle: T" fails
    assert parse_frontmatter("---foo: bar\n---\nbody")[1] == "body"


def test_bom_is_stripped() -> None:
    fm, body, _, _ = parse_frontmatter("\ufeff\ufeff---\ntitle: T\n---\nbody")
    assert (fm.title, body) == ("T", "body")
    doc = parse("\ufeff" + LONG)
    assert doc.chunks[0].content == LONG


def test_crlf_document() -> None:
    text = "---\r\ntitle: T\r\ntags: [a]\r\n---\r\n\r\nintro " + LONG + "\r\n## Head\r\n" + LONG + "\r\nline 2\r\n"
    doc = parse(text)
    assert (doc.title, doc.tags) == ("T", ("a",))
    assert summary(doc) == [(None, None, "intro " + LONG), ("Head", 2, LONG + "\nline 2")]
    assert [c.line for c in doc.chunks] == [6, 7]
    assert all("\r" not in c.content for c in doc.chunks)


# ---------------------------------------------------------------- §A.4 headings


def test_heading_detection() -> None:
    text = (
        f"# H1 stays {LONG}\n"
        f"## Foo ##\n{LONG}\n"
        f"    ### indented\n{LONG}\n"
        f"#### H4 is content\n##x is content\n##  \n## \t spaced \t\n{LONG}\n"
    )
    doc = parse(text)
    assert summary(doc) == [
        (None, None, f"# H1 stays {LONG}"),
        ("Foo ##", 2, LONG),
        ("indented", 3, f"{LONG}\n#### H4 is content\n##x is content\n##"),  # `##  ` trims to `##`
        ("spaced", 2, LONG),
    ]


def test_rust_trim_and_lines() -> None:
    # U+3000 is White_Space (trimmed); U+001C is not (Python's strip() would eat it);
    # U+2028 and \x0c are not line breaks for Rust lines().
    doc = parse(f"## 見出し\u3000\n{LONG}\n## a\x1c\n{LONG}\u2028{LONG}\x0c## not a heading\n")
    assert [c.heading for c in doc.chunks] == ["見出し", "a\x1c"]
    assert doc.chunks[1].content == f"{LONG}\u2028{LONG}\x0c## not a heading"
    # `##` followed by an ideographic space is not `## `
    assert parse(f"##\u3000x\n{LONG}").chunks[0].heading is None


def test_japanese_document() -> None:
    text = (
        "---\ntitle: 設計ノート\ntags: [検索, 日本語]\n---\n"
        "## 検索パイプライン\n"
        "ベクトル検索と全文検索を組み合わせ、結果を融合する。\n\n"
        "### RRF の実装\n"
        "順位の逆数を足し合わせて最終的なスコアを計算する方式です。\n"
    )
    doc = parse(text, "設計/ノート.md")
    assert doc.tags == ("検索", "日本語") and doc.category == "設計"
    assert summary(doc) == [
        ("検索パイプライン", 2, "ベクトル検索と全文検索を組み合わせ、結果を融合する。"),
        ("RRF の実装", 3, "順位の逆数を足し合わせて最終的なスコアを計算する方式です。"),
    ]
    assert doc.chunks[1].context == "設計ノート > 検索パイプライン > RRF の実装"
    assert doc.chunks[1].token_count == len(doc.chunks[1].content.encode()) // 4


def test_empty_and_blank_documents() -> None:
    assert parse("").chunks == ()
    assert parse(" \n\t\n\u3000\n").chunks == ()
    assert parse("---\ntitle: T\n---\n").chunks == ()
    (chunk,) = parse("## Only a heading\n").chunks
    assert (chunk.heading, chunk.content, chunk.quality_score, chunk.line) == ("Only a heading", "", 0.1, 1)


# ---------------------------------------------------------------- §A.5 exclude_headings


def test_exclude_headings_keeps_descendants_with_breadcrumb() -> None:
    text = (
        f"---\ntitle: T\n---\n## Public\n{LONG}\n## Secret notes\nhidden {LONG}\n### Detail\n{LONG}\n## Next\n{LONG}\n"
    )
    doc = parse(text, exclude_headings=["Secret"])
    assert [(c.heading, c.context) for c in doc.chunks] == [
        ("Public", "T > Public"),
        ("Detail", "T > Secret notes > Detail"),
        ("Next", "T > Next"),
    ]
    assert all("hidden" not in c.content for c in doc.chunks)
    assert len(parse(text, exclude_headings=["secret"]).chunks) == 4  # case-sensitive


def test_excluded_h3_drops_only_its_own_body() -> None:
    text = f"## A\n{LONG}\n### Draft\ndraft {LONG}\n## B\n{LONG}\n"
    doc = parse(text, exclude_headings=["raf"])
    assert summary(doc) == [("A", 2, LONG), ("B", 2, LONG)]


# ---------------------------------------------------------------- §A.6 the 50-byte merge


def test_merge_example() -> None:
    text = f"---\ntitle: T\n---\n## Big\n{LONG}\n## Small\ntiny\n### Smaller\nalso tiny\n## Big2\n{LONG}\n"
    doc = parse(text)
    assert summary(doc) == [
        ("Big", 2, f"{LONG}\n\n## Small\n\ntiny\n\n## Smaller\n\nalso tiny"),  # always `## `, even for h3
        ("Big2", 2, LONG),
    ]
    assert doc.chunks[0].context == "T > Big"
    assert [c.index for c in doc.chunks] == [0, 1]
    assert [c.line for c in doc.chunks] == [4, 10]


def test_merge_exact_strings_with_empty_bodies() -> None:
    # An empty first chunk is kept; a merged empty body still ends with "\n\n" (groove's exact text).
    assert summary(parse("## A\n## B\nshort\n")) == [("A", 2, "## B\n\nshort")]
    assert summary(parse(f"## A\n{LONG}\n## B\n")) == [("A", 2, f"{LONG}\n\n## B\n\n")]
    assert summary(parse("short preamble\n## B\n")) == [(None, None, "short preamble\n\n## B\n\n")]


def test_merge_counts_bytes_not_chars() -> None:
    keep = "あ" * 17  # 51 bytes
    fold = "あ" * 16  # 48 bytes
    assert len(parse(f"## A\n{LONG}\n## B\n{keep}\n").chunks) == 2
    assert summary(parse(f"## A\n{LONG}\n## B\n{fold}\n")) == [("A", 2, f"{LONG}\n\n## B\n\n{fold}")]


# ---------------------------------------------------------------- ours: fenced code


@pytest.mark.parametrize("fence", ["```", "~~~", "````", "```python", "~~~~ info ~"])
def test_headings_inside_fences_do_not_split(fence: str) -> None:
    close = fence[0] * (len(fence) - len(fence.lstrip(fence[0])))
    text = f"## Code\n{LONG}\n{fence}\n## not a heading\n### nor this\n{close}\n## After\n{LONG}\n"
    doc = parse(text)
    assert [c.heading for c in doc.chunks] == ["Code", "After"]
    assert "## not a heading\n### nor this" in doc.chunks[0].content


def test_fence_closing_rules() -> None:
    # A shorter run or the other char does not close; a longer run does.
    text = f"## A\n{LONG}\n````\n```\n~~~~\n## in\n`````\n## B\n{LONG}\n"
    assert [c.heading for c in parse(text).chunks] == ["A", "B"]
    # Backticks after the fence's own run make it inline code, not a fence.
    text = f"## A\n{LONG}\n```inline``` code\n## B\n{LONG}\n"
    assert [c.heading for c in parse(text).chunks] == ["A", "B"]
    # An indented fence counts (lines are trimmed).
    text = f"## A\n{LONG}\n   ```\n## in\n   ```\n## B\n{LONG}\n"
    assert [c.heading for c in parse(text).chunks] == ["A", "B"]


def test_unclosed_fence_runs_to_the_end() -> None:
    text = f"## A\n{LONG}\n```\n## in\n### also in\n{LONG}\n"
    (chunk,) = parse(text).chunks
    assert chunk.content.endswith(f"```\n## in\n### also in\n{LONG}")


def test_fence_inside_excluded_section_is_still_tracked() -> None:
    text = f"## Secret\n```\n## Inside\n```\n## Next\n{LONG}\n"
    assert summary(parse(text, exclude_headings=["Secret"])) == [("Next", 2, LONG)]


# ---------------------------------------------------------------- ours: the size cap


def paragraph(seed: str, nbytes: int) -> str:
    """A one-line paragraph of exactly `nbytes` ASCII bytes."""
    return (seed * nbytes)[:nbytes]


def test_split_at_paragraph_boundaries() -> None:
    paras = [paragraph(c, 400) for c in "abcdef"]
    text = "---\ntitle: T\n---\n## Long\n" + "\n\n".join(paras) + "\n"
    doc = parse(text, max_chunk_bytes=1000)
    assert [c.content for c in doc.chunks] == [f"{paras[i]}\n\n{paras[i + 1]}" for i in (0, 2, 4)]
    assert [(c.index, c.part, c.heading, c.level, c.context) for c in doc.chunks] == [
        (i, i, "Long", 2, "T > Long") for i in range(3)
    ]
    assert [c.line for c in doc.chunks] == [4, 9, 13]  # the heading, then each piece's first paragraph
    assert all(len(c.content.encode()) <= 1000 for c in doc.chunks)
    assert parse(text, max_chunk_bytes=0).chunks[0].content == "\n\n".join(paras)  # 0 = groove: no cap


def test_split_counts_japanese_bytes() -> None:
    paras = ["日本語の段落" * 33 + f"{i}。" for i in range(5)]  # 200 chars, ~600 bytes each
    doc = parse("## 長い節\n" + "\n\n".join(paras), max_chunk_bytes=1500)
    assert [c.content for c in doc.chunks] == ["\n\n".join(paras[0:2]), "\n\n".join(paras[2:4]), paras[4]]
    assert all(len(c.content) < 1500 // 2 for c in doc.chunks)  # chars would have fit far more
    assert all(len(c.content.encode()) <= 1500 for c in doc.chunks)
    assert [c.token_count for c in doc.chunks] == [len(c.content.encode()) // 4 for c in doc.chunks]


def test_giant_single_line_is_cut_at_whitespace_under_the_cap() -> None:
    giant = paragraph("xyz ", 5000)
    doc = parse(f"## G\n{LONG}\n\n{giant}\n\n{LONG}\n", max_chunk_bytes=1500)
    assert all(len(c.content.encode()) <= 1500 for c in doc.chunks)
    words = [w for c in doc.chunks for w in c.content.split()]
    assert words == LONG.split() + giant.split() + LONG.split()  # cut between words, nothing lost
    assert len(doc.chunks) == 5
    assert [c.part for c in doc.chunks] == list(range(len(doc.chunks)))
    assert {c.line for c in doc.chunks if "xyz" in c.content} == {4}  # every fragment keeps its line


def test_giant_line_without_whitespace_is_cut_at_character_boundaries() -> None:
    blob = "data:image/png;base64," + "QUJD" * 3000  # a base64 image: no whitespace at all
    japanese = "日本語の長い行" * 300  # 3-byte characters: a cut must not split one
    for line in (blob, japanese):
        doc = parse(f"## B\n{line}\n", max_chunk_bytes=1000)
        assert all(len(c.content.encode()) <= 1000 for c in doc.chunks)
        assert "".join(c.content for c in doc.chunks) == line
        assert len(doc.chunks) == -(-len(line.encode()) // 1000)  # each piece as full as the cap allows


def test_a_five_megabyte_line_makes_bounded_chunks() -> None:
    doc = parse("## Minified\n" + "x" * 5_000_000 + "\n", max_chunk_bytes=1500)
    assert max(len(c.content.encode()) for c in doc.chunks) == 1500
    assert sum(len(c.content) for c in doc.chunks) == 5_000_000


def test_giant_paragraph_splits_at_lines() -> None:
    lines = [paragraph(c, 300) for c in "abcdefghij"]
    doc = parse("## P\n" + "\n".join(lines), max_chunk_bytes=1000)
    assert "\n".join(c.content for c in doc.chunks) == "\n".join(lines)
    assert all(len(c.content.encode()) <= 1000 for c in doc.chunks)
    assert [c.line for c in doc.chunks] == [1, 5, 8, 11]  # three 300-byte lines per piece


def test_fenced_block_is_not_split_when_it_fits() -> None:
    code = "```\n" + "\n\n".join(paragraph(c, 100) for c in "abcdefgh") + "\n```"  # ~830 bytes, blank lines inside
    intro, outro = paragraph("i", 600), paragraph("o", 600)
    doc = parse(f"## F\n{intro}\n\n{code}\n\n{outro}\n", max_chunk_bytes=1000)
    assert [c.content for c in doc.chunks] == [intro, code, outro]


def test_fenced_block_over_the_cap_splits_at_lines() -> None:
    code_lines = ["```"] + [paragraph(c, 200) for c in "abcdefghij"] + ["```"]
    doc = parse("## F\n" + "\n".join(code_lines), max_chunk_bytes=1000)
    assert len(doc.chunks) > 1
    assert "\n".join(c.content for c in doc.chunks) == "\n".join(code_lines)
    assert all(len(c.content.encode()) <= 1000 for c in doc.chunks)


def test_fence_glued_to_paragraph_keeps_block_whole() -> None:
    code = "```\n" + "\n".join(paragraph(c, 100) for c in "abcde") + "\n```"
    text = "## F\n" + "\n".join(paragraph(c, 300) for c in "xyz") + "\n" + code  # one paragraph, no blanks
    doc = parse(text, max_chunk_bytes=800)
    x, y, z = (paragraph(c, 300) for c in "xyz")
    assert [c.content for c in doc.chunks] == [f"{x}\n{y}", z, code]


def test_split_avoids_tiny_pieces() -> None:
    a, b, tail = paragraph("a", 1000), paragraph("b", 495), "tail"  # a + b fit, a + b + tail do not
    doc = parse(f"## S\n{a}\n\n{b}\n\n{tail}\n", max_chunk_bytes=1500)
    assert [c.content for c in doc.chunks] == [a, f"{b}\n\n{tail}"]  # borrows a paragraph
    # When nothing else fits, the tiny piece stays on its own: no chunk exceeds the cap.
    a = paragraph("a", 1496)
    doc = parse(f"## S\n{a}\n\n{tail}\n", max_chunk_bytes=1500)
    assert [c.content for c in doc.chunks] == [a, tail]


def test_merge_happens_before_split() -> None:
    paras = [paragraph(c, 700) for c in "abc"]
    text = "## Big\n" + "\n\n".join(paras) + "\n## Small\nshort body\n## Next\n" + LONG + "\n"
    doc = parse(text, max_chunk_bytes=1500)
    assert [(c.heading, c.part, c.content) for c in doc.chunks] == [
        ("Big", 0, f"{paras[0]}\n\n{paras[1]}"),
        ("Big", 1, f"{paras[2]}\n\n## Small\n\nshort body"),
        ("Next", 0, LONG),
    ]
    assert [c.line for c in doc.chunks] == [1, 6, 9]


def test_line_numbers_with_frontmatter() -> None:
    text = "---\ntitle: T\ndate: 2026-01-01\n---\n\n\npreamble " + LONG + "\n\n## H2\n" + LONG + "\n### H3\n" + LONG
    doc = parse(text)
    assert [(c.heading, c.line) for c in doc.chunks] == [(None, 7), ("H2", 9), ("H3", 11)]
    lines = text.split("\n")
    assert lines[6].startswith("preamble") and lines[8] == "## H2" and lines[10] == "### H3"


# ---------------------------------------------------------------- properties

_WORDS = st.sampled_from(["alpha", "beta", "日本語", "検索", "x", "SECRET", "1.", "(a)", "é", "  "])
_LINE = st.lists(_WORDS, min_size=1, max_size=8).map(" ".join)


@st.composite
def documents(draw) -> tuple[str, list[str]]:
    """A document built from blocks, plus the content lines that must survive (outside excluded sections)."""
    out: list[str] = []
    expected: list[str] = []
    excluded = False
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["heading", "para", "blank", "code"]))
        if kind == "heading":
            text = draw(_LINE).strip() or "h"
            out.append(draw(st.sampled_from(["## ", "### "])) + text)
            excluded = "SECRET" in text
        elif kind == "para":
            lines = draw(st.lists(_LINE, min_size=1, max_size=4))
            out += lines
            expected += [] if excluded else lines
        elif kind == "blank":
            out.append(draw(st.sampled_from(["", "  ", "\u3000"])))
        else:
            fence = draw(st.sampled_from(["```", "~~~"]))
            inner = draw(st.lists(st.one_of(_LINE, st.just(""), _LINE.map(lambda s: "## " + s)), max_size=5))
            block = [fence, *inner, fence]
            out += block
            expected += [] if excluded else block
    return "\n".join(out), expected


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.sampled_from([0, 60, 200, 1500]), st.booleans())
def test_every_content_line_survives(doc_and_expected: tuple[str, list[str]], cap: int, crlf: bool) -> None:
    text, expected = doc_and_expected
    if crlf:
        text = text.replace("\n", "\r\n")
    doc = parse_markdown("p.md", text, exclude_headings=["SECRET"], max_chunk_bytes=cap)
    contents = [c.content for c in doc.chunks]
    squashed = "".join("".join(c.split()) for c in contents)  # a line over the cap is cut at whitespace
    for line in expected:
        needle = line.strip(" \u3000")
        if needle:
            assert any(needle in content for content in contents) or "".join(needle.split()) in squashed, needle
    if cap > 0:
        assert all(len(c.encode()) <= cap for c in contents)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(alphabet=st.characters(exclude_characters="\r", exclude_categories=["Cs"]), max_size=400)
    | st.lists(st.sampled_from(["---", "## a", "### b", "```", "~~~", "", "text", "title: [", "あい"])).map("\n".join),
    st.lists(st.sampled_from(["a", "b", "", "Secret"]), max_size=2),
    st.sampled_from([0, 30, 100, 1500]),
)
def test_parse_never_raises_and_numbers_chunks(text: str, excludes: list[str], cap: int) -> None:
    for variant in (text, text.replace("\n", "\r\n"), "\ufeff" + text):
        doc = parse_markdown("a/b.md", variant, exclude_headings=excludes, max_chunk_bytes=cap)
        assert [c.index for c in doc.chunks] == list(range(len(doc.chunks)))
        n_lines = variant.count("\n") + 1
        previous = None
        for chunk in doc.chunks:
            assert cap <= 0 or len(chunk.content.encode()) <= cap
            assert "\r" not in chunk.content or "\r" in text
            assert 1 <= chunk.line <= n_lines
            assert chunk.token_count == len(chunk.content.encode()) // 4
            assert 0.0 <= chunk.quality_score <= 1.0
            if chunk.part:
                assert previous is not None and previous.part == chunk.part - 1
                assert (previous.heading, previous.level, previous.context) == (
                    chunk.heading, chunk.level, chunk.context
                )  # fmt: skip
            if previous is not None:
                assert chunk.line >= previous.line
            previous = chunk
