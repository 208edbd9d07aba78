"""A watched index is exact: after any sequence of edits to the notes (create, modify, delete, rename, move a
folder, an editor's atomic save, swap and backup files), each followed by an update of just the paths a
watcher would report, the index and every search of a long-lived engine equal a fresh build of the final
KB. Run under and above the sizes where the pruned full-text search and the vector scan switch on, so
their statistics and matrix must follow the index generation (a stale matrix, a generation-blind idf
cache or stored row counts read at another generation each fail here)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.index import phrase_stats as ps
from groove_tui.engine.retrieve import fulltext as fp
from groove_tui.engine.retrieve import vector_scan as vs

from helpers import hashing_config

WORDS = ["tokio", "runtime", "sqlite", "vector", "banana", "cells", "protein", "search", "the", "and", "東京", "設定"]
QUERIES = ["tokio runtime", "banana", "the cells", "sqlite vector search", "東京", "protein -banana", '"the and"']
FOLDERS = ["", "a/", "b/", "a/deep/"]
NAMES = [f"n{i}.md" for i in range(6)]

text_st = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
body_st = st.lists(st.tuples(st.sampled_from(["Intro", "Setup", "Notes"]), text_st), min_size=1, max_size=3).map(
    lambda sections: "\n\n".join(f"## {h}\n\n{t}" for h, t in sections)
)


def index_state(eng: Engine) -> list[tuple]:
    """Everything search reads, by path (ids differ between a watched and a fresh index)."""
    conn = eng.store.conn()
    docs = conn.execute(
        "SELECT path, title, topic, category, tags, date, content_hash FROM documents ORDER BY path"
    ).fetchall()
    chunks = conn.execute(
        "SELECT d.path, c.chunk_index, c.heading, c.level, c.content, c.context_text, c.line, c.part, c.embedded "
        "FROM chunks c JOIN documents d ON d.id = c.document_id ORDER BY d.path, c.chunk_index"
    ).fetchall()
    vectors = sorted(
        (p, i, eng.store.embeddings_for([cid]).get(cid).tobytes())  # type: ignore[union-attr]
        for cid, p, i in conn.execute(
            "SELECT c.id, d.path, c.chunk_index FROM chunks c JOIN documents d ON d.id = c.document_id"
        )
    )
    fts = conn.execute("SELECT count(*) FROM fts_chunks").fetchone()[0]
    return [*docs, *chunks, *vectors, ("fts rows", fts)]


def answers(eng: Engine) -> list[tuple]:
    """Every leg's results for every query, each hit by path, section and exact score; hits of equal
    score are sorted by path (their order among themselves follows chunk ids, which differ)."""
    out: list[tuple] = []
    for q in QUERIES:
        for legs in ("fts", "vector", "hybrid"):
            hits = eng.search(q, SearchParams(limit=200, legs=legs)).results
            out.append((q, legs, sorted((-h.score, h.path, h.chunk_index, h.content) for h in hits)))
    return out


class WatchedKB(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="groove-watch-"))
        self.kb = self.root / "kb"
        self.kb.mkdir()
        for n in range(3):
            (self.kb / f"seed{n}.md").write_text(f"# Seed {n}\n\n## Intro\n\ntokio banana the {n}\n", "utf-8")
        self.eng = Engine.open(self.kb, config=hashing_config(), index_dir=self.root / "idx")
        self.eng.index()  # a full run: it stores the phrase statistics of this generation
        self.pending: set[str] = set()
        self.builds = 0

    def teardown(self) -> None:
        self.eng.close()
        shutil.rmtree(self.root, ignore_errors=True)

    # ------------------------------------------------------------ the notes on disk

    def notes(self) -> list[str]:
        return sorted(
            p.relative_to(self.kb).as_posix()
            for p in self.kb.rglob("*.md")
            if p.is_file() and not p.name.startswith((".#", "~$"))
        )

    @rule(folder=st.sampled_from(FOLDERS), name=st.sampled_from(NAMES), body=body_st)
    def write(self, folder: str, name: str, body: str) -> None:
        path = self.kb / folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {name}\n\n{body}\n", "utf-8")
        self.pending.add(folder + name)

    @rule(folder=st.sampled_from(FOLDERS), name=st.sampled_from(NAMES), body=body_st)
    def atomic_save(self, folder: str, name: str, body: str) -> None:
        """An editor's save: a temporary file beside the note, renamed over it; a swap file comes and goes."""
        target = self.kb / folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{name}.tmp")
        swap = target.with_name(f".{name}.swp")
        swap.write_text("swap", "utf-8")
        tmp.write_text(f"# {name}\n\n{body}\n", "utf-8")
        os.replace(tmp, target)
        lock = target.with_name(f".#{name}")  # Emacs' lock file ends in .md and is never a note
        lock.write_text("user@host", "utf-8")
        self.pending.update({folder + name, tmp.relative_to(self.kb).as_posix(), lock.relative_to(self.kb).as_posix()})
        swap.unlink()
        self.pending.add(swap.relative_to(self.kb).as_posix())

    @precondition(lambda self: bool(self.notes()))
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        rel = data.draw(st.sampled_from(self.notes()))
        (self.kb / rel).unlink()
        self.pending.add(rel)

    @precondition(lambda self: bool(self.notes()))
    @rule(data=st.data(), folder=st.sampled_from(FOLDERS), name=st.sampled_from(NAMES))
    def rename(self, data: st.DataObject, folder: str, name: str) -> None:
        rel = data.draw(st.sampled_from(self.notes()))
        target = self.kb / folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.kb / rel, target)
        self.pending.update({rel, folder + name})

    @rule(src=st.sampled_from(["a", "b", "a/deep"]), dst=st.sampled_from(["c", "b/moved", "a/deep2"]))
    def move_folder(self, src: str, dst: str) -> None:
        source, target = self.kb / src, self.kb / dst
        if not source.is_dir() or target.exists() or dst.startswith(src + "/"):
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)
        self.pending.update({src, dst})

    @rule(name=st.sampled_from(NAMES))
    def excluded_edit(self, name: str) -> None:
        """Notes under excluded folders are never indexed, by the walk or by an update."""
        for folder in (".git", "node_modules", ".obsidian"):
            (self.kb / folder).mkdir(exist_ok=True)
            (self.kb / folder / name).write_text("# hidden\n\nbanana tokio\n", "utf-8")
            self.pending.add(f"{folder}/{name}")

    @rule()
    def flush(self) -> None:
        """The watcher's batch: an update of just the paths the events named (a burst is one batch),
        the stored statistics left to the next quiet moment as the watcher leaves them."""
        if self.pending:
            self.eng.update(self.pending, defer_statistics=True)
            self.pending.clear()

    @rule()
    def quiet(self) -> None:
        """The watcher's quiet moment after batches: the statistics they deferred are followed."""
        self.flush()
        self.eng.follow_statistics()

    @rule()
    def search(self) -> None:
        """Searches interleaved with edits warm the caches the next edit must not let go stale."""
        self.flush()
        self.eng.search("tokio banana", SearchParams(limit=5))
        self.eng.search("tokio banana", SearchParams(limit=5, legs="vector"))
        self.eng._searcher.vectors.wait_loaded()

    @invariant()
    def equals_a_fresh_build(self) -> None:
        if self.pending:
            return
        fresh_dir = self.root / f"fresh{self.builds}"
        self.builds += 1
        with Engine.open(self.kb, config=hashing_config(), index_dir=fresh_dir) as fresh:
            fresh.index()
            assert index_state(self.eng) == index_state(fresh)
            assert answers(self.eng) == answers(fresh)
        shutil.rmtree(fresh_dir, ignore_errors=True)


@pytest.mark.parametrize("size", ["below the pruning and scan floors", "above them"])
def test_watched_index_and_searches_equal_a_fresh_build(size: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pruned: list[bool] = []
    if size == "above them":
        monkeypatch.setattr(fp, "MIN_ROWS", 0)
        monkeypatch.setattr(ps, "MIN_ROWS", 0)
        monkeypatch.setattr(vs, "MIN_ROWS", 0)
        ranked = fp.PrunedFulltext._ranked

        def counting(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            got = ranked(self, *args, **kwargs)
            pruned.append(got is not None)
            return got

        monkeypatch.setattr(fp.PrunedFulltext, "_ranked", counting)
    run_state_machine_as_test(
        WatchedKB,
        settings=settings(
            max_examples=12,
            stateful_step_count=12,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
    if size == "above them":
        assert any(pruned), "the pruned full-text search never answered: the test would not see it go stale"
