"""What each side searches with: the query text and the side's RunConfig, replaced wholesale and published
on `run_config_signal`, and the keys that change it (F2-F4 and F12 toggles, the λ slider, the palette).
Running the searches is runs.py.

A mixin, like the app's other parts: the config pane, the palette and the screens read `app.run_configs`
and `app.query_text` and call `app.set_run_config` / `app.set_query`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from groove_tui.engine.types import SearchParams
from groove_tui.tui.search.runconfig import NO_RERANKER, RunConfig, fusion_label, next_fusion

if TYPE_CHECKING:
    from groove_tui.settings.config import FusionMethod
    from groove_tui.tui.shell import AppShell as _AppPart
else:
    _AppPart = object


class SearchSettings(_AppPart):
    """App mixin. Owns `query_text`, `run_configs` per side, and the engine's `base_params` and
    `default_fusion` they turn into SearchParams with."""

    def _init_search_settings(self) -> None:
        self.query_text = ""
        self.base_params = SearchParams()
        self.default_fusion = self.config.search.fusion.method  # what SearchParams.fusion=None means
        rc = RunConfig.from_params(self.base_params, self.default_fusion, self.config.search.word_leg)
        self.run_configs: dict[str, RunConfig] = {"left": rc, "right": replace(rc, mmr=not rc.mmr)}

    def set_query(self, query: str) -> None:
        if query == self.query_text:
            return
        had = self._bindings_state()
        self.query_text = query
        if self._bindings_state() != had:
            self.refresh_bindings()
        for side in self.active_sides:
            self.schedule_search(side)

    def set_run_config(self, side: str, rc: RunConfig, *, sync: bool = True) -> None:
        """Replace a side's RunConfig wholesale, publish it, and re-run that side (debounced)."""
        if rc == self.run_configs[side]:
            return
        self.run_configs[side] = rc
        self.run_config_signal.publish(side)
        self.header_signal.publish("settings")  # the header says whether the reranker is on
        if side in self.active_sides:
            self.schedule_search(side)
            self.schedule_eval(side)

    def action_toggle(self, what: str) -> None:  # type: ignore[override]  # F2-F4's toggle(setting), not DOMNode's toggle(attribute)
        side = self.active_side if self.compare_active else "left"
        rc = self.run_configs[side]
        if what == "reranker" and not self.reranker_model:
            self.notify(NO_RERANKER, severity="warning", markup=False)
            return
        if what == "fusion":  # more than two methods: the toggle cycles through them
            self.action_set_fusion(next_fusion(rc.fusion))
            return
        field = {"mmr": "mmr", "parent": "parent", "reranker": "reranker", "words": "words"}[what]
        flipped: dict[str, Any] = {field: not getattr(rc, field)}
        new = replace(rc, **flipped)
        label = {"mmr": "MMR", "parent": "Parent retriever", "reranker": "Reranker", "words": "Word leg"}[what]
        self._apply_toggle(side, new, f"{label} {'on' if getattr(new, field) else 'off'}")

    def action_set_fusion(self, method: FusionMethod) -> None:
        """Fusion `method` on the current side (F12's next method, or the palette's choice)."""
        side = self.active_side if self.compare_active else "left"
        self._apply_toggle(side, replace(self.run_configs[side], fusion=method), f"Fusion: {fusion_label(method)}")

    def _apply_toggle(self, side: str, new: RunConfig, message: str) -> None:
        self.set_run_config(side, new)
        self.notify(message + (f" ({side})" if self.compare_active else ""), markup=False, timeout=1.5)

    def action_set_lambda(self, value: float, side: str = "left") -> None:
        self.set_run_config(side, replace(self.run_configs[side], lam=float(value)))
