"""The synchronous engine: index a Markdown KB and search it. Never imports a UI toolkit.

    eng = Engine.open(kb_path, config=None, index_dir=None)   # creates/opens the index, loads nothing heavy
    report = eng.index(progress=callback, force=False)
    resp = eng.search("query", SearchParams(...), cancel=None)
"""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path

from groove_tui.config import Config
from groove_tui.engine.errors import EngineError, KBError, ModelMismatch, SearchCancelled
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
)

__all__ = [
    "Engine",
    "EngineError",
    "ExpandedFrom",
    "Hit",
    "HitTrace",
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

    def __init__(self, kb_path: Path, config: Config, index_dir: Path, *, allow_model_change: bool = False) -> None:
        from groove_tui.config import EmbeddingConfig
        from groove_tui.engine.embedders import default_model_name, describe_model
        from groove_tui.engine.search import Searcher
        from groove_tui.engine.store import Store

        self._model_named = config.embedding.model != EmbeddingConfig.model  # by the user, so maybe a typo
        if not self._model_named:
            # The default model's wheel is missing on some platforms (Windows): fall back to USE.
            config = replace(config, embedding=replace(config.embedding, model=default_model_name()))
        self.kb_path = kb_path
        self.config = config
        self.index_dir = index_dir
        self.model_id = describe_model(config.embedding.model)
        self.store = Store(index_dir / DB_NAME)
        recorded = self.store.get_meta("embedding_model")
        if recorded is not None and recorded != self.model_id and not allow_model_change:
            self.store.close()
            raise ModelMismatch(
                f"the index of {kb_path} was built with the embedding model {recorded!r}, but the configured "
                f"model is {self.model_id!r}. Re-index with: groove-tui index {_shell_quote(kb_path)} --force "
                f"(or set [embedding] model = {recorded!r})"
            )
        self._embedder = None
        self._embedder_lock = threading.Lock()
        self._searcher = Searcher(self.store, config, self._contextual, self.embedder, self._reranker)

    # ------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        kb_path: str | os.PathLike[str],
        config: Config | None = None,
        index_dir: str | os.PathLike[str] | None = None,
        *,
        allow_model_change: bool = False,
    ) -> Engine:
        from groove_tui.paths import index_dir_for

        kb = Path(kb_path).expanduser()
        if not kb.exists():
            raise KBError(f"knowledge base {str(kb)!r} does not exist")
        if not kb.is_dir():
            raise KBError(f"knowledge base {str(kb)!r} is not a directory")
        kb = kb.resolve()
        target = index_dir_for(kb, index_dir)
        if _is_within(target, kb):
            raise KBError(f"the index directory {target} is inside the KB; groove-tui never writes into a KB")
        return cls(kb, config or Config(), target, allow_model_change=allow_model_change)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ models

    def embedder(self):
        """The embedding model, loaded once on first use (in whatever thread needs it first)."""
        with self._embedder_lock:
            if self._embedder is None:
                from groove_tui.engine.embedders import get_embedder

                self._embedder = get_embedder(self.config.embedding.model)
            return self._embedder

    def _reranker(self, name: str):
        from groove_tui.engine.rerank import get_reranker

        return get_reranker(name)

    def _contextual(self) -> bool:
        return self.store.get_meta("context_mode") == "static"

    # ------------------------------------------------------------ indexing

    def index(self, progress=None, force: bool = False, cancel: threading.Event | None = None, embed: bool = True) -> IndexReport:
        from groove_tui.engine.indexer import Indexer, writer_lock

        with writer_lock(self.index_dir):
            if self._model_named and (force or self.store.get_meta("embedding_model") is None):
                # This run records the model the user named (and a forced one drops every vector): load it
                # first, so a typo fails here, before anything is written, not after the vectors are gone.
                self.embedder()
            if force:
                self.store.set_meta("embedding_model", self.model_id)
            report = Indexer(self.store, self.kb_path, self.config, self.model_id, self.embedder).run(
                progress=progress, force=force, cancel=cancel, embed=embed
            )
        self._searcher.legs_cache.clear()
        return report

    def needs_index(self) -> bool:
        """Cheap staleness check: paths, sizes and mtimes against the index (no hashing)."""
        from groove_tui.engine.indexer import name_is_utf8, walk_kb

        stored = {
            p: (s, m) for p, s, m in self.store.conn().execute("SELECT path, size_bytes, mtime_ns FROM documents")
        }
        if not stored or self.store.pending_count() or not self.store.bigram_ready() or not self.store.fulltext_current():
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

    def default_params(self, **overrides) -> SearchParams:
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

    def search(self, query: str, params: SearchParams | None = None, cancel: threading.Event | None = None) -> SearchResponse:
        return self._searcher.search(query, params or self.default_params(), cancel)

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
        )


def _is_within(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent)
    except ValueError:
        return False
    return True


def _shell_quote(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))
