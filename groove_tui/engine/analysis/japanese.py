"""Japanese words for the word table: a morphological analyzer over each Japanese run (ours).

unicode61 keeps a whole run of kanji and kana as one token, which no query word would ever equal, so the
word table leaves CJK runs out unless a Japanese dictionary is pulled (`groove-tui models pull
sudachi-core`). With it, each run that holds kanji or kana is cut into morphemes by SudachiPy and stands
in the word table's copy as their forms, separated by spaces, exactly as measured on jsquad:

* split mode C (the longest units: 東京都, 国会議事堂前駅), so a query's compound matches as one word;
* the normalized form (引越し and 引っ越し, ユーザ and ユーザー, ｶﾞｲﾄﾞ and ガイド are one word);
* particles (助詞), auxiliary verbs (助動詞), symbols, punctuation and whitespace are dropped: they occur
  in nearly every passage, and dropping them keeps a quoted phrase's words adjacent in query and text;
* question words (疑問詞: 何, 誰, どこ, いつ, どの, どう, なぜ, いくつ, and the 何 compounds 何人, 何色 …) stay in
  the table but leave a query's unquoted words (`is_question_word`, applied in engine/analysis/words.py).
  A question names what it asks for with one of them, and the passage that answers it states the answer
  in that place, so it is the one word of a question its answer does not hold; in expository text it is
  rare, so bm25 weighs it heavily and rewards the passages that happen to hold one (an idiom, a quoted
  question) over the answer. A query of question words only keeps them, and a quoted phrase is exact.

The words are kana and kanji only, which `porter unicode61 remove_diacritics 2` keeps intact: its
diacritic removal is for Latin letters, and the Porter stemmer leaves non-ASCII tokens alone.

The dictionary is about 200 MB, memory-mapped: it is opened on the first run that needs it and once per
process, shared by every analyzer over the same file; each thread gets its own tokenizer (a SudachiPy
tokenizer is not meant to be shared between threads). A dictionary folder may carry its own Sudachi
settings (`sudachi.json` and the resource files it names), as a dictionary built with other connection
ids needs; the pulled core dictionary uses SudachiPy's own settings, which are made for it.

What the analyzer produces must never change under an index: `identity` (SudachiPy's version, the
dictionary's SHA-256, `RECIPE`) is recorded with the word table, and a table recorded with another
identity is rebuilt before it is written to (engine/index/indexer.py).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groove_tui.engine.errors import EngineError

__all__ = [
    "DROPPED_POS",
    "QUESTION_WORDS",
    "RECIPE",
    "AnalyzerUnavailable",
    "JapaneseAnalyzer",
    "is_japanese",
    "is_question_word",
]

RECIPE = "C-normalized-1"  # split mode, form, filter: bump when what `words` returns changes
DROPPED_POS = frozenset(("助詞", "助動詞", "補助記号", "記号", "空白"))
# The question words as Sudachi's normalized forms (なに and なん are 何, なぜ is 何故, いくつ is 幾つ): the
# closed class of Japanese interrogatives, not a list fitted to any set of questions. Every normalized form
# that starts with 何 counts too: 何 + a counter or a noun asks for a number or a kind (何人, 何色, 何時).
QUESTION_WORDS = frozenset(
    ("何", "誰", "どこ", "いつ", "どれ", "どちら", "どっち", "どの", "どんな", "どう", "何故", "幾つ", "幾ら")
)
# SudachiPy refuses inputs over 49,149 UTF-8 bytes; a run longer than this many characters (at most 4
# bytes each) is analyzed in pieces. Runs that long have no punctuation at all: rare, and cut the same
# way in the text and in its highlights.
MAX_PIECE = 8192

# Kanji (incl. 々 〆 〇 and the extensions) and kana with ー: what makes a CJK run Japanese here. Hangul runs
# stay out of the word table, as they are without a dictionary.
_JAPANESE = re.compile(
    "[\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
    "\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff]"
)


def is_question_word(form: str) -> bool:
    """A normalized form that asks (何, どこ, 何人 …): left out of a query's words, see the module docstring."""
    return form in QUESTION_WORDS or form.startswith("何")


def is_japanese(run: str) -> bool:
    """A CJK run the analyzer reads: it holds kanji or kana (NFKC-normalised text)."""
    return _JAPANESE.search(run) is not None


class AnalyzerUnavailable(EngineError):
    """The Japanese dictionary could not be opened; the message names it and how to repair it."""


@dataclass(frozen=True, slots=True)
class _Loaded:
    dictionary: Any  # sudachipy.Dictionary
    dropped: Callable[[Any], bool]  # a PosMatcher: the morphemes left out


_LOCK = threading.Lock()
_LOADED: dict[tuple[str, str], _Loaded] = {}
_LOCAL = threading.local()  # per thread: {key: tokenizer}


def _load(dictionary: Path, settings: Path | None, repair: str) -> _Loaded:
    key = (str(dictionary), str(settings or ""))
    with _LOCK:
        loaded = _LOADED.get(key)
        if loaded is not None:
            return loaded
        try:
            import sudachipy

            if settings is not None:
                sd = sudachipy.Dictionary(config=str(settings), resource_dir=str(settings.parent), dict=str(dictionary))
            else:
                sd = sudachipy.Dictionary(dict=str(dictionary))
            dropped = sd.pos_matcher(lambda pos: pos[0] in DROPPED_POS)
        except ImportError as e:
            raise AnalyzerUnavailable(
                f"Japanese words need the sudachipy package ({e}): pip install sudachipy==0.7.0"
            ) from None
        except Exception as e:  # SudachiError, OSError: a file the analyzer cannot use
            raise AnalyzerUnavailable(
                f"the Japanese dictionary {dictionary} cannot be opened ({e}): {repair}"
            ) from None
        loaded = _Loaded(sd, dropped)
        _LOADED[key] = loaded
        return loaded


class JapaneseAnalyzer:
    """Morphemes of Japanese runs with a Sudachi dictionary (a pulled model, see the module docstring)."""

    def __init__(self, dictionary: Path, identity: str, *, settings: Path | None = None, repair: str = "") -> None:
        self.dictionary = dictionary
        self.identity = identity  # recorded with the word table: another identity rebuilds it
        self.settings = settings
        self._repair = repair or "pull the dictionary again"
        self._key = (str(dictionary), str(settings or ""))

    def __repr__(self) -> str:
        return f"JapaneseAnalyzer({self.identity!r})"

    def _tokenize(self, text: str) -> Any:
        tokenizers: dict[tuple[str, str], Any] | None = getattr(_LOCAL, "tokenizers", None)
        if tokenizers is None:
            tokenizers = _LOCAL.tokenizers = {}
        tok = tokenizers.get(self._key)
        if tok is None:
            loaded = _load(self.dictionary, self.settings, self._repair)
            tok = tokenizers[self._key] = loaded.dictionary.tokenizer("C", fields={"pos", "normalized_form"})
        return tok.tokenize(text)

    def morphemes(self, run: str) -> list[tuple[int, int, str]]:
        """(begin, end, normalized form) of the kept morphemes of `run`, offsets in `run`'s characters."""
        if not run or not is_japanese(run):
            return []
        dropped = _load(self.dictionary, self.settings, self._repair).dropped
        out: list[tuple[int, int, str]] = []
        for start in range(0, len(run), MAX_PIECE):
            for m in self._tokenize(run[start : start + MAX_PIECE]):
                if not dropped(m):
                    form = m.normalized_form()
                    if form.strip():
                        out.append((start + m.begin(), start + m.end(), form))
        return out

    def words(self, run: str) -> list[str]:
        """The forms the word table holds for `run` (a CJK run of NFKC-normalised text), in order."""
        return [form for _b, _e, form in self.morphemes(run)]
