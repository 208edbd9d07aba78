"""The query input: a Field (keys applied in order) plus ↑/↓ history (persisted per KB by `QueryHistory`)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType

from groove_tui.tui.history import QueryHistory
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
