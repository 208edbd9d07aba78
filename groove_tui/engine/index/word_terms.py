"""The word table's terms as FTS5 itself makes them: a private in-memory FTS5 table with the word table's
columns and tokenizer (`porter unicode61 remove_diacritics 2`), its `fts5vocab` 'instance' view saying
which term stands where (column, offset). Porter stemming is never imitated in Python.

Used for what the word table holds in a row (the stored statistics follow a chunk's edit with its terms'
counts, engine/index/phrase_stats.py; the pruned leg scores rebuilt rows, engine/retrieve/word_text.py),
and for the terms of a query phrase. Every use inserts inside a transaction that is rolled back, so the
scratch table is empty between uses.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlean as sqlite3

from groove_tui.engine.analysis.japanese import JapaneseAnalyzer
from groove_tui.engine.analysis.words import WORDS_TOKENIZE, index_words

__all__ = ["COLUMNS", "column_counts", "phrase_tokens", "scratch_rows", "word_rows"]

COLUMNS = {"heading": 0, "context": 1, "content": 2}  # the word table's columns, in bm25's weight order
TOKENS_KEPT = 20_000  # query phrases whose terms are remembered


def word_rows(rows: Sequence[tuple[Any, ...]], japanese: JapaneseAnalyzer | None = None) -> list[tuple[Any, ...]]:
    """The values a chunk's row holds in fts_words, from (id, heading, context_text, content)."""
    return [
        (cid, index_words(h, japanese), index_words(ctx, japanese), index_words(body, japanese))
        for cid, h, ctx, body in rows
    ]


class _Scratch:
    """An empty in-memory FTS5 table with the word table's columns and tokenizer, and its instances."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        self.conn.execute(
            f"CREATE VIRTUAL TABLE s USING fts5(heading, context, content, content='', tokenize='{WORDS_TOKENIZE}')"
        )
        self.conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(s, instance)")


_LOCAL = threading.local()  # one scratch table per thread (a connection serves one thread)
_TOKENS: OrderedDict[str, tuple[str, ...] | None] = OrderedDict()
_TOKENS_LOCK = threading.Lock()


@contextmanager
def scratch_rows(rows: Sequence[tuple[Any, ...]]) -> Iterator[sqlite3.Connection]:
    """The scratch table holding `rows` (rowid, heading, context, content), as the word table would hold
    them: its tables `s` (and `s_docsize`) and instance view `v`, for as long as the block runs."""
    scratch: _Scratch | None = getattr(_LOCAL, "scratch", None)
    if scratch is None:
        scratch = _LOCAL.scratch = _Scratch()
    conn = scratch.conn
    conn.execute("BEGIN")
    try:
        conn.executemany("INSERT INTO s(rowid, heading, context, content) VALUES (?, ?, ?, ?)", rows)
        yield conn
    finally:
        conn.execute("ROLLBACK")


def column_counts(rows: Sequence[tuple[Any, ...]]) -> dict[int, dict[str, list[int]]]:
    """Per row of `rows` (rowid, heading, context, content: the word table's values), each term it holds
    and its instances per column."""
    out: dict[int, dict[str, list[int]]] = {}
    with scratch_rows(rows) as conn:
        for doc, term, col, n in conn.execute("SELECT doc, term, col, count(*) FROM v GROUP BY doc, term, col"):
            out.setdefault(doc, {}).setdefault(term, [0, 0, 0])[COLUMNS[col]] = n
    return out


def phrase_tokens(text: str) -> tuple[str, ...] | None:
    """The terms FTS5 makes of the quoted string `text` on the word table, in order; None when it makes
    none (FTS5's handling of an empty phrase is not modelled)."""
    with _TOKENS_LOCK:
        if text in _TOKENS:
            _TOKENS.move_to_end(text)
            return _TOKENS[text]
    with scratch_rows([(1, None, None, text)]) as conn:
        found = sorted((offset, term) for term, offset in conn.execute("SELECT term, offset FROM v"))
    tokens: tuple[str, ...] | None = tuple(term for _o, term in found)
    if not tokens or [o for o, _t in found] != list(range(len(found))):
        tokens = None  # (the tokenizer puts one term at each position: anything else is not modelled)
    with _TOKENS_LOCK:
        _TOKENS[text] = tokens
        while len(_TOKENS) > TOKENS_KEPT:
            _TOKENS.popitem(last=False)
    return tokens
