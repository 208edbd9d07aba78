"""Document filters (groove §D.5): path globs, tags, dates, category, topic, quality.

Path globs follow Rust `globset` defaults, which groove uses: the glob is matched against the whole
KB-relative path, case-sensitively; `*` and `?` DO match `/`; `**` is recursive where it forms a whole
path component (`**/x`, `a/**`, `a/**/b`) and two plain stars elsewhere; `{a,b}` alternation (nested
allowed; empty alternatives are dropped, as globset does); `[...]`, `[!...]` and `[^...]` classes (no
escapes inside a class, `]` first is literal, `-` first or last is literal); a backslash escapes the next
character. Each glob is translated token by token like globset's own parser into one Python regex.
A list entry starting with `!` (stripped once) goes to the exclude set; a path passes iff (no include set
or an include glob matches) and no exclude glob matches.

One deliberate difference: globset matches bytes, so `?` or a class consumes one UTF-8 *byte* and can
never match a single Japanese character; here they match one character (identical for ASCII paths).

Dates compare as plain strings, exactly as groove does, so bounds are validated up front
(`validate_date`): groove silently filters everything with a malformed bound.
"""

from __future__ import annotations

import calendar
import math
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from groove_tui.engine.errors import ParamError

MAX_LIST_ENTRIES = 64
MAX_ENTRY_BYTES = 1024


class FilterError(ParamError):
    """A filter parameter is invalid; the message names the parameter and the value (a ParamError, so
    an EngineError and a ValueError like every other search parameter's)."""


# ---------------------------------------------------------------- globs

# Tokens, as globset's parser produces them
_ANY, _STAR, _RPREFIX, _RSUFFIX, _RMIDDLE = "any", "star", "rprefix", "rsuffix", "rmiddle"
Token = tuple[Any, ...]  # ("lit", c) | (_ANY,) | (_STAR,) | (_R*,) | ("class", negated, ranges) | ("alt", branches)


class _GlobSyntaxError(Exception):
    pass


class _GlobParser:
    """A port of globset's `Parser` (default options: backslash escapes on, empty alternates dropped)."""

    def __init__(self, glob: str) -> None:
        self.glob = glob
        self.i = 0
        self.prev: str | None = None
        self.cur: str | None = None
        self.branches: list[list[Token]] = [[]]
        self.alt_starts: list[int] = []  # index into branches where each open `{` began

    def parse(self) -> list[Token]:
        while (c := self.bump()) is not None:
            if c == "?":
                self.push((_ANY,))
            elif c == "*":
                self.parse_star()
            elif c == "[":
                self.parse_class()
            elif c == "{":
                self.alt_starts.append(len(self.branches))
                self.branches.append([])
            elif c == "}":
                self.pop_alternates()
            elif c == "," and self.alt_starts:
                self.branches.append([])
            elif c == "\\":
                escaped = self.bump()
                if escaped is None:
                    raise _GlobSyntaxError("dangling '\\'")
                self.push(("lit", escaped))
            else:
                self.push(("lit", c))
        if self.alt_starts:
            raise _GlobSyntaxError("unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)")
        return self.branches[0]

    def bump(self) -> str | None:
        self.prev = self.cur
        self.cur = self.glob[self.i] if self.i < len(self.glob) else None
        self.i += self.cur is not None
        return self.cur

    def peek(self) -> str | None:
        return self.glob[self.i] if self.i < len(self.glob) else None

    def push(self, tok: Token) -> None:
        self.branches[-1].append(tok)

    def pop_alternates(self) -> None:
        if not self.alt_starts:
            raise _GlobSyntaxError("unopened alternate group; missing '{' (maybe escape '}' with '[}]'?)")
        start = self.alt_starts.pop()
        alts = self.branches[start:]
        del self.branches[start:]
        self.push(("alt", alts))

    def parse_star(self) -> None:
        prev = self.prev
        if self.peek() != "*":
            self.push((_STAR,))
            return
        self.bump()
        if not self.branches[-1]:  # `**` at the start of the glob or of an alternative
            if self.peek() is not None and self.peek() != "/":
                self.push((_STAR,))
                self.push((_STAR,))
            else:
                self.push((_RPREFIX,))
                self.bump()  # the `/` (or the end)
            return
        in_alt = len(self.branches) > 1
        if prev != "/" and (not in_alt or prev not in (",", "{")):
            self.push((_STAR,))
            self.push((_STAR,))
            return
        nxt = self.peek()
        if nxt is None:
            self.bump()
            is_suffix = True
        elif nxt in (",", "}") and in_alt:
            is_suffix = True
        elif nxt == "/":
            self.bump()
            is_suffix = False
        else:
            self.push((_STAR,))
            self.push((_STAR,))
            return
        last = self.branches[-1].pop()  # the `/` before `**` (or a recursive token already there)
        if last[0] in (_RPREFIX, _RSUFFIX):
            self.push(last)
        else:
            self.push((_RSUFFIX,) if is_suffix else (_RMIDDLE,))

    def parse_class(self) -> None:
        negated = self.peek() in ("!", "^")
        if negated:
            self.bump()
        ranges: list[list[str]] = []
        first, in_range = True, False
        while True:
            c = self.bump()
            if c is None:
                raise _GlobSyntaxError("unclosed character class; missing ']'")
            if c == "]" and not first:
                break
            if c == "-" and not first:
                if in_range:
                    self.extend_range(ranges, "-")
                in_range = not in_range
            elif in_range:
                self.extend_range(ranges, c)
                in_range = False
            else:
                ranges.append([c, c])
            first = False
        if in_range:  # a trailing `-` is literal
            ranges.append(["-", "-"])
        self.push(("class", negated, tuple((lo, hi) for lo, hi in ranges)))

    @staticmethod
    def extend_range(ranges: list[list[str]], hi: str) -> None:
        ranges[-1][1] = hi  # globset overwrites the end, so `[a-c-e]` is `[a-e]`
        if hi < ranges[-1][0]:
            raise _GlobSyntaxError(f"invalid range; '{ranges[-1][0]}' > '{hi}'")


def _tokens_to_regex(tokens: Sequence[Token]) -> str:
    out: list[str] = []
    for tok in tokens:
        kind = tok[0]
        if kind == "lit":
            out.append(re.escape(tok[1]))
        elif kind == _ANY:
            out.append(".")
        elif kind == _STAR:
            if not out or out[-1] != ".*":  # `.*.*` ≡ `.*`, and avoids needless backtracking
                out.append(".*")
        elif kind == _RPREFIX:
            out.append("(?:/?|.*/)")
        elif kind == _RSUFFIX:
            out.append("/.*")
        elif kind == _RMIDDLE:
            out.append("(?:/|/.*/)")
        elif kind == "class":
            body = "".join(re.escape(lo) if lo == hi else f"{re.escape(lo)}-{re.escape(hi)}" for lo, hi in tok[2])
            out.append(f"[{'^' if tok[1] else ''}{body}]")
        else:  # alternation: empty alternatives are dropped (globset's empty_alternates = false)
            parts = [p for p in (_tokens_to_regex(branch) for branch in tok[1]) if p]
            if parts:
                out.append(f"(?:{'|'.join(parts)})")
    return "".join(out)


def glob_to_regex(glob: str) -> str:
    """The regex (for `re.fullmatch` with DOTALL) equivalent to one globset glob."""
    tokens = _GlobParser(glob).parse()
    if tokens == [(_RPREFIX,)]:  # a lone `**` matches everything
        return ".*"
    return _tokens_to_regex(tokens)


@dataclass(frozen=True, slots=True)
class PathMatcher:
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]

    def matches(self, path: str) -> bool:
        if self.include and not any(p.fullmatch(path) for p in self.include):
            return False
        return not any(p.fullmatch(path) for p in self.exclude)


def compile_globs(patterns: Sequence[str]) -> PathMatcher:
    """Compile `path_globs`; entries starting with `!` are excludes. FilterError on bad input."""
    if not patterns:
        raise FilterError('path_globs cannot be empty: leave it unset to disable, or use ["**", "!a/**"] to exclude')
    include: list[re.Pattern[str]] = []
    exclude: list[re.Pattern[str]] = []
    for raw in patterns:
        negated = raw.startswith("!")
        try:
            regex = re.compile(glob_to_regex(raw[1:] if negated else raw), re.DOTALL)
        except (_GlobSyntaxError, re.error) as exc:
            raise FilterError(f"invalid path_glob pattern {raw!r}: {exc}") from None
        (exclude if negated else include).append(regex)
    return PathMatcher(tuple(include), tuple(exclude))


# ---------------------------------------------------------------- dates

_PARTIAL_DATE = re.compile(r"(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})?")
DATE_FORMS = "YYYY, YYYY-MM, YYYY-MM-DD or an ISO datetime such as 2024-05-01T09:30:00+09:00"


def validate_date(name: str, value: Any) -> str:
    """Return `value` if it is a date bound groove's string comparison can use; FilterError otherwise."""
    if isinstance(value, str) and (_valid_partial_date(value) or _valid_datetime(value)):
        return value
    raise FilterError(f"{name} = {value!r} is invalid: expected {DATE_FORMS}")


def _valid_partial_date(value: str) -> bool:
    m = _PARTIAL_DATE.fullmatch(value)
    if not m:
        return False
    year, month, day = m.group(1), m.group(2), m.group(3)
    if month is not None and not 1 <= int(month) <= 12:
        return False
    return day is None or 1 <= int(day) <= calendar.monthrange(int(year), int(month))[1]


def _valid_datetime(value: str) -> bool:
    if not _DATETIME.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- the combined filter


def _str_list(name: str, values: Sequence[str] | None) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str) or not all(isinstance(v, str) for v in values):
        raise FilterError(f"{name} = {values!r} is invalid: expected a list of strings")
    if len(values) > MAX_LIST_ENTRIES:
        raise FilterError(f"{name}: too many entries ({len(values)}; at most {MAX_LIST_ENTRIES})")
    for v in values:
        size = len(v.encode("utf-8"))
        if size > MAX_ENTRY_BYTES:
            raise FilterError(f"{name}: entry {v[:40]!r}… is {size} bytes (at most {MAX_ENTRY_BYTES})")
    return tuple(values)


def _opt_str(name: str, value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise FilterError(f"{name} = {value!r} is invalid: expected a string")
    return value


def _quality(value: Any) -> float:
    """The threshold as groove compares it: float32, clamped to [0, 1]; None = no threshold."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FilterError(f"min_quality = {value!r} is invalid: expected a finite number (clamped to [0, 1])")
    return _f32(min(max(float(value), 0.0), 1.0))


_F32 = struct.Struct("f")


def _f32(x: float) -> float:
    """Round to float32, as groove stores and compares quality scores (struct: cheaper than numpy)."""
    return float(_F32.unpack(_F32.pack(x))[0])


@dataclass(frozen=True)
class DocFilter:
    """All §D.5 filters, AND-combined. Build with `DocFilter.build` (it validates)."""

    path_globs: tuple[str, ...] = ()
    tags_any: tuple[str, ...] = ()
    tags_all: tuple[str, ...] = ()
    date_from: str | None = None
    date_to: str | None = None
    category: str | None = None
    topic: str | None = None
    min_quality: float = 0.0  # float32-rounded; 0 = off
    matcher: PathMatcher | None = field(default=None, repr=False, compare=False)

    @classmethod
    def build(
        cls,
        path_globs: Sequence[str] | None = None,
        tags_any: Sequence[str] | None = None,
        tags_all: Sequence[str] | None = None,
        date_from: str | None = None,
        date_to: str | None = None,
        category: str | None = None,
        topic: str | None = None,
        min_quality: float | None = None,
    ) -> DocFilter:
        """Validate and compile. An empty `path_globs` means "not given" here (SearchParams' default is
        `()`); `compile_globs([])` itself keeps groove's error for an explicit empty list."""
        globs = _str_list("path_globs", path_globs)
        return cls(
            path_globs=globs,
            tags_any=_str_list("tags_any", tags_any),
            tags_all=_str_list("tags_all", tags_all),
            date_from=None if date_from is None else validate_date("date_from", date_from),
            date_to=None if date_to is None else validate_date("date_to", date_to),
            category=_opt_str("category", category),
            topic=_opt_str("topic", topic),
            min_quality=_quality(min_quality),
            matcher=compile_globs(globs) if globs else None,
        )

    @property
    def has_any(self) -> bool:
        """groove's `has_any()`: any filter set, `min_quality > 0` included (it drives over-fetching)."""
        return self._any_but_quality or self.min_quality > 0

    @property
    def quality_only(self) -> bool:
        """Whether the quality threshold is the only filter set (the default search's)."""
        return self.min_quality > 0 and not self._any_but_quality

    @property
    def _any_but_quality(self) -> bool:
        return bool(
            self.matcher is not None
            or self.tags_any
            or self.tags_all
            or self.date_from is not None
            or self.date_to is not None
            or self.category is not None
            or self.topic is not None
        )

    def passes_quality(self, quality: float) -> bool:
        """The quality threshold's test alone (`rejection`'s first). min_quality is a float32 value and
        rounding is monotonic: a score at or above it passes without being rounded."""
        return not (self.min_quality > 0 and quality < self.min_quality and _f32(quality) < self.min_quality)

    def accepts(
        self,
        path: str,
        tags: Sequence[str],
        date: str | None,
        category: str | None,
        topic: str | None,
        quality: float,
    ) -> bool:
        """One candidate row: cheap checks first, the globs last."""
        return self.rejection(path, tags, date, category, topic, quality) is None

    def rejection(
        self,
        path: str,
        tags: Sequence[str],
        date: str | None,
        category: str | None,
        topic: str | None,
        quality: float,
    ) -> tuple[str, str] | None:
        """The first filter that drops a row, as (its key, why), or None when every filter passes."""
        if not self.passes_quality(quality):
            return "min_quality", f"quality score {_f32(quality):.3f} < min_quality {self.min_quality:.3f}"
        if self.category is not None and category != self.category:
            return "category", f"category {category!r} is not {self.category!r}"
        if self.topic is not None and topic != self.topic:
            return "topic", f"topic {topic!r} is not {self.topic!r}"
        if not self._date_ok(date):
            bounds = " and ".join(
                f"{word} {value}" for word, value in (("from", self.date_from), ("to", self.date_to)) if value
            )
            early = date is None or (self.date_from is not None and date < self.date_from)
            key = "date_from" if early and self.date_from is not None else "date_to"
            return key, f"date {date or 'none'} is outside {bounds}"
        if self.tags_any and not any(t in tags for t in self.tags_any):
            return "tags_any", f"tags {list(tags)} hold none of {list(self.tags_any)}"
        if self.tags_all and not all(t in tags for t in self.tags_all):
            missing = [t for t in self.tags_all if t not in tags]
            return "tags_all", f"tags {list(tags)} lack {missing}"
        if self.matcher is not None and not self.matcher.matches(path):
            return "path_globs", f"{path} matches none of {list(self.path_globs)}"
        return None

    def _date_ok(self, date: str | None) -> bool:
        if self.date_from is None and self.date_to is None:
            return True
        if date is None:  # a bound is set: undated documents fail
            return False
        # plain string comparison, as groove: "2024-05-01" > "2024-05", so date_to "2024-05" excludes May
        if self.date_from is not None and date < self.date_from:
            return False
        return self.date_to is None or date <= self.date_to

    def echo(self) -> dict[str, Any]:
        """The `filter_applied` entries (§D.9): only those given, empty lists omitted, groove's order.
        `min_confidence_ratio` (echoed raw by groove) is added by the caller."""
        out: dict[str, Any] = {}
        for key in ("category", "topic"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        for key in ("path_globs", "tags_any", "tags_all"):
            if getattr(self, key):
                out[key] = list(getattr(self, key))
        for key in ("date_from", "date_to"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out
