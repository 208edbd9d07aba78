"""`groove-tui bench --mode peers`: groove-tui's full-text legs beside tantivy and bm25s on one small KB and
golden file — each system's index built and timed, every query answered and scored, ratios to groove-tui;
without the bench extra, one line that says what to install. Figures are not judged here (benchmarks are
not timed tests); what each system answers is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groove_tui import cli
from groove_tui.commands.bench import peers

from helpers import write_kb

NOTES = {
    "zebrafish.md": "# Zebrafish\n\nZebrafish migrate upstream in spring; the migration follows the river.\n",
    "garden.md": "# Garden\n\nSoil, seeds and compost for a vegetable garden.\n",
    "rust.md": "# Rust\n\nOwnership and borrowing in the Rust language; the borrow checker.\n",
    "sqlite.md": "# SQLite\n\nFull-text search with FTS5 and its bm25 ranking function.\n",
    "tea.md": "# Tea\n\nGreen tea is steeped at a lower temperature than black tea.\n",
}
GOLDEN = """\
queries:
  - id: "fish"
    query: "zebrafish migration"
    expected:
      - path: "zebrafish.md"
  - id: "borrow"
    query: "borrow checker ownership"
    expected:
      - path: "rust.md"
  - id: "fts"
    query: "bm25 ranking in FTS5"
    expected:
      - path: "sqlite.md"
  - id: "tea"
    query: "steeping green tea"
    expected:
      - path: "tea.md"
"""


@pytest.fixture
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "idx"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.setattr("groove_tui.settings.paths.user_config_dir", lambda: tmp_path / "userconfig")
    (tmp_path / "golden.yml").write_text(GOLDEN, encoding="utf-8")
    return write_kb(tmp_path / "kb", NOTES)


def test_each_system_answers_every_query_and_is_measured_against_groove_tui(kb, tmp_path, capsys):
    before = {p: p.read_bytes() for p in kb.rglob("*") if p.is_file()}
    argv = ["bench", str(kb), "--mode", "peers", "--queries", str(tmp_path / "golden.yml"), "--repeat", "2"]
    assert cli.main([*argv, "--format", "json", "--record", str(tmp_path / "records")]) == 0
    data = json.loads(capsys.readouterr().out)["peers"]
    assert data["queries"] == 4 and data["notes"] == 5
    for name in peers.SYSTEMS:
        s = data["systems"][name]
        assert s["ndcg_at_10"] == 1.0, name  # each finds the one note the query is about, first
        assert s["query_ms"]["n"] == 4 * 2 and s["index_bytes"] > 0 and s["index_s"] > 0
        assert set(s["ratio_to_groove_tui"]) == {"query_p50", "query_p95", "index_s", "index_bytes", "ndcg_at_10"}
    assert data["systems"]["groove-tui"]["ratio_to_groove_tui"]["ndcg_at_10"] == 1.0
    legs = data["systems"]["groove-tui"]["legs_ms"]  # the timed rounds' legs alone, within each search's time
    assert legs["n"] == 4 * 2 and 0 < legs["p50"] <= data["systems"]["groove-tui"]["query_ms"]["max"]
    assert "legs_ms" not in data["systems"]["tantivy"]
    assert {p: p.read_bytes() for p in kb.rglob("*") if p.is_file()} == before  # the KB is only read
    (record,) = (tmp_path / "records").glob("*.json")
    assert json.loads(record.read_text())["figures"]["peers"]["systems"].keys() == set(peers.SYSTEMS)
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert "tantivy" in text and "bm25s" in text and "ratio to groove-tui" in text
    assert "full-text legs alone" in text


def test_the_peers_answer_what_their_own_libraries_rank_first(tmp_path):
    notes = list(NOTES.items())
    for make in (peers.tantivy_peer, peers.bm25s_peer):
        root = tmp_path / make.__name__
        root.mkdir()
        peer = make(notes, root)
        peer.build()
        assert peer.search("zebrafish migration")[0] == ("zebrafish.md", None)
        assert peer.search("-- ** ((") == []  # no words: nothing to rank by
    assert peer.search("the and of") == []  # bm25s drops English stop words (tantivy's en_stem keeps them)


def test_without_the_bench_extra_the_mode_says_what_to_install(kb, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(peers, "missing_peers", lambda: ["tantivy", "bm25s"])
    code = cli.main(["bench", str(kb), "--mode", "peers", "--queries", str(tmp_path / "golden.yml")])
    err = capsys.readouterr().err
    assert code != 0 and "needs tantivy, bm25s" in err and "pip install 'groove-tui[bench]'" in err
    assert "Traceback" not in err


def test_peers_mode_needs_a_golden_file(kb, capsys):
    assert cli.main(["bench", str(kb), "--mode", "peers"]) != 0
    assert "needs --queries GOLDEN.yml" in capsys.readouterr().err
