"""Ask where to export the current results (Enter accepts, Esc cancels)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from groove_tui.tui.widgets.field import Field


class ExportScreen(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="export.cancel")]
    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen > Vertical { width: 80; max-width: 100%; height: auto; border: thick $accent; background: $surface;
        padding: 1 2; }
    ExportScreen .dialog-keys { color: $foreground-muted; margin: 1 0 0 0; }
    """

    def __init__(self, default_path: str) -> None:
        super().__init__()
        self.default_path = default_path

    def compose(self):
        with Vertical() as v:
            v.border_title = "Export results as JSON"
            yield Label("File (relative paths are in the current directory):")
            yield Field(self.default_path, id="export-path")
            yield Label("enter: export   esc: cancel", classes="dialog-keys")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PathScreen(ModalScreen[str | None]):
    """Ask for a file path (Enter accepts, Esc cancels)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="path.cancel")]
    DEFAULT_CSS = """
    PathScreen { align: center middle; }
    PathScreen > Vertical { width: 80; max-width: 100%; height: auto; border: thick $accent; background: $surface;
        padding: 1 2; }
    PathScreen .dialog-keys { color: $foreground-muted; margin: 1 0 0 0; }
    """

    def __init__(self, title: str, label: str, default: str = "", *, accept: str = "open") -> None:
        super().__init__()
        self.title_text = title
        self.label = label
        self.default = default
        self.accept = accept  # what enter does, in a word

    def compose(self):
        with Vertical() as v:
            v.border_title = self.title_text
            yield Label(self.label, markup=False)
            yield Field(self.default, id="path-input")
            yield Label(f"enter: {self.accept}   esc: cancel", classes="dialog-keys", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
