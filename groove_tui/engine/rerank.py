"""Cross-encoder rerankers: loading and scoring only (the pipeline stage lives elsewhere).

A reranker is a fastembed ``TextCrossEncoder``: a catalog name (from the local cache) or a local ONNX
directory. No cross-encoder installs from PyPI, so offline a catalog name is normally unavailable:
that is a ``ModelUnavailable`` error in well under a second, never a download or a hub retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from groove_tui.engine.embedders import (
    DEFAULT_BATCH,
    ONNX_DIR_PREFIX,
    ModelCache,
    ModelUnavailable,
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

# groove's short names (reference §E), so a groove.toml works unchanged
RERANKER_ALIASES = {
    "bge-v2-m3": "BAAI/bge-reranker-v2-m3",
    "jina-v2-ml": "jinaai/jina-reranker-v2-base-multilingual",
    "bge-base": "BAAI/bge-reranker-base",
}
_OFF = {"", "none", "off", "false"}
_FIND_NAMES = (
    "list the names with: python -c \"from fastembed.rerank.cross_encoder import TextCrossEncoder; "
    "print('\\n'.join(m['model'] for m in TextCrossEncoder.list_supported_models()))\""
)


@runtime_checkable
class Reranker(Protocol):
    model_id: str

    def score(self, query: str, documents: Sequence[str]) -> np.ndarray:
        """float32 raw scores, one per document, in input order."""
        ...


def reranker_enabled(name: str | None) -> bool:
    """False for groove's "none" (and empty / off): the stage is skipped, nothing is loaded."""
    return name is not None and name.strip().lower() not in _OFF


def describe_reranker(name: str) -> str:
    """Canonical id for a reranker name or alias, without loading anything."""
    name = name.strip()
    if name.lower() in RERANKER_ALIASES:
        return RERANKER_ALIASES[name.lower()]
    if looks_like_path(name) or Path(name).expanduser().is_dir():
        return ONNX_DIR_PREFIX + str(resolve_dir(name))
    return name


class FastEmbedReranker:
    """A fastembed ``TextCrossEncoder`` from its local cache or a local ONNX directory."""

    def __init__(self, name: str, *, batch_size: int = DEFAULT_BATCH, threads: int | None = None) -> None:
        try:
            from fastembed.rerank.cross_encoder import TextCrossEncoder
        except ImportError as e:  # pragma: no cover - a declared dependency
            raise ModelUnavailable("fastembed is not installed: pip install fastembed==0.9.1") from e
        self.batch_size = batch_size
        canonical = describe_reranker(name)
        extra: dict[str, Any] = {}
        if canonical.startswith(ONNX_DIR_PREFIX):
            path = resolve_dir(canonical)
            model_file, additional = onnx_dir_files(path, "[reranker] model")
            reg = local_registration_name(path)
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
            fastembed_name, extra["specific_model_path"] = reg, str(path)
            what = f"local model directory {path}"
        else:
            matches = [m for m in TextCrossEncoder._list_supported_models() if m.model.lower() == canonical.lower()]
            if not matches:
                raise ModelUnavailable(
                    f"unknown reranker {name!r}: use a local ONNX cross-encoder directory, one of groove's "
                    f"names ({', '.join(RERANKER_ALIASES)}), or a fastembed catalog name; {_FIND_NAMES}"
                )
            fastembed_name = matches[0].model
            what = not_cached_message(
                "fastembed.rerank.cross_encoder", "TextCrossEncoder", fastembed_name, "[reranker] model"
            )
            if not is_cached(matches[0], fastembed_cache_dir()):
                raise ModelUnavailable(what)
        self.model_id = canonical
        try:
            # files are resolved offline here; the ONNX session is built eagerly because a reranker
            # is only loaded when the user turns it on, and a broken file should fail right then
            with offline_hub():
                self._model = TextCrossEncoder(fastembed_name, threads=threads, local_files_only=True, **extra)
        except Exception as e:
            raise ModelUnavailable(f"cannot load the reranker: {what} (fastembed: {e})") from e

    def rerank(self, query: str, documents: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Raw scores (higher = more relevant), one per document, in input order."""
        if not documents:
            return np.zeros(0, np.float32)
        scores = self._model.rerank(query, list(documents), batch_size=batch_size or self.batch_size)
        return np.fromiter(scores, dtype=np.float32, count=len(documents))

    def score(self, query: str, documents: Sequence[str]) -> np.ndarray:
        return self.rerank(query, documents)


def load_reranker(name: str) -> Reranker:
    """Load a reranker; raises ModelUnavailable (fast, never downloading) when it can't be had."""
    if not reranker_enabled(name):
        raise ValueError(f"reranker {name!r} means off: check reranker_enabled() before loading")
    return FastEmbedReranker(name.strip())


_RERANKERS = ModelCache(load_reranker, describe_reranker)


def get_reranker(name: str) -> Reranker:
    """load_reranker, cached process-wide: the TUI and the search pipeline share one instance."""
    return _RERANKERS.get(name)


def clear_reranker_cache() -> None:
    _RERANKERS.clear()
