"""A deterministic stand-in for `groove_tui.engine.Engine` (same methods, hand-built responses)."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from groove_tui.engine.errors import SearchCancelled
from groove_tui.engine.types import (
    ExpandedFrom,
    Hit,
    HitTrace,
    IndexProgress,
    IndexReport,
    IndexStatus,
    MMRTrace,
    QueryInfo,
    SearchParams,
    SearchResponse,
    Span,
)
from groove_tui.settings.config import Config


class FakeQueryError(ValueError):
    """Like groove_tui.engine.analysis.query.QueryError: a ValueError carrying a user message."""


@dataclass(frozen=True)
class Doc:
    path: str
    heading: str
    content: str
    tags: tuple[str, ...] = ()
    before: str = ""  # neighbouring chunk text the parent retriever merges
    after: str = ""


DOCS = (
    Doc(
        "rust/async.md",
        "Tokio runtime",
        "The tokio runtime drives async tasks. Use tokio::spawn to start a "
        "task; rust futures are lazy until polled by the runtime.",
        ("rust", "async"),
        before="Async Rust needs an executor.",
        after="Blocking inside a task stalls the runtime.",
    ),
    Doc(
        "rust/ownership.md",
        "Borrowing",
        "Rust ownership: every value has one owner. Borrowing lends access "
        "without moving; the borrow checker enforces it at compile time.",
        ("rust",),
    ),
    Doc(
        "notes/markup.md",
        "Weird [bold]markup[/bold]",
        "Literal [bold]rust[/bold] and [link=https://x.test]link"
        "[/link] text, plus an ANSI \x1b[31mred rust\x1b[0m escape and a bell \x07 here.",
        ("test",),
    ),
    Doc(
        "ja/設定.md",
        "東京の設定",
        "東京の設定ファイルを編集します。rust の設定も東京で管理する。",
        ("ja",),
        before="前の段落です。",
        after="次の段落です。",
    ),
    Doc(
        "notes/emoji.md",
        "Family 👨‍👩‍👧",
        "Emoji 👨\u200d👩\u200d👧 family and cafe\u0301 combining: rust tooling for e\u0301cole notes.",
        ("emoji",),
    ),
    Doc(
        "rust/errors.md",
        "Error handling",
        "Rust error handling uses Result and the ? operator; async code propagates errors through futures too.",
        ("rust", "async"),
    ),
    Doc(
        "python/asyncio.md",
        "asyncio",
        "Python asyncio schedules coroutines on an event loop; compare with the tokio runtime in rust.",
        ("python", "async"),
    ),
    Doc(
        "rust/tokio-spawn.md",
        "Spawning",
        "tokio spawn returns a JoinHandle; spawned tasks run concurrently on the tokio runtime. rust rust rust.",
        ("rust", "async"),
    ),
)


def parse(query: str) -> tuple[list[str], list[str]]:
    include, exclude = [], []
    for m in re.finditer(r'(-?)"([^"]*)"|(-?)(\S+)', query):
        if m.group(2) is not None:
            (exclude if m.group(1) else include).append(m.group(2))
        else:
            word = m.group(4)
            if m.group(3) and word:
                exclude.append(word)
            elif word != "-":
                include.append(word)
    return [t for t in include if t], [t for t in exclude if t]


def _step(steps: threading.Semaphore | None, cancel: threading.Event | None) -> bool:
    """Wait for the test to release one step of a slow index; False if the run was cancelled meanwhile."""
    if steps is None:
        return True
    end = time.monotonic() + 30
    while not steps.acquire(timeout=0.02):
        if (cancel is not None and cancel.is_set()) or time.monotonic() > end:
            return False
    return True


@dataclass
class FakeEngine:
    kb_path: Path = Path("/kb")
    config: Config = field(default_factory=Config)
    stale: bool = False
    pending: int = 0
    delays: dict[str, float] = field(default_factory=dict)  # query -> seconds to sleep
    ignore_cancel: bool = True  # a slow engine that does not notice cancellation (worst case)
    index_gate: threading.Event | None = None  # when set, phase two waits for it
    fresh: bool = False  # the index holds no documents until phase one has run
    fulltext_steps: threading.Semaphore | None = None  # when set, each file of phase one waits for a release
    embed_steps: threading.Semaphore | None = None  # when set, each chunk of phase two waits for a release
    embed_rate: float | None = None  # chunks/s reported from the second embedding batch on
    calls: list[tuple[str, SearchParams]] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)  # queries whose search returned or raised
    gate: object = None  # optional callable (query, params) -> threading.Event | None the search waits on
    closed: bool = False
    docs: tuple[Doc, ...] = DOCS  # what the index holds: a test edits it as a watched save would

    def needs_index(self) -> bool:
        return self.stale

    def default_params(self) -> SearchParams:
        return SearchParams()

    def status(self) -> IndexStatus:
        held = 0 if self.fresh else len(self.docs)
        return IndexStatus(
            documents=held,
            chunks=held,
            model="hashing",
            dim=64,
            index_path="/idx",
            index_bytes=1,
            last_indexed=None,
            pending_embeddings=self.pending,
            context_mode="off",
        )

    def index(self, progress=None, force=False, cancel=None) -> IndexReport:
        n = len(self.docs)
        for i in range(n + 1):
            if i and not _step(self.fulltext_steps, cancel):
                return IndexReport()
            if progress:
                progress(IndexProgress("fulltext", i, n))
        self.fresh = False
        if progress:
            progress(IndexProgress("embed", 0, n))
        if self.index_gate is not None:
            self.index_gate.wait(120)  # the test opens it; a loaded machine can take seconds to get there
        for i in range(1, n + 1):
            if not _step(self.embed_steps, cancel):
                return IndexReport()
            rate = self.embed_rate if i >= 2 else None
            if progress:
                progress(IndexProgress("embed", i, n, rate=rate, eta_seconds=(n - i) / rate if rate else None))
        if progress:
            progress(IndexProgress("done", n, n))
        self.stale = False
        self.pending = 0
        return IndexReport(added=n, chunks=n, embedded=n, seconds=0.01)

    def close(self) -> None:
        self.closed = True

    def search(
        self, query: str, params: SearchParams, cancel: threading.Event | None = None, progress=None
    ) -> SearchResponse:
        self.calls.append((query, params))
        event = self.gate(query, params) if callable(self.gate) else None
        if event is not None:
            event.wait(60)
        try:
            resp = self._search(query, params, cancel)
            if params.reranker is not None:  # a visible "rerank": the fused order reversed
                n = len(resp.results)
                if progress is not None:
                    progress("rerank", 0, n)
                    progress("rerank", n, n)
                resp = replace(resp, results=tuple(reversed(resp.results)), reranked=True)
            return resp
        finally:
            self.finished.append(query)

    def notes(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return tuple((doc.path, ()) for doc in sorted(self.docs, key=lambda d: d.path))

    def why(
        self, query: str, target: str, params: SearchParams, *, fixes: bool = True, ranks: bool = True, response=None
    ):
        """The real walk's shape: on the page, or "below_page" under the page's last hit (count of the
        query's words in the note, as the fake scores), with a limit that brings it in."""
        from groove_tui.engine.errors import UnknownNote
        from groove_tui.engine.types import WhyFix, WhyReport, WhyStep

        path = target.partition("#")[0]
        doc = next((d for d in self.docs if d.path == path), None)
        if doc is None:
            raise UnknownNote(f"no note {path!r} in the index")
        page = self._search(query, params, None).results
        rank = next((i for i, h in enumerate(page, 1) if h.path == path), None)
        if rank is not None:
            steps = (WhyStep("page", True, f"shown at #{rank}"),)
            return WhyReport(query, path, None, "shown", f"on the page at #{rank}", steps, shown_rank=rank)
        include, _ = parse(query)
        count = sum(doc.content.lower().count(t.lower()) for t in include)
        deeper = self._search(query, replace(params, limit=1000), None).results
        place = next((i for i, h in enumerate(deeper, 1) if h.path == path), None)
        if place is None:
            steps = (WhyStep("legs", False, f"no match (lacks {', '.join(include)})"),)
            return WhyReport(query, path, None, "not_matched", "no leg found it", steps)
        summary = f"fused below the page: #{place} with {count}.0000, under #{len(page)}'s"
        steps = (WhyStep("fusion", False, summary),)
        fix = (WhyFix("limit", place, place),) if fixes else ()
        return WhyReport(query, path, None, "below_page", summary, steps, fused_rank=place, fixes=fix)

    def _search(self, query: str, params: SearchParams, cancel: threading.Event | None) -> SearchResponse:
        delay = self.delays.get(query, 0.0)
        end = time.monotonic() + delay
        while time.monotonic() < end:
            if cancel is not None and cancel.is_set() and not self.ignore_cancel:
                raise SearchCancelled("cancelled")
            time.sleep(0.005)
        include, exclude = parse(query)
        if not include and exclude:
            raise FakeQueryError("The query has only exclusions; add at least one term to search for.")
        if len(query) > 300:
            raise FakeQueryError("The query is too long (max 300 characters).")
        scored = []
        for doc_id, doc in enumerate(self.docs, 1):
            low = doc.content.lower()
            if any(x.lower() in low for x in exclude):
                continue
            if params.path_globs and not any(Path(doc.path).match(g) for g in params.path_globs):
                continue
            if params.tags_any and not set(params.tags_any) & set(doc.tags):
                continue
            count = sum(low.count(t.lower()) for t in include)
            if count:
                scored.append((count, doc_id, doc))
        scored.sort(key=lambda x: (-x[0], x[1]))
        # Each fusion method orders the hits its own way, so a re-run under another method is visible:
        # "dbsf" by count (ties in document order), "relative" by count (ties last document first), "rrf"
        # ("ranks only") by the fake's vector leg, document order.
        method = params.fusion or self.config.search.fusion.method
        if method == "relative":
            scored.sort(key=lambda x: (-x[0], -x[1]))
        elif method == "rrf":
            scored.sort(key=lambda x: x[1])
        if params.mmr:  # deterministic "diversification": λ decides how far the tail is pulled forward
            lam = params.mmr_lambda
            scored.sort(key=lambda x: -(lam * x[0] + (1 - lam) * (len(self.docs) - x[1]) / 2))
        scored = scored[: params.limit]
        # The word leg runs as the engine runs it: per side, else [search] word_leg, and only for a query
        # with words (its term ranks hits by how many times they hold the words, ties by document order).
        words_on = self.config.search.word_leg if params.word_leg is None else params.word_leg
        words_on = words_on and bool(include)
        word_ranks = {doc_id: r for r, (_c, doc_id, _d) in enumerate(sorted(scored, key=lambda x: (-x[0], x[1])), 1)}
        hits = []
        for rank, (count, doc_id, doc) in enumerate(scored, 1):
            content, expanded = doc.content, None
            offset = 0
            if params.parent_retriever and (doc.before or doc.after):
                pre = doc.before + "\n\n" if doc.before else ""
                content = pre + doc.content + ("\n\n" + doc.after if doc.after else "")
                offset = len(pre)
                expanded = ExpandedFrom(
                    "adjacent", from_index=0, to_index=2, hit_start=offset, hit_end=offset + len(doc.content)
                )
            spans = []
            for t in include:
                for m in re.finditer(re.escape(t), content, re.IGNORECASE):
                    spans.append(Span(m.start(), m.end()))
            spans.sort(key=lambda s: (s.start, s.end))
            if method == "rrf":
                score = round(1 / (61 + doc_id) + 1 / (61 + rank), 6)  # the trace's two leg terms
            else:
                score = round(1 / (60 + rank) + count / (1000 if method == "dbsf" else 2000), 6)
            trace = None
            if params.explain:
                trace = HitTrace(
                    vector_rank=doc_id,
                    vector_distance=0.1 * doc_id,
                    fts_rank=rank,
                    fts_bm25=-float(count),
                    rrf_vector=1 / (61 + doc_id),
                    rrf_fts=1 / (61 + rank),
                    rrf_score=score,
                    rrf_rank=rank,
                    fusion=method,
                    # a score fusion's scale per leg (cosine for dbsf's vector leg), as the engine sets
                    vector_scale=None if method == "rrf" else (0.62, 0.995) if method == "dbsf" else (0.9, 0.1),
                    fts_scale=None if method == "rrf" else (0.5, -4.0),
                    mmr=MMRTrace(pick=rank, relevance=1.0 / rank, max_similarity=0.25, penalty=0.0, value=0.5)
                    if params.mmr
                    else None,
                    parent="merged chunks 0–2" if expanded else None,
                    # vectors pending: half the full-text hits embedded, the others read by their full text
                    vector_share=0.5 if self.pending else None,
                    vector_imputed=bool(self.pending) and doc_id % 2 == 0,
                    word_leg=words_on,
                    word_rank=word_ranks[doc_id] if words_on else None,
                    word_bm25=-0.8 * count if words_on else None,
                    rrf_word=1 / (60 + word_ranks[doc_id]) if words_on else None,
                    word_scale=(0.4, -3.2) if words_on and method != "rrf" else None,
                )
            hits.append(
                Hit(
                    chunk_id=100 + doc_id,
                    document_id=doc_id,
                    path=doc.path,
                    title=None,
                    heading=doc.heading,
                    level=2,
                    chunk_index=1,
                    topic=None,
                    category=None,
                    date=None,
                    tags=doc.tags,
                    content=content,
                    score=score,
                    line=3 * doc_id,
                    match_spans=tuple(spans),
                    expanded_from=expanded,
                    trace=trace,
                )
            )
        filters = {}
        if params.path_globs:
            filters["path_globs"] = list(params.path_globs)
        if params.tags_any:
            filters["tags_any"] = list(params.tags_any)
        return SearchResponse(
            results=tuple(hits),
            low_confidence="vague" in include or len(hits) == 1,
            filter_applied=filters,
            timings_ms={"fts": 0.5, "vector": 0.7, "total": 1.5},
            query=QueryInfo(
                include=tuple(include),
                exclude=tuple(exclude),
                match_expr=" AND ".join(f'"{t}"' for t in include) + "".join(f' NOT "{x}"' for x in exclude),
                positive_text=" ".join(include),
                bigram_expr=None,
                word_expr=" OR ".join(f'"{t}"' for t in include) if words_on else None,
            ),
            pending_embeddings=self.pending,
            vector_share=0.5 if self.pending else 1.0,
            explain=params.explain,
        )
