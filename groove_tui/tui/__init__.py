"""The Textual explorer. Import `groove_tui.tui.app` for `run` and `GrooveApp`; this package imports
nothing heavy at module level."""
