"""Save a side's live settings as a groove.toml fragment (`settingsfile.fragment`), merged into a
groove.toml (the one in use, else the user config) or copied to the clipboard. The fragment and the full
path are shown first, so what is written, and where, is what was read."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from groove_tui.tui.look.render import home_relative
from groove_tui.tui.widgets.field import Field


class SaveSettingsScreen(ModalScreen[None]):
    """Shows the fragment, the file it goes to (in full, before anything is written) and whether it is
    merged into that groove.toml (comments kept) or creates it. Nothing is ever written into the KB."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="settings.cancel"),
        Binding("ctrl+y", "copy", "Copy", tooltip="Copy the fragment to the clipboard", id="settings.copy"),
    ]
    DEFAULT_CSS = """
    SaveSettingsScreen { align: center middle; }
    SaveSettingsScreen > Vertical { width: 90; max-width: 100%; height: auto; max-height: 100%;
        border: thick $accent; background: $surface; padding: 0 1; }
    SaveSettingsScreen #settings-preview { height: auto; max-height: 20; background: $panel; }
    SaveSettingsScreen #settings-target { color: $foreground-muted; }
    SaveSettingsScreen #settings-target.-refused { color: $error; }
    SaveSettingsScreen .dialog-keys { color: $foreground-muted; }
    """

    def __init__(self, text: str, side: str, target: Path, kb_path: Path | None = None) -> None:
        super().__init__()
        self.text = text
        self.side = side
        self.target = target
        self.kb_path = kb_path

    def compose(self):
        with Vertical() as v:
            v.border_title = f"Settings as groove.toml ({self.side} side)"
            with VerticalScroll(id="settings-preview"):
                yield Static(Text(self.text), markup=False)
            yield Label("Save to:")
            yield Field(home_relative(self.target), id="settings-path")
            yield Static("", id="settings-target", markup=False)
            yield Label("enter: save   ctrl+y: copy   esc: cancel", classes="dialog-keys")

    def on_mount(self) -> None:
        self.query_one("#settings-path", Input).focus()
        self._describe(self.query_one("#settings-path", Input).value)

    def on_resize(self) -> None:
        # the fragment gives up rows first, so the path, what happens to it and the keys always show
        self.query_one("#settings-preview").styles.max_height = max(3, min(20, self.size.height - 9))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._describe(event.value)

    def resolve(self, value: str) -> Path | None:
        name = value.strip()
        return (Path.cwd() / Path(name).expanduser()).resolve() if name else None

    def refusal(self, path: Path | None) -> str | None:
        if path is None:
            return "no file named"
        if self.kb_path is not None and _inside(path, self.kb_path):
            return "inside the KB: groove-tui never writes into it; choose a file outside it"
        if path.is_dir():
            return "a folder: name a file"
        return None

    def _describe(self, value: str) -> None:
        path = self.resolve(value)
        refused = self.refusal(path)
        label = self.query_one("#settings-target", Static)
        if refused:
            label.update(Text(f"✗ {refused}"))
        elif path is not None and path.is_file():
            label.update(Text(f"→ {path} (merged in: its other keys and comments stay)"))
        else:
            label.update(Text(f"→ {path} (a new file)"))
        label.set_class(bool(refused), "-refused")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        from groove_tui.settings.config import ConfigError
        from groove_tui.settings.fragment import save_fragment

        path = self.resolve(event.value)
        refused = self.refusal(path)
        if refused or path is None:
            self.app.notify(f"Settings not saved: {refused}", severity="error", markup=False)
            return
        try:
            how = save_fragment(path, self.text)
        except OSError as exc:
            self.app.notify(f"Settings not saved: {exc.strerror or exc} ({path})", severity="error", markup=False)
            return
        except ConfigError as exc:
            self.app.notify(f"Settings not saved: {exc}", severity="error", markup=False, timeout=10)
            return
        verb = "merged into" if how == "merged" else "saved to"
        self.app.notify(f"Settings {verb} {path}", markup=False, timeout=4)
        self.dismiss(None)

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.app.notify("Settings copied to the clipboard (groove.toml fragment)", markup=False, timeout=3)
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


def open_save_settings(app) -> None:
    """The current side's live settings (compare mode: the side with the cursor) over the engine's config."""
    from groove_tui.settings.fragment import effective_config, fragment

    side = app.active_side if app.compare_active else "left"
    params = app.run_configs[side].to_params(app.base_params, app.reranker_model, explain=False)
    config = getattr(app.engine, "config", None) or app.config
    text = fragment(effective_config(config, params), title=f"ranking settings of groove-tui's {side} side")
    app.push_screen(SaveSettingsScreen(text, side, default_target(config, app.kb_path), app.kb_path))


def default_target(config, kb_path: Path | None) -> Path:
    """The groove.toml the explorer's settings came from, unless it lies inside the KB (nothing is ever
    written there); else groove.toml in groove-tui's user config directory, which is read when no other
    groove.toml is found."""
    from groove_tui.settings.paths import user_config_dir

    source = getattr(config, "source", None)
    if source:
        path = Path(source).expanduser().resolve()
        if kb_path is None or not _inside(path, kb_path):
            return path
    return user_config_dir() / "groove.toml"


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(Path(root).expanduser().resolve())
        return True
    except (ValueError, OSError):
        return False
