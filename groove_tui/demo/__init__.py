"""The demo knowledge base: a small handbook about using groove-tui (English notes and a few Japanese
ones), shipped as package data together with its golden file, so `groove-tui demo` shows live metrics,
sweeps and wins/losses from the first paint.

The folder is opened where it is installed and only ever read: its index lives in the user cache like
any other KB's, and judgments of its golden file are saved outside it (a golden file inside a KB is
never written back).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

GOLDEN_NAME = "golden-demo.yml"


def kb_path() -> Path:
    """The installed demo KB folder."""
    return Path(str(files(__name__) / "kb"))


def golden_path() -> Path:
    """Its golden file (inside the KB folder; not a Markdown file, so not indexed)."""
    return kb_path() / GOLDEN_NAME
