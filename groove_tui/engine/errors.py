"""Errors the engine raises. Each carries a message fit to show a user as is."""

from __future__ import annotations


class EngineError(Exception):
    """Base class of every error the engine reports to its callers."""


class IndexBusy(EngineError):
    """Another groove-tui process holds the index's writer lock (it is indexing the same KB)."""


class IndexError_(EngineError):
    """The index cannot be used as it is (wrong model, corrupt, unreadable)."""


class IndexNotReady(IndexError_):
    """A reader found no index it can answer from without writing: `reason` is "missing" (never built,
    or still being created) or "outdated" (made by an older groove-tui: an indexing run updates it)."""

    def __init__(self, reason: str, db_path: object) -> None:
        what = (
            "has not been built yet"
            if reason == "missing"
            else "was made by another version of groove-tui and must be updated by an indexing run"
        )
        super().__init__(f"the index {db_path} {what}")
        self.reason = reason
        self.db_path = db_path


class IndexDamaged(IndexError_):
    """The index file is damaged (SQLite finds it malformed, or not a database). The KB is the source of
    truth: a forced indexing run moves the file aside and builds the index again (`index/damage.py`)."""

    def __init__(self, db_path: object, detail: str) -> None:
        super().__init__(
            f"the index {db_path} is damaged ({detail}); rebuild it from the KB: groove-tui index KB --force"
        )
        self.db_path = db_path
        self.detail = detail


class IndexWriteFailed(IndexError_):
    """Writing the index failed part-way (a full disk, an I/O error); every document committed before
    stays searchable, and the next indexing run goes on from there."""


class ModelMismatch(IndexError_):
    """The index was built with another embedding model (`recorded`) than the one named (`configured`)."""

    def __init__(self, message: str, *, recorded: str = "", configured: str = "") -> None:
        super().__init__(message)
        self.recorded = recorded
        self.configured = configured


class SearchCancelled(EngineError):
    """The caller's cancel event was set; the search stopped between or inside stages."""


class KBError(EngineError):
    """The knowledge base path is missing or not a directory."""


class ParamError(EngineError, ValueError):
    """A search parameter is out of range or of the wrong type; the message names it and the range."""


class UnknownNote(EngineError, ValueError):
    """A note or section asked about that the index does not hold; `nearest` are the closest it does."""

    def __init__(self, message: str, nearest: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.nearest = nearest
