"""Limits, the candidate pool, the page tiers a page is ranked in, and the checks `SearchParams` values pass
before a search runs (each refusal a `ParamError` naming key, value and range)."""

from __future__ import annotations

import math

import numpy as np

from groove_tui.engine.errors import ParamError

LIMIT_MAX = 1000


KNN_MAX = 4096


OVERFETCH_CAP = 10_000


def pool(x: int) -> int:
    """groove's candidate pool: max(5·x, 50)."""
    return max(5 * x, 50)


# The page sizes whose rankings make up a page: results 1-10 come from the ranking for 10, 11-20 from the
# ranking for 20, and so on. A few steps keep a page of 1,000 at seven rankings, not a thousand.
PAGE_TIERS = (10, 20, 50, 100, 200, 500, LIMIT_MAX)


def page_tiers(limit: int) -> tuple[int, ...]:
    """The page sizes ranked for a page of `limit`: every tier up to the first that holds it."""
    out = []
    for tier in PAGE_TIERS:
        out.append(tier)
        if tier >= limit:
            break
    return tuple(out)


def check_limit(value: object) -> int:
    """SearchParams.limit: an integer >= 0 (bool, float, None and strings refused, naming it)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ParamError(f"limit = {value!r} is invalid: expected an integer >= 0 (at most {LIMIT_MAX} are returned)")
    return int(value)


def check_bool(key: str, value: object) -> bool:
    """A SearchParams switch: True or False only (a string such as 'false' would read as on)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ParamError(f"{key} = {value!r} is invalid: expected True or False")
    return bool(value)


def _check_number(key: str, value: object, lo: float, hi: float, allowed: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ParamError(f"{key} = {value!r} is invalid: expected {allowed}")
    if not (math.isfinite(value) and lo <= value <= hi):
        raise ParamError(f"{key} = {value!r} is invalid: expected {allowed}")
    return float(value)


def first_page(per_leg: int, cap: int) -> int:
    """How many rows a filtered leg fetches first. groove fetches its whole over-fetch (10×) at once;
    the first `per_leg` accepted rows are the same whichever page finds them, so we start with 2× and
    fetch the rest only when filters left the page short (the default quality filter rarely does)."""
    return min(2 * per_leg, cap) if cap > per_leg else cap
