"""Pick a note, or one of its sections, from the whole KB: type to filter (a fuzzy, subsequence match),
enter chooses, esc cancels. Dismisses with the engine's target string ("path" or "path#heading").

The notes are read in a thread worker; filtering runs on each keystroke over plain lowercase strings
and draws only the best `SHOWN` entries, so it keeps up with typing on KBs of thousands of notes;
keystrokes that arrive while it filters are taken together.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from groove_tui.output.textout import escape_name

if TYPE_CHECKING:
    from textual import getters

    from groove_tui.tui.shell import AppShell

SHOWN = 50  # entries drawn at most (more than a tall terminal shows); typing narrows the rest


@dataclass(frozen=True, slots=True)
class Entry:
    """One choice: a note (`heading` None) or one of its sections."""

    path: str
    heading: str | None
    label: str  # what is shown and matched: "path" or "path # heading", names escaped onto one line
    folded: str  # `label` lowercased, for matching
    tail: int  # where the file name starts in `label` (a match from there on counts more)

    @property
    def target(self) -> str:
        return self.path + (f"#{self.heading}" if self.heading else "")


def entries(notes: Sequence[tuple[str, Sequence[str]]]) -> list[Entry]:
    """Each note, then its sections, in the engine's order."""
    out: list[Entry] = []
    for path, headings in notes:
        name = escape_name(path)
        tail = name.rfind("/") + 1
        out.append(Entry(path, None, name, name.lower(), tail))
        for heading in headings:
            label = f"{name} # {escape_name(heading)}"
            out.append(Entry(path, heading, label, label.lower(), tail))
    return out


_BOUNDARY = frozenset("/#-_. ")


def _subsequence(token: str) -> re.Pattern[str]:
    """The leftmost match of `token`'s characters in order, gaps allowed; `[^c]*` instead of `.*?` so a
    miss never backtracks."""
    parts = [re.escape(token[0])]
    parts += [f"[^{re.escape(c)}]*{re.escape(c)}" for c in token[1:]]
    return re.compile("".join(parts))


def _token_score(token: str, pattern: re.Pattern[str], text: str, tail: int) -> tuple[float, int, int] | None:
    """(score, start, end) of `token` in `text`: a contiguous run scores most, more at a word start and
    in the file name or heading (from `tail` on); a spread-out subsequence scores less the wider it
    spreads, and is looked for in the file name first. None: no match."""
    at = text.rfind(token)  # the last run: the file name and the heading come after the folders
    if at >= 0:
        score = 3.0 * len(token)
        if at == 0 or text[at - 1] in _BOUNDARY:
            score += 2.0
        end = at + len(token)
        if end == len(text) or text[end] in _BOUNDARY:  # a whole word: `tar` finds tar.md before tart.md
            score += 1.0
        if at >= tail:
            score += 2.0
        return score, at, end
    m = pattern.search(text, tail)
    bonus = 1.0
    if m is None:
        m = pattern.search(text)
        bonus = 0.0
        if m is None:
            return None
    spread = m.end() - m.start() - len(token)
    return len(token) / (1 + spread / 4) + bonus, m.start(), m.end()


def rank(query: str, pool: Sequence[Entry], limit: int = SHOWN) -> tuple[list[Entry], int]:
    """The best `limit` entries for `query` (whitespace-separated tokens, each matched fuzzily, all
    required) and how many match in all. An empty query keeps the pool's order."""
    tokens = query.lower().split()
    if not tokens:
        return list(pool[:limit]), len(pool)
    patterns = [(t, _subsequence(t)) for t in tokens]
    scored: list[tuple[float, int, Entry]] = []
    for i, entry in enumerate(pool):
        total = 0.0
        for token, pattern in patterns:
            found = _token_score(token, pattern, entry.folded, entry.tail)
            if found is None:
                break
            total += found[0]
        else:
            # a shorter label wins a tie (the note before its sections), then the engine's order
            scored.append((total - len(entry.folded) / 1000, -i, entry))
    best = heapq.nlargest(limit, scored, key=lambda s: (s[0], s[1]))
    return [entry for _score, _i, entry in best], len(scored)


def highlighted(entry: Entry, query: str, *, shown_at: int | None = None, match: Style | str = "bold reverse") -> Text:
    """The entry's label with the matched characters in `match`; the path of a section dim."""
    label = entry.label
    text = Text(label, no_wrap=True, overflow="ellipsis")
    if entry.heading is not None:
        text.stylize("dim", 0, label.index(" # ") + 3)
    folded = entry.folded
    if len(folded) != len(label):  # lowercasing changed the length (İ): the offsets would not line up
        query = ""
    for token in query.lower().split():
        found = _token_score(token, _subsequence(token), folded, entry.tail)
        if found is None:
            continue
        _score, start, end = found
        if folded[start:end] == token:
            text.stylize(match, start, end)
            continue
        at = start
        for c in token:  # the greedy positions of the subsequence match
            at = folded.index(c, at)
            text.stylize(match, at, at + 1)
            at += 1
    if shown_at is not None:
        text.append(f"  on the page at rank {shown_at}", style="italic dim")
    return text


class NoteList(OptionList):
    """The picker's choices; the matched letters take the theme's match colours."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"picker--match"}
    DEFAULT_CSS = """
    NoteList > .picker--match { background: $match-background; color: $match-foreground; text-style: bold; }
    """


class NotesLoaded(Message):
    def __init__(self, notes: tuple[tuple[str, tuple[str, ...]], ...] | None, error: str | None = None) -> None:
        super().__init__()
        self.notes = notes
        self.error = error


class NotePicker(ModalScreen[str | None]):
    """The fuzzy picker over the KB's notes and sections."""

    if TYPE_CHECKING:
        app = getters.app(AppShell)

    BINDING_GROUP_TITLE = "Note picker"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", tooltip="Close the picker", id="picker.cancel"),
        Binding("down", "move(1)", "Next", show=False, id="picker.down"),
        Binding("up", "move(-1)", "Previous", show=False, id="picker.up"),
        Binding("pagedown", "move(10)", "Page down", show=False, id="picker.page_down"),
        Binding("pageup", "move(-10)", "Page up", show=False, id="picker.page_up"),
    ]
    DEFAULT_CSS = """
    NotePicker { align: center top; }
    NotePicker > Vertical { width: 100; max-width: 100%; height: auto; max-height: 100%; margin: 1 0 0 0;
        border: thick $accent; background: $surface; padding: 0 1; }
    NotePicker #picker-options { height: auto; max-height: 60vh; border: none; padding: 0;
        background: transparent; }
    NotePicker #picker-count, NotePicker .dialog-keys { color: $foreground-muted; }
    """

    def __init__(self, on_page: dict[str, int] | None = None) -> None:
        """`on_page`: the rank of each note on the page now (marked in the list)."""
        super().__init__()
        self.on_page = dict(on_page or {})
        self.pool: list[Entry] = []
        self.shown: list[Entry] = []
        self.loaded = False
        self._refilter_queued = False

    def compose(self):
        with Vertical() as v:
            v.border_title = "Why is a note not here? Pick a note or a section"
            yield Input(placeholder="type to filter: path, file name or heading", id="picker-query")
            yield Label("reading the notes…", id="picker-count", markup=False)
            yield NoteList(id="picker-options")
            yield Label("enter: explain   ↑ ↓: choose   esc: cancel", classes="dialog-keys", markup=False)

    def on_mount(self) -> None:
        self.query_one("#picker-options", OptionList).can_focus = False  # typing stays in the box
        self.query_one("#picker-query", Input).focus()
        self._read_notes()

    @work(thread=True, exclusive=True, group="why-notes", exit_on_error=False)
    def _read_notes(self) -> None:
        from textual.worker import get_current_worker

        from groove_tui.engine.errors import EngineError

        worker = get_current_worker()
        if not self.app.wait_until_searchable(worker):
            return
        engine: Any = self.app.engine
        if engine is None:
            self.post_message(NotesLoaded(None, "the knowledge base could not be opened"))
            return
        try:
            notes = engine.notes()
        except EngineError as exc:
            self.post_message(NotesLoaded(None, str(exc)))
            return
        if not worker.is_cancelled:
            self.post_message(NotesLoaded(notes))

    def on_notes_loaded(self, msg: NotesLoaded) -> None:
        if msg.notes is None:
            self.query_one("#picker-count", Label).update(Text(f"Could not read the notes: {msg.error}"))
            return
        self.pool = entries(msg.notes)
        self.loaded = True
        self.refilter()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.loaded and not self._refilter_queued:
            # behind the keystrokes already queued: one filter then reads the box as they left it
            self._refilter_queued = True
            self.call_later(self.refilter)

    def refilter(self) -> None:
        self._refilter_queued = False
        query = self.query_one("#picker-query", Input).value
        self.shown, total = rank(query, self.pool)
        options = self.query_one("#picker-options", NoteList)
        match = options.get_component_rich_style("picker--match", partial=True)
        options.clear_options()
        options.add_options(
            Option(highlighted(e, query, shown_at=self.on_page.get(e.path) if e.heading is None else None, match=match))
            for e in self.shown
        )
        if self.shown:
            options.highlighted = 0
        notes = sum(1 for e in self.pool if e.heading is None)
        if not self.pool:
            count = "The index holds no notes yet."
        elif not query.strip():
            count = f"{notes:,} notes, {len(self.pool) - notes:,} sections"
        elif total == 0:
            count = "No note or section matches."
        else:
            count = f"{total:,} match" + ("es" if total != 1 else "")
        if total > len(self.shown):
            count += f" · the first {len(self.shown)} shown: type to narrow"
        self.query_one("#picker-count", Label).update(Text(count))

    def action_move(self, step: int) -> None:
        options = self.query_one("#picker-options", OptionList)
        if not self.shown:
            return
        at = options.highlighted or 0
        options.highlighted = max(0, min(len(self.shown) - 1, at + step))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._choose(self.query_one("#picker-options", OptionList).highlighted)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._choose(event.option_index)

    def _choose(self, index: int | None) -> None:
        if index is None or not (0 <= index < len(self.shown)):
            return
        self.dismiss(self.shown[index].target)

    def action_cancel(self) -> None:
        self.dismiss(None)
