"""How fast the embedding phase goes, and in what order it works through the pending chunks.

The rate is a smoothed *recent* rate, not the run's mean: the first batch of a run pays for lazy model
set-up (weights read on first call, ONNX graph optimisation) and is left out, and older batches fade
with a time constant, so a machine that gets busier or quieter shows in a minute, not an hour later.

The time left is counted in work, not in chunks: the pending queue puts short documents first (below),
so chunks get longer as the run goes on and a chunks-per-second ETA would promise too little. A chunk's
work is an estimate of its model tokens (UTF-8 bytes / 4, groove's estimator, capped at what a model is
handed) plus a fixed per-passage cost. `format_rate` and `format_eta` word both the way every front end
shows them.

Order of the pending queue (`pending_in_order`): the chunks a search is most likely to want first.

  1. the first chunk of every document (its title, frontmatter-led preamble or first section);
  2. the other chunks of short documents (at most `SHORT_DOCUMENT_CHUNKS` chunks), so they become
     whole quickly;
  3. every other chunk.

Within each tier, documents modified most recently come first (file mtime, newest first), then by path,
then chunks in document order. The key is a property of each chunk and its document alone, so the order
is deterministic, and a run that is stopped and resumed embeds the rest in the same order the first run
would have; since each chunk's vector depends only on its own text, a fully embedded KB holds exactly
the vectors any other order would give.

Batches group the writes and the progress reports only: every passage runs through the model alone
(engine/models), so none is padded to a longer neighbour and each vector depends on its text alone.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass

SHORT_DOCUMENT_CHUNKS = 3
TIME_CONSTANT_S = 30.0  # how fast older batches fade from the rate (e-folding time)
PASSAGE_OVERHEAD = 8  # tokens a passage costs beyond its text (special tokens, e5's "passage: " prefix)
MAX_WORK_BYTES = 4 * 8192  # models are handed at most 8,192 characters (indexer.MODEL_INPUT_MAX_CHARS)


@dataclass(frozen=True, slots=True)
class PendingChunk:
    id: int
    work: float  # estimated model tokens, see the module docstring


def chunk_work(utf8_bytes: int) -> float:
    return min(utf8_bytes, MAX_WORK_BYTES) / 4 + PASSAGE_OVERHEAD


_PENDING_SQL = f"""
SELECT c.id,
       length(CAST(c.content AS BLOB)) + CASE WHEN :contextual THEN coalesce(length(CAST(c.context_text AS BLOB)), 0)
                                              ELSE 0 END
FROM chunks c
JOIN documents d ON d.id = c.document_id
WHERE c.embedded = 0
ORDER BY CASE WHEN c.chunk_index = 0 THEN 0
              WHEN (SELECT count(*) FROM chunks s WHERE s.document_id = c.document_id) <= {SHORT_DOCUMENT_CHUNKS} THEN 1
              ELSE 2 END,
         coalesce(d.mtime_ns, 0) DESC, d.path, c.chunk_index, c.id
"""


def pending_in_order(conn: sqlite3.Connection, contextual: bool) -> list[PendingChunk]:
    """The chunks still without a vector, in embedding order (module docstring)."""
    return [
        PendingChunk(cid, chunk_work(size or 0)) for cid, size in conn.execute(_PENDING_SQL, {"contextual": contextual})
    ]


def format_rate(chunks_per_second: float) -> str:
    """`0.42 chunks/s`, `5.8 chunks/s`, `120 chunks/s`: about two significant figures, all a smoothed rate
    can claim."""
    r = chunks_per_second
    return f"{r:.2g} chunks/s" if r < 1 else f"{r:.1f} chunks/s" if r < 10 else f"{r:,.0f} chunks/s"


def format_eta(seconds: float) -> str:
    """`about 40 s left`, `about 12 min left`, `about 2 h 10 min left`: rounded as coarsely as an estimate
    deserves (5 s under a minute, whole minutes under an hour, 5 minutes above)."""
    s = max(0.0, seconds)
    if s < 57.5:
        return f"about {max(5, int(5 * round(s / 5)))} s left"
    if s < 3570:
        return f"about {max(1, round(s / 60))} min left"
    minutes = 5 * round(s / 300)
    hours, rest = divmod(minutes, 60)
    return f"about {hours} h {rest} min left" if rest else f"about {hours} h left"


class RateMeter:
    """Exponentially weighted recent rate of chunks and of work per second, fed one batch at a time.

    Both sums decay by exp(-dt / time_constant) as each batch's dt is added, so the rate is the ratio of
    recent chunks to recent seconds (weighting by time, not by batch: a short batch counts for little).
    The first `warmup_batches` batches are left out (model set-up)."""

    def __init__(self, *, time_constant: float = TIME_CONSTANT_S, warmup_batches: int = 1) -> None:
        self.time_constant = time_constant
        self._warmup = warmup_batches
        self._chunks = 0.0
        self._work = 0.0
        self._seconds = 0.0

    def add(self, chunks: int, work: float, seconds: float) -> None:
        if self._warmup > 0:
            self._warmup -= 1
            return
        seconds = max(seconds, 0.0)
        keep = math.exp(-seconds / self.time_constant) if self.time_constant > 0 else 0.0
        self._chunks = self._chunks * keep + chunks
        self._work = self._work * keep + work
        self._seconds = self._seconds * keep + seconds

    @property
    def known(self) -> bool:
        return self._seconds > 0 and self._chunks > 0

    @property
    def rate(self) -> float | None:
        """Chunks per second, recent; None until a batch after the warm-up was measured."""
        return self._chunks / self._seconds if self.known else None

    def eta(self, remaining_work: float) -> float | None:
        """Seconds left for `remaining_work`, at the recent work rate; None while the rate is unknown."""
        if not self.known or self._work <= 0:
            return None
        return max(0.0, remaining_work) * self._seconds / self._work
