"""Language codes a model may declare, and the scripts a query may use for each (the reranker's language
guard). Shared by config validation and the engine, so it sits below both."""

from __future__ import annotations

# Language codes a model declares, and the scripts a query may use for each. "multilingual" covers all.
MULTILINGUAL = "multilingual"
_LATIN_LANGUAGES = {"en", "de", "fr", "es", "it", "pt", "nl", "sv", "da", "no", "fi", "pl", "cs", "tr", "id", "vi"}
LANGUAGE_SCRIPTS: dict[str, frozenset[str]] = {
    **{code: frozenset({"latin"}) for code in _LATIN_LANGUAGES},
    "ja": frozenset({"cjk", "kana", "latin"}),
    "zh": frozenset({"cjk", "latin"}),
    "ko": frozenset({"hangul", "cjk", "latin"}),
    "ru": frozenset({"cyrillic", "latin"}),
    "uk": frozenset({"cyrillic", "latin"}),
    "el": frozenset({"greek", "latin"}),
    "ar": frozenset({"arabic", "latin"}),
}
