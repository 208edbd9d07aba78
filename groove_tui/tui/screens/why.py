"""Why is this note (not) here? The walk of one note through the current query's pipeline (`Engine.why`):
the verdict in words, where it fell out stage by stage, each retrieval leg's standing, its fused score
against the last hit shown, and the single setting changes that would bring it in.

The walk runs in a thread worker (with its "what would bring it in" it runs a few searches); the view
says so meanwhile, and drops a walk that finishes after esc.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from groove_tui.engine.types import SearchParams, WhyReport
from groove_tui.output.textout import WHY_HEADLINES, escape_name
from groove_tui.tui.look.render import one_line

if TYPE_CHECKING:
    from textual import getters

    from groove_tui.tui.shell import AppShell

# The verdicts a single setting change can undo: the engine tries limit, λ, each fusion weight and the
# rerank pool for these.
FIXABLE = ("below_pool", "below_page", "reranker", "mmr")

# What brings in a note no single setting change can, by verdict.
REMEDIES = {
    "not_indexed": "No setting change does: the index holds no text for it. It may have been skipped (the index "
    "report says why), left empty, or not indexed yet.",
    "filtered": "Clearing the path or tag filter in the settings pane.",
    "quality": "A lower [quality_filter] threshold in groove.toml (or enabled = false).",
    "excluded": "Taking the -term out of the query.",
    "not_matched": "No setting change does: no leg found it. A query in words the note contains would.",
}


def target_label(path: str, heading: str | None) -> str:
    return escape_name(path) + (f" # {escape_name(heading)}" if heading else "")


def headline(report: WhyReport) -> str:
    """The verdict in words; on the page, where."""
    if report.verdict == "shown" and report.shown_rank is not None:
        return f"on the page at rank {report.shown_rank}"
    if report.verdict == "merged" and report.by:
        return f"on the page inside the hit at {one_line(report.by)}"
    return WHY_HEADLINES.get(report.verdict, report.verdict)


def _terms(terms: tuple[tuple[str, float], ...]) -> str:
    return " + ".join(f"{leg} {value:.4f}" for leg, value in terms) or "no term"


def _section(title: str) -> Text:
    return Text(title, style="bold underline")


def _grid(*columns: tuple[str, dict[str, Any]], header: bool = False) -> Table:
    table = Table(box=None, expand=True, show_header=header, header_style="bold", pad_edge=False, padding=(0, 1, 0, 0))
    for name, opts in columns:
        table.add_column(name, **opts)
    return table


def why_renderable(report: WhyReport, context: str, styles: Callable[[str], Style]) -> RenderableType:
    """The whole walk. `context`: the query and the side's settings, one line; `styles(name)` gives the
    view's component styles (passed, failed, on-page, off-page)."""
    passed, failed = styles("why--passed"), styles("why--failed")
    verdict = styles("why--on-page") if report.on_page else styles("why--off-page")
    parts: list[RenderableType] = []
    head = Text(target_label(report.path, report.heading), style="bold")
    head.append(": ")
    head.append(headline(report), style=verdict)
    parts.append(head)
    parts.append(Text(context, style="dim"))
    if one_line(report.summary) != headline(report):
        parts += [Text(""), Text(one_line(report.summary))]
    if report.section and not report.heading:
        where = f" (line {report.line})" if report.line is not None else ""
        parts.append(Text(f"section examined: {escape_name(report.section)}{where}", style="dim"))

    parts += [Text(""), _section("Stage by stage")]
    steps = _grid(("", {"width": 1, "no_wrap": True}), ("", {"no_wrap": True}), ("", {"ratio": 1, "overflow": "fold"}))
    for step in report.steps:
        mark = Text("✓", style=passed) if step.passed else Text("✗", style=failed)
        steps.add_row(mark, Text(step.stage, style="bold" if not step.passed else ""), Text(one_line(step.summary)))
    parts.append(steps)

    if report.legs:
        parts += [Text(""), _section("Each leg")]
        legs = _grid(
            ("leg", {"no_wrap": True}),
            ("matched", {"no_wrap": True}),
            ("rank / pool", {"no_wrap": True}),
            ("missing words, note", {"ratio": 1, "overflow": "fold"}),
            header=True,
        )
        for leg in report.legs:
            if not leg.matched:
                rank = Text("—")
            elif leg.rank is None:
                rank = Text(f"below {leg.pool:,}" if not leg.in_pool else f"≤ {leg.pool:,}")
            else:
                rank = Text(f"{leg.rank:,} / {leg.pool:,}", style=passed if leg.in_pool else "")
            missing = ", ".join(leg.missing)
            words = Text(f"lacks {missing}" if missing else "")
            if leg.note:
                words.append(("; " if missing else "") + one_line(leg.note), style="dim")
            legs.add_row(
                Text(leg.leg),
                Text("yes", style=passed) if leg.matched else Text("no", style=failed),
                rank,
                words,
            )
        parts.append(legs)

    if report.fused_rank is not None and not report.on_page:
        parts += [Text(""), _section("Fused score")]
        fused = _grid(
            ("", {"no_wrap": True}),
            ("", {"no_wrap": True, "justify": "right"}),
            ("", {"no_wrap": True, "justify": "right"}),
            ("", {"ratio": 1, "overflow": "fold"}),
        )
        fused.add_row(
            Text("this note"),
            Text(f"rank {report.fused_rank:,}"),
            Text(f"{report.fused_score or 0:.4f}", style="bold"),
            Text("= " + _terms(report.fused_terms)),
        )
        if report.last_shown is not None:
            last_rank, score, terms = report.last_shown
            fused.add_row(
                Text("last shown"), Text(f"rank {last_rank:,}"), Text(f"{score:.4f}"), Text("= " + _terms(terms))
            )
        parts.append(fused)

    if not report.on_page:
        parts += [Text(""), _section("What would bring it in")]
        if report.fixes:
            for fix in report.fixes:
                parts.append(Text("• " + one_line(fix.text())))
        elif report.verdict in FIXABLE:
            parts.append(
                Text(
                    "No single setting change tried does (the limit, MMR λ, each fusion weight, the rerank pool).",
                    style="italic",
                )
            )
        elif report.verdict in REMEDIES:
            parts.append(Text(REMEDIES[report.verdict], style="italic"))
    return Group(*parts)


def unknown_renderable(target: str, message: str, nearest: tuple[str, ...], context: str) -> RenderableType:
    """A note the index does not hold (deleted since it was picked, say), with the nearest it does."""
    path, _, heading = target.partition("#")
    head = Text(target_label(path, heading or None), style="bold")
    head.append(": not in the index")
    parts: list[RenderableType] = [head, Text(context, style="dim"), Text(""), Text(one_line(message))]
    if nearest:
        parts += [Text(""), _section("Nearest in the index")]
        parts += [Text("• " + escape_name(n)) for n in nearest]
    return Group(*parts)


class WhyExplained(Message):
    def __init__(self, report: WhyReport) -> None:
        super().__init__()
        self.report = report


class WhyFailed(Message):
    def __init__(self, message: str, nearest: tuple[str, ...] | None = None) -> None:
        """`nearest` is set (maybe empty) when the note is not in the index."""
        super().__init__()
        self.message = message
        self.nearest = nearest


class WhyView(Static):
    """The walk's text; its colours follow the theme."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"why--passed", "why--failed", "why--on-page", "why--off-page"}
    DEFAULT_CSS = """
    WhyView { height: auto; }
    WhyView > .why--passed { color: $success; }
    WhyView > .why--failed { color: $error; text-style: bold; }
    WhyView > .why--on-page { color: $success; text-style: bold; }
    WhyView > .why--off-page { color: $warning; text-style: bold; }
    """

    def style_of(self, name: str) -> Style:
        return self.get_component_rich_style(name, partial=True)


class WhyScreen(ModalScreen[None]):
    """One note's walk for `query` under `params` (a side's live settings, described by `settings`)."""

    if TYPE_CHECKING:
        app = getters.app(AppShell)

    BINDING_GROUP_TITLE = "Why is this note (not) here?"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", tooltip="Back to the results", id="why.close"),
        Binding("ctrl+w", "another", "Another note", tooltip="Pick another note for the same query", id="why.another"),
    ]
    DEFAULT_CSS = """
    WhyScreen { align: center middle; }
    WhyScreen > VerticalScroll { width: 110; max-width: 100%; height: auto; max-height: 100%;
        border: thick $accent; background: $surface; padding: 0 1; }
    """

    def __init__(self, target: str, query: str, params: SearchParams, settings: str) -> None:
        super().__init__()
        self.target = target
        self.query_text = query
        self.params = params
        self.context = f"for “{one_line(query)}” · {settings}"
        self.report: WhyReport | None = None
        self.failure: str | None = None

    def compose(self):
        path, _, heading = self.target.partition("#")
        with VerticalScroll(id="why-scroll") as vs:
            vs.border_title = "Why: " + target_label(path, heading or None)
            vs.border_subtitle = "esc close · ctrl+w another note"
            working = Text(f"Walking {target_label(path, heading or None)} through the pipeline…", style="italic")
            working.append("\n" + self.context, style="dim")
            yield WhyView(working, id="why-view", markup=False)

    def on_mount(self) -> None:
        self.query_one("#why-scroll").focus()
        self._explain()

    @work(thread=True, exclusive=True, group="why", exit_on_error=False)
    def _explain(self) -> None:
        from textual.worker import get_current_worker

        from groove_tui.engine.errors import EngineError, UnknownNote

        worker = get_current_worker()
        if not self.app.wait_until_searchable(worker):
            return
        engine: Any = self.app.engine
        if engine is None:
            self.post_message(WhyFailed("The knowledge base could not be opened."))
            return
        try:
            report = engine.why(self.query_text, self.target, self.params, fixes=True)
        except UnknownNote as exc:
            self.post_message(WhyFailed(str(exc), tuple(exc.nearest)))
            return
        except (EngineError, ValueError) as exc:  # a query the engine refuses says why
            self.post_message(WhyFailed(str(exc) or type(exc).__name__))
            return
        if not worker.is_cancelled:
            self.post_message(WhyExplained(report))

    def on_why_explained(self, msg: WhyExplained) -> None:
        self.report = msg.report
        view = self.query_one("#why-view", WhyView)
        view.update(why_renderable(msg.report, self.context, view.style_of))

    def on_why_failed(self, msg: WhyFailed) -> None:
        self.failure = msg.message
        view = self.query_one("#why-view", WhyView)
        if msg.nearest is not None:
            view.update(unknown_renderable(self.target, msg.message, msg.nearest, self.context))
        else:
            text = Text("Could not walk the note: ", style="bold")
            text.append(one_line(msg.message))
            view.update(Group(text, Text(self.context, style="dim")))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "why" and event.state == WorkerState.ERROR:
            err = event.worker.error
            self.post_message(WhyFailed(f"{type(err).__name__}: {err}"))

    def action_close(self) -> None:
        self.dismiss(None)

    async def action_another(self) -> None:
        self.dismiss(None)
        await self.app.run_action("why_not")
