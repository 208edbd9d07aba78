"""Pure comparison of two ranked result lists (compare mode).

Keys are anything hashable (the TUI uses `Hit.chunk_id`). Ranks are 1-based. A marker says where a hit
stands on *this* side relative to the *other* side:

* ``↑n`` — ranked n places higher here than there;  ``↓n`` — n places lower;  ``=`` — same rank;
* ``new`` — only on this side;  ``gone`` — a row for a hit the other side has and this side does not.

Summary counts are from left to right: `moved_up` counts hits in both whose right rank is better than
their left rank. overlap@k = |top-k(left) ∩ top-k(right)| / k.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

from groove_tui.engine.types import Hit

MarkerKind = Literal["up", "down", "same", "new", "gone"]


@dataclass(frozen=True, slots=True)
class Marker:
    kind: MarkerKind
    delta: int = 0  # places moved (up/down); for "gone", the rank on the other side

    @property
    def label(self) -> str:
        if self.kind == "up":
            return f"↑{self.delta}"
        if self.kind == "down":
            return f"↓{self.delta}"
        if self.kind == "same":
            return "="
        return self.kind


@dataclass(frozen=True, slots=True)
class Summary:
    in_both: int
    only_left: int
    only_right: int
    moved_up: int
    moved_down: int
    unchanged: int
    overlap: float  # overlap@k
    k: int

    def as_text(self) -> str:
        return (
            f"both {self.in_both} · only left {self.only_left} · only right {self.only_right} · "
            f"moved ↑{self.moved_up} ↓{self.moved_down} · overlap@{self.k} {self.overlap:.2f}"
        )


@dataclass(frozen=True, slots=True)
class Comparison:
    left: tuple[Marker, ...]  # one per left hit, relative to right
    right: tuple[Marker, ...]  # one per right hit, relative to left
    left_gone: tuple[Hashable, ...]  # keys right has and left does not (in right's order)
    right_gone: tuple[Hashable, ...]  # keys left has and right does not (in left's order)
    summary: Summary


def _ranks(keys: Sequence[Hashable]) -> dict[Hashable, int]:
    out: dict[Hashable, int] = {}
    for i, k in enumerate(keys, 1):
        out.setdefault(k, i)  # first occurrence wins
    return out


def markers(this: Sequence[Hashable], other: Sequence[Hashable]) -> tuple[Marker, ...]:
    """One marker per item of `this`, relative to its rank in `other`."""
    other_rank = _ranks(other)
    out = []
    for i, k in enumerate(this, 1):
        j = other_rank.get(k)
        if j is None:
            out.append(Marker("new"))
        elif i < j:
            out.append(Marker("up", j - i))
        elif i > j:
            out.append(Marker("down", i - j))
        else:
            out.append(Marker("same"))
    return tuple(out)


def overlap_at_k(left: Sequence[Hashable], right: Sequence[Hashable], k: int) -> float:
    if k <= 0:
        return 0.0
    return len(set(left[:k]) & set(right[:k])) / k


def compare(left: Sequence[Hashable], right: Sequence[Hashable], k: int | None = None) -> Comparison:
    """Compare two rankings. `k` defaults to the longer list's length (at least 1)."""
    if k is None:
        k = max(len(left), len(right), 1)
    lr, rr = _ranks(left), _ranks(right)
    both = [key for key in lr if key in rr]
    up = sum(1 for key in both if rr[key] < lr[key])
    down = sum(1 for key in both if rr[key] > lr[key])
    summary = Summary(
        in_both=len(both),
        only_left=sum(1 for key in lr if key not in rr),
        only_right=sum(1 for key in rr if key not in lr),
        moved_up=up,
        moved_down=down,
        unchanged=len(both) - up - down,
        overlap=overlap_at_k(left, right, k),
        k=k,
    )
    return Comparison(
        left=markers(left, right),
        right=markers(right, left),
        left_gone=tuple(key for key in rr if key not in lr),
        right_gone=tuple(key for key in lr if key not in rr),
        summary=summary,
    )


def gone_marker(other_rank: int) -> Marker:
    return Marker("gone", other_rank)


@dataclass(frozen=True, slots=True)
class Row:
    """One row of a side's result list: the hit, its rank there and where it stands against the other side."""

    hit: Hit
    rank: int  # rank on this side; for gone rows, the rank on the other side
    marker: Marker | None = None
    gone: bool = False
