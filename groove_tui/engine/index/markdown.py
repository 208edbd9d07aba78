"""Markdown parsing and chunking, compatible with groove (reference §A) plus our two deviations.

groove's rules, kept:
* frontmatter: leading U+FEFF stripped, the `---` quirks of §A.2 (an empty `---\\n---` block is not a
  block), YAML that fails or has a wrongly typed key → empty frontmatter + a warning;
* headings: only `## ` / `### ` after a Rust trim; H1, H4+, setext stay content; exclude_headings are
  substrings and drop a heading's own body only until the next non-excluded heading;
* a chunk under 50 UTF-8 bytes folds into the previous kept chunk with a `"## " + heading` marker;
* breadcrumb context (200-char cap), quality score, token_count = floor(bytes / 4).

Ours (docs/groove-compatibility.md, 2):
1. A `## ` line inside a fenced code block (``` or ~~~, closed by a run of the same char at least as long)
   is ordinary content. An unclosed fence runs to the end of the file.
2. Merge first, then split: a merged chunk over `max_chunk_bytes` is cut at paragraph boundaries (blank
   lines outside fences) into consecutive chunks with the same heading, level and context (`part` 1, 2, …
   for the continuations). Whole paragraphs are packed greedily; a paragraph over the cap is cut at line
   boundaries, keeping a fenced block whole unless it alone is over the cap; a single line over the cap
   (a base64 image, a minified file) is cut at its last whitespace under the cap, else at a character
   boundary. No chunk exceeds the cap. A piece under 50 bytes is glued to a neighbour (or borrows a
   paragraph from the previous piece) when that fits under the cap, and otherwise stays small.
   `max_chunk_bytes <= 0` disables splitting (groove's behaviour).

Line numbers (`Chunk.line`) are 1-based in the original file text, frontmatter included.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

import yaml

from groove_tui.engine.types import Chunk, ParsedDocument
from groove_tui.settings.config import DEFAULT_MAX_CHUNK_BYTES

MERGE_MIN_BYTES = 50  # groove's minimum chunk size (§A.6), in UTF-8 bytes
CONTEXT_MAX_CHARS = 200  # §A.8

# Rust `char::is_whitespace` = Unicode White_Space. Python's str.strip() would also eat U+001C–U+001F.
_WS = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_WS_RUN = re.compile(f"[{re.escape(_WS)}]+")
_WS_CHAR = re.compile(f"[{re.escape(_WS)}]")
_LONE_CR = re.compile(r"\r(?!\n)")

BOILERPLATE = (
    "TBD", "TODO", "WIP", "N/A", "未定", "準備中", "(準備中)", "詳細は後述", "詳細は後述する",
    "ここに書く", "後で書く", "Coming soon", "後述",
)  # fmt: skip
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_BOILERPLATE_KEYS = frozenset(b.translate(_ASCII_LOWER) for b in BOILERPLATE)
_BOILERPLATE_LONGEST = max(map(len, _BOILERPLATE_KEYS))
_BOILERPLATE_TAIL = ".。、, \t"


# ---------------------------------------------------------------- Rust string semantics


def _trim(s: str) -> str:
    return s.strip(_WS)


def _rust_lines(text: str) -> list[str]:
    """Rust `str::lines()`: split on '\\n', drop one trailing '\\r' per line, no empty last line."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _nbytes(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))  # a lone surrogate (never in decoded files) must not raise


# ---------------------------------------------------------------- frontmatter (§A.2)


@dataclass(frozen=True, slots=True)
class Frontmatter:
    title: str | None = None
    date: str | None = None
    topic: str | None = None
    depth: str | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)


class _FrontmatterLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core scalars, as groove's serde_yaml reads them.

    No timestamp resolution (an unquoted date stays the string written), and only true/false are
    booleans — so `title: yes` or `topic: off` stay strings instead of invalidating the block.
    """


_FrontmatterLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag.rsplit(":", 1)[-1] not in {"timestamp", "bool", "int", "float"}]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_FrontmatterLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_FrontmatterLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)
_FrontmatterLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+.0123456789"),
)


def _construct_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    value = str(loader.construct_scalar(cast(yaml.ScalarNode, node)))
    if value.startswith("0o"):
        return int(value[2:], 8)
    return int(value, 16) if value.startswith("0x") else int(value)  # "017" is 17 in YAML 1.2


_FrontmatterLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


# The same rules over libyaml's parser where PyYAML was built with it (its wheels are): parsing a note's
# block is then ~10× faster, most of what reading a KB of small notes costs. A block it refuses is read
# again by the pure-Python loader, whose message (and mark) the warning quotes.
_FastFrontmatterLoader: type[Any] | None = None
if hasattr(yaml, "CSafeLoader"):

    class _CFrontmatterLoader(yaml.CSafeLoader):
        pass

    _CFrontmatterLoader.yaml_implicit_resolvers = _FrontmatterLoader.yaml_implicit_resolvers
    _CFrontmatterLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    _FastFrontmatterLoader = _CFrontmatterLoader


class _FrontmatterTypeError(ValueError):
    pass


def parse_frontmatter(text: str) -> tuple[Frontmatter, str, int, str | None]:
    """Split `text` into (frontmatter, body, body_line_offset, warning) per §A.2.

    `body_line_offset` is the number of file lines before the body's first line, so body line i
    (0-based) is file line `body_line_offset + i + 1`. `warning` is set when a block was found but its
    YAML is unusable; the frontmatter is then empty and the body still starts after the block.
    """
    stripped = text.lstrip("\ufeff")
    if not stripped.startswith("---"):
        return Frontmatter(), stripped, 0, None
    pos = 3
    while pos < len(stripped) and stripped[pos] == "\r":
        pos += 1
    if stripped.startswith("\n", pos):
        pos += 1
    end = stripped.find("\n---", pos)
    if end < 0:  # unclosed (or the empty `---\n---` block): everything is body
        return Frontmatter(), stripped, 0, None
    yaml_text = stripped[pos:end]
    body_start = end + 4
    while body_start < len(stripped) and stripped[body_start] in "\r\n":
        body_start += 1
    body = stripped[body_start:]
    offset = stripped.count("\n", 0, body_start)
    if "\r" in yaml_text:
        yaml_text = yaml_text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        fm = _frontmatter_from_yaml(yaml_text)
    except yaml.YAMLError as exc:
        first_line = stripped.count("\n", 0, pos) + 1
        return Frontmatter(), body, offset, f"invalid frontmatter: {_yaml_error_text(exc, first_line)}"
    except Exception as exc:
        return Frontmatter(), body, offset, f"invalid frontmatter: {exc or type(exc).__name__}"
    return fm, body, offset, None


def _yaml_error_text(exc: yaml.YAMLError, first_line: int) -> str:
    """One line: the problem and where it is in the file."""
    if isinstance(exc, yaml.MarkedYAMLError):
        problem = exc.problem or exc.context or "YAML error"
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            return f"{problem} (line {first_line + mark.line}, column {mark.column + 1})"
        return problem
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _load_yaml(yaml_text: str) -> Any:
    if _FastFrontmatterLoader is not None:
        try:
            return yaml.load(yaml_text, Loader=_FastFrontmatterLoader)
        except yaml.YAMLError:
            pass  # read again below, for the pure-Python loader's words
    return yaml.load(yaml_text, Loader=_FrontmatterLoader)


def _frontmatter_from_yaml(yaml_text: str) -> Frontmatter:
    data = _load_yaml(yaml_text)
    if data is None:
        return Frontmatter()
    if not isinstance(data, dict):
        raise _FrontmatterTypeError(f"expected a mapping of keys, found {_type_name(data)}")
    return Frontmatter(
        title=_optional_str(data, "title"),
        date=_scalar_text(data.get("date")),
        topic=_optional_str(data, "topic"),
        depth=_scalar_text(data.get("depth")),
        tags=_tags(data.get("tags")),
    )


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "a sequence"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _optional_str(data: dict[Any, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    raise _FrontmatterTypeError(f"{key}: expected a string, found {_type_name(value)}")


def _tags(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _FrontmatterTypeError(f"tags: expected a sequence of strings, found {_type_name(value)}")
    for tag in value:
        if not isinstance(tag, str):
            raise _FrontmatterTypeError(f"tags: expected strings, found {_type_name(tag)}")
    return tuple(value)


def _scalar_text(value: Any) -> str | None:
    """date / depth: a string verbatim, a number in decimal, a date in ISO, anything else str()."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (_dt.date, _dt.datetime)):  # only via an explicit !!timestamp tag
        return value.isoformat()
    return str(value)


# ---------------------------------------------------------------- titles and paths (§A.3)


def filename_title(path: str) -> str | None:
    """Breadcrumb fallback title: `notes/deep-dive-2026.md` → `deep dive 2026`."""
    name = re.split(r"[/\\]", path)[-1]
    dot = name.rfind(".")
    if dot > 0:
        name = name[:dot]
    name = name.replace("-", " ").replace("_", " ")
    return " ".join(w for w in _WS_RUN.split(name) if w) or None


def path_category_topic(rel_path: str) -> tuple[str | None, str | None]:
    """(first segment if ≥ 2 segments, second segment if ≥ 3 segments)."""
    parts = rel_path.split("/")
    return (parts[0] if len(parts) >= 2 else None, parts[1] if len(parts) >= 3 else None)


# ---------------------------------------------------------------- breadcrumb (§A.8) and quality (§A.10)


def build_context(parts: Sequence[str | None]) -> str | None:
    kept: list[str] = []
    for part in parts:
        p = _trim(part) if part is not None else ""
        if p and (not kept or kept[-1] != p):
            kept.append(p)
    if not kept:
        return None
    return " > ".join(kept)[:CONTEXT_MAX_CHARS]


def quality_score(content: str) -> float:
    """1.0 minus penalties: short (<30 chars) 0.6, boilerplate-only 0.5, one short line (<80) 0.3."""
    t = _trim(content)
    n = len(t)
    tenths = 10  # integer tenths, so the scores are exactly 0.1, 0.4, 0.7 … and not f32/f64 noise
    if n < 30:
        tenths -= 6
    if _is_boilerplate(t):
        tenths -= 5
    if "\n" not in t and n < 80:
        tenths -= 3
    return max(tenths, 0) / 10


def _is_boilerplate(trimmed: str) -> bool:
    normalized = trimmed.rstrip(_BOILERPLATE_TAIL).lstrip(_WS)
    if len(normalized) > _BOILERPLATE_LONGEST:  # (lower-casing keeps the length: no text this long is one)
        return False
    return bool(normalized) and normalized.translate(_ASCII_LOWER) in _BOILERPLATE_KEYS


# ---------------------------------------------------------------- cutting (§A.4, §A.5, fences)


class _Line(NamedTuple):
    text: str
    lineno: int  # 1-based in the file; marker lines added by a merge carry the merged heading's line
    fence: int | None  # id of the fenced block the line belongs to (opening and closing lines included)


@dataclass(slots=True)
class _Section:
    heading: str | None
    level: int | None
    ancestry: tuple[str, ...]
    line: int
    lines: list[_Line]  # the trimmed content, one entry per line; [] = empty content

    def content(self) -> str:
        return "\n".join(line.text for line in self.lines)


def _heading(trimmed: str) -> tuple[int, str] | None:
    if trimmed.startswith("### "):
        return 3, _trim(trimmed[4:])
    if trimmed.startswith("## "):
        return 2, _trim(trimmed[3:])
    return None


def _fence_open(trimmed: str) -> tuple[str, int] | None:
    """(char, run length) when the line opens a fenced code block."""
    if not trimmed.startswith(("```", "~~~")):
        return None
    char = trimmed[0]
    run = len(trimmed) - len(trimmed.lstrip(char))
    if char == "`" and "`" in trimmed[run:]:
        return None  # CommonMark: a backtick fence's info string has no backticks (``` `x` ``` is inline code)
    return char, run


def _fence_closes(trimmed: str, char: str, run: int) -> bool:
    return len(trimmed) >= run and trimmed == char * len(trimmed)


def _trim_content(buf: list[_Line]) -> list[_Line]:
    """Lines of trim(join(buf)): blank lines off both ends, then the outer whitespace of the rest."""
    nonblank = [i for i, line in enumerate(buf) if _trim(line.text)]
    if not nonblank:
        return []
    out = buf[nonblank[0] : nonblank[-1] + 1]
    out[0] = out[0]._replace(text=out[0].text.lstrip(_WS))
    out[-1] = out[-1]._replace(text=out[-1].text.rstrip(_WS))
    return out


def _cut_sections(body: str, first_lineno: int, excludes: Sequence[str]) -> list[_Section]:
    """Raw chunks before the merge, per §A.5, with fenced code never splitting."""
    sections: list[_Section] = []
    heading: tuple[int, str] | None = None
    heading_line = 0
    ancestry: tuple[str, ...] = ()
    stack: list[tuple[int, str]] = []
    excluded = False
    buf: list[_Line] = []
    fence: tuple[str, int] | None = None
    fence_id = 0

    def flush() -> None:
        if excluded:
            return
        lines = _trim_content(buf)
        if lines or heading is not None:
            level, text = heading if heading is not None else (None, None)
            line = heading_line if heading is not None else lines[0].lineno
            sections.append(_Section(text, level, ancestry, line, lines))

    for i, raw in enumerate(_rust_lines(body)):
        lineno = first_lineno + i
        trimmed = _trim(raw)
        if fence is not None:
            if _fence_closes(trimmed, *fence):
                fence = None
            if not excluded:
                buf.append(_Line(raw, lineno, fence_id))
            continue
        first = trimmed[:1]  # (most lines open neither a heading nor a fence: two calls spared)
        found = _heading(trimmed) if first == "#" else None
        if found is not None:
            flush()
            buf = []
            level, text = found
            while stack and stack[-1][0] >= level:
                stack.pop()
            parents = tuple(t for _, t in stack)
            stack.append(found)  # excluded headings too: their descendants keep them in the breadcrumb
            excluded = any(ex in text for ex in excludes)
            heading, ancestry = (None, ()) if excluded else (found, parents)
            heading_line = lineno
            continue
        fence = _fence_open(trimmed) if first in ("`", "~") else None
        if fence is not None:
            fence_id += 1
        if not excluded:
            buf.append(_Line(raw, lineno, fence_id if fence is not None else None))
    flush()
    return sections


# ---------------------------------------------------------------- the 50-byte merge (§A.6)


def _merge_small(sections: list[_Section]) -> list[_Section]:
    """Fold each chunk under 50 bytes into the previous kept one, exactly as groove builds the text."""
    kept: list[_Section] = []
    for sec in sections:
        if not kept or _nbytes(sec.content()) >= MERGE_MIN_BYTES:
            kept.append(sec)
            continue
        prev = kept[-1]
        extra: list[_Line] = []
        if prev.content():
            extra.append(_Line("", sec.line, None))  # the "\n\n" separator
        if sec.heading is not None:
            extra += [_Line(f"## {sec.heading}", sec.line, None), _Line("", sec.line, None)]
        # An empty merged body still ends the text with "\n\n" (groove's exact string): one "" line more.
        extra += sec.lines or ([_Line("", sec.line, None)] if extra else [])
        prev.lines = prev.lines + extra
    return kept


# ---------------------------------------------------------------- the size cap (ours)


class _Unit(NamedTuple):
    start: int  # line range [start, end) inside the section's lines
    end: int


class _Sizer:
    """Byte size of join(lines[a:b]) in O(1) from prefix sums."""

    def __init__(self, lines: list[_Line]) -> None:
        self.prefix = [0]
        for line in lines:
            self.prefix.append(self.prefix[-1] + _nbytes(line.text) + 1)

    def __call__(self, start: int, end: int) -> int:
        return self.prefix[end] - self.prefix[start] - 1

    def units(self, piece: list[_Unit]) -> int:
        return self(piece[0].start, piece[-1].end)


def _is_break(line: _Line) -> bool:
    return line.fence is None and not _trim(line.text)


def _paragraphs(lines: list[_Line]) -> list[_Unit]:
    out: list[_Unit] = []
    start: int | None = None
    for i, line in enumerate(lines):
        if _is_break(line):
            if start is not None:
                out.append(_Unit(start, i))
                start = None
        elif start is None:
            start = i
    if start is not None:
        out.append(_Unit(start, len(lines)))
    return out


def _line_units(lines: list[_Line], para: _Unit, size: _Sizer, cap: int) -> list[_Unit]:
    """An oversized paragraph as line units: a fenced block stays one unit unless it alone is over the cap."""
    out: list[_Unit] = []
    i = para.start
    while i < para.end:
        j = i + 1
        if lines[i].fence is not None:
            while j < para.end and lines[j].fence == lines[i].fence:
                j += 1
        if size(i, j) <= cap:
            out.append(_Unit(i, j))
        else:
            out.extend(_Unit(k, k + 1) for k in range(i, j))
        i = j
    return out


def _pack(units: list[_Unit], size: _Sizer, cap: int) -> list[list[_Unit]]:
    pieces: list[list[_Unit]] = []
    current: list[_Unit] = []
    for unit in units:
        if current and size(current[0].start, unit.end) > cap:
            pieces.append(current)
            current = []
        current.append(unit)
    if current:
        pieces.append(current)
    return pieces


def _avoid_tiny(pieces: list[list[_Unit]], size: _Sizer, cap: int) -> list[list[_Unit]]:
    """No piece under 50 bytes while another arrangement can avoid it (see the module docstring)."""
    i = 0
    while len(pieces) > 1 and i < len(pieces):
        piece = pieces[i]
        if size.units(piece) >= MERGE_MIN_BYTES:
            i += 1
            continue
        prev = pieces[i - 1] if i > 0 else None
        nxt = pieces[i + 1] if i + 1 < len(pieces) else None
        if prev is not None and size.units(prev + piece) <= cap:
            pieces[i - 1 : i + 1] = [prev + piece]
            i -= 1
        elif nxt is not None and size.units(piece + nxt) <= cap:
            pieces[i : i + 2] = [piece + nxt]
        elif (
            prev is not None
            and len(prev) > 1
            and size.units(prev[-1:] + piece) <= cap
            and size.units(prev[:-1]) >= MERGE_MIN_BYTES
        ):
            pieces[i - 1 : i + 1] = [prev[:-1], prev[-1:] + piece]
        else:
            i += 1  # nothing fits under the cap: a small chunk beats one over it
    return pieces


def _cut_long_lines(lines: list[_Line], cap: int) -> list[_Line]:
    """Lines over the cap cut into fragments of at most `cap` bytes (same line number and fence).

    Each fragment is the longest that fits and ends at whitespace when there is any (the whitespace at a
    cut is dropped); packing then treats fragments as lines. Positions, not slices of the remainder: a
    5 MB line must cost linear time."""
    if cap <= 0 or all(len(line.text) <= cap // 4 or _nbytes(line.text) <= cap for line in lines):
        return lines
    out: list[_Line] = []
    for line in lines:
        text = line.text
        if _nbytes(text) <= cap:
            out.append(line)
            continue
        pos = 0
        while pos < len(text):
            window = text[pos : pos + cap]
            fits = len(window.encode("utf-8", "surrogatepass")[:cap].decode("utf-8", "ignore")) or 1
            end = pos + fits
            if end < len(text):
                cut = [m.start() for m in _WS_CHAR.finditer(text, pos + 1, end + 1)]
                if cut:
                    end = cut[-1]
            piece = text[pos:end].rstrip(_WS)
            if piece:
                out.append(line._replace(text=piece))
            pos = end
            while pos < len(text) and text[pos] in _WS:
                pos += 1
    return out


def _split(lines: list[_Line], cap: int) -> list[tuple[int, int]]:
    """Line ranges of the pieces of a section (one range when it is within the cap)."""
    if cap <= 0 or not lines or 4 * (sum(len(line.text) for line in lines) + len(lines) - 1) <= cap:
        return [(0, len(lines))]  # (a character is at most 4 bytes: within the cap without counting them)
    size = _Sizer(lines)
    if size(0, len(lines)) <= cap:
        return [(0, len(lines))]
    units: list[_Unit] = []
    for para in _paragraphs(lines):
        units.extend([para] if size(para.start, para.end) <= cap else _line_units(lines, para, size, cap))
    if not units:
        return [(0, len(lines))]
    pieces = _avoid_tiny(_pack(units, size, cap), size, cap)
    return [(p[0].start, p[-1].end) for p in pieces]


# ---------------------------------------------------------------- the document


def parse_markdown(
    rel_path: str,
    text: str,
    *,
    exclude_headings: Sequence[str] = (),
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
    contextual: bool = False,
) -> ParsedDocument:
    """Parse one Markdown file (already decoded) into document metadata and chunks.

    `contextual` is accepted for the indexer's sake: the breadcrumb is always computed and the indexer
    decides whether to store it.
    """
    del contextual
    if "\r" in text:
        # A lone CR (classic Mac OS) ends a line too (ours; groove's Rust `lines()` keeps it): otherwise a
        # whole file is one line and neither its frontmatter nor its headings are recognised.
        text = _LONE_CR.sub("\n", text)
    fm, body, offset, warning = parse_frontmatter(text)
    category, path_topic = path_category_topic(rel_path)
    crumb_title = fm.title if fm.title is not None and _trim(fm.title) else filename_title(rel_path)
    sections = _merge_small(_cut_sections(body, offset + 1, tuple(exclude_headings)))
    chunks: list[Chunk] = []
    for sec in sections:
        context = build_context([crumb_title, *sec.ancestry, sec.heading])
        lines = _cut_long_lines(sec.lines, max_chunk_bytes)
        ranges = _split(lines, max_chunk_bytes)
        for part, (start, end) in enumerate(ranges):
            piece = lines[start:end]
            content = "\n".join(line.text for line in piece)
            if len(ranges) > 1:
                content = _trim(content)
            chunks.append(
                Chunk(
                    index=len(chunks),
                    heading=sec.heading,
                    level=sec.level,
                    content=content,
                    context=context,
                    token_count=_nbytes(content) // 4,
                    quality_score=quality_score(content),
                    line=sec.line if part == 0 else piece[0].lineno,
                    part=part,
                )
            )
    return ParsedDocument(
        path=rel_path,
        title=fm.title,
        topic=fm.topic if fm.topic is not None else path_topic,
        category=category,
        depth=fm.depth,
        tags=fm.tags,
        date=fm.date,
        chunks=tuple(chunks),
        warnings=(warning,) if warning else (),
    )
