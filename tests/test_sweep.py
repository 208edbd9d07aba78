"""Sweeps: every point equals a separate eval run at that value, exactly; specs fail with one clear line.

The KB and its golden file are generated here (seeded), searched with the deterministic hashing embedder.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from groove_tui import cli
from groove_tui.commands.eval import run_eval
from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.evaluate.golden import load_golden
from groove_tui.engine.evaluate.knobs import KnobError, apply_settings, format_value
from groove_tui.engine.evaluate.metrics import eval_params
from groove_tui.engine.evaluate.sweep import grid, parse_axis, run_sweep

from helpers import hashing_config, write_kb

TOPICS = ("tokio", "sqlite", "vector", "kernel", "garden", "violin", "harbour", "glacier", "quantum", "bakery")
FILLER = ("alpha", "beta", "gamma", "delta", "notes", "about", "things", "where", "search", "words", "daily")
KS = (1, 5, 10)


def generated_kb(root: Path, docs: int = 24, seed: int = 15) -> tuple[Path, str]:
    """Documents of two or three sections, each about a mix of topics; the golden file asks for one
    topic pair per query and expects the documents whose first section is about it."""
    rng = random.Random(seed)
    files: dict[str, str] = {}
    owners: dict[tuple[str, str], list[str]] = {}
    for i in range(docs):
        a, b = rng.sample(TOPICS, 2)
        path = f"{'abc'[i % 3]}/doc{i:02d}.md"
        sections = []
        for j in range(rng.randint(2, 3)):
            words = [a, b] * 3 if j == 0 else rng.sample(TOPICS, 2)
            text = " ".join(rng.choice((*words, *FILLER)) for _ in range(40))
            sections.append(f"## Part {j} {a if j == 0 else ''}\n\n{text}\n")
        files[path] = f"---\ntitle: Doc {i} {a} {b}\n---\n\n" + "\n".join(sections)
        owners.setdefault((a, b), []).append(path)
    lines = ["queries:"]
    for n, ((a, b), paths) in enumerate(sorted(owners.items())[:16]):
        lines += [f"  - id: q{n:02d}", f'    query: "{a} {b}"', "    expected:"]
        lines += [f'      - path: "{p}"' for p in paths]
    return write_kb(root, files), "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def sweep_setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    kb, golden_text = generated_kb(root / "kb")
    golden_path = root / "golden.yml"
    golden_path.write_text(golden_text, encoding="utf-8")
    # The word leg off by default here: on these generated notes it alone ranks nearly every query
    # right, and the other settings would then change nothing a sweep could show.
    base = hashing_config()
    config = replace(base, search=replace(base.search, word_leg=False))
    with Engine.open(kb, config=config, index_dir=root / "idx") as eng:
        eng.index()
    return kb, root / "idx", config, load_golden(golden_path), golden_path


def _separate_eval(kb, idx, config, golden, settings):
    """What `groove-tui eval` with those settings gives: a fresh engine, fresh caches."""
    with Engine.open(kb, config=config, index_dir=idx) as eng:
        base = eval_params(eng.default_params(), limit=max(KS), legs="hybrid", reranker_given=False)
        cfg, params = apply_settings(config, base, settings)
    with Engine.open(kb, config=cfg, index_dir=idx) as eng:
        results, agg, _corpus = run_eval(eng, golden, params, KS)
    return results, agg


@pytest.mark.parametrize(
    "specs",
    [
        ("mmr_lambda=0:1:0.25",),
        ("mmr_same_doc_penalty=0,0.5,1",),
        ("fusion=dbsf,relative,rrf",),
        ("vector_weight=0:2:1",),
        ("bm25_heading_weight=0,4", "fts_weight=0.5,1"),  # changes what the full-text leg fetches: own legs
        ("rrf_k=1,60", "fusion=rrf,dbsf"),
        ("word_leg=false,true", "vector_weight=0,2"),
    ],
)
def test_each_point_equals_a_separate_eval_run(sweep_setup, specs):
    kb, idx, config, golden, _ = sweep_setup
    axes = tuple(parse_axis(s) for s in specs)
    with Engine.open(kb, config=config, index_dir=idx) as eng:
        base = eval_params(eng.default_params(), limit=max(KS), legs="hybrid", reranker_given=False)
        result = run_sweep(eng, golden, base, axes, KS)
    assert [p.settings for p in result.points] == list(grid(axes))
    ndcgs = set()
    for point in result.points:
        results, agg = _separate_eval(kb, idx, config, golden, point.settings)
        assert point.aggregate == agg, point.label()
        assert [r.top_k for r in point.results] == [r.top_k for r in results], point.label()
        ndcgs.add(agg.ndcg_at_k[10])
    # the generated set is one where the settings matter, so equality is not trivially all-equal
    assert len(ndcgs) > 1 or specs == ("mmr_same_doc_penalty=0,0.5,1",)


def test_points_report_diversity_time_and_the_best(sweep_setup):
    kb, idx, config, golden, _ = sweep_setup
    with Engine.open(kb, config=config, index_dir=idx) as eng:
        base = eval_params(eng.default_params(), limit=10, legs="hybrid", reranker_given=False)
        seen = []
        result = run_sweep(
            eng, golden, base, (parse_axis("mmr_lambda=0,1"),), KS, progress=lambda d, t: seen.append((d, t))
        )
    n = len(golden.queries)
    assert seen[0] == (0, 2 * n) and seen[-1] == (2 * n, 2 * n)
    for p in result.points:
        judged = [r for r in p.results if r.query.expected]
        assert p.diversity == sum(len({h.path for h in r.top_k[:10]}) for r in judged) / len(judged)
        assert p.search_ms >= 0
    best = result.best("ndcg")
    assert best.aggregate.ndcg_at_k[10] == max(p.aggregate.ndcg_at_k[10] for p in result.points)
    assert result.notes == ("MMR is on at every point: mmr_lambda acts only inside MMR",)


def test_a_full_same_document_penalty_gives_the_most_distinct_documents(sweep_setup):
    kb, idx, config, golden, _ = sweep_setup
    with Engine.open(kb, config=config, index_dir=idx) as eng:
        base = eval_params(eng.default_params(), limit=10, legs="hybrid", reranker_given=False)
        result = run_sweep(eng, golden, base, (parse_axis("mmr_same_doc_penalty=0,1"),), KS)
    # a penalty of 1 outweighs any relevance, so a second chunk of a document comes only when no other is left
    assert result.points[1].diversity > result.points[0].diversity


def test_a_cancelled_sweep_stops(sweep_setup):
    import threading

    from groove_tui.engine.errors import SearchCancelled

    kb, idx, config, golden, _ = sweep_setup
    cancel = threading.Event()
    cancel.set()
    with Engine.open(kb, config=config, index_dir=idx) as eng, pytest.raises(SearchCancelled):
        run_sweep(eng, golden, eng.default_params(), (parse_axis("mmr_lambda=0,1"),), KS, cancel=cancel)


# ---------------------------------------------------------------- specs


def test_a_range_is_start_start_plus_step_and_so_on_exactly_as_typed(sweep_setup, capsys):
    """The start is never rounded to the step's precision: 0.0004:1:0.5 is 0.0004 and 0.5004 (not 0 and
    0.5), and the table and JSON print them with the digits they have."""
    assert parse_axis("mmr_lambda=0.0004:1:0.5").values == (0.0004, 0.5004)
    assert parse_axis("mmr_lambda=0.123456789:1:0.5").values == (0.123456789, 0.623456789)
    assert parse_axis("mmr_same_doc_penalty=0.25:0.26:0.0025").values == (0.25, 0.2525, 0.255, 0.2575, 0.26)
    assert format_value(0.123456789) == "0.123456789" and format_value(0.5) == "0.5" and format_value(1.0) == "1"
    kb, idx, _config, _golden, golden_path = sweep_setup
    from groove_tui.cli import main

    code = main(
        [
            "sweep",
            str(kb),
            "--index-dir",
            str(idx),
            "--model",
            "hashing",
            "--golden",
            str(golden_path),
            "--param",
            "mmr_lambda=0.0004:1:0.5",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "0.0004 " in out and "0.5004 " in out
    assert (
        main(
            [
                "sweep",
                str(kb),
                "--index-dir",
                str(idx),
                "--model",
                "hashing",
                "--golden",
                str(golden_path),
                "--param",
                "mmr_lambda=0.0004:1:0.5",
                "--format",
                "json",
            ]
        )
        == 0
    )
    points = json.loads(capsys.readouterr().out)["points"]
    assert [p["settings"]["mmr_lambda"] for p in points] == [0.0004, 0.5004]


def test_ranges_are_inclusive_and_rounded():
    assert parse_axis("mmr_lambda=0:1:0.1").values == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    assert parse_axis("lambda=0.5:0.6:0.05").values == (0.5, 0.55, 0.6)
    assert parse_axis("rerank_pool=10:40:10").values == (10, 20, 30, 40)
    assert parse_axis("fusion=rrf,dbsf").values == ("rrf", "dbsf")
    assert parse_axis("mmr=true,false").values == (True, False)
    assert parse_axis("fts_weight=1,1,2").values == (1.0, 2.0)  # duplicates once


@pytest.mark.parametrize(
    "spec, message",
    [
        ("mmr_lambda", "expected NAME=START:STOP:STEP or NAME=V1,V2,..."),
        ("foo=1", "unknown setting 'foo': expected one of mmr_lambda,"),
        ("mmr_lambda=0:1:0", "the step '0' must be a number > 0"),
        ("mmr_lambda=0:1:x", "the step 'x' must be a number > 0"),
        ("mmr_lambda=1:0:0.1", "STOP 0 is below START 1"),
        ("mmr_lambda=0:2:0.5", "mmr_lambda = '2' is invalid: expected a number in [0, 1]"),
        ("rerank_pool=0:10:5", "rerank_pool = '0' is invalid: expected an integer in [1, 1000]"),
        ("fusion=dbsf,bm25", "fusion = 'bm25' is invalid: expected one of dbsf, relative, rrf"),
        ("fusion=a:b:c", "fusion takes a list: one of dbsf, relative, rrf"),
        ("reranker=a,b", "reranker cannot be swept"),
        ("mmr_lambda=0:1:0.0001", "gives 10001 values: at most 1000"),
    ],
)
def test_bad_specs_name_the_spec_and_what_is_allowed(spec, message):
    with pytest.raises(KnobError) as info:
        parse_axis(spec)
    text = str(info.value)
    assert text.startswith(f"--param {spec!r}") and message in text and "\n" not in text


def test_grids_refuse_a_repeated_setting_and_a_huge_product():
    with pytest.raises(KnobError, match="each setting may be swept once"):
        grid((parse_axis("lambda=0,1"), parse_axis("mmr_lambda=0.5")))
    with pytest.raises(KnobError, match="the sweep has 441 points: at most 400"):
        grid((parse_axis("lambda=0:1:0.05"), parse_axis("penalty=0:1:0.05")))


def test_settings_that_zero_both_legs_are_refused():
    with pytest.raises(KnobError, match="vector_weight = 0 and fts_weight = 0 is invalid"):
        apply_settings(hashing_config(), SearchParams(), (("vector_weight", 0.0), ("fts_weight", 0.0)))


# ---------------------------------------------------------------- the command


def test_the_command_prints_a_table_a_chart_and_json(sweep_setup, capsys, monkeypatch):
    kb, idx, _config, _golden, golden_path = sweep_setup
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(idx))
    common = ["sweep", str(kb), "--model", "hashing-64", "--golden", str(golden_path)]
    assert cli.main([*common, "--param", "mmr_lambda=0:1:0.5", "--plot"]) == 0
    out = capsys.readouterr().out
    assert "mmr_lambda  nDCG@10 (bar from" in out and "← best" in out
    assert "  mmr_lambda  recall@10      MRR   nDCG@10  docs@10" in out
    assert sum(1 for line in out.splitlines() if line.startswith("* ")) == 2  # the best row and its legend
    assert cli.main([*common, "--param", "fusion=rrf,dbsf", "--param", "fts_weight=0.5,1", "--plot"]) == 0
    assert "nDCG@10 by fusion (rows) × fts_weight (columns)" in capsys.readouterr().out
    assert cli.main([*common, "--param", "mmr_lambda=0,1", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["settings"] for p in data["points"]] == [{"mmr_lambda": 0.0}, {"mmr_lambda": 1.0}]
    assert set(data["points"][0]) == {"settings", "aggregate", "diversity", "search_ms_p50", "seconds"}
    assert set(data["best"]) == {"ndcg", "recall", "mrr"}


def test_the_command_refuses_bad_input_in_one_line(sweep_setup, capsys, monkeypatch):
    kb, idx, _config, _golden, golden_path = sweep_setup
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(idx))
    common = ["sweep", str(kb), "--model", "hashing-64", "--golden", str(golden_path)]
    for extra, message in (
        (["--param", "mmr_lambda=0:1:-1"], "groove-tui: --param 'mmr_lambda=0:1:-1' is invalid: the step '-1'"),
        ([], "groove-tui: no --param: name a setting to sweep"),
        (["--param", "lambda=0", "--param", "penalty=0", "--param", "fts_weight=1"], "a sweep takes one, or two"),
    ):
        assert cli.main([*common, *extra]) == 1
        err = capsys.readouterr().err
        assert err.startswith("groove-tui: ") and message in err and err.count("\n") == 1


def test_a_variant_may_not_change_the_index(sweep_setup):
    from groove_tui.engine.errors import EngineError

    kb, idx, config, _golden, _ = sweep_setup
    with Engine.open(kb, config=config, index_dir=idx) as eng:
        assert eng.ranking_variant(eng.config) is eng.ranking_variant(eng.config)
        with pytest.raises(EngineError, match="only \\[search\\] and the reranker"):
            eng.ranking_variant(replace(eng.config, contextual=True))
