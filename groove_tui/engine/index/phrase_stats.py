"""FTS5's bm25 arithmetic reproduced bit for bit, the trigram tokenizer's folding, and the statistics of the
corpus' common phrases the indexer stores for the pruned full-text leg (table `fts_phrase_stats`).

Why the arithmetic is exact, and how the stored rows are used, is told in `engine.retrieve.fulltext`; this
module holds the half that writes: what the index keeps, and the encodings both halves read it with.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Sequence
from typing import cast

import numpy as np
import sqlean as sqlite3

__all__ = ["TrigramFold", "common_phrases", "store_common_phrases"]

K1 = 1.2  # fts5_aux.c's constants
B = 0.75
MIN_ROWS = 25_000  # measured: at 10k chunks pruned = plain (17 ms p50), a session's first query 1.4x
TRIGRAM_TOKENIZE = "trigram remove_diacritics 1 case_sensitive 0"  # store.FTS_DDL's tokenizer

# Persisted phrase statistics (see `store_common_phrases`): the index database's own table, never the KB.
STATS_DDL = (
    "CREATE TABLE IF NOT EXISTS fts_phrase_stats (tbl TEXT NOT NULL, weights TEXT NOT NULL, phrase TEXT NOT NULL, "
    "generation INTEGER NOT NULL, df INTEGER NOT NULL, rowids BLOB NOT NULL, terms BLOB NOT NULL, "
    "PRIMARY KEY (tbl, weights, phrase))"
)
LENGTHS = ":lengths"  # tbl of the row holding, per generation, every row's length (for lists stored as f)
COMMON_SAMPLE = 3000  # chunks read to find the corpus' frequent words
COMMON_SHARE = 0.001  # a word in at least this share of the sampled chunks gets its statistics stored
COMMON_LIST_SHARE = 1.0  # ... and its list too unless more rows than this share hold it (then its row count
# only). 1: every list, as a stored list spares text scoring of every row it holds
COMMON_MAX_ENTRIES = 150  # impact-list entries stored at most, per row of the table (~5 bytes each)
COMMON_MAX_SECONDS = 120.0  # spent at most per index run; the next run goes on where it stopped


def varints(blob: bytes) -> list[int]:
    """SQLite's varints (big-endian 7-bit groups, a 9th byte of 8 bits), as FTS5 writes its records."""
    out, i, n = [], 0, len(blob)
    while i < n:
        value = 0
        for k in range(9):
            byte = blob[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
    return out


class TrigramFold:
    """The trigram tokenizer's per-code-point folding (`case_sensitive 0 remove_diacritics 1`), learned
    from SQLite itself: each new non-ASCII character is tokenized once in a scratch FTS5 table, so the
    folded text equals the tokenizer's character stream by construction (FTS5 folds each code point on its
    own and drops those that fold to 0)."""

    def __init__(self) -> None:
        # ASCII: the tokenizer folds exactly A-Z; NUL folds to 0 and is skipped.
        self._table: dict[int, str | None] = {c: chr(c).lower() for c in range(1, 128)}
        self._table[0] = None
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def fold(self, text: str) -> str:
        if text.isascii():
            low = text.lower()  # the tokenizer folds exactly A-Z in ASCII
            return low.replace("\0", "") if "\0" in low else low
        missing = {ord(c) for c in set(text)} - self._table.keys()
        if missing:
            self._learn(sorted(missing))
        return text.translate(self._table)

    def _learn(self, codes: list[int]) -> None:
        with self._lock:
            codes = [c for c in codes if c not in self._table]
            if not codes:
                return
            if self._conn is None:
                self._conn = sqlite3.connect(":memory:", check_same_thread=False)
                self._conn.execute(f"CREATE VIRTUAL TABLE probe USING fts5(x, tokenize='{TRIGRAM_TOKENIZE}')")
                self._conn.execute("CREATE VIRTUAL TABLE probe_v USING fts5vocab(probe, instance)")
            conn = self._conn
            conn.execute("DELETE FROM probe")
            # "ab" + c + "d": the token at offset 0 is "ab" + fold(c), or "abd" when c folds to nothing.
            conn.executemany("INSERT INTO probe(rowid, x) VALUES (?, ?)", [(c, f"ab{chr(c)}d") for c in codes])
            first = dict(conn.execute("SELECT doc, term FROM probe_v WHERE offset = 0"))
            second = dict(conn.execute("SELECT doc, term FROM probe_v WHERE offset = 1"))
            for c in codes:
                term = first.get(c)
                self._table[c] = None if (term == "abd" and c not in second) else cast(str, term)[2]


FOLD = TrigramFold()


def idf_of(n_rows: int, df: int) -> float:
    """fts5Bm25GetData's idf, to the letter (clamped to 1e-6 when not positive)."""
    idf = math.log((n_rows - df + 0.5) / (df + 0.5))
    return 1e-6 if idf <= 0.0 else idf


def tf_terms(f: np.ndarray, D: np.ndarray, idf: float, avgdl: float) -> np.ndarray:
    """fts5Bm25Function's term of one phrase for many rows, elementwise in its order of operations:
    idf * ((f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))). numpy rounds each +, *, / of doubles as C
    does and fuses nothing, so each element is the double the scalar code (and FTS5) computes."""
    return idf * ((f * (K1 + 1.0)) / (f + K1 * ((1 - B) + (B * D) / avgdl)))


def pack_terms(rows: np.ndarray, terms: np.ndarray, lengths: np.ndarray | None, n_rows: int, avgdl: float) -> bytes:
    """A stored list's terms: as the frequencies f they come from (1 or 2 bytes a row) when recomputing
    the terms from f, the rows' lengths and the idf gives FTS5's doubles back bit for bit, else the
    doubles themselves (8 bytes a row). The length of the blob says which (see unpack_terms)."""
    doubles = terms.astype("<f8").tobytes()
    if lengths is None or not len(rows) or rows[-1] >= len(lengths):
        return doubles
    idf, D = idf_of(n_rows, len(rows)), lengths[rows]
    with np.errstate(all="ignore"):
        f = np.rint(terms * (K1 * ((1 - B) + (B * D) / avgdl)) / (idf * (K1 + 1.0) - terms))
    if not np.all(np.isfinite(f)) or f.min() < 1 or f.max() >= 2**16:
        return doubles
    if not np.array_equal(tf_terms(f, D, idf, avgdl), terms):  # e.g. weights that are not integers
        return doubles
    return bytes(f.astype("<u1" if f.max() < 2**8 else "<u2").tobytes())


def unpack_terms(
    blob: bytes, rows: np.ndarray, lengths: np.ndarray | None, n_rows: int, avgdl: float
) -> np.ndarray | None:
    """pack_terms' terms (None: stored as frequencies but the lengths are missing)."""
    n = len(rows)
    if len(blob) == 8 * n:
        return np.frombuffer(blob, dtype="<f8").astype(np.float64)
    if lengths is None or (n and rows[-1] >= len(lengths)) or len(blob) not in (n, 2 * n):
        return None
    f = np.frombuffer(blob, dtype="<u1" if len(blob) == n else "<u2").astype(np.float64)
    return tf_terms(f, lengths[rows], idf_of(n_rows, n), avgdl)


def read_lengths(conn: sqlite3.Connection, table: str) -> np.ndarray:
    """Every row's token count D (what bm25's xColumnSize(-1) sums from `_docsize`), by rowid."""
    found = conn.execute(f"SELECT id, sz FROM {table}_docsize").fetchall()
    top = max((i for i, _ in found), default=0)
    out = np.zeros(top + 1, dtype=np.float64)
    for i, sz in found:
        out[i] = float(sum(varints(sz)))
    return out


def pack_rowids(rows: np.ndarray) -> bytes:
    """Sorted rowids as 4-byte integers when they all fit (a third of the space), else 8-byte ones."""
    small = not len(rows) or (rows[0] >= 0 and rows[-1] < 2**32)
    return rows.astype("<u4" if small else "<i8").tobytes()


def unpack_rowids(blob: bytes, count: int) -> np.ndarray:
    """pack_rowids' `count` rowids (the stored row count): the blob's length says which width."""
    if len(blob) != count * 4 and len(blob) != count * 8:
        raise Inconsistent("a stored list of the wrong length")
    return np.frombuffer(blob, dtype="<u4" if len(blob) == count * 4 else "<i8").astype(np.int64)


def weights_key(weights: Sequence[float]) -> str:
    """The column weights as stored with a list (its terms depend on them), exactly: hex floats."""
    return ",".join(float(w).hex() for w in weights)


class Inconsistent(Exception):
    """The tables disagree (a full-text row without its chunk): the plain statement answers instead."""


# ------------------------------------------------------------ persisted statistics of common phrases


def common_phrases(
    conn: sqlite3.Connection, table: str = "fts_chunks", sample: int = COMMON_SAMPLE, share: float = COMMON_SHARE
) -> list[tuple[str, float]]:
    """The phrases groove's compiler would make of the corpus' frequent words, folded, with the share of
    an even sample of chunks that hold them, most frequent first. Only which lists are worth storing depends
    on this; what is stored is FTS5's own answer for each phrase (`store_common_phrases`)."""
    from groove_tui.engine.analysis.query import query_phrases, split_whitespace

    n = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    if n == 0:
        return []
    step = max(1, n // sample)
    counts: dict[str, int] = {}
    taken = 0
    for cols in conn.execute("SELECT heading, context_text, content FROM chunks WHERE id % ? = 0", (step,)):
        taken += 1
        words = split_whitespace(" ".join(c for c in cols if c))
        seen = set()
        for start in range(0, len(words), 16):  # under query.py's cap of 32 phrases a text
            for p in query_phrases(" ".join(words[start : start + 16])):
                seen.add(FOLD.fold(p))
        for p in seen:
            counts[p] = counts.get(p, 0) + 1
    least = max(2, share * taken)
    return sorted(
        ((p, c / taken) for p, c in counts.items() if c >= least and len(p) >= 3), key=lambda pc: (-pc[1], pc[0])
    )


def store_common_phrases(
    conn: sqlite3.Connection,
    weights: Sequence[float],
    table: str = "fts_chunks",
    *,
    max_entries: int | None = None,
    max_seconds: float = COMMON_MAX_SECONDS,
    cancel: threading.Event | None = None,
    min_rows: int | None = None,
) -> int:
    """Store FTS5's statistics of the corpus' frequent phrases in the index database (`fts_phrase_stats`:
    row count and impact list, keyed by table, weights, folded phrase and index generation), so that a
    new session starts with the lists that cost most to fetch. Returns how many were stored now.

    Exact: each row is FTS5's own `SELECT rowid, bm25(t, w…) … MATCH phrase` (the statement `_impacts`
    runs) inside one write transaction that also reads the generation, so it is the table's answer at that
    generation; `ranked` uses a row only while the index is at that generation (every write to the
    index bumps it in its own transaction, store.bump_generation), and older rows are deleted here. The
    phrase is queried by its folded text, which FTS5 folds to itself (checked), so it matches exactly
    what any phrase folding to it matches. Interrupted (cancel, another writer), what was stored is still
    exact and the next call goes on from there; so does one that ran out of `max_seconds` (an index run
    pays at most that much; at 100k chunks the whole set, ~6,650 phrases, takes ~70 s on one core and 126 MB)."""
    weights = tuple(float(w) for w in weights)
    wkey = weights_key(weights)
    conn.execute(STATS_DDL)

    def generation() -> int:
        row = conn.execute("SELECT value FROM index_meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    conn.execute("BEGIN IMMEDIATE")
    try:
        gen = generation()
        conn.execute("DELETE FROM fts_phrase_stats WHERE generation != ?", (gen,))
        row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
        values = varints(row[0]) if row and row[0] else [0]
        n_rows, avgdl = values[0], (float(sum(values[1:])) / float(values[0]) if values[0] else 1.0)
        small = n_rows < (MIN_ROWS if min_rows is None else min_rows)
        if small:
            conn.execute("DELETE FROM fts_phrase_stats WHERE tbl IN (?, ?)", (table, table + LENGTHS))
        lengths = None
        have = conn.execute(
            "SELECT df, terms FROM fts_phrase_stats WHERE tbl = ? AND generation = ?", (table + LENGTHS, gen)
        ).fetchone()
        if have is not None and len(have[1]) in (2 * have[0], 4 * have[0]):
            lengths = np.frombuffer(have[1], dtype="<u2" if len(have[1]) == 2 * have[0] else "<u4").astype(np.float64)
        elif not small:
            lengths = read_lengths(conn, table)
            small_d = len(lengths) == 0 or lengths.max() < 2**16
            conn.execute(
                "INSERT OR REPLACE INTO fts_phrase_stats VALUES (?, '', '', ?, ?, x'', ?)",
                (table + LENGTHS, gen, len(lengths), lengths.astype("<u2" if small_d else "<u4").tobytes()),
            )
        done = {
            p
            for (p,) in conn.execute(
                "SELECT phrase FROM fts_phrase_stats WHERE tbl = ? AND weights = ? AND generation = ?",
                (table, wkey, gen),
            )
        }
    finally:
        conn.execute("COMMIT")
    if small or "" in done:  # "" marks a finished set
        return 0
    from groove_tui.engine.analysis.query import fts_phrase

    todo = [(p, c) for p, c in common_phrases(conn, table) if p not in done and FOLD.fold(p) == p]
    if max_entries is None:
        max_entries = COMMON_MAX_ENTRIES * n_rows
    entries = sum(
        r
        for (r,) in conn.execute(
            "SELECT df FROM fts_phrase_stats WHERE tbl = ? AND weights = ? AND generation = ? AND length(terms) > 0",
            (table, wkey, gen),
        )
    )
    stored = 0
    deadline = time.perf_counter() + max_seconds
    sql = f"SELECT rowid, bm25({table}, ?, ?, ?) FROM {table} WHERE {table} MATCH ?"
    i = 0
    while i < len(todo) and entries < max_entries:
        if (cancel is not None and cancel.is_set()) or time.perf_counter() > deadline:
            return stored
        conn.execute("BEGIN IMMEDIATE")
        try:
            if generation() != gen:
                return stored  # (COMMIT below: nothing written in this transaction)
            started = time.perf_counter()
            while i < len(todo) and entries < max_entries and time.perf_counter() - started < 0.5:
                phrase, sampled = todo[i]
                i += 1
                if sampled > COMMON_LIST_SHARE * 0.8:
                    df = conn.execute(
                        f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (fts_phrase(phrase),)
                    ).fetchone()[0]
                    if df > COMMON_LIST_SHARE * n_rows:  # the row count only (FTS5's, this generation)
                        conn.execute(
                            "INSERT OR REPLACE INTO fts_phrase_stats VALUES (?, ?, ?, ?, ?, x'', x'')",
                            (table, wkey, phrase, gen, df),
                        )
                        stored += 1
                        continue
                found = conn.execute(sql, (*weights, fts_phrase(phrase))).fetchall()
                rows = np.fromiter((r for r, _ in found), dtype=np.int64, count=len(found))
                terms = np.fromiter((-v for _, v in found), dtype=np.float64, count=len(found))
                order = np.argsort(rows, kind="stable")
                rows, terms = rows[order], terms[order]
                conn.execute(
                    "INSERT OR REPLACE INTO fts_phrase_stats VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        table,
                        wkey,
                        phrase,
                        gen,
                        len(found),
                        pack_rowids(rows),
                        pack_terms(rows, terms, lengths, n_rows, avgdl),
                    ),
                )
                entries += len(found)
                stored += 1
        finally:
            conn.execute("COMMIT")
    with contextlib.suppress(sqlite3.Error):
        conn.execute("BEGIN IMMEDIATE")
        try:
            if generation() == gen:
                conn.execute(
                    "INSERT OR REPLACE INTO fts_phrase_stats VALUES (?, ?, '', ?, 0, x'', x'')", (table, wkey, gen)
                )
        finally:
            conn.execute("COMMIT")
    return stored
