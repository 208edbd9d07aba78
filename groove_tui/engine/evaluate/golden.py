"""Evaluation against a golden file: the pure parts (reference: groove-behaviour.md §I).

Golden YAML parsing and writing, the §I.2 metrics, the §I.4 fingerprint, history store, regression check
and corpus digest. The runner that calls `Engine.search` is a thin loop over this API:

    golden = load_golden(path, validate_query=check)          # check raises on exclusion-only queries
    ks = normalise_k_values(cfg.eval.k_values); limit = eval_limit(ks)
    fp = ConfigFingerprint.from_settings(cfg, params, model=..., limit=limit, k_values=ks,
                                         golden_hash=golden.sha256, context_static=...)
    results = []
    for q in golden.queries:
        top = ranked_hits(engine.search(q.query, params).results)
        results.append(QueryResult(q, top, evaluate_query(q, top, ks)))
    agg = aggregate([r.metrics for r in results])
    store = HistoryStore(history_path_for(kb), cfg.eval.history_size)
    cmp = compare(store.latest(), fp, agg, cfg.eval.regression_threshold)
    store.append(make_run(fp, corpus, results, agg))

Grades and grade-0 judgments are our extension. groove rejects unknown keys, so they are written as YAML
comments (`- path: "a.md"  # grade: 3`, `# judged-0: {"path": "b.md", "heading": null}`), which groove's
parser never sees.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import stat
import struct
import tempfile
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

import yaml

if TYPE_CHECKING:
    from groove_tui.settings.config import Config
    from groove_tui.engine.types import SearchParams

log = logging.getLogger(__name__)

METRIC_VERSION = 2
FTS_QUERY_VERSION = 3  # v1.1.0 exclusion syntax
GOLDEN_MAX_BYTES = 1024 * 1024
HISTORY_MAX_BYTES = 64 * 1024 * 1024
K_MAX = 1000
DEFAULT_ID_CHARS = 32

# Rust's `str::trim` strips Unicode White_Space; Python's strip() also strips U+001C..U+001F.
_WHITE_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

Result = tuple[str, "str | None"]  # (path, heading) of one ranked hit


# ================================================================ golden: data


class GoldenError(ValueError):
    """A golden file is unusable; the message names the file, the line and the offending key."""

    def __init__(self, source: str, line: int | None, message: str, key: str | None = None) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")
        self.source = source
        self.line = line
        self.key = key


@dataclass(frozen=True, slots=True)
class Expected:
    path: str
    heading: str | None = None
    grade: int | None = None  # ours, 0..3; None = relevant, ungraded (groove's binary relevance)


@dataclass(frozen=True, slots=True)
class GoldenQuery:
    id: str
    query: str
    expected: tuple[Expected, ...] = ()
    judged_irrelevant: tuple[tuple[str, str | None], ...] = ()  # ours: grade-0 (path, heading) judgments
    tags: tuple[str, ...] = ()  # accepted and ignored, kept so a save does not lose them
    line: int | None = field(default=None, compare=False)  # 1-based, for messages


@dataclass(frozen=True, slots=True)
class GoldenDefaults:
    """`defaults: {limit, rerank}`: accepted and ignored like groove does, kept for saving."""

    limit: int | None = None
    rerank: bool | None = None


@dataclass(frozen=True, slots=True)
class GoldenSet:
    queries: tuple[GoldenQuery, ...] = ()
    source: str | None = None
    sha256: str | None = None  # of the file's bytes: the fingerprint's golden_hash
    defaults: GoldenDefaults | None = None
    header: tuple[str, ...] = ()  # leading comment lines, rewritten on save
    groove_compatible: bool = True  # False if the file used a `grade:` key groove would reject

    def find(self, query_text: str) -> GoldenQuery | None:
        return next((q for q in self.queries if q.query == query_text), None)

    def _free_id(self, wanted: str) -> str:
        return _free_id_in(self.queries, wanted)

    def with_judgment(self, query_text: str, path: str, heading: str | None, grade: int) -> GoldenSet:
        """Record one judgment: grade >= 1 makes (path, heading) expected, grade 0 judged irrelevant."""
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 3:
            raise ValueError(f"grade {grade!r} is invalid: expected an integer 0..3")
        old = self.find(query_text)
        q = old or GoldenQuery(id=self._free_id(default_query_id(query_text)), query=query_text)
        new = _judge(q, path, heading, grade)
        if old is None:
            queries = (*self.queries, new)
        else:
            queries = tuple(new if x is old else x for x in self.queries)
        return replace(self, queries=queries, sha256=None)  # no longer the file's bytes; save_golden gives the new hash


def _free_id_in(queries: tuple[GoldenQuery, ...], wanted: str) -> str:
    taken = {q.id for q in queries}
    n = 2
    qid = wanted
    while qid in taken:  # ids are unique in a golden file (a second one would not load)
        qid = f"{wanted} ({n})"
        n += 1
    return qid


def default_query_id(query: str) -> str:
    return query[:DEFAULT_ID_CHARS]


def _same_target(a_path: str, a_heading: str | None, b_path: str, b_heading: str | None) -> bool:
    if a_path != b_path:
        return False
    if a_heading is None or b_heading is None:
        return a_heading is b_heading
    return _norm_heading(a_heading) == _norm_heading(b_heading)


def _judge(q: GoldenQuery, path: str, heading: str | None, grade: int) -> GoldenQuery:
    judged = tuple(j for j in q.judged_irrelevant if not _same_target(j[0], j[1], path, heading))
    if grade == 0:
        expected = tuple(e for e in q.expected if not _same_target(e.path, e.heading, path, heading))
        return replace(q, expected=expected, judged_irrelevant=(*judged, (path, heading)))
    if any(_same_target(e.path, e.heading, path, heading) for e in q.expected):
        expected = tuple(
            replace(e, grade=grade) if _same_target(e.path, e.heading, path, heading) else e for e in q.expected
        )
    else:
        expected = (*q.expected, Expected(path, heading, grade))
    return replace(q, expected=expected, judged_irrelevant=judged)


# ================================================================ golden: reading


def load_golden(
    path: str | os.PathLike[str],
    validate_query: Callable[[str], None] | None = None,
    *,
    strict: bool = False,
) -> GoldenSet:
    """Read and validate a golden file (max 1 MiB). `validate_query` raises for a query groove refuses
    (exclusion-only, §C.7); its error becomes a GoldenError naming the query id and line. `strict`
    rejects our `grade:` key too, i.e. accepts exactly what groove accepts."""
    p = Path(path)
    source = str(p)
    try:
        with p.open("rb") as fh:
            data = fh.read(GOLDEN_MAX_BYTES + 1)
    except OSError as exc:
        raise GoldenError(source, None, f"cannot read golden file: {exc.strerror or exc}") from exc
    if len(data) > GOLDEN_MAX_BYTES:
        raise GoldenError(source, None, f"golden file is larger than {GOLDEN_MAX_BYTES} bytes (1 MiB)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GoldenError(source, _line_of_byte(data, exc.start), "golden file is not valid UTF-8") from exc
    golden = parse_golden(text, source=source, validate_query=validate_query, strict=strict)
    return replace(golden, sha256=hashlib.sha256(data).hexdigest())


def parse_golden(
    text: str,
    source: str = "<golden>",
    validate_query: Callable[[str], None] | None = None,
    *,
    strict: bool = False,
) -> GoldenSet:
    """Parse golden YAML text (see `load_golden`). `sha256` is that of the UTF-8 text."""
    text = text.removeprefix("\ufeff")
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise GoldenError(source, mark.line + 1 if mark else None, f"invalid YAML: {exc.problem or exc}") from exc
    except yaml.reader.ReaderError as exc:  # a non-printable character: a position, not a mark
        line = len(_BREAKS.findall(text, 0, exc.position)) + 1
        raise GoldenError(source, line, f"invalid YAML: {exc.reason} (character {exc.character!r})") from exc
    except yaml.YAMLError as exc:
        raise GoldenError(source, None, f"invalid YAML: {exc}") from exc
    if root is None:
        raise GoldenError(source, 1, "empty golden file: expected a mapping with a 'queries' list", "queries")
    parser = _GoldenParser(source, text, root, validate_query, strict)
    return replace(parser.parse(), sha256=hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # both report the same marks; C is 8x faster
_BREAKS = re.compile(r"\r\n|[\r\n\x85\u2028\u2029]")  # YAML 1.1 line breaks, which is how marks count lines
_GRADE = re.compile(r"#.*?\bgrade:\s*([^\s,;]+)")
_JUDGED = re.compile(r"^\s*#\s*judged-0:\s*(.*?)\s*$")
_MARKER = re.compile(r"#\s*(grade|judged-0):")
_TAG_NULL = "tag:yaml.org,2002:null"
_TAG_INT = "tag:yaml.org,2002:int"
_TAG_BOOL = "tag:yaml.org,2002:bool"


def _line_of_byte(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


class _GoldenParser:
    """Walks the composed node tree: every mapping checks its keys, every error carries a line."""

    def __init__(
        self,
        source: str,
        text: str,
        root: yaml.Node,
        validate_query: Callable[[str], None] | None,
        strict: bool,
    ) -> None:
        self.source = source
        self.lines = _BREAKS.split(text)
        self.root = root
        self.validate_query = validate_query
        self.strict = strict
        self.used_grade_key = False
        self.comments = _comment_tails(self.lines, root)

    # ---------------------------------------------------------------- helpers

    def error(self, node: yaml.Node | None, message: str, key: str | None = None) -> GoldenError:
        return GoldenError(self.source, node.start_mark.line + 1 if node else None, message, key)

    def mapping(self, node: yaml.Node, what: str, allowed: tuple[str, ...]) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, f"{what}: expected a mapping, found {_kind(node)}")
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for k, v in node.value:
            name = k.value if isinstance(k, yaml.ScalarNode) else None
            if name is None or name not in allowed:
                shown = name if name is not None else _kind(k)
                raise self.error(
                    k, f"unknown key {shown!r} in {what} (allowed: {', '.join(allowed)})", str(shown)
                )
            if name in out:
                raise self.error(k, f"duplicate key {name!r} in {what}", name)
            out[name] = (k, v)
        return out

    def required(
        self, keys: Mapping[str, tuple[yaml.Node, yaml.Node]], node: yaml.Node, what: str, key: str
    ) -> yaml.Node:
        if key not in keys:
            raise self.error(node, f"{what}: missing required key {key!r}", key)
        return keys[key][1]

    def string(self, node: yaml.Node, key: str, *, optional: bool = False) -> str | None:
        # serde deserialises any plain scalar into a String field (`id: 0` is "0"), so take the raw text
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _TAG_NULL and optional:
                return None
            if node.tag != _TAG_NULL:
                return node.value
        raise self.error(node, f"{key!r} must be a string, found {_kind(node)}", key)

    def sequence(self, node: yaml.Node, key: str, *, optional: bool = False) -> list[yaml.Node] | None:
        if isinstance(node, yaml.SequenceNode):
            return node.value
        if optional and isinstance(node, yaml.ScalarNode) and node.tag == _TAG_NULL:
            return None
        raise self.error(node, f"{key!r} must be a list, found {_kind(node)}", key)

    # ---------------------------------------------------------------- structure

    def parse(self) -> GoldenSet:
        top = self.mapping(self.root, "the golden file", ("defaults", "queries"))
        defaults = self.defaults(top["defaults"][1]) if "defaults" in top else None
        seq = self.sequence(self.required(top, self.root, "the golden file", "queries"), "queries") or []
        ends = [n.start_mark.line for n in seq[1:]] + [len(self.lines)]
        queries = tuple(self.query(n, end) for n, end in zip(seq, ends))
        self.unique_ids(queries, seq)
        return GoldenSet(
            queries=queries,
            source=self.source,
            defaults=defaults,
            header=self.header(),
            groove_compatible=not self.used_grade_key,
        )

    def unique_ids(self, queries: tuple[GoldenQuery, ...], nodes: list[yaml.Node]) -> None:
        """Every query id once: results, history and comparisons are keyed by it, so a second query with
        the same id would be scored twice under one name (or hide the other)."""
        first: dict[str, tuple[GoldenQuery, yaml.Node]] = {}
        for q, node in zip(queries, nodes):
            seen = first.get(q.id)
            if seen is None:
                first[q.id] = (q, node)
                continue
            was, was_node = seen
            written = [("id" in {k.value for k, _ in n.value if isinstance(k, yaml.ScalarNode)}) for n in (was_node, node)]
            if all(written):
                how = "give one of them another id"
            elif not any(written):
                how = (f"neither has an `id:`, so both take the first {DEFAULT_ID_CHARS} characters of their query "
                       f"as their id; give one of them an `id:`")
            else:
                how = ("one has no `id:` and takes the first characters of its query as its id; give it an `id:` "
                       "of its own")
            raise GoldenError(self.source, q.line,
                              f"duplicate query id {q.id!r}: the queries at lines {was.line} and {q.line} both have "
                              f"it; {how}", "id")

    def defaults(self, node: yaml.Node) -> GoldenDefaults | None:
        if isinstance(node, yaml.ScalarNode) and node.tag == _TAG_NULL:
            return None
        keys = self.mapping(node, "defaults", ("limit", "rerank"))
        limit = rerank = None
        if "limit" in keys:
            v = keys["limit"][1]
            if not (isinstance(v, yaml.ScalarNode) and v.tag in (_TAG_INT, _TAG_NULL)):
                raise self.error(v, f"'limit' must be a non-negative integer, found {_kind(v)}", "limit")
            if v.tag == _TAG_INT:
                limit = yaml.safe_load(v.value)
                if limit < 0:
                    raise self.error(v, f"'limit' must be a non-negative integer, found {limit}", "limit")
        if "rerank" in keys:
            v = keys["rerank"][1]
            if not (isinstance(v, yaml.ScalarNode) and v.tag in (_TAG_BOOL, _TAG_NULL)):
                raise self.error(v, f"'rerank' must be true or false, found {_kind(v)}", "rerank")
            rerank = None if v.tag == _TAG_NULL else bool(yaml.safe_load(v.value))
        return GoldenDefaults(limit=limit, rerank=rerank)

    def query(self, node: yaml.Node, end_line: int) -> GoldenQuery:
        keys = self.mapping(node, "query", ("id", "query", "expected", "tags"))
        line = node.start_mark.line + 1
        text = self.string(self.required(keys, node, "query", "query"), "query")
        assert text is not None
        qid = self.string(keys["id"][1], "id", optional=True) if "id" in keys else None
        qid = default_query_id(text) if qid is None else qid
        if self.validate_query is not None:
            try:
                self.validate_query(text)
            except Exception as exc:  # the caller's check: any refusal becomes a load error
                raise GoldenError(self.source, line, f"query {qid!r}: {exc}", "query") from exc
        entries = self.sequence(self.required(keys, node, "query", "expected"), "expected") or []
        tags = self.tags(keys["tags"][1]) if "tags" in keys else ()
        return GoldenQuery(
            id=qid,
            query=text,
            expected=tuple(self.expected(e) for e in entries),
            judged_irrelevant=self.judged(node.start_mark.line, end_line),
            tags=tags,
            line=line,
        )

    def tags(self, node: yaml.Node) -> tuple[str, ...]:
        items = self.sequence(node, "tags", optional=True) or []
        return tuple(self.string(t, "tags") or "" for t in items)

    def expected(self, node: yaml.Node) -> Expected:
        allowed = ("path", "heading") if self.strict else ("path", "heading", "grade")
        keys = self.mapping(node, "expected entry", allowed)
        path = self.string(self.required(keys, node, "expected entry", "path"), "path")
        assert path is not None
        heading = self.string(keys["heading"][1], "heading", optional=True) if "heading" in keys else None
        if "grade" in keys:
            self.used_grade_key = True
            g = keys["grade"][1]
            grade = self.grade(g.value if isinstance(g, yaml.ScalarNode) else _kind(g), g.start_mark.line)
        else:
            last = max(v.end_mark.line for _, v in keys.values())
            grade = self.comment_grade(node.start_mark.line, last)
        return Expected(path=path, heading=heading, grade=grade)

    # ---------------------------------------------------------------- our comment extension

    def grade(self, raw: str, line0: int) -> int:
        if not re.fullmatch(r"[0-3]", raw):
            raise GoldenError(self.source, line0 + 1, f"grade {raw!r} is invalid: expected an integer 0..3", "grade")
        return int(raw)

    def comment_grade(self, first: int, last: int) -> int | None:
        for line0 in range(first, last + 1):
            m = _GRADE.match(self.comments.get(line0, ""))
            if m:
                return self.grade(m.group(1), line0)
        return None

    def judged(self, first: int, end: int) -> tuple[tuple[str, str | None], ...]:
        out: list[tuple[str, str | None]] = []
        for line0 in range(first, end):
            comment = self.comments.get(line0, "")
            m = _JUDGED.match(comment) if comment.startswith("#") and self._whole_line(line0) else None
            if m:
                target = self.judged_target(m.group(1), line0)
                if target not in out:
                    out.append(target)
        return tuple(out)

    def judged_target(self, payload: str, line0: int) -> tuple[str, str | None]:
        if payload.startswith("{"):
            try:
                obj = json.loads(payload)
            except ValueError:
                obj = None
            if (
                isinstance(obj, dict)
                and isinstance(obj.get("path"), str)
                and (obj.get("heading") is None or isinstance(obj.get("heading"), str))
            ):
                return obj["path"], obj.get("heading")
            raise GoldenError(
                self.source, line0 + 1, 'judged-0 comment: expected {"path": ..., "heading": ...}', "judged-0"
            )
        path, sep, heading = payload.partition("#")  # the short hand-written form `path#heading`
        if not path:
            raise GoldenError(self.source, line0 + 1, "judged-0 comment without a path", "judged-0")
        return path, heading if sep else None

    def _whole_line(self, line0: int) -> bool:
        return self.lines[line0].lstrip(_WHITE_SPACE).startswith("#")

    def header(self) -> tuple[str, ...]:
        out: list[str] = []
        for line in self.lines:
            stripped = line.strip(_WHITE_SPACE)
            if stripped and not stripped.startswith("#"):
                break
            if stripped and not _MARKER.match(stripped):
                out.append(stripped)
        return tuple(out)


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if node.tag == _TAG_NULL:
        return "null"
    return f"{node.tag.rsplit(':', 1)[-1]} {node.value!r}"


def _comment_tails(lines: list[str], root: yaml.Node) -> dict[int, str]:
    """Line (0-based) -> the comment at its end. YAML parsers drop comments, so find them as the text
    after the last scalar/flow node that ends on the line; lines inside a multi-line scalar have none."""
    end_col: dict[int, int] = {}
    covered: set[int] = set()
    for node in _walk(root):
        if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
            s, e = node.start_mark, node.end_mark
            covered.update(range(s.line, e.line))
            end_col[e.line] = max(end_col.get(e.line, 0), e.column)
    out: dict[int, str] = {}
    for i, line in enumerate(lines):
        if i in covered:
            continue
        tail = line[end_col.get(i, 0) :].lstrip(_WHITE_SPACE)
        if tail.startswith("#"):
            out[i] = tail
    return out


def _walk(root: yaml.Node) -> Iterator[yaml.Node]:
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:  # aliases share nodes
            continue
        seen.add(id(node))
        yield node
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                stack += (k, v)
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value


# ================================================================ golden: writing


def dump_golden(golden: GoldenSet | Iterable[GoldenQuery]) -> str:
    """groove-compatible YAML: only groove's keys; grades and grade-0 judgments live in comments."""
    gs = golden if isinstance(golden, GoldenSet) else GoldenSet(queries=tuple(golden))
    out = [h if h.startswith("#") else f"# {h}" for h in gs.header]
    if gs.defaults is not None:
        d = gs.defaults
        items = ([f"limit: {d.limit}"] if d.limit is not None else []) + (
            [f"rerank: {'true' if d.rerank else 'false'}"] if d.rerank is not None else []
        )
        out.append(f"defaults: {{{', '.join(items)}}}")
    out.append("queries:" if gs.queries else "queries: []")
    for q in gs.queries:
        out += _dump_query(q)
    return "\n".join(out) + "\n"


def _dump_query(q: GoldenQuery) -> list[str]:
    out = [f"  - id: {_quote(q.id)}", f"    query: {_quote(q.query)}"]
    if q.tags:
        out.append(f"    tags: [{', '.join(_quote(t) for t in q.tags)}]")
    out.append("    expected:" if q.expected else "    expected: []")
    for e in q.expected:
        grade = f"  # grade: {e.grade}" if e.grade is not None else ""
        out.append(f"      - path: {_quote(e.path)}{grade}")
        if e.heading is not None:
            out.append(f"        heading: {_quote(e.heading)}")
    for path, heading in q.judged_irrelevant:
        shown = _quote(heading) if heading is not None else "null"
        out.append(f'    # judged-0: {{"path": {_quote(path)}, "heading": {shown}}}')
    return out


def save_golden(path: str | os.PathLike[str], golden: GoldenSet | Iterable[GoldenQuery]) -> str:
    """Write atomically (tmp + os.replace); returns the SHA-256 of the bytes written (the new golden_hash)."""
    try:
        data = dump_golden(golden).encode("utf-8")
    except ValueError as exc:
        raise GoldenError(str(path), None, str(exc)) from exc
    if len(data) > GOLDEN_MAX_BYTES:
        raise GoldenError(
            str(path), None, f"refusing to write {len(data)} bytes: groove rejects golden files over 1 MiB"
        )
    _atomic_write(Path(path), data)
    return hashlib.sha256(data).hexdigest()


def _quote(s: str) -> str:
    """A double-quoted scalar that is valid YAML and valid JSON alike, so comments can carry it too:
    non-printable characters and YAML's extra line breaks (NEL, LS, PS) are escaped."""
    parts = ['"']
    for ch in s:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            parts.append(esc)
        elif 0xD800 <= ord(ch) <= 0xDFFF:  # e.g. a surrogate-escaped file name: not Unicode, no YAML form
            raise ValueError(f"{s!r} contains a lone surrogate, which a golden file cannot hold")
        elif _needs_escape(ord(ch)):
            parts.append(f"\\u{ord(ch):04x}")
        else:
            parts.append(ch)
    parts.append('"')
    return "".join(parts)


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


def _needs_escape(code: int) -> bool:
    return (
        code < 0x20
        or 0x7F <= code <= 0x9F
        or code in (0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF)
    )


# ================================================================ metrics (§I.2)


def _trim(s: str) -> str:
    return s.strip(_WHITE_SPACE)


def _norm_heading(s: str) -> str:
    return _trim(s.lower())


def is_hit(expected: Expected, path: str, heading: str | None) -> bool:
    """Path exact; an expected heading needs a hit heading equal after lower-case + outer trim."""
    if expected.path != path:
        return False
    if expected.heading is None:
        return True
    return heading is not None and _norm_heading(expected.heading) == _norm_heading(heading)


def recall_at_k(expected: Sequence[Expected], results: Sequence[Result], k: int) -> float:
    """Share of expected entries (duplicates each count) hit by some result among the first k."""
    if not expected or not results or k <= 0:
        return 0.0
    top = results[:k]
    found = sum(1 for e in expected if any(is_hit(e, p, h) for p, h in top))
    return found / len(expected)


def reciprocal_rank(expected: Sequence[Expected], results: Sequence[Result]) -> float:
    for rank, (p, h) in enumerate(results, start=1):
        if any(is_hit(e, p, h) for e in expected):
            return 1.0 / rank
    return 0.0


def ndcg_at_k(expected: Sequence[Expected], results: Sequence[Result], k: int) -> float:
    """Binary-gain nDCG with groove's greedy consumption: each result credits at most one unconsumed
    expected entry (heading-specified first, then declaration order); each entry is credited once."""
    if not expected or not results or k <= 0:
        return 0.0
    # heading-specified entries first, stable so ties keep declaration order
    order = sorted(range(len(expected)), key=lambda i: expected[i].heading is None)
    consumed = [False] * len(expected)
    dcg = 0.0
    for rank, (p, h) in enumerate(results[:k], start=1):
        pick = next((i for i in order if not consumed[i] and is_hit(expected[i], p, h)), None)
        if pick is not None:
            consumed[pick] = True
            dcg += 1.0 / math.log2(rank + 1)
    idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(expected), k) + 1))
    return dcg / idcg


@dataclass(frozen=True, slots=True)
class QueryMetrics:
    recall_at_k: dict[int, float]
    reciprocal_rank: float
    ndcg_at_k: dict[int, float]
    expected_count: int  # queries with none are skipped in the means

    def to_json(self) -> dict[str, Any]:
        return {
            "recall_at_k": _by_k(self.recall_at_k),
            "reciprocal_rank": _finite(self.reciprocal_rank),
            "ndcg_at_k": _by_k(self.ndcg_at_k),
        }


@dataclass(frozen=True, slots=True)
class Aggregate:
    recall_at_k: dict[int, float]
    mrr: float
    ndcg_at_k: dict[int, float]
    query_count: int

    def to_json(self) -> dict[str, Any]:
        return {
            "recall_at_k": _by_k(self.recall_at_k),
            "mrr": _finite(self.mrr),
            "ndcg_at_k": _by_k(self.ndcg_at_k),
            "query_count": self.query_count,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Aggregate | None:
        """From a history record; None when it is not an aggregate. Unreadable numbers become NaN
        (serde writes NaN as null), which the regression check skips."""
        if not isinstance(obj, Mapping):
            return None
        try:
            return cls(
                recall_at_k=_k_map(obj.get("recall_at_k", {})),
                mrr=_num(obj.get("mrr")),
                ndcg_at_k=_k_map(obj.get("ndcg_at_k", {})),
                query_count=int(obj.get("query_count", 0)),
            )
        except (TypeError, ValueError):
            return None


def evaluate(expected: Sequence[Expected], results: Sequence[Result], k_values: Sequence[int]) -> QueryMetrics:
    return QueryMetrics(
        recall_at_k={k: recall_at_k(expected, results, k) for k in k_values},
        reciprocal_rank=reciprocal_rank(expected, results),
        ndcg_at_k={k: ndcg_at_k(expected, results, k) for k in k_values},
        expected_count=len(expected),
    )


def aggregate(per_query: Sequence[QueryMetrics], k_values: Sequence[int] | None = None) -> Aggregate:
    """Arithmetic means over queries with a non-empty expected list (0.0 when there are none)."""
    judged = [m for m in per_query if m.expected_count > 0]
    ks = list(k_values) if k_values is not None else sorted({k for m in per_query for k in m.recall_at_k})
    n = len(judged)

    def mean(values: Iterable[float]) -> float:
        return math.fsum(values) / n if n else 0.0

    return Aggregate(
        recall_at_k={k: mean(m.recall_at_k.get(k, 0.0) for m in judged) for k in ks},
        mrr=mean(m.reciprocal_rank for m in judged),
        ndcg_at_k={k: mean(m.ndcg_at_k.get(k, 0.0) for m in judged) for k in ks},
        query_count=n,
    )


def normalise_k_values(k_values: Iterable[int]) -> tuple[int, ...]:
    """Sorted, deduplicated, each capped at 1000 (§I.3)."""
    return tuple(sorted({min(int(k), K_MAX) for k in k_values}))


def eval_limit(k_values: Sequence[int], limit: int | None = None) -> int:
    """limit = max(max(k), --limit), capped at 1000 (§I.3)."""
    return min(max(max(k_values, default=0), limit or 0), K_MAX)


# ================================================================ per-query results (what the runner collects)


@dataclass(frozen=True, slots=True)
class RankedHit:
    rank: int  # 1-based
    path: str
    heading: str | None
    score: float

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "path": self.path, "heading": self.heading, "score": _finite(self.score)}


def ranked_hits(hits: Iterable[Any]) -> tuple[RankedHit, ...]:
    """From anything with .path, .heading and .score (e.g. SearchResponse.results), in rank order."""
    return tuple(RankedHit(i, h.path, h.heading, float(h.score)) for i, h in enumerate(hits, start=1))


def evaluate_query(query: GoldenQuery, hits: Sequence[RankedHit], k_values: Sequence[int]) -> QueryMetrics:
    return evaluate(query.expected, [(h.path, h.heading) for h in hits], k_values)


@dataclass(frozen=True, slots=True)
class QueryResult:
    query: GoldenQuery
    top_k: tuple[RankedHit, ...]
    metrics: QueryMetrics

    def to_json(self, max_k: int | None = None) -> dict[str, Any]:
        top = self.top_k if max_k is None else self.top_k[:max_k]
        return {
            "id": self.query.id,
            "query": self.query.query,
            "expected": [{"path": e.path, "heading": e.heading} for e in self.query.expected],
            "top_k": [h.to_json() for h in top],
            "metrics": self.metrics.to_json(),
        }


# ================================================================ fingerprint (§I.4)


@dataclass(frozen=True, slots=True)
class ConfigFingerprint:
    """Everything that makes two runs comparable. The corpus is reported beside it, never part of it."""

    model: str
    reranker: str | None
    limit: int
    k_values: tuple[int, ...]
    golden_hash: str
    metric_version: int = METRIC_VERSION
    fts_query_version: int = FTS_QUERY_VERSION
    mmr: tuple[float, float] | None = None  # (lambda, same_doc_penalty) when MMR is on
    parent_retriever: tuple[int, int] | None = None  # (whole_doc_threshold_tokens, max_expanded_tokens)
    fusion: tuple[tuple[str, float | str], ...] | None = None  # every fusion knob, when any differs from groove's
    context_static: bool = False  # the index was built in contextual (static) mode
    cjk_bigram: bool = False  # ours: the bigram leg changes ranking, so runs with it differ from groove's
    merge_parts: bool = False  # ours: split sections fused as one hit
    heading_first: bool = False  # ours: a query naming a heading or title ranks that section first

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model,
            "reranker": self.reranker,
            "limit": self.limit,
            "k_values": list(self.k_values),
            "golden_hash": self.golden_hash,
            "metric_version": self.metric_version,
            "fts_query_version": self.fts_query_version,
        }
        if self.mmr is not None:
            out["mmr"] = {"lambda": self.mmr[0], "same_doc_penalty": self.mmr[1]}
        if self.parent_retriever is not None:
            t, mx = self.parent_retriever
            out["parent_retriever"] = {"whole_doc_threshold_tokens": t, "max_expanded_tokens": mx}
        if self.fusion is not None:
            out["fusion"] = dict(self.fusion)
        if self.context_static:
            out["context"] = {"mode": "static"}
        if self.cjk_bigram:
            out["cjk_bigram"] = True
        if self.merge_parts:
            out["merge_parts"] = True
        if self.heading_first:
            out["heading_first"] = True
        return out

    @classmethod
    def from_settings(
        cls,
        config: Config,
        params: SearchParams,
        *,
        model: str,
        limit: int,
        k_values: Sequence[int],
        golden_hash: str,
        context_static: bool,
    ) -> ConfigFingerprint:
        """The fingerprint of an eval run with these per-call params over this config."""
        fusion = config.search.fusion
        if params.fusion is not None:
            fusion = replace(fusion, method=params.fusion)
        parent = config.search.parent_retriever
        return cls(
            model=model,
            reranker=params.reranker,
            limit=limit,
            k_values=tuple(k_values),
            golden_hash=golden_hash,
            mmr=(float(params.mmr_lambda), float(params.mmr_same_doc_penalty)) if params.mmr else None,
            parent_retriever=(parent.whole_doc_threshold_tokens, parent.max_expanded_tokens)
            if params.parent_retriever
            else None,
            fusion=None if fusion.is_groove() else _fusion_items(fusion),
            context_static=context_static,
            cjk_bigram=config.search.cjk_bigram,
            merge_parts=config.search.merge_parts,
            heading_first=config.search.heading_first,
        )


def _fusion_items(fusion: Any) -> tuple[tuple[str, float | str], ...]:
    return tuple(
        (f.name, v if isinstance(v := getattr(fusion, f.name), str) else float(v)) for f in fields(fusion)
    )


# ================================================================ corpus digest (§I.4)


def corpus_digest(rows: Iterable[tuple[str, int, str | None, str, str | None]]) -> str:
    """SHA-256 over (path, index, heading, content, context) of every chunk, fed in path/index order
    (the caller's ORDER BY). Length prefixes and null markers keep field boundaries unambiguous."""
    h = hashlib.sha256()
    for path, index, heading, content, context in rows:
        _feed(h, path)
        h.update(struct.pack("<q", index))
        _feed(h, heading)
        _feed(h, content)
        _feed(h, context)
    return h.hexdigest()


def _feed(h: Any, value: str | None) -> None:
    if value is None:
        h.update(b"\x00")
        return
    data = value.encode("utf-8", "surrogatepass")
    h.update(b"\x01" + struct.pack("<Q", len(data)) + data)


@dataclass(frozen=True, slots=True)
class CorpusInfo:
    documents: int
    chunks: int
    digest: str

    def to_json(self) -> dict[str, Any]:
        return {"documents": self.documents, "chunks": self.chunks, "digest": self.digest}


# ================================================================ run records and history (§I.4)


def rfc3339_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def make_run(
    fingerprint: ConfigFingerprint,
    corpus: CorpusInfo,
    per_query: Sequence[QueryResult],
    agg: Aggregate,
    timestamp: str | None = None,
) -> dict[str, Any]:
    """One history record; top_k keeps the first max(k) hits of each query."""
    max_k = max(fingerprint.k_values, default=None)
    return {
        "timestamp": timestamp or rfc3339_now(),
        "fingerprint": fingerprint.to_json(),
        "corpus": corpus.to_json(),
        "per_query": [r.to_json(max_k) for r in per_query],
        "aggregate": agg.to_json(),
    }


class HistoryError(RuntimeError):
    """The history file cannot be used safely (symlink, hard link, not a regular file, oversize)."""


def history_path_for(kb: str | os.PathLike[str]) -> Path:
    """`<user data dir>/eval-history/<kb key>.json`: never inside the KB (groove writes there; we don't)."""
    from groove_tui.settings.paths import index_dir_for, user_data_dir

    return user_data_dir() / "eval-history" / f"{index_dir_for(Path(kb), '/').name}.json"


class HistoryStore:
    """`{"runs": [newest, ...]}`, capped at `history_size` runs and `max_bytes`, written atomically."""

    def __init__(self, path: str | os.PathLike[str], history_size: int = 10, max_bytes: int = HISTORY_MAX_BYTES):
        self.path = Path(path)
        self.history_size = max(1, history_size)
        self.max_bytes = max_bytes
        self.warning: str | None = None  # set when an unparseable file was set aside

    def load(self) -> list[dict[str, Any]]:
        """The runs, newest first. Unparseable → [] with a warning (the next append replaces it)."""
        data = self._read()
        if data is None:
            return []
        try:
            obj = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            return self._fresh(f"unparseable ({exc})")
        runs = obj.get("runs") if isinstance(obj, dict) else None
        if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
            return self._fresh('not a {"runs": [...]} object')
        return runs

    def latest(self) -> dict[str, Any] | None:
        runs = self.load()
        return runs[0] if runs else None

    def append(self, run: Mapping[str, Any]) -> None:
        runs = [dict(run), *self.load()][: self.history_size]
        data = self._encode(runs)
        while len(data) > self.max_bytes and runs:
            runs.pop()  # oldest first
            data = self._encode(runs)
        if len(runs) == 0:
            self.warning = f"eval history {self.path}: one run exceeds {self.max_bytes} bytes; not saved"
            log.warning(self.warning)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(self.path, data)

    @staticmethod
    def _encode(runs: list[dict[str, Any]]) -> bytes:
        return json.dumps({"runs": runs}, ensure_ascii=False, indent=2, allow_nan=False).encode("utf-8")

    def _read(self) -> bytes | None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise HistoryError(f"eval history {self.path}: {exc.strerror or exc}") from exc
        if stat.S_ISLNK(st.st_mode):
            raise HistoryError(f"eval history {self.path} is a symlink; refusing to follow it")
        if not stat.S_ISREG(st.st_mode):
            raise HistoryError(f"eval history {self.path} is not a regular file")
        if st.st_nlink > 1:
            raise HistoryError(f"eval history {self.path} has {st.st_nlink} hard links; refusing to use it")
        if st.st_size > self.max_bytes:
            raise HistoryError(f"eval history {self.path} is larger than {self.max_bytes} bytes")
        try:
            with open(self.path, "rb") as fh:
                return fh.read(self.max_bytes + 1)
        except OSError as exc:
            raise HistoryError(f"eval history {self.path}: {exc.strerror or exc}") from exc

    def _fresh(self, why: str) -> list[dict[str, Any]]:
        self.warning = f"eval history {self.path} is {why}; starting a fresh history"
        log.warning(self.warning)
        return []


def _atomic_write(path: Path, data: bytes) -> None:
    """Write beside the target, fsync, then os.replace: readers see the old or the new file, never half."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ================================================================ comparison and regression (§I.4)


@dataclass(frozen=True, slots=True)
class Comparison:
    previous: Aggregate
    current: Aggregate
    previous_timestamp: str | None
    recall_delta: dict[int, float]  # now − prev; a k missing in prev counts as 0
    mrr_delta: float
    ndcg_delta: dict[int, float]
    threshold: float
    is_regression: bool


def compare(
    prev_run: Mapping[str, Any] | None,
    fingerprint: ConfigFingerprint,
    now: Aggregate,
    threshold: float,
) -> Comparison | None:
    """Compare with the most recent run, only if its whole fingerprint equals this run's."""
    if prev_run is None or prev_run.get("fingerprint") != fingerprint.to_json():
        return None
    prev = Aggregate.from_json(prev_run.get("aggregate"))
    if prev is None:
        return None
    ts = prev_run.get("timestamp")
    return Comparison(
        previous=prev,
        current=now,
        previous_timestamp=ts if isinstance(ts, str) else None,
        recall_delta={k: v - prev.recall_at_k.get(k, 0.0) for k, v in now.recall_at_k.items()},
        mrr_delta=now.mrr - prev.mrr,
        ndcg_delta={k: v - prev.ndcg_at_k.get(k, 0.0) for k, v in now.ndcg_at_k.items()},
        threshold=threshold,
        is_regression=is_regression(prev, now, threshold),
    )


def is_regression(prev: Aggregate, now: Aggregate, threshold: float) -> bool:
    """True iff some recall@k, MRR or nDCG@k dropped by more than `threshold`; non-finite values skip."""
    pairs = [(prev.recall_at_k.get(k, 0.0), v) for k, v in now.recall_at_k.items()]
    pairs.append((prev.mrr, now.mrr))
    pairs += [(prev.ndcg_at_k.get(k, 0.0), v) for k, v in now.ndcg_at_k.items()]
    return any(math.isfinite(p) and math.isfinite(n) and p - n > threshold for p, n in pairs)


@dataclass(frozen=True, slots=True)
class DeltaText:
    text: str  # "—", "↑0.012", "↓0.034" or "n/a"
    beyond_threshold: bool  # the UI colours these

    def __str__(self) -> str:
        return self.text


def format_delta(delta: float, threshold: float) -> DeltaText:
    if not math.isfinite(delta):
        return DeltaText("n/a", False)
    if abs(delta) < 1e-9:
        return DeltaText("—", False)
    return DeltaText(f"{'↑' if delta > 0 else '↓'}{abs(delta):.3f}", abs(delta) > threshold)


# ================================================================ small JSON helpers


def _by_k(values: Mapping[int, float]) -> dict[str, float | None]:
    return {str(k): _finite(v) for k, v in sorted(values.items())}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None  # JSON has no NaN; serde writes null too


def _num(x: Any) -> float:
    if x is None:
        return math.nan
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"not a number: {x!r}")
    return float(x)


def _k_map(obj: Any) -> dict[int, float]:
    if not isinstance(obj, Mapping):
        raise TypeError("not a mapping")
    return {int(k): _num(v) for k, v in obj.items()}


# ---------------------------------------------------------------- eval semantics shared by the CLI and the explorer


def validate_query(text: str) -> None:
    """Refuse what search would refuse (exclusion-only queries, over-long queries): a load error."""
    from groove_tui.engine.analysis.query import parse_query

    parse_query(text)


def eval_params(params: SearchParams, *, limit: int, legs: str, reranker_given: bool) -> SearchParams:
    """§I.3: no filters (min_quality 0), the reranker only if asked for on the command line."""
    return replace(
        params,
        limit=limit,
        path_globs=(),
        tags_any=(),
        tags_all=(),
        date_from=None,
        date_to=None,
        category=None,
        topic=None,
        min_quality=0.0,
        explain=False,
        legs=legs,  # type: ignore[arg-type]
        reranker=params.reranker if reranker_given else None,
    )
