"""FTS5's bm25 arithmetic reproduced bit for bit, the trigram tokenizer's folding, and the statistics of the
corpus' common phrases the indexer stores for the pruned full-text leg (table `fts_phrase_stats`), with the
trigram table's lists by token (engine/index/token_lists.py).

Why the arithmetic is exact, and how the stored rows are used, is told in `engine.retrieve.fulltext`; this
module holds the half that writes: what the index keeps, and the encodings both halves read it with.
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
import time
from array import array
from collections.abc import Sequence
from typing import cast

import numpy as np
import sqlean as sqlite3

from groove_tui.engine.analysis.japanese import JapaneseAnalyzer
from groove_tui.engine.analysis.words import words_version
from groove_tui.engine.index.token_lists import MAX_VOCAB_CHARS, TokenVocab, token_frequencies
from groove_tui.engine.index.word_terms import column_counts, scratch_rows, word_rows

__all__ = [
    "TrigramFold",
    "carry_epoch",
    "common_phrases",
    "drop_stored_phrases",
    "edits_waiting",
    "epoch_of",
    "follow_edits",
    "store_common_phrases",
    "store_token_lists",
    "stored_epoch",
    "token_list_sizes",
]

K1 = 1.2  # fts5_aux.c's constants
B = 0.75
# Below this the full-text legs sum every phrase's list (engine/retrieve/fulltext.py) and no statistics
# are stored; from it MaxScore prunes (measured: at 10k chunks pruned = plain, 17 ms p50).
MIN_ROWS = 25_000
TRIGRAM_TOKENIZE = "trigram remove_diacritics 1 case_sensitive 0"  # store.FTS_DDL's tokenizer
# The tables whose common phrases are stored: the trigram table (keyed by folded text) and the word table
# (keyed by term, as FTS5 makes it; stored only as frequencies, with whole-number weights, see below).
STORED_TABLES = ("fts_chunks", "fts_words")

# Persisted phrase statistics (see `store_common_phrases`): the index database's own tables, never the KB.
# `generation` says when a row was last written; whether the set may be read says STATS_KEY (below).
STATS_DDL = (
    "CREATE TABLE IF NOT EXISTS fts_phrase_stats (tbl TEXT NOT NULL, weights TEXT NOT NULL, phrase TEXT NOT NULL, "
    "generation INTEGER NOT NULL, df INTEGER NOT NULL, rowids BLOB NOT NULL, terms BLOB NOT NULL, "
    "PRIMARY KEY (tbl, weights, phrase))"
)
# index_meta's epoch of the stored set: > 0 while a set is kept (bumped by every write to it, so readers'
# caches can key on it), ≤ 0 when none is. Without the key (an index from before the journal) the rows
# are of unknown age and are never read.
STATS_KEY = "phrase_stats_epoch"
# Every change to a chunk's text while a set is kept, journalled by triggers in the same transaction as
# the change (the removed text with it): the set is FTS5's answer exactly when the journal is empty, and
# `follow_edits` brings it up to date from the journal alone. Triggers, not the indexer's own calls, so
# no write path can forget it; the full-text rows are always written from the chunk rows (store.py).
JOURNAL_DDL = (
    "CREATE TABLE IF NOT EXISTS fts_phrase_journal (seq INTEGER PRIMARY KEY, chunk_id INTEGER NOT NULL, "
    "removed INTEGER NOT NULL, heading TEXT, context_text TEXT, content TEXT)"
)
_KEPT = f"CAST((SELECT value FROM index_meta WHERE key = '{STATS_KEY}') AS INTEGER) > 0"
_REMOVED = (
    "INSERT INTO fts_phrase_journal(chunk_id, removed, heading, context_text, content) "
    "VALUES (old.id, 1, old.heading, old.context_text, old.content);"
)
_ADDED = "INSERT INTO fts_phrase_journal(chunk_id, removed) VALUES (new.id, 0);"
JOURNAL_TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS fts_phrase_journal_add AFTER INSERT ON chunks WHEN {_KEPT} BEGIN {_ADDED} END",
    f"CREATE TRIGGER IF NOT EXISTS fts_phrase_journal_remove AFTER DELETE ON chunks WHEN {_KEPT} BEGIN {_REMOVED} END",
    "CREATE TRIGGER IF NOT EXISTS fts_phrase_journal_change AFTER UPDATE OF heading, context_text, content "
    f"ON chunks WHEN {_KEPT} BEGIN {_REMOVED} {_ADDED} END",
)
FOLLOW_MAX_SHARE = 0.2  # changed chunks past this share of the table: the set is stored again instead
LENGTHS = ":lengths"  # tbl of the row holding, per generation, every row's length (for lists stored as f)
# The trigram table's lists by token (engine/index/token_lists.py): one row per token (tbl TOKENS, as f),
# and per weights one row (tbl VOCAB) holding every token with a list; its presence says the lists are
# complete and current, its df -1 that this set cannot hold them (a NUL, an f past 2^16, a vocabulary past
# token_lists.MAX_VOCAB_CHARS).
TOKEN_TABLE = "fts_chunks"
TOKENS = TOKEN_TABLE + ":tokens"
VOCAB = TOKEN_TABLE + ":vocab"
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


def self_overlapping(s: str) -> bool:
    """Two instances of `s` can overlap (a prefix is also a suffix): str.count would miss one."""
    return any(s[:k] == s[-k:] for k in range(1, len(s)))


def instances(text: str, phrase: str, overlapping: bool | None = None) -> int:
    """How many times the trigram table matches `phrase` (folded, 3+ characters) in a column whose folded
    text is `text`: each start position of the phrase, overlapping ones included (a phrase is its
    trigrams at consecutive positions, and the tokenizer emits one trigram per character).
    `overlapping`: self_overlapping(phrase), when the caller knows it."""
    if not (self_overlapping(phrase) if overlapping is None else overlapping):
        return text.count(phrase)
    n, at = 0, text.find(phrase)
    while at >= 0:
        n += 1
        at = text.find(phrase, at + 1)
    return n


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


def common_terms(
    conn: sqlite3.Connection,
    japanese: JapaneseAnalyzer | None = None,
    sample: int = COMMON_SAMPLE,
    share: float = COMMON_SHARE,
) -> list[tuple[str, str, float]]:
    """The word table's frequent terms, as common_phrases finds the trigram table's: (term, a word of the
    sample that FTS5 makes that one term of, the share of the sampled chunks holding the term), most
    frequent first. The sample's copies (`word_rows`, with the analyzer the table is written with) and
    their words are tokenized by FTS5 itself, in a scratch table with the word table's tokenizer."""
    n = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    if n == 0:
        return []
    step = max(1, n // sample)
    rows = word_rows(
        conn.execute("SELECT id, heading, context_text, content FROM chunks WHERE id % ? = 0", (step,)).fetchall(),
        japanese,
    )
    if not rows:
        return []
    with scratch_rows(rows) as scratch:
        held = dict(scratch.execute("SELECT term, count(DISTINCT doc) FROM v GROUP BY term"))
    least = max(2, share * len(rows))
    frequent = {t: c for t, c in held.items() if c >= least}
    words = sorted({w for row in rows for col in row[1:] if col for w in _WORD.findall(col.lower())})
    spelled: dict[str, str] = {}
    for start in range(0, len(words), 5000):
        batch = words[start : start + 5000]
        with scratch_rows([(i, None, None, w) for i, w in enumerate(batch)]) as scratch:
            single = scratch.execute("SELECT doc, min(term) FROM v GROUP BY doc HAVING count(*) = 1").fetchall()
        for doc, term in single:  # (inserted as phrase_tokens inserts a phrase: its one term)
            if term in frequent and term not in spelled:
                spelled[term] = batch[doc]
    return sorted(
        ((t, spelled[t], frequent[t] / len(rows)) for t in frequent if t in spelled), key=lambda x: (-x[2], x[0])
    )


_WORD = re.compile(r"[^\W_]+")  # unicode61's token characters (letters and digits): candidate spellings


def stored_epoch(conn: sqlite3.Connection) -> int | None:
    """The stored set's epoch when it may be read now (it is FTS5's answer: no edit waits in the journal),
    else None. Read inside the caller's snapshot, with the rows it reads."""
    try:
        row = conn.execute(
            f"SELECT CAST(value AS INTEGER), EXISTS (SELECT 1 FROM fts_phrase_journal) FROM index_meta "
            f"WHERE key = '{STATS_KEY}'"
        ).fetchone()
    except sqlite3.OperationalError:  # an index without the journal: nothing stored may be read
        return None
    if row is None or row[0] <= 0 or row[1]:
        return None
    return int(row[0])


def edits_waiting(conn: sqlite3.Connection) -> bool:
    """Whether the journal holds edits the stored set has not followed yet (a read: no write lock)."""
    try:
        return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM fts_phrase_journal)").fetchone()[0])
    except sqlite3.OperationalError:  # no set was ever kept
        return False


def drop_stored_phrases(conn: sqlite3.Connection) -> None:
    """No set kept (and no journal written) from here on; inside the caller's write transaction. For a
    table rebuilt whole or grown too small to prune."""
    epoch = _epoch(conn)
    if epoch is None:
        return
    conn.execute("DELETE FROM fts_phrase_stats")
    conn.execute("DELETE FROM fts_phrase_journal")
    conn.execute("UPDATE index_meta SET value = ? WHERE key = ?", (str(-abs(epoch)), STATS_KEY))


def epoch_of(conn: sqlite3.Connection) -> int | None:
    """The stored set's epoch as recorded (≤ 0: none kept; None: no set was ever kept)."""
    return _epoch(conn)


def carry_epoch(conn: sqlite3.Connection, epoch: int | None) -> None:
    """In a new index that replaces one whose set had `epoch`: no set kept, and the next one's epoch after
    it, so a reader's caches keyed on the old epochs never serve the new index. Inside the caller's write
    transaction."""
    if epoch is None:
        return
    conn.execute(STATS_DDL)
    conn.execute(JOURNAL_DDL)
    for ddl in JOURNAL_TRIGGERS:
        conn.execute(ddl)
    conn.execute(
        "INSERT INTO index_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (STATS_KEY, str(-abs(epoch))),
    )


def _epoch(conn: sqlite3.Connection) -> int | None:
    """STATS_KEY's value (None: the tables are not there, or the key is not)."""
    try:
        row = conn.execute("SELECT CAST(value AS INTEGER) FROM index_meta WHERE key = ?", (STATS_KEY,)).fetchone()
        conn.execute("SELECT 1 FROM fts_phrase_journal LIMIT 0")
    except sqlite3.OperationalError:
        return None
    return None if row is None else int(row[0])


def _bump_epoch(conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE index_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = ?", (STATS_KEY,))


def _start_set(conn: sqlite3.Connection) -> None:
    """An empty set, kept from now on (the journal starts here), with the rows' lengths of every table
    whose phrases are stored; inside the caller's write transaction."""
    conn.execute(STATS_DDL)
    conn.execute(JOURNAL_DDL)
    for ddl in JOURNAL_TRIGGERS:
        conn.execute(ddl)
    epoch = _epoch(conn)
    conn.execute("DELETE FROM fts_phrase_stats")
    conn.execute("DELETE FROM fts_phrase_journal")
    conn.execute(
        "INSERT INTO index_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (STATS_KEY, str(abs(epoch or 0) + 1)),
    )
    for table in _present(conn):
        _store_lengths(conn, table, read_lengths(conn, table))


def _present(conn: sqlite3.Connection) -> list[str]:
    have = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return [t for t in STORED_TABLES if t in have]


def forget_table(conn: sqlite3.Connection, table: str) -> None:
    """Nothing stored of `table` any more (it is rebuilt, or its rows can no longer be followed); the
    rest of the set stays. Inside the caller's write transaction."""
    epoch = _epoch(conn)
    if epoch is None or epoch <= 0:
        return
    forgotten = (table, table + LENGTHS, *((TOKENS, VOCAB) if table == TOKEN_TABLE else ()))
    if conn.execute(
        f"DELETE FROM fts_phrase_stats WHERE tbl IN ({','.join('?' * len(forgotten))})", forgotten
    ).rowcount:
        _bump_epoch(conn)  # (only then: readers' caches key on the epoch)


def _store_lengths(conn: sqlite3.Connection, table: str, lengths: np.ndarray) -> None:
    small_d = len(lengths) == 0 or lengths.max() < 2**16
    conn.execute(
        "INSERT OR REPLACE INTO fts_phrase_stats VALUES (?, '', '', ?, ?, x'', ?)",
        (table + LENGTHS, _generation(conn), len(lengths), lengths.astype("<u2" if small_d else "<u4").tobytes()),
    )


def _stored_lengths(conn: sqlite3.Connection, table: str) -> np.ndarray | None:
    have = conn.execute("SELECT df, terms FROM fts_phrase_stats WHERE tbl = ?", (table + LENGTHS,)).fetchone()
    if have is None or len(have[1]) not in (2 * have[0], 4 * have[0]):
        return None
    return np.frombuffer(have[1], dtype="<u2" if len(have[1]) == 2 * have[0] else "<u4").astype(np.float64)


def _generation(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM index_meta WHERE key = 'generation'").fetchone()
    return int(row[0]) if row else 0


def totals(conn: sqlite3.Connection, table: str) -> tuple[int, float]:
    """N and avgdl as bm25 reads them (FTS5's averages record)."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    values = varints(row[0]) if row and row[0] else [0]
    return values[0], (float(sum(values[1:])) / float(values[0]) if values[0] else 1.0)


def _fts5_list(
    conn: sqlite3.Connection, table: str, phrase: str, weights: tuple[float, ...], lengths: np.ndarray | None
) -> tuple[int, bytes, bytes]:
    """(row count, rowids, terms) of FTS5's own answer for `phrase` now, packed as stored."""
    from groove_tui.engine.analysis.query import fts_phrase

    found = conn.execute(
        f"SELECT rowid, bm25({table}, ?, ?, ?) FROM {table} WHERE {table} MATCH ?", (*weights, fts_phrase(phrase))
    ).fetchall()
    rows = np.fromiter((r for r, _ in found), dtype=np.int64, count=len(found))
    terms = np.fromiter((-v for _, v in found), dtype=np.float64, count=len(found))
    order = np.argsort(rows, kind="stable")
    rows, terms = rows[order], terms[order]
    n_rows, avgdl = totals(conn, table)
    return len(found), pack_rowids(rows), pack_terms(rows, terms, lengths, n_rows, avgdl)


def follow_edits(
    conn: sqlite3.Connection, *, min_rows: int | None = None, japanese: JapaneseAnalyzer | None = None
) -> int:
    """Bring the stored set up to date with the journalled edits, inside the caller's write transaction:
    only the lists of phrases a removed or added chunk holds are rewritten, from the chunks' text. Returns
    how many chunks the journal named (0: nothing to do). `japanese`: the analyzer the word table is
    written with (its stored lists are followed only while the table records that very analyzer).

    Exact as the lists FTS5 gives: a list kept as frequencies f holds, per row, the column weights summed
    over the phrase's instances, which depend on that row's text alone (N, the token total and the row
    count only enter when terms are computed from f at reading, from the reader's own snapshot). A row's
    instances are counted in its columns as the table's tokenizer makes them: on the trigram table folded
    as the tokenizer folds them (`instances`), the count `_Scorer` scores with, checked against FTS5 by
    the pruned leg's calibration; on the word table by FTS5 itself, the row's copy (`word_rows`) tokenized
    in a scratch table with the word table's tokenizer. Lists that cannot be kept as frequencies (weights
    that are not whole numbers, counts past 2^16, terms kept as doubles, which depend on N and avgdl) are
    asked of FTS5 again; a removed chunk missing from a list it holds means the set is not what it
    claims, and it is dropped (the leg is exact without it, only slower)."""
    epoch = _epoch(conn)
    if epoch is None or epoch <= 0:
        return 0
    journal = conn.execute(
        "SELECT chunk_id, removed, heading, context_text, content FROM fts_phrase_journal ORDER BY seq"
    ).fetchall()
    if not journal:
        return 0
    first: dict[int, tuple[int, tuple[str | None, ...]]] = {}
    last: dict[int, int] = {}
    for cid, removed, *cols in journal:
        first.setdefault(cid, (removed, tuple(cols)))
        last[cid] = removed
    removed_text = {cid: cols for cid, (removed, cols) in first.items() if removed}  # in the set's lists
    added_ids = sorted(cid for cid, removed in last.items() if not removed)  # in FTS5 now
    n_rows, _avgdl = totals(conn, "fts_chunks")
    if n_rows < (MIN_ROWS if min_rows is None else min_rows) or (
        len(removed_text) + len(added_ids) > FOLLOW_MAX_SHARE * max(1, n_rows)
    ):
        drop_stored_phrases(conn)
        return len(first)
    added_text: dict[int, tuple[str | None, ...]] = {}
    for start in range(0, len(added_ids), 500):
        batch = added_ids[start : start + 500]
        for cid, *cols in conn.execute(
            f"SELECT id, heading, context_text, content FROM chunks WHERE id IN ({','.join('?' * len(batch))})", batch
        ):
            added_text[cid] = tuple(cols)
    texts = [*removed_text.values(), *added_text.values()]
    if len(added_text) != len(added_ids) or any("\0" in c for cols in texts for c in cols if c):
        drop_stored_phrases(conn)  # (a NUL ends the tokenizer's input: not what `instances` counts)
        return len(first)
    tables = {t for (t,) in conn.execute("SELECT DISTINCT tbl FROM fts_phrase_stats")}
    for table in STORED_TABLES:
        if table not in tables and table + LENGTHS not in tables:
            continue
        if table == "fts_words" and not _words_written_by(conn, japanese):
            forget_table(conn, table)  # written by another analyzer, or not at all: cannot follow
            continue
        if not _follow_table(conn, table, removed_text, added_text, added_ids, japanese):
            drop_stored_phrases(conn)
            return len(first)
    _follow_tokens(conn, removed_text, added_text)
    conn.execute("DELETE FROM fts_phrase_journal")
    _bump_epoch(conn)
    return len(first)


def _words_written_by(conn: sqlite3.Connection, japanese: JapaneseAnalyzer | None) -> bool:
    """Whether the word table is complete and written with this Japanese analyzer (or without one)."""
    row = conn.execute("SELECT value FROM index_meta WHERE key = 'words_version'").fetchone()
    return row is not None and row[0] == words_version(japanese)


def _trigram_counts(phrases: list[str], texts: dict[int, tuple[str | None, ...]]) -> dict[int, dict[str, list[int]]]:
    """Per chunk, each of `phrases` (folded) it holds and its instances per column, on the trigram table:
    candidates by their first trigram."""
    by_trigram: dict[str, list[tuple[str, bool]]] = {}
    for p in phrases:
        by_trigram.setdefault(p[:3], []).append((p, self_overlapping(p)))
    out: dict[int, dict[str, list[int]]] = {}
    for cid, cols in texts.items():
        held = out.setdefault(cid, {})
        for ci, col in enumerate(cols):
            if not col:
                continue
            folded = FOLD.fold(col)
            for tri in {folded[i : i + 3] for i in range(len(folded) - 2)} & by_trigram.keys():
                for p, overlapping in by_trigram[tri]:
                    n = instances(folded, p, overlapping)
                    if n:
                        held.setdefault(p, [0] * len(cols))[ci] = n
    return out


def _word_counts(
    phrases: list[str], texts: dict[int, tuple[str | None, ...]], japanese: JapaneseAnalyzer | None
) -> dict[int, dict[str, list[int]]]:
    """As _trigram_counts on the word table, whose stored phrases are single terms: FTS5's own
    tokenization of each chunk's copy."""
    wanted = set(phrases)
    out: dict[int, dict[str, list[int]]] = {}
    items = list(texts.items())
    for start in range(0, len(items), 500):
        batch = items[start : start + 500]
        counts = column_counts(word_rows([(cid, *cols) for cid, cols in batch], japanese))
        for cid, _cols in batch:
            out[cid] = {t: c for t, c in counts.get(cid, {}).items() if t in wanted}
    return out


def _follow_table(
    conn: sqlite3.Connection,
    table: str,
    removed_text: dict[int, tuple[str | None, ...]],
    added_text: dict[int, tuple[str | None, ...]],
    added_ids: list[int],
    japanese: JapaneseAnalyzer | None,
) -> bool:
    """follow_edits for one table's stored rows; False when the set is not what it claims (drop it)."""
    phrases = sorted(
        {
            p
            for (p,) in conn.execute(
                "SELECT DISTINCT phrase FROM fts_phrase_stats WHERE tbl = ? AND phrase != ''", (table,)
            )
        }
    )
    if table == "fts_words":
        removed_counts = _word_counts(phrases, removed_text, japanese)
        added_counts = _word_counts(phrases, added_text, japanese)
    else:
        removed_counts = _trigram_counts(phrases, removed_text)
        added_counts = _trigram_counts(phrases, added_text)
    removed_from: dict[str, list[int]] = {}
    added_to: dict[str, dict[int, list[int]]] = {}
    for cid, held in removed_counts.items():
        for p in held:
            removed_from.setdefault(p, []).append(cid)
    for cid, held in added_counts.items():
        for p, counts in held.items():
            added_to.setdefault(p, {})[cid] = counts

    lengths = _stored_lengths(conn, table)
    if added_ids:
        top = max(added_ids[-1] + 1, 0 if lengths is None else len(lengths))
        grown = np.zeros(top, dtype=np.float64)
        if lengths is not None:
            grown[: len(lengths)] = lengths
        for start in range(0, len(added_ids), 500):
            batch = added_ids[start : start + 500]
            for cid, sz in conn.execute(
                f"SELECT id, sz FROM {table}_docsize WHERE id IN ({','.join('?' * len(batch))})", batch
            ):
                grown[cid] = float(sum(varints(sz)))
        lengths = grown
    if lengths is not None:
        for cid in removed_text:
            if cid < len(lengths):
                lengths[cid] = 0.0
        _store_lengths(conn, table, lengths)

    gen = _generation(conn)
    for (wkey,) in conn.execute(
        "SELECT DISTINCT weights FROM fts_phrase_stats WHERE tbl = ? AND weights != ''", (table,)
    ).fetchall():
        weights = tuple(float.fromhex(w) for w in wkey.split(","))
        whole = _whole(weights)
        stale = {
            p
            for (p,) in conn.execute(
                "SELECT phrase FROM fts_phrase_stats WHERE tbl = ? AND weights = ? AND phrase != '' "
                "AND (length(terms) = 8 * df AND df > 0 OR length(terms) = 0 AND df > 0)",
                (table, wkey),
            )
        }  # terms as doubles, or the row count only: they change with N and avgdl, whatever changed
        touched = stale | ((removed_from.keys() | added_to.keys()) & set(phrases))
        for phrase in sorted(touched):
            row = conn.execute(
                "SELECT df, rowids, terms FROM fts_phrase_stats WHERE tbl = ? AND weights = ? AND phrase = ?",
                (table, wkey, phrase),
            ).fetchone()
            if row is None:
                continue
            df, rowids_blob, terms_blob = row
            if not whole or phrase in stale or len(terms_blob) not in (df, 2 * df):
                if table == "fts_words":  # (stored only as frequencies: its key is a term, not a query)
                    conn.execute(
                        "DELETE FROM fts_phrase_stats WHERE tbl = ? AND weights = ? AND phrase = ?",
                        (table, wkey, phrase),
                    )
                    continue
                if not rowids_blob and df:  # the row count only
                    count = conn.execute(
                        f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (_quoted(phrase),)
                    ).fetchone()[0]
                    conn.execute(
                        "UPDATE fts_phrase_stats SET df = ?, generation = ? "
                        "WHERE tbl = ? AND weights = ? AND phrase = ?",
                        (count, gen, table, wkey, phrase),
                    )
                    continue
                df2, rowids2, terms2 = _fts5_list(conn, table, phrase, weights, lengths)
                conn.execute(
                    "INSERT OR REPLACE INTO fts_phrase_stats VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (table, wkey, phrase, gen, df2, rowids2, terms2),
                )
                continue
            rows = unpack_rowids(rowids_blob, df)
            f = np.frombuffer(terms_blob, dtype="<u1" if len(terms_blob) == df else "<u2").astype(np.int64)
            gone = np.asarray(sorted(removed_from.get(phrase, ())), dtype=np.int64)
            if len(gone):  # (rows are sorted: found by bisection)
                at = np.searchsorted(rows, gone)
                if not (len(rows) and np.array_equal(rows[np.minimum(at, len(rows) - 1)], gone)):
                    return False  # a list without a row that holds its phrase: not FTS5's
                rows, f = np.delete(rows, at), np.delete(f, at)
            new = added_to.get(phrase, {})
            if new:
                new_rows = np.fromiter(new, dtype=np.int64, count=len(new))
                new_f = np.fromiter(
                    (sum(int(n) * int(w) for n, w in zip(counts, weights, strict=True)) for counts in new.values()),
                    dtype=np.int64,
                    count=len(new),
                )
                order = np.argsort(new_rows)
                new_rows, new_f = new_rows[order], new_f[order]
                at = np.searchsorted(rows, new_rows)
                if len(rows) and np.any(rows[np.minimum(at, len(rows) - 1)] == new_rows):
                    return False  # already listed: not FTS5's
                rows, f = np.insert(rows, at, new_rows), np.insert(f, at, new_f)
            if len(f) and (f.max() >= 2**16 or f.min() < 1):
                conn.execute(
                    "DELETE FROM fts_phrase_stats WHERE tbl = ? AND weights = ? AND phrase = ?", (table, wkey, phrase)
                )
                continue
            terms = f.astype("<u1" if not len(f) or f.max() < 2**8 else "<u2").tobytes()
            conn.execute(
                "INSERT OR REPLACE INTO fts_phrase_stats VALUES (?, ?, ?, ?, ?, ?, ?)",
                (table, wkey, phrase, gen, len(rows), pack_rowids(rows), terms),
            )
    return True


def _whole(weights: Sequence[float]) -> bool:
    """Weights that keep every f an integer a list can store (and sum in any order to the same double)."""
    return all(w == int(w) and 1 <= w < 2**12 for w in weights)


def _token_rows(conn: sqlite3.Connection, wkey: str, token: str) -> tuple[np.ndarray, np.ndarray]:
    row = conn.execute(
        "SELECT df, rowids, terms FROM fts_phrase_stats WHERE tbl = ? AND weights = ? AND phrase = ?",
        (TOKENS, wkey, token),
    ).fetchone()
    if row is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    df, rowids, terms = row
    if len(terms) not in (df, 2 * df):
        raise Inconsistent("a token list of the wrong length")
    f = np.frombuffer(terms, dtype="<u1" if len(terms) == df else "<u2").astype(np.int64)
    return unpack_rowids(rowids, df), f


_PUT_ROW = "INSERT OR REPLACE INTO fts_phrase_stats VALUES (?, ?, ?, ?, ?, ?, ?)"


def _token_row(
    wkey: str, token: str, gen: int, rows: np.ndarray, f: np.ndarray
) -> tuple[str, str, str, int, int, bytes, bytes]:
    """A token's list as stored: sorted rowids and each row's f, in 1 or 2 bytes."""
    return (
        TOKENS,
        wkey,
        token,
        gen,
        len(rows),
        pack_rowids(rows),
        f.astype("<u1" if f.max() < 2**8 else "<u2").tobytes(),
    )


def _put_token_rows(conn: sqlite3.Connection, wkey: str, token: str, rows: np.ndarray, f: np.ndarray, gen: int) -> None:
    if not len(rows):
        conn.execute("DELETE FROM fts_phrase_stats WHERE tbl = ? AND weights = ? AND phrase = ?", (TOKENS, wkey, token))
        return
    conn.execute(_PUT_ROW, _token_row(wkey, token, gen, rows, f))


def _give_up_tokens(conn: sqlite3.Connection, wkey: str) -> None:
    """This set holds no token lists for `wkey` from here on (the leg asks FTS5 instead), and no index
    run tries again until the set is stored anew."""
    conn.execute("DELETE FROM fts_phrase_stats WHERE tbl = ? AND weights = ?", (TOKENS, wkey))
    conn.execute(
        "INSERT OR REPLACE INTO fts_phrase_stats VALUES (?, ?, '', ?, -1, x'', x'')", (VOCAB, wkey, _generation(conn))
    )


def _follow_tokens(
    conn: sqlite3.Connection,
    removed_text: dict[int, tuple[str | None, ...]],
    added_text: dict[int, tuple[str | None, ...]],
) -> None:
    """follow_edits for the token lists: each token a removed or added chunk holds has its list rewritten.
    A list that would not be what the text says (a removed row missing, an added one already there) or
    could not be stored (a NUL, an f past 2^16, a vocabulary grown too long to scan) gives the lists up
    rather than keep them wrong or slow."""
    gen = _generation(conn)
    for wkey, blob in conn.execute(
        "SELECT weights, terms FROM fts_phrase_stats WHERE tbl = ? AND df >= 0", (VOCAB,)
    ).fetchall():
        weights = [int(float.fromhex(w)) for w in wkey.split(",")]
        gone: dict[str, list[int]] = {}
        new: dict[str, dict[int, int]] = {}
        ok = True
        for texts, into in ((removed_text, None), (added_text, new)):
            for cid, cols in texts.items():
                freq = token_frequencies(cols, weights, FOLD.fold)
                if freq is None:
                    ok = False
                    break
                for token, token_f in freq.items():
                    if into is None:
                        gone.setdefault(token, []).append(cid)
                    else:
                        into.setdefault(token, {})[cid] = token_f
        grown: set[str] = set()  # tokens with a list now (new or not)
        gone_tokens: set[str] = set()  # tokens whose list emptied
        try:
            for token in sorted(gone.keys() | new.keys()) if ok else ():
                rows, f = _token_rows(conn, wkey, token)
                out = np.asarray(sorted(gone.get(token, ())), dtype=np.int64)
                if len(out):
                    at = np.searchsorted(rows, out)
                    if not (len(rows) and np.array_equal(rows[np.minimum(at, len(rows) - 1)], out)):
                        ok = False  # a list without a row that holds its token: not the text's
                        break
                    rows, f = np.delete(rows, at), np.delete(f, at)
                added = new.get(token, {})
                if added:
                    add_rows = np.fromiter(sorted(added), dtype=np.int64, count=len(added))
                    add_f = np.fromiter((added[r] for r in add_rows.tolist()), dtype=np.int64, count=len(added))
                    at = np.searchsorted(rows, add_rows)
                    if len(rows) and np.any(rows[np.minimum(at, len(rows) - 1)] == add_rows):
                        ok = False  # already listed
                        break
                    rows, f = np.insert(rows, at, add_rows), np.insert(f, at, add_f)
                _put_token_rows(conn, wkey, token, rows, f, gen)
                if len(rows):
                    grown.add(token)
                else:
                    gone_tokens.add(token)
        except Inconsistent:
            ok = False
        if not ok:
            _give_up_tokens(conn, wkey)
            continue
        vocab = set(TokenVocab.decode(blob).tokens())
        if grown <= vocab and not (gone_tokens & vocab):
            continue  # the same tokens have lists: the vocabulary (up to megabytes) is not written again
        vocab = (vocab | grown) - gone_tokens
        text = TokenVocab.of(sorted(vocab)).encode()
        if len(text) > MAX_VOCAB_CHARS:
            _give_up_tokens(conn, wkey)
            continue
        conn.execute(
            "UPDATE fts_phrase_stats SET df = ?, generation = ?, terms = ? WHERE tbl = ? AND weights = ?",
            (len(vocab), gen, text, VOCAB, wkey),
        )


def store_token_lists(
    conn: sqlite3.Connection,
    weights: Sequence[float],
    *,
    cancel: threading.Event | None = None,
    min_rows: int | None = None,
) -> int:
    """Store the trigram table's lists by token (engine/index/token_lists.py) for these weights, once per
    set: from then on edits follow them (`follow_edits`). Returns how many tokens were stored now.

    Exact as the text is: every chunk is read and listed in one snapshot, and the lists are written only
    if no edit came in between (the set's epoch unchanged and its journal empty), else the next index run
    tries again. Only for whole-number weights (f stays an integer) and a table big enough to prune, and
    only while a set is kept (`store_common_phrases` starts one). At 100k chunks: ~16 s on one core."""
    weights = tuple(float(w) for w in weights)
    if not _whole(weights):
        return 0
    wkey = weights_key(weights)
    least = MIN_ROWS if min_rows is None else min_rows
    # (arrays, not lists of ints: at 100k chunks the lists hold ~13M entries)
    lists: dict[str, tuple[array[int], array[int]]] = {}
    listable = True
    conn.execute("BEGIN")
    try:
        epoch = _epoch(conn)
        if epoch is None or epoch <= 0 or edits_waiting(conn) or totals(conn, TOKEN_TABLE)[0] < least:
            return 0
        if conn.execute("SELECT 1 FROM fts_phrase_stats WHERE tbl = ? AND weights = ?", (VOCAB, wkey)).fetchone():
            return 0  # stored already, and followed since (or given up)
        iweights = [int(w) for w in weights]
        for n, (cid, *cols) in enumerate(
            conn.execute("SELECT id, heading, context_text, content FROM chunks ORDER BY id")
        ):
            if cancel is not None and n % 1000 == 0 and cancel.is_set():
                return 0
            freq = token_frequencies(cols, iweights, FOLD.fold)
            if freq is None:
                listable = False
                break
            for token, f in freq.items():
                held = lists.get(token)
                if held is None:
                    lists[token] = (array("q", (cid,)), array("H", (f,)))
                else:
                    held[0].append(cid)
                    held[1].append(f)
    finally:
        conn.execute("COMMIT")
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _epoch(conn) != epoch or edits_waiting(conn):
            return 0  # written to since it was read: the next run lists it again
        vocab = TokenVocab.of(sorted(lists)).encode() if listable else b""
        if not listable or len(vocab) > MAX_VOCAB_CHARS:
            _give_up_tokens(conn, wkey)
            _bump_epoch(conn)
            return 0
        gen = _generation(conn)
        conn.executemany(
            _PUT_ROW,
            (
                _token_row(wkey, token, gen, np.frombuffer(rows, dtype=np.int64), np.frombuffer(f, dtype=np.uint16))
                for token, (rows, f) in lists.items()
            ),
        )
        conn.execute(
            "INSERT OR REPLACE INTO fts_phrase_stats VALUES (?, ?, '', ?, ?, x'', ?)",
            (VOCAB, wkey, gen, len(lists), vocab),
        )
        _bump_epoch(conn)
    finally:
        conn.execute("COMMIT")
    return len(lists)


def token_list_sizes(conn: sqlite3.Connection) -> dict[str, int]:
    """What the lists by token hold (every weighting): tokens, row entries, bytes (vocabularies included)."""
    try:
        tokens, entries, size = conn.execute(
            "SELECT count(*), coalesce(sum(df), 0), coalesce(sum(length(rowids) + length(terms)), 0) "
            "FROM fts_phrase_stats WHERE tbl = ?",
            (TOKENS,),
        ).fetchone()
        (vocab,) = conn.execute(
            "SELECT coalesce(sum(length(terms)), 0) FROM fts_phrase_stats WHERE tbl = ?", (VOCAB,)
        ).fetchone()
    except sqlite3.OperationalError:  # no set was ever kept
        return {"tokens": 0, "entries": 0, "bytes": 0}
    return {"tokens": int(tokens), "entries": int(entries), "bytes": int(size + vocab)}


def _quoted(phrase: str) -> str:
    from groove_tui.engine.analysis.query import fts_phrase

    return fts_phrase(phrase)


def store_common_phrases(
    conn: sqlite3.Connection,
    weights: Sequence[float],
    table: str = "fts_chunks",
    *,
    max_entries: int | None = None,
    max_seconds: float = COMMON_MAX_SECONDS,
    cancel: threading.Event | None = None,
    min_rows: int | None = None,
    japanese: JapaneseAnalyzer | None = None,
) -> int:
    """Store FTS5's statistics of the corpus' frequent phrases in the index database (`fts_phrase_stats`:
    row count and impact list, keyed by table, weights and folded phrase), so that a new session starts
    with the lists that cost most to fetch. Returns how many were stored now.

    Exact: each row is FTS5's own `SELECT rowid, bm25(t, w…) … MATCH phrase` (the statement `_impacts`
    runs) inside a write transaction that first follows the journal (`follow_edits`), so every row is the
    table's answer at the same state; readers use the set only while the journal is empty. The phrase is
    queried by its folded text, which FTS5 folds to itself (checked), so it matches exactly what any phrase
    folding to it matches. Interrupted (cancel, out of `max_seconds`), what was stored is still exact and
    the next call goes on from there (an index run pays at most that much; at 100k chunks the whole set,
    ~6,650 phrases, takes ~70 s on one core and 126 MB). Later edits cost only their own chunks.

    On the word table (`table="fts_words"`, written with the analyzer `japanese`) the phrases are the
    frequent terms (`common_terms`), keyed by the term and queried by a word FTS5 makes that term of; a
    list is stored only as frequencies (whole-number weights), which edits follow from the chunks' text."""
    weights = tuple(float(w) for w in weights)
    wkey = weights_key(weights)
    least = MIN_ROWS if min_rows is None else min_rows
    words = table == "fts_words"
    if words and not _whole(weights):
        return 0  # its lists could only be kept as doubles, which no edit can follow from text
    conn.execute("BEGIN IMMEDIATE")
    try:
        if words and not _words_written_by(conn, japanese):
            return 0  # incomplete, or written by another analyzer: the next index run rebuilds it
        n_rows, avgdl = totals(conn, table)
        if n_rows < least:
            drop_stored_phrases(conn)
            return 0
        epoch = _epoch(conn)
        if epoch is not None and epoch > 0:
            follow_edits(conn, min_rows=least, japanese=japanese)
            epoch = _epoch(conn)
        if epoch is None or epoch <= 0:
            _start_set(conn)
        lengths = _stored_lengths(conn, table)
        if lengths is None:  # (a table forgotten since the set started, and now current again)
            _store_lengths(conn, table, read_lengths(conn, table))
            _bump_epoch(conn)
            lengths = _stored_lengths(conn, table)
        done = {
            p
            for (p,) in conn.execute("SELECT phrase FROM fts_phrase_stats WHERE tbl = ? AND weights = ?", (table, wkey))
        }
    finally:
        conn.execute("COMMIT")
    if "" in done:  # "" marks a finished set
        return 0
    from groove_tui.engine.analysis.query import fts_phrase

    todo = (
        [(t, w, c) for t, w, c in common_terms(conn, japanese) if t not in done]
        if words
        else [(p, p, c) for p, c in common_phrases(conn, table) if p not in done and FOLD.fold(p) == p]
    )
    if max_entries is None:
        max_entries = COMMON_MAX_ENTRIES * n_rows
    entries = sum(
        r
        for (r,) in conn.execute(
            "SELECT df FROM fts_phrase_stats WHERE tbl = ? AND weights = ? AND length(terms) > 0", (table, wkey)
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
            if follow_edits(conn, min_rows=least, japanese=japanese):  # another writer came between: this state now
                n_rows, avgdl = totals(conn, table)
                lengths = _stored_lengths(conn, table)
            epoch = _epoch(conn)
            if epoch is None or epoch <= 0 or (words and not _words_written_by(conn, japanese)):
                return stored  # dropped (too many edits, or too small now; rebuilt): the next run starts over
            gen = _generation(conn)
            started = time.perf_counter()
            while i < len(todo) and entries < max_entries and time.perf_counter() - started < 0.5:
                phrase, spelled, sampled = todo[i]
                i += 1
                if sampled > COMMON_LIST_SHARE * 0.8 and not words:
                    df = conn.execute(
                        f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (fts_phrase(phrase),)
                    ).fetchone()[0]
                    if df > COMMON_LIST_SHARE * n_rows:  # the row count only (FTS5's, this state)
                        conn.execute(
                            "INSERT OR REPLACE INTO fts_phrase_stats VALUES (?, ?, ?, ?, ?, x'', x'')",
                            (table, wkey, phrase, gen, df),
                        )
                        stored += 1
                        continue
                found = conn.execute(sql, (*weights, fts_phrase(spelled))).fetchall()
                rows = np.fromiter((r for r, _ in found), dtype=np.int64, count=len(found))
                terms = np.fromiter((-v for _, v in found), dtype=np.float64, count=len(found))
                order = np.argsort(rows, kind="stable")
                rows, terms = rows[order], terms[order]
                packed = pack_terms(rows, terms, lengths, n_rows, avgdl)
                if words and len(packed) == 8 * len(rows) and len(rows):
                    continue  # not as frequencies (a count past 2^16): left to FTS5 at search time
                conn.execute(
                    "INSERT OR REPLACE INTO fts_phrase_stats VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (table, wkey, phrase, gen, len(found), pack_rowids(rows), packed),
                )
                entries += len(found)
                stored += 1
            _bump_epoch(conn)
        finally:
            conn.execute("COMMIT")
    with contextlib.suppress(sqlite3.Error):
        conn.execute("BEGIN IMMEDIATE")
        try:
            follow_edits(conn, min_rows=least, japanese=japanese)
            epoch = _epoch(conn)
            if epoch is not None and epoch > 0:
                conn.execute(
                    "INSERT OR REPLACE INTO fts_phrase_stats VALUES (?, ?, '', ?, 0, x'', x'')",
                    (table, wkey, _generation(conn)),
                )
                _bump_epoch(conn)
        finally:
            conn.execute("COMMIT")
    return stored
