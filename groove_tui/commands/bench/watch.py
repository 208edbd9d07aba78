"""A live KB: how soon a saved note is found, what watching costs idle, how a burst is batched.

Watch mode (`--mode watch`) copies the KB into a temporary folder — replicated under `rep{i}/` to
`--scale N` chunks as scale mode does, or one copy without `--scale` — indexes it (hashing-384 unless
`--model`), and runs the real watcher (`Engine.watch`, OS events) over the copy on a thread, with the
configured debounce. A second engine, opened read-only and kept open the whole run as the explorer keeps
its own, does the searching. Then:

- idle: process CPU time over `--idle-seconds` of wall time with nothing changing (the watcher waits),
  once the reader is quiet: on a large index it reads the vectors into memory on a background thread
  after its first search and after every write, which is not the watcher's cost;
- saves: `--saves` times, each from a quiet reader, a note is written — alternately a new note under
  `watchbench/` and a new section appended to an existing note — holding words no other note has. From the
  moment the file is closed, the reader polls a full-text-only search for one of those words and a vector-
  only search for the note's sentence until each returns that note: "save → found" for each leg. The
  embedder alone is then timed on the chunks the edit changed, so the vector figure can be judged against
  "embedding time plus 200 ms";
- edit: EDIT_FILES notes saved at once (half changed, half new), as a commit or a search-and-replace
  touches them: its batches and their index work;
- burst: `--burst` files written as fast as a `git checkout` writes them (half new notes, half existing
  ones rewritten) and the batches the watcher made of them counted, until the index holds every one.

The KB given and its own index are never written; the copy is removed afterwards (with `--scale-dir` it is
kept and reused, every edit undone under the watcher before it stops).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import string
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_tui.commands.bench.scale import chunks_per_file, synthesise_kb
from groove_tui.commands.bench.search import percentiles
from groove_tui.commands.bench.targets import verdicts

if TYPE_CHECKING:
    import argparse

    from groove_tui.engine import Engine
    from groove_tui.engine.index.watch import WatchEvent

BENCH_FOLDER = "watchbench"  # where the bench's own notes go inside the copy
POLL_S = 0.01  # how often the reader searches again while it waits for a saved note
FOUND_TIMEOUT_S = 120.0  # a save not found by then is counted as missed
BETWEEN_SAVES_S = 0.3  # a pause after each save is found, so every save is a batch of its own
BURST_QUIET_S = 2.0  # after a burst is indexed, batches arriving within this long still count as its own
WORDS_PER_NOTE = 8  # unique words a saved note holds (a sentence the vector leg can match)
EDIT_FILES = 50  # notes saved at once before the burst (half changed, half new; no more than the burst)


Notify = Callable[[str, int, int], None]


def _word() -> str:
    """A lower-case word no note holds (12 random letters; no English or scifact word looks like it)."""
    return "".join(secrets.choice(string.ascii_lowercase) for _ in range(12))


@dataclass
class _Events:
    """The watcher's events with their arrival time, and a way to wait for the next one."""

    seen: list[tuple[float, WatchEvent]] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)

    def __call__(self, event: WatchEvent) -> None:
        with self.cond:
            self.seen.append((time.perf_counter(), event))
            self.cond.notify_all()

    def wait_for(self, kind: str, timeout: float) -> WatchEvent | None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for _t, e in self.seen:
                    if e.kind == kind:
                        return e
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def batches_since(self, t0: float) -> list[tuple[float, WatchEvent]]:
        with self.cond:
            return [(t, e) for t, e in self.seen if t >= t0 and e.kind == "batch"]

    def last_at(self) -> float:
        with self.cond:
            return self.seen[-1][0] if self.seen else 0.0

    def batch_after(self, t0: float, covering: str | None, timeout: float) -> tuple[float, WatchEvent] | None:
        """The first batch that arrived after `t0` (and indexed `covering`, if given), waited for."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for t, e in self.seen:
                    if t >= t0 and e.kind == "batch" and (covering is None or _covers(e.paths, covering)):
                        return t, e
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)


def bench_watch(
    kb: Path,
    config,
    target: int | None,
    *,
    saves: int = 30,
    idle_seconds: float = 10.0,
    burst: int = 1000,
    progress: Notify | None = None,
    keep_dir: Path | None = None,
) -> dict[str, Any]:
    """Copy `kb` (to `target` chunks, or once), index the copy and measure watching it (module docstring).
    The given KB and its index are only read."""
    notify = progress or (lambda _label, _done, _total: None)
    if keep_dir is not None:
        keep_dir.mkdir(parents=True, exist_ok=True)
        return _bench_in(kb, config, target, saves, idle_seconds, burst, notify, keep_dir, keep=True)
    with tempfile.TemporaryDirectory(prefix="groove-tui-watch-") as tmp:
        return _bench_in(kb, config, target, saves, idle_seconds, burst, notify, Path(tmp), keep=False)


def _bench_in(kb, config, target, saves, idle_seconds, burst, notify: Notify, root: Path, keep: bool) -> dict:
    from groove_tui.engine import Engine as EngineCls

    synth, idx = root / "kb", root / "idx"
    out: dict[str, Any] = {"target_chunks": target, "kept_in": str(root) if keep else None}
    t0 = time.perf_counter()
    if not synth.exists() or not any(synth.iterdir()):
        whole = sum(n for _rel, n in chunks_per_file(kb, config))
        out["synthesised"] = synthesise_kb(kb, synth, target or whole, config, notify)
        (root / "synthesised.json").write_text(json.dumps(out["synthesised"]))
    else:  # reused: the record of what was made
        out["synthesised"] = json.loads((root / "synthesised.json").read_text())
    shutil.rmtree(synth / BENCH_FOLDER, ignore_errors=True)  # left by a run that was killed
    out["synthesise_s"] = round(time.perf_counter() - t0, 2)

    with EngineCls.open(synth, config=config, index_dir=idx) as writer:
        rep = writer.index(progress=lambda p: notify(p.phase, p.done, p.total))
        docs, chunks, pending = writer.store.counts()
        out["index"] = {
            "documents": docs,
            "chunks": chunks,
            "pending_embeddings": pending,
            "seconds": round(rep.seconds, 2),
        }
        debounce = writer.config.watch.debounce_ms
        out["debounce_ms"] = debounce
        events = _Events()
        stop = threading.Event()
        started = time.perf_counter()
        thread = threading.Thread(
            target=writer.watch, args=(events, stop), kwargs={"polling": False}, name="watch", daemon=True
        )
        thread.start()
        try:
            if events.wait_for("watching", FOUND_TIMEOUT_S) is None:
                raise RuntimeError(f"the watcher did not start within {FOUND_TIMEOUT_S:g} s: {events.seen}")
            out["watch_start_s"] = round(time.perf_counter() - started, 3)
            with EngineCls.open(synth, config=config, index_dir=idx, readonly=True) as reader:
                _warm(reader)
                out["idle"] = _idle(events, idle_seconds, notify)
                edits = _Edits(synth)
                try:
                    out["saves"] = _saves(reader, writer, events, edits, saves, notify)
                    # a commit that touches a few dozen notes: the index work of one such batch
                    out["edit"] = _burst(reader, events, edits, min(EDIT_FILES, burst), debounce, notify, "edit")
                    _settle(events, debounce)
                    out["burst"] = _burst(reader, events, edits, burst, debounce, notify)
                finally:
                    if keep:  # undone under the watcher, so the kept index matches the kept KB
                        edits.undo()
                        _settle(events, debounce)
            errors = [e.message for _t, e in events.seen if e.kind == "error"]
            out["watcher_errors"] = errors[:5]
        finally:
            stop.set()
            thread.join(timeout=60)
    notify("done", 1, 1)
    return out


def _warm(reader: Engine) -> None:
    """Until the reader is quiet: its first searches load the model, and on a large index a vector search
    starts reading the vectors into memory on a background thread (after every write too: the matrix
    follows the index's generation). Neither is what idling or a save costs, so both wait for it."""
    from groove_tui.engine.types import SearchParams

    reader.search("warm up the reader", SearchParams(legs="fts"))
    for _ in range(2):  # the second search finds the generation read, or starts reading the current one
        reader.search("warm up the reader", SearchParams(legs="vector"))
        reader._searcher.vectors.wait_loaded(timeout=FOUND_TIMEOUT_S)


def _idle(events: _Events, seconds: float, notify: Notify) -> dict[str, Any]:
    """Process CPU time over wall time while nothing changes (every thread of this process: the
    watcher's and the idle reader's)."""
    notify("idle", 0, 1)
    before = len(events.seen)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    time.sleep(seconds)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    notify("idle", 1, 1)
    return {
        "seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 4),
        "cpu_percent": round(100.0 * cpu / wall, 3) if wall > 0 else None,
        "events": len(events.seen) - before,
    }


class _Edits:
    """The bench's writes into the copy, and how to undo them."""

    def __init__(self, kb: Path) -> None:
        self.kb = kb
        self.originals: dict[str, bytes] = {}
        self.existing = sorted(
            p.relative_to(kb).as_posix() for p in kb.rglob("*.md") if BENCH_FOLDER not in p.relative_to(kb).parts
        )
        self._next = 0

    def create(self, rel: str, text: str) -> None:
        path = self.kb / BENCH_FOLDER / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def next_existing(self) -> str | None:
        """An existing note not edited yet (each is edited at most once, so each undo is exact)."""
        while self._next < len(self.existing):
            rel = self.existing[self._next]
            self._next += 1
            if rel not in self.originals:
                return rel
        return None

    def append(self, rel: str, text: str) -> None:
        path = self.kb / rel
        raw = path.read_bytes()
        self.originals.setdefault(rel, raw)
        path.write_bytes(raw.rstrip(b"\n") + b"\n\n" + text.encode("utf-8"))

    def undo(self) -> None:
        for rel, raw in self.originals.items():
            (self.kb / rel).write_bytes(raw)
        shutil.rmtree(self.kb / BENCH_FOLDER, ignore_errors=True)


def _settle(events: _Events, debounce_ms: int, since: float | None = None) -> None:
    """Wait until the watcher has been quiet for a while; with `since`, also until a batch that arrived
    after it (a document is searchable once its full text is written, but its batch, vectors included,
    ends later)."""
    if since is not None:
        events.batch_after(since, None, FOUND_TIMEOUT_S)
    quiet = max(BURST_QUIET_S, 2 * debounce_ms / 1000)
    deadline = time.monotonic() + FOUND_TIMEOUT_S
    while time.monotonic() < deadline and time.perf_counter() - events.last_at() < quiet:
        time.sleep(0.1)


def _found_after(reader: Engine, query: str, legs: str, rel: str, word: str, t0: float) -> float | None:
    """Milliseconds from `t0` until a `legs`-only search for `query` returns a part of `rel` holding
    `word`; None after FOUND_TIMEOUT_S."""
    from groove_tui.engine.types import SearchParams

    params = SearchParams(legs=legs)  # type: ignore[arg-type]
    while True:
        response = reader.search(query, params)
        if any(h.path == rel and word in h.content for h in response.results):
            return (time.perf_counter() - t0) * 1000.0
        if time.perf_counter() - t0 > FOUND_TIMEOUT_S:
            return None
        time.sleep(POLL_S)


def _embed_ms(reader: Engine, writer: Engine, rel: str) -> tuple[float, int]:
    """The embedder alone on the chunks of `rel` as the indexer embeds them (median of 3), and how many."""
    from groove_tui.engine.index.indexer import embedding_input

    rows = (
        reader.store.conn()
        .execute(
            "SELECT c.content, c.context_text FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.path = ?",
            (rel,),
        )
        .fetchall()
    )
    contextual = reader.store.get_meta("context_mode") == "static"
    texts = [embedding_input(content, ctx, contextual) for content, ctx in rows]
    embedder = writer.embedder()
    samples = []
    for _ in range(3):
        t0 = time.perf_counter()
        embedder.embed_passages(texts)
        samples.append((time.perf_counter() - t0) * 1000.0)
    return sorted(samples)[1], len(texts)


def _covers(paths: tuple[str, ...], rel: str) -> bool:
    """Whether a batch over `paths` (files or folders; none: the whole KB) indexed `rel`."""
    return not paths or any(rel == p or rel.startswith(p + "/") for p in paths)


def _saves(reader: Engine, writer: Engine, events: _Events, edits: _Edits, n: int, notify: Notify) -> dict:
    fts_ms: list[float] = []
    vec_ms: list[float] = []
    embed_ms: list[float] = []
    lag_ms: list[float] = []
    after_fts_ms: list[float] = []
    rows: list[dict[str, Any]] = []
    missed = {"fts": 0, "vector": 0}
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="bench-reader") as pool:
        for i in range(n):
            notify("saves", i, n)
            _warm(reader)  # each save starts from a quiet reader, not amid the last one's matrix read
            words = [_word() for _ in range(WORDS_PER_NOTE)]
            sentence = " ".join(words)
            existing = edits.next_existing() if i % 2 else None
            kind = "append" if existing else "new"
            text = f"## Bench {words[0]}\n\n{sentence}.\n"
            t0 = time.perf_counter()
            if existing:
                edits.append(existing, text)
                rel = existing
            else:
                edits.create(f"note-{i:04d}.md", f"# Bench note {i}\n\n{text}")
                rel = f"{BENCH_FOLDER}/note-{i:04d}.md"
            # Both legs are polled at once, each on its own thread, as the explorer's legs run.
            fts = pool.submit(_found_after, reader, words[0], "fts", rel, words[0], t0)
            vec = pool.submit(_found_after, reader, sentence, "vector", rel, words[0], t0)
            f_ms, v_ms = fts.result(), vec.result()
            batch = events.batch_after(t0, rel, FOUND_TIMEOUT_S)
            e_ms, e_chunks = _embed_ms(reader, writer, rel)
            row: dict[str, Any] = {
                "kind": kind,
                "fts_ms": None if f_ms is None else round(f_ms, 2),
                "vector_ms": None if v_ms is None else round(v_ms, 2),
                "embed_ms": round(e_ms, 3),
                "embedded_chunks": e_chunks,
                "batch_ms": None if batch is None else round(batch[1].milliseconds, 2),
                # when the batch (vectors included) was committed, from the save: what the reader lags by
                "batch_done_ms": None if batch is None else round((batch[0] - t0) * 1000.0, 2),
            }
            rows.append(row)
            if f_ms is None:
                missed["fts"] += 1
            else:
                fts_ms.append(f_ms)
            if v_ms is None:
                missed["vector"] += 1
            else:
                vec_ms.append(v_ms)
                embed_ms.append(e_ms)
                lag_ms.append(v_ms - e_ms)
                if f_ms is not None:
                    after_fts_ms.append(v_ms - f_ms)
            time.sleep(BETWEEN_SAVES_S)
    notify("saves", n, n)
    return {
        "saves": n,
        "fts_found_ms": percentiles(fts_ms),
        "vector_found_ms": percentiles(vec_ms),
        "embed_ms": percentiles(embed_ms),
        "vector_minus_embed_ms": percentiles(lag_ms),
        "vector_after_fts_ms": percentiles(after_fts_ms),  # the vectors are written after the full text
        "missed": missed,
        "each": rows,
    }


def _burst(
    reader: Engine, events: _Events, edits: _Edits, n: int, debounce_ms: int, notify: Notify, folder: str = "burst"
) -> dict:
    """`n` files written back to back (half rewrites of existing notes when there are enough, the new ones
    under `folder`), then the batches counted until the index holds every one of them as written."""
    if n <= 0:
        return {"files": 0}
    rewrites: list[str] = []
    while len(rewrites) < n // 2 and (rel := edits.next_existing()) is not None:
        rewrites.append(rel)
    creates = [f"{BENCH_FOLDER}/{folder}/n{i:05d}.md" for i in range(n - len(rewrites))]
    t0 = time.perf_counter()
    for i, rel in enumerate(rewrites):
        edits.append(rel, f"## Checked out {i}\n\n{_word()} {_word()}.\n")
    for i, rel in enumerate(creates):
        edits.create(rel.removeprefix(BENCH_FOLDER + "/"), f"# Burst {i}\n\n{_word()} {_word()} {_word()}.\n")
    written_s = time.perf_counter() - t0
    want = {rel: (edits.kb / rel).stat().st_mtime_ns for rel in [*rewrites, *creates]}
    conn = reader.store.conn()
    done_at, indexed = None, 0
    deadline = time.perf_counter() + max(FOUND_TIMEOUT_S, n * 0.5)
    looked = t0  # when the last look that still missed a file began: the batch that wrote it ended after
    while time.perf_counter() < deadline:
        now = time.perf_counter()
        stored: dict[str, int] = {}
        paths = list(want)
        for start in range(0, len(paths), 500):
            part = paths[start : start + 500]
            marks = ",".join("?" * len(part))
            stored.update(
                conn.execute(f"SELECT path, mtime_ns FROM documents WHERE path IN ({marks})", part).fetchall()
            )
        indexed = sum(stored.get(rel) == m for rel, m in want.items())
        notify(folder, indexed, n)
        if indexed == n:
            done_at = time.perf_counter()
            break
        looked = now
        time.sleep(0.05)
    _settle(events, debounce_ms, since=looked if done_at is not None else None)
    batches = events.batches_since(t0)
    return {
        "files": n,
        "rewritten": len(rewrites),
        "created": len(creates),
        "written_s": round(written_s, 3),
        "unindexed": n - indexed,
        # every file searchable by full text, then the last batch done (vectors included)
        "fulltext_s": None if done_at is None else round(done_at - t0, 3),
        "seconds": round(batches[-1][0] - t0, 3) if done_at is not None and batches else None,
        "batches": len(batches),
        "batch_files": [len(e.paths) for _t, e in batches],
        "batch_ms": [round(e.milliseconds, 1) for _t, e in batches],
    }


def run_watch(kb: Path, config, args: argparse.Namespace, *, progress=None) -> dict[str, Any]:
    from groove_tui.commands.bench.scale import _loadavg
    from groove_tui.engine.models.embedders import describe_model

    keep = getattr(args, "scale_dir", None)
    result: dict[str, Any] = {
        "kb": str(kb),
        "model": describe_model(config.embedding.model),
        "mode": "watch",
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_before": _loadavg(),
    }
    result["watch"] = bench_watch(
        kb,
        config,
        getattr(args, "scale", None),
        saves=args.saves,
        idle_seconds=args.idle_seconds,
        burst=args.burst,
        progress=progress,
        keep_dir=Path(keep).expanduser() if keep else None,
    )
    result["load_after"] = _loadavg()
    result["targets"] = verdicts(result)
    return result
