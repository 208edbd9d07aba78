"""The word side index: whole words beside the character trigrams and bigrams (ours, not groove's).

Substrings carry no notion of a word: the trigram table finds `tar` inside "target" and ranks a page
named `tar.md` behind pages that merely contain the letters. The side table `fts_words` indexes a copy
of heading, context and content with FTS5's `porter unicode61 remove_diacritics 2` tokenizer: words,
case- and diacritic-folded, reduced to their Porter stems, so `extract`, `extracts` and `extracting`
are one term and `tar` is not in `target`.

* The indexed copy is the NFKC-normalised text with its CJK runs left out: unicode61 would keep a whole
  run of kanji and kana as one token, which no query word would ever equal. CJK text is served by the
  bigram table. With a Japanese analyzer (the pulled Sudachi dictionary, engine/analysis/japanese.py), a
  run holding kanji or kana stands instead as its words, separated by spaces; the query's runs are
  analyzed the same way into OR terms, less its question words (何, どこ, いつ …: the answer to a question
  never holds them; engine/analysis/japanese.py says why).
* A query compiles to an OR of its words, each quoted (FTS5 tokenizes a quoted string with the table's
  own tokenizer, so it is stemmed as the text was; a piece such as `groove.toml` becomes the phrase of
  its adjacent tokens); English stop words and Japanese question words are dropped unless nothing else
  is left; a quoted segment is one phrase and keeps them. Exclusions are not compiled here: the search
  drops the chunks the other legs' exclusions match from this leg too, so every leg excludes the same
  chunks (groove's rule, §C.7).

Changing what is indexed must bump `WORDS_VERSION`: indexes recording another version are rebuilt.
What is recorded is `words_version(analyzer)`: WORDS_VERSION alone without a Japanese analyzer (so an
index built without one is left as it is), followed by the analyzer's identity with one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from groove_tui.engine.analysis.bigram import cjk_runs, nfkc, without_cjk
from groove_tui.engine.analysis.japanese import JapaneseAnalyzer, is_japanese, is_question_word
from groove_tui.engine.analysis.query import fts_phrase, segments

__all__ = [
    "STOP_WORDS",
    "WORDS_TOKENIZE",
    "WORDS_VERSION",
    "WordQuery",
    "compile_words",
    "index_words",
    "version_base",
    "words_version",
]

WORDS_VERSION = "1"
WORDS_TOKENIZE = "porter unicode61 remove_diacritics 2"
MAX_TERMS = 64  # distinct OR terms of one query

# English function words that match nearly every chunk: they add no ranking signal and cost a scan of
# most of the table. Lucene's English set.
# fmt: off
STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no",
    "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to",
    "was", "will", "with",
))
# fmt: on

_TOKEN = re.compile(r"[^\W_]+")  # what unicode61 keeps as token characters (letters and digits)


def words_version(japanese: JapaneseAnalyzer | None) -> str:
    """What index_meta records for a word table built with (or without) this Japanese analyzer."""
    return WORDS_VERSION if japanese is None else f"{WORDS_VERSION}+{japanese.identity}"


def version_base(recorded: str | None) -> str | None:
    """The WORDS_VERSION part of a recorded words version (None: nothing recorded)."""
    return None if recorded is None else recorded.split("+", 1)[0]


def index_words(text: str | None, japanese: JapaneseAnalyzer | None = None) -> str | None:
    """The copy of `text` the word table indexes (None stays None: an absent heading or context)."""
    if text is None:
        return None
    if japanese is None:
        return without_cjk(text)
    return _analyzed(text, japanese)[0]


def _analyzed(text: str, japanese: JapaneseAnalyzer) -> tuple[str, list[str]]:
    """The word table's copy of `text` and the Japanese words in it, in order."""
    norm = nfkc(text)
    out: list[str] = []
    forms: list[str] = []
    pos = 0
    for m in cjk_runs(norm):
        out.append(norm[pos : m.start()])
        run = m.group()
        words = japanese.words(run) if is_japanese(run) else []
        out.append(f" {' '.join(words)} " if words else " ")
        forms.extend(words)
        pos = m.end()
    out.append(norm[pos:])
    return "".join(out), forms


def _pieces(copy: str) -> list[str]:
    """Whitespace pieces of a query segment's copy that hold a word."""
    return [p for p in copy.replace("\0", " ").split() if _TOKEN.search(p)]


def _is_stop(piece: str) -> bool:
    tokens = _TOKEN.findall(piece.lower())
    return len(tokens) == 1 and tokens[0] in STOP_WORDS


def _or(terms: list[str]) -> str | None:
    distinct = list(dict.fromkeys(terms))[:MAX_TERMS]
    return " OR ".join(distinct) if distinct else None


@dataclass(frozen=True, slots=True)
class WordQuery:
    positive_expr: str | None  # None: no word to search for (e.g. a query in CJK only, no analyzer)
    words: tuple[str, ...]  # the words and phrases searched for, as typed (what highlighting looks for)
    japanese: tuple[str, ...] = ()  # the analyzer's forms of the query's Japanese words (highlighted too)


def compile_words(raw: str, japanese: JapaneseAnalyzer | None = None) -> WordQuery:
    """The word-table side of `raw` (segments scanned exactly as groove's compiler scans them); with a
    Japanese analyzer, the Japanese runs' words join the Latin ones. Unquoted stop words and Japanese
    question words are left out unless nothing else is left; a quoted segment keeps every word."""
    plain: list[str] = []
    quoted: list[str] = []
    forms: list[tuple[str, bool]] = []  # (Japanese form, from a quoted segment), in query order
    for excluded, is_quoted, text in segments(raw):
        if excluded:
            continue
        if japanese is None:
            pieces = _pieces(without_cjk(text))
        else:
            copy, found = _analyzed(text, japanese)
            pieces = _pieces(copy)
            forms.extend((form, is_quoted) for form in found)
        if is_quoted and pieces:
            quoted.append(" ".join(pieces))
        elif not is_quoted:
            plain.extend(pieces)
    kept = [p for p in plain if not (_is_stop(p) or is_question_word(p))]
    if not kept and not quoted:  # nothing else to search for: they are what the user asks for
        kept = plain
    words = tuple(dict.fromkeys([*quoted, *kept]))
    searched = set(kept)
    highlighted = (form for form, is_quoted in forms if is_quoted or form in searched)
    return WordQuery(_or([fts_phrase(w) for w in words]), words, tuple(dict.fromkeys(highlighted)))
