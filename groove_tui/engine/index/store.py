"""SQLite schema, reads and writes (sqlean.py + sqlite-vec).

The schema is groove's (reference §B) plus a few columns of ours: `chunks.line` (where the chunk starts,
for opening an editor), `chunks.part` (continuation of a split section), `chunks.embedded` (phase two's
work list). One connection per thread: Textual workers and the indexer each get their own.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import sqlean as sqlite3
import sqlite_vec

from groove_tui.engine.analysis.bigram import SEGMENTATION_VERSION, segment
from groove_tui.engine.analysis.japanese import JapaneseAnalyzer
from groove_tui.engine.analysis.names import NAMES_VERSION, name_keys
from groove_tui.engine.analysis.words import WORDS_TOKENIZE, WORDS_VERSION, version_base, words_version
from groove_tui.engine.errors import IndexError_, IndexNotReady, IndexWriteFailed
from groove_tui.engine.index import damage, phrase_stats
from groove_tui.engine.index.word_terms import word_rows

SCHEMA_VERSION = "1"
REBUILD_SUFFIX = ".rebuild"  # a forced rebuild's file, beside the index (`Store.rebuilt_beside`)
REBUILD_WAL_LIMIT = 64 << 20

_SCHEMA = """
CREATE TABLE IF NOT EXISTS index_meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT UNIQUE NOT NULL,
    title TEXT, topic TEXT, category TEXT, depth TEXT,
    tags TEXT,
    date TEXT,
    content_hash TEXT NOT NULL,
    last_indexed TEXT NOT NULL,
    size_bytes INTEGER,
    mtime_ns INTEGER
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    chunk_index INTEGER NOT NULL,
    heading TEXT,
    level INTEGER,
    content TEXT NOT NULL,
    token_count INTEGER,
    quality_score REAL NOT NULL DEFAULT 1.0,
    context_text TEXT,
    line INTEGER NOT NULL DEFAULT 1,
    part INTEGER NOT NULL DEFAULT 0,
    embedded INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS idx_chunks_quality ON chunks(quality_score);
CREATE INDEX IF NOT EXISTS idx_chunks_doc_order ON chunks(document_id, chunk_index);
CREATE INDEX IF NOT EXISTS idx_chunks_pending ON chunks(id) WHERE embedded = 0;
CREATE INDEX IF NOT EXISTS idx_documents_title ON documents(title COLLATE NOCASE);
CREATE TABLE IF NOT EXISTS named_keys (key TEXT NOT NULL, chunk_id INTEGER NOT NULL, kind INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS idx_named_keys_key ON named_keys(key);
CREATE INDEX IF NOT EXISTS idx_named_keys_chunk ON named_keys(chunk_id);
CREATE TRIGGER IF NOT EXISTS named_keys_remove AFTER DELETE ON chunks BEGIN
    DELETE FROM named_keys WHERE chunk_id = OLD.id;
END;
CREATE TABLE IF NOT EXISTS vec_journal (seq INTEGER PRIMARY KEY AUTOINCREMENT, chunk_id INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS vec_journal_add AFTER INSERT ON chunks WHEN NEW.embedded != 0
    BEGIN INSERT INTO vec_journal(chunk_id) VALUES (NEW.id); END;
CREATE TRIGGER IF NOT EXISTS vec_journal_flag AFTER UPDATE OF embedded ON chunks
    WHEN OLD.embedded IS NOT NEW.embedded BEGIN INSERT INTO vec_journal(chunk_id) VALUES (NEW.id); END;
CREATE TRIGGER IF NOT EXISTS vec_journal_remove AFTER DELETE ON chunks
    BEGIN INSERT INTO vec_journal(chunk_id) VALUES (OLD.id); END;
"""
# vec_journal names, in write order, every chunk whose vector may have changed: a vector is written only
# with its chunk's `embedded` flag set (in the same transaction) and removed with the chunk or the flag,
# and chunk ids are never reused (AUTOINCREMENT), so a reader holding one generation's vectors in memory
# brings them to a later one by reading just those chunks (engine/retrieve/vector_scan.py). Only the
# newest VEC_JOURNAL_KEPT entries are kept, and replacing the vectors wholesale (a forced rebuild) empties
# the journal: a reader whose entries are gone reads every vector again.
VEC_JOURNAL_KEPT = 20_000

# Connections read the index through a memory map (SQLite maps at most the file's size). Through read()
# each page is copied into a 2 MB per-connection cache that a large index thrashes: fetching a search's
# candidate rows at random from a 1.2 GB index took ~0.15 ms a row, mapped ~0.02 ms. Writes still go
# through write(), and nothing here shrinks the file (no VACUUM), which a mapping would not survive.
MMAP_BYTES = 1 << 34

# The full-text tables are contentless (content='') WITHOUT groove's contentless_delete=1: a DELETE on a
# contentless_delete table leaves the stored totals bm25 reads (row count, tokens per column) as they
# were, so every --force, edit or delete skewed the ranking of all later searches. A row is removed with
# FTS5's 'delete' command and the values it was inserted with (the chunks table keeps them), which
# subtracts its tokens exactly. FULLTEXT_VERSION marks tables built this way; older ones are rebuilt.
FULLTEXT_VERSION = "2"
# Moved by every write to a full-text table (and carried past a forced rebuild): what the full-text legs'
# per-phrase lists are kept by, so that vectors landing do not drop them.
FULLTEXT_GENERATION = "fulltext_generation"

FULLTEXT_TABLES = ("fts_chunks", "fts_bigram", "fts_words")
FTS5_AUTOMERGE = 4  # FTS5's default 'automerge' setting

FTS_DDL = """
CREATE VIRTUAL TABLE IF NOT EXISTS fts_chunks USING fts5(
    heading, context, content,
    content='',
    tokenize='trigram remove_diacritics 1 case_sensitive 0'
);
"""

# Ours (docs/groove-compatibility.md, 6): the CJK character-bigram side index over a segmented copy of the same
# three columns (engine/analysis/bigram.py). Rebuilt when index_meta's bigram_version differs from
# bigram.SEGMENTATION_VERSION (an index from before the table, or an older segmentation).
BIGRAM_DDL = """
CREATE VIRTUAL TABLE IF NOT EXISTS fts_bigram USING fts5(
    heading, context, content,
    content='',
    tokenize='unicode61 remove_diacritics 2'
);
"""

# Ours: the word side index (engine/analysis/words.py) over a copy of the same three columns with the CJK
# runs left out, or Japanese runs as their words when a Japanese dictionary is pulled. Rebuilt when
# index_meta's words_version differs from words.words_version() of the store's analyzer.
WORDS_DDL = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS fts_words USING fts5(
    heading, context, content,
    content='',
    tokenize='{WORDS_TOKENIZE}'
);
"""

# Characters as the bigram table holds them (NFKC): kana (hiragana, katakana with ー), and with them kanji
# (々〆〇, CJK unified incl. extension A and B+, compatibility ideographs), as [lo, hi) ranges.
_KANA = (("\u3041", "\u3100"), ("\u31f0", "\u3200"))
_KANJI_AND_KANA = (
    *_KANA,
    ("\u3005", "\u3008"),
    ("\u3400", "\ua000"),
    ("\uf900", "\ufb00"),
    ("\U00020000", "\U00031350"),
)

# Columns every leg reads for a candidate row (same order as `CandidateRow`).
ROW_COLUMNS = (
    "c.id, c.document_id, c.chunk_index, c.heading, c.level, c.content, c.token_count, c.quality_score, "
    "c.context_text, c.line, c.part, d.path, d.title, d.topic, d.category, d.date, d.tags"
)
ROW_JOIN = "chunks c JOIN documents d ON d.id = c.document_id"


# Not slotted: `from_sql` fills a new row's __dict__ at once. A frozen dataclass's __init__ sets each of
# its 17 fields through object.__setattr__, twice the cost, and every leg builds a row per candidate.
@dataclass(frozen=True)
class CandidateRow:
    chunk_id: int
    document_id: int
    chunk_index: int
    heading: str | None
    level: int | None
    content: str
    token_count: int | None
    quality_score: float
    context: str | None
    line: int
    part: int
    path: str
    title: str | None
    topic: str | None
    category: str | None
    date: str | None
    tags: tuple[str, ...]

    @classmethod
    def from_sql(cls, row: Sequence[Any]) -> CandidateRow:
        """A row of ROW_COLUMNS: the 16 columns before tags by position, then the tags parsed."""
        made = object.__new__(cls)
        values = made.__dict__
        values.update(zip(_SQL_FIELDS, row, strict=False))  # (tags, the 17th, parsed below)
        values["tags"] = parse_tags(row[16])
        return made


_SQL_FIELDS = tuple(f.name for f in fields(CandidateRow))[:16]


@lru_cache(maxsize=4096)  # a note's tags come back with every chunk of it a leg reads
def parse_tags(raw: str | None) -> tuple[str, ...]:
    """documents.tags is a JSON array; anything unparseable counts as no tags (groove §D.5)."""
    if not raw:
        return ()
    try:
        value = json.loads(raw)
    except ValueError:
        return ()
    return tuple(t for t in value if isinstance(t, str)) if isinstance(value, list) else ()


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def _where(exc: OSError, fallback: Path) -> str:
    return str(exc.filename) if exc.filename else str(fallback)


def fulltext_rows(rows: Sequence[tuple[Any, ...]]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The values a chunk's row holds in fts_chunks and in fts_bigram, from (id, heading, context_text,
    content): inserts and 'delete' commands must use the very same ones."""
    trigram = [(cid, h, ctx, body) for cid, h, ctx, body in rows]
    bigram = [(cid, segment(h), segment(ctx), segment(body)) for cid, h, ctx, body in rows]
    return trigram, bigram


def to_blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


class Store:
    """The index database. Thread-safe by giving every thread its own connection.

    `readonly=True` is a reader's store (search, status, eval): its connections are opened read-only and
    it never creates, migrates or writes anything, so it never waits for the write lock an indexer holds;
    in WAL mode it reads the last commit while any index runs. An index that does not exist yet, or that
    only an indexing run can bring up to date, raises IndexNotReady at once instead.

    `japanese` is the Japanese analyzer this process writes the word table with (None: the pulled
    dictionary is absent, or unusable); the table records which one built it (`words_version`)."""

    # What a reader needs; an index lacking one was never built, or was built before it existed.
    REQUIRED_TABLES = ("index_meta", "documents", "chunks", "fts_chunks")

    def __init__(self, db_path: Path, *, readonly: bool = False, japanese: JapaneseAnalyzer | None = None) -> None:
        self.db_path = db_path
        self.readonly = readonly
        self.japanese = japanese
        self.words_version = words_version(japanese)
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        if readonly:
            self._check_readable()
            return
        try:
            db_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file, /dev/null, a read-only directory: say which and why
            raise IndexError_(
                f"cannot use the index directory {_where(exc, db_path.parent)}: {exc.strerror or exc}"
            ) from None
        try:
            # executescript manages its own transaction
            self.conn().executescript(_SCHEMA + FTS_DDL + BIGRAM_DDL + WORDS_DDL)
        except sqlite3.DatabaseError as exc:
            self.close()
            if "full" in str(exc):  # not a damaged index: no room to create or update its tables
                raise self.write_error(exc) from None
            if damage.is_damage(exc):
                raise damage.damaged(db_path, exc) from exc
            raise IndexError_(f"cannot use the index {db_path}: {exc} (delete it or re-index with --force)") from exc
        try:
            self._init_meta()
        except sqlite3.Error as exc:  # e.g. a read-only index directory or database file, a full disk
            self.close()
            if "full" in str(exc):
                raise self.write_error(exc) from None
            if damage.is_damage(exc):
                raise damage.damaged(db_path, exc) from exc
            raise IndexError_(f"cannot write the index {db_path}: {exc}") from None

    def _check_readable(self) -> None:
        """A reader's checks, without writing: the file exists and holds every table a search reads."""
        if not self.db_path.is_file():
            raise IndexNotReady("missing", self.db_path)
        try:
            names = {r[0] for r in self.conn().execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            version = self.get_meta("schema_version") if "index_meta" in names else None
        except sqlite3.DatabaseError as exc:
            self.close()
            if damage.is_damage(exc):
                raise damage.damaged(self.db_path, exc) from exc
            raise IndexError_(
                f"cannot read the index {self.db_path}: {exc} (delete it or re-index with --force)"
            ) from None
        if not names or (version is None and "documents" in names and self._empty()):
            # created a moment ago by an indexer that has not committed its schema or first document yet
            self.close()
            raise IndexNotReady("missing", self.db_path)
        if any(t not in names for t in self.REQUIRED_TABLES) or version != SCHEMA_VERSION:
            self.close()
            raise IndexNotReady("outdated", self.db_path)

    def _empty(self) -> bool:
        return self.conn().execute("SELECT 1 FROM documents LIMIT 1").fetchone() is None

    def _init_meta(self) -> None:
        if not self._meta_missing(self.conn()):  # read first: an index already set up takes no write lock
            return
        with self.transaction() as conn:
            if self.get_meta("schema_version", conn) is None:
                self.set_meta("schema_version", SCHEMA_VERSION, conn)
            if not self._has_chunks(conn):  # empty: nothing to migrate or repair
                if self.get_meta("bigram_version", conn) is None:
                    self.set_meta("bigram_version", SEGMENTATION_VERSION, conn)
                if self.get_meta("words_version", conn) is None:
                    self.set_meta("words_version", self.words_version, conn)
                if self.get_meta("fulltext_version", conn) is None:
                    self.set_meta("fulltext_version", FULLTEXT_VERSION, conn)
                if self.get_meta("names_version", conn) is None:
                    self.set_meta("names_version", NAMES_VERSION, conn)

    def _meta_missing(self, conn: sqlite3.Connection) -> bool:
        if self.get_meta("schema_version", conn) is None:
            return True
        return not self._has_chunks(conn) and (
            self.get_meta("bigram_version", conn) is None
            or self.get_meta("fulltext_version", conn) is None
            or self.get_meta("words_version", conn) is None
            or self.get_meta("names_version", conn) is None
        )

    @staticmethod
    def _has_chunks(conn: sqlite3.Connection) -> bool:
        return conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None

    def fulltext_current(self) -> bool:
        """The full-text tables keep exact bm25 totals (else the next indexing run rebuilds them)."""
        return self.get_meta("fulltext_version") == FULLTEXT_VERSION

    def bigram_ready(self) -> bool:
        """The bigram table holds every chunk, segmented the current way (else search falls back)."""
        return self.get_meta("bigram_version") == SEGMENTATION_VERSION

    def names_ready(self, conn: sqlite3.Connection | None = None) -> bool:
        """named_keys holds every chunk's keys, made the current way (else the named lookup reads the
        full-text tables)."""
        return self.get_meta("names_version", conn) == NAMES_VERSION

    def insert_names(self, rows: Sequence[tuple[Any, ...]], conn: sqlite3.Connection) -> None:
        """The keys (chunk id, heading, context_text, content) chunks are named by."""
        conn.executemany("INSERT INTO named_keys(key, chunk_id, kind) VALUES (?, ?, ?)", name_keys(rows))

    def words_ready(self) -> bool:
        """The word table holds every chunk, indexed the current way, with or without a Japanese analyzer
        (else the word leg stays out)."""
        return version_base(self.get_meta("words_version")) == WORDS_VERSION

    def words_current(self) -> bool:
        """The word table is complete and was built by this store's Japanese analyzer (or, like it, with
        none): else the next indexing run rebuilds it."""
        return self.get_meta("words_version") == self.words_version

    def words_analyzer_recorded(self) -> str | None:
        """The identity of the Japanese analyzer the complete word table was built with, or None."""
        recorded = self.get_meta("words_version") or ""
        base, _, identity = recorded.partition("+")
        return identity or None if base == WORDS_VERSION else None

    def words_analyzer(self) -> JapaneseAnalyzer | None:
        """The analyzer a query's Japanese runs are compiled with: this store's, when it built the table.
        A table built another way is searched by its Latin words until it is rebuilt."""
        return self.japanese if self.japanese is not None and self.words_current() else None

    # ------------------------------------------------------------ connections

    def conn(self) -> sqlite3.Connection:
        """This thread's connection (kept until close())."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self.open_connection()
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def open_connection(self) -> sqlite3.Connection:
        """A new connection, configured as conn()'s are, that the caller closes (a short-lived thread's)."""
        try:
            if self.readonly:  # mode=ro: SQLite itself refuses any write, so a reader cannot take the lock
                uri = self.db_path.absolute().as_uri() + "?mode=ro"
                conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=True)
            else:
                conn = sqlite3.connect(str(self.db_path), isolation_level=None, check_same_thread=True)
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
            if not self.readonly:  # the writer made the file WAL (persistent); setting it is a write
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        except sqlite3.Error as exc:
            if damage.is_damage(exc):
                raise damage.damaged(self.db_path, exc) from exc
            raise IndexError_(f"cannot open the index {self.db_path}: {exc}") from exc
        return conn

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                with contextlib.suppress(Exception):
                    conn.close()
            self._all.clear()
        self._local = threading.local()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT, rolled back on any error: a killed writer leaves no half document."""
        if self.readonly:
            raise IndexError_(f"the index {self.db_path} was opened for reading only")
        conn = self.conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            # A full disk (or an I/O error) may have rolled the transaction back already: a second
            # ROLLBACK would then fail and hide the error that says what happened.
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # ------------------------------------------------------------ a forced rebuild

    @contextlib.contextmanager
    def rebuilt_beside(self) -> Iterator[Store]:
        """A new, empty index in a file beside this one, for a forced rebuild to write; when the block
        ends without error it replaces this index's content in one transaction (SQLite's backup into
        this file), so readers, in this process or another, see the old index until that commit and the
        new one after it, never an empty or partial one. On error the new file goes and this index is
        left as it was. Its counters (generation, row ids, the vector journal, the phrase statistics'
        epoch) continue this index's, so nothing readers cached of the old index is taken for the new."""
        if self.readonly:
            raise IndexError_(f"the index {self.db_path} was opened for reading only")
        path = self.db_path.with_name(self.db_path.name + REBUILD_SUFFIX)
        _remove_database(path)  # a rebuild killed before its copy
        try:
            # the backup copies page for page: the same page size, fixed before the first table
            setup = sqlite3.connect(str(path))
            try:
                setup.execute(f"PRAGMA page_size = {int(self.conn().execute('PRAGMA page_size').fetchone()[0])}")
                setup.execute("PRAGMA journal_mode=WAL")
            finally:
                setup.close()
            fresh = Store(path, japanese=self.japanese)
        except BaseException:
            _remove_database(path)
            raise
        try:
            self._continue_counters(fresh)
            yield fresh
            live = self.conn()
            # The copy is one transaction, so the WAL grows to the index's size: once checkpointed, it is
            # cut back to this limit. The checkpoint is passive: it never waits for readers.
            live.execute(f"PRAGMA journal_size_limit = {REBUILD_WAL_LIMIT}")
            with contextlib.closing(fresh.open_connection()) as source:
                source.backup(live)
            with contextlib.suppress(sqlite3.Error):
                live.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            fresh.close()
            _remove_database(path)

    def _continue_counters(self, fresh: Store) -> None:
        live = self.conn()
        sequences = dict(live.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
        with fresh.transaction() as conn:
            conn.execute(
                "INSERT INTO index_meta(key, value) VALUES ('generation', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(self.generation() + 1),),
            )
            fresh.set_meta(FULLTEXT_GENERATION, str(int(self.get_meta(FULLTEXT_GENERATION) or 0) + 1), conn)
            for name in ("documents", "chunks", "vec_journal"):
                # one number skipped in the journal: a reader holding vectors sees the gap and reads them all
                gap = 1 if name == "vec_journal" else 0
                conn.execute(
                    "INSERT INTO sqlite_sequence(name, seq) VALUES (?, ?)", (name, int(sequences.get(name, 0)) + gap)
                )
            phrase_stats.carry_epoch(conn, phrase_stats.epoch_of(live))

    # ------------------------------------------------------------ meta

    def get_meta(self, key: str, conn: sqlite3.Connection | None = None) -> str | None:
        row = (conn or self.conn()).execute("SELECT value FROM index_meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str, conn: sqlite3.Connection | None = None) -> None:
        (conn or self.conn()).execute(
            "INSERT INTO index_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def generation(self) -> int:
        """Bumped by every write, so search caches know when the index changed."""
        return int(self.get_meta("generation") or 0)

    def bump_fulltext(self, conn: sqlite3.Connection) -> None:
        """Marks a write to the full-text tables: the full-text legs' lists are kept across the index's
        other writes (vectors landing, metadata) and dropped only when this moves."""
        conn.execute(
            f"INSERT INTO index_meta(key, value) VALUES ('{FULLTEXT_GENERATION}', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    def bump_generation(self, conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO index_meta(key, value) VALUES ('generation', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )
        conn.execute(
            "DELETE FROM vec_journal WHERE seq <= (SELECT seq FROM sqlite_sequence WHERE name = 'vec_journal') - ?",
            (VEC_JOURNAL_KEPT,),
        )

    def replace_vectors(self, conn: sqlite3.Connection) -> None:
        """Every vector goes (the table dropped): readers holding vectors in memory read them all again."""
        conn.execute("DROP TABLE IF EXISTS vec_chunks")
        conn.execute("DELETE FROM vec_journal")  # (sqlite_sequence keeps counting: a reader sees the gap)

    # ------------------------------------------------------------ vectors

    def vec_dim(self) -> int | None:
        raw = self.get_meta("embedding_dim")
        return int(raw) if raw else None

    def has_vec_table(self, conn: sqlite3.Connection | None = None) -> bool:
        row = (
            (conn or self.conn())
            .execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vec_chunks'")
            .fetchone()
        )
        return row is not None

    def passage_tokens(self, wanted: int, conn: sqlite3.Connection | None = None) -> int:
        """Tokens of each passage this index's vectors read (0: all the model can): the number recorded
        with its first vector; `wanted` (the setting, or the model's own) while it holds none. An index
        from before the setting read all."""
        if self.get_meta("embedding_dim", conn) is None:
            return wanted
        return int(self.get_meta("passage_tokens", conn) or 0)

    def ensure_vec_table(self, dim: int, conn: sqlite3.Connection, passage_tokens: int = 0) -> None:
        """The vector table for `dim`-dimensional vectors, and what they are made of recorded: their
        dimension and (when none is) the tokens of a passage they read."""
        recorded = self.get_meta("embedding_dim", conn)
        if recorded is not None and int(recorded) != dim and self.has_vec_table(conn):
            raise IndexError_(
                f"the index holds {recorded}-dimensional vectors but the embedder produces {dim}; re-index with --force"
            )
        if not self.has_vec_table(conn):
            conn.execute(
                f"CREATE VIRTUAL TABLE vec_chunks USING vec0(chunk_id INTEGER PRIMARY KEY, embedding float[{dim}])"
            )
        if recorded is None or self.get_meta("passage_tokens", conn) is None:
            self.set_meta("passage_tokens", str(self.passage_tokens(passage_tokens, conn)), conn)
        self.set_meta("embedding_dim", str(dim), conn)

    def delete_chunks_of(self, document_id: int, conn: sqlite3.Connection) -> None:
        """A document's chunks and every row derived from them (both full-text tables, vectors).

        The full-text rows go through FTS5's 'delete' command with exactly the values they were inserted
        with (fulltext_rows), so the table's totals lose precisely their tokens."""
        rows = conn.execute(
            "SELECT id, heading, context_text, content FROM chunks WHERE document_id = ?", (document_id,)
        ).fetchall()
        ids = [(r[0],) for r in rows]
        trigram, bigram = fulltext_rows(rows)
        conn.executemany(
            "INSERT INTO fts_chunks(fts_chunks, rowid, heading, context, content) VALUES ('delete', ?, ?, ?, ?)",
            trigram,
        )
        conn.executemany(
            "INSERT INTO fts_bigram(fts_bigram, rowid, heading, context, content) VALUES ('delete', ?, ?, ?, ?)", bigram
        )
        if self.words_ready_in(conn):
            conn.executemany(
                "INSERT INTO fts_words(fts_words, rowid, heading, context, content) VALUES ('delete', ?, ?, ?, ?)",
                word_rows(rows, self.japanese),
            )
        if self.has_vec_table(conn):
            conn.executemany("DELETE FROM vec_chunks WHERE chunk_id = ?", ids)
        conn.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))
        if rows:
            self.bump_fulltext(conn)

    def insert_fulltext(self, rows: Sequence[tuple[Any, ...]], conn: sqlite3.Connection) -> None:
        """Full-text rows of (chunk id, heading, context_text, content) chunks, in both tables, and the
        keys they are named by (while the index keeps them: `names_ready`)."""
        if self.names_ready(conn):
            self.insert_names(rows, conn)
        trigram, bigram = fulltext_rows(rows)
        conn.executemany("INSERT INTO fts_chunks(rowid, heading, context, content) VALUES (?, ?, ?, ?)", trigram)
        conn.executemany("INSERT INTO fts_bigram(rowid, heading, context, content) VALUES (?, ?, ?, ?)", bigram)
        if self.words_ready_in(conn):
            conn.executemany(
                "INSERT INTO fts_words(rowid, heading, context, content) VALUES (?, ?, ?, ?)",
                word_rows(rows, self.japanese),
            )
        self.bump_fulltext(conn)

    def words_ready_in(self, conn: sqlite3.Connection) -> bool:
        """words_current inside a write transaction: an index whose word table is still to be built gets
        no rows in it (the build adds every chunk, from the chunks table, once). A complete table another
        analyzer built (another process, with or without the dictionary, rebuilt it meanwhile) cannot be
        followed exactly from here, as its rows' values are not this store's: it is marked incomplete, so
        search leaves it out until the next indexing run rebuilds it."""
        recorded = self.get_meta("words_version", conn)
        if recorded == self.words_version:
            return True
        if version_base(recorded) == WORDS_VERSION:
            self.set_meta("words_version", "", conn)
        return False

    def recreate_fulltext(self, conn: sqlite3.Connection) -> None:
        """Both full-text tables dropped and created empty, in the current form (and no phrase statistics
        of the old ones kept)."""
        phrase_stats.drop_stored_phrases(conn)
        conn.execute("DELETE FROM named_keys")  # made again with the full-text rows
        self.set_meta("names_version", NAMES_VERSION, conn)
        conn.execute("DROP TABLE IF EXISTS fts_chunks")
        conn.execute("DROP TABLE IF EXISTS fts_bigram")
        conn.execute("DROP TABLE IF EXISTS fts_words")
        conn.execute(FTS_DDL)
        conn.execute(BIGRAM_DDL)
        conn.execute(WORDS_DDL)
        self.set_meta("fulltext_version", FULLTEXT_VERSION, conn)
        self.set_meta("bigram_version", SEGMENTATION_VERSION, conn)
        self.set_meta("words_version", self.words_version, conn)
        self.bump_fulltext(conn)

    def has_kana(self) -> bool:
        """Whether any chunk holds kana: Japanese text, which kanji alone does not tell from Chinese."""
        return bool(self._bigram_terms_in(_KANA))

    def has_kanji_or_kana(self) -> bool | None:
        """Whether any chunk holds kanji or kana (the text the Japanese analyzer reads); None when the
        bigram table cannot tell (it is being rebuilt)."""
        return self._bigram_terms_in(_KANJI_AND_KANA)

    def _bigram_terms_in(self, ranges: tuple[tuple[str, str], ...]) -> bool | None:
        """Whether the bigram table has a term starting with a character in one of `ranges` ([lo, hi)).

        Every character of a CJK run starts one of its tokens (its bigrams and its last character alone),
        so such a term exists exactly when some chunk holds such a character. Range lookups in the term
        b-tree, whatever the index's size, where reading the text would take seconds at 100k chunks."""
        if not self.bigram_ready():
            return None
        conn = self.conn()
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.bigram_terms USING fts5vocab(main, fts_bigram, 'row')")
        return any(
            conn.execute("SELECT 1 FROM temp.bigram_terms WHERE term >= ? AND term < ? LIMIT 1", r).fetchone()
            for r in ranges
        )

    def embeddings_for(self, chunk_ids: Sequence[int]) -> dict[int, np.ndarray]:
        """Stored vectors of the given chunks (missing ones are absent from the dict)."""
        out: dict[int, np.ndarray] = {}
        if not chunk_ids or not self.has_vec_table():
            return out
        conn = self.conn()
        for start in range(0, len(chunk_ids), 500):
            batch = list(chunk_ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            for cid, blob in conn.execute(
                f"SELECT chunk_id, embedding FROM vec_chunks WHERE chunk_id IN ({marks})", batch
            ):
                out[cid] = np.frombuffer(blob, dtype=np.float32)
        return out

    # ------------------------------------------------------------ reads

    def rows_by_ids(self, ids: Sequence[int]) -> dict[int, CandidateRow]:
        out: dict[int, CandidateRow] = {}
        conn = self.conn()
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            for row in conn.execute(f"SELECT {ROW_COLUMNS} FROM {ROW_JOIN} WHERE c.id IN ({marks})", batch):
                out[row[0]] = CandidateRow.from_sql(row)
        return out

    def places(self, ids: Iterable[int]) -> dict[int, tuple[str, int]]:
        """Each chunk's (document path, chunk_index): where it stands, the order of equal scores."""
        out: dict[int, tuple[str, int]] = {}
        conn = self.conn()
        batch_ids = list(ids)
        for start in range(0, len(batch_ids), 500):
            batch = batch_ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            for cid, path, index in conn.execute(
                f"SELECT c.id, d.path, c.chunk_index FROM chunks c JOIN documents d ON d.id = c.document_id "
                f"WHERE c.id IN ({marks})",
                batch,
            ):
                out[cid] = (path, index)
        return out

    def document_chunks(
        self, document_id: int, first: int | None = None, last: int | None = None, *, limit: int = -1
    ) -> list[tuple[Any, ...]]:
        """(id, chunk_index, level, heading, content, token_count, part) of a document's chunks, in order:
        all, or those with chunk_index `first`..`last` (inclusive), at most `limit` of them."""
        lo = -1 if first is None else first
        hi = 2**62 if last is None else last
        rows: list[tuple[Any, ...]] = (
            self.conn()
            .execute(
                "SELECT id, chunk_index, level, heading, content, token_count, part FROM chunks "
                "WHERE document_id = ? AND chunk_index BETWEEN ? AND ? ORDER BY chunk_index LIMIT ?",
                (document_id, lo, hi, limit),
            )
            .fetchall()
        )
        return rows

    def chunk_outline(self, document_id: int, start: int, *, forward: bool, limit: int) -> list[tuple[Any, ...]]:
        """(chunk_index, level, part, token_count, estimated tokens) of up to `limit` of a document's chunks,
        nearest `start` first: from `start` on (forward), or before it. The estimate is the parent
        retriever's (the stored count, or UTF-8 bytes / 4 when it is NULL or 0); no chunk text is read
        for a chunk that has its count."""
        order, op = ("ASC", ">=") if forward else ("DESC", "<")
        rows: list[tuple[Any, ...]] = (
            self.conn()
            .execute(
                "SELECT chunk_index, level, part, token_count, "
                "CASE WHEN token_count > 0 THEN token_count ELSE length(CAST(content AS BLOB)) / 4 END "
                f"FROM chunks WHERE document_id = ? AND chunk_index {op} ? ORDER BY chunk_index {order} LIMIT ?",
                (document_id, start, limit),
            )
            .fetchall()
        )
        return rows

    def automerge(self, conn: sqlite3.Connection) -> bool:
        """Whether FTS5 merges the full-text tables' segments as writes add them (its default)."""
        row = conn.execute("SELECT v FROM fts_chunks_config WHERE k = 'automerge'").fetchone()
        return row is None or int(row[0]) != 0

    def set_automerge(self, on: bool) -> None:
        """Turn FTS5's incremental merging of the full-text tables on (at its default) or off.

        Off for a run that ends in an 'optimize': the merges it would make along the way are undone by
        the optimize, which merges every segment anyway (about a tenth of the full-text phase). Search
        results do not depend on it."""
        with self.transaction() as conn:
            for table in FULLTEXT_TABLES:
                conn.execute(
                    f"INSERT INTO {table}({table}, rank) VALUES ('automerge', ?)", (FTS5_AUTOMERGE if on else 0,)
                )

    def optimize_fulltext(self) -> None:
        """Merge each full-text table's segments into one b-tree (FTS5 'optimize'); results do not change.

        Every per-document commit leaves a small segment, and a query reads each one: after a bulk
        index this takes about a quarter off the full-text statement (docs/performance.md). One
        transaction, not interruptible: 0.4 s for scifact's 7.6k chunks, 5 s at 100k."""
        with self.transaction() as conn:
            for table in FULLTEXT_TABLES:
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")

    def counts(self) -> tuple[int, int, int]:
        """(documents, chunks, chunks still lacking a vector)."""
        conn = self.conn()
        docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return docs, chunks, self.pending_count()

    def pending_count(self) -> int:
        return int(self.conn().execute("SELECT count(*) FROM chunks WHERE embedded = 0").fetchone()[0])

    def write_error(self, exc: Exception) -> IndexError_:
        """A SQLite error met while writing the index, as one line that says what happened and what to do.

        Each document is its own transaction, so what was committed before stays searchable."""
        text = str(exc)
        if "full" in text:  # SQLITE_FULL: "database or disk is full"
            return IndexWriteFailed(
                f"the disk holding the index is full (index: {self.db_path}); what was indexed before stays "
                f"searchable. Free some space, or move the index elsewhere with --index-dir DIR (or "
                f"GROOVE_TUI_INDEX_DIR), then index again to finish"
            )
        if "locked" in text:  # SQLITE_BUSY after busy_timeout: a process outside groove-tui's own lock
            return IndexWriteFailed(
                f"another process kept the index {self.db_path} locked for 30 s; what was "
                f"indexed before stays searchable. Close it and index again"
            )
        return IndexWriteFailed(
            f"cannot write the index {self.db_path} ({text}); what was indexed before stays "
            f"searchable. Check the disk and index again"
        )

    def index_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.db_path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total
