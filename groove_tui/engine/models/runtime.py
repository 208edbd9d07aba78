"""ONNX Runtime sessions whose idle workers sleep instead of spinning.

By default a session's intra-op workers spin on a core for a while after each run, waiting for more
work. A query is embedded while the full-text legs run beside it, and the workers left spinning after
the embedding take the cores those legs need: on 2 cores the trigram statement took ~1.3x as long, the
whole search with it (docs/performance.md). Passage batches run back to back lose nothing measurable
without the spin, so every session the engine builds is quiet: its own (`quiet`), and fastembed's
embedders and cross-encoders, whose options fastembed builds itself (`quiet_fastembed`).
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["QUIET_POOL", "quiet", "quiet_fastembed"]

# ONNX Runtime's session config keys (onnxruntime_session_options_config_keys.h).
QUIET_POOL = {"session.intra_op.allow_spinning": "0", "session.inter_op.allow_spinning": "0"}

_PATCH_LOCK = threading.Lock()


def quiet(options: Any) -> Any:
    """`options` (an onnxruntime.SessionOptions) with spinning off; returned for chaining."""
    for key, value in QUIET_POOL.items():
        options.add_session_config_entry(key, value)
    return options


class _QuietOrt:
    """onnxruntime as fastembed's ONNX loader sees it: the same module, except that the SessionOptions
    it builds are quiet. fastembed exposes no way to pass session options through."""

    def __init__(self, ort: Any) -> None:
        self._ort = ort

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ort, name)

    def SessionOptions(self) -> Any:
        return quiet(self._ort.SessionOptions())


def quiet_fastembed() -> None:
    """Make every session fastembed builds from here on quiet (once per process; idempotent)."""
    from fastembed.common import onnx_model

    with _PATCH_LOCK:
        if not isinstance(onnx_model.ort, _QuietOrt):
            onnx_model.ort = _QuietOrt(onnx_model.ort)
