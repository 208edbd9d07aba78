"""Ties never depend on the edit history.

Notes that are exact copies of each other score exactly alike in every leg, and a leg's candidate pool
is often cut in the middle of such a tie. SQLite orders equal scores by chunk id, which follows the
order notes were added in; a cut there would let different copies into the pools of an index updated in
place and of a fresh build of the same notes. Every cut orders a tie by path and position instead, so
whole result lists — order, paths, positions and scores — equal a fresh build's.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groove_tui.engine import Engine

from helpers import hashing_config, write_kb

# Three kinds of note, each copied many times (more copies than a leg's pool of 50 holds), and a few
# notes of their own: the copies tie in every leg, the others break up the scores above and below them.
TEMPLATES = [
    "## Tokio runtime\n\nThe tokio runtime schedules async tasks and futures on worker threads.\n",
    "## Search ranking\n\nHybrid search fuses the vector ranking with the full-text ranking of each note.\n",
    "## Garden soil\n\nGarden soil keeps its water when the runtime of the season is long and dry.\n",
]
OWN = {
    f"own/o{i}.md": f"## Own {i}\n\n{' '.join(random.Random(i).sample(words, 6))}\n"
    for i, words in enumerate([["tokio", "runtime", "ranking", "search", "soil", "garden", "async", "note"]] * 8)
}
COPIES = 70
NAMES = [f"{kind}/n{i:03}.md" for kind in ("a", "b", "c") for i in range(COPIES)]
QUERIES = ["tokio runtime", "search ranking", "runtime", "garden soil runtime", "the"]
PARAMS = [
    {"limit": 10},
    {"limit": 10, "legs": "fts"},
    {"limit": 10, "legs": "vector"},
    {"limit": 10, "mmr": True},
    {"limit": 25, "fusion": "rrf"},
    {"limit": 60, "word_leg": False},
]


def _body(name: str) -> str:
    return TEMPLATES["abc".index(name[0])]


def _results(eng: Engine) -> list:
    out = []
    for q in QUERIES:
        for p in PARAMS:
            hits = eng.search(q, eng.default_params(**p)).results
            out.append((q, p, [(h.path, h.chunk_index, h.score) for h in hits]))
    return out


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    steps=st.lists(st.sampled_from(["add", "delete", "readd"]), min_size=2, max_size=6),
)
def test_results_equal_a_fresh_build_inside_ties(tmp_path_factory, seed, steps):
    rng = random.Random(seed)
    root = tmp_path_factory.mktemp("ties")
    names = NAMES[:]
    rng.shuffle(names)
    first, rest = names[: len(names) // 2], names[len(names) // 2 :]
    kb = write_kb(root / "kb", {**OWN, **{n: _body(n) for n in first}})
    deleted: list[str] = []
    with Engine.open(kb, config=hashing_config(), index_dir=root / "idx") as eng:
        eng.index()
        for step in steps:
            present = sorted(str(p.relative_to(kb)) for p in kb.rglob("n*.md"))
            if step == "add" and rest:
                batch = [rest.pop() for _ in range(min(len(rest), rng.randint(10, 40)))]
            elif step == "delete" and present:
                batch = rng.sample(present, min(len(present), rng.randint(5, 30)))
                deleted += batch
            elif step == "readd" and deleted:
                batch = [deleted.pop(rng.randrange(len(deleted))) for _ in range(min(len(deleted), 20))]
            else:
                continue
            for name in batch:
                path = kb / name
                if path.exists():
                    path.unlink()
                else:
                    write_kb(kb, {name: _body(name)})
            if rng.random() < 0.5:
                eng.update(batch)
            else:
                eng.index()
        got = _results(eng)
    fresh_dir = root / "fresh"
    shutil.rmtree(fresh_dir, ignore_errors=True)
    with Engine.open(kb, config=hashing_config(), index_dir=fresh_dir) as fresh:
        fresh.index()
        expected = _results(fresh)
    for g, e in zip(got, expected, strict=True):
        assert g == e, g[:2]


def test_copies_added_out_of_path_order_rank_as_in_a_fresh_build(tmp_path: Path):
    # The later half of the copies (by path) first, then the earlier half: chunk ids run against paths.
    kb = write_kb(tmp_path / "kb", {**OWN, **{n: _body(n) for n in NAMES[COPIES // 2 : COPIES]}})
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx") as eng:
        eng.index()
        write_kb(kb, {n: _body(n) for n in NAMES[: COPIES // 2]})
        eng.index()
        got = _results(eng)
    with Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "fresh") as fresh:
        fresh.index()
        assert got == _results(fresh)
