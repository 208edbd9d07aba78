"""The vector leg's k nearest neighbours from vectors held in memory, exactly as sqlite-vec gives them.

sqlite-vec 0.1.9 answers `vec_chunks WHERE embedding MATCH ? AND k = ?` by a brute-force scan that reads
every stored vector from its pages (68-74 ms at 100k x 384 on this machine). The same scan over a
dimension-major float32 matrix in numpy takes a fraction of that (docs/performance.md): one float32
matrix-vector product bounds every row's distance (`candidates`), and only the rows that can reach the
top k are scanned exactly. It gives **the same list** — ids, distances to the last bit, tie order —
because those rows' distances come from the same arithmetic:

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

The matrix is one index generation's vectors, read in one transaction with that generation. A later
generation is served from it plus that generation's *delta*: the index journals every chunk whose vector
may have changed (`vec_journal`, engine/index/store.py), so the chunks named since the matrix was read
are looked up — their vectors now, or their absence — in one snapshot of the later generation, and a
search scans the matrix with those rows masked out and the delta's rows beside it, merging both in
sqlite-vec's order (distance, then storage chunk, then offset descending: each row's place comes from
`vec_chunks_rowids`). A saved note is so found by its vector at once, not after a re-read of every
vector (seconds at 100k). A search begun in a generation the index has moved past since (a batch writes
its full text, then its vectors) is answered for the generation the index holds now, as sqlite-vec would
answer it. A delta too large, or a journal emptied past the matrix (trimmed, or the vectors replaced
wholesale), and the matrix is read again on a background thread, sqlite-vec answering meanwhile. Tables
under MIN_ROWS rows stay with sqlite-vec, whose scan is as fast as the matrix's there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import sqlean as sqlite3

__all__ = [
    "MIN_ROWS",
    "Bounds",
    "VectorScan",
    "bounds",
    "calibrated",
    "candidates",
    "distances",
    "nearest",
    "read_vectors",
    "row_norms",
]

# Below this sqlite-vec's own scan costs about what the matrix's exact scan of every row does (~1.5 ms);
# from it the matrix wins (scifact's 5,281 vectors: 4.5 ms → ~0.6 ms a search, for 8 MB held).
MIN_ROWS = 2_048
REREAD_SHARE = 0.01  # a delta naming more than this share of the matrix's rows starts a fresh read
REREAD_ROWS = 256  # (and at least this many: a small index's deltas are cheap whatever their share)
DELTA_MAX_SHARE = 0.05  # past this a delta is not served (sqlite-vec answers until the read is done)
_ACCUMULATE_COLUMNS = 256  # up to this many columns `distances` sums by add.accumulate (measured)
CANDIDATE_FLOOR = 2_048  # up to this many rows, every row's exact distance is cheaper than narrowing
RECENT_QUERIES = 2  # queries whose bounds are kept: the explorer searches two sides at once


def distances(matrix_t: np.ndarray, query: np.ndarray) -> np.ndarray:
    """float32 L2 distances of every column of the (dim, rows) matrix to `query`, summed dimension by
    dimension from 0 in float32 like sqlite-vec's scalar loop. A few columns (what `candidates` leaves)
    are summed by `add.accumulate`, which runs down each column in that order (it never pairs terms up
    as `sum` does) in one call; many, one dimension at a time, where a call per dimension costs less
    than accumulate's slower walk."""
    rows = matrix_t.shape[1]
    acc = np.zeros(rows, np.float32)
    if 0 < rows <= _ACCUMULATE_COLUMNS and matrix_t.shape[0]:
        squares = matrix_t - query.reshape(-1, 1)
        np.multiply(squares, squares, out=squares)
        acc[:] = np.add.accumulate(squares, axis=0)[-1]
        return np.sqrt(acc)
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


@dataclass(frozen=True, slots=True)
class _Rows:
    """Vectors with their places in sqlite-vec's storage, in its scan order (chunk ascending, offset
    descending): ids, the dimension-major matrix, each row's storage chunk and offset."""

    ids: np.ndarray
    matrix_t: np.ndarray
    chunk: np.ndarray
    offset: np.ndarray
    norms: np.ndarray  # each row's length, in float64 (what bounds `candidates`' rounding)


def row_norms(matrix_t: np.ndarray) -> np.ndarray:
    """Each column's Euclidean length in float64, dimension by dimension (no float64 copy of the matrix)."""
    acc = np.zeros(matrix_t.shape[1], np.float64)
    for row in matrix_t:
        r = row.astype(np.float64)
        acc += r * r
    return np.sqrt(acc)


@dataclass(frozen=True, slots=True)
class Bounds:
    """Every column's squared distance to one query within [lower, upper] (see `candidates`), removed
    columns above every bound; None for both when no bound holds (an overflow): every live column is
    then scanned. A search asks again with a larger k when a tie crosses the k-th place (copies of one
    note have one vector), and the same bounds answer it without another pass over the matrix."""

    lower: np.ndarray | None
    upper: np.ndarray | None
    keep: np.ndarray  # the live columns


def bounds(matrix_t: np.ndarray, norms: np.ndarray, query: np.ndarray, removed: np.ndarray | None = None) -> Bounds:
    """Squared distances from one float32 matrix-vector product, ‖a‖² − 2a·q + ‖q‖², each within `slack`
    of the float32 sum sqlite-vec computes — both are sums of `dim` float32 roundings, each at most 2⁻²⁴
    of (‖a‖ + ‖q‖)², with margin."""
    n, dim = matrix_t.shape[1], matrix_t.shape[0]
    keep = np.ones(n, bool) if removed is None else ~removed
    q64 = query.astype(np.float64)
    q_norm = float(np.sqrt(q64 @ q64))
    approx = norms * norms - 2.0 * (query @ matrix_t).astype(np.float64) + q_norm * q_norm
    slack = (4.0 * (dim + 4) * 2.0**-24) * (norms + q_norm) ** 2
    if not np.isfinite(approx[keep]).all():
        return Bounds(None, None, keep)
    upper = approx + slack
    if removed is not None:
        upper[removed] = np.inf
    return Bounds(approx - slack, upper, keep)


def candidates(
    matrix_t: np.ndarray,
    norms: np.ndarray,
    query: np.ndarray,
    k: int,
    removed: np.ndarray | None = None,
    known: Callable[[], Bounds] | None = None,
) -> np.ndarray:
    """Ascending column indices that hold every row of the exact k nearest and every row tying the k-th
    (removed rows left out), found without the exact per-dimension scan: at least k rows lie at or under
    U, the k-th smallest upper bound (`bounds`); a row whose lower bound exceeds U lies farther than all
    of them, so only the rows under it need their exact distance. `known` gives this query's bounds
    when they were computed already."""
    n = matrix_t.shape[1]
    live = n if removed is None else n - int(removed.sum())
    if k >= live or n <= CANDIDATE_FLOOR:
        return np.flatnonzero(np.ones(n, bool) if removed is None else ~removed)
    b = known() if known is not None else bounds(matrix_t, norms, query, removed)
    if b.lower is None or b.upper is None:
        return np.flatnonzero(b.keep)  # (an overflow: no bound holds, every row is scanned)
    bound = np.partition(b.upper, k - 1)[k - 1]
    return np.flatnonzero((b.lower <= bound) & b.keep)


def _rows(found: list[tuple[int, bytes, int, int]]) -> _Rows | None:
    """`found` (chunk id, embedding, storage chunk, offset) in scan order; None for a layout this does not
    mirror (no place, or embeddings of mixed sizes)."""
    if any(r[2] is None or r[3] is None for r in found):
        return None
    n = len(found)
    ids = np.fromiter((r[0] for r in found), np.int64, n)
    chunk = np.fromiter((r[2] for r in found), np.int64, n)
    offset = np.fromiter((r[3] for r in found), np.int64, n)
    blob = b"".join(r[1] for r in found)
    del found
    if n and len(blob) % (4 * n):
        return None
    order = np.lexsort((-offset, chunk))
    matrix = np.frombuffer(blob, np.float32).reshape(n, -1) if n else np.empty((0, 0), np.float32)
    matrix_t = np.ascontiguousarray(matrix[order].T)
    return _Rows(ids[order], matrix_t, chunk[order], offset[order], row_norms(matrix_t))


def _read_all(conn: sqlite3.Connection) -> _Rows | None:
    try:
        found = conn.execute(
            "SELECT v.chunk_id, v.embedding, r.chunk_id, r.chunk_offset FROM vec_chunks v "
            "JOIN vec_chunks_rowids r ON r.rowid = v.chunk_id"
        ).fetchall()
    except sqlite3.Error:
        return None
    return _rows(found) if found else None


def read_vectors(conn: sqlite3.Connection) -> tuple[np.ndarray, np.ndarray] | None:
    """Every vector of `vec_chunks` as (ids, dimension-major matrix), rows in sqlite-vec's scan order
    (chunk ascending, offset descending); None when vec0's layout is not the one this mirrors."""
    read = _read_all(conn)
    return None if read is None else (read.ids, read.matrix_t)


def _journal_mark(conn: sqlite3.Connection) -> int | None:
    """The journal's last entry in the caller's snapshot (0: none yet); None for an index without one."""
    try:
        conn.execute("SELECT 1 FROM vec_journal LIMIT 0")
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'vec_journal'").fetchone()
    except sqlite3.Error:
        return None
    return int(row[0]) if row else 0


@dataclass(frozen=True, slots=True)
class _Delta:
    """What a later generation changed against the matrix: its rows to mask, and the rows to add."""

    removed: np.ndarray | None  # bool per matrix row, None when no row went
    added: _Rows | None
    size: int  # chunks the journal named


_UNCHANGED = _Delta(None, None, 0)


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
    """One generation's vectors (in sqlite-vec's scan order, a dimension-major float32 matrix) and KNN,
    for that generation and, through its delta, for the later ones (module docstring).

    `knn` answers None when it cannot answer exactly (the caller asks sqlite-vec). A generation whose
    table is small, or whose vectors are still being written (the index run's second phase bumps the
    generation batch by batch), holds no matrix of its own: reading 100k vectors after every batch would
    only slow the embedder."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect  # a new connection, closed after each read (Store.open_connection)
        self._lock = threading.Lock()
        self._generation: int | None = None  # what the fields below describe (None: nothing read yet)
        self._base: _Rows | None = None  # the matrix with its rows' places (None: left to sqlite-vec)
        self._mark: int | None = None  # the journal's last entry when the matrix was read
        self._deltas: dict[int, _Delta | None] = {}  # by later generation (None: none can be served)
        self._reader: threading.Thread | None = None
        self._closed = False
        self._by_id: tuple[_Rows, np.ndarray, np.ndarray] | None = None  # a matrix, its ids sorted, their rows
        # The bounds of the latest queries (one per side the explorer shows), dropped with their matrix.
        self._recent: list[tuple[_Rows, _Delta, bytes, Bounds]] = []

    def knn(self, query: np.ndarray, k: int, generation: int) -> list[tuple[int, float]] | None:
        """sqlite-vec's `MATCH query AND k = k ORDER BY distance` rows, or None when this generation has
        no matrix and no delta against one (yet): small, vectors pending, not read yet or being read."""
        with self._lock:
            if self._closed:
                return None
            base, delta, reread = self._base, None, False
            if self._generation == generation:
                delta = _UNCHANGED
            elif base is None:
                reread = self._generation is None or generation > self._generation
            else:
                # A generation the matrix has not seen, or one the index has moved past since this
                # search began (a batch writes its full text, then its vectors): either way the answer
                # is the delta of the generation the index holds now, what sqlite-vec would read too.
                delta = self._delta(generation)
                reread = delta is None or delta.size > max(REREAD_ROWS, REREAD_SHARE * len(base.ids))
            if reread and not (self._reader is not None and self._reader.is_alive()):
                # a daemon thread: a one-shot `groove-tui search` exits without waiting for the read
                self._reader = threading.Thread(target=self._load, name="groove-vector-scan", daemon=True)
                self._reader.start()
            if base is None or delta is None:
                return None
        q = np.asarray(query, np.float32)
        if base.matrix_t.shape[0] != len(q):
            return None
        return _nearest_with(base, delta, q, k, partial(self._bounds, base, delta, q))

    def _bounds(self, base: _Rows, delta: _Delta, q: np.ndarray) -> Bounds:
        """The query's bounds over the matrix and delta (`Bounds`), computed once while it is among the
        latest queries."""
        key = q.tobytes()
        with self._lock:
            for held, held_delta, held_key, found in self._recent:
                if held is base and held_delta is delta and held_key == key:
                    return found
        found = bounds(base.matrix_t, base.norms, q, delta.removed)
        with self._lock:
            if self._base is base:  # (not for a matrix replaced meanwhile: that one is let go)
                self._recent = [(base, delta, key, found), *self._recent[: RECENT_QUERIES - 1]]
        return found

    def vectors(self, ids: list[int], generation: int) -> dict[int, np.ndarray] | None:
        """The stored vectors of `ids` in `generation` (an id with none is absent), copied from the matrix
        and the delta already read for that generation — the bytes sqlite-vec holds, without its scan of
        every row that a lookup by a list of ids costs; None when this generation is not held."""
        with self._lock:
            base = self._base
            if self._closed or base is None:
                return None
            delta = _UNCHANGED if self._generation == generation else self._deltas.get(generation)
            if delta is None:
                return None
            if self._by_id is None or self._by_id[0] is not base:
                order = np.argsort(base.ids, kind="stable")
                self._by_id = (base, base.ids[order], order)
            _, sorted_ids, rows = self._by_id
        out: dict[int, np.ndarray] = {}
        new = delta.added
        added = {} if new is None else {int(c): i for i, c in enumerate(new.ids)}
        want = np.asarray(ids, np.int64)
        at = np.minimum(np.searchsorted(sorted_ids, want), max(len(sorted_ids) - 1, 0))
        for cid, i in zip(want.tolist(), at.tolist(), strict=True):
            if new is not None and cid in added:
                out[cid] = np.ascontiguousarray(new.matrix_t[:, added[cid]])
            elif len(sorted_ids) and sorted_ids[i] == cid:
                row = rows[i]
                if delta.removed is None or not delta.removed[row]:
                    out[cid] = np.ascontiguousarray(base.matrix_t[:, row])
        return out

    def _delta(self, generation: int) -> _Delta | None:
        """The delta against the matrix of the generation the index holds now, which is `generation` or
        a later one, read once per generation (under the lock) in one snapshot; None when it cannot be
        served."""
        if generation in self._deltas:
            return self._deltas[generation]
        delta = None
        base, mark = self._base, self._mark
        if base is not None and mark is not None and len(self._deltas) < 64:
            try:
                conn = self._connect()
            except Exception:
                return None
            try:
                conn.execute("BEGIN")
                try:
                    now = _generation_of(conn)
                    if now == self._generation:
                        return _UNCHANGED  # a search begun before the matrix was read: it holds this one
                    if now in self._deltas:
                        return self._deltas[now]
                    delta = _read_delta(conn, base, mark)
                    self._deltas[now] = delta
                finally:
                    conn.execute("COMMIT")
            except sqlite3.Error:
                delta = None
            finally:
                conn.close()
        return delta

    def _load(self) -> None:
        try:
            conn = self._connect()
        except Exception:  # the store's own error; the next search asks again
            return
        try:
            conn.execute("BEGIN")  # one snapshot: the generation and the vectors it names
            try:
                generation = _generation_of(conn)
                chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
                pending = conn.execute("SELECT count(*) FROM chunks WHERE embedded = 0").fetchone()[0]
                read, mark = None, None
                if chunks >= MIN_ROWS and not pending and calibrated(conn):
                    read, mark = _read_all(conn), _journal_mark(conn)
            finally:
                conn.execute("COMMIT")
            with self._lock:
                if not self._closed:
                    self._generation, self._base, self._mark, self._deltas = generation, read, mark, {}
                    self._recent = []
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
            self._generation, self._base, self._mark, self._deltas = None, None, None, {}
            self._by_id = None
            self._recent = []


def _generation_of(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM index_meta WHERE key = 'generation'").fetchone()
    return int(row[0]) if row else 0


def _read_delta(conn: sqlite3.Connection, base: _Rows, mark: int) -> _Delta | None:
    """Inside the caller's snapshot: the chunks journalled since `mark`, their vectors now (or none).
    None when entries since `mark` are gone (trimmed, or the vectors replaced wholesale), the delta is
    too large to serve, or a place cannot be read."""
    last = _journal_mark(conn)
    if last is None:
        return None
    if last == mark:
        return _UNCHANGED
    first = conn.execute("SELECT min(seq) FROM vec_journal WHERE seq > ?", (mark,)).fetchone()[0]
    if first != mark + 1:  # (seq never skips a number: entries after `mark` were deleted)
        return None
    named = [r[0] for r in conn.execute("SELECT DISTINCT chunk_id FROM vec_journal WHERE seq > ?", (mark,))]
    if len(named) > max(REREAD_ROWS, DELTA_MAX_SHARE * len(base.ids)):
        return None
    found: list[tuple[int, bytes, int, int]] = []
    for start in range(0, len(named), 500):
        batch = named[start : start + 500]
        marks = ",".join("?" * len(batch))
        places = {
            rowid: (chunk, offset)
            for rowid, chunk, offset in conn.execute(
                f"SELECT rowid, chunk_id, chunk_offset FROM vec_chunks_rowids WHERE rowid IN ({marks})", batch
            )
        }
        for cid in batch:
            if cid not in places:
                continue
            row = conn.execute("SELECT embedding FROM vec_chunks WHERE chunk_id = ?", (cid,)).fetchone()
            if row is None:
                return None  # a place without a vector: not a layout this mirrors
            found.append((cid, row[0], *places[cid]))
    added = _rows(found) if found else None
    if found and (added is None or added.matrix_t.shape[0] != base.matrix_t.shape[0]):
        return None
    removed = np.isin(base.ids, np.asarray(named, np.int64))
    return _Delta(removed if removed.any() else None, added, len(named))


def _nearest_with(
    base: _Rows, delta: _Delta, q: np.ndarray, k: int, known: Callable[[], Bounds] | None = None
) -> list[tuple[int, float]]:
    """`nearest` over the matrix with the delta applied: its removed rows masked, its added rows scanned
    beside it, both merged in sqlite-vec's order (distance, storage chunk, offset descending). `known`:
    the query's bounds over the matrix, when at hand (`candidates`)."""
    if k <= 0:
        return []
    cand = candidates(base.matrix_t, base.norms, q, k, delta.removed, known)
    if delta.added is None:  # rows in the matrix's order, which is sqlite-vec's: ties cut in it
        return nearest(base.ids[cand], distances(np.ascontiguousarray(base.matrix_t[:, cand]), q), k)
    a = delta.added
    ids = np.concatenate([base.ids[cand], a.ids])
    d = np.concatenate([distances(np.ascontiguousarray(base.matrix_t[:, cand]), q), distances(a.matrix_t, q)])
    chunk = np.concatenate([base.chunk[cand], a.chunk])
    offset = np.concatenate([base.offset[cand], a.offset])
    order = np.lexsort((-offset, chunk, d))[:k]
    return [(int(i), float(x)) for i, x in zip(ids[order], d[order], strict=True)]
