"""Document filters (groove §D.5): globset semantics, dates, tags, quality, the filter_applied echo."""

from __future__ import annotations

import pytest

from groove_tui.engine.retrieve.filters import DocFilter, FilterError, compile_globs, glob_to_regex, validate_date

# ---------------------------------------------------------------- globs

GLOB_TABLE = [
    # (glob, path, matches)
    ("*.md", "a.md", True),
    ("*.md", "a/b.md", True),  # `*` crosses `/` (globset: literal_separator off)
    ("*.md", "a.txt", False),
    ("*.md", "a.md.bak", False),
    ("*.MD", "a.md", False),  # case-sensitive
    ("notes/*", "notes/a/b.md", True),
    ("**/x.md", "x.md", True),
    ("**/x.md", "a/b/x.md", True),
    ("**/x.md", "ax.md", False),
    ("docs/**", "docs/a.md", True),
    ("docs/**", "docs/a/b/c.md", True),
    ("docs/**", "docs", False),
    ("docs/**", "docsx/a.md", False),
    ("a/**/b.md", "a/b.md", True),
    ("a/**/b.md", "a/x/y/b.md", True),
    ("a/**/b.md", "ab.md", False),
    ("a**b", "a/x/b", True),  # `**` not a whole component: two plain stars
    ("**", "", True),
    ("**", "any/path.md", True),
    ("{a,b}/*.md", "a/x.md", True),
    ("{a,b}/*.md", "b/y/z.md", True),
    ("{a,b}/*.md", "c/x.md", False),
    ("{a,b{c,d}}.md", "bd.md", True),  # nested alternation
    ("{a,b{c,d}}.md", "b.md", False),
    ("{a,}x", "ax", True),
    ("{a,}x", "x", False),  # globset drops empty alternatives
    ("{docs/**,**/readme.md}", "docs/x/y.md", True),
    ("{docs/**,**/readme.md}", "a/readme.md", True),
    ("{docs/**,**/readme.md}", "a/other.md", False),
    ("a,b", "a,b", True),  # a comma outside braces is literal
    ("[!a]*", "b.md", True),
    ("[!a]*", "a.md", False),
    ("[^a]*", "a.md", False),
    ("[a-c]?.md", "b1.md", True),
    ("[a-c]?.md", "d1.md", False),
    ("[]]", "]", True),
    ("[a-]", "-", True),
    ("[a-c-e]", "d", True),  # globset extends the range: [a-e]
    ("[*]", "*", True),
    ("?.md", "a.md", True),
    ("?.md", "ab.md", False),
    ("a?b", "a/b", True),  # `?` crosses `/` too
    ("?.md", "設.md", True),  # one character (globset would need one byte: documented deviation)
    ("設定/*.md", "設定/東京.md", True),
    (r"\*.md", "*.md", True),
    (r"\*.md", "a.md", False),
    (r"a\{b\}", "a{b}", True),
    (r"\[x]", "[x]", True),
    ("a.md", "a.md", True),
    ("a.md", "abmd", False),  # `.` is literal
    ("a+(b)|c$", "a+(b)|c$", True),  # regex metacharacters are literal
    ("*.md", "a\nb.md", True),  # DOTALL, like globset's dot_matches_new_line
]


@pytest.mark.parametrize(("glob", "path", "expected"), GLOB_TABLE)
def test_glob_semantics(glob, path, expected):
    assert compile_globs([glob]).matches(path) is expected, glob_to_regex(glob)


def test_exclude_only_means_everything_except():
    m = compile_globs(["!drafts/**"])
    assert m.matches("notes/a.md")
    assert not m.matches("drafts/a.md")


def test_include_and_exclude_mix():
    m = compile_globs(["docs/**", "notes/*.md", "!docs/draft/**", "!**/*.tmp.md"])
    assert m.matches("docs/a.md")
    assert m.matches("notes/x/y.md")
    assert not m.matches("docs/draft/b.md")
    assert not m.matches("docs/c.tmp.md")
    assert not m.matches("other/c.md")


def test_only_one_bang_is_stripped():
    m = compile_globs(["!!x"])
    assert not m.matches("!x")
    assert m.matches("x")


def test_empty_list_is_an_error():
    with pytest.raises(FilterError, match="path_globs cannot be empty"):
        compile_globs([])


@pytest.mark.parametrize(
    ("glob", "why"),
    [
        ("docs/[abc", "unclosed character class"),
        ("[!]", "unclosed character class"),
        ("{a,b", "unclosed alternate group"),
        ("{a,{b}", "unclosed alternate group"),
        ("a}", "unopened alternate group"),
        ("a\\", "dangling"),
        ("[z-a]", "invalid range"),
        ("!docs/{x", "unclosed alternate group"),
    ],
)
def test_invalid_globs_name_the_glob(glob, why):
    with pytest.raises(FilterError, match=why) as info:
        compile_globs(["ok/**", glob])
    assert repr(glob) in str(info.value)


# ---------------------------------------------------------------- dates


@pytest.mark.parametrize(
    "value",
    [
        "2024",
        "2024-05",
        "2024-05-01",
        "2024-02-29",
        "2024-05-01T09:30",
        "2024-05-01T09:30:00Z",
        "2024-05-01T09:30:00.123+09:00",
        "2024-05-01 09:30:00",
    ],
)
def test_valid_dates(value):
    assert validate_date("date_from", value) == value


@pytest.mark.parametrize(
    "value", ["2024-13", "2023-02-29", "2024-5-1", "05/01/2024", "20240501", "", "2024-05-01T25:00", "yesterday", 2024]
)
def test_invalid_dates_name_parameter_value_and_forms(value):
    with pytest.raises(FilterError) as info:
        validate_date("date_to", value)
    msg = str(info.value)
    assert "date_to" in msg and repr(value) in msg and "YYYY-MM-DD" in msg


def test_date_bounds_compare_as_plain_strings():
    f = DocFilter.build(date_from="2024-05", date_to="2024-06-30")
    assert f.accepts("a.md", [], "2024-05-01", None, None, 1.0)
    assert f.accepts("a.md", [], "2024-06-30", None, None, 1.0)
    assert not f.accepts("a.md", [], "2024-04-30", None, None, 1.0)
    assert not f.accepts("a.md", [], "2024-07-01", None, None, 1.0)
    # groove's string comparison: "2024-05-01" > "2024-05", so a month upper bound excludes that month
    assert not DocFilter.build(date_to="2024-05").accepts("a.md", [], "2024-05-01", None, None, 1.0)


def test_null_date_fails_only_when_a_bound_is_set():
    assert not DocFilter.build(date_from="2024").accepts("a.md", [], None, None, None, 1.0)
    assert not DocFilter.build(date_to="2024").accepts("a.md", [], None, None, None, 1.0)
    assert DocFilter.build().accepts("a.md", [], None, None, None, 1.0)


# ---------------------------------------------------------------- tags, category, topic, quality, paths


def test_tags_any_and_all():
    any_ = DocFilter.build(tags_any=["rust", "go"])
    assert any_.accepts("a.md", ["go", "x"], None, None, None, 1.0)
    assert not any_.accepts("a.md", ["Rust"], None, None, None, 1.0)  # exact, case-sensitive
    assert not any_.accepts("a.md", [], None, None, None, 1.0)
    all_ = DocFilter.build(tags_all=["a", "b"])
    assert all_.accepts("a.md", ["b", "c", "a"], None, None, None, 1.0)
    assert not all_.accepts("a.md", ["a"], None, None, None, 1.0)
    both = DocFilter.build(tags_any=["x", "y"], tags_all=["a"])
    assert both.accepts("a.md", ["a", "y"], None, None, None, 1.0)
    assert not both.accepts("a.md", ["a"], None, None, None, 1.0)
    assert not both.accepts("a.md", ["y"], None, None, None, 1.0)


def test_category_and_topic_are_exact_and_null_never_matches():
    f = DocFilter.build(category="docs", topic="search")
    assert f.accepts("a.md", [], None, "docs", "search", 1.0)
    assert not f.accepts("a.md", [], None, "Docs", "search", 1.0)
    assert not f.accepts("a.md", [], None, None, "search", 1.0)
    assert not f.accepts("a.md", [], None, "docs", None, 1.0)


def test_quality_threshold():
    f = DocFilter.build(min_quality=0.3)
    assert f.accepts("a.md", [], None, None, None, 0.3)  # equal in float32, as groove compares
    assert f.accepts("a.md", [], None, None, None, 0.9)
    assert not f.accepts("a.md", [], None, None, None, 0.29)
    off = DocFilter.build(min_quality=0.0)
    assert off.accepts("a.md", [], None, None, None, 0.0)
    assert not off.has_any
    assert DocFilter.build(min_quality=5).min_quality == 1.0  # clamped like groove
    with pytest.raises(FilterError, match="min_quality"):
        DocFilter.build(min_quality=float("nan"))


def test_paths_are_filtered_by_globs():
    f = DocFilter.build(path_globs=["docs/**", "!docs/draft/**"])
    assert f.accepts("docs/a.md", [], None, None, None, 1.0)
    assert not f.accepts("docs/draft/a.md", [], None, None, None, 1.0)
    assert not f.accepts("notes/a.md", [], None, None, None, 1.0)


def test_all_filters_are_and_combined():
    f = DocFilter.build(path_globs=["docs/**"], tags_any=["t"], date_from="2024", category="docs", min_quality=0.5)
    ok = dict(path="docs/a.md", tags=["t"], date="2024-01-01", category="docs", topic=None, quality=0.6)
    assert f.accepts(**ok)
    for key, bad in [("path", "x/a.md"), ("tags", []), ("date", "2023-12-31"), ("category", "x"), ("quality", 0.4)]:
        assert not f.accepts(**{**ok, key: bad}), key


# ---------------------------------------------------------------- build validation, has_any, echo


def test_list_limits():
    DocFilter.build(tags_any=[f"t{i}" for i in range(64)], path_globs=["x" * 1024])
    with pytest.raises(FilterError, match=r"tags_any.*too many"):
        DocFilter.build(tags_any=[f"t{i}" for i in range(65)])
    with pytest.raises(FilterError, match=r"path_globs.*1026 bytes"):
        DocFilter.build(path_globs=["設" * 342])  # 1026 UTF-8 bytes
    with pytest.raises(FilterError, match="tags_all"):
        DocFilter.build(tags_all="notalist")


def test_build_reports_bad_globs_and_dates():
    with pytest.raises(FilterError, match=r"'\{a'"):
        DocFilter.build(path_globs=["{a"])
    with pytest.raises(FilterError, match="date_from"):
        DocFilter.build(date_from="May 2024")


def test_has_any():
    assert not DocFilter.build().has_any
    assert not DocFilter.build(path_globs=(), tags_any=[], tags_all=()).has_any
    assert DocFilter.build(min_quality=0.3).has_any  # groove over-fetches whenever the quality filter is on
    assert DocFilter.build(path_globs=["!x/**"]).has_any
    assert DocFilter.build(category="").has_any
    assert DocFilter.build(date_to="2024").has_any


def test_echo_only_given_in_groove_order():
    f = DocFilter.build(
        path_globs=["docs/**"],
        tags_any=[],
        tags_all=["a"],
        date_from=None,
        date_to="2024-12-31",
        category="docs",
        topic="t",
        min_quality=0.3,
    )
    echo = f.echo()
    assert list(echo) == ["category", "topic", "path_globs", "tags_all", "date_to"]
    assert echo == {
        "category": "docs",
        "topic": "t",
        "path_globs": ["docs/**"],
        "tags_all": ["a"],
        "date_to": "2024-12-31",
    }
    assert DocFilter.build(min_quality=0.3).echo() == {}
