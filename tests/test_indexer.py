"""The incremental two-phase indexer on real SQLite + sqlite-vec, over KBs built in tmp dirs."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from groove_tui.engine import Engine, ModelMismatch
from groove_tui.engine.index.indexer import BATCH_DOCS
from groove_tui.engine.types import IndexProgress

from helpers import hashing_config, write_kb


def open_engine(kb: Path, tmp_path: Path, **kw) -> Engine:
    return Engine.open(kb, config=hashing_config(**kw), index_dir=tmp_path / "idx")


def test_first_run_adds_everything_and_second_is_a_no_op(kb, tmp_path):
    with open_engine(kb, tmp_path) as eng:
        first = eng.index()
        assert (first.added, first.updated, first.unchanged, first.deleted) == (4, 0, 0, 0)
        assert first.chunks > 4 and first.pending_embeddings == 0 and first.embedded == first.chunks
        second = eng.index()
        assert (second.added, second.updated, second.unchanged, second.embedded) == (0, 0, 4, 0)
        assert eng.status().documents == 4


def test_edit_rename_delete_counts(kb, tmp_path):
    with open_engine(kb, tmp_path) as eng:
        eng.index()
        (kb / "index.md").write_text("# Home\n\nCompletely new text about gardening, tomatoes and compost heaps.\n")
        (kb / "notes/python/sqlite.md").rename(kb / "notes/python/sqlite-notes.md")
        (kb / "notes/rust/async.md").unlink()
        r = eng.index()
        assert (r.added, r.updated, r.renamed, r.deleted, r.unchanged) == (0, 1, 1, 1, 1)
        paths = {p for (p,) in eng.store.conn().execute("SELECT path FROM documents")}
        assert paths == {"index.md", "notes/python/sqlite-notes.md", "日本語/検索.md"}


def test_rename_reuses_rows_and_embeddings(kb, tmp_path):
    with open_engine(kb, tmp_path) as eng:
        eng.index()
        conn = eng.store.conn()
        before = conn.execute(
            "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.path = 'index.md'"
        ).fetchall()
        (kb / "index.md").rename(kb / "home.md")
        r = eng.index()
        assert r.renamed == 1 and r.embedded == 0
        after = conn.execute(
            "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.path = 'home.md'"
        ).fetchall()
        assert before == after


def test_metadata_only_change_does_not_reembed(kb, tmp_path):
    with open_engine(kb, tmp_path) as eng:
        eng.index()
        p = kb / "notes/rust/async.md"
        p.write_text(p.read_text().replace("tags: [rust, async]", "tags: [rust, async, tokio]"))
        r = eng.index()
        assert (r.updated, r.metadata_only, r.embedded) == (1, 1, 0)
        tags = (
            eng.store.conn().execute("SELECT tags FROM documents WHERE path = ?", ("notes/rust/async.md",)).fetchone()
        )
        assert json.loads(tags[0]) == ["rust", "async", "tokio"]


def test_editing_one_section_reembeds_only_that_section(kb, tmp_path):
    with open_engine(kb, tmp_path) as eng:
        eng.index()
        p = kb / "notes/rust/async.md"
        p.write_text(p.read_text().replace("Pin guarantees", "Pinning guarantees"))
        r = eng.index()
        assert r.updated == 1 and r.metadata_only == 0 and r.embedded == 1


def test_bad_files_are_skipped_with_reasons_and_the_run_goes_on(tmp_path):
    kb = write_kb(
        tmp_path / "kb",
        {
            "good.md": "## Fine\n\nThis file is perfectly fine and has enough text to be a chunk.\n",
            "latin1.md": "caf\xe9 au lait".encode("latin-1"),
            "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00binary",
            "badfm.md": (
                "---\ntitle: [unclosed\n---\n\n## Body\n\nThe body survives broken frontmatter and is indexed.\n"
            ),
            "empty.md": "",
        },
    )
    with open_engine(kb, tmp_path) as eng:
        r = eng.index()
    reasons = {s.path: s.reason for s in r.skipped}
    assert "invalid UTF-8" in reasons["latin1.md"]
    assert "binary" in reasons["binary.md"]
    assert "empty.md" in reasons
    assert r.added == 2  # good.md and badfm.md (degraded)
    assert [d.path for d in r.degraded] == ["badfm.md"]


def test_unreadable_file_is_skipped(tmp_path, monkeypatch):
    kb = write_kb(
        tmp_path / "kb", {"a.md": "## A\n\nreadable text that is long enough to index.\n", "b.md": "## B\n\nsecret\n"}
    )
    from groove_tui.engine.index import walk

    real_open = walk._open_nonblocking

    def guarded(path: str, flags: int) -> int:  # root reads any mode, so simulate EACCES
        if str(path).endswith("b.md"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags)

    monkeypatch.setattr(walk, "_open_nonblocking", guarded)
    with open_engine(kb, tmp_path) as eng:
        r = eng.index()
    assert [(s.path, s.reason) for s in r.skipped] == [("b.md", "unreadable: Permission denied")]
    assert r.added == 1


def test_walk_skips_excluded_dirs_symlinks_and_grooveignore(tmp_path):
    body = "## H\n\nenough text here to make a chunk of its own, surely.\n"
    kb = write_kb(
        tmp_path / "kb",
        {
            "keep.md": body,
            ".git/x.md": body,
            "node_modules/y.md": body,
            ".obsidian/z.md": body,
            "drafts/wip.md": body,
            "notes/tmp.md": body,
            "notes/real.md": body,
            "README.txt": "not markdown",
            ".grooveignore": "drafts/\ntmp.md\n",
        },
    )
    outside = write_kb(tmp_path / "outside", {"o.md": body})
    os.symlink(outside / "o.md", kb / "link.md")
    os.symlink(outside, kb / "linkdir")
    from groove_tui.engine.index.walk import walk_kb

    assert walk_kb(kb, hashing_config().exclude_dirs) == ["keep.md", "notes/real.md"]


def test_read_only_kb_indexes_and_nothing_is_written_into_it(kb, tmp_path):
    before = sorted(p.relative_to(kb) for p in kb.rglob("*"))
    for p in [kb, *kb.rglob("*")]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        with open_engine(kb, tmp_path) as eng:
            r = eng.index()
            assert r.added == 4
    finally:
        for p in [kb, *kb.rglob("*")]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    assert sorted(p.relative_to(kb) for p in kb.rglob("*")) == before


def test_index_dir_inside_kb_is_refused(kb):
    from groove_tui.engine import KBError

    with pytest.raises(KBError, match="never writes into a KB"):
        Engine.open(kb, config=hashing_config(), index_dir=kb / ".idx")


def test_model_mismatch_names_both_models_and_the_fix(kb, tmp_path):
    with open_engine(kb, tmp_path) as eng:
        eng.index()
    from dataclasses import replace

    from groove_tui.settings.config import EmbeddingConfig

    other = replace(hashing_config(), embedding=EmbeddingConfig(model="hashing-32"))
    with pytest.raises(ModelMismatch) as err:
        Engine.open(kb, config=other, index_dir=tmp_path / "idx")
    msg = str(err.value)
    assert "hashing-64" in msg and "hashing-32" in msg and "index" in msg and "--force" in msg
    with Engine.open(kb, config=other, index_dir=tmp_path / "idx", allow_model_change=True) as eng:
        r = eng.index(force=True)
        assert r.added == 4 and eng.status().dim == 32


def test_progress_reports_both_phases(kb, tmp_path):
    seen: list[IndexProgress] = []
    with open_engine(kb, tmp_path) as eng:
        eng.index(progress=seen.append)
    phases = [p.phase for p in seen]
    assert "fulltext" in phases and "embed" in phases and phases[-1] == "done"
    assert phases.index("fulltext") < phases.index("embed")


def test_phase_one_alone_then_search_reports_pending(kb, tmp_path):
    with open_engine(kb, tmp_path) as eng:
        r = eng.index(embed=False)
        assert r.pending_embeddings == r.chunks > 0
        resp = eng.search("tokio runtime")
        assert resp.results and resp.pending_embeddings == r.chunks
        r2 = eng.index()
        assert r2.embedded == r.chunks and r2.pending_embeddings == 0


def test_status_fields(engine):
    s = engine.status().to_dict()
    for key in ("documents", "chunks", "model", "dim", "index_path", "index_bytes", "last_indexed"):
        assert key in s
    assert s["documents"] == 4 and s["model"] == "hashing-64" and s["dim"] == 64 and s["index_bytes"] > 0


def test_needs_index_tracks_changes(engine, kb):
    assert not engine.needs_index()
    time.sleep(0.01)
    (kb / "new.md").write_text("## New\n\nA new note appears with enough text to index it.\n")
    assert engine.needs_index()


def test_a_file_touched_but_unchanged_is_current_after_one_run(engine, kb):
    """A checkout or a copy gives every file a new mtime and the same bytes: one run records the new
    stat, so the cheap check finds the index current again instead of at every later start."""
    note = next(kb.rglob("*.md"))
    stat = note.stat()
    os.utime(note, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert engine.needs_index()
    generation = engine.store.generation()
    report = engine.index()
    assert (report.added, report.updated, report.unchanged) == (0, 0, 4)
    assert not engine.needs_index()
    assert engine.store.generation() == generation  # nothing a search reads changed


KILL_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from groove_tui.engine import Engine
    from groove_tui.engine.models.embedders import HashingEmbedder
    sys.path.insert(0, {tests!r})
    from helpers import hashing_config

    slow = HashingEmbedder(64)
    orig = slow.embed_passages
    def embed(texts):
        time.sleep(0.05)
        return orig(texts)
    slow.embed_passages = embed
    eng = Engine.open({kb!r}, config=hashing_config(), index_dir={idx!r})
    eng._embedder = slow
    def progress(p):
        if p.phase == "embed" and p.done >= 16:
            print("EMBEDDING", flush=True)
    eng.index(progress=progress)
    """
)


def test_killed_indexer_leaves_an_index_that_opens_and_resumes(tmp_path):
    files = {
        f"d{i:03}.md": (
            f"## Note {i}\n\nThis is note number {i} with some words about topic {i % 7}.\n\n"
            f"## More {i}\n\nSecond section of note {i}, long enough to stand alone as a chunk.\n"
        )
        for i in range(120)
    }
    kb = write_kb(tmp_path / "kb", files)
    idx = tmp_path / "idx"
    script = KILL_SCRIPT.format(tests=str(Path(__file__).parent), kb=str(kb), idx=str(idx))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "EMBEDDING"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with Engine.open(kb, config=hashing_config(), index_dir=idx) as eng:
        docs, chunks, pending = eng.store.counts()
        assert docs == 120 and chunks == 240 and 0 < pending < 240
        r = eng.index()
        assert (r.added, r.updated, r.unchanged) == (0, 0, 120)
        assert r.embedded == pending and r.pending_embeddings == 0


def test_killed_during_phase_one_leaves_no_half_document(tmp_path):
    files = {
        f"d{i:04}.md": f"## Note {i}\n\nBody of note {i} with enough words to be its own chunk.\n" for i in range(3000)
    }
    kb = write_kb(tmp_path / "kb", files)
    idx = tmp_path / "idx"
    script = (
        "from groove_tui.engine import Engine\nimport sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\nfrom helpers import hashing_config\n"
        f"eng = Engine.open({str(kb)!r}, config=hashing_config(), index_dir={str(idx)!r})\n"
        "def progress(p):\n"
        f"    if p.phase == 'fulltext' and p.done == {BATCH_DOCS * 3 // 2}: print('HALF', flush=True)\n"
        "eng.index(progress=progress)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "HALF"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with Engine.open(kb, config=hashing_config(), index_dir=idx) as eng:
        conn = eng.store.conn()
        docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        orphans = conn.execute(
            "SELECT count(*) FROM documents d WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id)"
        ).fetchone()[0]
        assert 0 < docs < 3000 and orphans == 0
        r = eng.index()
        assert r.added == 3000 - docs and r.unchanged == docs and r.pending_embeddings == 0


def test_engine_import_loads_no_ui_toolkit():
    code = (
        "import sys, groove_tui.engine, groove_tui.engine.retrieve.searcher; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_changed_chunk_cap_cuts_every_document_again_and_keeps_unchanged_vectors(tmp_path):
    """Unchanged files are never re-read, so without this a new `[chunking] max_chunk_bytes` would apply
    only to files edited afterwards and one index would mix two cuts."""
    from groove_tui.engine import Engine
    from groove_tui.settings.config import ChunkingConfig

    long_note = "# Long\n\n" + "\n\n".join(f"Paragraph {i} about tokio tasks and runtimes. " * 4 for i in range(12))
    kb = write_kb(tmp_path / "kb", {"long.md": long_note, "short.md": "# Short\n\nA short note on sqlite.\n"})

    def run(cap: int):
        eng = Engine.open(
            kb, config=hashing_config(chunking=ChunkingConfig(max_chunk_bytes=cap)), index_dir=tmp_path / "idx"
        )
        try:
            report = eng.index()
            rows = (
                eng.store.conn()
                .execute(
                    "SELECT d.path, count(*) FROM chunks c JOIN documents d ON d.id = c.document_id GROUP BY d.path"
                )
                .fetchall()
            )
            return report, dict(rows)
        finally:
            eng.close()

    first, small = run(400)
    assert small["long.md"] > 3 and small["short.md"] == 1 and not first.notes
    again, same = run(400)
    assert same == small and again.unchanged == 2 and again.embedded == 0 and not again.notes
    bigger, big = run(4000)
    assert big == {"long.md": 1, "short.md": 1}
    assert any("chunk size cap changed (400 → 4000 bytes)" in n for n in bigger.notes)
    assert bigger.embedded == 1  # the long note's one new chunk; the short note's vector was kept
    assert bigger.metadata_only == 1 and bigger.updated == 2
    settled, _ = run(4000)
    assert settled.unchanged == 2 and not settled.notes


def test_documents_commit_in_batches_and_a_cancel_keeps_every_whole_one(tmp_path, monkeypatch):
    """The full-text phase writes many notes per transaction (with their full-text rows at its end);
    cancelled mid-batch, every note written so far is kept whole — its row, its chunks and its full-text
    rows agree — and the next run adds the rest."""
    import threading

    from groove_tui.engine.index import indexer

    monkeypatch.setattr(indexer, "BATCH_DOCS", 16)
    kb = write_kb(tmp_path / "kb", {f"n{i:03}.md": f"# Note {i}\n\nword{i} shared text.\n" for i in range(100)})
    commits: list[int] = []
    real_commit = indexer._WriteBatch.commit

    def commit(self):
        commits.append(self._docs)
        real_commit(self)

    monkeypatch.setattr(indexer._WriteBatch, "commit", commit)
    cancel = threading.Event()

    def progress(p: IndexProgress) -> None:
        if p.phase == "fulltext" and p.done == 40:
            cancel.set()

    with open_engine(kb, tmp_path) as eng:
        with pytest.raises(indexer.IndexCancelled):
            eng.index(progress=progress, cancel=cancel)
        conn = eng.store.conn()
        docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        assert docs == 41  # two full batches and the one cut short (by the check before the 42nd), committed
        assert commits[:2] == [16, 16]
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == docs
        fts = conn.execute("SELECT count(*) FROM fts_chunks WHERE fts_chunks MATCH 'shared'").fetchone()[0]
        assert fts == docs
        assert eng.search("word39").results[0].path == "n039.md"
        report = eng.index()
        assert report.added == 59 and eng.status().documents == 100
