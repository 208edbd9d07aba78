"""The vector leg's k nearest neighbours from vectors held in memory, exactly as sqlite-vec gives them.

sqlite-vec 0.1.9 answers `vec_chunks WHERE embedding MATCH ? AND k = ?` by a brute-force scan that reads
every stored vector from its pages (68-74 ms at 100k x 384 on this machine). The same scan over a
dimension-major float32 matrix in numpy takes about a quarter of that (docs/performance.md). It gives
**the same list** — ids, distances to the last bit, tie order — because it does the same arithmetic:

* sqlite-vec's L2 distance for float32 (`distance_l2_sqr_float`, built without SIMD in the wheels) is
  `sqrtf(Σ_i (a_i - b_i)²)`, summed in float32 one dimension after the other, starting from 0. Here each
  step is one numpy float32 subtract, multiply and add over all rows, dimension by dimension in that
  order, then the square root (sqlite-vec takes it in double and rounds to float32, which equals the
  float32 square root): the same IEEE operations on each row, in the same order. `calibrated()`
  checks that against sqlite-vec's own `vec_distance_l2` on this platform before the path is used.
* rows at equal distance come out in sqlite-vec's order: its scan goes through its storage chunks in
  chunk order, takes each chunk's k best by repeatedly picking the *last* smallest distance (`min_idx`
  compares with `<=`), and merges each chunk's list into the running one taking the running one's row
  first on a tie (`merge_sorted_lists`). That is one sort by (distance, chunk, offset descending), which
  is the order the matrix keeps its rows in, so a stable sort by distance reproduces it. Each row's
  chunk and offset come from vec0's `vec_chunks_rowids` table (sqlite-vec 0.1.9's layout; anything
  else and the matrix is not built). The tests check it on exact duplicates within and across chunks.

The matrix is one index generation's vectors, read in one transaction with that generation; it serves a
search only while the store is still at that generation, and is read again (on a background thread,
sqlite-vec answering meanwhile) after any write. Tables under MIN_ROWS rows stay with sqlite-vec, where
the scan is already a few milliseconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import sqlean as sqlite3

__all__ = ["MIN_ROWS", "VectorScan", "calibrated", "distances", "nearest", "read_vectors"]

MIN_ROWS = 25_000  # below this sqlite-vec's own scan is a few ms; the matrix is not worth its memory


def distances(matrix_t: np.ndarray, query: np.ndarray) -> np.ndarray:
    """float32 L2 distances of every column of the (dim, rows) matrix to `query`, summed dimension by
    dimension from 0 in float32 like sqlite-vec's scalar loop."""
    rows = matrix_t.shape[1]
    acc = np.zeros(rows, np.float32)
    diff = np.empty(rows, np.float32)
    for i in range(matrix_t.shape[0]):
        np.subtract(matrix_t[i], query[i], out=diff)
        np.multiply(diff, diff, out=diff)
        np.add(acc, diff, out=acc)
    return np.sqrt(acc)


def nearest(ids: np.ndarray, dist: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k smallest distances as (id, distance), ties in array order (the matrix keeps sqlite-vec's)."""
    if k <= 0 or len(ids) == 0:
        return []
    if k < len(ids):
        kth = np.partition(dist, k - 1)[k - 1]
        cand = np.flatnonzero(dist <= kth)  # every row tying the k-th place, so ties are cut in order
    else:
        cand = np.arange(len(ids))
    cand = cand[np.lexsort((cand, dist[cand]))][:k]
    return [(int(i), float(d)) for i, d in zip(ids[cand], dist[cand], strict=True)]


def read_vectors(conn: sqlite3.Connection) -> tuple[np.ndarray, np.ndarray] | None:
    """Every vector of `vec_chunks` as (ids, dimension-major matrix), rows in sqlite-vec's scan order
    (chunk ascending, offset descending); None when vec0's layout is not the one this mirrors."""
    try:
        found = conn.execute(
            "SELECT v.chunk_id, v.embedding, r.chunk_id, r.chunk_offset FROM vec_chunks v "
            "JOIN vec_chunks_rowids r ON r.rowid = v.chunk_id"
        ).fetchall()
    except sqlite3.Error:
        return None
    if not found or any(r[2] is None or r[3] is None for r in found):
        return None
    n = len(found)
    ids = np.fromiter((r[0] for r in found), np.int64, n)
    chunk = np.fromiter((r[2] for r in found), np.int64, n)
    offset = np.fromiter((r[3] for r in found), np.int64, n)
    blob = b"".join(r[1] for r in found)
    del found
    if len(blob) % (4 * n):
        return None
    order = np.lexsort((-offset, chunk))
    matrix = np.frombuffer(blob, np.float32).reshape(n, -1)
    return ids[order], np.ascontiguousarray(matrix[order].T)


_CALIBRATION: bool | None = None
_CALIBRATION_LOCK = threading.Lock()


def calibrated(conn: sqlite3.Connection) -> bool:
    """True when this platform's sqlite-vec computes L2 distances exactly as `distances` does (checked
    once per process on random vectors, dimensions 1 to 1,024, rounding-sensitive values)."""
    global _CALIBRATION
    with _CALIBRATION_LOCK:
        if _CALIBRATION is None:
            _CALIBRATION = _calibrate(conn)
        return _CALIBRATION


def _calibrate(conn: sqlite3.Connection) -> bool:
    rng = np.random.default_rng(20261201)
    try:
        for dim in (1, 3, 16, 17, 384, 1024):
            m = (rng.standard_normal((8, dim)) * rng.choice([1e-3, 1.0, 1e3], (8, dim))).astype(np.float32)
            q = rng.standard_normal(dim).astype(np.float32)
            ours = distances(np.ascontiguousarray(m.T), q)
            for row, d in zip(m, ours, strict=True):
                theirs = conn.execute("SELECT vec_distance_l2(?, ?)", (row.tobytes(), q.tobytes())).fetchone()[0]
                if float(d) != theirs:
                    return False
    except sqlite3.Error:
        return False
    return True


class VectorScan:
    """One generation's vectors (in sqlite-vec's scan order, a dimension-major float32 matrix) and KNN.

    `knn` answers only for the generation it holds, else None (the caller asks sqlite-vec). A matrix of
    another generation is read again on one background thread. A generation whose table is small, or
    whose vectors are still being written (the index run's second phase bumps the generation batch by
    batch), holds no matrix: reading 100k vectors after every batch would only slow the embedder."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect  # a new connection, closed after each read (Store.open_connection)
        self._lock = threading.Lock()
        self._generation: int | None = None  # what the fields below describe (None: nothing read yet)
        self._ids = np.empty(0, np.int64)
        self._matrix_t: np.ndarray | None = None  # None: this generation is left to sqlite-vec
        self._reader: threading.Thread | None = None
        self._closed = False

    def knn(self, query: np.ndarray, k: int, generation: int) -> list[tuple[int, float]] | None:
        """sqlite-vec's `MATCH query AND k = k ORDER BY distance` rows, or None when this generation has
        no matrix (yet): small, vectors pending, not read yet or being read."""
        with self._lock:
            reading = self._reader is not None and self._reader.is_alive()
            if self._generation != generation and not reading and not self._closed:
                # a daemon thread: a one-shot `groove-tui search` exits without waiting for the read
                self._reader = threading.Thread(target=self._load, name="groove-vector-scan", daemon=True)
                self._reader.start()
            if self._generation != generation or self._matrix_t is None:
                return None
            ids, matrix_t = self._ids, self._matrix_t
        if matrix_t.shape[0] != len(query):
            return None
        return nearest(ids, distances(matrix_t, np.asarray(query, np.float32)), k)

    def _load(self) -> None:
        try:
            conn = self._connect()
        except Exception:  # the store's own error; the next search asks again
            return
        try:
            conn.execute("BEGIN")  # one snapshot: the generation and the vectors it names
            try:
                row = conn.execute("SELECT value FROM index_meta WHERE key = 'generation'").fetchone()
                generation = int(row[0]) if row else 0
                chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
                pending = conn.execute("SELECT count(*) FROM chunks WHERE embedded = 0").fetchone()[0]
                read = None
                if chunks >= MIN_ROWS and not pending and calibrated(conn):
                    read = read_vectors(conn)
            finally:
                conn.execute("COMMIT")
            ids, matrix_t = read if read is not None else (np.empty(0, np.int64), None)
            with self._lock:
                if not self._closed:
                    self._generation, self._ids, self._matrix_t = generation, ids, matrix_t
        except sqlite3.Error:
            pass  # the next search asks again; sqlite-vec answers meanwhile
        finally:
            conn.close()

    def wait_loaded(self, timeout: float = 60.0) -> None:
        """For tests and benchmarks: block until a read in progress ends."""
        with self._lock:
            reader = self._reader
        if reader is not None:
            reader.join(timeout)

    def close(self) -> None:
        """Drop the matrix; a read in flight finishes on its own and is discarded."""
        with self._lock:
            self._closed = True
            self._generation, self._ids, self._matrix_t = None, np.empty(0, np.int64), None
