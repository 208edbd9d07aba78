"""While vectors are pending, the vector leg counts as far as it has looked at what the full text found, and a
full-text candidate with no vector yet takes its full-text reading as its vector term."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from groove_tui.engine import DB_NAME, Engine
from groove_tui.engine.errors import ParamError
from groove_tui.engine.index.coverage import copy_with_share, keeps_vector
from groove_tui.engine.types import SearchParams
from groove_tui.settings.paths import index_dir_for
from tests.helpers import hashing_config, write_kb

TOPICS = ["garden soil compost", "tokio runtime tasks", "sqlite full text", "vector search knn", "bread dough yeast"]


def _files() -> dict[str, str]:
    return {
        f"{t.split()[0]}/n{i}.md": f"# Note {i} on {t.split()[0]}\n\n{t} and more {t} with notes number {i}.\n\n"
        f"## Detail {i}\n\nSome detail about {t.split()[1]} {i}.\n"
        for t in TOPICS
        for i in range(8)
    }


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("cov")
    kb = write_kb(root / "kb", _files())
    eng = Engine.open(kb, config=hashing_config(), index_dir=root / "idx")
    eng.index()
    yield eng, root
    eng.close()


def _at_share(full, share: float, seed: int = 0) -> Engine:
    eng, root = full
    dest_root = root / f"share-{share}-{seed}"
    copy_with_share(eng.store.db_path, index_dir_for(eng.kb_path, dest_root) / DB_NAME, share, seed)
    return Engine.open(eng.kb_path, config=hashing_config(), index_dir=dest_root)


def _ranking(eng: Engine, query: str, **kw) -> list[tuple[str, int]]:
    return [(h.path, h.chunk_index) for h in eng.search(query, SearchParams(limit=10, min_quality=0, **kw)).results]


QUERIES = ["garden soil", "tokio tasks", "full text search", "knn vector", "yeast bread", "notes number"]


def test_with_no_vectors_the_hybrid_ranks_as_the_full_text_leg(full):
    eng = _at_share(full, 0.0)
    try:
        assert eng.store.pending_count() == eng.store.counts()[1]
        for q in QUERIES:
            assert _ranking(eng, q) == _ranking(eng, q, legs="fts")
    finally:
        eng.close()


@pytest.mark.parametrize("share", [0.0, 0.5])
def test_the_coverage_line_reads_the_share_of_full_text_hits_with_a_vector(full, share):
    """At 0 % embedded the vector leg returns nothing: the share is still measured (0, not "all of them")."""
    from groove_tui.tui.look.render import response_summary

    eng = _at_share(full, share)
    try:
        resp = eng.search("garden soil", SearchParams(limit=10, min_quality=0))
        ids = [h.chunk_id for h in resp.results]
        marks = ",".join("?" * len(ids))
        embedded = eng.store.conn().execute(f"SELECT count(*) FROM chunks WHERE embedded = 1 AND id IN ({marks})", ids)
        assert resp.pending_embeddings > 0
        if share == 0.0:
            assert resp.vector_share == 0.0 and embedded.fetchone()[0] == 0
            assert "(0% of full-text hits have vectors)" in response_summary(resp).plain
        else:
            assert 0.0 < resp.vector_share < 1.0
    finally:
        eng.close()


def test_with_every_vector_the_fusion_is_unchanged(full):
    eng, _ = full
    copy = _at_share(full, 1.0)
    try:
        for q in QUERIES:
            a = eng.search(q, SearchParams(limit=10, min_quality=0, explain=True))
            b = copy.search(q, SearchParams(limit=10, min_quality=0, explain=True))
            assert [(h.path, h.chunk_index, h.score) for h in a.results] == [
                (h.path, h.chunk_index, h.score) for h in b.results
            ]
            assert a.vector_share == b.vector_share == 1.0
            assert all(h.trace.vector_share is None for h in b.results)
    finally:
        copy.close()


def test_a_candidate_with_no_vector_yet_takes_its_full_text_reading_as_its_vector_term(full):
    eng = _at_share(full, 0.5, seed=3)
    try:
        pending = {r[0] for r in eng.store.conn().execute("SELECT id FROM chunks WHERE embedded = 0")}
        seen_imputed = seen_embedded = 0
        for q in QUERIES:
            # One full-text leg, so each stand-in is that leg's reading (with more, it is their best one).
            resp = eng.search(q, SearchParams(limit=20, min_quality=0, explain=True, word_leg=False))
            fts = eng.search(q, SearchParams(limit=50, min_quality=0, legs="fts", word_leg=False)).results
            fts_ids = {h.chunk_id for h in fts}
            expected_share = 1 - len(fts_ids & pending) / len(fts_ids)
            assert 0 < expected_share < 1
            assert resp.vector_share == pytest.approx(expected_share, abs=0.05)
            imputed_fts_ranks = []
            for h in resp.results:
                t = h.trace
                assert t.vector_share == resp.vector_share
                share = resp.vector_share
                if h.chunk_id in pending:
                    # the vector leg never saw it: its full-text reading stands in (weights 1:1, the vector's
                    # scaled by the share)
                    assert t.vector_rank is None and t.vector_imputed
                    assert t.rrf_vector == pytest.approx(t.rrf_fts * share, rel=1e-5, abs=1e-7)
                    assert t.rrf_score == pytest.approx(t.rrf_fts * (1 + share), rel=1e-5, abs=1e-7)
                    imputed_fts_ranks.append(t.fts_rank)
                    seen_imputed += 1
                else:
                    assert not t.vector_imputed
                    if t.vector_rank is not None:  # its own reading on the leg's scale, times the share
                        lo, hi = t.vector_scale
                        reading = max(0.0, ((1 - t.vector_distance**2 / 2) - lo) / (hi - lo))
                        assert t.rrf_vector == pytest.approx(reading * share, rel=1e-4, abs=1e-6)
                        seen_embedded += 1
            # among themselves the candidates with no vector keep the full-text order
            assert imputed_fts_ranks == sorted(imputed_fts_ranks)
            assert json.loads(resp.to_json())["results"]  # the response still serialises
        assert seen_imputed and seen_embedded
    finally:
        eng.close()


def test_the_explain_output_says_which_vector_terms_stand_in(full):
    from groove_tui.output.textout import format_response

    eng = _at_share(full, 0.5, seed=3)
    try:
        resp = eng.search("garden soil", SearchParams(limit=10, min_quality=0, explain=True))
        text = format_response(resp, color=False, explain=True)
        assert "of full-text hits embedded, the others' vector terms are their full-text readings)" in text
        assert "vector weight × 0." in text
        assert "vector pending (full-text reading)" in text
        data = json.loads(resp.to_json())
        assert any(h["fusion"].get("vector_imputed") for h in data["explain"]["hits"])
    finally:
        eng.close()


def test_the_seeded_share_is_stable_and_nested():
    paths = [(f"p{i}.md", j) for i in range(200) for j in range(3)]
    small = {p for p in paths if keeps_vector(7, *p, 0.1)}
    large = {p for p in paths if keeps_vector(7, *p, 0.5)}
    assert small <= large
    assert 0.05 < len(small) / len(paths) < 0.15 and 0.4 < len(large) / len(paths) < 0.6
    assert small == {p for p in paths if keeps_vector(7, *p, 0.1)}
    assert small != {p for p in paths if keeps_vector(8, *p, 0.1)}


def test_a_share_outside_zero_to_one_is_refused(full, tmp_path: Path):
    eng, _ = full
    for bad in (-0.1, 1.5, float("nan"), "half", True):
        with pytest.raises(ParamError, match="embedded share"):
            copy_with_share(eng.store.db_path, tmp_path / "x" / DB_NAME, bad, 0)  # type: ignore[arg-type]


def _eval_at_share(eng: Engine, index_dir: Path, golden: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "groove_tui.cli", "eval", str(eng.kb_path), "--index-dir", str(index_dir)]
    argv += ["--model", "hashing-64", "--golden", str(golden), *extra]
    return subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_eval_at_a_share_leaves_the_index_untouched(full, tmp_path: Path):
    eng, root = full
    golden = tmp_path / "golden.yml"
    golden.write_text("queries:\n  - id: q1\n    query: garden soil\n    expected:\n      - path: garden/n1.md\n")
    before = eng.store.db_path.stat().st_mtime_ns, eng.store.pending_count()
    run = _eval_at_share(eng, root / "idx", golden, "--embedded-share", "0.3", "--format", "json")
    assert run.returncode == 0, run.stderr
    assert "pending" in run.stderr and "not recorded" in run.stderr
    assert json.loads(run.stdout)["aggregate"]["query_count"] == 1
    assert (eng.store.db_path.stat().st_mtime_ns, eng.store.pending_count()) == before
    bad = _eval_at_share(eng, root / "idx", golden, "--embedded-share", "2")
    assert bad.returncode == 2 and "--embedded-share: '2' is invalid: expected a number from 0 to 1" in bad.stderr
