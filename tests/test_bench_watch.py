"""`groove-tui bench --mode watch` on a tiny KB with a real watcher: the figures it reports, their record,
and that neither the KB nor its index is written. Structure only: timings belong to the bench."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groove_tui import cli
from groove_tui.commands.bench import watch

from helpers import SAMPLE_KB, write_kb


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "idx"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.setattr("groove_tui.settings.paths.user_config_dir", lambda: tmp_path / "userconfig")
    monkeypatch.setattr(watch, "BETWEEN_SAVES_S", 0.0)
    monkeypatch.setattr(watch, "BURST_QUIET_S", 0.3)
    monkeypatch.chdir(tmp_path)
    return kb


def _run(capsys, kb: Path, *extra: str) -> dict:
    capsys.readouterr()
    argv = ["bench", str(kb), "--mode", "watch", "--model", "hashing-64", "--saves", "3", "--idle-seconds", "0.2"]
    assert cli.main([*argv, "--burst", "12", "--format", "json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_watch_mode_reports_saves_idle_cpu_and_the_bursts_batches(env, tmp_path, capsys):
    kb = env
    before = _tree(kb)
    data = _run(capsys, kb, "--record", str(tmp_path / "records"))
    assert data["mode"] == "watch" and data["model"] == "hashing-64"
    w = data["watch"]
    assert w["synthesised"]["copies"] == 1 and w["index"]["documents"] == len(SAMPLE_KB)
    assert w["debounce_ms"] == 500 and w["watch_start_s"] >= 0 and w["watcher_errors"] == []
    idle = w["idle"]
    assert idle["cpu_percent"] >= 0 and idle["seconds"] >= 0.2 and idle["events"] == 0
    sv = w["saves"]
    assert sv["saves"] == 3 and sv["missed"] == {"fts": 0, "vector": 0}
    for key in ("fts_found_ms", "vector_found_ms", "embed_ms", "vector_minus_embed_ms"):
        assert sv[key]["n"] == 3 and sv[key]["p50"] is not None
    assert [row["kind"] for row in sv["each"]] == ["new", "append", "new"]  # new notes and edited ones
    assert all(row["embedded_chunks"] >= 1 and row["batch_ms"] is not None for row in sv["each"])
    e = w["edit"]  # a few notes saved at once (as many as the burst here): every one indexed, its work timed
    assert e["files"] == 12 and e["unindexed"] == 0 and e["batches"] >= 1 and len(e["batch_ms"]) == e["batches"]
    assert e["rewritten"] >= 1  # (the notes it changed are the tiny KB's last ones: the burst's are new)
    b = w["burst"]
    assert b["files"] == 12 and b["rewritten"] + b["created"] == 12
    assert b["unindexed"] == 0 and b["seconds"] is not None
    assert b["batches"] >= 1 and len(b["batch_files"]) == len(b["batch_ms"]) == b["batches"]
    targets = data["targets"]
    assert {
        "watch_fts_found_p50_ms",
        "watch_fts_found_p95_ms",
        "watch_vector_minus_embed_p95_ms",
        "watch_missed",
        "watch_idle_cpu_percent",
        "watch_burst_batches",
        "watch_burst_unindexed",
    } <= set(targets)
    assert targets["watch_burst_batches"]["value"] == b["batches"] and targets["watch_burst_batches"]["target"] == 3
    assert targets["watch_missed"]["met"] and targets["watch_burst_unindexed"]["met"]
    # The KB is only read; the copy and its index are gone; no index was made for the KB itself.
    assert _tree(kb) == before
    assert list((tmp_path / "tmp").iterdir()) == [] and not (tmp_path / "idx").exists()
    (record,) = (tmp_path / "records").iterdir()
    rec = json.loads(record.read_text(encoding="utf-8"))
    assert rec["subject"]["mode"] == "watch" and rec["subject"]["variant"] == "watch"
    assert rec["subject"]["model"] == "hashing-64" and "--mode watch" in rec["command"]
    assert rec["figures"]["watch"]["burst"]["batches"] == b["batches"]


def test_watch_mode_text_and_a_kept_copy_reused_and_restored(env, tmp_path, capsys):
    kb, keep = env, tmp_path / "keep"
    capsys.readouterr()
    argv = ["bench", str(kb), "--mode", "watch", "--model", "hashing-64", "--saves", "2", "--idle-seconds", "0.1"]
    assert cli.main([*argv, "--burst", "4", "--scale-dir", str(keep)]) == 0
    out = capsys.readouterr().out
    for words in ("save → found", "full text", "vector − embedder", "idle:", "burst: 4 files", "watch_burst_batches"):
        assert words in out
    copy = _tree(keep / "kb")
    assert {Path(k).parts[0] for k in copy} == {"rep0"}  # every edit undone: no bench notes left
    # Reused: the same copy, its index current, so nothing is synthesised or indexed again.
    data = _run(capsys, kb, "--scale-dir", str(keep))
    assert data["watch"]["kept_in"] == str(keep) and data["watch"]["index"]["documents"] == len(SAMPLE_KB)
    assert {k: v[0] for k, v in _tree(keep / "kb").items()} == {k: v[0] for k, v in copy.items()}


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--saves", "0", "--saves 0 is invalid: expected an integer in [1, 10,000]"),
        ("--burst", "-1", "--burst -1 is invalid"),
        ("--idle-seconds", "0", "--idle-seconds 0 is invalid: expected seconds in [0.1, 3600]"),
    ],
)
def test_watch_mode_bad_numbers_are_one_line_errors(env, capsys, flag, value, words):
    assert cli.main(["bench", str(env), "--mode", "watch", flag, value]) == 1
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
