"""The ranking settings a sweep or a comparison may set by name (`mmr_lambda=0.5`), and how each applies.

A knob lives either in the per-call `SearchParams` (MMR, λ, penalty, parent retriever, fusion method,
reranker) or in the index-independent part of the `Config` (fusion weights, rrf_k, the reranker's pool
and blend). Every bad name or value is a `KnobError` naming the setting, the value and what is allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal

from groove_tui.engine.types import SearchParams
from groove_tui.settings.config import FUSION_METHODS, Config, FusionConfig

Kind = Literal["float", "int", "bool", "choice", "text"]
MAX_AXIS_VALUES = 1000


class KnobError(ValueError):
    """A setting name or value is unusable; the message names it and what is allowed."""


@dataclass(frozen=True, slots=True)
class Knob:
    name: str
    kind: Kind
    where: Literal["params", "fusion", "reranker"]
    field: str  # the SearchParams / FusionConfig / RerankerConfig field
    lo: float = 0.0
    hi: float = 1.0
    choices: tuple[str, ...] = ()
    needs_mmr: bool = False  # a λ or penalty without MMR changes nothing: setting one turns MMR on
    help: str = ""

    @property
    def allowed(self) -> str:
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "text":
            return "a reranker name or 'none'"
        kind = "an integer" if self.kind == "int" else "a number"
        return f"{kind} in [{self.lo:g}, {self.hi:g}]"

    def parse(self, raw: str) -> Any:
        """One value from its text."""
        text = raw.strip()
        if self.kind == "bool":
            low = text.lower()
            if low in ("true", "on", "yes", "1"):
                return True
            if low in ("false", "off", "no", "0"):
                return False
        elif self.kind == "choice":
            if text in self.choices:
                return text
        elif self.kind == "text":
            if text:
                return None if text in ("none", "off") else text
        else:
            try:
                value: float | int = int(text) if self.kind == "int" else float(text)
            except ValueError:
                value = math.nan
            if math.isfinite(value) and self.lo <= value <= self.hi:
                return value
        raise KnobError(f"{self.name} = {raw!r} is invalid: expected {self.allowed}")

    def sweepable(self) -> bool:
        return self.kind != "text"


def _unit(name: str, field: str, help: str, **kw: Any) -> Knob:
    return Knob(name, "float", kw.pop("where", "params"), field, 0.0, 1.0, help=help, **kw)


KNOBS: dict[str, Knob] = {
    k.name: k
    for k in (
        _unit("mmr_lambda", "mmr_lambda", "MMR relevance weight (turns MMR on)", needs_mmr=True),
        _unit(
            "mmr_same_doc_penalty", "mmr_same_doc_penalty", "MMR same-document penalty (turns MMR on)", needs_mmr=True
        ),
        Knob("mmr", "bool", "params", "mmr", help="MMR on / off"),
        Knob("parent_retriever", "bool", "params", "parent_retriever", help="parent retriever on / off"),
        Knob("fusion", "choice", "params", "fusion", choices=FUSION_METHODS, help="how the legs combine"),
        Knob("reranker", "text", "params", "reranker", help="the cross-encoder (a name, or none)"),
        Knob("vector_weight", "float", "fusion", "vector_weight", 0.0, 1e6, help="[search.fusion] vector_weight"),
        Knob("fts_weight", "float", "fusion", "fts_weight", 0.0, 1e6, help="[search.fusion] fts_weight"),
        Knob(
            "trigram_weight",
            "float",
            "fusion",
            "trigram_weight",
            0.0,
            1e6,
            help="[search.fusion] trigram_weight (the character leg's share of the full-text family)",
        ),
        Knob(
            "word_weight",
            "float",
            "fusion",
            "word_weight",
            0.0,
            1e6,
            help="[search.fusion] word_weight (the word leg's share of the full-text family)",
        ),
        Knob("name_weight", "float", "fusion", "name_weight", 0.0, 1e6, help="[search.fusion] name_weight"),
        Knob("word_leg", "bool", "params", "word_leg", help="the word leg on / off ([search] word_leg)"),
        Knob("rrf_k", "float", "fusion", "rrf_k", 1.0, 1e6, help="[search.fusion] rrf_k (used by rrf)"),
        Knob(
            "bm25_heading_weight",
            "float",
            "fusion",
            "bm25_heading_weight",
            0.0,
            1e6,
            help="[search.fusion] bm25_heading_weight (re-runs the full-text leg)",
        ),
        Knob(
            "bm25_context_weight",
            "float",
            "fusion",
            "bm25_context_weight",
            0.0,
            1e6,
            help="[search.fusion] bm25_context_weight (re-runs the full-text leg)",
        ),
        Knob(
            "bm25_content_weight",
            "float",
            "fusion",
            "bm25_content_weight",
            0.0,
            1e6,
            help="[search.fusion] bm25_content_weight (re-runs the full-text leg)",
        ),
        Knob("rerank_pool", "int", "reranker", "pool", 1, 1000, help="[reranker] pool: candidates reranked"),
        _unit("rerank_blend", "blend", "[reranker] blend: the cross-encoder's share", where="reranker"),
    )
}
# Short names people type, after the CLI flags
ALIASES = {
    "lambda": "mmr_lambda",
    "same_doc_penalty": "mmr_same_doc_penalty",
    "penalty": "mmr_same_doc_penalty",
    "parent": "parent_retriever",
    "pool": "rerank_pool",
    "blend": "rerank_blend",
    "method": "fusion",
}


def knob(name: str) -> Knob:
    key = ALIASES.get(name.strip(), name.strip())
    found = KNOBS.get(key)
    if found is None:
        raise KnobError(f"unknown setting {name!r}: expected one of {', '.join(KNOBS)}")
    return found


Setting = tuple[str, Any]  # (knob name, value)


def parse_settings(text: str) -> tuple[Setting, ...]:
    """`mmr=true,mmr_lambda=0.5 fusion=rrf` → (("mmr", True), ("mmr_lambda", 0.5), ("fusion", "rrf"))."""
    out: list[Setting] = []
    for part in text.replace(",", " ").split():
        name, sep, raw = part.partition("=")
        if not sep:
            raise KnobError(f"setting {part!r} is invalid: expected NAME=VALUE (e.g. mmr_lambda=0.5)")
        k = knob(name)
        out.append((k.name, k.parse(raw)))
    return tuple(out)


def apply_settings(config: Config, params: SearchParams, settings: tuple[Setting, ...]) -> tuple[Config, SearchParams]:
    """`config` and `params` with the settings applied (later ones win). Fusion weights that would all be
    zero are refused as the config loader refuses them."""
    p_changes: dict[str, Any] = {}
    f_changes: dict[str, Any] = {}
    r_changes: dict[str, Any] = {}
    for name, value in settings:
        k = KNOBS[name]
        target = {"params": p_changes, "fusion": f_changes, "reranker": r_changes}[k.where]
        target[k.field] = float(value) if k.kind == "float" else value
        if k.needs_mmr:
            p_changes.setdefault("mmr", True)
    if f_changes:
        fusion: FusionConfig = replace(config.search.fusion, **f_changes)
        if fusion.vector_weight == fusion.fts_weight == 0:
            raise KnobError("vector_weight = 0 and fts_weight = 0 is invalid: at least one must be > 0")
        if fusion.bm25_heading_weight == fusion.bm25_context_weight == fusion.bm25_content_weight == 0:
            raise KnobError("bm25_*_weight are all 0: at least one column weight must be > 0")
        config = replace(config, search=replace(config.search, fusion=fusion))
    if r_changes:
        config = replace(config, reranker=replace(config.reranker, **r_changes))
    return config, replace(params, **p_changes)


def describe(settings: tuple[Setting, ...]) -> str:
    return " ".join(f"{n}={format_value(v)}" for n, v in settings) or "(as configured)"


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, float):
        short = f"{value:g}"  # six significant digits, unless that would print another number
        return short if float(short) == value else repr(value)
    return str(value)


__all__ = [
    "ALIASES",
    "KNOBS",
    "Knob",
    "KnobError",
    "Setting",
    "apply_settings",
    "describe",
    "format_value",
    "knob",
    "parse_settings",
]
