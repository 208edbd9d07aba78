"""Pages nest and show their hits in score order, and a query that names a heading or a title earns that
section a name term that puts it first."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groove_tui.engine import Engine
from groove_tui.engine.analysis.names import heading_key
from groove_tui.engine.retrieve.params import page_tiers
from groove_tui.engine.types import SearchParams
from tests.helpers import hashing_config, write_kb

WORDS = [
    "retriever",
    "parent",
    "fusion",
    "vector",
    "garden",
    "soil",
    "tokio",
    "runtime",
    "index",
    "search",
    "chunk",
    "heading",
    "rank",
    "score",
    "query",
    "window",
    "model",
    "cache",
    "note",
    "page",
]


def _corpus() -> dict[str, str]:
    """Sixty notes of two or three sections drawn from a small vocabulary, so queries match many of them
    with many near ties: the case where pool sizes could reorder a page."""
    files = {}
    for n in range(60):
        words = [WORDS[(n * 7 + i * 3) % len(WORDS)] for i in range(40)]
        body = " ".join(words)
        second = " ".join(reversed(words[:25]))
        files[f"n{n:02d}/note{n}.md"] = (
            f"# Note {n}\n\n{body}.\n\n## Section {WORDS[n % len(WORDS)]}\n\n{second}.\n\n"
            f"## More {n}\n\n{' '.join(words[10:30])} {WORDS[(n * 5) % len(WORDS)]}.\n"
        )
    return files


@pytest.fixture(scope="module")
def paged(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("paged")
    kb = write_kb(root / "kb", _corpus())
    eng = Engine.open(kb, config=hashing_config(), index_dir=root / "idx")
    eng.index()
    yield eng
    eng.close()


def _ids(eng: Engine, query: str, params: SearchParams) -> list[tuple[str, int, str]]:
    return [(h.path, h.chunk_index, h.content) for h in eng.search(query, params).results]


def _scored(eng: Engine, query: str, params: SearchParams) -> list[tuple[tuple[str, int, str], float]]:
    return [((h.path, h.chunk_index, h.content), h.score) for h in eng.search(query, params).results]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    limits=st.lists(st.integers(min_value=1, max_value=120), min_size=2, max_size=2),
    mmr=st.booleans(),
    parent=st.booleans(),
    lam=st.sampled_from([0.3, 0.7, 1.0]),
)
def test_a_larger_page_holds_every_hit_of_a_smaller_one_in_the_same_order(paged, query, limits, mmr, parent, lam):
    small, large = sorted(limits)
    params = SearchParams(limit=small, mmr=mmr, mmr_lambda=lam if mmr else 0.7, parent_retriever=parent, min_quality=0)
    few = _scored(paged, query, params)
    many = _scored(paged, query, replace(params, limit=large))
    assert len(many) >= len(few)
    shared = {hit for hit, _ in few}
    assert [hit for hit, _ in many if hit in shared] == [hit for hit, _ in few]  # nested, in the same order
    assert dict(many).items() >= dict(few).items()  # with the same scores
    if not mmr:  # shown in the order of the score shown
        scores = [score for _, score in many]
        assert scores == sorted(scores, reverse=True)


def test_page_tiers_cover_every_limit():
    assert page_tiers(1) == (10,) and page_tiers(10) == (10,)
    assert page_tiers(11) == (10, 20) and page_tiers(20) == (10, 20)
    assert page_tiers(1000) == (10, 20, 50, 100, 200, 500, 1000)


def test_a_page_of_ten_or_fewer_ranks_as_a_page_of_ten(paged):
    ten = _ids(paged, "parent retriever", SearchParams(limit=10, min_quality=0))
    for n in (1, 3, 7):
        assert _ids(paged, "parent retriever", SearchParams(limit=n, min_quality=0)) == ten[:n]


# ------------------------------------------------------------------ named sections

NAMED_KB = {
    # Notes that say "parent retriever" over and over, in headings and bodies: they win on bm25 and vectors.
    **{
        f"talk/t{i}.md": (
            f"# Retrieval talk {i}\n\n## Why the parent retriever helps {i}\n\n"
            + "The parent retriever and the parent retriever settings: parent retriever, retriever of parents. " * 6
            + "\n"
        )
        for i in range(12)
    },
    "guide.md": (
        "# Guide\n\n## Fusion\n\nHow two legs fuse into one ranking.\n\n"
        "## Parent retriever\n\nExpands a hit with its neighbouring chunks up to a token cap.\n\n"
        "## MMR\n\nDiversity for the page.\n"
    ),
    "tools/tar.md": "# tar\n\nArchiving utility. Create an archive from files.\n",
    "ideas/garden.md": "---\ntitle: The kitchen garden\n---\n\nBeds near the door; herbs and salad leaves.\n",
    "ideas/compost.md": "# The compost heap\n\nGreens and browns in layers; turn it monthly.\n",
    **{
        f"ideas/k{i}.md": f"# Plot {i}\n\nkitchen garden kitchen garden compost heap compost heap, plot {i}.\n"
        for i in range(8)
    },
    **{
        f"tools/{n}.md": f"# {n}\n\nStart the target; tar tar target restart tar of the target.\n"
        for n in ("getarch", "target-start", "npm-star", "docker-restart", "ibmcloud-target")
    },
}


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("named")
    kb = write_kb(root / "kb", NAMED_KB)
    eng = Engine.open(kb, config=hashing_config(), index_dir=root / "idx")
    eng.index()
    yield eng
    eng.close()


def _off(eng: Engine) -> Engine:
    cfg = eng.config
    return Engine(eng.kb_path, replace(cfg, search=replace(cfg.search, heading_first=False)), eng.index_dir)


@pytest.mark.parametrize(
    "query", ["parent retriever", "Parent Retriever", "  parent   retriever:  ", "PARENT RETRIEVER"]
)
def test_a_query_equal_to_a_heading_ranks_that_section_first(named, query):
    resp = named.search(query, SearchParams(limit=5, min_quality=0, explain=True))
    first = resp.results[0]
    assert (first.path, first.heading) == ("guide.md", "Parent retriever")
    assert first.trace.named and not any(h.trace.named for h in resp.results[1:])


def test_without_heading_first_the_section_competes_on_its_scores(named):
    off = _off(named)
    try:
        first = off.search("parent retriever", SearchParams(limit=5, min_quality=0)).results[0]
    finally:
        off.close()
    assert first.path != "guide.md"  # the talks win on scores alone: what the rule is for


def test_a_query_equal_to_a_title_ranks_that_note_first(named):
    hits = named.search("tar", SearchParams(limit=5, min_quality=0)).results
    assert hits[0].path == "tools/tar.md"
    off = _off(named)
    try:
        assert off.search("tar", SearchParams(limit=5, min_quality=0)).results[0].path != "tools/tar.md"
    finally:
        off.close()


@pytest.mark.parametrize(
    ("query", "path"), [("kitchen garden", "ideas/garden.md"), ("compost heap", "ideas/compost.md")]
)
def test_a_title_with_a_leading_article_is_named_without_it(named, query, path):
    hits = named.search(query, SearchParams(limit=3, min_quality=0, explain=True)).results
    assert hits[0].path == path and hits[0].trace.named


@pytest.mark.parametrize(
    "extra",
    [
        {"mmr": True, "mmr_lambda": 0.3},
        {"parent_retriever": True},
        {"limit": 1},
        {"limit": 40},
        {"fusion": "rrf"},
        {"fusion": "relative"},
    ],
)
def test_the_named_section_stays_first_with_every_stage(named, extra):
    params = replace(SearchParams(limit=5, min_quality=0), **extra)
    assert named.search("parent retriever", params).results[0].path == "guide.md"


def test_filters_and_exclusions_still_hold_for_a_named_section(named):
    hits = named.search("parent retriever", SearchParams(limit=5, min_quality=0, path_globs=("talk/**",))).results
    assert hits and all(h.path.startswith("talk/") for h in hits)
    hits = named.search("parent retriever -neighbouring", SearchParams(limit=5, min_quality=0)).results
    assert all(h.path != "guide.md" for h in hits)


def test_pure_leg_runs_are_not_reordered(named):
    for legs in ("fts", "vector"):
        hits = named.search("parent retriever", SearchParams(limit=5, min_quality=0, legs=legs, explain=True)).results
        assert not any(h.trace.named for h in hits)


def test_heading_key_compares_as_a_reader_would():
    assert heading_key("## `tar`:") == heading_key("tar") == "tar"
    assert heading_key("Parent  Retriever") == heading_key("parent retriever")
    assert heading_key("ＡＢＣ") == "abc"  # NFKC: full width is the same word
    assert heading_key("設定。") == "設定"
    assert heading_key("C++") == "c++"
    assert heading_key("The parent retriever") == heading_key("parent retriever")
    assert heading_key("A") == "a" and heading_key("the") == "the"  # an article alone is a word


def test_a_named_section_is_found_even_when_no_leg_ranks_it(tmp_path: Path):
    """Ninety notes that all say the words in their bodies outrank the note whose heading they are."""
    files = {f"bulk/b{i:02d}.md": "# B\n\n" + "garden soil garden soil compost garden soil. " * 8 for i in range(90)}
    files["z/named.md"] = (
        "# Other\n\nAn opening paragraph about other things entirely.\n\n"
        "## Garden soil\n\nLoam holds water and air; it is what most plants like best.\n"
    )
    eng = Engine.open(write_kb(tmp_path / "kb", files), config=hashing_config(), index_dir=tmp_path / "idx")
    try:
        eng.index()
        assert eng.search("garden soil", SearchParams(limit=3, min_quality=0)).results[0].path == "z/named.md"
    finally:
        eng.close()


def test_an_index_updated_in_place_ranks_ties_as_a_fresh_build(tmp_path: Path):
    """Two notes with the same text tie on every leg. Added one after the other, the later one gets the
    higher chunk id; a fresh build numbers them in walk order. Both indexes must rank them alike."""
    text = "# Same\n\nIdentical words about sourdough starters and their feeding schedule.\n"
    kb = write_kb(tmp_path / "kb", {"b.md": text})
    grown = Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "grown")
    try:
        grown.index()
        (kb / "a.md").write_text(text, encoding="utf-8")
        grown.index()
        ids = dict(
            grown.store.conn()
            .execute("SELECT d.path, c.id FROM chunks c JOIN documents d ON d.id = c.document_id")
            .fetchall()
        )
        assert ids["b.md"] < ids["a.md"]  # the edit history shows in the ids
        fresh = Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "fresh")
        try:
            fresh.index()
            for method in ("dbsf", "rrf", "relative"):
                params = SearchParams(limit=5, min_quality=0, fusion=method)
                a = [h.path for h in grown.search("sourdough starters", params).results]
                b = [h.path for h in fresh.search("sourdough starters", params).results]
                assert a == b == ["a.md", "b.md"]
        finally:
            fresh.close()
    finally:
        grown.close()


def test_a_three_letter_heading_is_named_without_the_bigram_table(tmp_path: Path):
    """The heading lookup reads the trigram table when the bigram one is off: a 3-character heading is one
    trigram, and is found."""
    files = {
        f"tools/t{i}.md": "# Tools\n\n## Usage\n\nStart the target; tar tar target restart tar, and tar again.\n"
        for i in range(6)
    }
    files["tools/archive.md"] = (
        "# Archive\n\nOpening words about keeping old files together in one place.\n\n"
        "## tar\n\nThe archiving utility: it writes many files into one and reads them back out.\n"
    )
    cfg = hashing_config()
    cfg = replace(cfg, search=replace(cfg.search, cjk_bigram=False))
    with Engine.open(write_kb(tmp_path / "kb", files), config=cfg, index_dir=tmp_path / "idx") as eng:
        eng.index()
        first = eng.search("tar", SearchParams(limit=5, min_quality=0, explain=True)).results[0]
        assert (first.path, first.heading) == ("tools/archive.md", "tar")
        assert first.trace.named and first.trace.name_kind == "heading"


def test_a_named_section_in_parts_is_named_by_its_first_part(tmp_path: Path):
    """A section split at the size cap has its heading on every part: the name term goes to the section as
    its first part, the one a reader opens at."""
    body = "\n\n".join(
        f"Paragraph {i} about loam, clay and water held in soil." + " More words." * 20 for i in range(12)
    )
    files = {"soil.md": f"# Soil\n\nAn opening.\n\n## Garden soil\n\n{body}\n"}
    files.update({f"bulk/b{i}.md": "# B\n\n" + "garden soil garden soil. " * 8 for i in range(20)})
    cfg = hashing_config()
    cfg = replace(cfg, search=replace(cfg.search, merge_parts=False))
    with Engine.open(write_kb(tmp_path / "kb", files), config=cfg, index_dir=tmp_path / "idx") as eng:
        eng.index()
        parts = (
            eng.store.conn()
            .execute(
                "SELECT c.chunk_index, c.part FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE d.path = 'soil.md' AND c.heading = 'Garden soil' ORDER BY c.chunk_index"
            )
            .fetchall()
        )
        assert len(parts) >= 2 and parts[0][1] == 0
        named = [h for h in eng.search("garden soil", SearchParams(limit=10, explain=True)).results if h.trace.named]
        assert [(h.path, h.chunk_index, h.part) for h in named] == [("soil.md", parts[0][0], 0)]
