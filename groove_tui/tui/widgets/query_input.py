"""The query input: a Field (keys applied in order) plus ↑/↓ history (persisted per KB by `QueryHistory`)."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType

from groove_tui.tui.search.history import QueryHistory
from groove_tui.tui.widgets.field import Field


class QueryInput(Field):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "history_previous", "Previous query", show=False, id="query.history_previous"),
        Binding("down", "history_next", "Next query", show=False, id="query.history_next"),
    ]
    BINDING_GROUP_TITLE = "Query"

    def __init__(self, history: QueryHistory | None = None, **kwargs) -> None:
        kwargs.setdefault("placeholder", 'Search…  words, "exact phrase", -exclude')
        super().__init__(**kwargs)
        self.history = history or QueryHistory(None)
        self._typed_in = False
        self._select_on_focus = self.select_on_focus

    def type_at_end(self, text: str) -> None:
        """Add `text` typed elsewhere (the result list) at the end, and take the focus with the cursor after
        it: not with everything selected, as a focus usually leaves it, or the next key would replace it."""
        self.cursor_position = len(self.value)
        self.insert_text_at_cursor(text)
        if not self.has_focus and not self._typed_in:
            self._typed_in = True
            self._select_on_focus, self.select_on_focus = self.select_on_focus, False
            self.focus()

    def _on_focus(self, _event: events.Focus) -> None:
        # Input's own focus handler runs after this one (Textual calls each class's in turn): put the
        # setting back once it has run.
        if self._typed_in:
            self._typed_in = False
            self.call_later(setattr, self, "select_on_focus", self._select_on_focus)

    def _recall(self, text: str | None) -> None:
        if text is None:
            return
        self.value = text
        self.cursor_position = len(text)

    def action_history_previous(self) -> None:
        self._recall(self.history.previous(self.value))

    def action_history_next(self) -> None:
        self._recall(self.history.next())

    def remember(self) -> None:
        self.history.add(self.value)
