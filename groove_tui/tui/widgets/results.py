"""The result pane: a summary line and one two-line option per hit (rank, score, marker, path › heading,
snippet). Compare mode adds rank-change markers and dimmed "gone" rows. Every prompt is a `Text`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from groove_tui.engine.types import Hit, SearchResponse
from groove_tui.tui.look import render
from groove_tui.tui.search.compare import Marker, Row
from groove_tui.tui.widgets.query_input import QueryInput

if TYPE_CHECKING:
    from textual import getters

    from groove_tui.tui.shell import AppShell


class ResultsList(OptionList):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select", "Open", tooltip="Open the detail view (or double-click)", id="results.detail"),
        Binding("ctrl+o", "app.open_editor", "Editor", tooltip="Open in the editor", id="results.editor"),
        Binding("ctrl+y", "app.copy_path", "Copy path", tooltip="Copy the path", id="results.copy_path"),
        Binding(
            "alt+y", "app.copy_content", "Copy text", tooltip="Copy the text", show=False, id="results.copy_content"
        ),
        Binding(
            "ctrl+w",
            "app.why_not",
            "Why not?",
            tooltip="Why is a note not here? Pick one and see where the search lost it",
            id="results.why_not",
        ),
        # Letters and digits typed here go to the query (see on_key), so judging takes alt.
        Binding("alt+0", "app.judge(0)", "Judge 0: irrelevant", show=False, id="judge.0"),
        Binding("alt+1", "app.judge(1)", "Judge 1: somewhat relevant", show=False, id="judge.1"),
        Binding("alt+2", "app.judge(2)", "Judge 2: relevant", show=False, id="judge.2"),
        Binding("alt+3", "app.judge(3)", "Judge 3: highly relevant", show=False, id="judge.3"),
    ]
    BINDING_GROUP_TITLE = "Results"

    def on_key(self, event: events.Key) -> None:
        """A printable key goes to the end of the query, which takes the focus (as in fzf): text typed
        after moving through the hits is meant for the query, never for a key that acts on a hit."""
        if not (event.is_printable and event.character):
            return
        found = self.screen.query("#query").filter("QueryInput")
        if not found:
            return
        event.stop()
        event.prevent_default()
        found.only_one(QueryInput).type_at_end(event.character)

    async def _on_click(self, event: events.Click) -> None:
        """One click moves the cursor (the preview follows); a double click opens the hit, like enter."""
        event.prevent_default()  # not OptionList's click, which opens at once
        clicked = event.style.meta.get("option")
        if clicked is None or self._options[clicked].disabled:
            return
        self.focus()
        self.highlighted = clicked
        if event.chain >= 2:
            self.action_select()

    def on_resize(self) -> None:
        # Rows are laid out for a width; the list is the widget whose width counts, and it knows its
        # new size here (its pane may not be resized at all when a sibling pane appears).
        if isinstance(self.parent, ResultsPane):
            self.parent.fit_width()
            # …and again once the layout pass has settled (a scrollbar may come or go with the new rows).
            self.call_after_refresh(self.parent.fit_width)

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "result--match",
        "result--expanded",
        "rank--up",
        "rank--down",
        "rank--same",
        "rank--new",
        "rank--gone",
        "judged--relevant",
        "judged--irrelevant",
    }
    DEFAULT_CSS = """
    ResultsList, ResultsList:focus { height: 1fr; border: none; padding: 0; background: transparent; }
    /* Each row is laid out to the list's width already: no wrapping pass at every paint, and a line that
       would not fit ends in an ellipsis instead of folding onto a third line. */
    ResultsList { text-wrap: nowrap; text-overflow: ellipsis; }
    ResultsList > .result--match { background: $match-background; color: $match-foreground; text-style: bold; }
    ResultsList > .result--expanded { background: $expanded-background; }
    ResultsList > .rank--up { color: $rank-up; text-style: bold; }
    ResultsList > .rank--down { color: $rank-down; text-style: bold; }
    ResultsList > .rank--same { color: $foreground-muted; }
    ResultsList > .rank--new { color: $accent; text-style: bold; }
    ResultsList > .rank--gone { color: $foreground-muted; text-style: italic; }
    ResultsList > .judged--relevant { color: $success; text-style: bold; }
    ResultsList > .judged--irrelevant { color: $error; }
    """


class ResultsPane(Vertical):
    """One side's results. Posts `HitHighlighted` / `HitSelected` for the screen to route."""

    if TYPE_CHECKING:
        app = getters.app(AppShell)

    DEFAULT_CSS = """
    ResultsPane { height: 1fr; }
    ResultsPane > #summary { height: auto; max-height: 3; padding: 0 1; color: $foreground-muted; }
    ResultsPane > #summary.-error { color: $error; }
    """

    class HitHighlighted(Message):
        """The cursor row changed. `user` is False when the pane moved it itself (new results, `follow`):
        compare mode links cursors only on user moves, so two panes never chase each other."""

        def __init__(self, pane: ResultsPane, row: Row | None, *, user: bool = True) -> None:
            super().__init__()
            self.pane = pane
            self.row = row
            self.user = user

    class HitSelected(Message):
        def __init__(self, pane: ResultsPane, row: Row) -> None:
            super().__init__()
            self.pane = pane
            self.row = row

    def __init__(self, side: str = "left", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.side = side
        self.rows: list[Row] = []
        self.response: SearchResponse | None = None
        self._extra: Text | None = None
        self._note: Text | None = None
        self._last_width = 0
        self.summary = Static(Text("Type a query to search.", style="dim"), id="summary", markup=False)
        self.list = ResultsList(id=f"results-{side}")

    def compose(self):
        yield self.summary
        yield self.list

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _t: self._render_rows())

    # ------------------------------------------------------------ content

    def set_message(self, text: str, *, error: bool = False) -> None:
        self.summary.set_class(error, "-error")
        self.summary.update(Text(render.one_line(text)))
        self.summary.tooltip = None

    def set_busy(self, busy: bool, waiting: str | None = None) -> None:
        """Say a search is on its way: `waiting` names what it waits for (the index), else "searching…"."""
        self.list.loading = False
        if busy:
            self.summary.set_class(False, "-error")
            self.summary.update(Text(render.one_line(waiting) if waiting else "searching…", style="italic"))
            self.summary.tooltip = None

    def show(
        self,
        response: SearchResponse | None,
        *,
        markers: Sequence[Marker | None] | None = None,
        gone: Sequence[tuple[Hit, int]] = (),
        extra: Text | None = None,
        note: Text | None = None,
    ) -> None:
        """Show a response (None clears). `gone` lists (hit, rank on the other side); `note` is a line
        under the summary that can change on its own (the reranker's progress)."""
        self._note = note
        same_query = response is not None and self.response is not None and response.query == self.response.query
        held = self.highlighted_row.hit if (self.highlighted_row and same_query) else None
        keep = held.chunk_id if held is not None else None
        # an edited note's chunks come back under new ids: the same section of the same note is the same hit
        keep_key = (held.path, held.chunk_index) if held is not None else None
        self.response = response
        rows: list[Row] = []
        if response is not None:
            for i, hit in enumerate(response.results, 1):
                m = markers[i - 1] if markers is not None and i - 1 < len(markers) else None
                rows.append(Row(hit, i, m))
        for hit, other_rank in gone:
            rows.append(Row(hit, other_rank, Marker("gone", other_rank), gone=True))
        self.rows = rows
        self._extra = extra
        self._update_summary()
        self._render_rows()
        if rows:
            idx = next((i for i, r in enumerate(rows) if keep is not None and r.hit.chunk_id == keep), None)
            if idx is None:
                idx = next(
                    (i for i, r in enumerate(rows) if not r.gone and (r.hit.path, r.hit.chunk_index) == keep_key), 0
                )
            self._set_cursor(idx)
        self.post_message(self.HitHighlighted(self, self.highlighted_row, user=False))

    def set_note(self, note: Text | None) -> None:
        self._note = note
        self._update_summary()

    def _update_summary(self) -> None:
        self.summary.set_class(False, "-error")
        if self.response is None:
            self.summary.update(Text("Type a query to search.", style="dim"))
            return
        s = render.response_summary(self.response, warn_style=self.app.current_theme.warning or "yellow")
        empty = render.order_note(self.response)
        if empty is not None and getattr(self.app, "indexing", False):
            empty = Text("No hits yet: the index is still being built, and results fill in as it goes.", style="italic")
        for line in (self._extra, self._note, empty):
            if line is not None:
                s.append("\n")
                s.append_text(line)
        self.summary.update(s)
        self.summary.tooltip = render.confidence_tooltip(self.response)

    def _set_cursor(self, index: int | None) -> None:
        """Move the cursor without the OptionList announcing it as a user move."""
        with self.list.prevent(OptionList.OptionHighlighted):
            self.list.highlighted = index

    def _marker_text(self, m: Marker) -> Text:
        cls = {"up": "rank--up", "down": "rank--down", "same": "rank--same", "new": "rank--new", "gone": "rank--gone"}[
            m.kind
        ]
        return Text(f"{m.label:<4}", style=self.list.get_component_rich_style(cls, partial=True))

    def _render_rows(self) -> None:
        if not self.is_mounted:
            return
        width = max(20, (self.list.scrollable_content_region.width or self.size.width or 60) - 2)
        self._last_width = width
        match = self.list.get_component_rich_style("result--match", partial=True)
        expanded = self.list.get_component_rich_style("result--expanded", partial=True)
        highlighted = self.list.highlighted
        if self.rows and highlighted is not None and highlighted >= len(self.rows):
            highlighted = len(self.rows) - 1
        judging = getattr(self.app, "golden_session", None) is not None
        options = []
        shown = [row for row in self.rows if not row.gone]
        moves = dict(zip((id(r) for r in shown), render.mmr_moves([r.hit for r in shown]), strict=True))
        for i, row in enumerate(self.rows):
            marker = self._marker_text(row.marker) if row.marker is not None else None
            if row.gone:
                prompt = render.gone_row(row.hit, row.rank, width, marker or Text("gone"))
            else:
                prompt = render.hit_row(
                    row.rank,
                    row.hit,
                    width,
                    marker=marker,
                    match_style=match,
                    expanded_style=expanded,
                    badge=self._badge(row) if judging else None,
                    moved=moves.get(id(row), ""),
                )
            options.append(Option(prompt, id=f"row-{i}"))
        with self.list.prevent(OptionList.OptionHighlighted):
            self.list.set_options(options)
            if highlighted is not None and options:
                self.list.highlighted = min(highlighted, len(options) - 1)
        # New rows can bring or take away the scrollbar, which narrows the content region without
        # resizing the list (so no on_resize): fit again once that layout pass is done.
        self.call_after_refresh(self.fit_width)

    def _badge(self, row: Row) -> Text:
        """Two cells: the current query's judgment of the hit (✓ expected, ✓2 graded, ✗ judged 0)."""
        session = self.app.golden_session
        label = None
        if session is not None and self.response is not None and self.app.query_text.strip():
            label = session.label_of(self.app.query_text, row.hit.path, row.hit.heading)
        if label is None:
            return Text("  ")
        cls = "judged--irrelevant" if label == "✗" else "judged--relevant"
        return Text(f"{label:<2}", style=self.list.get_component_rich_style(cls, partial=True))

    def refresh_judgments(self) -> None:
        """Re-render the rows after a judgment or a golden set change (the cursor stays)."""
        if self.rows:
            self._render_rows()

    def fit_width(self) -> None:
        """Re-render the rows when the list's usable width changed since they were laid out."""
        width = (self.list.scrollable_content_region.width or 0) - 2
        if width > 0 and max(20, width) != self._last_width and self.rows:
            self._render_rows()

    # ------------------------------------------------------------ cursor

    @property
    def highlighted_row(self) -> Row | None:
        i = self.list.highlighted
        if i is None or not (0 <= i < len(self.rows)):
            return None
        return self.rows[i]

    def follow(self, chunk_id: int) -> None:
        """Move the cursor to the row of `chunk_id` (compare mode's linked cursors). Not a user move."""
        for i, row in enumerate(self.rows):
            if row.hit.chunk_id == chunk_id:
                if self.list.highlighted != i:
                    self._set_cursor(i)
                    self.post_message(self.HitHighlighted(self, self.highlighted_row, user=False))
                return

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self.post_message(self.HitHighlighted(self, self.highlighted_row))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        row = self.highlighted_row
        if row is not None:
            self.post_message(self.HitSelected(self, row))
