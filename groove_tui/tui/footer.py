"""Footer order: a screen names the actions its footer shows first, so that the keys that matter there
stay visible when the terminal is too narrow for all of them (the rest overflow; F1 lists every key).

Textual's Footer shows `screen.active_bindings` in dict order: the focused widget's keys, then its
ancestors', then the App's. Key handling does not use this order, so reordering it is safe.
"""

from __future__ import annotations


class FooterOrder:
    """Screen mixin. `FOOTER_FIRST`: actions, in the order the footer shows them before the others."""

    FOOTER_FIRST: tuple[str, ...] = ()

    @property
    def active_bindings(self):
        bindings = super().active_bindings
        if not self.FOOTER_FIRST:
            return bindings
        rank = {action: i for i, action in enumerate(self.FOOTER_FIRST)}
        last = len(rank)
        ordered = sorted(bindings.items(), key=lambda kv: rank.get(kv[1].binding.action, last))
        return dict(ordered)  # sorted() is stable: the others keep Textual's order
