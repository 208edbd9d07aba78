"""A cache bounded by what its values weigh, for a long-lived process whose keys rarely repeat."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

from groove_tui.engine.retrieve.candidates import LRU

V = TypeVar("V")


class WeighedLRU(LRU[V]):
    """An LRU bounded by the summed weight of its values as well as by their number."""

    def __init__(self, size: int, max_weight: int, weigh: Callable[[V], int]) -> None:
        super().__init__(size)
        self.max_weight = max_weight
        self._weigh = weigh
        self._weights: dict[Hashable, int] = {}
        self.weight = 0

    def put(self, key: Hashable, value: V) -> None:
        w = self._weigh(value)
        with self._lock:
            self.weight += w - self._weights.get(key, 0)
            self._weights[key] = w
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > 1 and (len(self._data) > self.size or self.weight > self.max_weight):
                gone, _value = self._data.popitem(last=False)
                self.weight -= self._weights.pop(gone)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._weights.clear()
            self.weight = 0
