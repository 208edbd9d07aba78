"""`groove-tui index KB`: (re)index headlessly, with a progress bar on a terminal, then the report as text
or JSON."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from groove_tui.commands.common import CLIError, load_engine

if TYPE_CHECKING:
    from collections.abc import Callable

    from groove_tui.engine import Engine
    from groove_tui.engine.index.watch import WatchEvent
    from groove_tui.engine.types import FileIssue


def run(args: argparse.Namespace) -> int:
    from groove_tui.engine.types import json_text
    from groove_tui.output.progress import ProgressLine

    watch = bool(getattr(args, "watch", False))
    debounce = getattr(args, "debounce_ms", None)
    if watch and debounce is not None:
        from groove_tui.settings.config import WATCH_DEBOUNCE_RANGE

        lo, hi = WATCH_DEBOUNCE_RANGE
        if not lo <= debounce <= hi:
            raise CLIError(f"--debounce-ms {debounce} is invalid: expected an integer in [{lo}, {hi}]")
    engine = _damaged_set_aside(args) if args.force else None
    engine = engine or load_engine(args, allow_model_change=args.force)
    with engine:
        bar = ProgressLine(sys.stderr, enabled=not args.quiet and sys.stderr.isatty(), notices=not args.quiet)
        try:
            report = engine.index(progress=bar.update, force=args.force, embed=not args.no_embed)
        finally:
            bar.close()
        if args.format == "json":
            print(json_text(report.to_dict()), flush=True)
        else:
            from groove_tui.output.textout import format_index_report

            print(format_index_report(report), flush=True)
        if watch:
            _watch(engine, debounce, True if getattr(args, "polling", None) else None)
    return 0


def _damaged_set_aside(args: argparse.Namespace) -> Engine | None:
    """--force over a damaged index file: the file is moved aside (kept, named `.damaged-<time>`) and the
    engine opened on a new one, which the run builds from the KB. None when the index is not damaged."""
    from pathlib import Path

    from groove_tui.engine import DB_NAME
    from groove_tui.engine.errors import IndexDamaged
    from groove_tui.engine.index import damage
    from groove_tui.engine.index.indexer import writer_lock
    from groove_tui.settings.paths import index_dir_for

    db = index_dir_for(Path(args.kb), args.index_dir) / DB_NAME
    problem = damage.check(db)  # damage SQLite meets only deep in a table shows here too
    if problem is None:
        try:
            return load_engine(args, allow_model_change=True)
        except IndexDamaged as exc:
            problem = exc.detail
    with writer_lock(db.parent):  # not under an indexer of another process
        aside = damage.set_aside(db)
    print(f"the index {db} is damaged ({problem}): moved aside to {aside.name}; building it again", file=sys.stderr)
    return load_engine(args, allow_model_change=True)


def format_watch_event(event: WatchEvent) -> str:
    """One stderr line per watcher event; a batch names its files, chunks and milliseconds."""
    from datetime import datetime

    stamp = datetime.now().strftime("%H:%M:%S")
    if event.kind != "batch" or event.report is None:
        return f"{stamp} {event.message}"
    r = event.report
    changed = r.added + r.updated + r.deleted + r.renamed
    n = len(event.paths)
    parts = [f"{n} path{'s' if n != 1 else ''}" if n else "the whole KB"]
    if changed:
        what = [
            f"{n} {label}"
            for n, label in ((r.added, "added"), (r.updated, "updated"), (r.renamed, "renamed"), (r.deleted, "deleted"))
            if n
        ]
        parts.append(", ".join(what))
    else:
        parts.append("no change")
    if r.skipped:
        parts.append(f"{len(r.skipped)} skipped ({_skipped_names(r.skipped)})")
    if r.embedded:
        parts.append(f"{r.embedded} chunk{'s' if r.embedded != 1 else ''} embedded")
    parts.append(f"{r.chunks:,} chunks in the index")
    parts.append(f"{event.milliseconds:.0f} ms")
    return f"{stamp} " + " · ".join(parts)


SKIPPED_NAMED = 3  # a batch line names this many skipped files, then counts the rest


def _skipped_names(issues: tuple[FileIssue, ...]) -> str:
    """Each skipped file with its reason, up to SKIPPED_NAMED, then "and N more"; names escaped onto the line."""
    from groove_tui.output.textout import escape_name

    named = [f"{escape_name(i.path)}: {escape_name(i.reason)}" for i in issues[:SKIPPED_NAMED]]
    if len(issues) > SKIPPED_NAMED:
        named.append(f"and {len(issues) - SKIPPED_NAMED} more")
    return "; ".join(named)


def watch_event_printer() -> Callable[[WatchEvent], None]:
    """A callback that writes each watch event as one line on stderr. Events come from the watcher's thread
    and from the embedding behind it, and print writes the text and its newline apart: the lock keeps two
    events at once from sharing a line."""
    import threading

    one_at_a_time = threading.Lock()

    def write(event: WatchEvent) -> None:
        line = format_watch_event(event) + "\n"
        with one_at_a_time:
            sys.stderr.write(line)
            sys.stderr.flush()

    return write


def _watch(engine: Engine, debounce_ms: int | None, polling: bool | None) -> None:
    """Follow edits until ctrl+c (or SIGTERM): the signal only sets the stop event, so the batch in flight
    ends with its documents committed whole, or cancelled between two of them; then exit 0."""
    import signal
    import threading

    stop = threading.Event()

    def on_signal(_signum: int, _frame: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        engine.watch(
            watch_event_printer(),
            stop,
            debounce_ms=debounce_ms,
            polling=polling,
        )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("stopped watching", file=sys.stderr, flush=True)
