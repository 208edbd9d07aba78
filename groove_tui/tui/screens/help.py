"""F1 help: every key binding (after the user's keymap), grouped by where it applies."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

# Help text for bindings whose definition carries no tooltip (app.py's ctrl+l sits next to the quit
# binding, which another change owns).
HELP_WORDS = {"app.focus_query": "Focus the query"}


def binding_rows(app) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """[(group title, [(keys, description, id)])] for every screen and widget of the app."""
    from groove_tui.tui.screens.compare import CompareScreen
    from groove_tui.tui.screens.detail import DetailScreen
    from groove_tui.tui.screens.main import MainScreen
    from groove_tui.tui.screens.note_picker import NotePicker
    from groove_tui.tui.screens.sweep import SweepScreen
    from groove_tui.tui.screens.why import WhyScreen
    from groove_tui.tui.screens.winloss import WinLossScreen
    from groove_tui.tui.widgets.query_input import QueryInput
    from groove_tui.tui.widgets.results import ResultsList
    from groove_tui.tui.widgets.slider import Slider

    keymap = getattr(app, "_keymap", {}) or {}
    groups = []
    for title, cls in (
        ("Global", type(app)),
        ("Main screen", MainScreen),
        ("Query", QueryInput),
        ("Results list", ResultsList),
        ("Detail screen", DetailScreen),
        ("Compare screen", CompareScreen),
        ("Sweep chart", SweepScreen),
        ("Wins and losses", WinLossScreen),
        ("Why not? note picker", NotePicker),
        ("Why is this note (not) here?", WhyScreen),
        ("Sliders", Slider),
    ):
        rows = []
        for b in cls.BINDINGS:
            if not isinstance(b, Binding):
                continue
            keys = keymap.get(b.id, b.key) if b.id else b.key
            desc = b.tooltip or HELP_WORDS.get(b.id or "", b.description)  # words, not footer labels
            rows.append((_pretty(keys), desc, b.id or ""))
        groups.append((title, rows))
    groups[0][1].insert(1, ("ctrl+p", "Command palette (toggles, compare, presets, export, theme)", ""))
    return groups


def _pretty(keys: str) -> str:
    names = {"question_mark": "?", "slash": "/", "left_square_bracket": "[", "right_square_bracket": "]"}
    return ", ".join(names.get(k.strip(), k.strip()) for k in keys.split(","))


WIDE_TABLE = 90  # terminal columns from which key, action and binding id fit on one line


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,f1,q", "app.pop_screen", "Close", id="help.close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 96; max-width: 100%; height: 90%; border: thick $accent;
        background: $surface; padding: 0 1; }
    """

    def compose(self):
        with VerticalScroll() as vs:
            vs.border_title = "groove-tui — keys (F1 / esc to close)"
            yield Static(self._table(self.app.size.width), markup=False, id="help-table")

    def on_resize(self, event) -> None:
        self.query_one("#help-table", Static).update(self._table(event.size.width))

    def _table(self, width: int) -> Table:
        """Three columns when they fit; below that the binding id goes under the action, so nothing is
        cut to an ellipsis (the actions wrap)."""
        wide = width >= WIDE_TABLE
        table = Table(box=None, expand=True, show_header=True, header_style="bold", pad_edge=False)
        table.add_column("Key", style="bold", no_wrap=wide, width=22 if wide else None, ratio=None if wide else 1)
        table.add_column("Action", ratio=None if wide else 2)
        if wide:
            table.add_column("Binding id", style="dim", no_wrap=True)
        for title, rows in binding_rows(self.app):
            table.add_row(Text(title, style="bold underline"))
            for keys, desc, bid in rows:
                if wide:
                    table.add_row(Text(keys), Text(desc), Text(bid))
                else:
                    action = Text(desc)
                    if bid:
                        action.append(f"\n{bid}", style="dim")
                    table.add_row(Text(keys), action)
            table.add_row("")
        table.add_row(Text("Remap", style="bold underline"))
        table.add_row(
            Text("groove.toml"), Text('[tui.keymap] <binding id> = "<keys>"  e.g. "search.toggle_mmr" = "ctrl+m"')
        )
        return table
