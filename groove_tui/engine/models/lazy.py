"""A heavy object built once, on first use, by whichever thread needs it first."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class Lazy:
    """Builds a heavy object once, on first use, thread-safely."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._obj: Any = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._obj is not None

    def get(self) -> Any:
        if self._obj is None:
            with self._lock:
                if self._obj is None:
                    self._obj = self._factory()
        return self._obj
