"""Exact top-k for the full-text leg without scoring every matching row (summed lists, or MaxScore over FTS5).

The plain statement `SELECT rowid, bm25(t, wh, wc, wb) AS s FROM t WHERE t MATCH ? ORDER BY s LIMIT ?`
makes FTS5 score every row that matches any phrase; groove's compiler turns every 3+-letter word into a
phrase, so "the" alone matches nearly the whole table. `PrunedFulltext.ranked` returns **exactly** that
statement's rows — ids, scores to the last bit, tie order — while computing full scores only for rows that
could reach the k-th place.

Why it is exact (fts5_aux.c, SQLite 3.50, `fts5Bm25Function`):

    score(d) = -( Σ_i idf_i · (f_i·(k1+1)) / (f_i + k1·(1 - b + b·D/avgdl)) ),  k1 = 1.2, b = 0.75

summed left to right over the expression's phrases i, where idf_i = log((N - n_i + 0.5) / (n_i + 0.5)),
clamped to 1e-6 when ≤ 0 (n_i = rows matching phrase i alone, N = rows in the table), f_i = the sum of the
column weights over phrase i's instances in d, D = d's token count, avgdl = the table's tokens / N.
A phrase absent from d adds exactly +0.0 (NOT phrases are always absent from a matching row), so

* a row's score is the same left-to-right sum of the same terms. A term is either read from FTS5's bm25
  of that phrase alone (its `0.0 + idf_i·(…)` from the same n_i, N, avgdl, f_i and D: the same double,
  negated exactly), or `tf_terms` evaluates the expression above in the same order in IEEE doubles
  (numpy or Python floats, no fused multiply-add) from the same integers — N and the token total from the
  table's averages record, n_i counted by FTS5, D from the `_docsize` record, f_i from the row's text
  folded as the trigram tokenizer folds it (each code point's folding is asked of SQLite: `TrigramFold`).
  Either way the result is bit-identical; `calibrated()` checks that on this platform before the path
  is used (the word table's path too: its f_i from the row's copy tokenized by FTS5, below).
* every term is < (k1+1)·idf_i, so a row that matches none of the phrases in a set E scores at most
  Σ_{i∉E} (k1+1)·idf_i. Phrases are taken rarest first (largest bound), each with its impact list: the
  rows it matches and the term it adds to each, read from FTS5's bm25 of the phrase alone (minus the term
  itself: same idf, frequency and length). A row's taken terms summed are a lower bound of its score's
  magnitude, so θ, the k-th best such sum, is no more than the final k-th score. Once the bound of the
  phrases not yet taken is below θ, no row outside the taken phrases' rows can reach the final k-th
  score or tie it; inside them, a row whose taken sum plus that bound is below θ cannot either. Every
  other row is scored exactly (taken terms from the lists, the rest from the text, summed in expression
  order), and the result is sorted as the statement sorts: score, then rowid (SQLite's sorter keeps
  scan order, which is rowid order, for ties — checked by the tests). Asked for the ties too (`ties`), it
  returns every further row tying the limit-th score as well: each is within reach of θ, so already scored.

A table under MIN_ROWS rows takes the short way (`_summed`): every positive phrase's list (FTS5's bm25 of
the phrase alone, one short statement, kept across searches) is added into one array in expression order,
the NOT side's rows are cleared, and the rows are sorted as the statement sorts them. No tokenizer is
imitated and no row is read: each term is FTS5's own double, so the sums are the statement's bit for bit
(the argument above), whatever the phrase. A session's common phrases are fetched once; after that a
query costs one statement per phrase it has not met and a few array additions. The lists are kept by the
full-text tables' own write counter (`fulltext_generation`), so vectors landing during phase two keep them.

Bounds are compared with a relative margin (1e-9), far wider than the rounding of a sum of ≤ 64 terms, so
float rounding can only make the pruning more conservative. The bigram table's tokenizer (unicode61 over
bigram.segment's copy) is not emulated, so there every phrase is taken and every term comes from FTS5's
lists: still exact, pruned only in that FTS5 never scores the full expression on every match.

The word table (`porter unicode61 remove_diacritics 2` over `word_rows`' copy) is pruned the same way,
and Porter stemming is never imitated: a phrase is keyed by its terms as FTS5 makes them (word_text.py
tokenizes it in a private in-memory table with the same tokenizer), so "running" and "runs" share one
key, and a row's term for a phrase not taken comes from the row's copy rebuilt from the chunks table by
`word_rows` itself (with the Japanese analyzer `ranked` is given, only while the table records that it
was built by it) and tokenized again by FTS5 there: f is the column weight summed over the places where
the phrase's terms stand at consecutive offsets of one column, as FTS5 matches a phrase, D the row's
`_docsize` record (a rebuilt row whose token counts are not the table's is `Inconsistent`). The n_i of a
phrase without a list at hand is read back from FTS5's bm25 of one matching row with q from its rebuilt
copy, as on the trigram table.

When the rows cannot be rebuilt (the table records another analyzer, or a search would analyze more
Japanese text than `word_text.MAX_ANALYZED_CHARS`) every score comes from FTS5 itself (`_ranked_by_fts5`):
the plain statement with a filter FTS5 cannot use (`AND +rowid IN (SELECT rowid … MATCH <the rarest
phrases>)`): the walk is the same, bm25 runs only for the rows that pass, and it reads N, avgdl and every
n_i from the whole table, f and D from the row — the very double the plain statement gives that row,
sorted the same way (score, then rowid). θ, the limit-th best score of the rows holding one of the
rarest phrases (FIRST_ROWS rows), is at most the final limit-th score; a row holding none of the phrases
order[:j] scores at most rest[j], the bounds of the others (with the margin), so once rest[j] < θ the
rows holding one of order[:j] hold the final list, ties included, and the same filtered statement over
them is the answer; n_i is counted (`count(*)`).

Whenever the shape of the query or the cost makes this pointless or unsafe — an expression that is not an OR
of phrases (optionally `(…) NOT (…)`), a zero column weight or a large limit (both ways); above MIN_ROWS
rows, a trigram phrase that folds to under 3 characters, a word phrase FTS5 makes no term of, too many rows
to score,
a transaction open on the connection — `ranked` returns None and the caller runs the plain statement.

Phrase statistics (n_i and the impact lists) are cached per index generation (bounded by entries), by the
phrase's key: typing a query re-uses every phrase but the one being typed, and common words recur across
queries. The index database also stores them for the corpus' common words on both tables
(`store_common_phrases`, run by the indexer; table fts_phrase_stats; on the word table its common terms), so
a new session starts with the lists that cost most to fetch, and the indexer keeps them current edit by edit
(`follow_edits`). The stored set is read only while it is FTS5's answer in the search's snapshot (no edit
waits in its journal: `stored_epoch`). A list's terms are kept as the frequencies they come from where
recomputing them (`tf_terms`, from this snapshot's N, token total and row count and the stored lengths)
gives FTS5's doubles bit for bit, which whole-number column weights guarantee; else as the doubles, asked of
FTS5 again after every edit. Lists at hand are taken to the end: a taken phrase's terms are FTS5's, so rows
need their text only for the phrases left.

On the trigram table a phrase the stored set has no list for is asked of the stored lists by token
(engine/index/token_lists.py) before FTS5: with whole-number weights its rows and f come from the lists
of the tokens that hold it, integers, and its terms from f as a stored list's do — the same doubles —
without FTS5's walk of its trigrams' positions. Fetched at once for every such phrase (cheap, like a
stored one), so a phrase left untaken is rarely scored from text.
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import sqlean as sqlite3

from groove_tui.engine.analysis.words import WORDS_TOKENIZE
from groove_tui.engine.index.phrase_stats import (
    FOLD,
    K1,
    LENGTHS,
    MIN_ROWS,
    STORED_TABLES,
    TOKEN_TABLE,
    TOKENS,
    TRIGRAM_TOKENIZE,
    VOCAB,
    B,
    Inconsistent,
    idf_of,
    instances,
    self_overlapping,
    stored_epoch,
    tf_terms,
    unpack_rowids,
    unpack_terms,
    varints,
    weights_key,
)
from groove_tui.engine.index.store import FULLTEXT_GENERATION
from groove_tui.engine.index.token_lists import TokenVocab, listable
from groove_tui.engine.index.word_terms import word_rows as word_table_rows
from groove_tui.engine.retrieve.word_text import TooCostly, WordRows, WordsText, phrase_tokens

__all__ = ["PrunedFulltext", "WordsText", "calibrated", "parse_or_expression", "plain_ranked"]

MARGIN = 1e-9  # relative slack on every bound comparison (see the module docstring)
MAX_LIMIT = 2000  # beyond this the statement's own sort is as cheap as anything here
MAX_SCORED = 6000  # rows scored exactly before giving up on pruning (then the plain statement runs)
MAX_PHRASES = 64
LIST_CACHE_ROWS = 4_000_000  # impact-list entries kept across searches (16 bytes each)
TIGHT = 0.05  # past correctness, cached phrases are taken until the rest's bound is under 5% of θ
EAGER_CHARS = 4  # an unknown phrase this long has its list fetched at once (shorter: common substrings)
TEXT_ROWS = 400  # past correctness, an uncached phrase is taken while more rows than this are in reach
FIRST_ROWS = 8000  # the word table: rows of its rarest phrases ranked first, to learn θ (measured at 100k)
TABLES = ("fts_chunks", "fts_bigram", "fts_words")
MAX_TOKENS = 2000  # a phrase held by more tokens than this is asked of FTS5 (a common substring: "ing")
MAX_TOKEN_ENTRIES = 200_000  # ... and one whose tokens' lists hold more rows than this


_PHRASE = r'"(?:[^"]|"")*"(?: \*)?'  # a quoted phrase, or (bigram.py) a prefix phrase `"都" *`
_OR_LIST = re.compile(rf"{_PHRASE}(?: OR {_PHRASE})*")
_PHRASE_RE = re.compile(_PHRASE)


@dataclass(frozen=True, slots=True)
class OrExpression:
    """`"a" OR "b" …`, optionally `(…) NOT (…)`: the shapes query.py and bigram.py compile. Each phrase
    is kept as written (quoted, with its ` *` if a prefix), so it can be matched on its own."""

    positive: tuple[str, ...]
    negative: tuple[str, ...]


def unquote(term: str) -> str | None:
    """The text of a quoted phrase (None for a prefix phrase)."""
    return None if term.endswith("*") else term[1:-1].replace('""', '"')


def parse_or_expression(expr: str) -> OrExpression | None:
    """The phrases of an expression of exactly the form the compilers build, else None (no pruning)."""
    if _OR_LIST.fullmatch(expr):
        return OrExpression(tuple(_PHRASE_RE.findall(expr)), ())
    if expr.startswith("(") and expr.endswith(")") and ") NOT (" in expr:
        # The positive side cannot contain ") NOT (" outside a phrase: try every split point.
        for m in re.finditer(r"\) NOT \(", expr):
            pos, neg = expr[1 : m.start()], expr[m.end() : -1]
            if _OR_LIST.fullmatch(pos) and _OR_LIST.fullmatch(neg):
                return OrExpression(tuple(_PHRASE_RE.findall(pos)), tuple(_PHRASE_RE.findall(neg)))
    return None


class _LRU:
    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self._data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any, size: int = 1) -> None:
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self.used -= old[1]
            self._data[key] = (value, size)
            self.used += size
            while self.used > self.budget and len(self._data) > 1:
                _k, (_v, s) = self._data.popitem(last=False)
                self.used -= s

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.used = 0


@dataclass(frozen=True, slots=True)
class _Phrase:
    slot: int  # position in the expression: the order of bm25's sum
    raw: str  # as written in the expression (quoted)
    key: str  # what the caches know it by: its folded text (trigram table), its terms (word table), else `raw`
    text: str | None  # folded as the trigram tokenizer folds it; None: not scored from folded text
    terms: tuple[str, ...] | None  # the word table's terms, scored from rows rebuilt by WordRows; else None
    idf: float
    bound: float  # above every term this phrase can add to a score: (k1 + 1)·idf, plus the margin
    overlaps: re.Pattern[str] | None  # for a phrase that can overlap itself ("aaa"): counts every instance

    @property
    def scorable(self) -> bool:
        """Whether a row's term for this phrase can be computed from the row itself (else only FTS5's
        list gives it)."""
        return self.text is not None or self.terms is not None


class PrunedFulltext:
    """Exact top-k of a full-text table's bm25 statement (see the module docstring). One per Searcher;
    thread-safe (its caches lock; each call uses the caller's connection)."""

    def __init__(self) -> None:
        self.df_cache = _LRU(100_000)  # (table, phrase key, generation) -> (idf, rows matching the phrase)
        self.impacts_cache = _LRU(LIST_CACHE_ROWS)  # (table, phrase key, weights, generation) -> (rowids, terms)
        self.excluded_cache = _LRU(LIST_CACHE_ROWS // 4)  # (table, NOT side, generation) -> rowids
        # left: phrases a row need not hold to reach the final list (never taken, never walked for);
        # statements: the word table's filtered bm25 statements
        self.stats = {
            "pruned": 0,
            "summed": 0,
            "fallback": 0,
            "scored": 0,
            "stored_lists": 0,
            "left": 0,
            "statements": 0,
            "token_lists": 0,
        }
        self.min_rows: int | None = None  # None: MIN_ROWS (the calibration prunes its small table)
        self.check_platform = True  # False only for the calibration itself, which is that check

    def clear(self) -> None:
        for cache in (self.df_cache, self.impacts_cache, self.excluded_cache):
            cache.clear()

    # ------------------------------------------------------------ entry

    def ranked(
        self,
        conn: sqlite3.Connection,
        table: str,
        expr: str,
        weights: Sequence[float],
        limit: int,
        generation: int | None = None,
        words: WordsText | None = None,
        *,
        ties: bool = False,
    ) -> list[tuple[int, float]] | None:
        """The plain statement's first `limit` rows, or None when the caller should run it instead.
        `generation` keys the caches; None reads index_meta's, inside the snapshot the statements see.
        `words`: how the word table's rows are rebuilt from the chunks (used only while the table records
        that it was built that way); without it every term of the word table comes from FTS5's lists.
        `ties`: every further row that ties the last one too (`plain_ranked`'s rows with `ties`)."""
        if table not in TABLES or not 0 < limit <= MAX_LIMIT or min(weights) <= 0:
            return None  # (a zero weight lets a matching row score 0, which the pool below leaves out)
        parsed = parse_or_expression(expr)
        if parsed is None or len(parsed.positive) + len(parsed.negative) > MAX_PHRASES:
            return None
        if conn.in_transaction:
            return None  # FTS5 keeps a transaction's pending totals in memory, not in the records read here
        floats = tuple(float(w) for w in weights)
        if self.sums_lists(conn, table):
            summed = self._summed(conn, table, parsed, floats, limit, generation, ties)
            self.stats["summed" if summed is not None else "fallback"] += 1
            return summed
        folded: list[str | None] = [None] * len(parsed.positive)  # None: terms from FTS5 only, never text
        if table == "fts_chunks":
            texts = [unquote(p) for p in parsed.positive]
            if any(t is None for t in texts):
                return None
            folded_texts = [FOLD.fold(t) for t in texts if t is not None]
            if any(len(p) < 3 for p in folded_texts):
                return None  # a phrase of < 3 characters has no trigram: FTS5's rules for it are not emulated
            folded = list(folded_texts)
        tokens: list[tuple[str, ...] | None] = [None] * len(parsed.positive)
        if table == "fts_words":
            for i, phrase in enumerate(parsed.positive):
                text = unquote(phrase)
                if text is not None:  # (a prefix phrase is always taken: its terms come from FTS5)
                    tokens[i] = phrase_tokens(text)
                    if tokens[i] is None:
                        return None  # no term at all: FTS5's rules for an empty phrase are not emulated
        conn.execute("BEGIN")  # one snapshot for every statement below, as the plain statement has
        out: list[tuple[int, float]] | None
        try:
            if generation is None:
                generation = _generation(conn)
            rows = None
            if words is not None and table == "fts_words":
                row = conn.execute("SELECT value FROM index_meta WHERE key = 'words_version'").fetchone()
                # The rows can be rebuilt only as the table recorded (in this snapshot) it built them.
                rows = WordRows(words, floats) if row is not None and row[0] == words.version else None
            try:
                out = self._ranked(conn, table, parsed, folded, floats, limit, generation, tokens, rows, ties)
            except TooCostly:  # (much Japanese text to analyze) every score FTS5's own, rows never rebuilt
                out = self._ranked(conn, table, parsed, folded, floats, limit, generation, tokens, None, ties)
        except Inconsistent:
            out = None
        finally:
            if conn.in_transaction:  # an interrupted statement may have ended it already
                conn.execute("COMMIT")
        self.stats["pruned" if out is not None else "fallback"] += 1
        return out

    # ------------------------------------------------------------ small tables: every list, summed

    def sums_lists(self, conn: sqlite3.Connection, table: str) -> bool:
        """Whether `ranked` answers from the phrases' kept lists summed (`_summed`): a table under the rows
        MaxScore pays off at (its averages record, one read), where the work is Python's, not SQLite's."""
        n_rows, _ = self._totals(conn, table)
        return n_rows < (MIN_ROWS if self.min_rows is None else self.min_rows)

    def token_lists_at_hand(self, conn: sqlite3.Connection, weights: Sequence[float]) -> bool:
        """Whether the trigram table's lists by token answer its phrases now (stored for these weights,
        readable in this state): its leg is then Python's work, not SQLite's."""
        epoch = stored_epoch(conn)
        return epoch is not None and self._vocab(conn, tuple(float(w) for w in weights), epoch) is not None

    def _summed(
        self,
        conn: sqlite3.Connection,
        table: str,
        parsed: OrExpression,
        weights: tuple[float, ...],
        limit: int,
        generation: int | None,
        ties: bool,
    ) -> list[tuple[int, float]] | None:
        """The plain statement's rows from every positive phrase's impact list, summed in expression order:
        each term is FTS5's own double (its bm25 of the phrase alone), so every matching row's score is
        the statement's bit for bit, and no row is read or scored from its text. A list is FTS5's answer
        for one phrase, kept across searches per generation: once a session's common phrases are at hand,
        a query costs one short statement per new phrase and a few array additions."""
        conn.execute("BEGIN")  # one snapshot for every list, as the plain statement has
        try:
            # Keyed by the full-text tables' writes, not the index's: vectors landing keep every list.
            gen = _fulltext_generation(conn) if generation is None else ("given", generation)
            size = self._max_rowid(conn, gen) + 1
            acc = np.zeros(size, dtype=np.float64)
            for raw in parsed.positive:  # a phrase is keyed as written: no tokenizer is imitated here
                rows, terms = self._impacts(conn, table, raw, raw, weights, gen)
                if len(rows) and rows[-1] >= size:
                    return None  # rows added since the size was read: cannot happen in one snapshot
                acc[rows] += terms  # (+0.0 where a phrase is absent, as bm25 adds it)
            if parsed.negative:
                excluded = self._excluded(conn, table, " OR ".join(parsed.negative), gen)
                acc[excluded[excluded < size]] = 0.0
        finally:
            if conn.in_transaction:  # an interrupted statement may have ended it already
                conn.execute("COMMIT")
        matched = np.flatnonzero(acc)  # every term of a matching row is > 0
        scores = -acc[matched]
        if len(matched) > limit:  # every row scoring at most the limit-th score: the rows kept and ties
            kth = np.partition(scores, limit - 1)[limit - 1]
            keep = scores <= kth
            matched, scores = matched[keep], scores[keep]
        order = np.lexsort((matched, scores))  # score, then rowid: SQLite's order for ties
        return _cut(list(zip(matched[order].tolist(), scores[order].tolist(), strict=True)), limit, ties)

    # ------------------------------------------------------------ the algorithm

    def _ranked(
        self,
        conn: sqlite3.Connection,
        table: str,
        parsed: OrExpression,
        folded: list[str | None],
        weights: tuple[float, ...],
        limit: int,
        gen: int,
        tokens: list[tuple[str, ...] | None],
        word_rows: WordRows | None,
        ties: bool = False,
    ) -> list[tuple[int, float]] | None:
        n_rows, n_tokens = self._totals(conn, table)
        if n_rows == 0:
            return []
        if n_rows < (MIN_ROWS if self.min_rows is None else self.min_rows):
            return None  # small tables: the plain statement is as fast, and faster for a query's first search
        if self.check_platform and not calibrated():  # asked here: a KB too small to prune never pays for it
            return None
        avgdl = float(n_tokens) / float(n_rows)
        # ("" is the row marking a finished set: only then is a phrase without statistics likely rare.)
        # The stored set, when it is FTS5's answer in this snapshot (its epoch keys what is cached of it).
        # Phrases are keyed by their folded text (trigram table), by their terms as FTS5 makes them (word
        # table: "running" and "runs" are both "run"), else as written.
        keys = [
            text if text is not None else " ".join(terms) if terms is not None else raw
            for raw, text, terms in zip(parsed.positive, folded, tokens, strict=True)
        ]
        epoch = stored_epoch(conn) if table in STORED_TABLES else None
        single_terms = {t for terms in tokens if terms is not None for t in terms}
        stored = {} if epoch is None else self._stored(conn, table, weights, epoch, {"", *keys, *single_terms})
        phrases = []
        groups = _column_groups(weights)
        sizes: dict[str, int] = {}
        for slot, (raw, text, phrase_terms, key) in enumerate(zip(parsed.positive, folded, tokens, keys, strict=True)):
            overlaps = re.compile(f"(?={re.escape(text)})") if text and self_overlapping(text) else None
            # FTS5 tokenizes a query phrase with the table's own tokenizer, so two phrases with one key
            # ("Cells", "cells") match the same rows with the same frequencies: the same row count and
            # the same terms, bit for bit.
            scored_terms = phrase_terms if word_rows is not None else None
            rare = (
                len(text) >= EAGER_CHARS
                if text is not None
                else scored_terms is not None and not all(t in stored for t in scored_terms)
            )
            # A trigram phrase's list from the tokens that hold it is cheap, like a stored one: at hand now.
            by_tokens = (
                text is not None
                and epoch is not None
                and key not in stored
                and self._token_impacts(conn, key, weights, gen, n_rows, avgdl, epoch) is not None
            )
            if (
                not by_tokens
                and rare
                and "" in stored
                and key not in stored
                and self.df_cache.get((table, key, gen)) is None
            ):
                # A phrase the index holds no statistics for is rare (the common ones are stored; on the
                # word table a phrase is rare when one of its terms is), and a rare phrase is taken
                # first: its list, fetched now, also gives its row count (the rows FTS5 returns for it
                # are the rows its bm25 counts), so its idf costs no walk of its own.
                self._impacts(conn, table, raw, key, weights, gen, stored, n_rows, avgdl, epoch)
            idf, sizes[raw] = self._idf(
                conn,
                table,
                raw,
                key,
                text,
                overlaps,
                weights,
                groups,
                gen,
                n_rows,
                avgdl,
                stored,
                scored_terms,
                word_rows,
            )
            if idf is None:
                continue  # matches nothing
            bound = (K1 + 1.0) * idf * (1.0 + MARGIN)
            phrases.append(_Phrase(slot, raw, key, text, scored_terms, idf, bound, overlaps))
        if not phrases:
            return []
        if table == "fts_words" and word_rows is None:
            return self._ranked_by_fts5(conn, table, parsed, phrases, sizes, weights, limit, ties)
        excluded = None
        if parsed.negative:
            excluded = self._excluded(conn, table, " OR ".join(parsed.negative), gen)

        # Rarest first. rest[j] bounds what the phrases order[j:] can add to any row's score.
        order = sorted(phrases, key=lambda p: (-p.bound, p.slot))
        rest = [0.0] * (len(order) + 1)
        for j in range(len(order) - 1, -1, -1):
            rest[j] = (rest[j + 1] + order[j].bound) * (1.0 + MARGIN)

        # The pool: rows matching a phrase taken so far, each with the sum of those phrases' terms (a
        # lower bound of its score's magnitude: every term is >= 0). θ, the limit-th best of these sums,
        # is then no more than the final limit-th score; once the phrases not taken cannot add up to θ,
        # no row outside the pool can reach the final list or tie its last row. Past that point a phrase
        # whose list is cached is still taken while the bound of the rest is loose (it is free, and every
        # row left within reach of θ must be scored from its text).
        size = self._max_rowid(conn, gen) + 1
        acc = np.zeros(size, dtype=np.float64)
        taken: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        scorer = _Scorer(conn, table, phrases, weights, avgdl, taken, word_rows)
        theta = 0.0
        # θ from the pool's sums is brought up to date only where it is read: a run of cheap lists is
        # taken whatever it is, and the sums only grow, so the k-th of the latest sums is the θ each
        # update on the way would have reached (a partition of every row in the pool per list, at 100k).
        stale = False

        def fresh_theta() -> float:
            nonlocal theta, stale
            if stale:
                sums = acc[acc > 0.0]  # (partitioning the zeros too is many times slower)
                if len(sums) >= limit:
                    theta = max(theta, _kth(sums, limit))
                stale = False
            return theta

        j = 0
        for j, phrase in enumerate(order):
            cached = self.impacts_cache.get((table, phrase.key, weights, gen))
            # A list in memory or in the index database costs little to take, and a phrase taken is
            # one no row has to be scored for from its text: such lists are taken to the end.
            cheap = cached is not None or phrase.key in stored
            # Without the tokenizer's rules (the bigram table) every term comes from FTS5: take all.
            safe = not cheap and len(taken) > 0 and phrase.scorable and rest[j] < fresh_theta()
            if safe and rest[j] < TIGHT * theta:
                break
            # A list costs a walk of its phrase's trigram doclists, a row scored from text far less:
            # an uncached list is fetched only while it would leave many rows to score.
            if safe and np.count_nonzero(acc + rest[j] >= theta) <= TEXT_ROWS:
                break
            rows, terms = (
                cached[0]
                if cached is not None
                else self._impacts(conn, table, phrase.raw, phrase.key, weights, gen, stored, n_rows, avgdl, epoch)
            )
            if excluded is not None and len(excluded):
                keep = ~np.isin(rows, excluded, assume_unique=True)
                rows, terms = rows[keep], terms[keep]
            if len(rows) and rows[-1] >= size:  # rows added since the size was read: cannot happen in
                return None  # one snapshot, but never index out of bounds
            acc[rows] += terms
            taken[phrase.slot] = (rows, terms)
            stale = True
            nxt = order[j + 1] if j + 1 < len(order) else None
            if (
                nxt is not None
                and nxt.scorable
                and len(scorer.exact) < 2 * limit
                and nxt.key not in stored
                and self.impacts_cache.get((table, nxt.key, weights, gen)) is None
                and rest[j + 1] >= fresh_theta()
                and np.count_nonzero(acc) >= limit
            ):
                # The rows' full scores are far above their partial sums (the common phrases add up):
                # scoring the most promising ones from their text raises θ, so fewer phrases need a walk
                # (when the next list is at hand, taking it is cheaper than scoring from text).
                pool = np.flatnonzero(acc)
                scorer.score(pool[np.argsort(-acc[pool], kind="stable")][:limit])
                theta = max(theta, _kth(np.fromiter((-v for v in scorer.exact.values()), dtype=np.float64), limit))
        else:
            j = len(order)
        fresh_theta()
        if j == len(order) and rest[j] >= theta:
            theta = 0.0  # never safe before every phrase was taken: the pool is every matching row
        left = rest[j]
        pool = np.flatnonzero(acc)
        upper = acc[pool] + left
        hopeful = pool[upper >= theta]
        if len(hopeful) > MAX_SCORED:
            return None
        upper = acc[hopeful] + left
        hopeful = hopeful[np.argsort(-upper, kind="stable")]
        upper = upper[np.argsort(-upper, kind="stable")]
        step = max(limit // 2, 16)
        for start in range(0, len(hopeful), step):
            if len(scorer.exact) >= limit and upper[start] < theta:
                break
            scorer.score(hopeful[start : start + step])
            theta = max(theta, _kth(np.fromiter((-v for v in scorer.exact.values()), dtype=np.float64), limit))
        self.stats["scored"] += len(scorer.exact)
        self.stats["left"] += len(order) - len(taken)
        # A row tying the limit-th score reaches θ too (θ is below that score by the margin), so every
        # such row was scored: the ties past the limit are at hand.
        return _cut(sorted(scorer.exact.items(), key=lambda kv: (kv[1], kv[0])), limit, ties)

    def _ranked_by_fts5(
        self,
        conn: sqlite3.Connection,
        table: str,
        parsed: OrExpression,
        phrases: list[_Phrase],
        sizes: dict[str, int],
        weights: tuple[float, ...],
        limit: int,
        ties: bool = False,
    ) -> list[tuple[int, float]]:
        """MaxScore on the word table, every score FTS5's own (module docstring): the rows holding one of
        the rarest phrases are ranked by the plain statement itself, filtered to them; θ, the limit-th
        best of those, bounds the final limit-th score from below, so a row that holds none of the
        phrases whose bounds add up to θ cannot reach the final list. If the first rows did not hold all
        of those phrases, the rows holding any of them are ranked the same way: that is the answer."""
        order = sorted(phrases, key=lambda p: (-p.bound, p.slot))
        rest = [0.0] * (len(order) + 1)
        for j in range(len(order) - 1, -1, -1):
            rest[j] = (rest[j + 1] + order[j].bound) * (1.0 + MARGIN)
        match = " OR ".join(parsed.positive)
        if parsed.negative:
            match = f"({match}) NOT ({' OR '.join(parsed.negative)})"

        def best(taken: list[_Phrase]) -> list[tuple[int, float]]:
            # The first `limit` rows holding one of `taken`, scored and sorted as the plain statement
            # scores and sorts them (ties in rowid order, the order its scan returns them in). The filter
            # is a subquery on `+rowid`: never a constraint FTS5 is asked to use, which would make bm25
            # walk every phrase's whole list again for each row; bm25 reads N, avgdl and every n_i from
            # the whole table, f and D from the row, whatever the filter.
            sql = f"SELECT rowid, bm25({table}, ?, ?, ?) AS s FROM {table} WHERE {table} MATCH ?"
            args: tuple[Any, ...] = (*weights, match)
            if len(taken) < len(order):
                sql += f" AND +rowid IN (SELECT rowid FROM {table} WHERE {table} MATCH ?)"
                args = (*args, " OR ".join(p.raw for p in taken))
            self.stats["statements"] += 1
            return _first_rows(conn, sql, args, limit, ties)

        # First the rarest phrases that hold FIRST_ROWS rows together (at least one phrase).
        m, held = 1, sizes.get(order[0].raw, 0)
        while m < len(order) and held < FIRST_ROWS:
            held += sizes.get(order[m].raw, 0)
            m += 1
        first = best(order[:m])
        theta = _kth(np.fromiter((-v for _r, v in first), dtype=np.float64, count=len(first)), limit)
        # A row holding none of order[:j] scores at most rest[j]: below θ it cannot reach the final list.
        need = next((j for j in range(m, len(order) + 1) if rest[j] < theta), len(order))
        self.stats["left"] += len(order) - need
        return first if need == m else best(order[:need])

    def _max_rowid(self, conn: sqlite3.Connection, gen: Hashable) -> int:
        cached = self.df_cache.get(("max rowid", gen))
        if cached is not None:
            return int(cached[0])
        value = int(conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0])
        self.df_cache.put(("max rowid", gen), value)
        return value

    # ------------------------------------------------------------ statistics (cached per generation)

    def _totals(self, conn: sqlite3.Connection, table: str) -> tuple[int, int]:
        """N and the token total bm25 reads: FTS5's averages record (rowid 1 of the %_data table)."""
        row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
        if row is None or not row[0]:
            return 0, 0
        values = varints(row[0])
        return values[0], sum(values[1:])

    def _idf(
        self,
        conn: sqlite3.Connection,
        table: str,
        phrase: str,
        pkey: str,
        text: str | None,
        overlaps: re.Pattern[str] | None,
        weights: tuple[float, ...],
        groups: list[tuple[int, int, float]],
        gen: int,
        n_rows: int,
        avgdl: float,
        stored: dict[str, int],
        terms: tuple[str, ...] | None = None,
        word_rows: WordRows | None = None,
    ) -> tuple[float | None, int]:
        """(idf as fts5Bm25GetData computes it, or None when the phrase matches nothing; how many rows it
        matches, estimated when only the idf was needed). `terms`: a word-table phrase scored from the
        rows `word_rows` rebuilds."""
        key = (table, pkey, gen)
        cached = self.df_cache.get(key)
        if cached is not None:
            return cast(tuple[float | None, int], cached[0])
        value: tuple[float | None, int] | None
        impacts = self.impacts_cache.get((table, pkey, weights, gen))
        if impacts is not None:
            df = len(impacts[0][0])
            value = (idf_of(n_rows, df) if df else None, df)
        elif pkey in stored:
            # FTS5's own row count for this phrase, stored for this very snapshot: the same n_i its
            # bm25 counts now, so the same idf (fts5Bm25GetData's formula, to the letter).
            df = stored[pkey]
            value = (idf_of(n_rows, df), df)
        else:
            if text:
                value = self._idf_from_one_row(conn, table, phrase, text, overlaps, weights, groups, n_rows, avgdl)
            elif terms is not None and word_rows is not None:
                value = self._word_idf_from_one_row(conn, table, phrase, terms, word_rows, weights, n_rows, avgdl)
            else:
                value = None
            if value is None:
                df = conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (phrase,)).fetchone()[0]
                value = (idf_of(n_rows, df), df)
        self.df_cache.put(key, value)
        return value

    def _idf_from_one_row(
        self,
        conn: sqlite3.Connection,
        table: str,
        phrase: str,
        text: str,
        overlaps: re.Pattern[str] | None,
        weights: tuple[float, ...],
        groups: list[tuple[int, int, float]],
        n_rows: int,
        avgdl: float,
    ) -> tuple[float | None, int] | None:
        """The idf FTS5 uses, read back from its bm25 of one matching row: `count(*)` would walk every
        match through the VDBE (~10× slower for a phrase such as "the"), while bm25 counts them inside
        FTS5. The row's term is idf · q with q from its text; the idf is taken only if recomputing
        idf · q from it (from a row count, or the 1e-6 floor) gives FTS5's double back bit for bit."""
        first = conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT 1", (phrase,)).fetchone()
        if first is None:
            return None, 0
        rid = first[0]
        (s,) = conn.execute(
            f"SELECT bm25({table}, ?, ?, ?) FROM {table} WHERE {table} MATCH ? AND rowid = ?", (*weights, phrase, rid)
        ).fetchone()
        row = conn.execute(
            f"SELECT c.heading, c.context_text, c.content, d.sz FROM chunks c JOIN {table}_docsize d ON d.id = c.id "
            "WHERE c.id = ?",
            (rid,),
        ).fetchone()
        if row is None:
            return None
        texts = _group_texts(row[:3], groups)
        q = _tf_part(_frequency(texts, text, overlaps, groups), float(sum(varints(row[3]))), avgdl)
        return _idf_read_back(n_rows, q, -s)

    def _word_idf_from_one_row(
        self,
        conn: sqlite3.Connection,
        table: str,
        phrase: str,
        terms: tuple[str, ...],
        word_rows: WordRows,
        weights: tuple[float, ...],
        n_rows: int,
        avgdl: float,
    ) -> tuple[float | None, int] | None:
        """As _idf_from_one_row, on the word table: q from the row rebuilt and tokenized by FTS5."""
        first = conn.execute(
            f"SELECT rowid, bm25({table}, ?, ?, ?) FROM {table} WHERE {table} MATCH ? LIMIT 1", (*weights, phrase)
        ).fetchone()
        if first is None:
            return None, 0
        (f,), D = word_rows.frequencies(conn, table, [first[0]], [terms])
        return _idf_read_back(n_rows, _tf_part(float(f[0]), float(D[0]), avgdl), -first[1])

    def _impacts(
        self,
        conn: sqlite3.Connection,
        table: str,
        phrase: str,
        pkey: str,
        weights: tuple[float, ...],
        gen: Hashable,
        stored: dict[str, int] | None = None,
        n_rows: int = 0,
        avgdl: float = 1.0,
        epoch: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows matching `phrase` (sorted) and the term it adds to each one's bm25: FTS5's bm25 of the
        phrase alone is minus that term (same idf, frequency and length). Used for bounds only."""
        key = (table, pkey, weights, gen)
        cached = self.impacts_cache.get(key)
        if cached is not None:
            return cast(tuple[np.ndarray, np.ndarray], cached[0])
        if stored and pkey in stored:
            row = conn.execute(
                "SELECT rowids, terms, df FROM fts_phrase_stats WHERE tbl = ? AND weights = ? AND phrase = ?",
                (table, weights_key(weights), pkey),
            ).fetchone()
            if row is not None and (row[1] or not row[2]):  # FTS5's own list, in this snapshot
                rows = unpack_rowids(row[0], row[2])
                # Frequencies become terms as bm25 makes them, from this snapshot's N, token total and row
                # count and the stored lengths: the doubles FTS5 computes from the same integers.
                lengths = None if len(row[1]) == 8 * len(rows) else self._lengths(conn, table, epoch)
                terms = unpack_terms(row[1], rows, lengths, n_rows, avgdl)
                if terms is not None:
                    value = (rows, terms)
                    self.impacts_cache.put(key, value, max(1, len(rows)))
                    self.stats["stored_lists"] += 1
                    return value
        if table == TOKEN_TABLE and epoch is not None:
            from_tokens = self._token_impacts(conn, pkey, weights, gen, n_rows, avgdl, epoch)
            if from_tokens is not None:
                return from_tokens
        found = conn.execute(
            f"SELECT rowid, bm25({table}, ?, ?, ?) FROM {table} WHERE {table} MATCH ?", (*weights, phrase)
        ).fetchall()
        rows = np.fromiter((r for r, _ in found), dtype=np.int64, count=len(found))
        terms = np.fromiter((-s for _, s in found), dtype=np.float64, count=len(found))
        order = np.argsort(rows, kind="stable")
        value = (rows[order], terms[order])
        self.impacts_cache.put(key, value, max(1, len(found)))
        return value

    def _token_impacts(
        self,
        conn: sqlite3.Connection,
        phrase: str,
        weights: tuple[float, ...],
        gen: Hashable,
        n_rows: int,
        avgdl: float,
        epoch: int,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """A trigram phrase's impact list from the stored lists of the tokens that hold it (folded, word
        characters only; engine/index/token_lists.py), or None when they are not stored for these weights or
        the phrase is held by too many tokens or rows. Its rows are those of its tokens, its f in a row
        Σ token f × the phrase's instances in the token (integers, so exact), and its terms computed from
        f, the stored lengths and this snapshot's N and token total as a stored list's are: FTS5's bm25
        of the phrase alone, bit for bit. Kept with the other lists (cached as one)."""
        key = (TOKEN_TABLE, phrase, weights, gen)
        cached = self.impacts_cache.get(key)
        if cached is not None:
            return cast(tuple[np.ndarray, np.ndarray], cached[0])
        if not listable(phrase) or self.df_cache.get(("no tokens", phrase, weights, epoch)) is not None:
            return None
        vocab = self._vocab(conn, weights, epoch)
        lengths = self._lengths(conn, TOKEN_TABLE, epoch)
        tokens = None if vocab is None else vocab.containing(phrase, MAX_TOKENS)
        value = None
        if tokens is not None and lengths is not None:
            value = self._token_union(conn, phrase, tokens, weights, n_rows, avgdl, lengths)
        if value is None:
            self.df_cache.put(("no tokens", phrase, weights, epoch), True)
            return None
        self.impacts_cache.put(key, value, max(1, len(value[0])))
        self.stats["token_lists"] += 1
        return value

    def _token_union(
        self,
        conn: sqlite3.Connection,
        phrase: str,
        tokens: list[str],
        weights: tuple[float, ...],
        n_rows: int,
        avgdl: float,
        lengths: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        wkey = weights_key(weights)
        found: list[tuple[str, int, bytes, bytes]] = []
        entries = 0
        for start in range(0, len(tokens), 500):
            batch = tokens[start : start + 500]
            where = f"FROM fts_phrase_stats WHERE tbl = ? AND weights = ? AND phrase IN ({','.join('?' * len(batch))})"
            entries += conn.execute(f"SELECT coalesce(sum(df), 0) {where}", (TOKENS, wkey, *batch)).fetchone()[0]
            if entries > MAX_TOKEN_ENTRIES:
                return None  # (the row counts first: a list's blob is read only when it will be used)
            found += conn.execute(f"SELECT phrase, df, rowids, terms {where}", (TOKENS, wkey, *batch)).fetchall()
        if len(found) != len(tokens):
            raise Inconsistent("a token of the vocabulary without its list")
        if not found:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        overlapping = self_overlapping(phrase)
        all_rows, all_f = [], []
        for token, df, rowids, terms in found:
            if len(terms) not in (df, 2 * df):
                raise Inconsistent("a token list of the wrong length")
            all_rows.append(unpack_rowids(rowids, df))
            token_f = np.frombuffer(terms, dtype="<u1" if len(terms) == df else "<u2").astype(np.float64)
            all_f.append(token_f * float(instances(token, phrase, overlapping)))
        rows_cat = np.concatenate(all_rows)
        if rows_cat.max() >= len(lengths):
            raise Inconsistent("a token list's row past the stored lengths")
        summed = np.bincount(rows_cat, weights=np.concatenate(all_f))  # integers: exact in doubles
        held = np.flatnonzero(summed)
        f = summed[held]
        return held.astype(np.int64), tf_terms(f, lengths[held], idf_of(n_rows, len(held)), avgdl)

    def _vocab(self, conn: sqlite3.Connection, weights: tuple[float, ...], epoch: int) -> TokenVocab | None:
        """The stored token vocabulary of this epoch (None: no token lists for these weights)."""
        key = ("vocab", weights, epoch)
        cached = self.df_cache.get(key)
        if cached is not None:
            return cast(TokenVocab | None, cached[0])
        row = None
        with contextlib.suppress(sqlite3.OperationalError):  # an index from before the table existed
            row = conn.execute(
                "SELECT df, terms FROM fts_phrase_stats WHERE tbl = ? AND weights = ?", (VOCAB, weights_key(weights))
            ).fetchone()
        value = TokenVocab.decode(row[1]) if row is not None and row[0] >= 0 else None
        self.df_cache.put(key, value)
        return value

    def _lengths(self, conn: sqlite3.Connection, table: str, epoch: int | None) -> np.ndarray | None:
        """The rows' lengths stored with the lists of this epoch (None: not stored, or not readable now)."""
        if epoch is None:
            return None
        cached = self.df_cache.get(("lengths", table, epoch))
        if cached is not None:
            return cast(np.ndarray, cached[0])
        row = conn.execute("SELECT df, terms FROM fts_phrase_stats WHERE tbl = ?", (table + LENGTHS,)).fetchone()
        value = None
        if row is not None and len(row[1]) in (2 * row[0], 4 * row[0]):
            value = np.frombuffer(row[1], dtype="<u2" if len(row[1]) == 2 * row[0] else "<u4").astype(np.float64)
        self.df_cache.put(("lengths", table, epoch), value)
        return value

    def _stored(
        self, conn: sqlite3.Connection, table: str, weights: tuple[float, ...], epoch: int, keys: set[str]
    ) -> dict[str, int]:
        """Those of `keys` (phrases by folded text) whose statistics the index database holds for these
        weights, with their row counts; read inside the snapshot the search reads (whose stored set has
        this epoch), by primary key (the table is ~1 KB a chunk: reading all of it costs more than a query)."""
        out: dict[str, int] = {}
        missing = []
        for k in keys:
            cached = self.df_cache.get(("stored", table, weights, epoch, k))
            if cached is None:
                missing.append(k)
            elif cached[0] >= 0:
                out[k] = cached[0]
        if missing:
            found: dict[str, int] = {}
            with contextlib.suppress(sqlite3.OperationalError):  # an index from before the table existed
                found = dict(
                    conn.execute(
                        "SELECT phrase, df FROM fts_phrase_stats WHERE tbl = ? AND weights = ? AND phrase IN "
                        f"({','.join('?' * len(missing))})",
                        (table, weights_key(weights), *missing),
                    )
                )
            for k in missing:
                self.df_cache.put(("stored", table, weights, epoch, k), found.get(k, -1))
            out.update(found)
        return out

    def _excluded(self, conn: sqlite3.Connection, table: str, expr: str, gen: Hashable) -> np.ndarray:
        key = (table, expr, gen)
        cached = self.excluded_cache.get(key)
        if cached is not None:
            return cast(np.ndarray, cached[0])
        found = conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (expr,)).fetchall()
        rows = np.sort(np.fromiter((r for (r,) in found), dtype=np.int64, count=len(found)))
        self.excluded_cache.put(key, rows, max(1, len(rows)))
        return rows


def _generation(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM index_meta WHERE key = 'generation'").fetchone()
    return int(row[0]) if row else 0


def _fulltext_generation(conn: sqlite3.Connection) -> tuple[str, int]:
    """What the summed lists are kept by: the full-text tables' own write counter, or, in an index that
    has none yet, the index's generation (moved by every write)."""
    row = conn.execute(f"SELECT value FROM index_meta WHERE key = '{FULLTEXT_GENERATION}'").fetchone()
    return ("fulltext", int(row[0])) if row else ("index", _generation(conn))


def plain_ranked(
    conn: sqlite3.Connection, table: str, expr: str, weights: Sequence[float], limit: int, *, ties: bool = False
) -> list[tuple[int, float]]:
    """The plain statement's first `limit` rows (the leg's one definition), with `ties` every further row
    that ties the last of them: a caller that orders a tie its own way (by path and position) then cuts
    it where it likes, never where SQLite's rowid order happened to put the limit."""
    sql = f"SELECT rowid, bm25({table}, ?, ?, ?) AS s FROM {table} WHERE {table} MATCH ?"
    return _first_rows(conn, sql, (*weights, expr), limit, ties)


def _first_rows(
    conn: sqlite3.Connection, sql: str, args: tuple[Any, ...], limit: int, ties: bool
) -> list[tuple[int, float]]:
    """The first `limit` (rowid, s) rows of `sql` by (s, rowid), with `ties` those tying the last too:
    one row past the limit says whether a tie crosses it, and only then are the rows up to its score read
    (bm25 gives a row the same double in any statement)."""
    found = conn.execute(f"{sql} ORDER BY s, rowid LIMIT ?", (*args, limit + 1 if ties else limit)).fetchall()
    if ties and 0 < limit < len(found) and found[limit][1] == found[limit - 1][1]:
        found = conn.execute(
            f"SELECT rowid, s FROM ({sql}) WHERE s <= ? ORDER BY s, rowid", (*args, found[limit - 1][1])
        ).fetchall()
    return _cut([(int(r), float(v)) for r, v in found], limit, ties)


def _cut(ranked: list[tuple[int, float]], limit: int, ties: bool) -> list[tuple[int, float]]:
    """The first `limit` of rows sorted best first, with `ties` also every later row tying the last."""
    if not ties or len(ranked) <= limit or limit <= 0:
        return ranked[:limit]
    last = ranked[limit - 1][1]
    end = limit
    while end < len(ranked) and ranked[end][1] == last:
        end += 1
    return ranked[:end]


def _idf_read_back(n_rows: int, q: float, y: float) -> tuple[float | None, int] | None:
    """The idf whose product with a row's q (its tf part) is y, FTS5's term for that row, bit for bit: from
    a row count near the one the double implies, or the 1e-6 floor; None when none gives y back."""
    if not q > 0.0 or not y > 0.0:
        return None
    if 1e-6 * q == y:
        return 1e-6, n_rows  # the floor: at least half the rows match (the count is not needed)
    e = math.exp(y / q)
    guess = round((n_rows + 0.5 - 0.5 * e) / (1.0 + e))
    for df in sorted({guess + d for d in range(-3, 4)}):
        if 0 < df <= n_rows and idf_of(n_rows, df) * q == y:
            return idf_of(n_rows, df), df
    return None


def _kth(values: np.ndarray, k: int) -> float:
    """The k-th largest value less the margin (0.0 when there are fewer than k): a lower bound of the
    final k-th score whenever `values` are lower bounds of some rows' scores."""
    if len(values) < k:
        return 0.0
    return float(np.partition(values, len(values) - k)[len(values) - k]) / (1.0 + MARGIN)


def _column_groups(weights: tuple[float, ...]) -> list[tuple[int, int, float]]:
    """(first column, last column, weight) of runs of adjacent columns with equal weights: counted as one
    text (see _group_texts), FTS5 adding that weight once per instance either way."""
    groups: list[tuple[int, int, float]] = []
    for col, w in enumerate(weights):
        if groups and groups[-1][2] == w:
            groups[-1] = (groups[-1][0], col, w)
        else:
            groups.append((col, col, w))
    return groups


def _group_texts(columns: Sequence[str | None], groups: list[tuple[int, int, float]]) -> list[str]:
    # Folded first, then joined: NUL folds away, so a folded phrase never holds one and cannot match
    # across the join (joined before folding, the columns would run together).
    return ["\0".join(FOLD.fold(c) for c in columns[a : b + 1] if c) for a, b, _w in groups]


def _frequency(
    texts: list[str], phrase: str, overlaps: re.Pattern[str] | None, groups: list[tuple[int, int, float]]
) -> float:
    """f: the column weight summed over the phrase's instances, added in column order as FTS5 adds it."""
    if overlaps is None:
        counts = [t.count(phrase) for t in texts]
    else:
        counts = [sum(1 for _ in overlaps.finditer(t)) for t in texts]
    f = 0.0
    for n, (_a, _b, w) in zip(counts, groups, strict=True):
        if n and w == int(w) and abs(w) < 2**20 and f == int(f):
            f += n * w  # integers so far: exact, whatever the order (after a fraction, each sum rounds)
        else:
            for _ in range(n):
                f += w
    return f


def _tf_part(f: float, D: float, avgdl: float) -> float:
    """fts5Bm25Function's factor of idf, in its order of operations."""
    return (f * (K1 + 1.0)) / (f + K1 * (1 - B + B * D / avgdl))


def _merge(pool: np.ndarray, partial: np.ndarray, rows: np.ndarray, terms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pool with `rows` added, each one's partial sum increased by its term."""
    ids, inverse = np.unique(np.concatenate([pool, rows]), return_inverse=True)
    return ids, np.bincount(inverse, weights=np.concatenate([partial, terms]), minlength=len(ids))


class _Scorer:
    """Exact bm25 of single rows, as fts5Bm25Function computes it (module docstring): the terms of the
    taken phrases come from FTS5 itself (their impact lists), the others from the row's folded text."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        table: str,
        phrases: list[_Phrase],
        weights: tuple[float, ...],
        avgdl: float,
        taken: dict[int, tuple[np.ndarray, np.ndarray]],
        word_rows: WordRows | None = None,
    ) -> None:
        self.conn = conn
        self.word_rows = word_rows
        self.table = table
        self.phrases = sorted(phrases, key=lambda p: p.slot)  # the sum runs in expression order
        self.taken = taken  # filled as phrases are taken: looked up at each call
        self.groups = _column_groups(weights)
        self.avgdl = avgdl
        self.exact: dict[int, float] = {}

    def score(self, rowids: np.ndarray) -> None:
        rowids = np.asarray([r for r in rowids.tolist() if r not in self.exact], dtype=np.int64)
        if not len(rowids):
            return
        # Each row's taken terms, per phrase in expression order (0.0 where the phrase is absent).
        known = {}
        for slot, (rows, terms) in self.taken.items():
            if not len(rows):
                known[slot] = np.zeros(len(rowids))
                continue
            pos = np.minimum(np.searchsorted(rows, rowids), len(rows) - 1)
            known[slot] = np.where(rows[pos] == rowids, terms[pos], 0.0)
        missing = [p for p in self.phrases if p.slot not in known]
        if missing and self.word_rows is not None:
            # The word table: each phrase's f in each row from the rows rebuilt and tokenized by FTS5.
            freqs, D = self.word_rows.frequencies(
                self.conn, self.table, rowids.tolist(), [cast(tuple[str, ...], p.terms) for p in missing]
            )
            for p, f in zip(missing, freqs, strict=True):
                known[p.slot] = tf_terms(f, D, p.idf, self.avgdl)
            missing = []
        if missing:
            texts: dict[int, list[str]] = {}
            lengths: dict[int, int] = {}
            ids = rowids.tolist()
            for start in range(0, len(ids), 500):
                batch = ids[start : start + 500]
                marks = ",".join("?" * len(batch))
                for rid, heading, context, content, sz in self.conn.execute(
                    f"SELECT c.id, c.heading, c.context_text, c.content, d.sz FROM chunks c "
                    f"JOIN {self.table}_docsize d ON d.id = c.id WHERE c.id IN ({marks})",
                    batch,
                ):
                    texts[rid] = _group_texts((heading, context, content), self.groups)
                    lengths[rid] = sum(varints(sz))
            if len(texts) < len(ids):
                raise Inconsistent("a full-text row without its chunk")
            rows_texts = [texts[rid] for rid in ids]
            D = np.array([float(lengths[rid]) for rid in ids], dtype=np.float64)
            # Elementwise IEEE doubles (tf_terms): every element is the double _tf_part computes for
            # that row, which the calibration checks against FTS5.
            integral = all(w == int(w) and abs(w) < 2**20 for _a, _b, w in self.groups)
            for p in missing:
                text = cast(str, p.text)  # only trigram phrases are scored from text, and they have it
                if integral and p.overlaps is None:
                    # f = Σ count·weight over the column groups: integers, exact in any order.
                    f = np.zeros(len(ids), dtype=np.float64)
                    for g, (_a, _b, w) in enumerate(self.groups):
                        f += np.fromiter((t[g].count(text) for t in rows_texts), dtype=np.float64, count=len(ids)) * w
                else:
                    f = np.fromiter(
                        (_frequency(t, text, p.overlaps, self.groups) for t in rows_texts),
                        dtype=np.float64,
                        count=len(ids),
                    )
                # f = 0 gives 0 / (positive) = +0.0 and idf * +0.0 = +0.0: what an absent phrase adds.
                known[p.slot] = tf_terms(f, D, p.idf, self.avgdl)
        # bm25's sum, left to right in expression order (adding +0.0 leaves a sum as it is).
        score = np.zeros(len(rowids), dtype=np.float64)
        for p in self.phrases:
            score = score + known[p.slot]
        self.exact.update(zip(rowids.tolist(), (-1.0 * score).tolist(), strict=True))


_CALIBRATED: bool | None = None


def calibrated() -> bool:
    """Whether `_Scorer` reproduces this platform's FTS5 bm25 bit for bit (a C compiler that fuses
    multiply-adds would round differently): checked once per process on a small random table."""
    global _CALIBRATED
    if _CALIBRATED is None:
        _CALIBRATED = _calibrate()
    return _CALIBRATED


def _calibrate() -> bool:
    import random

    rng = random.Random(16)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "the", "and", "zeta", "theta", "iota", "kappa", "running"]
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, heading TEXT, context_text TEXT, content TEXT)")
        conn.execute(
            f"CREATE VIRTUAL TABLE fts_chunks USING fts5(heading, context, content, content='', "
            f"tokenize='{TRIGRAM_TOKENIZE}')"
        )
        conn.execute(
            f"CREATE VIRTUAL TABLE fts_words USING fts5(heading, context, content, content='', "
            f"tokenize='{WORDS_TOKENIZE}')"
        )
        conn.execute("CREATE TABLE index_meta (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute("INSERT INTO index_meta VALUES ('words_version', ?)", (WordsText(None).version,))
        rows = []
        for i in range(1, 301):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(3, 60)))
            rows.append((i, rng.choice(words).title(), None, text))
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?)", rows)
        conn.executemany("INSERT INTO fts_chunks(rowid, heading, context, content) VALUES (?, ?, ?, ?)", rows)
        conn.executemany(
            "INSERT INTO fts_words(rowid, heading, context, content) VALUES (?, ?, ?, ?)", word_table_rows(rows)
        )
        conn.execute("COMMIT")
        pruned = PrunedFulltext()
        pruned.min_rows = 0
        pruned.check_platform = False
        for weights in ((2.0, 1.0, 1.0), (1.3, 0.7, 0.9)):
            for q in (
                '"the" OR "alpha" OR "eta"',
                '"kappa" OR "and" OR "zeta" OR "eta"',
                '("gamma" OR "delt") NOT ("iota")',
            ):
                plain = conn.execute(
                    (
                        "SELECT rowid, bm25(fts_chunks, ?, ?, ?) AS s FROM fts_chunks "
                        "WHERE fts_chunks MATCH ? ORDER BY s LIMIT 40"
                    ),
                    (*weights, q),
                ).fetchall()
                if pruned.ranked(conn, "fts_chunks", q, weights, 40, 0) != [tuple(r) for r in plain]:
                    return False
            for q in ('"alpha" OR "run" OR "the"', '"kappa zeta" OR "gamma" OR "delta"'):
                plain = conn.execute(
                    (
                        "SELECT rowid, bm25(fts_words, ?, ?, ?) AS s FROM fts_words "
                        "WHERE fts_words MATCH ? ORDER BY s LIMIT 40"
                    ),
                    (*weights, q),
                ).fetchall()
                got = pruned.ranked(conn, "fts_words", q, weights, 40, 0, words=WordsText(None))
                if got != [tuple(r) for r in plain]:
                    return False
        return True
    finally:
        conn.close()
