"""`groove-tui index KB --watch` from a terminal: one stderr line per batch (paths, what changed, chunks,
milliseconds), ctrl+c ends it with exit status 0 once the batch in flight is written; and the `[watch]`
settings, each bad value a one-line error naming key, value and allowed range."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from groove_tui.settings.config import ConfigError, parse_config

from helpers import write_kb

TIMEOUT = 60.0


def _lines(stream, out: queue.Queue[str]) -> None:
    for line in stream:
        out.put(line.rstrip("\n"))
    out.put("")  # end of stream


def _wait_for(lines: queue.Queue[str], seen: list[str], text: str) -> str:
    while True:
        line = lines.get(timeout=TIMEOUT)
        seen.append(line)
        if text in line:
            return line
        assert line, f"stderr ended without {text!r}: {seen}"


def _index_watch(kb: Path, tmp_path: Path, debounce_ms: str) -> list[str]:
    """`groove-tui index KB --watch` with the test embedder and an index under tmp_path."""
    command = [sys.executable, "-m", "groove_tui.cli", "index", str(kb), "--watch", "--debounce-ms", debounce_ms]
    return [*command, "--model", "hashing-64", "--index-dir", str(tmp_path / "idx")]


def test_index_watch_prints_one_line_per_batch_and_ctrl_c_exits_0(tmp_path: Path) -> None:
    kb = write_kb(tmp_path / "kb", {"a.md": "# A\n\nalpha\n"})
    proc = subprocess.Popen(
        [*_index_watch(kb, tmp_path, "50"), "--quiet"],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stderr, lines), daemon=True).start()
    seen: list[str] = []
    try:
        _wait_for(lines, seen, "watching")
        (kb / "b.md").write_text("# B\n\nbeta\n", "utf-8")
        line = _wait_for(lines, seen, "1 added")
        assert "1 path" in line and "chunks" in line and line.rstrip().endswith("ms")
        (kb / "a.md").unlink()
        assert "1 deleted" in _wait_for(lines, seen, "deleted")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(TIMEOUT) == 0
        _wait_for(lines, seen, "stopped watching")
        assert not any("Traceback" in s for s in seen)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_watch_settings_defaults_and_values() -> None:
    cfg = parse_config({})
    assert (cfg.watch.enabled, cfg.watch.debounce_ms, cfg.watch.polling, cfg.tui.watch) == (True, 500, False, None)
    cfg = parse_config({"watch": {"enabled": False, "debounce_ms": 200, "polling": True}, "tui": {"watch": True}})
    assert (cfg.watch.enabled, cfg.watch.debounce_ms, cfg.watch.polling, cfg.tui.watch) == (False, 200, True, True)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"watch": {"debounce_ms": 5}}, "watch.debounce_ms = 5 is invalid: expected an integer in [10, 60000]"),
        ({"watch": {"debounce_ms": 1.5}}, "watch.debounce_ms = 1.5 is invalid: expected an integer in [10, 60000]"),
        ({"watch": {"enabled": "yes"}}, "watch.enabled = 'yes' is invalid: expected true or false"),
        ({"watch": {"polling": 1}}, "watch.polling = 1 is invalid: expected true or false"),
        ({"tui": {"watch": "off"}}, "tui.watch = 'off' is invalid: expected true or false"),
        ({"watch": {"debounce": 10}}, "unknown key 'watch.debounce'; allowed here: debounce_ms, enabled, polling"),
        ({"watch": 3}, "watch = 3 is invalid: expected a table"),
    ],
)
def test_bad_watch_settings_name_key_value_and_range(data: dict, message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config(data)
    assert str(exc.value) == message


def test_a_bad_debounce_flag_is_one_line(tmp_path: Path) -> None:
    kb = write_kb(tmp_path / "kb", {"a.md": "# A\n\nalpha\n"})
    done = subprocess.run(
        _index_watch(kb, tmp_path, "0"),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode != 0
    assert (
        done.stderr.strip().splitlines()[-1].endswith("--debounce-ms 0 is invalid: expected an integer in [10, 60000]")
    )
    assert "Traceback" not in done.stderr


def test_a_batch_line_names_every_skipped_file_up_to_three_then_counts_the_rest() -> None:
    from groove_tui.commands.index import format_watch_event
    from groove_tui.engine.index.watch import WatchEvent
    from groove_tui.engine.types import FileIssue, IndexReport

    def line(*names: str) -> str:
        issues = tuple(FileIssue(n, f"reason {i}") for i, n in enumerate(names))
        return format_watch_event(WatchEvent("batch", paths=names, report=IndexReport(skipped=issues)))

    assert "2 skipped (a.md: reason 0; b\\nforged.md: reason 1) · " in line("a.md", "b\nforged.md")
    assert "3 skipped (a.md: reason 0; b.md: reason 1; c.md: reason 2) · " in line("a.md", "b.md", "c.md")
    five = line("a.md", "b.md", "c.md", "d.md", "e.md")
    assert "5 skipped (a.md: reason 0; b.md: reason 1; c.md: reason 2; and 2 more) · " in five


def test_watch_events_from_two_threads_never_share_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    from groove_tui.commands.index import watch_event_printer
    from groove_tui.engine.index.watch import WatchEvent

    write = watch_event_printer()
    messages = {name: WatchEvent(kind="error", message=f"from the {name} thread") for name in ("watch", "embed")}

    def many(event: WatchEvent) -> None:
        for _ in range(5000):
            write(event)

    threads = [threading.Thread(target=many, args=(event,)) for event in messages.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 10000
    assert {line.split(" ", 1)[1] for line in lines} == {event.message for event in messages.values()}
