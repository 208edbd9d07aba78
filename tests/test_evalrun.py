"""`groove-tui eval` end to end on a KB built in tmp_path with the hashing embedder.

The history goes to a temporary user data directory (never the real home)."""

from __future__ import annotations

import json
import shutil
from argparse import Namespace
from pathlib import Path

import pytest

from groove_tui import cli
from groove_tui.commands import eval as evalrun
from groove_tui.engine import Engine, SearchParams

from helpers import SAMPLE_KB, hashing_config, write_kb

GOLDEN = """\
queries:
  - id: tokio
    query: "tokio runtime spawn"
    expected:
      - path: notes/rust/async.md
  - query: "sqlite-vec KNN distance"
    expected:
      - path: notes/python/sqlite.md
        heading: sqlite-vec
  - query: "設定ファイル groove.toml"
    expected:
      - path: 日本語/検索.md
  - query: "knowledge base notes"
    expected:
      - path: index.md
  - query: "unjudged query"
    expected: []
"""


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "userdata"
    monkeypatch.setenv("XDG_DATA_HOME", str(d))
    monkeypatch.setattr("groove_tui.settings.paths.user_data_dir", lambda: d / "groove-tui")
    return d / "groove-tui"


@pytest.fixture
def setup(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch):
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    idx = tmp_path / "idx"
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(idx))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.setattr("groove_tui.settings.paths.user_config_dir", lambda: tmp_path / "userconfig")  # no user config
    monkeypatch.chdir(tmp_path)
    golden = tmp_path / "golden.yml"
    golden.write_text(GOLDEN, encoding="utf-8")
    assert cli.main(["index", str(kb), "--model", "hashing-64", "--quiet"]) == 0
    return kb, golden


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(["eval", *argv, "--model", "hashing-64"])
    out, err = capsys.readouterr()
    return rc, out, err


def history_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "eval-history").glob("*.json"))


def test_text_output_history_and_diff(setup, data_dir, capsys):
    kb, golden = setup
    rc, out, err = run(capsys, str(kb), "--golden", str(golden))
    assert rc == 0, err
    assert "recall@k" in out and "nDCG@k" in out and "MRR" in out
    for k in ("1", "5", "10"):
        assert any(line.split()[:1] == [k] for line in out.splitlines())
    assert "model    hashing-64" in out
    assert "4 judged queries of 5" in out
    assert "no comparable previous run" in out
    assert "queries in" in out  # elapsed time
    [hist] = history_files(data_dir)
    assert not str(hist).startswith(str(kb))  # never inside the KB
    runs = json.loads(hist.read_text())["runs"]
    assert len(runs) == 1 and runs[0]["aggregate"]["query_count"] == 4
    assert runs[0]["fingerprint"]["model"] == "hashing-64"
    assert "legs" not in runs[0]["fingerprint"]  # hybrid runs look like groove's

    rc, out, err = run(capsys, str(kb), "--golden", str(golden))
    assert rc == 0
    assert "vs previous run" in out and "no regression" in out
    assert "—" in out  # unchanged metrics
    assert len(json.loads(hist.read_text())["runs"]) == 2
    assert list(kb.rglob("*.json")) == []  # nothing written into the KB


def test_regression_fails_after_history_is_saved(setup, data_dir, capsys):
    kb, golden = setup
    assert run(capsys, str(kb), "--golden", str(golden))[0] == 0
    # Same golden file, worse KB: two expected documents disappear.
    shutil.rmtree(kb / "notes")
    assert cli.main(["index", str(kb), "--model", "hashing-64", "--quiet"]) == 0
    rc, out, err = run(capsys, str(kb), "--golden", str(golden), "--fail-on-regression")
    assert rc == 1
    assert "REGRESSION" in out and "↓" in out
    assert "regression" in err
    runs = json.loads(history_files(data_dir)[0].read_text())["runs"]
    assert len(runs) == 2  # saved before failing
    # Without the flag the regression is reported but the exit status stays 0.
    rc, out, _ = run(capsys, str(kb), "--golden", str(golden))
    assert rc == 0 and "no regression" in out  # compared with the (already bad) previous run


def test_misses_listed_with_rank(setup, tmp_path, capsys):
    kb, _ = setup
    g = tmp_path / "m.yml"
    g.write_text(
        'queries:\n  - id: engines\n    query: "Rust search engines"\n    expected:\n'
        "      - path: notes/python/sqlite.md\n        heading: sqlite-vec\n"
        "      - path: nowhere.md\n",
        encoding="utf-8",
    )
    rc, out, _ = run(capsys, str(kb), "--golden", str(g), "--legs", "fts", "--k", "1", "--limit", "10", "--no-history")
    assert rc == 0
    assert "missed at k=1: 1 of 1 queries" in out
    assert "notes/python/sqlite.md#sqlite-vec  (rank 4; below_k: on the page at rank 4)" in out
    assert "nowhere.md  (not in the top 10; not_indexed: no note 'nowhere.md' in the index" in out
    # The table of where the misses were lost, in pipeline order.
    table = out[out.index("where the 2 missing entries were lost") :].splitlines()
    assert table[1].split()[:2] == ["not_indexed", "1"] and table[2].split()[:2] == ["below_k", "1"]


def test_json_shape(setup, capsys):
    kb, golden = setup
    rc, out, _ = run(capsys, str(kb), "--golden", str(golden), "--format", "json", "--k", "1,3")
    assert rc == 0
    data = json.loads(out)
    assert {
        "timestamp",
        "fingerprint",
        "corpus",
        "per_query",
        "aggregate",
        "comparison",
        "elapsed_seconds",
        "history",
        "golden",
    } <= set(data)
    agg = data["aggregate"]
    assert set(agg["recall_at_k"]) == {"1", "3"} and set(agg["ndcg_at_k"]) == {"1", "3"}
    assert agg["query_count"] == 4 and 0 <= agg["mrr"] <= 1
    assert data["fingerprint"]["limit"] == 3 and data["fingerprint"]["k_values"] == [1, 3]
    assert data["corpus"]["documents"] == 4
    assert len(data["per_query"]) == 5
    q = data["per_query"][0]
    assert q["id"] == "tokio" and q["expected"] == [{"path": "notes/rust/async.md", "heading": None}]
    assert 1 <= len(q["top_k"]) <= 3
    assert set(q["top_k"][0]) == {"rank", "path", "heading", "score"}
    assert set(q["metrics"]) == {"recall_at_k", "reciprocal_rank", "ndcg_at_k"}
    assert data["comparison"] is None
    rc, out, _ = run(capsys, str(kb), "--golden", str(golden), "--format", "json", "--k", "1,3")
    cmp = json.loads(out)["comparison"]
    assert cmp["is_regression"] is False and cmp["delta"]["mrr"] == 0


def test_limit_is_max_of_k_and_limit(setup, capsys):
    kb, golden = setup
    _rc, out, _ = run(
        capsys, str(kb), "--golden", str(golden), "--format", "json", "--k", "5,1,5", "--limit", "2", "--no-history"
    )
    fp = json.loads(out)["fingerprint"]
    assert fp["limit"] == 5 and fp["k_values"] == [1, 5]
    _rc, out, _ = run(
        capsys, str(kb), "--golden", str(golden), "--format", "json", "--k", "1", "--limit", "7", "--no-history"
    )
    data = json.loads(out)
    assert data["fingerprint"]["limit"] == 7
    assert all(len(q["top_k"]) <= 1 for q in data["per_query"])  # the record keeps max(k) hits


def test_no_history(setup, data_dir, capsys):
    kb, golden = setup
    rc, out, _ = run(capsys, str(kb), "--golden", str(golden), "--no-history")
    assert rc == 0 and "not recorded" in out
    assert history_files(data_dir) == []


def test_legs_are_part_of_the_fingerprint(setup, data_dir, capsys):
    kb, golden = setup
    for legs in ("hybrid", "fts", "vector", "hybrid"):
        rc, out, _ = run(capsys, str(kb), "--golden", str(golden), "--legs", legs, "--format", "json")
        assert rc == 0
        data = json.loads(out)
        assert data["fingerprint"].get("legs", "hybrid") == legs
    # the last hybrid run compares with the first one, skipping the single-leg runs in between
    assert data["comparison"] is not None
    runs = json.loads(history_files(data_dir)[0].read_text())["runs"]
    assert [r["fingerprint"].get("legs", "hybrid") for r in runs] == ["hybrid", "vector", "fts", "hybrid"]


def test_fusion_method_is_part_of_the_fingerprint(setup, data_dir, capsys):
    kb, golden = setup
    methods = []
    for flag in ([], ["--fusion", "rrf"], ["--fusion", "relative"], ["--fusion", "dbsf"]):
        rc, out, _ = run(capsys, str(kb), "--golden", str(golden), *flag, "--format", "json")
        assert rc == 0
        data = json.loads(out)
        methods.append((data["fingerprint"].get("fusion") or {}).get("method", "rrf"))
    assert methods == ["dbsf", "rrf", "relative", "dbsf"]
    # the explicit dbsf run is the default configuration: it compares with the first run, not the others
    assert data["comparison"] is not None
    assert (
        data["comparison"]["previous_timestamp"]
        == json.loads(history_files(data_dir)[0].read_text())["runs"][3]["timestamp"]
    )


def test_fts_leg_alone_scores(setup, capsys):
    kb, golden = setup
    _rc, out, _ = run(capsys, str(kb), "--golden", str(golden), "--legs", "fts", "--format", "json", "--no-history")
    data = json.loads(out)
    assert data["per_query"][0]["top_k"][0]["path"] == "notes/rust/async.md"


def test_exclusion_only_golden_query_is_a_load_error(setup, tmp_path, capsys):
    kb, _ = setup
    bad = tmp_path / "bad.yml"
    bad.write_text(
        'queries:\n  - id: ok\n    query: "tokio"\n    expected: []\n'
        '  - id: neg\n    query: "-tokio -rust"\n    expected: []\n',
        encoding="utf-8",
    )
    rc, out, err = run(capsys, str(kb), "--golden", str(bad))
    assert rc == 1 and out == ""
    assert "bad.yml:5" in err and "'neg'" in err and "exclusion" in err


def test_missing_golden_is_a_clear_error(setup, capsys):
    kb, _ = setup
    rc, _out, err = run(capsys, str(kb))
    assert rc == 1
    assert "no golden file" in err and "--golden" in err and "[eval] golden" in err
    rc, _out, err = run(capsys, str(kb), "--golden", str(kb.parent / "nope.yml"))
    assert rc == 1 and "nope.yml" in err and "cannot read" in err


def test_golden_from_config_relative_to_config_file(setup, tmp_path, capsys):
    kb, golden = setup
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    shutil.copy(golden, conf_dir / "g.yml")
    (conf_dir / "groove.toml").write_text('[eval]\ngolden = "g.yml"\nk_values = [2]\n', encoding="utf-8")
    rc, out, err = run(capsys, str(kb), "--config", str(conf_dir / "groove.toml"), "--format", "json")
    assert rc == 0, err
    data = json.loads(out)
    assert data["golden"] == str(conf_dir / "g.yml") and data["fingerprint"]["k_values"] == [2]


def test_bad_k(setup, capsys):
    kb, golden = setup
    rc, _, err = run(capsys, str(kb), "--golden", str(golden), "--k", "1,x")
    assert rc == 1 and "--k" in err
    rc, _, err = run(capsys, str(kb), "--golden", str(golden), "--k", "0")
    assert rc == 1 and ">= 1" in err


def test_no_progress_bar_without_a_tty(setup, capsys):
    kb, golden = setup
    rc, _, err = run(capsys, str(kb), "--golden", str(golden), "--no-history")
    assert rc == 0 and "\r" not in err and err == ""


def test_eval_params_drop_filters_and_default_reranker():
    p = SearchParams(
        limit=3,
        reranker="some-model",
        path_globs=("a/**",),
        tags_any=("x",),
        min_quality=0.9,
        category="c",
        topic="t",
        date_from="2020-01-01",
        explain=True,
    )
    q = evalrun.eval_params(p, limit=10, legs="fts", reranker_given=False)
    assert q.limit == 10 and q.reranker is None and q.min_quality == 0.0
    assert q.path_globs == () and q.tags_any == () and q.category is None and q.topic is None
    assert q.date_from is None and not q.explain and q.legs == "fts"
    assert evalrun.eval_params(p, limit=10, legs="hybrid", reranker_given=True).reranker == "some-model"


def test_quality_filter_is_off_in_eval(tmp_path, data_dir):
    """A short low-quality chunk that `search` filters out still counts in eval (§I.3)."""
    kb = write_kb(tmp_path / "kb2", {"a.md": "zebra", "b.md": "## Long\n\n" + "zebra stripes and savanna grass. " * 20})
    golden = tmp_path / "g.yml"
    golden.write_text('queries:\n  - query: "zebra"\n    expected:\n      - path: a.md\n', encoding="utf-8")
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx2") as eng:
        eng.index()
        searched = {h.path for h in eng.search("zebra", eng.default_params()).results}
        args = Namespace(golden=str(golden), k=None, limit=None, legs="fts", reranker=None, no_history=True)
        outcome = evalrun.evaluate_kb(eng, args, eng.default_params())
    assert "a.md" not in searched  # search applies the quality filter ...
    assert outcome.aggregate.recall_at_k[10] == 1.0  # ... eval does not


def test_json_gives_each_query_the_stage_that_lost_each_miss(setup, tmp_path, capsys):
    kb, _ = setup
    g = tmp_path / "m.yml"
    g.write_text(
        'queries:\n  - id: engines\n    query: "Rust search engines"\n    expected:\n'
        "      - path: notes/python/sqlite.md\n        heading: sqlite-vec\n"
        "      - path: nowhere.md\n",
        encoding="utf-8",
    )
    rc, out, _ = run(
        capsys, str(kb), "--golden", str(g), "--legs", "fts", "--k", "1", "--no-history", "--format", "json"
    )
    assert rc == 0
    data = json.loads(out)
    misses = data["per_query"][0]["misses"]
    assert sorted(m["path"] for m in misses) == ["notes/python/sqlite.md", "nowhere.md"]
    assert next(m["stage"] for m in misses if m["path"] == "nowhere.md") == "not_indexed"
    stage = next(m["stage"] for m in misses if m["path"] == "notes/python/sqlite.md")
    assert stage in ("below_pool", "below_page", "not_matched") and all(m["reason"] for m in misses)
    assert data["misses_by_stage"] == {"not_indexed": 1, stage: 1}
