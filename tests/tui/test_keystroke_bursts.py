"""No lost keystrokes: keys that arrive together (a fast typist, a paste, a terminal that batches input)
must all land. `burst` hands every key to the driver before the app handles the first one, which is what
a terminal delivering several keys in one read does; `pilot.press` waits for idle after each key."""

from __future__ import annotations

from textual import events

from .helpers import SIZE, make_app, search, settle


async def burst(app, pilot, *keys: str) -> None:
    for key in keys:
        char = key if len(key) == 1 else " " if key == "space" else None
        event = events.Key(key, char)
        event.set_sender(app)
        app._driver.send_message(event)
    await settle(app, pilot)


async def test_a_burst_in_the_glob_and_tag_fields_keeps_every_key(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "rust")
        globs = app.screen.query_one("#left-globs")
        globs.focus()
        await burst(app, pilot, *"config")
        assert globs.value == "config"
        await burst(app, pilot, "ctrl+u", *"rust/*.md")
        assert globs.value == "rust/*.md"
        assert app.run_configs["left"].path_globs == ("rust/*.md",) or app.run_configs["left"].path_globs == [
            "rust/*.md"
        ]
        tags = app.screen.query_one("#left-tags")
        tags.focus()
        await burst(app, pilot, *"async", ",", "space", *"rust")
        assert tags.value == "async, rust"
        assert list(app.run_configs["left"].tags) == ["async", "rust"]


async def test_a_burst_in_the_limit_field_keeps_every_key(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "rust")
        limit = app.screen.query_one("#left-limit")
        limit.focus()
        await burst(app, pilot, "end", "backspace", "backspace", "3")
        assert limit.value == "3"
        assert app.run_configs["left"].limit == 3


async def test_a_burst_on_a_slider_keeps_every_step(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "rust")
        slider = app.screen.query_one("#left-lambda")
        slider.focus()
        start = slider.value
        await burst(app, pilot, *["left"] * 5)
        assert round(slider.value, 2) == round(start - 0.05, 2) == round(app.run_configs["left"].lam, 2)


async def test_move_then_judge_in_one_burst_judges_the_new_row(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tokio")
        pane = app.screen.query_one("#pane-left")
        pane.list.focus()
        await settle(app, pilot)
        second = pane.rows[1].hit
        await burst(app, pilot, "down", "alt+0")
        assert pane.highlighted_row.hit == second
        assert app.golden_session.grade_of("tokio", second.path, second.heading) == 0
        first = pane.rows[0].hit
        assert app.golden_session.grade_of("tokio", first.path, first.heading) is None


async def test_a_burst_in_the_query_keeps_every_key(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        query = app.screen.query_one("#query")
        await burst(app, pilot, *"rust", "ctrl+u", *"tokio", "backspace", "o")
        assert query.value == "tokio" and app.query_text == "tokio"
