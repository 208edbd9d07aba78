"""Command palette entries (ctrl+p): context-aware, prefixed by area."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.app import SystemCommand
from textual.screen import Screen

from groove_tui.output.textout import escape_name
from groove_tui.settings.config import FUSION_METHODS
from groove_tui.tui.search.runconfig import PRESETS, fusion_label

if TYPE_CHECKING:
    from groove_tui.tui.screens.compare import CompareScreen


def groove_commands(app, screen: Screen) -> Iterable[SystemCommand]:
    from groove_tui.tui.screens.compare import CompareScreen
    from groove_tui.tui.screens.detail import DetailScreen
    from groove_tui.tui.screens.note_picker import NotePicker
    from groove_tui.tui.screens.why import WhyScreen

    in_compare = isinstance(screen, CompareScreen)
    side = app.active_side if in_compare else "left"
    rc = app.run_configs[side]
    where = f" ({side} side)" if in_compare else ""

    def onoff(v: bool) -> str:
        return "off" if v else "on"

    yield SystemCommand(
        f"search: turn MMR {onoff(rc.mmr)}{where}", "Maximal marginal relevance (F2)", partial(app.action_toggle, "mmr")
    )
    yield SystemCommand(
        f"search: turn parent retriever {onoff(rc.parent)}{where}",
        "Merge neighbouring chunks into each hit (F3)",
        partial(app.action_toggle, "parent"),
    )
    yield SystemCommand(
        f"search: turn the word leg {onoff(rc.words)}{where}",
        "Whole words, stemmed, beside the character legs",
        partial(app.action_toggle, "words"),
    )
    if app.reranker_model:
        yield SystemCommand(
            f"search: turn reranker {onoff(rc.reranker)}{where}",
            f"Cross-encoder {app.reranker_model} (F4)",
            partial(app.action_toggle, "reranker"),
        )
    methods = " / ".join(fusion_label(m) for m in FUSION_METHODS)
    for method in FUSION_METHODS:
        if method != rc.fusion:
            yield SystemCommand(
                f"search: switch fusion to {fusion_label(method)}{where}",
                f"How the vector and full-text legs combine: {methods} (F12 cycles)",
                partial(app.action_set_fusion, method),
            )
    for value in (0.3, 0.5, 0.7, 0.9):
        yield SystemCommand(
            f"search: set MMR λ to {value}{where}",
            "Relevance weight of MMR",
            partial(app.set_run_config, side, _with(rc, mmr=True, lam=value)),
        )
    if in_compare:
        yield SystemCommand(
            "view: leave compare mode",
            "Back to the single result list (F5 / esc)",
            cast("CompareScreen", screen).action_back,
        )  # in compare mode the screen is this one
        yield SystemCommand(
            "compare: swap sides", "Exchange the left and right configurations (ctrl+x)", app.action_swap_sides
        )
    elif not isinstance(screen, DetailScreen):
        yield SystemCommand("view: compare mode", "The same query under two configurations (F5)", app.action_compare)
    for key, (label, _fn) in PRESETS.items():
        yield SystemCommand(
            f"compare: preset {label}", "Set both sides of compare mode", partial(app.action_preset, key)
        )
    row = app.focused_row
    if row is not None and not row.gone:
        if not isinstance(screen, DetailScreen):
            yield SystemCommand(
                "view: detail of the focused hit", "Full content with highlights (enter)", app.action_detail
            )
        yield SystemCommand(
            "hit: open in $EDITOR", f"{escape_name(row.hit.path)}:{row.hit.line} (ctrl+o)", app.action_open_editor
        )
        yield SystemCommand("hit: copy path", escape_name(row.hit.path) + " (ctrl+y)", app.action_copy_path)
        yield SystemCommand("hit: copy content", "The hit's text (Y)", app.action_copy_content)
    if not isinstance(screen, CompareScreen):
        yield SystemCommand(
            "view: toggle explain panel",
            "Stage-by-stage trace of the focused hit (F6)",
            screen.action_toggle_explain if hasattr(screen, "action_toggle_explain") else app.action_help,
        )
    if app.query_text.strip() and not isinstance(screen, (NotePicker, WhyScreen)):
        yield SystemCommand(
            f"search: why is a note not here…{where}",
            "Pick a note or a section: where the search lost it, and what would bring it in (ctrl+w in the results)",
            app.action_why_not,
        )
    if any(app.responses[s] is not None for s in app.active_sides):
        what = "both sides" if in_compare else "the results"
        yield SystemCommand(f"export: {what} as JSON", "With their configurations (ctrl+s)", app.action_export)
    yield SystemCommand(
        "eval: load golden file…", "Live recall@k / MRR / nDCG@k of a golden YAML for each side", app.action_load_golden
    )
    session = app.golden_session
    if session is not None and session.dirty:
        yield SystemCommand(
            "eval: save judgments", f"Write the golden set to {session.path} (ctrl+g)", app.action_save_judgments
        )
    if row is not None and not row.gone and app.query_text.strip():
        for grade, what in ((0, "irrelevant"), (1, "somewhat relevant"), (2, "relevant"), (3, "highly relevant")):
            yield SystemCommand(
                f"eval: judge the focused hit {grade} ({what})",
                f"{escape_name(row.hit.path)} for this query (key {grade} in the result list)",
                partial(app.action_judge, grade),
            )
    yield from tuning_commands(app, in_compare, where)
    yield SystemCommand("view: help", "All key bindings (F1)", app.action_help)
    for name in app.own_themes:
        if name != app.theme:
            yield SystemCommand(
                f"theme: {name}", "Switch the colour theme (ctrl+t cycles)", partial(setattr, app, "theme", name)
            )


def tuning_commands(app, in_compare: bool, where: str) -> Iterable[SystemCommand]:
    """Sweeps, wins and losses, settings saved back."""
    if app.golden_session is not None:
        yield SystemCommand(
            f"eval: sweep the setting under the cursor{where}",
            "Chart recall / MRR / nDCG and distinct documents over its values (ctrl+r)",
            app.action_sweep,
        )
        if in_compare:
            yield SystemCommand(
                "compare: wins and losses per golden query",
                "Each query's metric left and right, sorted by the change, with a sign test (ctrl+b)",
                app.action_wins_losses,
            )
    yield SystemCommand(
        f"export: settings as a groove.toml fragment{where}",
        "To a file or the clipboard; groove-tui-only keys are marked (ctrl+f)",
        app.action_save_settings,
    )


def _with(rc, **changes):
    from dataclasses import replace

    return replace(rc, **changes)
