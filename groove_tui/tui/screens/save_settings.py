"""Save a side's live settings as a groove.toml fragment (`settingsfile.fragment`), to a file or the
clipboard. The fragment is shown first, so what is written is what was read."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from groove_tui.tui.widgets.field import Field

DEFAULT_FILE = "groove-tui-settings.toml"


class SaveSettingsScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="settings.cancel"),
        Binding("ctrl+y", "copy", "Copy", tooltip="Copy the fragment to the clipboard", id="settings.copy"),
    ]
    DEFAULT_CSS = """
    SaveSettingsScreen { align: center middle; }
    SaveSettingsScreen > Vertical { width: 90; max-width: 100%; height: auto; max-height: 100%;
        border: thick $accent; background: $surface; padding: 0 1; }
    SaveSettingsScreen #settings-preview { height: auto; max-height: 20; background: $panel; }
    SaveSettingsScreen .dialog-keys { color: $foreground-muted; }
    """

    def __init__(self, text: str, side: str) -> None:
        super().__init__()
        self.text = text
        self.side = side

    def compose(self):
        with Vertical() as v:
            v.border_title = f"Settings as groove.toml ({self.side} side)"
            with VerticalScroll(id="settings-preview"):
                yield Static(Text(self.text), markup=False)
            yield Label("File (relative paths are in the current directory):")
            yield Field(DEFAULT_FILE, id="settings-path")
            yield Label("enter: write the file   ctrl+y: copy to the clipboard   esc: cancel", classes="dialog-keys")

    def on_mount(self) -> None:
        self.query_one("#settings-path", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        name = event.value.strip()
        if not name:
            return
        path = Path(name).expanduser()
        try:
            path.write_text(self.text, encoding="utf-8")
        except OSError as exc:
            self.app.notify(f"Settings not saved: {exc.strerror or exc} ({path})", severity="error", markup=False)
            return
        self.app.notify(f"Settings saved to {path.resolve()}", markup=False, timeout=4)
        self.dismiss(None)

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.app.notify("Settings copied to the clipboard (groove.toml fragment)", markup=False, timeout=3)
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


def open_save_settings(app) -> None:
    """The current side's live settings (compare mode: the side with the cursor) over the engine's config."""
    from groove_tui.settingsfile import effective_config, fragment

    side = app.active_side if app.compare_active else "left"
    params = app.run_configs[side].to_params(app.base_params, app.reranker_model, explain=False)
    config = getattr(app.engine, "config", None) or app.config
    text = fragment(effective_config(config, params), title=f"ranking settings of groove-tui's {side} side")
    app.push_screen(SaveSettingsScreen(text, side))
