"""Named sections: a query that is a section's heading or a note's title asks for that section, so it is
looked up in the index and earns a name term in fusion (`fusion.fuse`; `heading_key` says how headings,
titles and queries compare)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import sqlean as sqlite3

from groove_tui.engine.analysis.bigram import segment
from groove_tui.engine.analysis.names import ARTICLES, HEADING, OPENING_H1, heading_key, opening_h1
from groove_tui.engine.analysis.query import ParsedQuery, fts_phrase
from groove_tui.engine.index.store import CandidateRow, Store
from groove_tui.engine.retrieve.filters import DocFilter
from groove_tui.settings.config import Config

log = logging.getLogger("groove_tui.search")


_KINDS = {HEADING: "heading", OPENING_H1: "h1"}  # named_keys' kinds as the lookups below name them

# Rows a lookup reads at most: of the heading/breadcrumb phrase, or of a key many sections share.
NAMED_SCAN_MAX = 2000


def _section(row: CandidateRow) -> tuple[int, int]:
    """A section's identity: its document and the chunk_index of its part 0."""
    return row.document_id, row.chunk_index - row.part


def look_up_named(
    store: Store,
    config: Config,
    pq: ParsedQuery,
    doc_filter: DocFilter,
    excluded: frozenset[int],
    accept: Callable[[CandidateRow | None, DocFilter], bool],
) -> tuple[tuple[int, CandidateRow], ...]:
    """Chunks the query names, as (0 for a heading or 1 for a title, row): a section whose heading
    equals the query, or the first section of a note whose title does (its frontmatter title, else the
    H1 it opens with), as `heading_key` compares them. A user who types a heading asks for that
    section; ranking it below passages that merely mention the words is the one answer they know to be
    wrong. The chunks are looked up in the index, so a section no leg ranked high enough is still
    found: the lookup is a retrieval leg of its own. Pure leg runs (`legs` vector or fts) rank by their
    leg alone."""
    wanted = heading_key(pq.positive_text)
    if not wanted:
        return ()
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in pq.positive_text).split())  # FTS5 ends at NUL
    if not text:
        return ()
    conn = store.conn()
    found: list[tuple[str, int]] = []
    lookups: list[tuple[str, str, str | tuple[str, ...]]] = []  # (kind, statement, arguments): candidates,
    # each checked exactly below
    if store.names_ready(conn):
        # The keys of every heading and opening H1, kept by the index: one indexed read, where the phrase
        # statements below read the postings of every trigram of the query (tens of ms at 100k chunks).
        statement = f"SELECT chunk_id, kind FROM named_keys WHERE key = ? LIMIT {NAMED_SCAN_MAX}"
        found += [(_KINDS[kind], cid) for cid, kind in conn.execute(statement, (wanted,))]
    else:
        if config.search.cjk_bigram and store.bigram_ready():
            words = (segment(text) or "").split()
            if words:
                lookups.append(
                    (
                        "heading",
                        f"SELECT rowid FROM fts_bigram WHERE fts_bigram MATCH ? LIMIT {NAMED_SCAN_MAX}",
                        "{heading} : " + fts_phrase(" ".join(words)),
                    )
                )
        elif len(text) >= 3:
            lookups.append(
                (
                    "heading",
                    f"SELECT rowid FROM fts_chunks WHERE fts_chunks MATCH ? LIMIT {NAMED_SCAN_MAX}",
                    "{heading} : " + fts_phrase(text),
                )
            )
        # An H1 stays in its chunk's text (groove's chunking): "# <query>" as a trigram phrase finds it,
        # with or without the article heading_key ignores ("# The parent retriever").
        for opening in ("# ", "# the "):
            lookups.append(
                (
                    "h1",
                    f"SELECT rowid FROM fts_chunks WHERE fts_chunks MATCH ? LIMIT {NAMED_SCAN_MAX}",
                    "{content} : " + fts_phrase(opening + text),
                )
            )
    titles = (text, *(f"{article} {text}" for article in sorted(ARTICLES)))
    lookups.append(
        (
            "title",
            "SELECT c.id FROM documents d JOIN chunks c ON c.document_id = d.id WHERE "
            f"d.title COLLATE NOCASE IN ({','.join('?' * len(titles))}) LIMIT {NAMED_SCAN_MAX}",
            titles,
        )
    )
    for kind, sql, arg in lookups:
        try:
            found += [(kind, r[0]) for r in conn.execute(sql, arg if isinstance(arg, tuple) else (arg,))]
        except sqlite3.OperationalError as exc:  # a lookup that cannot run names nothing; the search goes on
            if getattr(exc, "sqlite_errorname", None) == "SQLITE_INTERRUPT":
                raise  # the search was cancelled: nothing is looked up, and nothing may be remembered
            log.warning("named-section lookup failed for %r: %s", pq.positive_text, exc)
    if not found:
        return ()
    rows = store.rows_by_ids(list({cid for _, cid in found}))
    best: dict[tuple[int, int], tuple[int, CandidateRow]] = {}  # per section or note: (kind order, first part)
    for kind, cid in found:
        row = rows.get(cid)
        if row is None or cid in excluded or not accept(row, doc_filter):
            continue
        if kind == "heading" and heading_key(row.heading or "") == wanted:
            key, rank = _section(row), 0
        elif (kind == "h1" and heading_key(opening_h1(row.content)) == wanted) or (
            kind == "title" and heading_key(row.title or "") == wanted
        ):
            key, rank = (row.document_id, -1), 1
        else:
            continue
        kept = best.get(key)
        if kept is None or row.chunk_index < kept[1].chunk_index:
            best[key] = (rank, row)
    if not best:
        return ()
    return tuple(best.values())
