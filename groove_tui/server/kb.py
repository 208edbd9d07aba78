"""The synchronous bodies behind the tools and resources, over one open `Engine`.

Each tool answers a JSON-able value: groove's response, or `{"error": "…"}` (groove's envelope) for
anything the caller can act on. Searches and other reads take `read_lock`, so the server's own reads
run one at a time on the engine, off the event loop (the MCP layer calls these on worker threads).
Index writes (the watcher's updates, `rebuild_index`) run on their own threads through the engine's
writer path: SQLite in WAL mode keeps every read on the last commit, so a search neither waits for an
update nor sees half of one. `rebuild_index` holds a slot: a second call while one runs is refused.

Documents are read the way groove reads them: only a regular Markdown file (`.md` in any letter case)
under the KB, never through a symbolic link (the final name refused, any link on the way judged by
where it really leads), never a file with a second name (a hard link), never more than 1 MiB; read from
the very handle that was checked, opened name by name without following a link swapped in since.
A resource is narrower still: only what the index holds is offered or served.
"""

from __future__ import annotations

import errno
import logging
import math
import os
import stat
import threading
import time
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_tui.server import surface as s

if TYPE_CHECKING:
    import numpy as np

    from groove_tui.engine import Engine
    from groove_tui.engine.index.store import CandidateRow

log = logging.getLogger(__name__)

FILE_NOT_FOUND = 'File not found: {path}. Path should be relative to the knowledge base (e.g. "notes/overview.md").'
SYMLINK_DENIED = "Access denied: symlinks are not allowed."
HARD_LINK_DENIED = "Access denied: files with more than one name (hard links) are not allowed."
OUTSIDE_DENIED = "Access denied: path is outside the knowledge base."
NOT_REGULAR = "Access denied: only regular files can be read."
# A server's queries rarely repeat, and each cached retrieval holds its candidates' text: held by what
# it weighs, not only by its 1,024 entries, the cache cannot grow the server by a gigabyte.
RETRIEVAL_CACHE_BYTES = 64 * 1024 * 1024
REBUILD_BUSY_WAIT_S = 60.0  # how long rebuild_index waits for another writer of the index (the watcher)


def error(message: str) -> dict[str, str]:
    return {"error": message}


class NotServed(LookupError):
    """A resource URI this server does not offer (never offered, not indexed, or refused on reading)."""


@dataclass(frozen=True)
class RebuildSlot:
    started: float  # time.monotonic() when the rebuild was accepted


class KbService:
    """groove's tools and resources over `engine` (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        engine.bound_retrieval_cache(RETRIEVAL_CACHE_BYTES)
        self.kb = engine.kb_path.resolve()
        self.read_lock = threading.Lock()
        self._slot_lock = threading.Lock()
        self._rebuild: RebuildSlot | None = None

    # ------------------------------------------------------------ dispatch

    def call(self, name: str, arguments: Any) -> tuple[Any, bool]:
        """(answer, is_error) of tool `name`; `rebuild_index` goes through `claim_rebuild` first."""
        spec = s.TOOLS.get(name)
        if spec is None:
            return error(f"unknown tool {name!r} (tools: {', '.join(s.TOOLS)})"), True
        try:
            args = spec.check(arguments)
        except s.ArgumentError as exc:
            return error(str(exc)), True
        try:
            if name == "rebuild_index":
                slot = self.claim_rebuild()
                if isinstance(slot, dict):
                    return slot, True
                answer = self.rebuild_index(args, slot)
            else:
                with self.read_lock:
                    answer = getattr(self, name)(args)
        except Exception as exc:  # an index gone bad, a disk error: one line for the caller, never a traceback
            log.warning("%s failed: %s", name, exc, exc_info=log.isEnabledFor(logging.DEBUG))
            return error(f"{name} failed: {_one_line(exc)}"), True
        return answer, isinstance(answer, dict) and "error" in answer

    # ------------------------------------------------------------ search

    def search(self, a: dict[str, Any]) -> dict[str, Any]:
        """groove's checks in groove's order (limit clamped, the MMR values, the query's size, the filter
        lists, the globs), then the engine's search with the server's settings and the call's overrides;
        the answer is `groove-tui search --format json`'s plus each servable hit's `uri`."""
        from groove_tui.engine.errors import EngineError
        from groove_tui.engine.retrieve.filters import FilterError, compile_globs

        limit = min(a.get("limit", s.SEARCH_LIMIT_DEFAULT), s.SEARCH_LIMIT_MAX)
        for key in ("mmr_lambda", "mmr_same_doc_penalty"):
            v = a.get(key)
            if v is not None and not 0.0 <= v <= 1.0:  # NaN fails too
                return error(f"{key} out of range: {_num(v)} (must be 0.0..=1.0)")
        query: str = a["query"]
        size = len(query.encode("utf-8", "surrogatepass"))
        if size > s.SEARCH_QUERY_MAX_BYTES:
            return error(
                f"query is too large: {size} bytes (max {s.SEARCH_QUERY_MAX_BYTES} bytes). For long-form "
                "retrieval, slice the query or use multiple smaller calls."
            )
        for name in ("path_globs", "tags_any", "tags_all"):
            items = a.get(name) or []
            if len(items) > s.FILTER_LIST_MAX_ITEMS:
                return error(
                    f"{name} has too many entries: {len(items)} (max {s.FILTER_LIST_MAX_ITEMS}). Narrow the "
                    "filter, or issue several calls."
                )
            for item in items:
                n = len(item.encode("utf-8", "surrogatepass"))
                if n > s.FILTER_ITEM_MAX_BYTES:
                    return error(
                        f"{name} has an entry that is too large: {n} bytes (max {s.FILTER_ITEM_MAX_BYTES} bytes)."
                    )
        globs = a.get("path_globs")
        if globs is not None:
            if not globs:
                return error(
                    'invalid path_globs: path_globs cannot be empty. Use null to disable, or ["**", "!a/**"] '
                    "for exclude-only."
                )
            try:
                compile_globs(globs)
            except FilterError as exc:
                return error(f"invalid path_globs: {exc}")

        engine = self.engine
        if engine.store.conn().execute("SELECT 1 FROM documents LIMIT 1").fetchone() is None:
            return error(
                f"the knowledge base has not been indexed yet (index: {engine.store.db_path}); call "
                "rebuild_index, or wait for the watcher's first run"
            )
        params = replace(engine.default_params(), limit=limit)
        changes: dict[str, Any] = {}
        for key in ("mmr", "mmr_lambda", "mmr_same_doc_penalty", "parent_retriever", "category", "topic"):
            if key in a:
                changes[key] = a[key]
        for key in ("path_globs", "tags_any", "tags_all"):
            if key in a:
                changes[key] = tuple(a[key])
        for key in ("date_from", "date_to"):
            if key in a:
                changes[key] = a[key]
        if "rerank" in a:  # naming no model: a server without a reranker ignores it, as groove does
            changes["reranker"] = engine.config.reranker.model if a["rerank"] else None
        if a.get("include_low_quality"):
            changes["min_quality"] = 0.0
        elif s.finite(a.get("min_quality")):
            changes["min_quality"] = min(max(a["min_quality"], 0.0), 1.0)  # clamped, as groove does
        ratio = a.get("min_confidence_ratio")
        if ratio is not None and math.isfinite(ratio):
            changes["min_confidence_ratio"] = max(ratio, 0.0)  # negative: the check is off, as groove's
        params = replace(params, **changes)
        try:
            resp = engine.search(query, params)
        except ValueError as exc:  # ParamError, FilterError, QueryError: worded for the caller
            return error(str(exc))
        except EngineError as exc:
            return error(f"Search failed: {exc}. Try running rebuild_index first.")
        out = resp.to_dict()
        if ratio is not None and "min_confidence_ratio" in out["filter_applied"]:
            out["filter_applied"]["min_confidence_ratio"] = ratio  # echoed as given, as groove does
        servable = self.servable([h.path for h in resp.results])
        for hit, row in zip(resp.results, out["results"], strict=True):
            if hit.path in servable:
                row["uri"] = s.doc_uri(hit.path)
        return bounded_answer(out)

    # ------------------------------------------------------------ topics and documents

    def list_topics(self, _a: dict[str, Any]) -> list[dict[str, Any]]:
        import json

        rows = (
            self.engine.store.conn()
            .execute(
                "SELECT category, topic, count(*), max(last_indexed), json_group_array(title) FROM documents "
                "GROUP BY category, topic ORDER BY category, topic"
            )
            .fetchall()
        )
        return [
            {
                "category": category,
                "topic": topic,
                "file_count": count,
                "last_updated": last,
                "titles": [t for t in json.loads(titles or "[]") if isinstance(t, str)],
            }
            for category, topic, count, last, titles in rows
        ]

    def get_document(self, a: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.load_document(a["path"])
        except NotServed as exc:
            return error(str(exc))

    def load_document(self, rel: str) -> dict[str, Any]:
        """groove's document answer, or NotServed with groove's reason (see the module docstring)."""
        from groove_tui.engine.index.markdown import parse_frontmatter

        if "\0" in rel:
            raise NotServed(FILE_NOT_FOUND.format(path=rel))
        if not self._leads_inside(rel):
            raise NotServed(OUTSIDE_DENIED)
        full = self.kb / rel
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            raise NotServed(FILE_NOT_FOUND.format(path=rel)) from None
        except OSError as exc:
            raise NotServed(f"Failed to examine {rel}: {exc.strerror or exc}") from None
        if stat.S_ISLNK(st.st_mode):
            raise NotServed(SYMLINK_DENIED)
        if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
            raise NotServed(HARD_LINK_DENIED)
        real = Path(os.path.realpath(full))
        if not real.is_relative_to(self.kb):
            raise NotServed(OUTSIDE_DENIED)
        ext = real.suffix[1:]
        if ext.lower() != "md":  # `.MD` is Markdown too, as the indexer and groove take it
            raise NotServed(f'Access denied: extension "{ext}" is not in the indexed parser registry. Allowed: ["md"]')
        if not stat.S_ISREG(st.st_mode):  # a folder or a FIFO named *.md: never opened
            raise NotServed(NOT_REGULAR)
        raw = _read_checked(self.kb, real, s.DOCUMENT_MAX_BYTES)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotServed(f"Failed to extract document: {rel}: not valid UTF-8 (byte {exc.start})") from None
        fm, _body, _offset, _warning = parse_frontmatter(text)
        return {
            "path": rel,
            "title": fm.title,
            "date": fm.date,
            "topic": fm.topic,
            "tags": list(fm.tags),
            "content": text,
            "truncated": False,
        }

    def _leads_inside(self, rel: str) -> bool:
        """Whether `rel` leads into the KB, judged before anything is looked up: its folder as it really
        resolves, then its name. So every path out of the KB gets the same answer whether or not it
        exists there, and nothing about what lies outside can be learnt from the answers."""
        head, name = os.path.split(os.path.join(self.kb, rel))
        lead = (
            os.path.realpath(os.path.join(head, name))
            if name in ("", ".", "..")
            else os.path.join(os.path.realpath(head), name)
        )
        return Path(lead).is_relative_to(self.kb)

    # ------------------------------------------------------------ resources

    def servable(self, paths: list[str] | None = None) -> set[str]:
        """The indexed documents a client may read as resources: Markdown, not larger than 1 MiB (as
        recorded by the index; unrecorded counts as servable). One predicate for the listing, the
        reads and the `uri` on search hits, so they always agree."""
        conn = self.engine.store.conn()
        if paths is None:
            rows = conn.execute("SELECT path, size_bytes FROM documents").fetchall()
        else:
            rows = []
            unique = sorted(set(paths))
            for start in range(0, len(unique), 500):
                batch = unique[start : start + 500]
                rows += conn.execute(
                    f"SELECT path, size_bytes FROM documents WHERE path IN ({','.join('?' * len(batch))})", batch
                ).fetchall()
        return {p for p, size in rows if p.lower().endswith(".md") and (size is None or size <= s.DOCUMENT_MAX_BYTES)}

    def topic_groups(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for path in sorted(self.servable()):
            groups.setdefault(s.group_prefix(path), []).append(path)
        return dict(sorted(groups.items()))

    def read_resource(self, uri: str) -> tuple[str, str]:
        """(text, mime type) of a `kb://` URI, or NotServed."""
        base, page = s.split_page(uri)
        parsed = s.parse_uri(base)
        if parsed is None or page is None:
            raise NotServed(f"not a resource this server serves: {uri}")
        kind, value = parsed
        if kind == "topic":
            paths = self.topic_groups().get(value)
            if paths is None:
                raise NotServed(f"no such topic group: {uri}")
            pages = max(1, math.ceil(len(paths) / s.TOPIC_PAGE_SIZE))
            if not 1 <= page <= pages:
                raise NotServed(f"no such page: {uri} ({s.topic_uri(value)} has {pages} page{'s' * (pages > 1)})")
            return _topic_listing(value, paths, page, pages), "text/markdown"
        if value not in self.servable([value]):
            raise NotServed(
                f"not a document this server offers: {uri} (only indexed Markdown documents of at most 1 MiB are)"
            )
        try:
            doc = self.load_document(value)
        except NotServed as exc:
            raise NotServed(f"{exc}: {uri}") from None
        return doc["content"], "text/markdown"

    # ------------------------------------------------------------ rebuild_index

    def claim_rebuild(self) -> RebuildSlot | dict[str, str]:
        """The one rebuild slot, or groove's refusal naming how long the running rebuild has run. Called
        when the request arrives, not when a worker thread gets round to it."""
        with self._slot_lock:
            if self._rebuild is not None:
                secs = int(time.monotonic() - self._rebuild.started)
                return error(
                    f"A rebuild is already running (started {secs}s ago). Wait for it to finish and call again: "
                    "a rebuild reads every note of the knowledge base (force: and embeds it all again)."
                )
            self._rebuild = RebuildSlot(time.monotonic())
            return self._rebuild

    @property
    def rebuilding(self) -> bool:
        return self._rebuild is not None

    def rebuild_index(self, a: dict[str, Any], slot: RebuildSlot) -> dict[str, Any]:
        from groove_tui.engine.errors import EngineError, IndexBusy

        try:
            deadline = time.monotonic() + REBUILD_BUSY_WAIT_S
            while True:
                try:
                    report = self.engine.index(force=bool(a.get("force", False)))
                    break
                except IndexBusy as exc:  # the watcher's batch, or another process: wait a little
                    if time.monotonic() > deadline:
                        return error(f"Rebuild failed: {exc}; try again when it has finished")
                    time.sleep(0.2)
                except EngineError as exc:
                    return error(f"Rebuild failed: {exc}")
            docs = self.engine.store.counts()[0]
            return {
                "total_documents": docs,
                "updated": report.added + report.updated,
                "renamed": report.renamed,
                "deleted": report.deleted,
                "skipped": len(report.skipped),
                "total_chunks": report.chunks,
                "duration_ms": int((time.monotonic() - slot.started) * 1000),
            }
        finally:
            with self._slot_lock:
                if self._rebuild is slot:
                    self._rebuild = None

    # ------------------------------------------------------------ get_connection_graph

    def get_connection_graph(self, a: dict[str, Any]) -> dict[str, Any]:
        """groove's walk: seeds from the start document's chunks (or their centroid), then breadth first by
        KNN, each hop taking up to `fan_out` neighbours above `min_similarity` from documents not yet
        visited; bounds clamped, not refused, as groove does."""
        depth = min(a.get("depth", s.GRAPH_DEFAULT_DEPTH), s.GRAPH_MAX_DEPTH)
        fan_out = min(a.get("fan_out", s.GRAPH_DEFAULT_FAN_OUT), s.GRAPH_MAX_FAN_OUT)
        sim_in = a.get("min_similarity", s.GRAPH_DEFAULT_MIN_SIMILARITY)
        min_sim = min(max(sim_in, 0.0), 1.0) if not math.isnan(sim_in) else s.GRAPH_DEFAULT_MIN_SIMILARITY
        strategy_text = a.get("seed_strategy")
        strategy = "all_chunks" if strategy_text is None else s.SEED_STRATEGIES.get(strategy_text)
        if strategy is None:
            return error(f"unknown seed_strategy '{strategy_text}' (expected 'all-chunks' / 'all_chunks' / 'centroid')")
        exclude = a.get("exclude_paths") or []
        if len(exclude) > s.FILTER_LIST_MAX_ITEMS:
            return error(
                f"get_connection_graph failed: exclude_paths has too many entries: {len(exclude)} "
                f"(max {s.FILTER_LIST_MAX_ITEMS}). Narrow the filter, or issue several calls."
            )
        for item in exclude:
            if len(item.encode("utf-8", "surrogatepass")) > s.FILTER_ITEM_MAX_BYTES:
                return error(
                    "get_connection_graph failed: exclude_paths has an entry that is too large: "
                    f"{len(item.encode('utf-8', 'surrogatepass'))} bytes (max {s.FILTER_ITEM_MAX_BYTES} bytes)."
                )
        max_nodes = min(a.get("max_nodes", s.GRAPH_DEFAULT_MAX_NODES), s.GRAPH_MAX_NODES)
        seed_cap = min(max(a.get("max_seed_chunks", s.GRAPH_DEFAULT_MAX_SEED_CHUNKS), 1), s.GRAPH_MAX_SEED_CHUNKS)
        start: str = a["start"]
        return _Walk(self.engine, a, depth, fan_out, min_sim, strategy, exclude, max_nodes, seed_cap).run(start)


# ---------------------------------------------------------------- helpers


def wire_size(value: Any) -> int:
    """The bytes `value` takes in a tool result's message: its JSON text, escaped again as the string
    the JSON-RPC message carries it in."""
    import json

    import pydantic_core

    try:
        return len(pydantic_core.to_json(pydantic_core.to_json(value).decode("utf-8")))
    except pydantic_core.PydanticSerializationError:  # a lone surrogate: the answer goes through json.dumps
        return len(json.dumps(json.dumps(value, ensure_ascii=False)))


def bounded_answer(out: dict[str, Any]) -> dict[str, Any]:
    """A search answer held under `ANSWER_MAX_BYTES` as it travels: a hit's content over
    `HIT_CONTENT_MAX_BYTES` is cut with a marker (its match spans past the cut dropped), then hits are
    kept in rank order while they fit. Either is said in `truncated` / `truncation` (the shape
    get_connection_graph uses); an answer that fits is left exactly as it was."""
    truncation: list[dict[str, Any]] = []
    cut = 0
    for row in out["results"]:
        cut += _cut_content(row, s.HIT_CONTENT_MAX_BYTES)
    if cut:
        truncation.append(
            {
                "reason": "hit_content",
                "limit": s.HIT_CONTENT_MAX_BYTES,
                "detail": f"{cut} hit{'s' * (cut > 1)} had more than {s.HIT_CONTENT_MAX_BYTES} bytes of content and "
                "were cut where the content says so; get_document (or the hit's uri) reads a whole document.",
            }
        )
    room = s.ANSWER_MAX_BYTES - wire_size({**out, "results": [], "truncation": truncation}) - 1024
    kept: list[dict[str, Any]] = []
    for row in out["results"]:
        room -= wire_size(row) + 1
        if room < 0:
            break
        kept.append(row)
    if len(kept) < len(out["results"]):
        truncation.append(
            {
                "reason": "answer_size",
                "limit": s.ANSWER_MAX_BYTES,
                "detail": f"the first {len(kept)} of {len(out['results'])} hits fill an answer's "
                f"{s.ANSWER_MAX_BYTES} bytes (a client's message limit is 1 MiB); the rest were left out. "
                "Lower limit, or narrow the search (category, topic, path_globs, tags_any, dates).",
            }
        )
        out["results"] = kept
    if truncation:
        out["truncated"] = True
        out["truncation"] = truncation
    return out


def _cut_content(row: dict[str, Any], cap: int) -> bool:
    """Cut `row`'s content to at most `cap` bytes at a character boundary, with a marker saying where the
    rest is; its byte spans past the cut are dropped. Whether it was cut."""
    raw = row["content"].encode("utf-8", "surrogatepass")
    if len(raw) <= cap:
        return False
    end = cap
    while raw[end] & 0xC0 == 0x80:  # back to the start of a character
        end -= 1
    rest = f"; the whole document: get_document or {row['uri']}" if "uri" in row else ""
    row["content"] = (
        raw[:end].decode("utf-8", "surrogatepass") + f"\n\n[… cut: {end:,} of {len(raw):,} bytes shown{rest}]"
    )
    row["content_truncated"] = True
    if "match_spans" in row:
        row["match_spans"] = [sp for sp in row["match_spans"] if sp["end"] <= end]
    return True


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "…"


def _num(v: float) -> str:
    return "NaN" if math.isnan(v) else repr(v)


def _topic_listing(prefix: str, paths: list[str], page: int, pages: int) -> str:
    """One page of a topic group's documents, by path, and where the next page is: a group of thousands
    is read a page at a time, never in one answer that floods the reader's context."""
    name = prefix or "(root)"
    n = len(paths)
    head = f"{n:,} indexed document{'s' if n != 1 else ''} under {name}"
    first = (page - 1) * s.TOPIC_PAGE_SIZE
    shown = paths[first : first + s.TOPIC_PAGE_SIZE]
    if pages > 1:
        head += f"; page {page} of {pages} (documents {first + 1:,}–{first + len(shown):,}, by path)"
    lines = [f"# {name}", "", head, ""]
    lines += [f"- `{p}` — {s.doc_uri(p)}" for p in shown]
    if page < pages:
        lines += ["", f"Next page: {s.page_uri(prefix, page + 1)}"]
    return "\n".join(lines) + "\n"


def _open_inside(kb: Path, real: Path) -> int:
    """A handle on `real` (a path inside `kb` as it resolved at the checks), opened one name at a time
    from the KB's folder, none of them followed if it has become a link since: a note, or a folder on
    its way, swapped for a link between the checks and the open is refused, never followed."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    flags = os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in does not block
    if os.open not in os.supports_dir_fd:  # no openat (Windows): the last name, not followed
        return os.open(real, flags)
    *folders, name = real.relative_to(kb).parts
    at = os.open(kb, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for folder in folders:
            try:
                inner = os.open(folder, os.O_RDONLY | nofollow | getattr(os, "O_DIRECTORY", 0), dir_fd=at)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # the folder became a link (or a file)
                    raise NotServed(SYMLINK_DENIED) from None
                raise
            os.close(at)
            at = inner
        return os.open(name, flags, dir_fd=at)
    finally:
        os.close(at)


def _read_checked(kb: Path, real: Path, cap: int) -> bytes:
    """The bytes of a regular file with one name, judged on the handle they are read from (a file swapped
    for a link, a folder, a FIFO or a bigger file after the checks is refused, never followed or waited
    on)."""
    try:
        fd = _open_inside(kb, real)
    except NotServed:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the name became a link after the checks
            raise NotServed(NOT_REGULAR) from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):  # gone since the checks
            raise NotServed(FILE_NOT_FOUND.format(path=real.relative_to(kb).as_posix())) from None
        raise NotServed(f"Failed to read file: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)  # before any Python file object: one cannot be made on a folder
        if not stat.S_ISREG(st.st_mode):
            raise NotServed(NOT_REGULAR)
        if st.st_nlink > 1:
            raise NotServed(HARD_LINK_DENIED)
        if st.st_size > cap:
            raise NotServed(f"File too large: {st.st_size} bytes (max {cap} bytes).")
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            data = fh.read(cap + 1)
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > cap:
        raise NotServed("File too large.")
    return data


class _Walk:
    """One get_connection_graph walk (groove's graph.rs, over the engine's index)."""

    def __init__(
        self,
        engine: Engine,
        a: dict[str, Any],
        depth: int,
        fan_out: int,
        min_sim: float,
        strategy: str,
        exclude: list[str],
        max_nodes: int,
        seed_cap: int,
    ) -> None:
        self.engine = engine
        self.store = engine.store
        self.depth, self.fan_out, self.min_sim, self.strategy = depth, fan_out, min_sim, strategy
        self.exclude, self.max_nodes, self.seed_cap = exclude, max_nodes, seed_cap
        self.category: str | None = a.get("category")
        self.topic: str | None = a.get("topic")
        self.dedup: bool = bool(a.get("dedup_by_path", False))
        self.min_quality = engine.config.quality_filter.effective
        self.truncation: list[dict[str, Any]] = []
        self.knn_queries = 0
        self.places: dict[
            int, tuple[str, float, str | None, str | None]
        ] = {}  # chunk id: path, quality, category, topic
        self.places_read = 0  # chunks whose place was read: each at most once a walk

    def _truncate(self, reason: str, limit: int, detail: str) -> None:
        if not any(t["reason"] == reason for t in self.truncation):
            self.truncation.append({"reason": reason, "limit": limit, "detail": detail})

    def _budget(self) -> None:
        raise_it = (
            f"max_nodes is already at its ceiling of {s.GRAPH_MAX_NODES}, so a larger graph is not available"
            if self.max_nodes >= s.GRAPH_MAX_NODES
            else f"raise max_nodes (ceiling {s.GRAPH_MAX_NODES})"
        )
        self._truncate(
            "node_budget",
            self.max_nodes,
            f"the graph hit its node budget of {self.max_nodes}; the walk stopped before the frontier was "
            f"exhausted. To get more nodes, {raise_it}. To spend the budget on depth instead of breadth, use "
            'seed_strategy "centroid" or lower max_seed_chunks / fan_out. To get fewer but more relevant '
            "nodes, raise min_similarity, set dedup_by_path, or use the category / topic / exclude_paths filters.",
        )

    @staticmethod
    def _node(node_id: int, parent: int | None, depth: int, score: float, row: CandidateRow) -> dict[str, Any]:
        snippet = row.content if len(row.content) <= 200 else row.content[:200] + "…"
        return {
            "node_id": node_id,
            "parent_id": parent,
            "depth": depth,
            "chunk_id": row.chunk_id,
            "score": round(float(score), 6),
            "path": row.path,
            "heading": row.heading,
            "title": row.title,
            "topic": row.topic,
            "snippet": snippet,
        }

    def run(self, start: str) -> dict[str, Any]:
        import numpy as np

        t0 = time.monotonic()
        conn = self.store.conn()
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.path = ? "
                "ORDER BY c.chunk_index LIMIT ?",
                (start, self.seed_cap + 1),
            )
        ]
        if not ids:
            return error(
                f"get_connection_graph failed: document not found (no chunks for path): {start}. Call "
                "rebuild_index to (re)index the knowledge base."
            )
        if len(ids) > self.seed_cap:
            ids = ids[: self.seed_cap]
            self._truncate(
                "seed_chunks",
                self.seed_cap,
                f"the start document has more than {self.seed_cap} chunks; only its first {self.seed_cap} were "
                "used as seeds. Raise max_seed_chunks to cover more of it.",
            )
        vectors = self.engine.chunk_vectors(ids)
        rows = self.store.rows_by_ids(ids)
        seeds = [(cid, vectors[cid], rows[cid]) for cid in ids if cid in vectors and cid in rows]
        if not seeds:
            return error(
                f"get_connection_graph failed: the chunks of {start} have no vectors yet (the index is still "
                "embedding them); try again shortly"
            )
        visited = {cid for cid, _v, _r in seeds} if self.strategy == "centroid" else set()
        visited_paths = {start, *self.exclude}
        nodes: list[dict[str, Any]] = []
        queue: deque[tuple[int, np.ndarray, int]] = deque()
        seeds_used = 0
        if self.strategy == "all_chunks":
            for cid, vec, row in seeds:
                if len(nodes) >= self.max_nodes:
                    self._budget()
                    break
                nodes.append(self._node(len(nodes), None, 0, 1.0, row))
                visited.add(cid)
                queue.append((len(nodes) - 1, vec, 0))
                seeds_used += 1
        elif self.max_nodes == 0:
            self._budget()
        else:
            centroid = np.mean(np.stack([v for _c, v, _r in seeds]), axis=0).astype(np.float32)
            norm = float(np.linalg.norm(centroid))
            if norm > 0:
                centroid /= norm
            nodes.append(self._node(0, None, 0, 1.0, seeds[0][2]))
            queue.append((0, centroid, 0))
            seeds_used = len(seeds)
        reached = 0
        while queue and self.fan_out > 0:
            parent, vec, depth = queue.popleft()
            if depth >= self.depth:
                continue
            if len(nodes) >= self.max_nodes:
                self._budget()
                continue
            added = 0
            near = self._neighbours(vec, max(self.fan_out * 2, self.fan_out))
            # Whole rows only for the neighbours that can become nodes: near a huge note, most of the
            # nearest chunks are its own (the start, already visited) and cost no more than their path.
            rows = self.store.rows_by_ids(
                [
                    c
                    for c, d, p in near
                    if c not in visited and p not in visited_paths and _similarity(d) >= self.min_sim
                ]
            )
            for cid, dist, path in near:
                if added >= self.fan_out:
                    break
                if cid in visited or path in visited_paths:
                    continue
                sim = _similarity(dist)
                if sim < self.min_sim:
                    continue
                found = rows.get(cid)
                if found is None:  # deleted since the KNN
                    continue
                if len(nodes) >= self.max_nodes:
                    self._budget()
                    break
                visited.add(cid)
                if self.dedup:
                    visited_paths.add(found.path)
                nxt = self.store.embeddings_for([cid]).get(cid)
                if nxt is None:
                    continue
                reached = max(reached, depth + 1)
                nodes.append(self._node(len(nodes), parent, depth + 1, sim, found))
                queue.append((len(nodes) - 1, nxt, depth + 1))
                added += 1
        return {
            "start_path": start,
            "truncated": bool(self.truncation),
            "truncation": self.truncation,
            "nodes": nodes,
            "stats": {
                "total_nodes": len(nodes),
                "max_depth_reached": reached,
                "knn_queries": self.knn_queries,
                "duration_ms": int((time.monotonic() - t0) * 1000),
                "seeds_used": seeds_used,
            },
        }

    def _neighbours(self, vec: np.ndarray, k: int) -> list[tuple[int, float, str]]:
        """Up to `k` nearest chunks passing the category / topic / quality filters, nearest first, as
        (chunk id, distance, document path): judged on those columns alone, never on whole rows."""
        filtered = self.category is not None or self.topic is not None or self.min_quality > 0
        fetch = min(k * 10 if filtered else k, 4096)
        self.knn_queries += 1
        conn = self.store.conn()
        hits = self.engine.nearest_chunks(vec, fetch)
        places = self.places
        ids = [h[0] for h in hits if h[0] not in places]  # a huge note's chunks come back for every seed
        self.places_read += len(ids)
        for r in conn.execute(
            "SELECT c.id, d.path, c.quality_score, d.category, d.topic FROM chunks c "
            f"JOIN documents d ON d.id = c.document_id WHERE c.id IN ({','.join('?' * len(ids))})",
            ids,
        ):
            places[r[0]] = r[1:]
        out = []
        for cid, dist in hits:
            place = places.get(cid)
            if place is None:
                continue
            path, quality, category, topic = place
            if self.min_quality > 0 and quality < self.min_quality:
                continue
            if self.category is not None and category != self.category:
                continue
            if self.topic is not None and topic != self.topic:
                continue
            out.append((cid, float(dist), path))
            if len(out) >= k:
                break
        return out


def _similarity(distance: float) -> float:
    """Cosine similarity from the L2 distance of unit vectors, clamped to [0, 1]."""
    return min(max(1.0 - distance * distance / 2.0, 0.0), 1.0)
