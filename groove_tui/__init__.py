"""groove-tui: see how hybrid search ranks your Markdown notes. `cli` parses and dispatches to `commands/`
(one module per subcommand) or the explorer (`tui/`); both print through `output/` and drive `engine/`, which
reads `settings/`; `demo/` is the packaged handbook. Exports `__version__`."""

from functools import cache


def __getattr__(name: str) -> str:
    if name == "__version__":  # read when asked: importlib.metadata costs a short command ~60 ms
        return _version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:  # one source of truth: the version pyproject.toml gives the installed distribution
        return version("groove-tui")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"
