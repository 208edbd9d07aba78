"""Compare mode (F5): the query under two configurations side by side, the presets that set both sides
(F7-F10, palette) and swapping them. The ranking comparison itself is compare.py; the screen is
screens/compare.py.

A mixin, like the app's other parts: the searches, the palette and the compare screen read
`app.compare_active`, and Textual runs the compare actions on the App.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groove_tui.tui.search.runconfig import NO_RERANKER, PRESETS, SIDES

if TYPE_CHECKING:
    from groove_tui.tui.shell import AppShell as _AppPart
else:
    _AppPart = object


class CompareMode(_AppPart):
    """App mixin. Owns `compare_active`; the right side's searches and scoring run only while it is set."""

    def _init_compare_mode(self) -> None:
        self.compare_active = False

    @property
    def active_sides(self) -> tuple[str, ...]:
        """The sides that search and score now: both in compare mode, else the left."""
        return SIDES if self.compare_active else ("left",)

    def action_compare(self) -> None:
        from groove_tui.tui.screens.compare import CompareScreen

        if isinstance(self.screen, CompareScreen):
            self.screen.dismiss(None)
            return
        self.enter_compare()

    def enter_compare(self, preset: str | None = None) -> None:
        from groove_tui.tui.screens.compare import CompareScreen

        self.compare_active = True
        self.header_signal.publish("compare")
        if preset is not None:
            self._apply_preset(preset)
        self.push_screen(CompareScreen())
        self.search_now()
        self.schedule_eval("right", 0)

    def leave_compare(self) -> None:
        self.compare_active = False
        self.header_signal.publish("compare")
        self.active_side = "left"
        self.workers.cancel_group(self, "search-right")
        self.workers.cancel_group(self, "eval-right")
        self.eval_progress["right"] = None

    def _apply_preset(self, name: str) -> None:
        _label, make = PRESETS[name]
        left, right = make(self.run_configs["left"])
        if name == "reranker" and not self.reranker_model:
            self.notify(NO_RERANKER, severity="warning", markup=False)
        self.set_run_config("left", left)
        self.set_run_config("right", right)

    def action_preset(self, name: str) -> None:
        from groove_tui.tui.screens.compare import CompareScreen

        if not isinstance(self.screen, CompareScreen):
            self.enter_compare(name)
            return
        self._apply_preset(name)
        self.notify(f"Preset: {PRESETS[name][0]}", markup=False, timeout=1.5)

    def action_swap_sides(self) -> None:
        left, right = self.run_configs["left"], self.run_configs["right"]
        self.set_run_config("left", right)
        self.set_run_config("right", left)
