"""Wins and losses: per-query deltas, counts, the sign test and the bootstrap; `eval --compare` end to end."""

from __future__ import annotations

import json
import re

import pytest
from test_sweep import KS, _separate_eval, sweep_setup  # noqa: F401  (the module-scoped fixture)

from groove_tui import cli
from groove_tui.engine.evaluate.golden import Expected, GoldenQuery
from groove_tui.engine.evaluate.knobs import KnobError
from groove_tui.engine.evaluate.metrics import QueryMetrics, QueryResult
from groove_tui.engine.evaluate.winloss import bootstrap_p, sign_test, wins_losses


def _result(qid: str, ndcg: float, expected: bool = True) -> QueryResult:
    q = GoldenQuery(id=qid, query=f"query {qid}", expected=(Expected("a.md"),) if expected else ())
    m = QueryMetrics({10: ndcg}, ndcg, {10: ndcg}, 1 if expected else 0)
    return QueryResult(q, (), m)


def test_rows_sort_by_delta_and_count_each_outcome():
    left = [_result("a", 0.5), _result("b", 1.0), _result("c", 0.2), _result("d", 0.3), _result("e", 0.0, False)]
    right = [_result("a", 0.9), _result("b", 0.4), _result("c", 0.2), _result("d", 0.35), _result("e", 1.0, False)]
    t = wins_losses(left, right, metric="ndcg", k=10)
    assert [r.id for r in t.rows] == ["b", "c", "d", "a"]  # unjudged "e" left out, as in the means
    assert [r.outcome for r in t.rows] == ["worsened", "unchanged", "improved", "improved"]
    assert (t.improved, t.worsened, t.unchanged) == (2, 1, 1)
    assert t.mean_left == pytest.approx(0.5) and t.mean_right == pytest.approx(0.4625)
    assert t.sign_p == sign_test(2, 1) == 1.0
    assert t.label == "nDCG@10"
    assert wins_losses(left, right, metric="mrr", k=10).label == "MRR"


def test_runs_of_different_queries_are_refused():
    with pytest.raises(ValueError, match="did not score the same golden queries"):
        wins_losses([_result("a", 0.1)], [_result("b", 0.1)])


def test_the_sign_test_is_the_exact_binomial():
    assert sign_test(8, 2) == pytest.approx(0.109375)  # 2 · (1 + 10 + 45) / 1024
    assert sign_test(10, 0) == pytest.approx(2 / 1024)
    assert sign_test(5, 5) == 1.0 and sign_test(0, 0) == 1.0


def test_the_bootstrap_is_deterministic_and_tells_a_shift_from_noise():
    shift = [0.1 + 0.01 * (i % 5) for i in range(50)]
    noise = [(-1) ** i * 0.1 for i in range(50)]
    assert bootstrap_p(shift) == bootstrap_p(shift) < 0.001
    assert bootstrap_p(noise) > 0.5
    assert bootstrap_p([0.0] * 10) == 1.0 and bootstrap_p([]) == 1.0


def test_eval_compare_prints_the_table_of_two_separate_runs(sweep_setup, capsys, monkeypatch):  # noqa: F811
    kb, idx, config, golden, golden_path = sweep_setup
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(idx))
    monkeypatch.setattr("groove_tui.settings.paths.user_data_dir", lambda: idx / "no-history-here")
    settings = golden_path.parent / "no-word-leg.toml"  # the fixture's configuration, as the command reads it
    settings.write_text("[search]\nword_leg = false\n", encoding="utf-8")
    common = ["eval", str(kb), "--model", "hashing-64", "--golden", str(golden_path), "--config", str(settings)]
    a, b = "fusion=rrf", "fusion=dbsf mmr_lambda=0.5"
    assert cli.main([*common, "--compare", a, b, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    left, _ = _separate_eval(kb, idx, config, golden, (("fusion", "rrf"),))
    right, _ = _separate_eval(kb, idx, config, golden, (("fusion", "dbsf"), ("mmr_lambda", 0.5)))
    want = {r.query.id: (r.metrics.ndcg_at_k[10], s.metrics.ndcg_at_k[10]) for r, s in zip(left, right, strict=True)}
    wl = data["wins_losses"]
    assert {q["id"]: (q["left"], q["right"]) for q in wl["queries"]} == want
    deltas = [q["delta"] for q in wl["queries"]]
    assert deltas == sorted(deltas)
    assert wl["improved"] + wl["worsened"] + wl["unchanged"] == len(want)
    assert 0 < wl["sign_test_p"] <= 1 and 0 < wl["bootstrap_p"] <= 1
    assert data["left"]["settings"] == "fusion=rrf" and data["right"]["settings"] == "fusion=dbsf mmr_lambda=0.5"
    assert not (idx / "no-history-here").exists()  # a comparison records no history

    assert cli.main([*common, "--compare", a, b]) == 0
    text = capsys.readouterr().out
    assert f"nDCG@10: improved {wl['improved']} · worsened {wl['worsened']} · unchanged {wl['unchanged']}" in text
    changed = [q for q in wl["queries"] if q["outcome"] != "unchanged"]
    listed = [line for line in text.splitlines() if re.match(r"^ [+-]\d\.\d{4}  .*  q\d\d: ", line)]
    assert len(listed) == len(changed)  # every changed query listed, none of the unchanged


def test_a_side_can_be_a_groove_toml(sweep_setup, tmp_path, capsys, monkeypatch):  # noqa: F811
    kb, idx, _config, _golden, golden_path = sweep_setup
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(idx))
    side = tmp_path / "b.toml"
    side.write_text('[search.fusion]\nmethod = "rrf"\nfts_weight = 2.0\n', encoding="utf-8")
    common = ["eval", str(kb), "--model", "hashing-64", "--golden", str(golden_path), "--format", "json"]
    assert cli.main([*common, "--compare", "fusion=rrf fts_weight=2", str(side)]) == 0
    wl = json.loads(capsys.readouterr().out)["wins_losses"]
    assert wl["unchanged"] == len(wl["queries"])  # the same settings, spelled two ways


def test_a_bad_side_is_one_line_naming_it(sweep_setup, capsys, monkeypatch):  # noqa: F811
    kb, idx, _config, _golden, golden_path = sweep_setup
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(idx))
    common = ["eval", str(kb), "--model", "hashing-64", "--golden", str(golden_path)]
    assert cli.main([*common, "--compare", "mmr=maybe", ""]) == 1
    err = capsys.readouterr().err
    assert err == "groove-tui: --compare 'mmr=maybe': mmr = 'maybe' is invalid: expected true or false\n"
    assert cli.main([*common, "--compare", "lambda", ""]) == 1
    assert "expected NAME=VALUE" in capsys.readouterr().err
    with pytest.raises(KnobError):
        from groove_tui.engine.evaluate.knobs import parse_settings

        parse_settings("nope=1")
