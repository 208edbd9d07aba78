"""groove-tui: see how hybrid search ranks your Markdown notes. `cli` parses and dispatches to `commands/`
(one module per subcommand) or the explorer (`tui/`); both print through `output/` and drive `engine/`, which
reads `settings/`; `demo/` is the packaged handbook. Exports `__version__`."""

__version__ = "0.1.0"
