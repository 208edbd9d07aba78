"""Regenerate the guide's screenshots: `.venv/bin/python -m tests.tui.screenshots [docs/screenshots]`.

Uses the deterministic FakeEngine so the pictures are stable; the SVGs are Textual's own export.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from .helpers import SIZE, make_app, settle, wait_until


async def shoot(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        app = make_app(Path(tmp))
        async with app.run_test(size=SIZE) as pilot:

            async def save(name: str) -> None:
                await settle(app, pilot)
                path = out / f"{name}.svg"
                path.write_text(app.export_screenshot(title=f"groove-tui — {name}"), encoding="utf-8")
                written.append(path)

            app.screen.query_one("#query").value = "tokio runtime"
            await settle(app, pilot)
            await save("main")
            app.screen.query_one("#pane-left").list.focus()
            await pilot.press("f6")
            await save("explain")
            await pilot.press("f6")
            app.set_run_config("left", replace(app.run_configs["left"], parent=True))
            await settle(app, pilot)
            await pilot.press("enter")
            await save("detail")
            await pilot.press("escape")
            await pilot.press("f5")
            await settle(app, pilot)
            await pilot.press("f9")
            await settle(app, pilot)
            await save("compare")
            await pilot.press("f1")
            await save("help")
        app = make_app(Path(tmp))
        async with app.run_test(size=(60, 20)) as pilot:  # the narrow, short layout (docs/guide.md)
            app.screen.query_one("#query").value = "tokio runtime"
            await settle(app, pilot)
            path = out / "narrow.svg"
            path.write_text(app.export_screenshot(title="groove-tui — 60×20"), encoding="utf-8")
            written.append(path)
        with tempfile.TemporaryDirectory() as tmp2:
            from .test_golden import write_golden

            app = make_app(Path(tmp2), golden=str(write_golden(Path(tmp2))))
            async with app.run_test(size=SIZE) as pilot:
                app.set_run_config("left", replace(app.run_configs["left"], mmr=True, lam=0.9))
                await settle(app, pilot)
                app.set_run_config("left", replace(app.run_configs["left"], lam=0.2))
                app.screen.query_one("#query").value = "tokio"
                await settle(app, pilot)
                app.screen.query_one("#pane-left").list.focus()
                await pilot.press("down", "down", "alt+0")
                await settle(app, pilot)
                app.clear_notifications()  # they name temporary paths
                await settle(app, pilot)
                path = out / "golden.svg"
                path.write_text(app.export_screenshot(title="groove-tui — golden"), encoding="utf-8")
                written.append(path)
        written += await _tuning(out)
    written += await _why(out)
    return written


async def _tuning(out: Path) -> list[Path]:
    """The sweep chart and the wins-and-losses table (docs/guide.md, "Tuning")."""
    from .test_golden import write_golden
    from .test_tuning_screens import GOLDEN

    written = []
    with tempfile.TemporaryDirectory() as tmp:
        app = make_app(Path(tmp), golden=str(write_golden(Path(tmp), GOLDEN)))
        async with app.run_test(size=SIZE) as pilot:

            async def save(name: str) -> None:
                await settle(app, pilot)
                app.clear_notifications()  # they name temporary paths
                await settle(app, pilot)
                path = out / f"{name}.svg"
                path.write_text(app.export_screenshot(title=f"groove-tui — {name}"), encoding="utf-8")
                written.append(path)

            await settle(app, pilot)
            app.screen.query_one("#left-lambda").focus()
            await pilot.press("ctrl+r")
            await settle(app, pilot)
            await save("sweep")
            await pilot.press("escape")
            await pilot.press("f5")
            await settle(app, pilot)
            app.set_run_config("right", replace(app.run_configs["left"], mmr=True, lam=0.2))
            await settle(app, pilot)
            await pilot.press("ctrl+b")
            await save("wins-losses")
    return written


async def _why(out: Path) -> list[Path]:
    """The walk of a note fused below the page (docs/guide.md, "Why is this note (not) here?")."""
    from groove_tui.tui.screens.why import WhyScreen

    from .test_why_not import WhyEngine, open_picker_from_results

    with tempfile.TemporaryDirectory() as tmp:
        app = make_app(Path(tmp), WhyEngine())
        async with app.run_test(size=SIZE) as pilot:
            await open_picker_from_results(app, pilot, "tokio runtime")
            await pilot.press(*"errors", "enter")
            await wait_until(pilot, lambda: isinstance(app.screen, WhyScreen), what="the walk")
            await settle(app, pilot)
            app.clear_notifications()
            await settle(app, pilot)
            path = out / "why.svg"
            path.write_text(app.export_screenshot(title="groove-tui — why not"), encoding="utf-8")
    return [path]


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
    for p in asyncio.run(shoot(out)):
        print(p)


if __name__ == "__main__":
    main()
