"""Settings of one side: switches, sliders, limit and filters. Every change replaces the side's RunConfig
on the app (which publishes it and re-runs the search, debounced)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Label, Select, Switch

from groove_tui.settings.config import FUSION_METHODS, Config
from groove_tui.tui.search.runconfig import RunConfig, fusion_label, split_list
from groove_tui.tui.widgets.field import Field
from groove_tui.tui.widgets.slider import Slider

if TYPE_CHECKING:
    from textual import getters

    from groove_tui.tui.shell import AppShell

NO_RERANKER_TIP = (
    "No reranker installed. Get the English one with:\n  groove-tui models pull ms-marco-l12\nor set "
    "[reranker] model in groove.toml (a fastembed cross-encoder name or a local ONNX directory)"
)
FUSION_TIP = (
    "How the vector and full-text legs combine (F12 cycles). DBSF and relative (ours) sum each leg's scores "
    "normalised over its top 50, by mean ± 3 sd or by min–max; RRF (groove's reciprocal rank fusion) uses "
    "ranks only."
)


WORDS_TIP = (
    "Word leg: whole words, stemmed (extract = extracts = extracting; tar is not in target), fused beside "
    "the character legs ([search] word_leg)"
)
SWITCH_NAMES = {"mmr": "MMR", "parent": "Parent", "reranker": "Rerank", "words": "Words"}


def weights_text(config: Config) -> str:
    """The fusion weights in effect ([search.fusion]): the vector leg's, the full-text family's with its
    legs' shares, and the name term's."""
    f = config.search.fusion
    return (
        f"weights: vector {f.vector_weight:g} · full text {f.fts_weight:g} "
        f"(trigram {f.trigram_weight:g} : words {f.word_weight:g}) · name {f.name_weight:g}"
    )


def state_label(what: str, on: bool, *, available: bool = True) -> str:
    """`MMR  on` / `MMR  off`; a reranker switch with no model says `none`."""
    state = ("on" if on else "off") if available else "none"
    return f"{SWITCH_NAMES[what]} {state:>4}"


class ConfigPane(VerticalScroll, can_focus=False):
    # Not a Tab stop of its own: Tab goes from the query straight to the first setting, and a focused
    # setting scrolls itself into view.
    if TYPE_CHECKING:
        app = getters.app(AppShell)

    # The focused setting's whole line is banded and its name turns bold, at every size: a tint on the
    # 4-cell switch alone was too faint to find after Tab.
    DEFAULT_CSS = """
    ConfigPane { padding: 0 1; }
    ConfigPane .row { height: 1; margin: 1 0 0 0; }
    ConfigPane .row Label { width: 1fr; }
    ConfigPane Switch { width: auto; height: 1; border: none; padding: 0; }
    ConfigPane Switch:focus { border: none; }
    ConfigPane .row Select { width: 12; }
    ConfigPane .row:focus-within, ConfigPane Slider:focus, ConfigPane Input:focus { background: $accent 30%; }
    ConfigPane .row:focus-within > Label { color: $foreground; text-style: bold; }
    ConfigPane Slider { margin: 1 0 0 0; }
    ConfigPane .field-label { color: $foreground-muted; margin: 1 0 0 0; }
    ConfigPane .weights { color: $foreground-muted; width: 1fr; height: auto; }
    ConfigPane Input { width: 1fr; }
    """

    def __init__(self, side: str = "left", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.side = side
        self._shown: RunConfig | None = None  # the config the widgets were last set from (or sent)

    @property
    def rc(self) -> RunConfig:
        return self.app.run_configs[self.side]

    def compose(self):
        rc = self.app.run_configs[self.side]
        self._shown = rc
        s = self.side
        with Horizontal(classes="row"):
            yield Label(state_label("mmr", rc.mmr), id=f"{s}-mmr-label")
            yield Switch(rc.mmr, id=f"{s}-mmr", tooltip="Maximal marginal relevance: diversify results")
        yield Slider(rc.lam, label="λ", label_width=4, id=f"{s}-lambda")
        yield Slider(rc.same_doc_penalty, label="pen", label_width=4, id=f"{s}-penalty")
        with Horizontal(classes="row"):
            yield Label(state_label("parent", rc.parent), id=f"{s}-parent-label")
            yield Switch(rc.parent, id=f"{s}-parent", tooltip="Parent retriever: merge neighbouring chunks")
        with Horizontal(classes="row"):
            yield Label(state_label("words", rc.words), id=f"{s}-words-label")
            yield Switch(rc.words, id=f"{s}-words", tooltip=WORDS_TIP)
        model = self.app.reranker_model  # configured, or pulled
        with Horizontal(classes="row"):
            yield Label(
                state_label("reranker", rc.reranker and bool(model), available=bool(model)), id=f"{s}-reranker-label"
            )
            yield Switch(
                rc.reranker and bool(model),
                id=f"{s}-reranker",
                disabled=not model,
                tooltip=f"Cross-encoder reranker: {model}" if model else NO_RERANKER_TIP,
            )
        with Horizontal(classes="row"):
            yield Label("Fusion", id=f"{s}-fusion-label")
            # one line, like the switches; its list opens over the pane
            yield Select(
                [(fusion_label(m), m) for m in FUSION_METHODS],
                value=rc.fusion,
                allow_blank=False,
                compact=True,
                id=f"{s}-fusion",
                tooltip=FUSION_TIP,
            )
        yield Label(weights_text(self.app.config), id=f"{s}-weights", classes="weights", markup=False)
        yield Label("limit", classes="field-label")
        yield Field(str(rc.limit), type="integer", id=f"{s}-limit", compact=True)
        yield Label("path globs", classes="field-label")
        yield Field(" ".join(rc.path_globs), placeholder="all paths (e.g. docs/**)", id=f"{s}-globs", compact=True)
        yield Label("tags (any)", classes="field-label")
        yield Field(", ".join(rc.tags), placeholder="any tags (e.g. rust)", id=f"{s}-tags", compact=True)

    def on_mount(self) -> None:
        self.query_one(
            f"#{self.side}-lambda", Slider
        ).tooltip = "MMR λ: relevance weight (←/→ 0.01, shift 0.1; F7 comes here from anywhere)"
        self.query_one(f"#{self.side}-penalty", Slider).tooltip = "MMR same-document penalty"
        self.query_one(f"#{self.side}-weights", Label).tooltip = (
            "[search.fusion] weights: the vector leg, and the full-text legs combined into one reading (the "
            "trigram or bigram leg and the word leg, in these shares) so full text votes once; the name term "
            "goes to a section whose heading or title equals the query. Set them in groove.toml."
        )
        self.app.run_config_signal.subscribe(self, self._on_run_config)

    def focus_first(self) -> None:
        """Focus the first setting (the drawer just opened)."""
        self.call_after_refresh(self.query_one(f"#{self.side}-mmr", Switch).focus)

    def _on_run_config(self, side: str) -> None:
        if side == self.side:
            self.sync(self.app.run_configs[side])

    def sync(self, rc: RunConfig) -> None:
        """Show `rc` without re-posting change messages, rewriting only the fields `rc` changed since the
        pane last showed or sent a config. The pane's own edits come back here synchronously (the signal
        calls subscribers at once) while newer keystrokes may already be in the field: comparing against
        the field's text would write the older value over them and lose keys."""
        old, self._shown = self._shown, rc

        def changed(name: str) -> bool:
            return old is None or getattr(old, name) != getattr(rc, name)

        s = self.side
        with self.prevent(Switch.Changed, Select.Changed, Slider.Changed, Input.Changed):
            if changed("mmr"):
                self.query_one(f"#{s}-mmr", Switch).value = rc.mmr
            if changed("parent"):
                self.query_one(f"#{s}-parent", Switch).value = rc.parent
            if changed("words"):
                self.query_one(f"#{s}-words", Switch).value = rc.words
            if changed("reranker"):
                rr = self.query_one(f"#{s}-reranker", Switch)
                rr.value = rc.reranker and not rr.disabled
            if changed("fusion"):
                self.query_one(f"#{s}-fusion", Select).value = rc.fusion
            if changed("lam"):
                self.query_one(f"#{s}-lambda", Slider).value = rc.lam
            if changed("same_doc_penalty"):
                self.query_one(f"#{s}-penalty", Slider).value = rc.same_doc_penalty
            limit = self.query_one(f"#{s}-limit", Input)
            if changed("limit") and limit.value != str(rc.limit):
                limit.value = str(rc.limit)
            globs = self.query_one(f"#{s}-globs", Input)
            if changed("path_globs") and split_list(globs.value) != rc.path_globs:
                globs.value = " ".join(rc.path_globs)
            tags = self.query_one(f"#{s}-tags", Input)
            if changed("tags") and split_list(tags.value) != rc.tags:
                tags.value = ", ".join(rc.tags)
        self._label_states()

    def _set(self, **changes) -> None:
        rc = replace(self.rc, **changes)
        if rc != self.rc:
            self._shown = rc  # the widgets already show this (or something newer): nothing to rewrite
            self.app.set_run_config(self.side, rc, sync=False)

    def _label_states(self) -> None:
        """Each switch's label says its state in words: the 4-cell block alone is hard to read."""
        for what in ("mmr", "parent", "words", "reranker"):
            sw = self.query_one(f"#{self.side}-{what}", Switch)
            self.query_one(f"#{self.side}-{what}-label", Label).update(
                state_label(what, sw.value, available=not sw.disabled)
            )

    def on_switch_changed(self, event: Switch.Changed) -> None:
        event.stop()
        self._label_states()
        what = str(event.switch.id).split("-", 1)[1]
        key = {"mmr": "mmr", "parent": "parent", "words": "words", "reranker": "reranker"}[what]
        self._set(**{key: event.value})

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.value in FUSION_METHODS:  # allow_blank=False: always a method
            self._set(fusion=event.value)

    def on_slider_changed(self, event: Slider.Changed) -> None:
        event.stop()
        key = {"lambda": "lam", "penalty": "same_doc_penalty"}[str(event.slider.id).split("-", 1)[1]]
        self._set(**{key: event.value})

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        what = str(event.input.id).split("-", 1)[1]
        if what == "limit":
            try:
                limit = int(event.value)
            except ValueError:
                return
            if 1 <= limit <= 1000:
                self._set(limit=limit)
        elif what == "globs":
            self._set(path_globs=split_list(event.value))
        elif what == "tags":
            self._set(tags=split_list(event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
