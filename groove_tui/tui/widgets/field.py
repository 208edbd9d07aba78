"""An Input that applies its own key bindings in the order the keys arrive.

Textual inserts a printable key in the Input's own key handler, but runs a bound key (backspace, ctrl+u,
home, end, ←/→) only after the event has bubbled up to the App. When keys arrive together (fast typing, a
terminal delivering several in one read) a later letter can land before an earlier backspace:
`10` ⌫ ⌫ `3` gave `31`. Running the Input's own bindings where it receives the key keeps the order; the
result is the same action the App would have run, since the focused widget is first in its binding chain.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input


class Field(Input):
    async def _on_key(self, event: events.Key) -> None:
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()
                return
        await super()._on_key(event)
