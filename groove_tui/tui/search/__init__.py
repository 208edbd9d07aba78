"""Each side's searches: the query and settings it runs with, the runs themselves, compare mode, the
query history and what leaves the app (exports, the editor, the clipboard)."""
