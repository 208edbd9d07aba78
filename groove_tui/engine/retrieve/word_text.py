"""The word table's rows rebuilt and tokenized again by FTS5, for the pruned full-text leg
(engine/retrieve/fulltext.py): the frequency bm25 computes for a phrase in a row, which scores the rows a
phrase not taken may lift, and from which the phrase's row count n_i is read back out of FTS5's bm25 of
that row (`count(*)` would walk every match).

The word table (`fts_words`) is contentless, and its tokenizer (`porter unicode61 remove_diacritics 2`)
stems: Python never emulates it. The rows are rebuilt from the chunks table with `word_rows` itself (with
the Japanese analyzer the table records it was built with, or none) and FTS5 tokenizes them again, in a
private in-memory table with the same tokenizer (engine/index/word_terms.py), inside a transaction that is
rolled back; its `fts5vocab` 'instance' view says where each term stands (column, offset). A query phrase is
tokenized the same way, so a phrase is its sequence of terms, and an instance of it is a place where its
terms stand at consecutive offsets of one column, which is how FTS5 matches a phrase. The rebuilt rows'
token counts, column by column, must be the word table's own (its `_docsize` records), else the copy is not
what the table holds: `Inconsistent`, and the plain statement answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sqlean as sqlite3

from groove_tui.engine.analysis.bigram import cjk_runs, nfkc
from groove_tui.engine.analysis.japanese import JapaneseAnalyzer
from groove_tui.engine.analysis.words import words_version
from groove_tui.engine.index.phrase_stats import Inconsistent, varints
from groove_tui.engine.index.word_terms import COLUMNS, phrase_tokens, scratch_rows, word_rows

__all__ = ["TooCostly", "WordsText", "phrase_tokens"]

MAX_ANALYZED_CHARS = 20_000  # Japanese characters analyzed per search at most (Sudachi: ~1.6 ms per 1,000)


class TooCostly(Exception):
    """Rebuilding rows would cost more than the plain statement (much Japanese text to analyze)."""


@dataclass(frozen=True, slots=True)
class WordsText:
    """How the word table's rows are rebuilt from the chunks table: `word_rows` with this Japanese analyzer
    (None: without one). Used only while the table records that it was built this very way."""

    japanese: JapaneseAnalyzer | None

    @property
    def version(self) -> str:
        return words_version(self.japanese)


class WordRows:
    """One search's access to the word table's rows rebuilt from their chunks: per phrase (a sequence of
    terms), the frequency bm25 computes for it in each row, and each row's length."""

    def __init__(self, words: WordsText, weights: tuple[float, ...]) -> None:
        self.words = words
        self.weights = weights
        self.analyzed = 0  # Japanese characters analyzed so far in this search

    def frequencies(
        self, conn: sqlite3.Connection, table: str, rowids: Sequence[int], phrases: Sequence[tuple[str, ...]]
    ) -> tuple[list[np.ndarray], np.ndarray]:
        """(f of each phrase in each row, the rows' lengths D), both in the order of `rowids`: f is the
        column weight summed over the phrase's instances, added in column order as fts5Bm25Function adds
        it (instances come to it by position, column first)."""
        ids = list(rowids)
        chunks: dict[int, tuple[int, str | None, str | None, str | None]] = {}
        sizes: dict[int, bytes] = {}
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            for rid, heading, context, content, sz in conn.execute(
                f"SELECT c.id, c.heading, c.context_text, c.content, d.sz FROM chunks c "
                f"JOIN {table}_docsize d ON d.id = c.id WHERE c.id IN ({marks})",
                batch,
            ):
                chunks[rid] = (rid, heading, context, content)
                sizes[rid] = bytes(sz)
        if len(chunks) < len(ids):
            raise Inconsistent("a full-text row without its chunk")
        rows = [chunks[rid] for rid in ids]
        if self.words.japanese is not None:
            # Only Japanese runs reach the analyzer; the rest is NFKC and a regular expression.
            self.analyzed += sum(len(m.group()) for row in rows for t in row[1:] if t for m in cjk_runs(nfkc(t)))
            if self.analyzed > MAX_ANALYZED_CHARS:
                raise TooCostly
        copies = word_rows(rows, self.words.japanese)
        terms = sorted({t for p in phrases for t in p})
        where: dict[str, dict[int, set[tuple[int, int]]]] = {}
        with scratch_rows(copies) as scratch:
            for rid, sz in scratch.execute("SELECT id, sz FROM s_docsize"):
                if bytes(sz) != sizes[rid]:
                    raise Inconsistent("a word-table row is not its chunk's copy")
            for start in range(0, len(terms), 500):
                batch_terms = terms[start : start + 500]
                for term, doc, col, offset in scratch.execute(
                    f"SELECT term, doc, col, offset FROM v WHERE term IN ({','.join('?' * len(batch_terms))})",
                    batch_terms,
                ):
                    where.setdefault(term, {}).setdefault(doc, set()).add((COLUMNS[col], offset))
        index = {rid: i for i, rid in enumerate(ids)}
        out = []
        for tokens in phrases:
            counts = np.zeros((len(ids), len(COLUMNS)), dtype=np.int64)
            rest = [where.get(t, {}) for t in tokens[1:]]
            for doc, spots in where.get(tokens[0], {}).items():
                later = [r.get(doc, ()) for r in rest]
                for col, offset in spots:
                    if all((col, offset + k) in s for k, s in enumerate(later, start=1)):
                        counts[index[doc], col] += 1
            out.append(self._weighted(counts))
        lengths = np.array([float(sum(varints(sizes[rid]))) for rid in ids], dtype=np.float64)
        return out, lengths

    def _weighted(self, counts: np.ndarray) -> np.ndarray:
        if all(w == int(w) and abs(w) < 2**20 for w in self.weights):
            # Whole-number weights: every partial sum is an integer, exact in any order.
            weighted: np.ndarray = (counts.astype(np.float64) * np.asarray(self.weights, dtype=np.float64)).sum(axis=1)
            return weighted
        f = np.zeros(len(counts), dtype=np.float64)
        for i, row in enumerate(counts.tolist()):
            acc = 0.0
            for n, w in zip(row, self.weights, strict=True):
                for _ in range(n):
                    acc += w
            f[i] = acc
        return f
