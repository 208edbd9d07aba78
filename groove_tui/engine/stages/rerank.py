"""Cross-encoder rerankers: loading and scoring only (the pipeline stage lives in retrieve/searcher.py).

A reranker is a fastembed ``TextCrossEncoder``: a pulled model (``groove-tui models pull ms-marco-l12``),
a fastembed catalog name (pulled, or in fastembed's cache) or a local ONNX directory. Nothing downloads
here: a model that is not on disk is a ``ModelUnavailable`` error in well under a second whose one-line
message says what to pull. Each reranker carries the languages it covers (catalog.ModelSpec) for the
search's language guard.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from groove_tui.engine.models.catalog import (
    KNOWN_MODELS,
    HubSource,
    WheelSource,
    find_spec,
    installed_dir,
    not_pulled_message,
    pull_command,
    read_manifest,
    repair_advice,
)
from groove_tui.engine.models.embedders import DEFAULT_BATCH, ModelCache
from groove_tui.engine.models.offline import (
    ONNX_DIR_PREFIX,
    ModelUnavailable,
    check_intact,
    fastembed_cache_dir,
    is_cached,
    local_registration_name,
    looks_like_path,
    not_cached_message,
    offline_hub,
    onnx_dir_files,
    register_once,
    resolve_dir,
)
from groove_tui.engine.models.runtime import quiet_fastembed

_OFF = {"", "none", "off", "false"}
_FIND_NAMES = "`groove-tui models list` shows the known ones"
# Characters kept of a passage before tokenising: far more than max_tokens can use, so truncation is the
# tokenizer's, but a multi-megabyte chunk is never tokenised whole.
CHARS_PER_TOKEN_BOUND = 16

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class RerankerSettings:
    """How a reranker runs ([reranker] max_tokens / threads / batch_size); part of its cache key."""

    max_tokens: int = 256
    threads: int | None = None  # None: onnxruntime's default
    batch_size: int = DEFAULT_BATCH


@runtime_checkable
class Reranker(Protocol):
    model_id: str
    languages: tuple[str, ...]  # () = not declared: every query is reranked

    def score(
        self,
        query: str,
        documents: Sequence[str],
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> np.ndarray:
        """float32 raw scores, one per document, in input order."""
        ...


def reranker_enabled(name: str | None) -> bool:
    """False for groove's "none" (and empty / off): the stage is skipped, nothing is loaded."""
    return name is not None and name.strip().lower() not in _OFF


def describe_reranker(name: str) -> str:
    """Canonical id for a reranker name or alias, without loading anything: a pulled model's short name,
    a fastembed catalog name (groove's names map to theirs), or onnx-dir:PATH."""
    name = name.strip()
    spec = find_spec(name, "reranker")
    if spec is not None:
        return spec.source.catalog_name if isinstance(spec.source, HubSource) else spec.name
    if looks_like_path(name) or Path(name).expanduser().is_dir():
        return ONNX_DIR_PREFIX + str(resolve_dir(name))
    return name


class FastEmbedReranker:
    """A fastembed ``TextCrossEncoder`` from the model directory, fastembed's cache or a local folder."""

    def __init__(self, name: str, settings: RerankerSettings = RerankerSettings()) -> None:
        try:
            from fastembed.rerank.cross_encoder import TextCrossEncoder
        except ImportError as e:  # pragma: no cover - a declared dependency
            raise ModelUnavailable("fastembed is not installed: pip install fastembed==0.9.1") from e
        quiet_fastembed()
        self.settings = settings
        _not_an_embedder(name)
        canonical = describe_reranker(name)
        spec = find_spec(canonical, "reranker")
        self.languages: tuple[str, ...] = spec.languages if spec is not None else ()
        folder: Path | None = None
        if spec is not None and isinstance(spec.source, WheelSource):
            folder = installed_dir(spec.name)
            if folder is None:
                raise ModelUnavailable(not_pulled_message(spec, "[reranker] model"))
        elif canonical.startswith(ONNX_DIR_PREFIX):
            folder = resolve_dir(canonical)
        else:
            folder = installed_dir(canonical)  # a catalog model pulled through the hub, if it was
        fastembed_name, extra, what = self._resolve(TextCrossEncoder, canonical, folder)
        self.model_id = canonical
        try:
            # files are resolved offline here; the ONNX session is built eagerly because a reranker
            # is only loaded when the user turns it on, and a broken file should fail right then
            with offline_hub():
                self._model = TextCrossEncoder(fastembed_name, threads=settings.threads, local_files_only=True, **extra)
            inner: Any = self._model.model  # fastembed's ONNX model: its tokenizer is not in the public API
            inner._ensure_tokenizer()
            # longest_first trims the passage, never the query, down to max_tokens for the pair
            inner.tokenizer.enable_truncation(max_length=settings.max_tokens, strategy="longest_first")
        except Exception as e:
            raise ModelUnavailable(f"cannot load the reranker: {what} (fastembed: {e})") from e
        # One pair through the model: a cross-encoder gives one score per pair; an embedder's ONNX (a
        # local folder, a pulled embedder's files) gives a vector per token and would fail mid-search.
        try:
            probe = np.asarray(list(self._model.rerank("probe", ["probe"], batch_size=1)), dtype=np.float32)
        except Exception:
            probe = None
        if probe is None or probe.shape != (1,):
            raise ModelUnavailable(
                f"[reranker] model: {what} is not a cross-encoder (it does not give one score per query and "
                f"passage; an embedder?); {_RERANKERS_ARE}"
            )

    def _resolve(self, TextCrossEncoder: Any, canonical: str, folder: Path | None) -> tuple[str, dict[str, Any], str]:
        """fastembed's name for the model, its keyword arguments, and a description for messages."""
        if folder is not None:
            try:
                manifest = read_manifest(folder)
            except ValueError as e:
                raise ModelUnavailable(f"[reranker] model: {e}: {repair_advice(folder)}") from None
            if manifest is not None:  # a damaged file is refused before anything reads it
                check_intact(folder, "[reranker] model", f"the reranker {canonical!r}", manifest)
            if manifest is not None and manifest.languages and not self.languages:
                self.languages = manifest.languages
            if manifest is not None and manifest.fastembed_name:
                return manifest.fastembed_name, {"specific_model_path": str(folder)}, f"{canonical} in {folder}"
            model_file, additional = onnx_dir_files(folder, "[reranker] model")
            reg = local_registration_name(folder)
            from fastembed.common.model_description import ModelSource

            register_once(
                TextCrossEncoder._list_supported_models,
                lambda: TextCrossEncoder.add_custom_model(
                    model=reg,
                    sources=ModelSource(hf=reg),  # never fetched: specific_model_path wins
                    model_file=model_file,
                    additional_files=additional,
                ),
                reg,
            )
            return reg, {"specific_model_path": str(folder)}, f"local model directory {folder}"
        matches = [m for m in TextCrossEncoder._list_supported_models() if m.model.lower() == canonical.lower()]
        if not matches:
            raise ModelUnavailable(
                f"unknown reranker {canonical!r}: a pulled model (e.g. ms-marco-l12), one of groove's names "
                f"(bge-v2-m3, jina-v2-ml, bge-base), a fastembed catalog name or a local ONNX directory; "
                f"{_FIND_NAMES}"
            )
        name = matches[0].model
        spec = find_spec(name, "reranker")
        what = not_cached_message(name, "[reranker] model", pull_command(spec.name if spec else name))
        if not is_cached(matches[0], fastembed_cache_dir()):
            raise ModelUnavailable(what)
        return name, {}, what

    def score(
        self,
        query: str,
        documents: Sequence[str],
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> np.ndarray:
        """Raw scores (higher = more relevant), one per document, in input order, batch by batch so a
        caller sees progress and can stop between batches."""
        out = np.zeros(len(documents), np.float32)
        limit = self.settings.max_tokens * CHARS_PER_TOKEN_BOUND
        size = self.settings.batch_size
        for start in range(0, len(documents), size):
            if cancel is not None and cancel.is_set():
                from groove_tui.engine.errors import SearchCancelled

                raise SearchCancelled("rerank cancelled")
            batch = [d[:limit] for d in documents[start : start + size]]
            scores = self._model.rerank(query, batch, batch_size=size)
            out[start : start + len(batch)] = np.fromiter(scores, dtype=np.float32, count=len(batch))
            if progress is not None:
                progress(start + len(batch), len(documents))
        return out


_RERANKERS_ARE = (
    "the rerankers are: "
    + ", ".join(s.name for s in KNOWN_MODELS if s.kind == "reranker")
    + ", any fastembed cross-encoder or a local cross-encoder ONNX directory ("
    + _FIND_NAMES
    + ")"
)


def _not_an_embedder(name: str) -> None:
    """An embedder named as the reranker is refused by name, before anything loads."""
    from groove_tui.engine.models.embedders import HASHING_NAME, describe_model

    text = name.strip()
    if looks_like_path(text) or Path(text).expanduser().is_dir():
        folder = resolve_dir(text)
    else:
        if find_spec(text, "reranker") is not None:
            return
        spec = find_spec(text, "embedder")
        if spec is not None or HASHING_NAME.match(text.lower()) or _is_catalog_embedder(describe_model(text)):
            shown = spec.name if spec is not None else text
            raise ModelUnavailable(f"[reranker] model: {shown!r} is an embedder, not a reranker; {_RERANKERS_ARE}")
        installed = installed_dir(text)
        if installed is None:
            return
        folder = installed
    try:
        manifest = read_manifest(folder)
    except ValueError:
        return  # reported with its repair advice by the loader
    if manifest is not None and manifest.kind == "embedder":
        raise ModelUnavailable(
            f"[reranker] model: {name.strip()!r} ({folder}) is an embedder, not a reranker; {_RERANKERS_ARE}"
        )


def _is_catalog_embedder(name: str) -> bool:
    from groove_tui.engine.models.embedders import _fastembed_catalog

    low = name.lower()
    if low not in _fastembed_catalog():
        return False
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    return not any(m.model.lower() == low for m in TextCrossEncoder._list_supported_models())


def load_reranker(name: str, settings: RerankerSettings = RerankerSettings()) -> Reranker:
    """Load a reranker; raises ModelUnavailable (fast, never downloading) when it can't be had."""
    if not reranker_enabled(name):
        raise ValueError(f"reranker {name!r} means off: check reranker_enabled() before loading")
    return FastEmbedReranker(name.strip(), settings)


class _RerankerCache:
    """One loaded reranker per (model, settings), shared process-wide by the TUI and the pipeline."""

    def __init__(self) -> None:
        self._caches: dict[RerankerSettings, ModelCache[Reranker]] = {}
        self._lock = threading.Lock()

    def get(self, name: str, settings: RerankerSettings) -> Reranker:
        with self._lock:
            cache = self._caches.get(settings)
            if cache is None:
                cache = self._caches[settings] = ModelCache(lambda n: load_reranker(n, settings), describe_reranker)
        return cache.get(name)

    def clear(self) -> None:
        with self._lock:
            self._caches.clear()


_RERANKERS = _RerankerCache()


def get_reranker(name: str, settings: RerankerSettings = RerankerSettings()) -> Reranker:
    """load_reranker, cached process-wide."""
    return _RERANKERS.get(name, settings)


def clear_reranker_cache() -> None:
    _RERANKERS.clear()


def blend_scores(rerank: Sequence[float], fused: Sequence[float], weight: float) -> list[float]:
    """The score a reranked candidate ranks by. weight 1 is groove's: the cross-encoder's raw score
    replaces the fused one. Below 1, both are z-scored over the pool and mixed, weight·ce + (1 − weight)·
    fused: a general-purpose cross-encoder and a hybrid first stage make partly different mistakes, so,
    as with the two retrieval legs, their mix ranks better than either alone (docs/evaluation.md)."""
    return [final for final, _, _ in blend_terms(rerank, fused, weight)]


def blend_terms(
    rerank: Sequence[float], fused: Sequence[float], weight: float
) -> list[tuple[float, float | None, float | None]]:
    """Per candidate: the blended score, and the z-scores it was made of (None at weight 1, where the raw
    cross-encoder score is the score). Explain shows the z-scores, so the score can be recomputed."""
    if weight >= 1.0:
        return [(float(x), None, None) for x in rerank]

    def z(values: Sequence[float]) -> np.ndarray:
        a = np.asarray(values, dtype=np.float64)
        sd = a.std()
        return (a - a.mean()) / sd if sd > 0 else np.zeros_like(a)

    zr, zf = z(rerank), z(fused)
    return [(float(weight * r + (1.0 - weight) * f), float(r), float(f)) for r, f in zip(zr, zf, strict=True)]
