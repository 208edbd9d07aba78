"""Walk, hash, diff, write, embed: the incremental two-phase indexer.

Phase one writes documents, chunks and full-text rows (the trigram table and the CJK bigram side table)
for every changed file, one transaction per document, so keyword search works within seconds. Phase two embeds
the chunks that still lack a vector, in batches, outside write transactions, committing each batch — an
interrupted phase two resumes where it stopped. Nothing is ever written into the KB.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import sqlean

from groove_tui.engine.analysis.bigram import SEGMENTATION_VERSION, segment
from groove_tui.engine.analysis.names import NAMES_VERSION
from groove_tui.engine.analysis.words import index_words
from groove_tui.engine.errors import EngineError, IndexBusy
from groove_tui.engine.index import phrase_stats
from groove_tui.engine.index.markdown import parse_markdown
from groove_tui.engine.index.store import BIGRAM_DDL, WORDS_DDL, Store, to_blob
from groove_tui.engine.index.throughput import RateMeter, pending_in_order
from groove_tui.engine.index.walk import (
    NOT_UTF8_NAME,
    DiskFile,
    decode_markdown,
    name_is_utf8,
    printable_name,
    read_file,
    walk_kb,
    walk_paths,
)
from groove_tui.engine.types import FileIssue, IndexProgress, IndexReport, ParsedDocument
from groove_tui.settings.config import Config

if TYPE_CHECKING:
    import numpy as np

    from groove_tui.engine.types import Embedder

log = logging.getLogger(__name__)


ProgressFn = Callable[[IndexProgress], None]


# index_meta: documents added, updated or deleted since the full-text segments were last merged.
UNMERGED_KEY = "fulltext_unmerged_changes"
CHUNK_CAP_KEY = "max_chunk_bytes"  # the cap the chunks were cut with
# How long a note read empty is waited for to hold still before it is read as it is (a writer still
# changing it after this will send more events).
SETTLE_LIMIT_S = 2.0
# The full-text phase commits every BATCH_DOCS documents, or sooner once a transaction has been open
# BATCH_SECONDS (search sees new notes that late at most; a watcher's batch is one transaction anyway).
# Each commit writes the batch's full-text rows as new FTS5 segments, which the merge rewrites later:
# fewer, larger batches leave it fewer segments to rewrite.
BATCH_DOCS = 1024
BATCH_SECONDS = 1.0


class IndexCancelled(EngineError):
    """The cancel event was set; everything committed so far stays valid."""


# Models read at most 512 tokens (a few thousand characters) and truncate the rest, but tokenising a
# 5 MB chunk first took 18 GB with USE: what a model is handed is cut here. Far above any chunk the
# default cap (3000 bytes) makes, so it only bites on huge `max_chunk_bytes` or an uncapped index.
MODEL_INPUT_MAX_CHARS = 8192


def embedding_input(content: str, context: str | None, contextual: bool) -> str:
    """What the embedder (and the reranker) sees: breadcrumb + content in static mode (groove §A.8)."""
    if contextual and context and context.strip():
        content = f"{context}\n\n{content}"
    return content[:MODEL_INPUT_MAX_CHARS]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- locking


@contextlib.contextmanager
def writer_lock(index_dir: Path) -> Iterator[None]:
    """One indexer per index at a time (advisory lock; a killed holder releases it)."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory lock, SQLite's own locking still protects the data
        yield
        return
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
        fh = open(index_dir / "index.lock", "w")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise EngineError(f"cannot use the index directory {index_dir}: {exc.strerror or exc}") from None
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise IndexBusy(
                f"another groove-tui process is indexing this KB (lock: {index_dir / 'index.lock'})"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# ---------------------------------------------------------------- the indexer


@dataclass(slots=True)
class _Counts:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    renamed: int = 0
    deleted: int = 0
    metadata_only: int = 0
    embedded: int = 0
    embed_batch_seconds: float = 0.0  # time spent in embedding batches (model loading excluded)
    skipped: list[FileIssue] = field(default_factory=list)
    degraded: list[FileIssue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _Indexed(NamedTuple):
    """A document as the index holds it: what tells whether its file changed."""

    id: int
    content_hash: str
    size: int | None
    mtime_ns: int | None


class _WriteBatch:
    """Documents written in one transaction until it holds BATCH_DOCS of them or has been open BATCH_SECONDS:
    a commit per note was most of the full-text phase (a WAL commit and a new FTS5 segment each). Readers
    see whole documents appear a batch at a time; a killed writer still leaves no half document (each is
    a savepoint). As a context manager, the open transaction is committed when the block ends, also when
    an error or a cancellation ends it: every document written before is whole."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._conn: sqlean.Connection | None = None
        self._docs = 0
        self._opened = 0.0
        self._fulltext: list[tuple[int, str | None, str | None, str]] = []
        self.now = _now()  # the batch's documents' last_indexed: when its transaction began

    def connection(self) -> sqlean.Connection:
        if self._conn is None:
            conn = self.store.conn()
            conn.execute("BEGIN IMMEDIATE")
            self._conn, self._docs, self._opened = conn, 0, time.monotonic()
            self.now = _now()
        return self._conn

    @contextlib.contextmanager
    def document(self) -> Iterator[sqlean.Connection]:
        """One document's writes: whole or not at all (a savepoint), the batch's earlier ones kept either
        way; the batch commits after it once full or open long enough."""
        conn = self.connection()
        queued = len(self._fulltext)
        conn.execute("SAVEPOINT document")
        try:
            yield conn
        except BaseException:
            del self._fulltext[queued:]
            if conn.in_transaction:  # (a full disk may have rolled the whole transaction back already)
                with contextlib.suppress(sqlite3.Error, sqlean.Error):
                    conn.execute("ROLLBACK TO document")
                    conn.execute("RELEASE document")
            raise
        conn.execute("RELEASE document")
        self._docs += 1
        if self._docs >= BATCH_DOCS or time.monotonic() - self._opened >= BATCH_SECONDS:
            self.commit()

    def add_fulltext(self, row: tuple[int, str | None, str | None, str]) -> None:
        """A chunk's full-text rows, written with the rest of the batch's just before it commits: written
        between the chunk rows, FTS5's inserts made every later chunk insert ~30× slower."""
        self._fulltext.append(row)

    def commit(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            rows, self._fulltext = self._fulltext, []
            try:
                if rows:
                    self.store.insert_fulltext(rows, conn)
                if self._docs:  # once for the batch: readers see its documents together
                    self.store.bump_generation(conn)
                conn.execute("COMMIT")
            except BaseException:
                # Not left open: the connection's next transaction would fail ("within a transaction").
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error, sqlean.Error):
                        conn.execute("ROLLBACK")
                raise

    def __enter__(self) -> _WriteBatch:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if kind is None:
            self.commit()
            return
        # Stopped by an error or a cancellation: the documents written before it are whole, and kept
        # (as when every document committed alone); a commit that fails too leaves the error raised.
        conn = self._conn
        try:
            if conn is not None and conn.in_transaction:
                self.commit()
        except (sqlite3.Error, sqlean.Error):
            pass
        finally:
            self._conn, self._fulltext = None, []
            # A full disk (or an I/O error) may have rolled the transaction back already: a second ROLLBACK
            # would then fail and hide the error that says what happened.
            if conn is not None and conn.in_transaction:
                with contextlib.suppress(sqlite3.Error, sqlean.Error):
                    conn.execute("ROLLBACK")


class Indexer:
    clock = staticmethod(time.perf_counter)  # times the embedding batches (tests drive it)

    def __init__(
        self,
        store: Store,
        kb: Path,
        config: Config,
        model_id: str,
        load_embedder: Callable[[], Embedder],
        passage_tokens: int = 0,
    ) -> None:
        """`passage_tokens`: what an index without vectors records its embedder reads of a passage (the
        setting, or the model's own; 0: all it can)."""
        self.store = store
        self.kb = kb
        self.config = config
        self.model_id = model_id
        self._load_embedder = load_embedder
        self._passage_tokens = passage_tokens

    # ------------------------------------------------------------ entry

    def run(
        self,
        progress: ProgressFn | None = None,
        force: bool = False,
        cancel: threading.Event | None = None,
        embed: bool = True,
        scope: frozenset[str] | None = None,
        follow_statistics: bool = True,
    ) -> IndexReport:
        """Index the KB, or with `scope` only the files at or under those KB-relative paths (what the
        watcher saw change): the same diff, writes and embedding as a full run, for just those paths.
        `follow_statistics=False` leaves the stored phrase statistics to `follow_phrase_statistics` later
        (the watcher's quiet moment): searches meanwhile are exact without them."""
        started = time.perf_counter()
        report = _Counts()
        notify = progress or (lambda _p: None)
        if force:
            self._reset()
        else:
            self._repair_fulltext(notify, cancel)
            self._migrate_bigram(notify, cancel)
            self._migrate_words(notify, cancel)
            self._migrate_names(cancel)
        contextual = self._resolve_context_mode(force)
        try:
            self._fulltext_phase(report, notify, cancel, force, contextual, scope)
        finally:
            with contextlib.suppress(sqlite3.Error, sqlean.Error):  # (then the next run turns it on)
                self._automerge_on()
        self._compact_fulltext(report.added + report.updated + report.deleted, cancel)
        if follow_statistics:
            self.follow_phrase_statistics()
        fulltext_done = time.perf_counter()
        if embed:
            self._embed_phase(report, notify, cancel, contextual)
        embed_done = time.perf_counter()
        _docs, chunks, pending = self.store.counts()
        notify(IndexProgress("done", chunks - pending, chunks))
        # After "done": search works meanwhile, only slower. Not after a watched edit, which followed the
        # stored set already: finding and storing the corpus' new common phrases is a whole-KB pass.
        if self.config.search.fulltext_pruning and scope is None:
            self._phrase_statistics(cancel)
        end = time.perf_counter()
        return IndexReport(
            added=report.added,
            updated=report.updated,
            unchanged=report.unchanged,
            renamed=report.renamed,
            deleted=report.deleted,
            skipped=tuple(report.skipped),
            degraded=tuple(report.degraded),
            metadata_only=report.metadata_only,
            chunks=chunks,
            embedded=report.embedded,
            pending_embeddings=pending,
            seconds=end - started,
            fulltext_seconds=fulltext_done - started,
            embed_seconds=embed_done - fulltext_done,  # (`seconds` includes the phrase statistics)
            embed_rate=(
                report.embedded / report.embed_batch_seconds
                if report.embedded and report.embed_batch_seconds > 0
                else None
            ),
            notes=tuple(report.notes),
        )

    # ------------------------------------------------------------ bookkeeping

    def _reset(self) -> None:
        with self.store.transaction() as conn:
            # Recreated, not emptied: a DELETE leaves the old rows in the bm25 totals.
            self.store.recreate_fulltext(conn)  # empty, hence current (both versions recorded)
            conn.execute("DELETE FROM chunks")
            conn.execute("DELETE FROM documents")
            self.store.replace_vectors(conn)
            for key in ("embedding_model", "embedding_dim", "passage_tokens", "context_mode"):
                conn.execute("DELETE FROM index_meta WHERE key = ?", (key,))
            self.store.bump_generation(conn)

    def _repair_fulltext(self, notify: ProgressFn, cancel: threading.Event | None) -> None:
        """Rebuild both full-text tables of an index made before FULLTEXT_VERSION, whose bm25 totals may
        have drifted with every delete: one transaction, so search sees the old tables or the new."""
        if self.store.fulltext_current():
            return
        conn = self.store.conn()
        total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        notify(IndexProgress("fulltext", 0, total))
        with self.store.transaction() as wconn:
            self.store.recreate_fulltext(wconn)
            last_id, done = -1, 0
            while True:
                if cancel is not None and cancel.is_set():
                    raise IndexCancelled("indexing cancelled while repairing the full-text index")
                rows = wconn.execute(
                    "SELECT id, heading, context_text, content FROM chunks WHERE id > ? ORDER BY id LIMIT 500",
                    (last_id,),
                ).fetchall()
                if not rows:
                    break
                self.store.insert_fulltext(rows, wconn)
                done += len(rows)
                last_id = rows[-1][0]
                notify(IndexProgress("fulltext", done, total))
            self.store.set_meta(UNMERGED_KEY, str(total), wconn)  # whole new tables: merge them next
            self.store.bump_generation(wconn)

    def _migrate_bigram(self, notify: ProgressFn, cancel: threading.Event | None) -> None:
        """Build the bigram table for an index made before it existed or with an older segmentation."""
        if not self.store.bigram_ready():
            self._build_side_table(
                "fts_bigram", BIGRAM_DDL, "bigram_version", SEGMENTATION_VERSION, segment, notify, cancel
            )

    def _migrate_words(self, notify: ProgressFn, cancel: threading.Event | None) -> None:
        """Build the word table for an index made before it existed or indexed another way: an older
        WORDS_VERSION, or another Japanese analyzer than this store's (the dictionary was pulled, removed,
        or updated). A complete table whose chunks hold no Japanese text is the same with any analyzer:
        only its record changes."""
        store = self.store
        if store.words_current():
            return
        # the bigram table, migrated first, tells from its terms (None: it cannot, so rebuild)
        if store.words_ready() and store.has_kanji_or_kana() is False:
            with store.transaction() as wconn:
                store.set_meta("words_version", store.words_version, wconn)
                store.bump_generation(wconn)
            return
        japanese = store.japanese
        self._build_side_table(
            "fts_words",
            WORDS_DDL,
            "words_version",
            store.words_version,
            lambda text: index_words(text, japanese),
            notify,
            cancel,
        )

    def _migrate_names(self, cancel: threading.Event | None) -> None:
        """Keep the keys every chunk is named by (named_keys) for an index made before the table existed
        or that made them another way: one read of the chunks, in the run's first transaction."""
        store = self.store
        if store.names_ready():
            return
        with store.transaction() as wconn:
            wconn.execute("DELETE FROM named_keys")
            last_id = -1
            while True:
                if cancel is not None and cancel.is_set():
                    raise IndexCancelled("indexing cancelled while keeping the sections' names")
                rows = wconn.execute(
                    "SELECT id, heading, NULL, content FROM chunks WHERE id > ? ORDER BY id LIMIT 2000", (last_id,)
                ).fetchall()
                if not rows:
                    break
                store.insert_names(rows, wconn)
                last_id = rows[-1][0]
            store.set_meta("names_version", NAMES_VERSION, wconn)
            store.bump_generation(wconn)

    def _build_side_table(
        self,
        table: str,
        ddl: str,
        version_key: str,
        version: str,
        copy: Callable[[str | None], str | None],
        notify: ProgressFn,
        cancel: threading.Event | None,
    ) -> None:
        """A side full-text table built from the chunks table: each column's `copy`.

        Batched commits; the version is emptied with the drop and recorded last, so an interrupted build
        restarts from scratch and search leaves the table out until it is complete (while it is
        incomplete, writes skip it).
        """
        conn = self.store.conn()
        with self.store.transaction() as wconn:
            phrase_stats.forget_table(wconn, table)
            wconn.execute(f"DROP TABLE IF EXISTS {table}")
            wconn.execute(ddl)
            self.store.set_meta(version_key, "", wconn)
            self.store.bump_fulltext(wconn)
        total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        done, last_id = 0, -1
        notify(IndexProgress("fulltext", 0, total))
        while True:
            if cancel is not None and cancel.is_set():
                raise IndexCancelled(f"indexing cancelled while building the {table} index")
            rows = conn.execute(
                "SELECT id, heading, context_text, content FROM chunks WHERE id > ? ORDER BY id LIMIT 500", (last_id,)
            ).fetchall()
            if not rows:
                break
            with self.store.transaction() as wconn:
                wconn.executemany(
                    f"INSERT INTO {table}(rowid, heading, context, content) VALUES (?, ?, ?, ?)",
                    [(cid, copy(h), copy(ctx), copy(body)) for cid, h, ctx, body in rows],
                )
                self.store.bump_fulltext(wconn)
            done += len(rows)
            last_id = rows[-1][0]
            notify(IndexProgress("fulltext", done, total))
        with self.store.transaction() as wconn:
            self.store.set_meta(version_key, version, wconn)
            self.store.set_meta(UNMERGED_KEY, str(total), wconn)  # a whole new table: merge it next
            self.store.bump_generation(wconn)

    def _phrase_statistics(self, cancel: threading.Event | None) -> None:
        """Store the full-text leg's statistics of the corpus' common phrases for this index generation
        (engine/retrieve/fulltext.py: a new session then starts with the lists that cost most to fetch),
        and the trigram table's lists by token, which answer its rarer phrases.
        Only for tables big enough to prune, and once per generation (a run that changed nothing finds
        them current). Best effort: the leg is exact without them, only slower."""
        weights = self.config.search.fusion.bm25_weights
        try:
            for table in phrase_stats.STORED_TABLES:
                phrase_stats.store_common_phrases(
                    self.store.conn(), weights, table, cancel=cancel, japanese=self.store.japanese
                )
            phrase_stats.store_token_lists(self.store.conn(), weights, cancel=cancel)
        except sqlean.Error as exc:
            if self.store.conn().in_transaction:
                self.store.conn().execute("ROLLBACK")
            log.warning("phrase statistics not stored: %s", exc)

    def follow_phrase_statistics(self) -> bool:
        """Bring the stored phrase statistics up to date with the journalled edits (their chunks only);
        an index run does it right after the full text, so the next search reads them, and keeps them
        current even while pruning is off, so the journal never grows. Best effort: a set that cannot
        follow is dropped, never left stale. Returns whether edits were waiting."""
        try:
            if not phrase_stats.edits_waiting(self.store.conn()):
                return False  # a run that changed nothing takes no write lock for this
            with self.store.transaction() as conn:
                phrase_stats.follow_edits(conn, japanese=self.store.japanese)
        except sqlean.Error as exc:
            log.warning("phrase statistics not followed: %s", exc)
        return True

    def _compact_fulltext(self, changed: int, cancel: threading.Event | None) -> None:
        """Merge the full-text segments once a tenth of the documents changed since the last merge.

        FTS5's automerge bounds the segments small edits leave, so re-merging the whole index after each
        of them would cost more than it saves; a bulk index, a forced rebuild or a bigram migration
        crosses the threshold. An index that has never been merged counts as entirely changed."""
        docs = self.store.counts()[0]
        recorded = self.store.get_meta(UNMERGED_KEY)
        pending = self._unmerged(recorded, docs) + changed
        if self._merge_due(pending, docs):
            if cancel is not None and cancel.is_set():  # the merge itself cannot be interrupted
                raise IndexCancelled("indexing cancelled before merging the full-text index")
            self.store.optimize_fulltext()
            pending = 0
        if str(pending) != recorded:  # a run that changed nothing writes nothing
            with self.store.transaction() as conn:
                self.store.set_meta(UNMERGED_KEY, str(pending), conn)

    def _resolve_context_mode(self, force: bool) -> bool:
        """groove §B.4: the recorded mode wins unless the index is empty or rebuilt."""
        desired = "static" if self.config.contextual else "off"
        with self.store.transaction() as conn:
            recorded = self.store.get_meta("context_mode", conn)
            has_chunks = conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None
            mode = desired if (force or recorded is None or not has_chunks) else recorded
            if recorded is None and has_chunks:
                mode = "off"
            self.store.set_meta("context_mode", mode, conn)
            if self.store.get_meta("embedding_model", conn) is None:
                self.store.set_meta("embedding_model", self.model_id, conn)
        return mode == "static"

    # ------------------------------------------------------------ phase one

    def _fulltext_phase(
        self,
        report: _Counts,
        notify: ProgressFn,
        cancel: threading.Event | None,
        force: bool,
        contextual: bool,
        scope: frozenset[str] | None = None,
    ) -> None:
        conn = self.store.conn()
        notify(IndexProgress("scan", 0, 0))
        rechunk = self._chunk_cap_changed(conn, force, report)
        if rechunk or force:
            scope = None  # every document is cut again: no partial run can do that
        walk_issues: list[FileIssue] = []
        if scope is None:
            paths = walk_kb(self.kb, self.config.exclude_dirs, walk_issues)
        else:
            paths = walk_paths(self.kb, self.config.exclude_dirs, scope, walk_issues)
        report.skipped.extend(walk_issues)
        unreadable = tuple(
            "" if i.path == "./" else i.path for i in walk_issues if i.reason.startswith("unreadable directory")
        )
        stored = self._stored(conn, scope)

        disk: dict[str, DiskFile] = {}
        # Under an unreadable directory, as for an unreadable file: neither deleted nor taken as moved.
        skipped_paths: set[str] = {p for p in stored if (p + "/").startswith(unreadable)} if unreadable else set()
        for n, rel in enumerate(paths):
            if not name_is_utf8(rel):
                report.skipped.append(FileIssue(printable_name(rel), NOT_UTF8_NAME))
                skipped_paths.add(rel)
                continue
            result = read_file(self.kb, rel)
            if isinstance(result, FileIssue):
                report.skipped.append(result)
                skipped_paths.add(rel)
            else:
                if not force and rel in stored and stored[rel].content_hash == result.content_hash:
                    result.raw = None  # unchanged: no need to keep the bytes
                disk[rel] = result
            if n % 200 == 0:
                notify(IndexProgress("scan", n, len(paths), printable_name(rel)))

        renamed_to: set[str] = set()  # new paths of moved documents (already counted as renamed)
        reparse: set[str] = set()  # of those, the ones to re-index (static context mode)
        if not force:
            renamed_to, reparse = self._detect_renames(stored, disk, skipped_paths, report, contextual)
            stored = self._stored(conn, scope)

        total = len(disk)
        work: list[tuple[str, DiskFile]] = sorted(disk.items())
        emptied: dict[str, DiskFile] = {}  # had text, read empty: judged once the file holds still
        settled: set[str] = set()  # read again once still: what they hold now is what they hold
        changing: set[str] = set()  # read again while still changing
        n = 0
        if scope is None and self._ends_in_merge(work, stored, disk, skipped_paths, force or rechunk, reparse):
            self.store.set_automerge(False)  # (on again when the phase ends, before the merge)
        batch = _WriteBatch(self.store)
        # Unchanged notes whose size or mtime moved (a checkout, a copy, a save of the same bytes): their
        # new stat is recorded, or the cheap staleness check (`Engine.needs_index`) would find the index
        # stale at every start and have every file read and hashed again.
        restat: list[tuple[int, int, int]] = []
        while work:
            with batch:  # committed before anything else writes, waits, or the loop ends
                for rel, f in work:
                    if cancel is not None and cancel.is_set():
                        raise IndexCancelled("indexing cancelled")
                    notify(IndexProgress("fulltext", min(n, total), total, rel))
                    n += 1
                    existing = stored.get(rel)
                    if existing is not None and self._unchanged(existing, f, force or rechunk, rel in reparse):
                        if rel not in renamed_to:
                            report.unchanged += 1
                        if (existing.size, existing.mtime_ns) != (f.size, f.mtime_ns):
                            restat.append((f.size, f.mtime_ns, existing.id))
                        continue
                    if f.raw is None:  # renamed in static mode, or unchanged bytes dropped: read again
                        again = read_file(self.kb, rel)
                        if isinstance(again, FileIssue):
                            report.skipped.append(again)
                            skipped_paths.add(rel)
                            continue
                        f = again
                    try:
                        text = decode_markdown(f.raw or b"")
                    except ValueError as exc:
                        report.skipped.append(FileIssue(rel, str(exc)))
                        skipped_paths.add(rel)
                        continue
                    doc = parse_markdown(
                        rel,
                        text,
                        exclude_headings=self.config.exclude_headings,
                        max_chunk_bytes=self.config.chunking.max_chunk_bytes,
                        contextual=contextual,
                    )
                    f.raw = None
                    for warning in doc.warnings:
                        report.degraded.append(FileIssue(rel, warning))
                    if not doc.chunks and existing is not None and rel not in settled:
                        # A writer that truncates, then writes may have been caught in between: the note keeps
                        # its indexed text until the file has held still for the watcher's quiet window.
                        if rel in changing:
                            report.skipped.append(FileIssue(rel, "read empty while being written; its text is kept"))
                            skipped_paths.add(rel)
                        else:
                            emptied[rel] = f
                        continue
                    if not doc.chunks:
                        # An emptied file must not keep serving its old text (groove keeps it; we do not).
                        report.skipped.append(FileIssue(rel, "no text to index"))
                        if existing is not None:
                            batch.commit()  # (a transaction of its own)
                            self._delete_documents([existing.id])
                            report.deleted += 1
                        skipped_paths.add(rel)
                        continue
                    outcome = self._write_document(doc, f, existing.id if existing else None, contextual, batch)
                    if outcome == "added":
                        report.added += 1
                    elif rel in renamed_to:
                        pass  # counted as renamed already
                    else:
                        report.updated += 1
                        if outcome == "metadata":
                            report.metadata_only += 1
            work = self._read_once_still(emptied, disk, settled, changing, report, skipped_paths, cancel)
            emptied = {}
        notify(IndexProgress("fulltext", total, total))
        if rechunk:  # only now are all chunks cut with the new cap (a run stopped before cuts again)
            self.store.set_meta(CHUNK_CAP_KEY, str(self.config.chunking.max_chunk_bytes))

        if restat:  # (nothing a search reads changed: no new generation)
            with self.store.transaction() as conn:
                conn.executemany("UPDATE documents SET size_bytes = ?, mtime_ns = ? WHERE id = ?", restat)
        gone = [doc.id for p, doc in stored.items() if p not in disk and p not in skipped_paths]
        if gone:
            self._delete_documents(gone)
            report.deleted += len(gone)

    @staticmethod
    def _unchanged(existing: _Indexed | None, f: DiskFile, rewrite_all: bool, reparse: bool) -> bool:
        """Whether a note on disk is left as the index holds it (its bytes the same, and nothing asks for
        every note, or this one, to be cut again)."""
        return existing is not None and existing.content_hash == f.content_hash and not rewrite_all and not reparse

    @staticmethod
    def _unmerged(recorded: str | None, docs: int) -> int:
        """Documents changed since the full text was last merged (all of them if it never was)."""
        return int(recorded) if recorded and recorded.isdigit() else docs

    @staticmethod
    def _merge_due(pending: int, docs: int) -> bool:
        """Whether the full-text merge is due: once a tenth of the documents changed since the last one."""
        return docs > 0 and pending * 10 >= docs

    def _ends_in_merge(
        self,
        work: list[tuple[str, DiskFile]],
        stored: dict[str, _Indexed],
        disk: dict[str, DiskFile],
        skipped: set[str],
        rewrite_all: bool,
        reparse: set[str],
    ) -> bool:
        """Whether a whole-KB run will end in the full-text merge (`_compact_fulltext`), judged before it
        writes: the notes it will write (new, changed, or all) and delete, against the notes it leaves."""
        writes = sum(1 for rel, f in work if not self._unchanged(stored.get(rel), f, rewrite_all, rel in reparse))
        deletes = sum(1 for p in stored if p not in disk and p not in skipped)
        docs = len(disk)
        return self._merge_due(self._unmerged(self.store.get_meta(UNMERGED_KEY), docs) + writes + deletes, docs)

    def _automerge_on(self) -> None:
        """FTS5's incremental merging back on, after a phase that turned it off (or a run killed in one):
        the small edits that follow rely on it to bound the segments they leave."""
        if not self.store.automerge(self.store.conn()):
            self.store.set_automerge(True)

    def _read_once_still(
        self,
        emptied: dict[str, DiskFile],
        disk: dict[str, DiskFile],
        settled: set[str],
        changing: set[str],
        report: _Counts,
        skipped_paths: set[str],
        cancel: threading.Event | None,
    ) -> list[tuple[str, DiskFile]]:
        """The notes of `emptied` read again once their size and mtime have held still for the watcher's
        quiet window (at most SETTLE_LIMIT_S; those still changing then are read as they are and added to
        `changing`, the others to `settled`). One gone meanwhile leaves `disk`: it is deleted as any other."""
        from groove_tui.engine.index.watch import QUIET_MS

        if not emptied:
            return []
        last: dict[str, tuple[int, int] | None] = {rel: (f.size, f.mtime_ns) for rel, f in emptied.items()}
        still: list[str] = []
        deadline = time.monotonic() + SETTLE_LIMIT_S
        while last and time.monotonic() < deadline:
            if cancel is not None and cancel.wait(QUIET_MS / 1000):
                raise IndexCancelled("indexing cancelled")
            if cancel is None:
                time.sleep(QUIET_MS / 1000)
            for rel, seen in list(last.items()):
                try:
                    st = os.stat(self.kb / rel)
                    now: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
                except OSError:
                    now = None
                if now == seen:
                    still.append(rel)
                    del last[rel]
                else:
                    last[rel] = now
        settled.update(still)
        changing.update(last)
        again: list[tuple[str, DiskFile]] = []
        for rel in sorted(emptied):
            if not os.path.lexists(self.kb / rel):
                del disk[rel]
                continue
            result = read_file(self.kb, rel)
            if isinstance(result, FileIssue):
                report.skipped.append(result)
                skipped_paths.add(rel)
            else:
                again.append((rel, result))
        return again

    @staticmethod
    def _stored(conn: sqlite3.Connection, scope: frozenset[str] | None) -> dict[str, _Indexed]:
        """Indexed documents by path, all of them or those at or under `scope` (found through the path
        index: a watched edit in a KB of 100k notes costs no scan of them all)."""
        columns = "id, path, content_hash, size_bytes, mtime_ns"
        if scope is None or "" in scope:
            rows = conn.execute(f"SELECT {columns} FROM documents").fetchall()
        else:
            rows = []
            for s in scope:  # the path itself and every path under it, "s/" ≤ path < "s0" ("0" follows "/")
                rows += conn.execute(
                    f"SELECT {columns} FROM documents WHERE path = ? "
                    f"UNION ALL SELECT {columns} FROM documents WHERE path >= ? AND path < ?",
                    (s, s + "/", s + "0"),
                ).fetchall()
        return {p: _Indexed(i, h, size, mtime) for i, p, h, size, mtime in rows}

    def _chunk_cap_changed(self, conn: sqlite3.Connection, force: bool, report: _Counts) -> bool:
        """Whether every document must be cut again: `[chunking] max_chunk_bytes` differs from the cap the
        index was cut with (an index from before the cap was recorded counts as changed). Unchanged files
        are otherwise never re-read, so a new cap would apply only to the files edited since. The cut is
        cheap; chunks whose text comes out the same keep their vectors (see `_write_document`)."""
        cap = str(self.config.chunking.max_chunk_bytes)
        recorded = self.store.get_meta(CHUNK_CAP_KEY, conn)
        if recorded == cap:
            return False
        if force or conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is None:
            # Every chunk this run writes is cut with the cap: record it now, so a run killed halfway
            # does not make the next one cut the finished documents again.
            self.store.set_meta(CHUNK_CAP_KEY, cap)
            return False
        if recorded is None:
            report.notes.append(
                f"the index now records its chunk size cap ({int(cap):,} bytes): every document "
                "was cut again once; chunks that came out the same kept their vectors"
            )
        else:
            report.notes.append(
                f"the chunk size cap changed ({recorded} → {cap} bytes): every document was cut "
                "again; chunks that came out the same kept their vectors"
            )
        return True

    def _detect_renames(
        self,
        stored: dict[str, _Indexed],
        disk: dict[str, DiskFile],
        skipped: set[str],
        report: _Counts,
        contextual: bool,
    ) -> tuple[set[str], set[str]]:
        """groove §B.2.5: a vanished path and a new path with the same hash are one document moved."""
        vanished = sorted(p for p in stored if p not in disk and p not in skipped)
        new_by_hash: dict[str, list[str]] = {}
        for rel in sorted(disk):
            if rel not in stored:
                new_by_hash.setdefault(disk[rel].content_hash, []).append(rel)
        moves: list[tuple[int, str]] = []
        for old in vanished:
            doc_id, digest = stored[old].id, stored[old].content_hash
            candidates = new_by_hash.get(digest)
            if candidates:
                moves.append((doc_id, candidates.pop(0)))
        if not moves:
            return set(), set()
        with self.store.transaction() as conn:
            for doc_id, new in moves:
                cat, topic = _path_category_topic(new)
                conn.execute(
                    "UPDATE documents SET path = ?, category = ?, "
                    "topic = CASE WHEN topic IS NULL OR topic = ? THEN ? ELSE topic END, last_indexed = ? WHERE id = ?",
                    (new, cat, _old_topic(conn, doc_id), topic, _now(), doc_id),
                )
            self.store.bump_generation(conn)
        report.renamed += len(moves)
        moved = {new for _id, new in moves}
        # In static mode the file name feeds the breadcrumb: re-index the moved documents.
        return moved, (moved if contextual else set())

    def _write_document(
        self, doc: ParsedDocument, f: DiskFile, doc_id: int | None, contextual: bool, batch: _WriteBatch
    ) -> str:
        """One document's rows, inside a batch's transaction; its full-text rows go with the batch's."""
        with batch.document() as conn:
            return self._write_rows(doc, f, doc_id, contextual, conn, batch.add_fulltext, batch.now)

    def _write_rows(
        self,
        doc: ParsedDocument,
        f: DiskFile,
        doc_id: int | None,
        contextual: bool,
        conn: sqlean.Connection,
        fulltext: Callable[[tuple[int, str | None, str | None, str]], None],
        now: str,
    ) -> str:
        """One document's rows, its full-text rows handed to `fulltext`; the caller's transaction moves
        the generation once for all it writes."""
        tags = json.dumps(list(doc.tags), ensure_ascii=False)
        meta = (
            doc.title,
            doc.topic,
            doc.category,
            doc.depth,
            tags,
            doc.date,
            f.content_hash,
            now,
            f.size,
            f.mtime_ns,
        )
        reuse: dict[str, bytes] = {}
        if doc_id is not None:
            old = conn.execute(
                (
                    "SELECT id, heading, content, context_text, embedded FROM chunks WHERE "
                    "document_id = ? ORDER BY chunk_index"
                ),
                (doc_id,),
            ).fetchall()
            same = len(old) == len(doc.chunks) and all(
                o[1] == c.heading and o[2] == c.content and (not contextual or o[3] == c.context)
                for o, c in zip(old, doc.chunks, strict=True)
            )
            conn.execute(
                "UPDATE documents SET title=?, topic=?, category=?, depth=?, tags=?, date=?, content_hash=?, "
                "last_indexed=?, size_bytes=?, mtime_ns=? WHERE id = ?",
                (*meta, doc_id),
            )
            if same:
                conn.executemany(
                    "UPDATE chunks SET line = ?, part = ?, level = ?, quality_score = ? WHERE id = ?",
                    [(c.line, c.part, c.level, c.quality_score, o[0]) for o, c in zip(old, doc.chunks, strict=True)],
                )
                return "metadata"
            # Keep vectors of chunks whose embedding input did not change: editing one section of a
            # long note re-embeds that section only.
            embedded_ids = [o[0] for o in old if o[4]]
            if embedded_ids and self.store.has_vec_table(conn):
                inputs = {o[0]: embedding_input(o[2], o[3], contextual) for o in old}
                for cid, vec in self.store.embeddings_for(embedded_ids).items():
                    reuse[inputs[cid]] = to_blob(vec)
            self.store.delete_chunks_of(doc_id, conn)
            outcome = "updated"
        else:
            doc_id = conn.execute(
                "INSERT INTO documents(title, topic, category, depth, tags, date, content_hash, last_indexed, "
                "size_bytes, mtime_ns, path) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (*meta, doc.path),
            ).lastrowid
            outcome = "added"
        for c in doc.chunks:
            context = c.context if contextual else None
            blob = reuse.get(embedding_input(c.content, context, contextual))
            cid = conn.execute(
                "INSERT INTO chunks(document_id, chunk_index, heading, level, content, token_count, quality_score, "
                "context_text, line, part, embedded) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    doc_id,
                    c.index,
                    c.heading,
                    c.level,
                    c.content,
                    c.token_count,
                    c.quality_score,
                    context,
                    c.line,
                    c.part,
                    1 if blob is not None else 0,
                ),
            ).lastrowid
            fulltext((cid, c.heading, context, c.content))
            if blob is not None:
                conn.execute("INSERT INTO vec_chunks(chunk_id, embedding) VALUES (?, ?)", (cid, blob))
        return outcome

    def _delete_documents(self, doc_ids: list[int]) -> None:
        with self.store.transaction() as conn:
            for doc_id in doc_ids:
                self.store.delete_chunks_of(doc_id, conn)
                conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
            self.store.bump_generation(conn)

    # ------------------------------------------------------------ phase two

    def _embed_phase(
        self, report: _Counts, notify: ProgressFn, cancel: threading.Event | None, contextual: bool
    ) -> None:
        with contextlib.ExitStack() as run:  # what a long run opens in the embedder, let go at its end
            self._embed_pending(report, notify, cancel, contextual, run)

    def _embed_pending(
        self,
        report: _Counts,
        notify: ProgressFn,
        cancel: threading.Event | None,
        contextual: bool,
        run: contextlib.ExitStack,
    ) -> None:
        conn = self.store.conn()
        pending = pending_in_order(conn, contextual)  # most likely searched first (engine/index/throughput.py)
        if not pending:
            return
        embedder = self._load_embedder()
        with self.store.transaction() as wconn:
            self.store.ensure_vec_table(embedder.dim, wconn, self._passage_tokens)
        batch_size = self.config.embedding.batch_size
        total = len(pending)
        remaining = sum(p.work for p in pending)
        meter = RateMeter()
        notify(IndexProgress("embed", 0, total))
        if not getattr(embedder, "ready", True):  # built on first use (multilingual-e5-small-int8): say so
            built: Any = embedder  # an embedder with a build step (E5Int8Embedder), beyond the protocol
            notify(IndexProgress("building model", 0, 1, built.build_notice))
            built.prepare()
            notify(IndexProgress("building model", 1, 1, built.build_notice))
            notify(IndexProgress("embed", 0, total))
        if total > batch_size:
            _prepare_for_bulk(embedder, run)
        last = self.clock()
        done = 0
        for start in range(0, total, batch_size):
            if cancel is not None and cancel.is_set():
                raise IndexCancelled("indexing cancelled during embedding; run it again to resume")
            queued = pending[start : start + batch_size]
            ids = [p.id for p in queued]
            marks = ",".join("?" * len(ids))
            found = {
                r[0]: r
                for r in conn.execute(
                    f"SELECT id, content, context_text FROM chunks WHERE id IN ({marks}) AND embedded = 0", ids
                )
            }
            batch = [found[i] for i in ids if i in found]  # less: embedded or deleted since the queue was read
            if batch:
                vectors = embedder.embed_passages([embedding_input(r[1], r[2], contextual) for r in batch])
                with self.store.transaction() as wconn:
                    self._write_vectors(wconn, [(r[0], vec) for r, vec in zip(batch, vectors, strict=True)])
                report.embedded += len(batch)
            now = self.clock()
            batch_work = sum(p.work for p in queued if p.id in found)
            remaining -= sum(p.work for p in queued)
            if batch:
                meter.add(len(batch), batch_work, now - last)
                report.embed_batch_seconds += now - last
            last = now
            done += len(queued)
            notify(IndexProgress("embed", done, total, rate=meter.rate, eta_seconds=meter.eta(remaining)))

    def _write_vectors(self, conn: sqlean.Connection, vectors: list[tuple[int, np.ndarray]]) -> None:
        """Store each chunk's vector and mark it embedded, inside the caller's transaction."""
        if not vectors:
            return
        for cid, vec in vectors:
            conn.execute("DELETE FROM vec_chunks WHERE chunk_id = ?", (cid,))
            conn.execute("INSERT INTO vec_chunks(chunk_id, embedding) VALUES (?, ?)", (cid, to_blob(vec)))
        conn.executemany("UPDATE chunks SET embedded = 1 WHERE id = ?", [(cid,) for cid, _ in vectors])
        self.store.bump_generation(conn)

    def embed_beside(
        self,
        guard: Callable[[], contextlib.AbstractContextManager[object]],
        cancel: threading.Event | None,
        contextual: bool,
    ) -> int:
        """Embed the chunks still without a vector, batch by batch, beside updates of other notes: each
        batch's vectors are computed outside `guard` (the writer's lock), which is taken only to write
        them, so an update waits for one write, never for a big note's whole embedding. The queue is read
        again before every batch, so chunks written meanwhile join it in its order, and a chunk deleted
        or re-cut meanwhile is not written (chunk ids are never reused). Returns how many were embedded."""
        with contextlib.ExitStack() as run:  # what a burst opens in the embedder, let go when it is done
            return self._embed_beside(guard, cancel, contextual, run)

    def _embed_beside(
        self,
        guard: Callable[[], contextlib.AbstractContextManager[object]],
        cancel: threading.Event | None,
        contextual: bool,
        run: contextlib.ExitStack,
    ) -> int:
        done = 0
        batch_size = self.config.embedding.batch_size
        prepared = False
        while cancel is None or not cancel.is_set():
            conn = self.store.conn()
            queue = pending_in_order(conn, contextual)
            ids = [p.id for p in queue[:batch_size]]
            if not ids:
                return done
            if not prepared and len(queue) > batch_size:  # a burst of edits: as a long index run, prepare first
                prepared = True
                _prepare_for_bulk(self._load_embedder(), run)
            marks = ",".join("?" * len(ids))
            found = {
                r[0]: r
                for r in conn.execute(
                    f"SELECT id, content, context_text FROM chunks WHERE id IN ({marks}) AND embedded = 0", ids
                )
            }
            rows = [found[i] for i in ids if i in found]
            embedder = self._load_embedder()
            vectors = embedder.embed_passages([embedding_input(r[1], r[2], contextual) for r in rows])
            with guard(), self.store.transaction() as wconn:
                self.store.ensure_vec_table(embedder.dim, wconn, self._passage_tokens)
                still = {
                    r[0] for r in wconn.execute(f"SELECT id FROM chunks WHERE id IN ({marks}) AND embedded = 0", ids)
                }
                written = [(r[0], vec) for r, vec in zip(rows, vectors, strict=True) if r[0] in still]
                self._write_vectors(wconn, written)
            done += len(written)
        return done


def _prepare_for_bulk(embedder: object, run: contextlib.ExitStack) -> None:
    """Let an embedder build what speeds a long run (`prepare_for_bulk`, where it has one) and let it go
    when `run` closes (`end_bulk`)."""
    prepare, end = getattr(embedder, "prepare_for_bulk", None), getattr(embedder, "end_bulk", None)
    if callable(end):
        run.callback(end)
    if callable(prepare):
        prepare()


def _path_category_topic(rel: str) -> tuple[str | None, str | None]:
    parts = rel.split("/")
    return (parts[0] if len(parts) >= 2 else None, parts[1] if len(parts) >= 3 else None)


def _old_topic(conn: sqlite3.Connection, doc_id: int) -> str | None:
    """The path-derived topic the document had before the move (frontmatter topics are kept)."""
    row = conn.execute("SELECT path FROM documents WHERE id = ?", (doc_id,)).fetchone()
    return _path_category_topic(row[0])[1] if row else None
