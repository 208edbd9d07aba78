"""The live search settings of one side: one immutable object, replaced wholesale (elia pattern)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from rich.cells import cell_len

from groove_tui.engine.types import SearchParams
from groove_tui.settings.config import FUSION_METHODS, FusionConfig, FusionMethod

SIDES = ("left", "right")
DEFAULT_FUSION = FusionConfig().method  # ours: what [search.fusion] method is when groove.toml says nothing
NO_RERANKER = (
    "No reranker installed: run `groove-tui models pull ms-marco-l12` (English), or set "
    "[reranker] model in groove.toml"
)  # F4 or the reranker preset without a model
FUSION_LABELS = {"dbsf": "DBSF", "relative": "relative", "rrf": "RRF"}  # one per config.FUSION_METHODS


def fusion_label(method: str) -> str:
    """ "DBSF", "relative", "RRF"; a method the explorer has no label for shows as its config name."""
    return FUSION_LABELS.get(method, method)


def next_fusion(method: str) -> FusionMethod:
    """The method after `method` in config.FUSION_METHODS, wrapping round (F12 cycles through them)."""
    i = FUSION_METHODS.index(method) if method in FUSION_METHODS else -1
    return FUSION_METHODS[(i + 1) % len(FUSION_METHODS)]


@dataclass(frozen=True, slots=True)
class RunConfig:
    limit: int = 10
    mmr: bool = False
    lam: float = 0.7
    same_doc_penalty: float = 0.0
    parent: bool = False
    reranker: bool = False
    path_globs: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    fusion: FusionMethod = (
        DEFAULT_FUSION  # one of config.FUSION_METHODS: how the retrieval legs combine (SearchParams.fusion)
    )
    words: bool = True  # the word leg (SearchParams.word_leg)

    @classmethod
    def from_params(cls, p: SearchParams, fusion: FusionMethod = DEFAULT_FUSION, words: bool = True) -> RunConfig:
        """`fusion` and `words` are what `p.fusion=None` and `p.word_leg=None` stand for: the engine
        config's `[search.fusion] method` and `[search] word_leg`."""
        return cls(
            limit=p.limit,
            mmr=p.mmr,
            lam=p.mmr_lambda,
            same_doc_penalty=p.mmr_same_doc_penalty,
            parent=p.parent_retriever,
            reranker=p.reranker is not None,
            path_globs=tuple(p.path_globs),
            tags=tuple(p.tags_any),
            fusion=p.fusion or fusion,
            words=words if p.word_leg is None else p.word_leg,
        )

    def to_params(self, base: SearchParams, reranker_model: str | None, *, explain: bool = True) -> SearchParams:
        return replace(
            base,
            limit=self.limit,
            mmr=self.mmr,
            mmr_lambda=round(self.lam, 4),
            mmr_same_doc_penalty=round(self.same_doc_penalty, 4),
            parent_retriever=self.parent,
            reranker=reranker_model if (self.reranker and reranker_model) else None,
            path_globs=self.path_globs,
            tags_any=self.tags,
            fusion=self.fusion,  # always explicit, so exports and eval params say which method ran
            word_leg=self.words,
            explain=explain,
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["path_globs"] = list(self.path_globs)
        d["tags"] = list(self.tags)
        return d

    def describe(self, *, fusion: bool = False, reranker_available: bool = True) -> str:
        """One line for compare mode. `fusion` adds the method (the caller knows when it matters); it
        comes early because a label too wide for its column is cut at the end. A side that asks for a
        reranker when none is installed says so instead of claiming "rerank on"."""
        return " · ".join(
            text for _key, text in self.describe_parts(fusion=fusion, reranker_available=reranker_available)
        )

    def describe_parts(self, *, fusion: bool = False, reranker_available: bool = True) -> list[tuple[str, str]]:
        """`describe`'s parts as (setting, text), in the order shown."""
        parts = [("limit", f"limit {self.limit}")]
        if fusion:
            parts.append(("fusion", f"fusion {fusion_label(self.fusion)}"))
        parts.append(
            (
                "mmr",
                f"MMR λ{self.lam:.2f}" + (f" pen {self.same_doc_penalty:.2f}" if self.same_doc_penalty else "")
                if self.mmr
                else "MMR off",
            )
        )
        parts.append(("parent", "parent on" if self.parent else "parent off"))
        parts.append(("words", "words on" if self.words else "words off"))
        if self.reranker:
            parts.append(("reranker", "rerank on" if reranker_available else "rerank: none installed"))
        else:
            parts.append(("reranker", "rerank off"))
        if self.path_globs:
            parts.append(("paths", "paths " + ",".join(self.path_globs)))
        if self.tags:
            parts.append(("tags", "tags " + ",".join(self.tags)))
        return parts


# The parts a side's label gives up first when its column is too narrow: the reranker's state is never
# given up (it is what "reranker off / on" compares).
DROP_ORDER = ("limit", "tags", "paths", "words", "parent", "fusion", "mmr")


def fit_parts(
    parts: list[tuple[str, str]], shared: set[str], width: int, prefix: int = 0, sep: str = " · "
) -> list[tuple[str, str]]:
    """The parts of one side's label that fit in `width` cells after `prefix` cells: the `shared` ones
    (the same on both sides, so they say nothing about the difference) go first, then the others, in
    DROP_ORDER; the reranker's part always stays."""
    kept = list(parts)
    order = [k for k in DROP_ORDER if k in shared] + list(DROP_ORDER)
    for key in order:
        if prefix + cell_len(sep.join(t for _k, t in kept)) <= width:
            break
        kept = [(k, t) for k, t in kept if k != key]
    return kept


def split_list(text: str) -> tuple[str, ...]:
    """`a, b c` -> ('a', 'b', 'c'): filter inputs accept commas or spaces."""
    return tuple(p for p in text.replace(",", " ").split() if p)


Preset = Callable[[RunConfig], tuple[RunConfig, RunConfig]]


def _fusion_preset(method: str) -> tuple[str, Preset]:
    """Our default method on the left against `method` on the right."""
    return (
        f"fusion {fusion_label(DEFAULT_FUSION)} / {fusion_label(method)}",
        lambda rc: (replace(rc, fusion=DEFAULT_FUSION), replace(rc, fusion=method)),
    )


PRESETS: dict[str, tuple[str, Preset]] = {
    "reranker": ("reranker off / on", lambda rc: (replace(rc, reranker=False), replace(rc, reranker=True))),
    "mmr": ("MMR off / on", lambda rc: (replace(rc, mmr=False), replace(rc, mmr=True))),
    # "fusion-rrf": DBSF / RRF (ours against groove's), "fusion-relative": DBSF / relative
    **{f"fusion-{m}": _fusion_preset(m) for m in FUSION_METHODS if m != DEFAULT_FUSION},
    "lambda": ("MMR λ low 0.3 / high 0.9", lambda rc: (replace(rc, mmr=True, lam=0.3), replace(rc, mmr=True, lam=0.9))),
}
