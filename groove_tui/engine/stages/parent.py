"""Level-aware parent retriever: what a hit's content expands to (our deviation 3 from groove, §G).

`expand_hit` is a pure function over one document's chunk rows; the search module reads the rows and
applies the result to the hit (content, expanded_from, and the explain trace's description).

Token estimate per row: `est = token_count if token_count > 0 else floor(utf8 bytes / 4)` (groove's NULL
fallback, so legacy rows still count against the cap).

1. **Whole document** (as groove): when the hit is *small* (`token_count` is not NULL and below
   `whole_doc_threshold_tokens`, strictly) and the whole document's est sum is ≤ `max_expanded_tokens`,
   the content is every chunk joined with "\\n\\n" and `expanded_from` is `whole_document`.
2. **Level-aware merge** otherwise. Rank a chunk by its heading level, the preamble (level NULL, the H1
   level) being rank 1. A *section* is a part-0 chunk plus its continuation chunks (part ≥ 1: the pieces
   of a section split at the size cap); a section's *unit* adds the following chunks of deeper rank (its
   sub-sections). Starting from the hit chunk alone, the expansion grows while its est sum stays
   ≤ `max_expanded_tokens`:
     a. to the hit's whole section (its heading chunk and all continuation parts), then
     b. to the hit's whole unit (with its sub-sections), then
     c. by whole sibling units — the units at the hit's rank under the same parent, each with its
        sub-sections and continuations — taken alternately outward: previous, next, previous, … When one
        side's next unit does not fit, that side is done and the other side keeps going.
   Each step is all-or-nothing: no unit is ever split and no chunk is ever cut. The walk never crosses a
   chunk of lower rank (the parent's next or previous heading, or the preamble for an H2 hit). The result
   is contiguous; `expanded_from` is `adjacent` with the first and last chunk_index merged. When nothing
   could be added (the hit alone exceeds the cap, or the smallest next step does not fit) the content is
   the hit's own text and `expanded_from` is `adjacent {i, i}`, groove's "considered but not expanded".

How groove differs (reference §G, §M.3): its adjacent path takes chunk_index ± 1 regardless of level —
so an H3 hit can pull in the next H2's heading chunk, or an H2 hit the preamble — and it is
all-or-nothing over those three chunks: if hit + both neighbours exceed the cap it returns the hit
alone even when one neighbour would have fitted. Its docs promise siblings "at the same heading level"
merged "until the block hits the cap"; this module implements that promise.

`hit_start`/`hit_end` give the character range of the hit chunk's own text inside the expanded content.

The work is bounded by the cap, not by the document: `plan_expansion` needs only the chunk shapes
(`ChunkOutline`: index, level, part, token estimate) of a window around the hit that reaches, on each
side, the document's edge or a point whose estimate from the hit on exceeds the cap — nothing beyond it
could be taken, so its structure cannot change the result (`outline_window`). The content is then read
for the planned range only: a hit in a 20 MB note of 8,000 chunks costs what a hit in any note longer than
the cap costs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Literal, Protocol

from groove_tui.engine.types import ExpandedFrom

JOINER = "\n\n"


@dataclass(frozen=True, slots=True)
class ChunkRow:
    chunk_id: int
    chunk_index: int
    level: int | None
    heading: str | None
    content: str
    token_count: int | None
    part: int = 0  # >= 1: continuation of a section that was split at the size cap


@dataclass(frozen=True, slots=True)
class Expansion:
    content: str
    expanded_from: ExpandedFrom
    description: str  # human-readable, for the explain trace


def est_tokens(row: ChunkRow) -> int:
    """groove's estimate: the stored count, or utf8 bytes / 4 when it is NULL or 0."""
    if row.token_count is not None and row.token_count > 0:
        return row.token_count
    return len(row.content.encode("utf-8")) // 4


@dataclass(frozen=True, slots=True)
class ChunkOutline:
    """A chunk's shape without its text: all the plan reads."""

    chunk_index: int
    level: int | None
    part: int
    token_count: int | None
    est: int  # est_tokens of the row


def outline_of(row: ChunkRow) -> ChunkOutline:
    return ChunkOutline(row.chunk_index, row.level, row.part, row.token_count, est_tokens(row))


@dataclass(frozen=True, slots=True)
class Plan:
    """What a hit expands to: the chunk_index range `first`..`last` (inclusive) and why."""

    kind: Literal["whole_document", "merged", "not_expanded"]
    first: int
    last: int
    tokens: int
    total_chunks: int = 0  # whole_document: the document's chunks
    siblings: int = 0  # merged: sibling units taken
    rank: int = 1  # merged: the rank of the hit's section
    why: str = ""  # not_expanded: the reason


OUTLINE_PAGE = 32  # shapes read at first on each side of a hit (doubling while the cap is not reached)


def outline_window(
    read_page: Callable[[int, bool, int], Sequence[ChunkOutline]], hit_index: int, cap: int
) -> list[ChunkOutline]:
    """The shapes around a hit that its expansion can reach, in chunk order: outward on each side until
    the estimate from the hit on exceeds `cap` (nothing beyond could be taken) or the document ends.
    `read_page(start, forward, limit)` gives up to `limit` shapes nearest `start` first: from `start` on
    (forward), or before it. Empty, or without the hit, when the hit's chunk is gone."""
    after = _outline_side(read_page, hit_index, True, cap)
    if not after or after[0].chunk_index != hit_index:
        return after
    before = _outline_side(read_page, hit_index, False, cap - after[0].est)
    return [*reversed(before), *after]


def _outline_side(
    read_page: Callable[[int, bool, int], Sequence[ChunkOutline]], start: int, forward: bool, budget: int
) -> list[ChunkOutline]:
    rows: list[ChunkOutline] = []
    total, page = 0, OUTLINE_PAGE
    while total <= budget:
        got = read_page(start, forward, page)
        rows += got
        total += sum(r.est for r in got)
        if len(got) < page:
            break  # the document ends
        start = got[-1].chunk_index + 1 if forward else got[-1].chunk_index
        page *= 2
    return rows


def expand_hit(
    hit_index: int,
    doc_chunks: Sequence[ChunkRow],
    *,
    whole_doc_threshold_tokens: int,
    max_expanded_tokens: int,
) -> Expansion | None:
    """The expansion of the chunk with `hit_index`; None when that chunk is not in `doc_chunks`."""
    rows = sorted(doc_chunks, key=lambda r: r.chunk_index)  # already sorted in practice: O(n)
    plan = plan_expansion(
        hit_index,
        [outline_of(r) for r in rows],
        whole_doc_threshold_tokens=whole_doc_threshold_tokens,
        max_expanded_tokens=max_expanded_tokens,
    )
    if plan is None:
        return None
    return build_expansion(plan, hit_index, [r for r in rows if plan.first <= r.chunk_index <= plan.last])


def plan_expansion(
    hit_index: int,
    outline: Sequence[ChunkOutline],
    *,
    whole_doc_threshold_tokens: int,
    max_expanded_tokens: int,
) -> Plan | None:
    """The plan for the chunk with `hit_index` over `outline` (in chunk order: the whole document, or the
    `outline_window` around the hit); None when that chunk is not in it."""
    pos = next((i for i, r in enumerate(outline) if r.chunk_index == hit_index), None)
    if pos is None:
        return None
    cap = max_expanded_tokens
    prefix = [0, *accumulate(r.est for r in outline)]
    hit = outline[pos]
    small = hit.token_count is not None and hit.token_count < whole_doc_threshold_tokens
    if small and prefix[-1] <= cap:  # a window that is not the whole document exceeds the cap
        return Plan("whole_document", outline[0].chunk_index, outline[-1].chunk_index, prefix[-1], len(outline))
    start, end, siblings = _grow(outline, prefix, pos, cap)
    if (start, end) == (pos, pos + 1):
        tokens = hit.est
        if tokens > cap:
            why = f"the chunk alone ({tokens:,} tokens) exceeds max_expanded_tokens ({cap:,})"
        elif len(outline) == 1:
            why = "the document has no other chunk"
        else:
            why = f"nothing around it fits within {cap:,} tokens"
        return Plan("not_expanded", hit_index, hit_index, tokens, why=why)
    rank = _rank(outline[_section_head(outline, pos)])
    first, last = outline[start].chunk_index, outline[end - 1].chunk_index
    return Plan("merged", first, last, prefix[end] - prefix[start], siblings=siblings, rank=rank)


def build_expansion(plan: Plan, hit_index: int, rows: Sequence[ChunkRow]) -> Expansion:
    """The expansion `plan` describes, from `rows`: the document's chunks `plan.first`..`plan.last`."""
    rows = sorted(rows, key=lambda r: r.chunk_index)
    pos = next(i for i, r in enumerate(rows) if r.chunk_index == hit_index)
    if plan.kind == "whole_document":
        return _whole_document(rows, pos, plan.tokens)
    if plan.kind == "not_expanded":
        return _not_expanded(rows[pos], plan.why)
    return _merged(rows, pos, plan)


# ---------------------------------------------------------------- document structure


class _Shaped(Protocol):
    @property
    def level(self) -> int | None: ...
    @property
    def part(self) -> int: ...


def _rank(row: _Shaped) -> int:
    return 1 if row.level is None else row.level


def _section_head(rows: Sequence[_Shaped], pos: int) -> int:
    """The part-0 chunk that starts the section `pos` belongs to."""
    while pos > 0 and rows[pos].part >= 1:
        pos -= 1
    return pos


def _section_end(rows: Sequence[_Shaped], head: int) -> int:
    """One past the last continuation part of the section starting at `head`."""
    end = head + 1
    while end < len(rows) and rows[end].part >= 1:
        end += 1
    return end


def _next_head(rows: Sequence[_Shaped], start: int, stop_rank: int) -> int:
    """First section head at or after `start` whose rank is <= `stop_rank` (len(rows) if none)."""
    for i in range(start, len(rows)):
        if rows[i].part == 0 and _rank(rows[i]) <= stop_rank:
            return i
    return len(rows)


def _sibling_units(rows: Sequence[_Shaped], head: int, rank: int) -> list[tuple[int, int]]:
    """Half-open position ranges of the units at `rank` under the parent of the section at `head`."""
    lo = head
    while lo > 0 and not (rows[lo - 1].part == 0 and _rank(rows[lo - 1]) < rank):
        lo -= 1
    hi = _next_head(rows, head + 1, rank - 1)
    # chunks before the parent's first unit at this rank (deeper orphans) belong to the parent itself
    heads = [i for i in range(lo, hi) if (rows[i].part == 0 or i == head) and _rank(rows[i]) == rank]
    return [(h, nxt) for h, nxt in zip(heads, [*heads[1:], hi], strict=True)]


# ---------------------------------------------------------------- growing the merge


def _grow(rows: Sequence[_Shaped], prefix: list[int], pos: int, cap: int) -> tuple[int, int, int]:
    """The merged half-open range around `pos`, and how many sibling units it took."""

    def fits(s: int, e: int) -> bool:
        return prefix[e] - prefix[s] <= cap

    head = _section_head(rows, pos)
    rank = _rank(rows[head])
    own_unit = (head, _next_head(rows, head + 1, rank))
    start, end = pos, pos + 1
    for s, e in ((head, _section_end(rows, head)), own_unit):
        if not fits(s, e):
            return start, end, 0
        start, end = s, e

    units = _sibling_units(rows, head, rank)
    k = units.index(own_unit)
    before, after = units[:k][::-1], units[k + 1 :]
    bi = ai = taken = 0
    prev_turn = True
    while bi < len(before) or ai < len(after):
        use_prev = bi < len(before) and (prev_turn or ai >= len(after))
        s, e = (before[bi][0], end) if use_prev else (start, after[ai][1])
        if fits(s, e):
            start, end, taken = s, e, taken + 1
            bi, ai = (bi + 1, ai) if use_prev else (bi, ai + 1)
        elif use_prev:  # the cost only grows: a unit that does not fit now never will, so that side is done
            bi = len(before)
        else:
            ai = len(after)
        prev_turn = not use_prev
    return start, end, taken


# ---------------------------------------------------------------- results


def _offset(rows: Sequence[ChunkRow], start: int, pos: int) -> int:
    return sum(len(rows[i].content) + len(JOINER) for i in range(start, pos))


def _whole_document(rows: Sequence[ChunkRow], pos: int, tokens: int) -> Expansion:
    hit_start = _offset(rows, 0, pos)
    return Expansion(
        content=JOINER.join(r.content for r in rows),
        expanded_from=ExpandedFrom(
            kind="whole_document",
            total_chunks=len(rows),
            hit_start=hit_start,
            hit_end=hit_start + len(rows[pos].content),
        ),
        description=f"whole document: {_plural(len(rows), 'chunk')} ({tokens:,} tokens)",
    )


def _merged(rows: Sequence[ChunkRow], pos: int, plan: Plan) -> Expansion:
    hit_start = _offset(rows, 0, pos)
    what = "its section" + (f" and {_plural(plan.siblings, 'sibling section')}" if plan.siblings else "")
    return Expansion(
        content=JOINER.join(r.content for r in rows),
        expanded_from=ExpandedFrom(
            kind="adjacent",
            from_index=plan.first,
            to_index=plan.last,
            hit_start=hit_start,
            hit_end=hit_start + len(rows[pos].content),
        ),
        description=(
            f"merged chunks {plan.first}–{plan.last} at level {_level_label(plan.rank)}: {what} "
            f"({plan.tokens:,} tokens)"
        ),
    )


def _not_expanded(hit: ChunkRow, why: str) -> Expansion:
    return Expansion(
        content=hit.content,
        expanded_from=ExpandedFrom(
            kind="adjacent",
            from_index=hit.chunk_index,
            to_index=hit.chunk_index,
            hit_start=0,
            hit_end=len(hit.content),
        ),
        description=f"not expanded: {why}",
    )


def _level_label(rank: int) -> str:
    return "top (preamble)" if rank <= 1 else "#" * rank


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
