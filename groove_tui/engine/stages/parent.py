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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

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


def expand_hit(
    hit_index: int,
    doc_chunks: Sequence[ChunkRow],
    *,
    whole_doc_threshold_tokens: int,
    max_expanded_tokens: int,
) -> Expansion | None:
    """The expansion of the chunk with `hit_index`; None when that chunk is not in `doc_chunks`."""
    rows = sorted(doc_chunks, key=lambda r: r.chunk_index)  # already sorted in practice: O(n)
    pos = next((i for i, r in enumerate(rows) if r.chunk_index == hit_index), None)
    if pos is None:
        return None
    prefix = [0, *accumulate(est_tokens(r) for r in rows)]
    hit = rows[pos]
    small = hit.token_count is not None and hit.token_count < whole_doc_threshold_tokens
    if small and prefix[-1] <= max_expanded_tokens:
        return _whole_document(rows, pos, prefix[-1])
    start, end, siblings = _grow(rows, prefix, pos, max_expanded_tokens)
    if (start, end) == (pos, pos + 1):
        return _not_expanded(rows, pos, prefix, max_expanded_tokens)
    return _merged(rows, pos, start, end, prefix[end] - prefix[start], siblings)


# ---------------------------------------------------------------- document structure


def _rank(row: ChunkRow) -> int:
    return 1 if row.level is None else row.level


def _section_head(rows: Sequence[ChunkRow], pos: int) -> int:
    """The part-0 chunk that starts the section `pos` belongs to."""
    while pos > 0 and rows[pos].part >= 1:
        pos -= 1
    return pos


def _section_end(rows: Sequence[ChunkRow], head: int) -> int:
    """One past the last continuation part of the section starting at `head`."""
    end = head + 1
    while end < len(rows) and rows[end].part >= 1:
        end += 1
    return end


def _next_head(rows: Sequence[ChunkRow], start: int, stop_rank: int) -> int:
    """First section head at or after `start` whose rank is <= `stop_rank` (len(rows) if none)."""
    for i in range(start, len(rows)):
        if rows[i].part == 0 and _rank(rows[i]) <= stop_rank:
            return i
    return len(rows)


def _sibling_units(rows: Sequence[ChunkRow], head: int, rank: int) -> list[tuple[int, int]]:
    """Half-open position ranges of the units at `rank` under the parent of the section at `head`."""
    lo = head
    while lo > 0 and not (rows[lo - 1].part == 0 and _rank(rows[lo - 1]) < rank):
        lo -= 1
    hi = _next_head(rows, head + 1, rank - 1)
    # chunks before the parent's first unit at this rank (deeper orphans) belong to the parent itself
    heads = [i for i in range(lo, hi) if (rows[i].part == 0 or i == head) and _rank(rows[i]) == rank]
    return [(h, nxt) for h, nxt in zip(heads, [*heads[1:], hi], strict=True)]


# ---------------------------------------------------------------- growing the merge


def _grow(rows: Sequence[ChunkRow], prefix: list[int], pos: int, cap: int) -> tuple[int, int, int]:
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


def _merged(rows: Sequence[ChunkRow], pos: int, start: int, end: int, tokens: int, siblings: int) -> Expansion:
    hit_start = _offset(rows, start, pos)
    first, last = rows[start].chunk_index, rows[end - 1].chunk_index
    rank = _rank(rows[_section_head(rows, pos)])
    what = "its section" + (f" and {_plural(siblings, 'sibling section')}" if siblings else "")
    return Expansion(
        content=JOINER.join(r.content for r in rows[start:end]),
        expanded_from=ExpandedFrom(
            kind="adjacent",
            from_index=first,
            to_index=last,
            hit_start=hit_start,
            hit_end=hit_start + len(rows[pos].content),
        ),
        description=f"merged chunks {first}–{last} at level {_level_label(rank)}: {what} ({tokens:,} tokens)",
    )


def _not_expanded(rows: Sequence[ChunkRow], pos: int, prefix: list[int], cap: int) -> Expansion:
    hit = rows[pos]
    tokens = prefix[pos + 1] - prefix[pos]
    if tokens > cap:
        why = f"the chunk alone ({tokens:,} tokens) exceeds max_expanded_tokens ({cap:,})"
    elif len(rows) == 1:
        why = "the document has no other chunk"
    else:
        why = f"nothing around it fits within {cap:,} tokens"
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
