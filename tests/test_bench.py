"""`groove-tui bench` on a tiny KB with the hashing embedder: it runs, and its JSON has the keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import SAMPLE_KB, write_kb

from groove_tui import bench, cli
from groove_tui.bench import STAGES


@pytest.fixture
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "idx"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.setattr("groove_tui.paths.user_config_dir", lambda: tmp_path / "userconfig")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(bench, "bench_cli_help", lambda runs=5: {"seconds": 0.1, "runs": [0.1]})
    assert cli.main(["index", str(kb), "--model", "hashing-64", "--quiet"]) == 0
    return kb


def bench_json(capsys, *argv: str) -> dict:
    capsys.readouterr()
    assert cli.main(["bench", *argv, "--model", "hashing-64", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_search_mode_json_keys(kb, capsys):
    data = bench_json(capsys, str(kb), "--repeat", "1")
    assert data["model"] == "hashing-64" and data["mode"] == "search"
    s = data["search"]
    assert s["queries"] == len(bench.BUILTIN_QUERIES) and s["repeat"] == 1
    assert set(s["stages_ms"]) == set(STAGES)
    for name in ("embed", "vector", "fts", "fuse", "spans", "total"):
        st = s["stages_ms"][name]
        assert st["n"] == s["queries"] and 0 <= st["p50"] <= st["p95"]
    assert s["stages_ms"]["rerank"]["n"] == 0 and s["stages_ms"]["rerank"]["p50"] is None  # no reranker
    assert s["total_minus_embed_ms"]["p50"] <= s["stages_ms"]["total"]["p95"] + 1e-6
    assert s["warm_rerun_ms"]["n"] == s["queries"]
    assert s["mmr_on"]["mmr_stage_ms"]["n"] > 0 and s["parent_on"]["parent_stage_ms"]["n"] > 0
    assert s["mmr_250_to_10_ms"]["limit"] == 10 and s["mmr_250_to_10_ms"]["n"] > 0
    c = s["cancellation"]
    assert c["cancelled"] + c["finished_before_cancel"] == s["queries"]
    assert "index" not in data
    assert {"total_minus_embed_p50_ms", "warm_rerun_p50_ms", "cli_help_s"} <= set(data["targets"])


def test_search_mode_with_golden_queries(kb, tmp_path, capsys):
    g = tmp_path / "g.yml"
    g.write_text('queries:\n  - query: "tokio"\n    expected: []\n  - query: "設定"\n    expected: []\n',
                 encoding="utf-8")
    data = bench_json(capsys, str(kb), "--queries", str(g), "--repeat", "2")
    assert data["search"]["queries"] == 2 and data["search"]["stages_ms"]["total"]["n"] == 4


def test_index_mode_leaves_the_kb_alone(kb, capsys):
    before = sorted(p.relative_to(kb) for p in kb.rglob("*"))
    data = bench_json(capsys, str(kb), "--mode", "index", "--repeat", "1", "--docs", "2")
    assert sorted(p.relative_to(kb) for p in kb.rglob("*")) == before
    i = data["index"]
    assert i["phase_one"]["documents"] == 4 and i["phase_one"]["seconds"] >= 0
    p2 = i["phase_two"]
    assert p2["documents"] == 2 and p2["chunks"] > 0
    assert p2["index_chunks_per_s"] > 0 and p2["embedder_passages_per_s"] > 0 and p2["ratio"] > 0
    nc = i["no_change_reindex"]
    assert nc["documents"] == 4 and nc["changed"] == 0
    assert "search" not in data
    assert {"throughput_ratio", "phase_one_s", "no_change_reindex_s"} <= set(data["targets"])


def test_text_output(kb, capsys):
    capsys.readouterr()
    assert cli.main(["bench", str(kb), "--model", "hashing-64", "--repeat", "1", "--mode", "all", "--docs", "2"]) == 0
    out = capsys.readouterr().out
    for word in ("total − embed", "λ re-run", "cancellation", "phase one", "ratio", "targets:"):
        assert word in out


def test_unindexed_kb_is_an_error(tmp_path, monkeypatch, capsys):
    kb = write_kb(tmp_path / "kb2", SAMPLE_KB)
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "idx2"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.setattr("groove_tui.paths.user_config_dir", lambda: tmp_path / "userconfig")
    assert cli.main(["bench", str(kb), "--model", "hashing-64"]) == 1
    assert "not been indexed" in capsys.readouterr().err


def test_percentiles():
    assert bench.percentiles([]) == {"p50": None, "p95": None, "max": None, "n": 0}
    p = bench.percentiles([1.0, 2.0, 3.0, 4.0, 100.0])
    assert p["p50"] == 3.0 and p["max"] == 100.0 and p["n"] == 5 and 4.0 < p["p95"] <= 100.0
