"""`groove-tui serve KB`: groove's MCP server over the pipeline tuned in the explorer.

The settings are those every command uses (groove.toml as found, the fragment saved from the explorer
into it, the flags), written into the engine's configuration so they are each search's defaults; they
are said on stderr at start (stdout is the protocol's over stdio). One engine stays open: models load
once. The server itself is `groove_tui.server`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from groove_tui.commands.common import CLIError, config_for, load_engine

if TYPE_CHECKING:
    from groove_tui.engine import Engine
    from groove_tui.settings.config import Config


def run(args: argparse.Namespace) -> int:
    from groove_tui.server import app

    http = getattr(args, "http", None)
    bind: tuple[str, int] | None = None
    if http is not None:
        try:
            bind = app.parse_bind(http)
        except ValueError as exc:
            raise CLIError(f"--http {exc}; expected HOST:PORT, e.g. 127.0.0.1:3100") from None
    token = args.token if args.token is not None else os.environ.get(app.TOKEN_ENV)
    if token is not None and not token.strip():
        raise CLIError(f"the bearer token is empty (--token or {app.TOKEN_ENV}): give a secret, or leave both unset")
    if bind is not None and not app.is_loopback(bind[0]) and not token:
        raise CLIError(
            f"--http {http} listens beyond this machine, and groove-tui's MCP server then needs a bearer token: "
            f"set {app.TOKEN_ENV} (or --token) to a secret the clients send as 'Authorization: Bearer …', or "
            "bind 127.0.0.1"
        )
    if bind is not None and not app.is_loopback(bind[0]) and token and len(token) < app.TOKEN_MIN_CHARS:
        raise CLIError(
            f"the bearer token is too short ({len(token)} character{'s' if len(token) != 1 else ''}) for --http "
            f"{http}, which listens beyond this machine: give one of at least {app.TOKEN_MIN_CHARS} characters "
            'that cannot be guessed, e.g. "$(openssl rand -hex 32)"'
        )
    if args.debounce_ms is not None:
        from groove_tui.settings.config import WATCH_DEBOUNCE_RANGE

        lo, hi = WATCH_DEBOUNCE_RANGE
        if not lo <= args.debounce_ms <= hi:
            raise CLIError(f"--debounce-ms {args.debounce_ms} is invalid: expected an integer in [{lo}, {hi}]")
    config, flags = settings_for(args)
    watch = config.watch.enabled and not args.no_watch
    engine = load_engine(args, config=config)
    with engine:
        print(describe(engine, config, flags, watch, args, bind, token), file=sys.stderr, flush=True)
        return _serve(engine, watch, args.debounce_ms, bind, token)


def settings_for(args: argparse.Namespace) -> tuple[Config, dict[str, str]]:
    """The settings served: groove.toml as found (with what the explorer saved into it), the flags written
    in as `config show` writes them, so each is every search's default; and which key each flag set."""
    from groove_tui.commands.config import with_flags

    config, flags = with_flags(config_for(args), args)
    if args.polling:
        config = replace(config, watch=replace(config.watch, polling=True))
    return config, flags


def _serve(
    engine: Engine, watch: bool, debounce_ms: int | None, bind: tuple[str, int] | None, token: str | None
) -> int:
    import anyio

    from groove_tui.commands.index import watch_event_printer
    from groove_tui.server import app
    from groove_tui.server.kb import KbService

    service = KbService(engine)
    server = app.build_server(service)

    async def main() -> None:
        if bind is None:
            await app.serve_stdio(server)
        else:
            await app.serve_http(
                server,
                bind[0],
                bind[1],
                token,
                lambda port, _stop: print(http_line(bind[0], port, token), file=sys.stderr, flush=True),
            )

    watching = app.Watching(service, watch_event_printer(), debounce_ms) if watch else contextlib.nullcontext()
    # ctrl+c is how a terminal user stops a server, SIGTERM how a service manager does: both stop it the
    # same way (uvicorn hands either back once it has shut down), and neither is a failure
    with _sigterm_as_interrupt(), watching, contextlib.suppress(KeyboardInterrupt):
        anyio.run(main)
    print("groove-tui serve: stopped", file=sys.stderr, flush=True)
    return 0


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, as SIGINT does, while the server runs (main thread only)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def describe(
    engine: Engine,
    config: Config,
    flags: dict[str, str],
    watch: bool,
    args: argparse.Namespace,
    bind: tuple[str, int] | None,
    token: str | None,
) -> str:
    """What is served and with which settings, for stderr at start."""
    import tomllib

    from groove_tui.settings.fragment import provenance

    docs, chunks, pending = engine.store.counts()
    s, rr, q = config.search, config.reranker, config.quality_filter
    reranker = f"{rr.model} ({'on' if rr.rerank_by_default else 'off'} by default)" if rr.model else "none"
    mmr = f"on (λ {s.mmr.lambda_:g}, same-doc penalty {s.mmr.same_doc_penalty:g})" if s.mmr.enabled else "off"
    lines = [
        f"groove-tui serve: {engine.kb_path} — {docs:,} documents, {chunks:,} chunks"
        + (f", {pending:,} still to embed" if pending else "")
        + f" (index {engine.store.db_path})",
        f"  settings: {config.source or 'no groove.toml (defaults)'}"
        + (f"; flags {' '.join(sorted(set(flags.values())))}" if flags else ""),
        f"  model {engine.model_id} · fusion {s.fusion.method} · reranker {reranker} · MMR {mmr} · parent "
        f"retriever {'on' if s.parent_retriever.enabled else 'off'} · quality ≥ {q.effective:g} · low_confidence "
        f"under {s.min_confidence_ratio:g}",
    ]
    data = None
    if config.source:
        try:
            with open(config.source, "rb") as fh:
                data = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError):
            data = None
    changed = [
        f"{key} = {_shown(value)} ({src})"
        for key, value, src in provenance(config, data, flags)
        if src != "default" and not key.startswith(("tui.", "eval."))
    ]
    if changed:
        lines.append("  not the defaults: " + "; ".join(changed))
    if docs == 0:
        lines.append(
            "  the index is empty: "
            + ("the watcher indexes the KB now" if watch else "call rebuild_index, or run groove-tui index first")
        )
    debounce = args.debounce_ms if args.debounce_ms is not None else config.watch.debounce_ms
    lines.append(
        f"  following edits to the notes (debounce {debounce} ms)"
        if watch
        else "  not following edits (--no-watch or [watch] enabled = false): rebuild_index brings the index up to date"
    )
    if bind is None:
        lines.append("  MCP over stdio")
    return "\n".join(lines)


def http_line(host: str, port: int, token: str | None) -> str:
    """Where the HTTP endpoint listens (the port the OS gave, when 0 was asked for)."""
    shown = f"[{host}]" if ":" in host else host
    auth = "bearer token required" if token else "no token: loopback only"
    return f"  MCP over streamable HTTP at http://{shown}:{port}/mcp ({auth}); ctrl+c stops"


def _shown(value: Any) -> str:
    from groove_tui.settings.fragment import toml_value

    try:
        return toml_value(value)
    except (TypeError, ValueError):
        return repr(value)
