"""groove-tui: see how hybrid search ranks your Markdown notes. `cli` parses and dispatches to `commands/`
(one module per subcommand) or the explorer (`tui/`); both print through `output/` and drive `engine/`, which
reads `settings/`; `demo/` is the packaged handbook. Exports `__version__`."""

from importlib.metadata import PackageNotFoundError, version

try:
    # one source of truth: the version pyproject.toml gives the installed distribution
    __version__ = version("groove-tui")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
