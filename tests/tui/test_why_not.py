"""Why is this note (not) here? The note picker (key, palette, fuzzy filter) and the walk's view."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from groove_tui.engine.errors import UnknownNote
from groove_tui.engine.types import LegStanding, SearchParams, WhyFix, WhyReport, WhyStep
from groove_tui.tui.screens.main import MainScreen
from groove_tui.tui.screens.note_picker import NotePicker, entries, rank
from groove_tui.tui.screens.why import WhyScreen

from .fakes import FakeEngine
from .helpers import SIZE, make_app, search, settle, wait_until

LEGS = (
    LegStanding("vector", True, 14, 50, 0.91),
    LegStanding("fts", True, 12, 10, -1.2, missing=("runtime",)),
    LegStanding("word", False, None, 10, missing=("tokio", "runtime"), note="no whole word matches"),
)


def _report(query: str, path: str, heading: str | None, verdict: str) -> WhyReport:
    """Hand-built walks with the engine's shape, one per verdict the view words differently."""
    index = WhyStep("index", True, f"1 section of {path} indexed")
    if verdict == "below_page":
        legs = "vector: rank 14 of pool 50 (in the pool); fts: rank 12 of pool 10 (below the pool); word: no match"
        return WhyReport(
            query,
            path,
            heading,
            "below_page",
            "fused below the page: rank 11 with 0.4210 (vector 0.3100 + fts 0.1110), under rank 10's 0.5020",
            (
                index,
                WhyStep("filters", True, "passes every filter"),
                WhyStep("legs", True, legs),
                WhyStep("pool", True, "in the pool of vector"),
                WhyStep("fusion", False, "fused at rank 11 with 0.4210 (vector 0.3100 + fts 0.1110)"),
            ),
            legs=LEGS,
            section="Error handling",
            line=18,
            fused_rank=11,
            fused_score=0.421,
            fused_terms=(("vector", 0.31), ("fts", 0.111)),
            last_shown=(10, 0.502, (("vector", 0.402), ("fts", 0.1))),
            fixes=(WhyFix("limit", 11, 11), WhyFix("fts_weight", 2.0, 7)),
        )
    if verdict == "mmr":
        return WhyReport(
            query,
            path,
            heading,
            "mmr",
            "fused at rank 4 but moved off the page by MMR: too like rank 2, rust/async.md",
            (index, WhyStep("fusion", True, "fused at rank 4 with 0.5000"), WhyStep("mmr", False, "too like rank 2")),
            legs=LEGS[:2],
            fused_rank=4,
            fused_score=0.5,
            fused_terms=(("vector", 0.5),),
            last_shown=(3, 0.6, (("vector", 0.6),)),
            by="rank 2, rust/async.md",
        )
    if verdict == "merged":
        by = "rank 1, rust/async.md # Tokio runtime"
        return WhyReport(
            query,
            path,
            heading,
            "merged",
            f"on the page inside hit {by}: the parent retriever merged it into that hit",
            (index, WhyStep("parent", True, f"merged into {by} by the parent retriever")),
            shown_rank=1,
            by=by,
        )
    if verdict == "shown":
        return WhyReport(
            query,
            path,
            heading,
            "shown",
            "on the page at rank 1",
            (index, WhyStep("page", True, "shown at rank 1")),
            shown_rank=1,
        )
    return WhyReport(
        query,
        path,
        heading,
        "not_matched",
        "no leg found it: fts: no match (lacks tokio)",
        (index, WhyStep("legs", False, "fts: no match (lacks tokio)")),
        legs=(LegStanding("fts", False, None, 10, missing=("tokio",)),),
        section="Weird [bold]markup[/bold]",
        line=3,
    )


VERDICTS = {
    "rust/errors.md": "below_page",
    "python/asyncio.md": "mmr",
    "rust/ownership.md": "merged",
    "rust/async.md": "shown",
    "notes/markup.md": "not_matched",
}


@dataclass
class WhyEngine(FakeEngine):
    """The fake engine with notes that have sections, and a walk per note (`VERDICTS`)."""

    whys: list[tuple[str, str, SearchParams]] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)  # notes deleted since the picker listed them

    def notes(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return tuple((d.path, (d.heading,)) for d in sorted(self.docs, key=lambda d: d.path))

    def why(self, query, target, params, *, fixes=True, ranks=True, response=None) -> WhyReport:
        self.whys.append((query, target, params))
        path, _, heading = target.partition("#")
        if path in self.gone:
            raise UnknownNote(f"no note {path!r} in the index; nearest: rust/async.md", ("rust/async.md",))
        return _report(query, path, heading or None, VERDICTS.get(path, "not_matched"))


def view_text(app) -> str:
    """The walk's text, every line of it (the view may scroll), as a 200-column terminal prints it."""
    import io

    from rich.console import Console

    console = Console(width=200, file=io.StringIO(), record=True)
    console.print(app.screen.query_one("#why-view").content)
    return console.export_text()


def picker_labels(app) -> list[str]:
    options = app.screen.query_one("#picker-options")
    return [str(options.get_option_at_index(i).prompt).split("  on the page")[0] for i in range(options.option_count)]


async def open_picker_from_results(app, pilot, query: str = "tokio") -> None:
    await search(app, pilot, query)
    app.screen.query_one("#pane-left").list.focus()
    await pilot.press("ctrl+w")
    await wait_until(pilot, lambda: isinstance(app.screen, NotePicker), what="the picker")
    await settle(app, pilot)


async def test_ctrl_w_in_the_results_picks_a_note_and_shows_its_walk(tmp_path):
    eng = WhyEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await open_picker_from_results(app, pilot)
        assert "rust/errors.md" in picker_labels(app)
        await pilot.press(*"errors")
        await settle(app, pilot)
        assert picker_labels(app)[0] == "rust/errors.md"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, WhyScreen), what="the walk")
        await settle(app, pilot)
        text = view_text(app)
        assert "rust/errors.md: fused below the page" in text
        assert "✗ fusion" in text and "✓ filters" in text
        assert "14 / 50" in text and "lacks tokio, runtime" in text  # each leg's standing
        assert "this note" in text and "0.4210" in text and "last shown" in text and "0.5020" in text
        fixes = _report("tokio", "rust/errors.md", None, "below_page").fixes
        assert [f"• {fix.text()}" in text for fix in fixes] == [True, True]
        query, target, params = eng.whys[-1]
        assert (query, target) == ("tokio", "rust/errors.md") and params == app.run_configs["left"].to_params(
            app.base_params, app.reranker_model
        )
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, MainScreen)


async def test_the_palette_opens_the_picker(tmp_path):
    from textual.command import CommandList, CommandPalette

    app = make_app(tmp_path, WhyEngine())
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tokio")
        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press(*"why is a note")
        await wait_until(
            pilot, lambda: app.screen.query_one(CommandList).highlighted is not None, what="palette matches"
        )
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, NotePicker), what="the picker")


async def test_the_picker_filters_fuzzily_and_lists_sections(tmp_path):
    app = make_app(tmp_path, WhyEngine())
    async with app.run_test(size=SIZE) as pilot:
        await open_picker_from_results(app, pilot)
        labels = picker_labels(app)
        assert "rust/async.md" in labels and "rust/async.md # Tokio runtime" in labels
        assert "notes/markup.md # Weird [bold]markup[/bold]" in labels  # literal, not markup
        await pilot.press(*"rsown")  # a subsequence of rust/ownership.md
        await settle(app, pilot)
        assert picker_labels(app)[:2] == ["rust/ownership.md", "rust/ownership.md # Borrowing"]
        await pilot.press("down", "enter")  # the section
        await wait_until(pilot, lambda: isinstance(app.screen, WhyScreen), what="the walk")
        await settle(app, pilot)
        assert app._engine.whys[-1][1] == "rust/ownership.md#Borrowing"
        # on the page inside another hit: which one
        assert "on the page inside the hit at rank 1, rust/async.md # Tokio runtime" in view_text(app)


async def test_a_filter_with_no_match_says_so_and_enter_does_nothing(tmp_path):
    app = make_app(tmp_path, WhyEngine())
    async with app.run_test(size=SIZE) as pilot:
        await open_picker_from_results(app, pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert not any(t.startswith("search: why is a note") for t in titles)  # not a second picker
        await pilot.press(*"zzzq")
        await settle(app, pilot)
        assert picker_labels(app) == []
        assert "No note or section matches" in str(app.screen.query_one("#picker-count").content)
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, NotePicker)
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, MainScreen) and app._engine.whys == []


async def test_the_picker_marks_the_notes_on_the_page(tmp_path):
    app = make_app(tmp_path, WhyEngine())
    async with app.run_test(size=SIZE) as pilot:
        await open_picker_from_results(app, pilot)
        options = app.screen.query_one("#picker-options")
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert "rust/async.md  on the page at rank 1" in prompts
        assert "rust/ownership.md" in prompts  # not a hit for "tokio"


@pytest.mark.parametrize(
    ("note", "says"),
    [
        ("python/asyncio.md", "No single setting change tried does"),
        ("notes/markup.md", "No setting change does: no leg found it"),
        ("rust/async.md", "rust/async.md: on the page at rank 1"),
    ],
)
async def test_each_verdict_says_what_would_bring_it_in(tmp_path, note, says):
    app = make_app(tmp_path, WhyEngine())
    async with app.run_test(size=SIZE) as pilot:
        await open_picker_from_results(app, pilot)
        await pilot.press(*note)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, WhyScreen), what="the walk")
        await settle(app, pilot)
        text = view_text(app)
        assert says in text
        if note == "notes/markup.md":
            assert "section examined: Weird [bold]markup[/bold] (line 3)" in text
        if note == "rust/async.md":
            assert "What would bring it in" not in text


async def test_a_note_gone_from_the_index_says_so_with_the_nearest(tmp_path):
    eng = WhyEngine(gone={"rust/errors.md"})
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await open_picker_from_results(app, pilot)
        await pilot.press(*"errors", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, WhyScreen), what="the walk")
        await settle(app, pilot)
        text = view_text(app)
        assert "rust/errors.md: not in the index" in text and "Nearest in the index" in text
        assert "• rust/async.md" in text


async def test_without_a_query_there_is_no_walk_to_show(tmp_path):
    app = make_app(tmp_path, WhyEngine())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.check_action("why_not", ()) is False
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert not any(t.startswith("search: why is a note") for t in titles)
        app.action_why_not()
        await settle(app, pilot)
        assert isinstance(app.screen, MainScreen)
        await search(app, pilot, "tokio")
        assert app.check_action("why_not", ()) is True


async def test_in_compare_mode_the_walk_uses_the_focused_sides_settings(tmp_path):
    from dataclasses import replace

    eng = WhyEngine()
    app = make_app(tmp_path, eng)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tokio")
        await pilot.press("f5")
        await settle(app, pilot)
        app.set_run_config("right", replace(app.run_configs["right"], mmr=True, lam=0.3), sync=False)
        await settle(app, pilot)
        app.screen.query_one("#pane-right").list.focus()
        await settle(app, pilot)
        await pilot.press("ctrl+w")
        await wait_until(pilot, lambda: isinstance(app.screen, NotePicker), what="the picker")
        await settle(app, pilot)
        await pilot.press(*"errors", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, WhyScreen), what="the walk")
        await settle(app, pilot)
        params = eng.whys[-1][2]
        assert params.mmr and params.mmr_lambda == 0.3
        assert "right side:" in view_text(app)


async def test_ctrl_w_in_the_walk_picks_another_note(tmp_path):
    app = make_app(tmp_path, WhyEngine())
    async with app.run_test(size=SIZE) as pilot:
        await open_picker_from_results(app, pilot)
        await pilot.press(*"errors", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, WhyScreen), what="the walk")
        await settle(app, pilot)
        await pilot.press("ctrl+w")
        await wait_until(pilot, lambda: isinstance(app.screen, NotePicker), what="the picker again")
        assert [type(s).__name__ for s in app.screen_stack] == ["MainScreen", "NotePicker"]


# ---------------------------------------------------------------- the filter itself


def test_rank_prefers_a_whole_file_name_then_fewer_gaps():
    pool = entries(
        [
            ("osx/tart.md", ()),
            ("common/tar.md", ("Extract an archive",)),
            ("linux/startx.md", ()),
            ("common/git-commit.md", ()),
            ("linux/tc.md", ()),
        ]
    )
    best, total = rank("tar", pool)
    assert [e.label for e in best[:3]] == ["common/tar.md", "common/tar.md # Extract an archive", "osx/tart.md"]
    assert total == 4  # startx: t-a-r with a gap
    best, _ = rank("gitcm", pool)
    assert best[0].label == "common/git-commit.md"  # not linux/tc.md, whose letters spread over the folders
    best, total = rank("tar extract", pool)
    assert total == 1 and best[0].target == "common/tar.md#Extract an archive"


def test_rank_shows_at_most_the_limit_and_counts_the_rest():
    pool = entries([(f"pages/common/tool-{i}.md", (f"Usage {i}",)) for i in range(8000)])
    best, total = rank("tool", pool, limit=200)
    assert len(best) == 200 and total == 16000
    best, total = rank("", pool, limit=50)
    assert len(best) == 50 and total == 16000 and best[0].label == "pages/common/tool-0.md"


# ---------------------------------------------------------------- appearance

SIZES = {"narrow": (60, 20), "medium": (100, 30), "wide": (160, 45)}


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_snapshot_why_view_at(snap_compare, tmp_path, size):
    """The walk of a note fused below the page: steps, legs, fused score against the last hit shown, and
    what would bring it in (scrollable where it does not fit)."""

    async def run_before(pilot):
        app = pilot.app
        await open_picker_from_results(app, pilot, "tokio runtime")
        await pilot.press(*"errors", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, WhyScreen), what="the walk")
        await settle(app, pilot)
        app.clear_notifications()
        await settle(app, pilot)

    assert snap_compare(make_app(tmp_path, WhyEngine()), terminal_size=SIZES[size], run_before=run_before)


def test_snapshot_picker(snap_compare, tmp_path):
    async def run_before(pilot):
        app = pilot.app
        await open_picker_from_results(app, pilot, "tokio runtime")
        await pilot.press(*"rust")
        await settle(app, pilot)
        app.clear_notifications()
        await settle(app, pilot)

    assert snap_compare(make_app(tmp_path, WhyEngine()), terminal_size=SIZES["medium"], run_before=run_before)


# ---------------------------------------------------------------- against the real engine


async def test_the_real_engine_walks_a_picked_section(tmp_path):
    """A section under a page of two: the real walk, and the limit that brings it in, found by a search."""
    from dataclasses import replace

    from groove_tui.output.textout import WHY_HEADLINES

    from .test_real_engine import DOCS, real_app

    kb = tmp_path / "kb"
    kb.mkdir()
    for name, text in DOCS.items():
        (kb / name).write_text(text, encoding="utf-8")
    app = real_app(tmp_path, kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.set_run_config("left", replace(app.run_configs["left"], limit=2))
        await open_picker_from_results(app, pilot, "tokio runtime")
        labels = picker_labels(app)
        assert "b.md # Event loop" in labels and "markup.md # Literal [bold]x[/bold]" in labels
        await pilot.press(*"b.md event")
        await settle(app, pilot)
        assert picker_labels(app)[0] == "b.md # Event loop"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, WhyScreen), what="the walk")
        await settle(app, pilot)
        report = app.screen.report
        assert report is not None and (report.path, report.heading) == ("b.md", "Event loop")
        text = view_text(app)
        assert not report.on_page and text.startswith(f"b.md # Event loop: {WHY_HEADLINES[report.verdict]}")
        assert "Stage by stage" in text and "✓ index" in text and "Each leg" in text
        assert report.fixes and f"• {report.fixes[0].text()}" in text
    app.engine.close()
