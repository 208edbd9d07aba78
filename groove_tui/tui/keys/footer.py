"""Footer order: a screen names the actions its footer shows first, so that the keys that matter there
stay visible when the terminal is too narrow for all of them (the rest overflow; F1 lists every key).

Textual's Footer shows `screen.active_bindings` in dict order: the focused widget's keys, then its
ancestors', then the App's. Key handling does not use this order, so reordering it is safe.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.screen import ActiveBinding
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, KeyGroup


class FooterOrder:
    """Screen mixin. `FOOTER_FIRST`: actions, in the order the footer shows them before the others."""

    FOOTER_FIRST: tuple[str, ...] = ()

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        bindings: dict[str, ActiveBinding] = super().active_bindings  # type: ignore[misc]  # a Screen mixin: the Screen's
        if not self.FOOTER_FIRST:
            return bindings
        rank = {action: i for i, action in enumerate(self.FOOTER_FIRST)}
        last = len(rank)
        ordered = sorted(bindings.items(), key=lambda kv: rank.get(kv[1].binding.action, last))
        return dict(ordered)  # sorted() is stable: the others keep Textual's order


class GrooveFooter(Footer):
    """Textual's Footer with every key readable: a space between a key and its label, and between the
    keys of a group (`f7 f8 f9 Presets`), also in the compact style; and keys that would run under the
    command-palette key docked on the right are hidden whole (F1 lists them) rather than cut, which left
    a stray `^` or letter beside "palette"."""

    DEFAULT_CSS = """
    GrooveFooter {
        FooterKey.-compact .footer-key--description { padding: 0 0 0 1; }
        KeyGroup.-compact FooterKey.-grouped { margin: 0 1 0 0; }
        KeyGroup.-compact FooterKey.-grouped:last-of-type { margin: 0; }
        &.-compact FooterLabel { margin: 0 1 0 1; }
        &.-compact FooterKey.-command-palette { padding-right: 1; }
    }
    """

    async def recompose(self) -> None:
        await super().recompose()
        self.fit_keys()

    def on_resize(self) -> None:
        self.fit_keys()

    def fit_keys(self) -> None:
        """Show the keys, in order, while they fit left of the palette key; hide the rest."""
        if not self.is_attached or self.size.width == 0:
            return
        palette = [k for k in self.query_children(FooterKey) if k.has_class("-command-palette")]
        room = self.size.width - sum(_outer_width(k) for k in palette)
        used = 0
        full = False
        for child in self.children:
            if child in palette:
                continue
            width = _outer_width(child)
            full = full or used + width > room
            child.display = not full
            used += width


def _outer_width(widget: Widget) -> int:
    """The cells `widget` takes in a horizontal row: content, padding, border and margins."""
    size = Size(10_000, 1)
    if isinstance(widget, KeyGroup):
        content = sum(_outer_width(c) for c in widget.children)
    else:
        content = widget.get_content_width(size, size)
    styles = widget.styles
    return content + styles.gutter.width + styles.margin.width
