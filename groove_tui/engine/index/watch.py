"""Following edits to the KB: OS file events (watchfiles: inotify, FSEvents, ReadDirectoryChanges, or
polling) gathered into batches and handed to an update of just the paths that changed.

Events are filtered before they are gathered (`Exclusions`: excluded folders, `.grooveignore`, editors'
swap, backup and temporary files, files that are not Markdown), so an excluded path costs no index work.
A batch is handed over once the KB has been quiet for `QUIET_MS` or at the latest `debounce_ms` after its
first event; events that arrive while a batch is indexed are gathered meanwhile and make the next batch,
so a burst (a `git checkout` of a thousand files) is one or a few batches. What a batch can leave for
later (the stored phrase statistics) is brought up to date once the KB has been quiet for a while
after it, so a batch's index work is its own documents'.

The watcher heals itself: a KB folder that disappears (deleted, renamed away, unmounted) keeps its index
untouched and is waited for; when it is back, a full run catches up and watching resumes. An OS watch
limit switches to polling, with a message naming the limit to raise. Another process holding the index's
writer lock is waited for, the batch kept. A file name that is not valid UTF-8 is skipped with its reason:
watchfiles fails the whole watch on one (and drops the events gathered with it), so the watch is set up
again at once and what changed meanwhile is found by sizes and mtimes, not by reading the KB again.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from groove_tui.engine.errors import EngineError, IndexBusy
from groove_tui.engine.index.walk import NOT_UTF8_NAME, Exclusions, is_editor_artifact, printable_name
from groove_tui.engine.types import FileIssue, IndexReport

if TYPE_CHECKING:
    import sqlean

log = logging.getLogger(__name__)

QUIET_MS = 50  # a batch closes once no event came for this long (an editor's save is a few ms of events)
RETRY_SECONDS = 1.0  # how often a vanished KB or a busy index is looked at again
FIRST_YIELD_MS = 300  # how long the watcher waits for an event before it reports being set up
# Deferred work waits for this much quiet after a batch: a note saved again meanwhile would wait for it
# (it holds the index's write lock), and someone writing saves every few seconds.
SETTLE_QUIET_S = 2.0
LIMIT_HINT = (
    "the OS limit on watched folders is reached (raise it: sudo sysctl fs.inotify.max_user_watches=524288); "
    "polling the KB instead"
)

WatchKind = Literal["watching", "batch", "queued", "embedded", "missing", "restored", "polling", "waiting", "error"]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """What the watcher did. `batch`: an update ran over `paths` (KB-relative; empty when the whole KB
    was gone through), `report` its result and `milliseconds` its duration; `queued`: edits gathered
    while held (`paths`, each once), to be indexed when the hold ends; `embedded`: vectors the batches
    left pending were written behind them (`report.embedded` of them; results found meanwhile may rank
    otherwise now); the other kinds carry a `message` fit to show as is."""

    kind: WatchKind
    message: str = ""
    paths: tuple[str, ...] = ()
    report: IndexReport | None = None
    milliseconds: float = 0.0


_UNDECODABLE = re.compile(r'Unable to decode path "(.*)" to string', re.DOTALL)
_RUST_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|u\{[0-9A-Fa-f]+\}|.)", re.DOTALL)
_RUST_SIMPLE = {"0": "\0", "t": "\t", "r": "\r", "n": "\n"}


def undecodable_path(exc: BaseException) -> str | None:
    """The path watchfiles could not decode, from its error (the path as Rust's Debug prints it: bytes
    that are not UTF-8 as \\xNN), as os.fsdecode would give it; None for any other error."""
    found = _UNDECODABLE.fullmatch(str(exc))
    if found is None:
        return None
    raw = bytearray()
    last = 0
    for escape in _RUST_ESCAPE.finditer(found.group(1)):
        raw += found.group(1)[last : escape.start()].encode("utf-8")
        code = escape.group(1)
        if code[0] == "x" and len(code) == 3:
            raw.append(int(code[1:], 16))
        elif code[0] == "u" and len(code) > 1:
            raw += chr(int(code[2:-1], 16)).encode("utf-8", "surrogatepass")
        else:
            raw += _RUST_SIMPLE.get(code, code).encode("utf-8")
        last = escape.end()
    raw += found.group(1)[last:].encode("utf-8")
    return os.fsdecode(bytes(raw))


def queued_message(edits: int) -> str:
    """How a view says that `edits` saves wait for the first indexing to finish."""
    return f"{edits:,} edit{'s' if edits != 1 else ''} queued until indexing finishes"


def changed_paths(conn: sqlean.Connection, kb: Path, exclude_dirs: tuple[str, ...]) -> frozenset[str]:
    """The KB-relative notes whose size or mtime differ from the index's (`conn`), new or gone: what an
    update must look at after events were lost. Only stats, no file is read."""
    from groove_tui.engine.index.walk import name_is_utf8, walk_kb

    stored = {p: (s, m) for p, s, m in conn.execute("SELECT path, size_bytes, mtime_ns FROM documents")}
    changed: set[str] = set()
    seen: set[str] = set()
    for rel in walk_kb(kb, exclude_dirs):
        if not name_is_utf8(rel):
            continue  # never indexed: not a change
        seen.add(rel)
        try:
            st = (kb / rel).stat()
        except OSError:
            continue
        if stored.get(rel) != (st.st_size, st.st_mtime_ns):
            changed.add(rel)
    return frozenset(changed | (stored.keys() - seen))


def _is_watch_limit(exc: BaseException) -> bool:
    text = str(exc).lower()
    return getattr(exc, "errno", None) == errno.ENOSPC or "watch limit" in text or "max_user_watches" in text


class Watcher:
    """Runs until `stop` is set (see the module docstring). `update` indexes a set of KB-relative
    paths; `catch_up` a whole run (a `.grooveignore` change, or the KB back after it vanished). While
    `held` is set (the KB's first indexing runs in this process and holds the index), edits are gathered
    and counted (`queued` events), not indexed; once it is cleared they are, or the whole KB is if the
    index is still stale."""

    def __init__(
        self,
        kb: Path,
        exclude_dirs: tuple[str, ...],
        *,
        update: Callable[[frozenset[str]], IndexReport],
        catch_up: Callable[[], IndexReport],
        stale: Callable[[], bool] = lambda: False,
        changed: Callable[[], frozenset[str]] | None = None,
        settle: Callable[[], object] = lambda: None,
        on_event: Callable[[WatchEvent], None],
        stop: threading.Event,
        debounce_ms: int = 500,
        polling: bool = False,
        held: threading.Event | None = None,
    ) -> None:
        self.kb = kb
        self.exclude_dirs = exclude_dirs
        self.update = update
        self.catch_up = catch_up
        self.stale = stale
        self.changed = changed
        self.settle = settle
        self._unsettled = False  # a batch was written since `settle` last ran
        self._last_batch = 0.0  # when the last batch ended (time.monotonic)
        self.on_event = on_event
        self.stop = stop
        self.debounce_ms = debounce_ms
        self.polling = polling
        self.rules = Exclusions(kb, exclude_dirs)
        self._root = os.path.abspath(kb)
        self._pending: set[str] = set()  # KB-relative paths seen changing, not yet indexed
        self._bad_names: dict[str, FileIssue] = {}  # notes whose names cannot be indexed, for the next batch
        self._events_lost = False  # the watch failed and dropped what it had gathered: look at the KB
        self.held = held
        self._was_held = False  # the hold ended since the last loop: look at the whole index once
        self._queued = 0  # how many edits the last `queued` event counted

    # ------------------------------------------------------------ filtering

    def relative(self, path: str) -> str | None:
        """The KB-relative form of an event's path, or None for the KB itself or a path outside it."""
        rel = os.path.relpath(os.path.abspath(path), self._root)
        if rel == "." or rel.startswith(".."):
            return None
        return rel.replace(os.sep, "/")

    def wanted(self, change: object, path: str) -> bool:
        """Whether an event can change the index: a note, `.grooveignore`, or a folder (created, moved
        or deleted as a whole). Everything else is dropped here, before any index work."""
        rel = self.relative(path)
        if rel is None:
            return False
        head, _sep, name = rel.rpartition("/")
        if rel == ".grooveignore":
            return True
        if is_editor_artifact(name) or (head and self.rules.dir_excluded(head)):
            return False
        if name.lower().endswith(".md"):
            return not self.rules.file_excluded(rel)
        # Not a note: it matters only as a folder. One that exists now is judged by its name; one that
        # is gone (deleted or moved away) may have held notes, and the update finds out cheaply.
        if os.path.isdir(path):
            return not self.rules.dir_excluded(rel)
        return not os.path.exists(path) and not self.rules.dir_excluded(rel)

    # ------------------------------------------------------------ the loop

    def run(self) -> None:
        pending = self._pending
        while not self.stop.is_set():
            if not self.kb.is_dir():
                self._wait_for_kb()
                continue
            try:
                self._watch(pending)
            except Exception as exc:  # the watcher must outlive any OS error
                if self.stop.is_set():
                    break
                bad = undecodable_path(exc)
                if bad is not None:
                    self._skip_name(bad)
                    continue
                if not self.polling and _is_watch_limit(exc):
                    self.polling = True
                    self.on_event(WatchEvent("polling", LIMIT_HINT))
                    continue
                if not self.kb.is_dir():
                    continue  # the folder went away under the watch: wait for it
                self.on_event(WatchEvent("error", f"watching {self.kb} failed: {exc}; retrying"))
                self.stop.wait(RETRY_SECONDS)
        if self._unsettled and self.kb.is_dir():
            # Stopped within the quiet time after a batch: what it deferred is done now, so a search in
            # another process (a CLI search, a server) reads the stored statistics, not FTS5's slower path.
            self._settle()

    def _watch(self, pending: set[str]) -> None:
        import watchfiles

        established = False
        for changes in watchfiles.watch(
            self.kb,
            watch_filter=self.wanted,
            debounce=self.debounce_ms,
            step=min(QUIET_MS, self.debounce_ms),
            stop_event=self.stop,
            rust_timeout=FIRST_YIELD_MS,
            yield_on_timeout=True,
            raise_interrupt=False,
            force_polling=self.polling,
            poll_delay_ms=max(100, min(self.debounce_ms, 1000)),
            ignore_permission_denied=True,
        ):
            if not established:
                # Only now does the OS watch exist (the first yield: events, or a quiet timeout); an edit
                # made between the last indexing and this point is found by the staleness check.
                established = True
                if self._events_lost and self.changed is not None:
                    # The same watch goes on (no new "watching"): the notes changed while it was down.
                    self._events_lost = False
                    pending |= self.changed()
                else:
                    self._events_lost = False
                    if not self._holding() and self.stale():
                        self._apply(pending, whole=True)
                    mode = "polling" if self.polling else "OS events"
                    self.on_event(
                        WatchEvent("watching", f"watching {self.kb} ({mode}, debounce {self.debounce_ms} ms)")
                    )
            for _change, path in changes:
                rel = self.relative(path)
                if rel is not None:
                    pending.add(rel)
            if not self.kb.is_dir():
                return  # the run loop waits for it; what was gathered is kept for later
            if self._holding():
                self._count_queued(pending)
                if self.stop.is_set():
                    return
                continue
            if self._was_held:
                self._was_held = False
                if pending or self._bad_names:
                    self._apply(pending)
                if self.stale():  # the first indexing was cancelled or failed: catch up the whole KB
                    self._apply(pending, whole=True)
                continue
            if pending or self._bad_names:
                self._apply(pending)
            elif not changes and self._unsettled and time.monotonic() - self._last_batch >= SETTLE_QUIET_S:
                self._settle()
            if self.stop.is_set():
                return

    def _holding(self) -> bool:
        if self.held is not None and self.held.is_set():
            self._was_held = True
            return True
        return False

    def _count_queued(self, pending: set[str]) -> None:
        if len(pending) != self._queued:
            self._queued = n = len(pending)
            self.on_event(WatchEvent("queued", queued_message(n), paths=tuple(sorted(pending))))

    def _apply(self, pending: set[str], whole: bool = False) -> None:
        """Index what `pending` names (`whole`: the whole KB), retrying while another process holds the
        index; `pending` is emptied once the batch is written or cancelled by `stop` (each document is
        written whole or not at all, and the next run catches up what a cancelled batch left)."""
        batch = frozenset(pending)
        bad = tuple(self._bad_names.values())
        while True:
            started = time.perf_counter()
            try:
                if whole or ".grooveignore" in batch:
                    self.rules = Exclusions(self.kb, self.exclude_dirs)
                    report = self.catch_up()
                else:
                    report = self.update(batch)
            except IndexBusy as exc:
                self.on_event(WatchEvent("waiting", f"{exc}; waiting for it to finish"))
                if self.stop.wait(RETRY_SECONDS):
                    return
                continue
            except EngineError as exc:
                if not self.kb.is_dir():
                    return  # gone between the event and the update: the run loop waits for it
                if self.stop.is_set():
                    pending.clear()  # cancelled between documents: each written one is whole
                    return
                self.on_event(WatchEvent("error", str(exc), tuple(sorted(batch))))
                pending.clear()
                return
            pending.clear()
            self._bad_names.clear()
            self._unsettled, self._last_batch = True, time.monotonic()
            if bad:
                report = replace(report, skipped=report.skipped + tuple(i for i in bad if i not in report.skipped))
            self.on_event(
                WatchEvent(
                    "batch",
                    paths=() if whole or ".grooveignore" in batch else tuple(sorted(batch | {i.path for i in bad})),
                    report=report,
                    milliseconds=(time.perf_counter() - started) * 1000,
                )
            )
            return

    def _skip_name(self, path: str) -> None:
        """watchfiles met a name it cannot decode: its watch is dead and what it had gathered is lost. A note
        so named is reported skipped with the next batch (every other file is indexed as usual); the watch
        is set up again at once and the KB's sizes and mtimes say what changed meanwhile."""
        self._events_lost = True
        rel = self.relative(path)
        if rel is not None and rel.lower().endswith(".md") and os.path.lexists(path) and self.wanted(None, path):
            name = printable_name(rel)
            self._bad_names[name] = FileIssue(name, NOT_UTF8_NAME)

    def _settle(self) -> None:
        """The KB has been quiet for SETTLE_QUIET_S since the last batch: bring derived state the batches
        deferred up to date (the stored phrase statistics), off the path of their own searches. A busy
        index or a failure leaves it for the next quiet moment; the searches are exact either way."""
        try:
            self.settle()
        except IndexBusy:
            return
        except (EngineError, OSError) as exc:
            log.warning("deferred statistics not followed: %s", exc)
        self._unsettled = False

    def _wait_for_kb(self) -> None:
        self.on_event(
            WatchEvent(
                "missing", f"the KB folder {self.kb} is gone; the index is kept and watching resumes when it returns"
            )
        )
        while not self.kb.is_dir():
            if self.stop.wait(RETRY_SECONDS):
                return
        self.rules = Exclusions(self.kb, self.exclude_dirs)
        self.on_event(WatchEvent("restored", f"the KB folder {self.kb} is back; catching up"))
        self._apply(self._pending, whole=True)  # anything may have changed while it was away
