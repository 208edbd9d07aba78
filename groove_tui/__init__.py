"""groove-tui: see how hybrid search ranks your Markdown notes."""

__version__ = "0.1.0"
