"""`groove-tui bench` on a tiny KB with the hashing embedder: it runs, and its JSON has the keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groove_tui import cli
from groove_tui.commands.bench import command, scale, search
from groove_tui.commands.bench.search import STAGES

from helpers import SAMPLE_KB, write_kb

CLI_SEARCH = command.bench_cli_search  # the real one: the fixture below stands a quick one in for other tests


@pytest.fixture
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "idx"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.setattr("groove_tui.settings.paths.user_config_dir", lambda: tmp_path / "userconfig")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(command, "bench_cli_help", lambda runs=5: {"seconds": 0.1, "runs": [0.1]})
    monkeypatch.setattr(command, "bench_cli_search", lambda *a, **k: {"seconds": 0.3, "runs": [0.3]})
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
    assert s["queries"] == len(search.BUILTIN_QUERIES) and s["repeat"] == 1
    assert set(s["stages_ms"]) == set(STAGES)
    for name in ("embed", "vector", "fts", "fuse", "spans", "total"):
        st = s["stages_ms"][name]
        assert st["n"] == s["queries"] and 0 <= st["p50"] <= st["p95"]
    assert s["stages_ms"]["rerank"]["n"] == 0 and s["stages_ms"]["rerank"]["p50"] is None  # no reranker
    assert s["total_minus_embed_ms"]["n"] == s["queries"]  # its timing relation to total: a bench, not a test
    assert s["warm_rerun_ms"]["n"] == s["queries"]
    assert s["mmr_on"]["mmr_stage_ms"]["n"] > 0 and s["parent_on"]["parent_stage_ms"]["n"] > 0
    assert s["mmr_250_to_10_ms"]["limit"] == 10 and s["mmr_250_to_10_ms"]["n"] > 0
    c = s["cancellation"]
    assert c["cancelled"] + c["finished_before_cancel"] == s["queries"]
    assert "index" not in data
    assert {"total_minus_embed_p50_ms", "warm_rerun_p50_ms", "cli_help_s", "cli_search_s"} <= set(data["targets"])


def test_a_search_process_is_timed_whole_and_a_failing_one_is_an_error(kb, tmp_path):
    from groove_tui.engine import Engine

    with Engine.open(kb, readonly=True) as engine:  # the index the fixture built, under GROOVE_TUI_INDEX_DIR
        timed = CLI_SEARCH(engine, ["tokio", "-dash first"], None, runs=1)
        assert len(timed["runs"]) == 2 and all(r > 0 for r in timed["runs"]) and timed["seconds"] > 0
        with pytest.raises(ValueError, match="failed"):  # never timed as a quick sample
            CLI_SEARCH(engine, ["tokio"], str(tmp_path / "missing.toml"), runs=1)


def test_search_mode_with_golden_queries(kb, tmp_path, capsys):
    g = tmp_path / "g.yml"
    g.write_text(
        'queries:\n  - query: "tokio"\n    expected: []\n  - query: "設定"\n    expected: []\n', encoding="utf-8"
    )
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
    wt = i["word_table"]  # the word leg's side table: its pages and its build, on the fresh index
    assert 0 < wt["bytes"] < wt["index_bytes"] and wt["rebuilt"] and wt["build_s"] is not None and wt["build_s"] >= 0
    sizes = i["sizes"]  # the fresh index by part, against the text it holds
    assert sizes["text_bytes"] > 0 and sizes["bytes"]["trigram"] > 0 and sizes["bytes"]["chunks"] > 0
    assert sizes["without_vectors"] == sum(sizes["bytes"].values()) - sizes["bytes"]["vectors"]
    assert sizes["ratio_to_text"] == round(sizes["without_vectors"] / sizes["text_bytes"], 2)
    assert "search" not in data
    assert {"throughput_ratio", "phase_one_s", "no_change_reindex_s"} <= set(data["targets"])


def test_text_output(kb, capsys):
    capsys.readouterr()
    assert cli.main(["bench", str(kb), "--model", "hashing-64", "--repeat", "1", "--mode", "all", "--docs", "2"]) == 0
    out = capsys.readouterr().out
    for word in (
        "total − embed",
        "λ re-run",
        "cancellation",
        "phase one",
        "ratio",
        "word table",
        "index size",
        "targets:",
    ):
        assert word in out


def test_unindexed_kb_is_an_error(tmp_path, monkeypatch, capsys):
    kb = write_kb(tmp_path / "kb2", SAMPLE_KB)
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "idx2"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.setattr("groove_tui.settings.paths.user_config_dir", lambda: tmp_path / "userconfig")
    assert cli.main(["bench", str(kb), "--model", "hashing-64"]) == 1
    assert "not been indexed" in capsys.readouterr().err


def test_percentiles():
    assert search.percentiles([]) == {"p50": None, "p95": None, "max": None, "n": 0}
    p = search.percentiles([1.0, 2.0, 3.0, 4.0, 100.0])
    assert p["p50"] == 3.0 and p["max"] == 100.0 and p["n"] == 5 and 4.0 < p["p95"] <= 100.0


# ---------------------------------------------------------------- scale mode

SMALL_KB = {k: SAMPLE_KB[k] for k in ("notes/rust/async.md", "notes/python/sqlite.md", "日本語/検索.md")}


def _snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def scale_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A 3-file KB; temporary files go to tmp_path/tmp so the test can see they are removed."""
    kb = write_kb(tmp_path / "kb", SMALL_KB)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "idx"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.setattr("groove_tui.settings.paths.user_config_dir", lambda: tmp_path / "userconfig")
    monkeypatch.chdir(tmp_path)
    return kb


def test_scale_reaches_the_chunk_target_and_leaves_the_kb_alone(scale_env, tmp_path):
    from helpers import hashing_config

    kb = scale_env
    before = _snapshot(kb)
    per_copy = sum(n for _rel, n in scale.chunks_per_file(kb, hashing_config()))
    assert per_copy >= 3
    sc = scale.bench_scale(kb, hashing_config(), 200, ["tokio runtime", "設定"], 2)
    assert _snapshot(kb) == before
    assert list((tmp_path / "tmp").iterdir()) == []  # temporary KB and index removed
    syn, ix = sc["synthesised"], sc["index"]
    assert syn["source_documents"] == 3 and syn["source_chunks"] == per_copy
    # Just past the target: the last file copied is the one that reached it.
    assert 200 <= syn["chunks"] < 200 + per_copy and syn["copies"] == -(-200 // per_copy)
    assert ix["chunks"] == syn["chunks"] and ix["documents"] == syn["documents"] and ix["pending_embeddings"] == 0
    assert ix["phase_one_s"] > 0 and ix["embed_s"] > 0 and ix["bytes"] > 0
    s = sc["search"]
    for name in ("embed", "vector", "fts", "total"):
        assert s["stages_ms"][name]["n"] == 4 and s["stages_ms"][name]["p50"] >= 0
    assert s["total_minus_embed_ms"]["n"] == 4
    assert len(s["total_minus_embed_p50_per_repeat"]) == 2 and len(s["total_p50_per_repeat"]) == 2
    # The full-text legs' own times, summed per search: at least the trigram leg's alone.
    for v in s["variants"].values():
        assert v["fulltext_legs_ms"]["n"] == 4 and v["fulltext_legs_ms"]["p50"] >= v["fts_ms"]["p50"] * 0.999
    assert ix["token_lists"] == {"tokens": 0, "entries": 0, "bytes": 0}  # under MIN_ROWS: none stored


def test_scale_cli_json_and_text(scale_env, tmp_path, capsys):
    kb = scale_env
    before = _snapshot(kb)
    capsys.readouterr()
    assert cli.main(["bench", str(kb), "--scale", "60", "--repeat", "1", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "scale" and data["model"] == scale.SCALE_MODEL  # hashing at e5's dimension
    assert data["scale"]["index"]["chunks"] >= 60
    assert data["scale"]["search"]["queries"] == len(search.BUILTIN_QUERIES)
    t = data["targets"]["scale_total_minus_embed_p50_ms"]
    assert t["target"] == 50.0 and t["value"] == data["scale"]["search"]["total_minus_embed_ms"]["p50"]
    assert _snapshot(kb) == before
    assert not (tmp_path / "idx").exists()  # the KB's own index was not even created
    assert list((tmp_path / "tmp").iterdir()) == []

    assert cli.main(["bench", str(kb), "--scale", "20", "--repeat", "1", "--model", "hashing-64"]) == 0
    out = capsys.readouterr().out
    for word in (
        "scale:",
        "hashing-64",
        "phase one",
        "embedding",
        "MB",
        "total − embed",
        "targets:",
        "scale_total_minus_embed_p50_ms",
    ):
        assert word in out


def test_scale_must_be_positive(scale_env, capsys):
    assert cli.main(["bench", str(scale_env), "--scale", "0"]) == 1
    assert "--scale" in capsys.readouterr().err


def test_total_minus_embed_leaves_the_query_embedding_out(tmp_path):
    """Behaviour, not a wall-clock bound: every cold search embeds its query, and the run that gives
    "everything but the embedding" reuses the cached vector, so no embedding is in its total."""
    from groove_tui.engine import Engine

    from helpers import hashing_config

    engine = Engine.open(write_kb(tmp_path / "kb", SAMPLE_KB), config=hashing_config(), index_dir=tmp_path / "idx")
    engine.index()
    embedder = engine.embedder()
    real = embedder.embed_query
    embedded: list[str] = []
    embedder.embed_query = lambda text: embedded.append(text) or real(text)
    params = engine.default_params(reranker=None, mmr=False, parent_retriever=False)
    queries = ["tokio runtime", "sqlite vector"]
    stages, minus_embed = search.cold_searches(engine, queries, 2, params, lambda *_: None)
    engine.close()
    assert embedded == queries * 2  # once per cold search, never in the minus-embed runs
    assert len(stages["embed"]) == len(stages["total"]) == len(minus_embed) == 4


def test_rerank_mode_times_cold_and_cached_reranks(kb, tmp_path, capsys):
    from tinymodels import build_tiny_cross_encoder

    ce = build_tiny_cross_encoder(tmp_path / "ce")
    g = tmp_path / "g.yml"
    g.write_text(
        'queries:\n  - query: "tokio runtime"\n    expected: []\n  - query: "sqlite search"\n    expected: []\n'
        '  - query: "東京の設定"\n    expected: []\n',
        encoding="utf-8",
    )
    data = bench_json(
        capsys,
        str(kb),
        "--mode",
        "rerank",
        "--reranker",
        str(ce),
        "--queries",
        str(g),
        "--repeat",
        "2",
        "--rerank-pool",
        "12",
    )
    rr = data["rerank"]
    assert rr["pool"] == 12 and rr["max_tokens"] == 256 and rr["queries"] == 3
    assert rr["skipped"] == 0  # a local directory declares no languages: every query is reranked
    assert rr["per_query_ms"]["n"] == 6 and rr["per_pair_ms"]["n"] == 6 and rr["cached_rerank_ms"]["n"] == 6
    assert 1 <= rr["pairs"]["p50"] <= 12  # the pool, or fewer when fewer candidates matched
    assert {"rerank_p50_ms", "rerank_cached_p50_ms"} <= set(data["targets"])
    capsys.readouterr()
    assert (
        cli.main(
            [
                "bench",
                str(kb),
                "--mode",
                "rerank",
                "--reranker",
                str(ce),
                "--queries",
                str(g),
                "--repeat",
                "1",
                "--model",
                "hashing-64",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "rerank: " in out and "cached re-rank" in out and "per pair" in out


def test_readers_mode_times_readers_idle_and_while_another_process_indexes(kb, capsys):
    before = sorted(p.relative_to(kb) for p in kb.rglob("*"))
    data = bench_json(capsys, str(kb), "--mode", "readers", "--repeat", "1", "--docs", "0")
    rd = data["readers"]
    assert rd["documents"] == len(SAMPLE_KB) and rd["queries"] == len(search.BUILTIN_QUERIES)
    for phase in ("idle", "other_index_busy", "indexing"):
        assert rd[phase]["failed"] == 0 and rd[phase]["ms"]["n"] == rd["queries"]
    assert rd["writer"]["index_runs"] >= 1 and rd["control_writer"]["index_runs"] >= 1  # really indexing
    assert data["targets"]["readers_failed"]["met"]
    assert sorted(p.relative_to(kb) for p in kb.rglob("*")) == before  # the KB is never touched
    assert cli.main(["bench", str(kb), "--model", "hashing-64", "--mode", "readers", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "while indexing" in out and "idle" in out and "readers_failed" in out
