"""The synchronous engine: index a Markdown KB and search it. Never imports a UI toolkit. Exports the facade
`Engine`, the frozen types that cross its boundary and its errors. Subpackages: `index` writes the index; a
search compiles the query (`analysis`), runs and fuses the legs (`retrieve`), then the optional `stages`;
`models` embed and rerank; `evaluate` scores golden sets on top of it all.

eng = Engine.open(kb_path, config=None, index_dir=None)   # creates/opens the index, loads nothing heavy
report = eng.index(progress=callback, force=False)
resp = eng.search("query", SearchParams(...), cancel=None)
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_tui.engine.errors import EngineError, IndexNotReady, KBError, ModelMismatch, SearchCancelled
from groove_tui.engine.types import (
    ExpandedFrom,
    Hit,
    HitTrace,
    IndexProgress,
    IndexReport,
    IndexStatus,
    SearchParams,
    SearchResponse,
    Span,
    WhyReport,
)
from groove_tui.settings.config import Config

if TYPE_CHECKING:
    from groove_tui.engine.index.indexer import Indexer
    from groove_tui.engine.index.store import Store
    from groove_tui.engine.index.watch import WatchEvent
    from groove_tui.engine.retrieve.candidates import LRU, Legs
    from groove_tui.engine.retrieve.searcher import Searcher
    from groove_tui.engine.stages.rerank import Reranker
    from groove_tui.engine.types import Embedder

__all__ = [
    "Engine",
    "EngineError",
    "ExpandedFrom",
    "Hit",
    "HitTrace",
    "IndexNotReady",
    "IndexProgress",
    "IndexReport",
    "IndexStatus",
    "KBError",
    "ModelMismatch",
    "SearchCancelled",
    "SearchParams",
    "SearchResponse",
    "Span",
]

DB_NAME = "index.db"


class Engine:
    """Facade over the store, the indexer and the search pipeline. Thread-safe."""

    def __init__(
        self,
        kb_path: Path,
        config: Config,
        index_dir: Path,
        *,
        allow_model_change: bool = False,
        readonly: bool = False,
    ) -> None:
        from groove_tui.engine.index.store import Store
        from groove_tui.engine.models.analyzers import japanese_analyzer
        from groove_tui.engine.models.embedders import default_model_name, describe_model
        from groove_tui.engine.retrieve.searcher import Searcher

        self.kb_path = kb_path
        self.index_dir = index_dir
        self.readonly = readonly
        # The pulled Japanese dictionary, checked, not loaded: the word table's Japanese words
        japanese = japanese_analyzer()
        self._japanese_problem = japanese.problem
        self.store = Store(index_dir / DB_NAME, readonly=readonly, japanese=japanese.analyzer)
        recorded = self.store.get_meta("embedding_model")
        # No model named: the index decides (it was built with one), else the default, whose wheel is
        # missing on some platforms (Windows): there USE. A fresh index may still pick the English
        # model at its first indexing (modelchoice.py).
        self._model_unnamed = config.embedding.is_default
        if self._model_unnamed:
            chosen = recorded if recorded is not None else default_model_name()
            config = replace(config, embedding=replace(config.embedding, model=chosen))
        self.config = config
        self.model_id = describe_model(config.embedding.model)
        if recorded is not None and recorded != self.model_id and not allow_model_change:
            self.store.close()
            raise ModelMismatch(
                f"the index of {kb_path} was built with the embedding model {recorded!r}, but the configured "
                f"model is {self.model_id!r}. Either keep the index's model (set [embedding] model = "
                f"{recorded!r}, or name none), or rebuild it for the new one: groove-tui index "
                f"{_shell_quote(kb_path)} --force --model {_shell_quote(self.model_id)}",
                recorded=recorded,
                configured=self.model_id,
            )
        self._embedder: Embedder | None = None
        self._embedder_tokens = 0  # what self._embedder reads of a passage
        self._embedder_lock = threading.Lock()
        # Writers in this process take turns here before the index's file lock, which a second holder in
        # the same process would find taken (an update beside the watcher's embedding waits, not fails).
        self._write_lock = threading.RLock()
        self._searcher = Searcher(self.store, config, self._contextual, self.embedder, self._reranker)
        self._variants: dict[Config, Searcher] = {}  # ranking_variant's, by config
        self._notes: tuple[int, dict[str, tuple[str, ...]]] | None = None  # notes(), by index generation
        self._legs_caches: dict[tuple[Any, ...], LRU[Legs]] = {}  # variants' legs caches, by what the legs fetch

    # ------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        kb_path: str | os.PathLike[str],
        config: Config | None = None,
        index_dir: str | os.PathLike[str] | None = None,
        *,
        allow_model_change: bool = False,
        readonly: bool = False,
    ) -> Engine:
        """`readonly=True` opens the index for searching only (search, status, eval): nothing is created
        or written, so it never waits for an indexer; a missing or outdated index raises IndexNotReady."""
        from groove_tui.settings.paths import index_dir_for

        kb = Path(kb_path).expanduser()
        if not kb.exists():
            raise KBError(f"knowledge base {str(kb)!r} does not exist")
        if not kb.is_dir():
            raise KBError(f"knowledge base {str(kb)!r} is not a directory")
        kb = kb.resolve()
        target = index_dir_for(kb, index_dir)
        if _is_within(target, kb):
            raise KBError(f"the index directory {target} is inside the KB; groove-tui never writes into a KB")
        return cls(kb, config or Config(), target, allow_model_change=allow_model_change, readonly=readonly)

    def close(self) -> None:
        self._searcher.vectors.close()  # a vector read in flight is discarded
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ models

    def embedder(self) -> Embedder:
        """The embedding model, loaded once on first use (in whatever thread needs it first), reading as
        much of a passage as the index's vectors read."""
        return self._embedder_for(self.store)

    def _embedder_for(self, store: Store) -> Embedder:
        tokens = self.passage_tokens(store)
        with self._embedder_lock:
            if self._embedder is None or tokens != self._embedder_tokens:
                from groove_tui.engine.models.embedders import get_embedder

                self._embedder = get_embedder(self.config.embedding.model, tokens)
                self._embedder_tokens = tokens
            return self._embedder

    def passage_tokens(self, store: Store | None = None) -> int:
        """The tokens of each passage the index's vectors read (0: all the model can): what the index
        recorded, or what a new one will read."""
        return (store or self.store).passage_tokens(self.wanted_passage_tokens())

    def wanted_passage_tokens(self) -> int:
        """The tokens of a passage a new index's vectors read (0: all the model can)."""
        from groove_tui.engine.models.embedders import wanted_passage_tokens

        return wanted_passage_tokens(self.config.embedding.max_tokens, self.model_id)

    def warm_up(self) -> None:
        """Load the embedding model and run it once, so that the next query's embedding costs only
        itself: for a background thread while other work goes on. A model that cannot be loaded is left
        for the search that needs it to report."""
        with contextlib.suppress(Exception):
            self.embedder().embed_query("warm up")

    def _reranker(self, name: str) -> Reranker:
        from groove_tui.engine.stages.rerank import RerankerSettings, get_reranker

        rr = self.config.reranker
        return get_reranker(
            name, RerankerSettings(max_tokens=rr.max_tokens, threads=rr.threads or None, batch_size=rr.batch_size)
        )

    def _contextual(self) -> bool:
        return self.store.get_meta("context_mode") == "static"

    # ------------------------------------------------------------ indexing

    def index(
        self,
        progress: Callable[[IndexProgress], None] | None = None,
        force: bool = False,
        cancel: threading.Event | None = None,
        embed: bool = True,
    ) -> IndexReport:
        """Index the KB (see the module docstring). A full disk or another write failure part-way raises
        IndexWriteFailed, whose message says what to do; what was committed before stays searchable."""
        import sqlean

        if self.readonly:
            raise EngineError(
                f"the index of {self.kb_path} was opened for searching only: open it without readonly to index"
            )
        try:
            return self._index(progress, force, cancel, embed)
        except sqlean.OperationalError as exc:
            raise self.store.write_error(exc) from exc

    def update(
        self,
        paths: Iterable[str],
        progress: Callable[[IndexProgress], None] | None = None,
        cancel: threading.Event | None = None,
        embed: bool = True,
        *,
        defer_statistics: bool = False,
    ) -> IndexReport:
        """Bring the index up to date for the KB-relative `paths` only (files or folders, created,
        changed, deleted or moved): full text first, then vectors, exactly what `index` would write for
        them. A changed `.grooveignore` changes what every path means, so it runs a whole `index`.
        `defer_statistics`: leave the stored phrase statistics to `follow_statistics` (the watcher calls
        it once the KB is quiet), so a batch's index work is the changed documents' own; searches are
        exact meanwhile, their first look at a common phrase only slower."""
        import sqlean

        if self.readonly:
            raise EngineError(
                f"the index of {self.kb_path} was opened for searching only: open it without readonly to index"
            )
        scope: frozenset[str] | None = frozenset(p.replace(os.sep, "/").strip("/") for p in paths)
        if not self.kb_path.is_dir():
            # A vanished KB is not an empty one: keep every document until it is back.
            raise KBError(f"the knowledge base {self.kb_path} is gone (deleted, renamed or unmounted)")
        if scope is not None and ".grooveignore" in scope:
            scope = None
        try:
            return self._index(progress, False, cancel, embed, scope, follow_statistics=not defer_statistics)
        except sqlean.OperationalError as exc:
            raise self.store.write_error(exc) from exc

    def follow_statistics(self) -> bool:
        """Bring the stored phrase statistics up to date with edits an update deferred them for (their
        chunks only). Returns False when nothing waited; raises IndexBusy while another process indexes."""
        from groove_tui.engine.index.indexer import writer_lock

        if self.readonly:
            return False
        with self._write_lock, writer_lock(self.index_dir):
            return self._indexer().follow_phrase_statistics()

    def embed_pending(self, cancel: threading.Event | None = None) -> int:
        """Embed the chunks still waiting for a vector, beside updates of other notes: each batch is
        computed outside the writer's lock and only written under it (`Indexer.embed_beside`). Returns
        how many chunks were embedded; raises IndexBusy while another process indexes."""
        from contextlib import contextmanager

        from groove_tui.engine.index.indexer import writer_lock

        @contextmanager
        def guard() -> Iterator[None]:
            with self._write_lock, writer_lock(self.index_dir):
                yield

        return self._indexer().embed_beside(guard, cancel, self._contextual())

    def watch(
        self,
        on_event: Callable[[WatchEvent], None],
        stop: threading.Event,
        *,
        debounce_ms: int | None = None,
        polling: bool | None = None,
        held: threading.Event | None = None,
    ) -> None:
        """Follow edits to the KB until `stop` is set, calling `update` once per batch of changes and
        `on_event` after each (engine/index/watch.py). Blocks; run it on a thread of its own. `[watch]`
        gives the defaults of `debounce_ms` and `polling`. While `held` is set (this process's first
        indexing of the KB runs) edits are gathered and counted, and indexed once it is cleared."""
        from groove_tui.engine.index.watch import Watcher, changed_paths

        # A batch writes its full text only; its vectors are computed on a thread of their own, behind it
        # and beside later batches, so a big note's embedding (8,000 chunks: tens of seconds) holds up no
        # other edit: those are found by full text as soon as their batch is written.
        wake, halt = threading.Event(), threading.Event()
        behind = threading.Thread(
            target=self._embed_behind, args=(wake, halt, on_event), name="groove-embed", daemon=True
        )

        def update(paths: frozenset[str]) -> IndexReport:
            report = self.update(paths, cancel=stop, defer_statistics=True, embed=False)
            wake.set()
            return report

        if held is None or not held.is_set():
            wake.set()  # what an earlier run left pending too (a held start: the indexing run embeds it)
        behind.start()
        try:
            Watcher(
                self.kb_path,
                self.config.exclude_dirs,
                update=update,
                catch_up=lambda: self.index(cancel=stop),
                settle=self.follow_statistics,
                stale=self.needs_index,
                changed=lambda: changed_paths(self.store.conn(), self.kb_path, self.config.exclude_dirs),
                on_event=on_event,
                stop=stop,
                debounce_ms=self.config.watch.debounce_ms if debounce_ms is None else debounce_ms,
                polling=self.config.watch.polling if polling is None else polling,
                held=held,
            ).run()
        finally:
            halt.set()
            wake.set()
            behind.join()

    def _embed_behind(
        self, wake: threading.Event, halt: threading.Event, on_event: Callable[[WatchEvent], None]
    ) -> None:
        """The watcher's embedding thread: embeds what is pending each time a batch wakes it, until
        `halt`, and says how many once they are written (an `embedded` event: a search shown meanwhile
        ranked those chunks without their vectors). What it leaves (stopped, or a failure, logged) the
        next indexing run embeds."""
        import logging
        import time

        from groove_tui.engine.errors import IndexBusy
        from groove_tui.engine.index.watch import WatchEvent

        while not halt.is_set():
            wake.wait()
            wake.clear()
            try:
                started = time.perf_counter()
                n = self.embed_pending(cancel=halt)
                if n and not halt.is_set():
                    s = "s" if n != 1 else ""
                    on_event(
                        WatchEvent(
                            "embedded",
                            f"{n:,} chunk{s} embedded behind the edits",
                            report=IndexReport(embedded=n, chunks=self.store.counts()[1]),
                            milliseconds=(time.perf_counter() - started) * 1000,
                        )
                    )
            except IndexBusy:  # another process indexes (and embeds): look again later
                wake.set()
                halt.wait(1.0)
            except Exception as exc:  # never the watcher's end: full text keeps following edits
                logging.getLogger(__name__).warning("embedding behind the watcher stopped: %s", exc)

    def _index(
        self,
        progress: Callable[[IndexProgress], None] | None,
        force: bool,
        cancel: threading.Event | None,
        embed: bool,
        scope: frozenset[str] | None = None,
        *,
        follow_statistics: bool = True,
    ) -> IndexReport:
        from contextlib import nullcontext

        from groove_tui.engine.index.indexer import _now, writer_lock
        from groove_tui.engine.models import choice as modelchoice

        # A forced rebuild writes a new index beside the live one, which takes its place in one step at
        # the end: searches meanwhile read the old index, never an empty or partial one.
        target = self.store.rebuilt_beside() if force else nullcontext(self.store)
        with self._write_lock, writer_lock(self.index_dir), target as store:
            if not self._model_unnamed and (force or self.store.get_meta("embedding_model") is None):
                # This run records the model the user named (and a forced one drops every vector): load it
                # first, so a typo fails here, before anything is written, not after the vectors are gone.
                self.embedder()
            started = _now()
            notes: list[str] = []
            fresh = force or self.store.vec_dim() is None  # no vector written yet: the model is still open
            first = None
            if fresh and embed and self._model_unnamed and self.model_id == describe_default():
                # Phase one first, then decide with the KB's text at hand.
                first = self._indexer(store).run(progress=progress, force=force, cancel=cancel, embed=False)
                force = False
                if modelchoice.cjk_documents(store)[0] == 0:
                    if modelchoice.english_model_pulled():
                        self._use_model(modelchoice.ENGLISH_MODEL, store)
                        notes.append(modelchoice.chosen_note())
                    else:
                        notes.append(modelchoice.hint_note())
            if force:
                store.set_meta("embedding_model", self.model_id)
            if first is not None:
                scope = None
            report = self._indexer(store).run(
                progress=progress,
                force=force,
                cancel=cancel,
                embed=embed,
                scope=scope,
                follow_statistics=follow_statistics,
            )
        if not modelchoice.reads_cjk(self.model_id) and (report.added or report.updated):
            count, examples = modelchoice.cjk_documents(self.store, since=started)
            if count:
                notes.append(modelchoice.unread_script_note(self.model_id, count, examples))
        if self.store.japanese is None and scope is None and self.store.has_kana():
            from groove_tui.engine.models.analyzers import japanese_hint

            notes.append(self._japanese_problem or japanese_hint())
        from groove_tui.engine.models.embedders import reads_tokens

        wanted, recorded_tokens = self.wanted_passage_tokens(), self.passage_tokens()
        if self.config.embedding.max_tokens is not None and not reads_tokens(self.model_id):
            notes.append(f"[embedding] max_tokens does not apply to {self.model_id}: it reads whole passages")
        elif self.config.embedding.max_tokens is not None and recorded_tokens != wanted:
            notes.append(
                f"[embedding] max_tokens = {self.config.embedding.max_tokens} applies when the index is rebuilt "
                f"(index --force): its vectors read {_tokens_read(recorded_tokens)} of each passage"
            )
        self._searcher.legs_cache.clear()
        if first is not None:
            report = _merged(first, report)
        return replace(report, notes=report.notes + tuple(notes)) if notes else report

    def _indexer(self, store: Store | None = None) -> Indexer:
        from groove_tui.engine.index.indexer import Indexer

        store = store or self.store
        return Indexer(
            store,
            self.kb_path,
            self.config,
            self.model_id,
            lambda: self._embedder_for(store),
            self.wanted_passage_tokens(),
        )

    def _use_model(self, name: str, store: Store | None = None) -> None:
        """Switch an index that holds no vectors yet (this one, or the rebuild's `store`) to another
        embedding model (recorded at once)."""
        from groove_tui.engine.models.embedders import describe_model

        self.config = replace(self.config, embedding=replace(self.config.embedding, model=name))
        self.model_id = describe_model(name)
        with self._embedder_lock:
            self._embedder = None
        (store or self.store).set_meta("embedding_model", self.model_id)
        for cache in (self._searcher.legs_cache, self._searcher.query_vectors, self._searcher.embeddings):
            cache.clear()

    def needs_index(self) -> bool:
        """Cheap staleness check: paths, sizes and mtimes against the index (no hashing)."""
        from groove_tui.engine.index.walk import name_is_utf8, walk_kb

        stored = {
            p: (s, m) for p, s, m in self.store.conn().execute("SELECT path, size_bytes, mtime_ns FROM documents")
        }
        if (
            not stored
            or self.store.pending_count()
            or not self.store.bigram_ready()
            or not self.store.words_current()
            or not self.store.fulltext_current()
        ):
            return True
        seen = 0
        for rel in walk_kb(self.kb_path, self.config.exclude_dirs):
            if not name_is_utf8(rel):
                continue  # always skipped by the indexer: not a change
            try:
                st = (self.kb_path / rel).stat()
            except OSError:
                continue
            if stored.get(rel) != (st.st_size, st.st_mtime_ns):
                return True
            seen += 1
        return seen != len(stored)

    # ------------------------------------------------------------ searching

    def default_params(self, **overrides: Any) -> SearchParams:
        """SearchParams with groove.toml's defaults (MMR, λ, penalty, parent retriever, reranker)."""
        s = self.config.search
        rr = self.config.reranker
        params = SearchParams(
            mmr=s.mmr.enabled,
            mmr_lambda=s.mmr.lambda_,
            mmr_same_doc_penalty=s.mmr.same_doc_penalty,
            parent_retriever=s.parent_retriever.enabled,
            reranker=rr.model if (rr.model and rr.rerank_by_default) else None,
        )
        return replace(params, **overrides)

    def bound_retrieval_cache(self, max_bytes: int) -> None:
        """Hold the cache of retrieval results (each query's candidate rows, their text included: from a
        few KB to a few MB an entry) to about `max_bytes` of text as well as to its number of entries.
        For a long-lived process whose queries rarely repeat (the MCP server); the explorer keeps the
        cache by entries, where a moved slider re-ranks the same few queries."""
        from groove_tui.engine.caches import WeighedLRU

        def weight(legs: Legs) -> int:
            return sum(len(r.content) + len(r.context or "") + 200 for r in legs.rows.values())  # text + a row

        old = self._searcher.legs_cache
        self._searcher.legs_cache = WeighedLRU(old.size, max_bytes, weight)

    def search(
        self,
        query: str,
        params: SearchParams | None = None,
        cancel: threading.Event | None = None,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> SearchResponse:
        """`progress(stage, done, total)`, if given, hears how far the reranker is (the slow stage)."""
        return self._searcher.search(query, params or self.default_params(), cancel, progress)

    def nearest_chunks(self, vector: Any, k: int) -> list[tuple[int, float]]:
        """The `k` chunks whose vectors are nearest `vector` (chunk id, L2 distance), nearest first:
        sqlite-vec's answer, read from memory when the index is big enough to hold its vectors there."""
        return self._searcher.knn(vector, k, self.store.generation())

    def chunk_vectors(self, chunk_ids: list[int]) -> dict[int, Any]:
        """The stored vectors of `chunk_ids` (float32 arrays; an id with none is absent)."""
        return self._searcher.vectors_of(chunk_ids)

    def why(
        self,
        query: str,
        target: str,
        params: SearchParams | None = None,
        *,
        fixes: bool = True,
        ranks: bool = True,
        response: SearchResponse | None = None,
    ) -> WhyReport:
        """Why the note `target` ("path" or "path#heading") is, or is not, on the page for `query`: where
        it fell out of the pipeline, and the single setting changes that bring it in (`fixes`, each
        found by running the search), and a leg's rank below its pool (`ranks`). `response`: the page,
        when the caller has it (explain on).
        Raises UnknownNote, naming the nearest paths, for a note or heading the index does not hold."""
        from groove_tui.engine.retrieve.why import explain_absence

        path, heading = self.resolve_note(target)
        return explain_absence(
            self._searcher,
            query,
            params or self.default_params(),
            path,
            heading,
            fixes=fixes,
            ranks=ranks,
            variant=self.ranking_variant,
            response=response,
        )

    def notes(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Every indexed note's path with its section headings, in path order (what a picker offers).
        Read once per index generation."""
        return tuple(self._notes_by_path().items())

    def _notes_by_path(self) -> dict[str, tuple[str, ...]]:
        generation = self.store.generation()
        cached = self._notes
        if cached is not None and cached[0] == generation:
            return cached[1]
        rows = (
            self.store.conn()
            .execute(
                "SELECT d.path, c.heading FROM documents d JOIN chunks c ON c.document_id = d.id "
                "WHERE c.part = 0 ORDER BY d.path, c.chunk_index"
            )
            .fetchall()
        )
        out: dict[str, list[str]] = {}
        for path, heading in rows:
            headings = out.setdefault(path, [])
            if heading and heading not in headings:
                headings.append(heading)
        notes = {path: tuple(headings) for path, headings in out.items()}
        self._notes = (generation, notes)
        return notes

    def resolve_note(self, target: str) -> tuple[str, str | None]:
        """`path` or `path#heading` as the index holds it: (path, heading or None). A path given with
        the KB's folder in front, or as an absolute path inside it, is taken relative to the KB."""
        import contextlib
        import difflib

        from groove_tui.engine.analysis.names import heading_key
        from groove_tui.engine.errors import UnknownNote

        path, sep, heading = target.partition("#")
        path = path.strip()
        candidate = Path(path)
        if candidate.is_absolute():
            with contextlib.suppress(ValueError):  # outside the KB: looked up as given
                path = candidate.resolve().relative_to(self.kb_path.resolve()).as_posix()
        notes = self._notes_by_path()
        if path not in notes:
            nearest = (
                tuple(difflib.get_close_matches(path, list(notes), n=3, cutoff=0.5))
                or tuple(p for p in notes if Path(p).name == Path(path).name)[:3]
            )
            hint = f"; nearest: {', '.join(nearest)}" if nearest else ""
            raise UnknownNote(f"no note {path!r} in the index{hint}", nearest)
        if not sep or not heading.strip():
            return path, None
        wanted = heading_key(heading)
        for h in notes[path]:
            if heading_key(h) == wanted:
                return path, h
        headings = notes[path]
        nearest = tuple(difflib.get_close_matches(heading.strip(), list(headings), n=3, cutoff=0.3))
        hint = f"; its headings include: {', '.join(nearest or headings[:3])}" if headings else ""
        raise UnknownNote(f"{path} has no section {heading.strip()!r}{hint}", nearest)

    def ranking_variant(self, config: Config) -> Searcher:
        """A searcher over this index with other ranking settings — `[search]` and the reranker's pool,
        blend and model — sharing this engine's caches, so a sweep or a comparison recomputes only the
        stages a setting feeds. The retrieval legs are shared unless the setting changes what they
        fetch (bm25 column weights, merged parts, the bigram leg). Its `search` is `Engine.search`'s."""
        from groove_tui.engine.retrieve.candidates import LRU
        from groove_tui.engine.retrieve.searcher import Searcher

        base = self._searcher
        rr_fixed = ("max_tokens", "threads", "batch_size")
        if replace(
            config, search=self.config.search, reranker=self.config.reranker, source=self.config.source
        ) != self.config or any(getattr(config.reranker, f) != getattr(self.config.reranker, f) for f in rr_fixed):
            raise EngineError("a ranking variant may change only [search] and the reranker's model, pool and blend")
        with self._embedder_lock:
            found = self._variants.get(config)
            if found is not None:
                return found
            searcher = Searcher(self.store, config, self._contextual, self.embedder, self._reranker)
            searcher.query_vectors = base.query_vectors
            searcher.rerank_scores = base.rerank_scores
            searcher.embeddings = base.embeddings
            legs_key = _legs_signature(config)
            if legs_key == _legs_signature(self.config):
                searcher.legs_cache = base.legs_cache
            else:
                searcher.legs_cache = self._legs_caches.setdefault(legs_key, LRU(base.legs_cache.size))
            self._variants[config] = searcher
            return searcher

    # ------------------------------------------------------------ status

    def status(self) -> IndexStatus:
        docs, chunks, pending = self.store.counts()
        last = self.store.conn().execute("SELECT max(last_indexed) FROM documents").fetchone()[0]
        return IndexStatus(
            documents=docs,
            chunks=chunks,
            model=self.store.get_meta("embedding_model") or self.model_id,
            dim=self.store.vec_dim(),
            index_path=str(self.store.db_path),
            index_bytes=self.store.index_bytes(),
            last_indexed=last,
            pending_embeddings=pending,
            context_mode=self.store.get_meta("context_mode") or ("static" if self.config.contextual else "off"),
            japanese_words=self.store.words_analyzer_recorded(),
            passage_tokens=self.passage_tokens(),
        )


def _tokens_read(tokens: int) -> str:
    return "all the tokens the model can read" if tokens == 0 else f"the first {tokens} tokens"


def describe_default() -> str:
    from groove_tui.engine.models.embedders import default_model_name, describe_model

    return describe_model(default_model_name())


def _merged(first: IndexReport, second: IndexReport) -> IndexReport:
    """One report for a run made of phase one alone, then the rest (when the model was chosen between)."""
    return replace(
        second,
        added=first.added,
        updated=first.updated,
        unchanged=first.unchanged,
        renamed=first.renamed,
        deleted=first.deleted,
        skipped=first.skipped,
        degraded=first.degraded,
        metadata_only=first.metadata_only,
        notes=first.notes + second.notes,
        seconds=first.seconds + second.seconds,
        fulltext_seconds=first.fulltext_seconds + second.fulltext_seconds,
    )


def _is_within(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent)
    except ValueError:
        return False
    return True


def _shell_quote(path: str | os.PathLike[str]) -> str:
    import shlex

    return shlex.quote(str(path))


def _legs_signature(config: Config) -> tuple[Any, ...]:
    """The settings that change what the retrieval legs fetch (everything else acts after them)."""
    f, s = config.search.fusion, config.search
    return (*f.bm25_weights, s.merge_parts, s.cjk_bigram)
