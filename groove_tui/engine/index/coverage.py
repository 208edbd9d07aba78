"""An index part way through its embedding phase, reproducibly: a copy with a seeded share of its chunks
embedded and the rest pending.

Fusion must not get worse than the full-text leg alone while vectors are pending, and that can only be
measured at a known coverage. Embedding a KB again for each share would take hours; removing the vectors
of all but a seeded share from a copy of a finished index gives the very state the indexer leaves behind
when it has embedded those chunks and not the others (their rows marked `embedded = 0`, no vector), at no
model cost. The share is drawn per chunk from a hash of (seed, document path, chunk index), so two
indexes of the same KB keep the same chunks, and a larger share keeps every chunk a smaller one kept.
"""

from __future__ import annotations

import hashlib
import math
import struct
from pathlib import Path

import sqlean as sqlite3

from groove_tui.engine.errors import ParamError
from groove_tui.engine.index.store import Store


def check_share(value: object) -> float:
    """A share of chunks: a number in [0, 1]."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0.0 <= value <= 1.0
    ):
        raise ParamError(f"embedded share = {value!r} is invalid: expected a number from 0 to 1")
    return float(value)


def keeps_vector(seed: int, path: str, chunk_index: int, share: float) -> bool:
    """Whether the chunk is among the seeded `share` that keep their vector (a uniform draw below share)."""
    digest = hashlib.blake2b(
        f"{seed}\0{path}\0{chunk_index}".encode("utf-8", "surrogateescape"), digest_size=8
    ).digest()
    return bool(struct.unpack(">Q", digest)[0] / 2.0**64 < share)


def copy_with_share(source: Path, target: Path, share: float, seed: int) -> tuple[int, int]:
    """Copy the index database `source` to `target` (a new file) and drop the vectors of every chunk outside
    the seeded share. Returns (chunks that keep a vector, chunks left pending). Chunks that had no vector
    in the source stay pending. The source is only read."""
    share = check_share(share)
    target.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(str(target))
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()
    store = Store(target)
    try:
        conn = store.conn()
        rows = conn.execute(
            "SELECT c.id, d.path, c.chunk_index FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.embedded = 1"
        ).fetchall()
        drop = [(cid,) for cid, path, index in rows if not keeps_vector(seed, path, index, share)]
        with store.transaction() as wconn:
            if drop and store.has_vec_table(wconn):
                wconn.executemany("DELETE FROM vec_chunks WHERE chunk_id = ?", drop)
            wconn.executemany("UPDATE chunks SET embedded = 0 WHERE id = ?", drop)
            store.bump_generation(wconn)
        pending = store.pending_count()
        return len(rows) - len(drop), pending
    finally:
        store.close()
