"""Which writing systems a text uses: the reranker's language guard.

An English-only cross-encoder turns a good Japanese ranking into a poor one (on jsquad,
reranking the full text's top 30 took nDCG@10 from 0.94 to 0.55), so a query in a script the reranker does
not cover keeps its fused order.
Scripts, not languages: telling English from French needs a model, telling Latin from kana does not.
"""

from __future__ import annotations

from groove_tui.settings.languages import LANGUAGE_SCRIPTS, MULTILINGUAL

_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0370, 0x03FF, "greek"),
    (0x0400, 0x052F, "cyrillic"),
    (0x0590, 0x05FF, "hebrew"),
    (0x0600, 0x06FF, "arabic"),
    (0x0900, 0x097F, "devanagari"),
    (0x0E00, 0x0E7F, "thai"),
    (0x1100, 0x11FF, "hangul"),
    (0x1E00, 0x1EFF, "latin"),
    (0x3040, 0x30FF, "kana"),
    (0x3130, 0x318F, "hangul"),
    (0x31F0, 0x31FF, "kana"),
    (0x3400, 0x4DBF, "cjk"),
    (0x4E00, 0x9FFF, "cjk"),
    (0xAC00, 0xD7AF, "hangul"),
    (0xF900, 0xFAFF, "cjk"),
    (0xFF21, 0xFF5A, "latin"),  # full-width Latin letters
    (0xFF66, 0xFF9F, "kana"),  # half-width katakana
    (0x20000, 0x3FFFF, "cjk"),
)
_NAMES = {"cjk": "CJK (Chinese/Japanese)", "kana": "Japanese kana", "hangul": "Korean"}


def script_of(ch: str) -> str | None:
    """The script of one character, or None for digits, punctuation, symbols and spaces."""
    cp = ord(ch)
    if cp < 0x0250:
        return "latin" if ch.isalpha() else None
    for lo, hi, name in _RANGES:
        if lo <= cp <= hi:
            return name if ch.isalpha() or name in ("cjk", "kana", "hangul") else None
    return "other" if ch.isalpha() else None


def scripts_in(text: str) -> frozenset[str]:
    return frozenset(s for s in map(script_of, text) if s is not None)


def scripts_covered(languages: tuple[str, ...]) -> frozenset[str] | None:
    """The scripts a model's languages cover; None = everything (multilingual, or nothing declared)."""
    if not languages or MULTILINGUAL in languages:
        return None
    out: set[str] = set()
    for code in languages:
        out |= LANGUAGE_SCRIPTS.get(code, frozenset())
    return frozenset(out)


# Scripts written with ideographs or syllables: one such character carries a word's worth of meaning, and a
# model that does not read them misreads the whole query, however few there are.
_DENSE = frozenset({"cjk", "kana", "hangul"})


def uncovered_reason(text: str, languages: tuple[str, ...], model: str) -> str | None:
    """Why `model` should not rerank `text` (a sentence), or None when its languages cover the text.

    A few letters of another alphabet inside a covered sentence do not count: English science writes
    TNF-α, IL-1β and NF-κB (16 of scifact's 809 claims), and an English model reads those claims fine. Any
    CJK, kana or Hangul does, and so does a sentence mostly in an uncovered alphabet."""
    covered = scripts_covered(languages)
    if covered is None:
        return None
    letters = [sc for sc in map(script_of, text) if sc is not None]
    outside_letters = [sc for sc in letters if sc not in covered]
    if not outside_letters:
        return None
    if not (_DENSE & set(outside_letters)) and 2 * len(outside_letters) < len(letters):
        return None
    outside = sorted(set(outside_letters))
    names = ", ".join(_NAMES.get(s, s.capitalize()) for s in outside)
    return f"the query uses {names} script, which {model} ({', '.join(languages)}) does not cover"
