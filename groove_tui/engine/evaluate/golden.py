"""Golden files: parsing (with line numbers in every error), judging and writing them back (reference:
groove-behaviour.md §I.1).

Grades and grade-0 judgments are our extension. groove rejects unknown keys, so they are written as YAML
comments (`- path: "a.md"  # grade: 3`, `# judged-0: {"path": "b.md", "heading": null}`), which groove's
parser never sees.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

GOLDEN_MAX_BYTES = 1024 * 1024
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
        queries = (*self.queries, new) if old is None else tuple(new if x is old else x for x in self.queries)
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
    return norm_heading(a_heading) == norm_heading(b_heading)


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
                raise self.error(k, f"unknown key {shown!r} in {what} (allowed: {', '.join(allowed)})", str(shown))
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
                return str(node.value)
        raise self.error(node, f"{key!r} must be a string, found {_kind(node)}", key)

    def sequence(self, node: yaml.Node, key: str, *, optional: bool = False) -> list[yaml.Node] | None:
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        if optional and isinstance(node, yaml.ScalarNode) and node.tag == _TAG_NULL:
            return None
        raise self.error(node, f"{key!r} must be a list, found {_kind(node)}", key)

    # ---------------------------------------------------------------- structure

    def parse(self) -> GoldenSet:
        top = self.mapping(self.root, "the golden file", ("defaults", "queries"))
        defaults = self.defaults(top["defaults"][1]) if "defaults" in top else None
        seq = self.sequence(self.required(top, self.root, "the golden file", "queries"), "queries") or []
        ends = [n.start_mark.line for n in seq[1:]] + ([len(self.lines)] if seq else [])  # where each query ends
        queries = tuple(self.query(n, end) for n, end in zip(seq, ends, strict=True))
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
        for q, node in zip(queries, nodes, strict=True):
            seen = first.get(q.id)
            if seen is None:
                first[q.id] = (q, node)
                continue
            was, was_node = seen
            written = [
                ("id" in {k.value for k, _ in n.value if isinstance(k, yaml.ScalarNode)}) for n in (was_node, node)
            ]
            if all(written):
                how = "give one of them another id"
            elif not any(written):
                how = (
                    f"neither has an `id:`, so both take the first {DEFAULT_ID_CHARS} characters of their query "
                    f"as their id; give one of them an `id:`"
                )
            else:
                how = (
                    "one has no `id:` and takes the first characters of its query as its id; give it an `id:` "
                    "of its own"
                )
            raise GoldenError(
                self.source,
                q.line,
                f"duplicate query id {q.id!r}: the queries at lines {was.line} and {q.line} both have it; {how}",
                "id",
            )

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
        grade: int | None
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
    atomic_write(Path(path), data)
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
    return code < 0x20 or 0x7F <= code <= 0x9F or code in (0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF)


def validate_query(text: str) -> None:
    """Refuse what search would refuse (exclusion-only queries, over-long queries): a load error."""
    from groove_tui.engine.analysis.query import parse_query

    parse_query(text)


def trim_ws(s: str) -> str:
    return s.strip(_WHITE_SPACE)


def norm_heading(s: str) -> str:
    return trim_ws(s.lower())


def atomic_write(path: Path, data: bytes) -> None:
    """Write beside the target, fsync, then os.replace: readers see the old or the new file, never half."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
