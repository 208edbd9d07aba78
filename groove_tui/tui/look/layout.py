"""Breakpoints: one place that turns the terminal size into screen classes; groove.tcss does the layout.

-wide    >= 140 columns: settings | results | preview side by side
-medium  100-139 columns: the preview moves under the results
-narrow  < 100 columns: the settings become a drawer (closed at first); compare shows one side
-short   < 24 rows, not wide: the stacked preview hides (the detail view still shows the hit) and
         the query loses its border
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual import getters
    from textual.widget import Widget as _WidgetPart

    from groove_tui.tui.shell import AppShell
else:
    _WidgetPart = object

WIDE = 140
NARROW = 100
SHORT = 24


def width_class(width: int) -> str:
    return "-wide" if width >= WIDE else "-medium" if width >= NARROW else "-narrow"


class Responsive(_WidgetPart):
    """Screen mixin: keeps the breakpoint classes in step with the terminal. A screen overrides
    `breakpoint_changed` to reset state that depends on the width class (a drawer's default)."""

    if TYPE_CHECKING:
        app = getters.app(AppShell)

    width_class: str = ""

    def on_mount(self) -> None:
        self.apply_size(self.app.size.width, self.app.size.height)

    def on_resize(self, event) -> None:
        self.apply_size(event.size.width, event.size.height)

    def on_screen_resume(self) -> None:  # the terminal may have changed while another screen was on top
        self.apply_size(self.app.size.width, self.app.size.height)

    def apply_size(self, width: int, height: int) -> None:
        new = width_class(width)
        for cls in ("-wide", "-medium", "-narrow"):
            self.set_class(cls == new, cls)
        self.set_class(height < SHORT and new != "-wide", "-short")  # side by side, the preview fits
        if new != self.width_class:
            self.width_class = new
            self.breakpoint_changed()

    def breakpoint_changed(self) -> None:
        pass
