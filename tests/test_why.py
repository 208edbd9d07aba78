"""Why is this note (not) on the page: the walk through the pipeline stops where the note fell out, says
by what, and the setting changes it offers bring the note in when the search runs with them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from groove_tui.cli import main
from groove_tui.engine import Engine
from groove_tui.engine.errors import UnknownNote
from groove_tui.engine.types import WHY_VERDICTS, SearchParams
from tests.helpers import hashing_config, write_kb

BULK = 60

FILES = {
    # Sixty notes that say "compost heap" again and again: they fill every leg's pool.
    **{
        f"bulk/b{i:02d}.md": f"# Heap {i}\n\ncompost heap compost heap, the compost heap of plot {i}.\n"
        for i in range(BULK)
    },
    # Says it once, deep in a long note: matched, but below the pool of the full-text legs.
    "garden/long.md": "# Long\n\n" + "Beds and paths and borders of the kitchen garden. " * 30 + "A compost heap.\n",
    "garden/guide.md": (
        "# Guide\n\n## Soil\n\nLoam holds water and air; sand drains and clay holds on to everything.\n\n"
        "## Watering\n\nWater at dawn, deeply and rarely, so that the roots go down looking for it.\n\n"
        "## Compost heap\n\nGreens and browns in layers; turn it monthly and keep it as damp as a sponge.\n"
    ),
    "garden/twin.md": "# Twin\n\ncompost heap compost heap, the compost heap of plot 0.\n",
    "kitchen/bread.md": "# Bread\n\nFlour, water, salt and time.\n",
    "kitchen/crumb.md": "bread crumbs",  # one short line: a quality score of 0.1
}


@pytest.fixture(scope="module")
def eng(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("why")
    e = Engine.open(write_kb(root / "kb", FILES), config=hashing_config(), index_dir=root / "idx")
    e.index()
    yield e
    e.close()


P = SearchParams(limit=5, min_quality=0)


def test_a_shown_note_says_where(eng):
    report = eng.why("compost heap", "garden/guide.md#Compost heap", P)
    assert report.verdict == "shown" and report.on_page and report.shown_rank == 1  # its heading names it
    page = eng.search("compost heap", P).results
    assert (page[0].path, page[0].heading) == ("garden/guide.md", "Compost heap")


def test_a_filter_names_itself(eng):
    report = eng.why("compost heap", "garden/guide.md", replace(P, path_globs=("bulk/**",)))
    assert report.verdict == "filtered" and "path_globs" in report.summary
    assert report.steps[-1].stage == "filters" and not report.steps[-1].passed


def test_the_quality_filter_gives_the_score_against_the_threshold(eng):
    report = eng.why("bread crumbs", "kitchen/crumb.md", SearchParams(limit=5))  # [quality_filter] 0.3
    assert report.verdict == "quality" and "quality score 0.100 < min_quality 0.300" in report.summary


def test_an_exclusion_names_the_term(eng):
    report = eng.why("compost -layers", "garden/guide.md#Compost heap", P)
    assert report.verdict == "excluded" and "-layers" in report.summary


def test_a_note_no_leg_matches_lists_the_words_it_lacks(eng):
    report = eng.why("compost heap", "kitchen/bread.md", replace(P, legs="fts"))
    assert report.verdict == "not_matched"
    fts = next(g for g in report.legs if g.leg == "fts")
    assert not fts.matched and set(fts.missing) == {"compost", "heap"}


def test_a_note_below_every_pool_gives_its_rank_against_the_pool(eng):
    report = eng.why("compost heap", "garden/long.md", replace(P, legs="fts"))
    assert report.verdict == "below_pool"
    for leg in report.legs:
        assert leg.matched and leg.rank is not None and leg.rank > leg.pool == 50
    # The page that would hold it is found by running it: a deeper page deepens every leg's pool.
    assert report.fixes and report.fixes[0].setting == "limit"
    limit = report.fixes[0].value
    page = eng.search("compost heap", replace(P, legs="fts", limit=limit)).results
    assert any(h.path == "garden/long.md" for h in page)


def test_a_note_fused_below_the_page_compares_its_terms_with_the_last_hit(eng):
    report = eng.why("compost heap", "bulk/b40.md", P)
    assert report.verdict == "below_page" and report.fused_rank > 5
    page = eng.search("compost heap", replace(P, explain=True)).results
    rank, score, terms = report.last_shown
    assert rank == len(page) and score == pytest.approx(page[-1].score)
    assert dict(terms) == pytest.approx(dict(page[-1].trace.fusion_terms()))
    assert sum(v for _, v in report.fused_terms) == pytest.approx(report.fused_score, rel=1e-5)
    assert report.fused_score <= score
    fix = report.fixes[0]
    assert fix.setting == "limit" and fix.value >= report.fused_rank
    shown = [h.path for h in eng.search("compost heap", replace(P, limit=fix.value)).results]
    assert shown.index("bulk/b40.md") + 1 == fix.rank


def test_a_note_mmr_moved_off_names_the_hit_it_is_too_like(eng):
    params = replace(P, mmr=True, mmr_lambda=0.1, limit=3)
    page = [h.path for h in eng.search("compost heap plot 0", params).results]
    assert "garden/twin.md" not in page
    report = eng.why("compost heap plot 0", "garden/twin.md", params)
    assert report.verdict == "mmr" and report.by is not None and "similarity" in report.summary
    # Each fix was found by running the search with it.
    for fix in report.fixes:
        changed = replace(params, **{fix.setting: fix.value}) if fix.setting in ("limit", "mmr_lambda", "mmr") else None
        if changed is not None:
            assert "garden/twin.md" in [h.path for h in eng.search("compost heap plot 0", changed).results]


def test_a_section_merged_by_the_parent_retriever_names_the_hit_holding_it(eng):
    params = replace(P, parent_retriever=True)
    report = eng.why("compost heap", "garden/guide.md#Watering", params)
    assert report.verdict == "merged" and report.by.startswith("rank 1, garden/guide.md")


def test_a_weight_change_that_brings_a_note_in_is_verified(eng):
    """A note only the vector leg finds comes in when full text weighs nothing."""
    report = eng.why("compost heap", "kitchen/bread.md", P)
    assert report.verdict in ("below_pool", "below_page")
    for fix in report.fixes:
        if fix.setting in ("fts_weight", "vector_weight"):
            cfg = eng.config
            variant = eng.ranking_variant(
                replace(cfg, search=replace(cfg.search, fusion=replace(cfg.search.fusion, **{fix.setting: fix.value})))
            )
            assert "kitchen/bread.md" in [h.path for h in variant.search("compost heap", P).results]


def test_an_unknown_note_or_section_names_the_nearest(eng):
    with pytest.raises(UnknownNote, match=r"nearest: garden/guide\.md") as err:
        eng.why("x", "garden/guid.md", P)
    assert err.value.nearest[0] == "garden/guide.md"
    with pytest.raises(UnknownNote, match="no section 'Compost'"):
        eng.why("x", "garden/guide.md#Compost", P)
    path, heading = eng.resolve_note(str(eng.kb_path / "garden" / "guide.md") + "#compost HEAP")
    assert (path, heading) == ("garden/guide.md", "Compost heap")


def test_every_verdict_is_one_the_report_knows(eng):
    for target in ("garden/guide.md", "bulk/b40.md", "kitchen/bread.md", "garden/long.md"):
        assert eng.why("compost heap", target, P).verdict in WHY_VERDICTS


# ---------------------------------------------------------------- the command line


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_search_why_prints_the_walk_as_text_and_json(eng, capsys):
    base = ["search", str(eng.kb_path), "compost heap", "--index-dir", str(eng.index_dir.parent)]
    base += ["--model", "hashing-64"]
    code, out, _ = _cli(capsys, *base, "--limit", "5", "--why", "bulk/b40.md")
    assert code == 0
    assert out.startswith("bulk/b40.md: fused below the page")
    assert "✗ fusion" in out and "what would bring it in: limit = " in out
    code, out, _ = _cli(capsys, *base, "--limit", "5", "--why", "bulk/b40.md", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["verdict"] == "below_page" and doc["fixes"][0]["setting"] == "limit"
    assert [s["stage"] for s in doc["steps"]][-1] == "fusion"


def test_search_why_an_unknown_path_is_one_line_with_the_nearest(eng, capsys):
    base = ["search", str(eng.kb_path), "compost", "--index-dir", str(eng.index_dir.parent), "--model", "hashing-64"]
    code, out, err = _cli(capsys, *base, "--why", "garden/gide.md")
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "nearest: garden/guide.md" in err


def test_why_on_a_path_outside_the_index(tmp_path: Path):
    kb = write_kb(tmp_path / "kb", {"a.md": "# A\n\nalpha beta gamma.\n"})
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as e:
        e.index()
        (kb / "b.md").write_text("# B\n\nalpha.\n", encoding="utf-8")  # not indexed yet
        with pytest.raises(UnknownNote):
            e.why("alpha", "b.md", P)


def test_a_page_of_nothing_says_so(eng):
    report = eng.why("compost heap", "garden/guide.md", replace(P, limit=0))
    assert report.verdict == "not_matched" and "limit 0" in report.summary


def test_the_walk_runs_through_the_reranker(eng, tmp_path: Path):
    """With a cross-encoder, every note's walk ends at a known stage, and one the reranker moved off the
    fused page says so with its rank after reranking."""
    from tests.tinymodels import build_tiny_cross_encoder

    ce = str(build_tiny_cross_encoder(tmp_path / "ce"))
    params = replace(P, reranker=ce, limit=3)
    resp = eng.search("compost heap", replace(params, explain=True))
    assert resp.reranked
    fused = eng.search("compost heap", replace(params, reranker=None)).results
    for path in {h.path for h in fused} | {"garden/guide.md", "bulk/b05.md"}:
        report = eng.why("compost heap", path, params, fixes=False)
        assert report.verdict in WHY_VERDICTS
        if report.verdict == "reranker":
            assert "moved off the page by the reranker: rank" in report.summary
