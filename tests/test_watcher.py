"""A real watcher (watchfiles: inotify here, or polling) over a temporary KB: edits become batches, each
an update of just the changed paths; excluded folders and editors' files never reach a batch; the KB
folder vanishing and coming back, a symlink loop and the OS watch limit are survived. Waits are for
events, with generous timeouts; nothing is timed."""

from __future__ import annotations

import errno
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.index import watch as watch_mod
from groove_tui.engine.index.watch import WatchEvent

from helpers import hashing_config, write_kb

TIMEOUT = 30.0


class Running:
    def __init__(self, eng: Engine, polling: bool = False) -> None:
        self.eng = eng
        self.events: queue.Queue[WatchEvent] = queue.Queue()
        self.seen: list[WatchEvent] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(
            target=eng.watch, args=(self.events.put, self.stop), kwargs={"debounce_ms": 100, "polling": polling}
        )

    def next(self, want: Callable[[WatchEvent], bool]) -> WatchEvent:
        """The first event (from now on) that `want` accepts, within TIMEOUT (a watcher that keeps
        reporting something else, such as an error and a retry, fails the test rather than hanging it)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            event = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            self.seen.append(event)
            if want(event):
                return event

    def settle(self, holds: Callable[[], bool]) -> None:
        """Wait for batches until `holds()` (true already: nothing to wait for)."""
        while not holds():
            self.next(lambda e: e.kind == "batch")

    def until_indexed(self, rel: str) -> WatchEvent:
        return self.next(lambda e: e.kind == "batch" and rel in e.paths)


@pytest.fixture
def watching(tmp_path: Path) -> Iterator[Running]:
    kb = write_kb(tmp_path / "kb", {"start.md": "# Start\n\nnothing here yet\n"})
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index()
        run = Running(eng)
        run.thread.start()
        run.next(lambda e: e.kind == "watching")
        yield run
        run.stop.set()
        run.thread.join(TIMEOUT)
        assert not run.thread.is_alive()


def _paths(eng: Engine, query: str) -> set[str]:
    return {h.path for h in eng.search(query, SearchParams(limit=500, legs="fts")).results}


def test_a_real_watcher_follows_creates_saves_renames_moves_and_deletes(watching: Running) -> None:
    kb, eng = watching.eng.kb_path, watching.eng
    (kb / "fresh.md").write_text("# Fresh\n\nzebrafish migration\n", "utf-8")
    batch = watching.until_indexed("fresh.md")
    assert batch.report is not None and batch.report.added == 1
    assert _paths(eng, "zebrafish") == {"fresh.md"}

    # an editor's atomic save: a temporary file renamed over the note, a swap file beside it
    (kb / ".fresh.md.swp").write_text("swap", "utf-8")
    (kb / "fresh.md.tmp").write_text("# Fresh\n\nquokka habitat\n", "utf-8")
    os.replace(kb / "fresh.md.tmp", kb / "fresh.md")
    batch = watching.until_indexed("fresh.md")
    assert not any(p.endswith((".swp", ".tmp")) for p in batch.paths)
    assert _paths(eng, "quokka") == {"fresh.md"} and _paths(eng, "zebrafish") == set()

    (kb / "sub").mkdir()
    os.replace(kb / "fresh.md", kb / "sub" / "renamed.md")
    watching.settle(lambda: _paths(eng, "quokka") == {"sub/renamed.md"})

    os.rename(kb / "sub", kb / "moved")  # a folder moved: its notes move with it
    watching.settle(lambda: _paths(eng, "quokka") == {"moved/renamed.md"})

    (kb / "moved" / "renamed.md").unlink()
    watching.until_indexed("moved/renamed.md")
    assert _paths(eng, "quokka") == set()


def test_excluded_folders_and_editor_files_never_reach_a_batch(watching: Running) -> None:
    kb, eng = watching.eng.kb_path, watching.eng
    for folder in (".git", "node_modules", ".obsidian"):
        (kb / folder).mkdir()
        (kb / folder / "hidden.md").write_text("# Hidden\n\nplatypus\n", "utf-8")
    (kb / ".#lock.md").write_text("user@host", "utf-8")
    (kb / "note.md~").write_text("# Backup\n\nplatypus\n", "utf-8")
    (kb / "sentinel.md").write_text("# Sentinel\n\nplatypus\n", "utf-8")
    watching.until_indexed("sentinel.md")
    batches = [e for e in watching.seen if e.kind == "batch"]
    assert all(
        not p.startswith((".git", "node_modules", ".obsidian", ".#")) and not p.endswith("~")
        for e in batches
        for p in e.paths
    )
    assert _paths(eng, "platypus") == {"sentinel.md"}


def test_a_burst_is_a_few_batches_not_one_per_file(watching: Running) -> None:
    kb, eng = watching.eng.kb_path, watching.eng
    (kb / "burst").mkdir()
    for i in range(200):
        (kb / "burst" / f"b{i:03d}.md").write_text(f"# B{i}\n\nwombat {i}\n", "utf-8")
    (kb / "burst-done.md").write_text("# Done\n\nwombat done\n", "utf-8")
    watching.settle(lambda: len(_paths(eng, "wombat")) == 201)
    batches = [e for e in watching.seen if e.kind == "batch"]
    assert len(batches) < 50  # gathered: far fewer batches than files


def test_the_kb_folder_gone_keeps_the_index_and_watching_resumes_when_it_returns(watching: Running) -> None:
    kb, eng = watching.eng.kb_path, watching.eng
    (kb / "keep.md").write_text("# Keep\n\naardvark\n", "utf-8")
    watching.until_indexed("keep.md")
    away = kb.with_name("kb-away")
    os.rename(kb, away)
    missing = watching.next(lambda e: e.kind == "missing")
    assert "is gone" in missing.message
    assert _paths(eng, "aardvark") == {"keep.md"}  # nothing deleted while it is away
    (away / "while-away.md").write_text("# Away\n\naardvark too\n", "utf-8")
    os.rename(away, kb)
    watching.next(lambda e: e.kind == "restored")
    watching.next(lambda e: e.kind == "batch")  # the catch-up run
    assert _paths(eng, "aardvark") == {"keep.md", "while-away.md"}
    watching.next(lambda e: e.kind == "watching")
    (kb / "after.md").write_text("# After\n\naardvark after\n", "utf-8")
    watching.until_indexed("after.md")


def test_a_symlink_loop_and_a_note_deleted_before_it_is_read_are_survived(watching: Running) -> None:
    kb, eng = watching.eng.kb_path, watching.eng
    (kb / "loop").symlink_to(kb, target_is_directory=True)
    (kb / "flash.md").write_text("# Flash\n\ngone soon\n", "utf-8")
    (kb / "flash.md").unlink()
    (kb / "stays.md").write_text("# Stays\n\nnarwhal\n", "utf-8")
    watching.until_indexed("stays.md")
    assert _paths(eng, "narwhal") == {"stays.md"} and _paths(eng, "soon") == set()
    assert not [e for e in watching.seen if e.kind == "error"]


def test_an_unreadable_note_is_skipped_with_its_reason_kept_and_indexed_once_readable(
    watching: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests run as root, which chmod does not stop from reading: the open itself is refused for the
    paths in `locked`, as the OS refuses it for a file without read permission. A FIFO named like a
    note (never opened, it would block) goes into the same batch."""
    from groove_tui.commands.index import format_watch_event
    from groove_tui.engine.index import walk

    kb, eng = watching.eng.kb_path, watching.eng
    (kb / "locked.md").write_text("# Locked\n\nzebrafinch before\n", "utf-8")
    watching.until_indexed("locked.md")
    locked = {os.fspath(kb / "locked.md"), os.fspath(kb / "new-locked.md")}
    real = walk._open_nonblocking

    def refusing(path: str, flags: int) -> int:
        if os.fspath(path) in locked:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path, flags)

    monkeypatch.setattr(walk, "_open_nonblocking", refusing)
    (kb / "locked.md").write_text("# Locked\n\nzebrafinch okapi after\n", "utf-8")
    (kb / "new-locked.md").write_text("# New\n\nzebrafinch okapi new\n", "utf-8")
    os.mkfifo(kb / "pipe.md")
    (kb / "open.md").write_text("# Open\n\nzebrafinch okapi open\n", "utf-8")
    watching.settle(lambda: "open.md" in _paths(eng, "okapi"))
    watching.settle(lambda: {"locked.md", "new-locked.md", "pipe.md"} <= _skipped(watching.seen))
    issues = {i.path: i.reason for e in watching.seen if e.kind == "batch" and e.report for i in e.report.skipped}
    assert issues["locked.md"] == issues["new-locked.md"] == "unreadable: Permission denied"
    assert issues["pipe.md"] == "not a regular file (a FIFO)"
    # The rest of the batch is indexed; the note that was indexed before keeps its last readable text.
    assert _paths(eng, "okapi") == {"open.md"} and _paths(eng, "zebrafinch") == {"locked.md", "open.md"}
    assert not [e for e in watching.seen if e.kind == "error"]
    batch = next(e for e in watching.seen if e.kind == "batch" and e.report and e.report.skipped)
    line = format_watch_event(batch)  # index --watch's line: counted, with the first reason
    assert re.search(r"\d+ skipped \((locked|new-locked|pipe)\.md: ", line) and "Traceback" not in line
    # Readable again (the permissions fixed: chmod is itself an event): both are picked up.
    locked.clear()
    os.chmod(kb / "locked.md", 0o644)
    os.chmod(kb / "new-locked.md", 0o644)
    watching.settle(lambda: _paths(eng, "okapi") == {"locked.md", "new-locked.md", "open.md"})
    assert _paths(eng, "before") == set()


def _skipped(seen: list[WatchEvent]) -> set[str]:
    return {i.path for e in seen if e.kind == "batch" and e.report for i in e.report.skipped}


def test_the_os_watch_limit_switches_to_polling_with_the_setting_to_raise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import watchfiles

    real = watchfiles.watch

    def limited(*args, **kwargs):  # type: ignore[no-untyped-def]
        if not kwargs.get("force_polling"):
            raise OSError(errno.ENOSPC, "OS file watch limit reached.")
        return real(*args, **kwargs)

    monkeypatch.setattr(watchfiles, "watch", limited)
    kb = write_kb(tmp_path / "kb", {"a.md": "# A\n\nalpha\n"})
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index()
        run = Running(eng)
        run.thread.start()
        try:
            notice = run.next(lambda e: e.kind == "polling")
            assert "fs.inotify.max_user_watches" in notice.message
            assert "polling" in run.next(lambda e: e.kind == "watching").message
            (kb / "polled.md").write_text("# Polled\n\nmeerkat\n", "utf-8")
            run.until_indexed("polled.md")
            assert _paths(eng, "meerkat") == {"polled.md"}
        finally:
            run.stop.set()
            run.thread.join(TIMEOUT)


def test_another_process_indexing_is_waited_for_and_said(watching: Running) -> None:
    from groove_tui.engine.index.indexer import writer_lock

    kb, eng = watching.eng.kb_path, watching.eng
    with writer_lock(eng.index_dir):  # as another process would hold it (flock is per open file)
        (kb / "later.md").write_text("# Later\n\nokapi\n", "utf-8")
        waiting = watching.next(lambda e: e.kind == "waiting")
        assert "another groove-tui process is indexing" in waiting.message
    watching.until_indexed("later.md")
    assert _paths(eng, "okapi") == {"later.md"}


def test_limit_errors_are_recognised() -> None:
    assert watch_mod._is_watch_limit(OSError(errno.ENOSPC, "No space left on device"))
    assert watch_mod._is_watch_limit(RuntimeError("OS file watch limit reached."))
    assert not watch_mod._is_watch_limit(OSError(errno.EACCES, "Permission denied"))


def test_deferred_statistics_are_followed_once_per_quiet_moment_and_retried_while_busy(tmp_path: Path) -> None:
    """A batch leaves the stored statistics to the first quiet moment after it: `settle` runs then, once
    (no batch, no call), and again at the next quiet moment when another process held the index."""
    from groove_tui.engine.errors import IndexBusy

    kb = write_kb(tmp_path / "kb", {"start.md": "# Start\n\nnothing here yet\n"})
    calls: queue.Queue[str] = queue.Queue()
    answers = iter(["busy", "done"])

    def settle() -> None:
        answer = next(answers, "again")
        calls.put(answer)
        if answer == "busy":
            raise IndexBusy("another groove-tui process is indexing")

    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index()
        events: queue.Queue[WatchEvent] = queue.Queue()
        stop = threading.Event()
        watcher = watch_mod.Watcher(
            kb,
            eng.config.exclude_dirs,
            update=lambda paths: eng.update(paths, defer_statistics=True),
            catch_up=eng.index,
            settle=settle,
            on_event=events.put,
            stop=stop,
            debounce_ms=100,
        )
        thread = threading.Thread(target=watcher.run)
        thread.start()
        try:
            while events.get(timeout=TIMEOUT).kind != "watching":
                pass
            (kb / "note.md").write_text("# Note\n\nokapi\n", "utf-8")
            while events.get(timeout=TIMEOUT).kind != "batch":
                pass
            assert calls.get(timeout=TIMEOUT) == "busy"
            assert calls.get(timeout=TIMEOUT) == "done"
            # quiet moments without a batch call nothing
            time.sleep(watch_mod.SETTLE_QUIET_S + 3 * watch_mod.FIRST_YIELD_MS / 1000)
            assert calls.empty()
        finally:
            stop.set()
            thread.join(TIMEOUT)


def test_a_note_named_with_a_byte_that_is_not_utf8_is_skipped_and_the_watch_goes_on(
    watching: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """watchfiles ends its watch on such a name and drops what it gathered with it: the name is reported
    skipped with its reason, the note saved beside it is indexed all the same, and neither it nor later
    events on the name cost an error, a wait or a run over the whole KB."""
    from groove_tui.commands.index import format_watch_event

    kb, eng = watching.eng.kb_path, watching.eng
    whole_runs: list[str] = []
    real_index = eng.index
    monkeypatch.setattr(eng, "index", lambda *a, **kw: whole_runs.append("index") or real_index(*a, **kw))
    bad = os.path.join(os.fsencode(kb), b"caf\xe9.md")
    with open(bad, "wb") as f:
        f.write(b"# Cafe\n\nespresso\n")
    (kb / "beside.md").write_text("# Beside\n\nwombat\n", "utf-8")
    watching.settle(lambda: _paths(eng, "wombat") == {"beside.md"} and "caf\\xe9.md" in _skipped(watching.seen))
    issue = next(i for e in watching.seen if e.kind == "batch" and e.report for i in e.report.skipped)
    assert issue.path == "caf\\xe9.md" and issue.reason == "file name is not valid UTF-8; rename it to index it"
    batch = next(e for e in watching.seen if e.kind == "batch" and e.report and e.report.skipped)
    assert "1 skipped (caf\\xe9.md: file name is not valid UTF-8" in format_watch_event(batch)
    for word in ("ristretto", "lungo"):  # each later event on the name: skipped again, the stream goes on
        watching.seen.clear()
        with open(bad, "ab") as f:
            f.write(word.encode() + b"\n")
        (kb / f"{word}.md").write_text(f"# {word}\n\n{word}\n", "utf-8")
        watching.settle(lambda w=word: _paths(eng, w) == {f"{w}.md"})
        assert "caf\\xe9.md" in _skipped(watching.seen)
    assert not [e for e in watching.seen if e.kind in ("error", "watching")]
    assert _paths(eng, "espresso") == set() and whole_runs == []


def test_the_path_in_watchfiles_decode_error_is_read_back_to_its_bytes() -> None:
    message = r'Unable to decode path "/kb/a\"b\\c\tcaf\xE9 \u{200b}x\x7f.md" to string'
    path = watch_mod.undecodable_path(RuntimeError(message))
    assert path is not None and os.fsencode(path) == b'/kb/a"b\\c\tcaf\xe9 \xe2\x80\x8bx\x7f.md'
    assert watch_mod.undecodable_path(RuntimeError("error in underlying watcher: boom")) is None


def test_a_note_read_between_its_truncation_and_its_write_keeps_its_text_until_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that opens, truncates, then writes: the update (what a watcher batch runs) reads the file
    between the two. The note is not deleted; its old text stays searchable until the file holds still,
    then the new text replaces it, in the same update."""
    from groove_tui.engine.index import indexer

    kb = write_kb(tmp_path / "kb", {"draft.md": "# Draft\n\nplatypus before\n", "other.md": "# Other\n\nx\n"})
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index()
        real = indexer.read_file
        during: list[set[str]] = []

        def caught_mid_write(root: Path, rel: str):  # type: ignore[no-untyped-def]
            if rel != "draft.md" or during:
                return real(root, rel)
            (root / rel).write_bytes(b"")  # truncated: the writer has not written yet

            def write_later() -> None:
                time.sleep(0.02)
                during.append(_paths(eng, "platypus"))  # searched while the update waits
                (root / rel).write_text("# Draft\n\nplatypus after\n", "utf-8")

            writer = threading.Thread(target=write_later)
            writer.start()
            try:
                return real(root, rel)
            finally:
                writer.join()  # written before the update looks again: as fast as a real writer

        monkeypatch.setattr(indexer, "read_file", caught_mid_write)
        report = eng.update({"draft.md"})
        assert during == [{"draft.md"}]
        assert (report.deleted, report.updated, report.skipped) == (0, 1, ())
        assert _paths(eng, "after") == {"draft.md"} and _paths(eng, "before") == set()


def test_a_note_emptied_for_good_is_dropped_once_it_holds_still(tmp_path: Path) -> None:
    kb = write_kb(tmp_path / "kb", {"draft.md": "# Draft\n\nplatypus\n", "other.md": "# Other\n\nx\n"})
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index()
        (kb / "draft.md").write_bytes(b"")
        report = eng.update({"draft.md"})
        assert report.deleted == 1 and [(i.path, i.reason) for i in report.skipped] == [
            ("draft.md", "no text to index")
        ]
        assert _paths(eng, "platypus") == set()


def _held_watch(tmp_path: Path) -> tuple[Engine, Running, threading.Event]:
    kb = write_kb(tmp_path / "kb", {"start.md": "# Start\n\nnothing here yet\n"})
    eng = Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx")
    held = threading.Event()
    held.set()
    run = Running(eng)
    run.thread = threading.Thread(
        target=eng.watch, args=(run.events.put, run.stop), kwargs={"debounce_ms": 100, "held": held}
    )
    run.thread.start()
    run.next(lambda e: e.kind == "watching")
    return eng, run, held


def test_edits_during_a_held_first_index_are_counted_then_indexed_when_it_ends(tmp_path: Path) -> None:
    eng, run, held = _held_watch(tmp_path)
    try:
        kb = eng.kb_path
        (kb / "new.md").write_text("# New\n\nzebrafish migration\n", "utf-8")
        (kb / "start.md").write_text("# Start\n\nmoss\n", "utf-8")
        queued = run.next(lambda e: e.kind == "queued" and len(e.paths) == 2)
        assert queued.paths == ("new.md", "start.md") and queued.message == "2 edits queued until indexing finishes"
        eng.index()  # the first indexing, which the hold is for: it reads the notes as they are now
        (kb / "start.md").write_text("# Start\n\nquokka habitat\n", "utf-8")  # saved again before it ends
        (kb / "later.md").write_text("# Later\n\nheron\n", "utf-8")
        run.next(lambda e: e.kind == "queued" and len(e.paths) == 3)
        assert not any(e.kind == "batch" for e in run.seen)
        held.clear()
        run.settle(lambda: _paths(eng, "quokka") == {"start.md"})
        assert _paths(eng, "zebrafish") == {"new.md"} and _paths(eng, "heron") == {"later.md"}
        assert _paths(eng, "moss") == set()
        assert not any(e.kind == "batch" and e.paths == () for e in run.seen)  # the queued paths, not a whole run
    finally:
        run.stop.set()
        run.thread.join(TIMEOUT)
        eng.close()
    assert not run.thread.is_alive()


def test_a_hold_that_ends_on_a_stale_index_catches_up_the_whole_kb(tmp_path: Path) -> None:
    eng, run, held = _held_watch(tmp_path)
    try:
        (eng.kb_path / "new.md").write_text("# New\n\nzebrafish migration\n", "utf-8")
        run.next(lambda e: e.kind == "queued" and e.paths == ("new.md",))
        held.clear()  # the first indexing was cancelled: nothing is indexed yet
        run.next(lambda e: e.kind == "batch" and e.paths == ("new.md",))  # what was queued goes first
        batch = run.next(lambda e: e.kind == "batch")
        assert batch.paths == () and batch.report is not None and batch.report.added == 1  # then the rest
        assert _paths(eng, "zebrafish") == {"new.md"} and _paths(eng, "nothing") == {"start.md"}
    finally:
        run.stop.set()
        run.thread.join(TIMEOUT)
        eng.close()
    assert not run.thread.is_alive()
