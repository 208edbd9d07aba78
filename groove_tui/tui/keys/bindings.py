"""The App's global keys, and what decides whether each one applies now (the focused hit, results shown,
unsaved judgments, a query typed). A screen's own keys are in its `BINDINGS`; the palette is keys/commands.py.

A mixin, like the app's other parts: Textual calls `check_action` on the App, and screens and widgets
report the focused hit as `app.focus_row(...)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType

from groove_tui.tui.search.compare import Row
from groove_tui.tui.search.runconfig import SIDES
from groove_tui.tui.widgets.results import ResultsList, ResultsPane

if TYPE_CHECKING:
    from groove_tui.tui.shell import AppShell as _AppPart
else:
    _AppPart = object

APP_BINDINGS: list[BindingType] = [
    Binding("f1", "help", "Help", tooltip="Every key, where it applies", id="app.help"),
    Binding("f2", "toggle('mmr')", "MMR", tooltip="MMR on / off (diversify the results)", id="search.toggle_mmr"),
    Binding(
        "f3",
        "toggle('parent')",
        "Parent",
        tooltip="Parent retriever on / off (merge neighbouring chunks)",
        id="search.toggle_parent",
    ),
    Binding(
        "f4", "toggle('reranker')", "Rerank", tooltip="Reranker on / off (cross-encoder)", id="search.toggle_reranker"
    ),
    Binding("f5", "compare", "Compare", tooltip="Compare mode: the query under two configurations", id="view.compare"),
    # F6-F10 belong to the screens (explain, compare presets); F11 is often the terminal's full screen
    Binding(
        "f12",
        "toggle('fusion')",
        "Fusion",
        tooltip="Next fusion method: DBSF → relative → RRF",
        id="search.toggle_fusion",
    ),
    Binding("ctrl+s", "export", "Export", tooltip="Export the results as JSON", id="export.json"),
    Binding(
        "ctrl+g", "save_judgments", "Save judgments", tooltip="Save the judgments to the golden file", id="eval.save"
    ),
    Binding(
        "ctrl+o", "open_editor", "Editor", tooltip="Open the focused hit in the editor", show=False, id="hit.editor"
    ),
    Binding("ctrl+y", "copy_path", "Copy path", tooltip="Copy the focused hit's path", show=False, id="hit.copy_path"),
    Binding("ctrl+t", "cycle_theme", "Theme", tooltip="Next theme", show=False, id="view.theme"),
    Binding(
        "ctrl+r",
        "sweep",
        "Sweep",
        tooltip="Chart the golden set over the setting under the cursor",
        show=False,
        id="eval.sweep",
    ),
    Binding(
        "ctrl+b",
        "wins_losses",
        "Wins and losses",
        tooltip="Compare mode: each golden query, left against right",
        show=False,
        id="eval.wins_losses",
    ),
    Binding(
        "ctrl+f",
        "save_settings",
        "Save settings",
        tooltip="The settings as a groove.toml fragment",
        show=False,
        id="export.settings",
    ),
    Binding("ctrl+l", "focus_query", "Query", show=False, id="app.focus_query"),
    Binding("ctrl+q", "quit", "Quit", id="app.quit"),
]


class KeyAvailability(_AppPart):
    """App mixin: the focused hit per side, and `check_action` for the keys that need one (or results,
    or unsaved judgments). Owns `focused_rows` and `active_side`."""

    def _init_key_availability(self) -> None:
        self.focused_rows: dict[str, Row | None] = {s: None for s in SIDES}
        self.active_side = "left"

    def focus_row(self, side: str, row: Row | None, *, activate: bool = True) -> None:
        had = self._bindings_state()
        self.focused_rows[side] = row
        if activate:
            self.active_side = side
        if self._bindings_state() != had:
            # only when an action's availability changed: every refresh makes the Footer recompose
            self.refresh_bindings()

    def _bindings_state(self) -> tuple:
        """What `check_action` depends on (beyond static config)."""
        row = self.focused_row
        return (
            self.active_side,
            row is not None and not row.gone,
            any(self.responses[s] is not None for s in self.active_sides),
            self.golden_session is not None and self.golden_session.dirty,
            bool(self.query_text.strip()),
        )

    @property
    def focused_row(self) -> Row | None:
        """The hit the keys act on. A focused result list's own cursor comes first: its highlight
        message may still be queued behind the key that acts on it (`j` then `0` in one burst)."""
        focused = self.focused
        if isinstance(focused, ResultsList) and isinstance(focused.parent, ResultsPane):
            return focused.parent.highlighted_row
        return self.focused_rows.get(self.active_side)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("open_editor", "copy_path", "copy_content", "detail"):
            row = self.focused_row
            return row is not None and not row.gone
        if action == "export":
            return any(self.responses[s] is not None for s in self.active_sides)
        if action == "save_judgments":
            return self.golden_session is not None and self.golden_session.dirty
        if action == "why_not":
            return bool(self.query_text.strip())
        if action == "judge":
            row = self.focused_row
            return row is not None and not row.gone and bool(self.query_text.strip())
        return True
