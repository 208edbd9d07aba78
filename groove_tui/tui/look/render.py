"""Pure functions that turn engine data into Rich `Text`: sanitising, span clamping, snippet windows,
detail highlighting, explain traces.

Offsets are CHARACTER offsets (Python string indices) into `Hit.content`, as the engine promises. Every
transformation here is length-preserving (one character in, one character out) so spans stay valid on the
displayed string. Document text is never parsed as markup: everything is built with `Text(...)` and
`Text.stylize`, never `Text.from_markup`.
"""

from __future__ import annotations

import math
import os
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

from rich.cells import cell_len, get_character_cell_size
from rich.style import Style
from rich.text import Text

from groove_tui.engine.types import Hit, SearchResponse, Span
from groove_tui.output.textout import confidence_tests, display_title, escape_name

ELLIPSIS = "…"
REPLACEMENT = "\ufffd"

# ---------------------------------------------------------------- sanitising


def _build_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for c in range(0x20):
        if c in (0x09, 0x0A):  # keep tab and newline
            continue
        table[c] = chr(0x2400 + c)  # Unicode "Control Pictures": ␀ ␁ … ␛ … (one cell, visible)
    table[0x7F] = "\u2421"  # ␡
    for c in range(0x80, 0xA0):  # C1 controls (CSI 0x9B among them)
        table[c] = REPLACEMENT
    # bidirectional overrides/isolates can reorder what the reader sees
    for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)):
        table[c] = REPLACEMENT
    return table


_SANITISE = _build_table()


def sanitize(text: str) -> str:
    """Replace C0/C1 controls (except newline and tab), DEL and bidi overrides with visible placeholders.

    Length-preserving, so character offsets computed on the original stay valid on the result. ESC becomes
    ␛, so an ANSI sequence shows as ``␛[31m`` instead of colouring the terminal.
    """
    return text.translate(_SANITISE)


def one_line(text: str) -> str:
    """Sanitise and flatten whitespace controls to spaces (length-preserving)."""
    return sanitize(text).replace("\n", " ").replace("\t", " ")


def plain(text: str | None) -> Text:
    """User/document text as a literal, sanitised Text (for cells, titles and labels)."""
    return Text(one_line(text or ""))


# ---------------------------------------------------------------- spans


def merge_spans(spans: Iterable[Span | tuple[int, int]] | None, length: int) -> list[tuple[int, int]]:
    """Clamp spans to [0, length], drop empty ones, sort, and merge overlapping or touching spans."""
    if not spans:
        return []
    out: list[tuple[int, int]] = []
    items = []
    for s in spans:
        start, end = (s.start, s.end) if isinstance(s, Span) else s
        start, end = max(0, min(int(start), length)), max(0, min(int(end), length))
        if end > start:
            items.append((start, end))
    for start, end in sorted(items):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def hit_range(hit: Hit) -> tuple[int, int]:
    """The hit chunk's own text inside `content` (all of it unless the parent retriever expanded it)."""
    n = len(hit.content)
    ef = hit.expanded_from
    if ef is None:
        return 0, n
    start = max(0, min(ef.hit_start, n))
    end = max(start, min(ef.hit_end, n))
    if end == start == 0 and ef.hit_end == 0:  # not filled in: treat the whole content as the hit
        return 0, n
    return start, end


def expanded_ranges(hit: Hit) -> list[tuple[int, int]]:
    """The merged neighbours: the parts of `content` outside [hit_start, hit_end)."""
    if hit.expanded_from is None:
        return []
    n = len(hit.content)
    start, end = hit_range(hit)
    return [r for r in ((0, start), (end, n)) if r[1] > r[0]]


# ---------------------------------------------------------------- grapheme-safe cutting


def _joins_previous(text: str, i: int) -> bool:
    """True when text[i] must stay with text[i-1] (combining mark, ZWJ sequence, variation selector)."""
    if i <= 0 or i >= len(text):
        return False
    ch = text[i]
    cp = ord(ch)
    if unicodedata.combining(ch) or cp == 0x200D or 0xFE00 <= cp <= 0xFE0F or 0x1F3FB <= cp <= 0x1F3FF:
        return True
    if 0xE0020 <= cp <= 0xE007F:  # tag characters (flag sequences)
        return True
    return text[i - 1] == "\u200d"


def safe_start(text: str, i: int) -> int:
    i = max(0, min(i, len(text)))
    while i > 0 and _joins_previous(text, i):
        i -= 1
    return i


def safe_end(text: str, i: int) -> int:
    i = max(0, min(i, len(text)))
    while i < len(text) and _joins_previous(text, i):
        i += 1
    return i


def advance_cells(text: str, start: int, cells: int) -> int:
    """The index where `cells` terminal cells starting at `start` end (never splitting a grapheme)."""
    used = 0
    i = start
    n = len(text)
    while i < n:
        w = get_character_cell_size(text[i])
        if used + w > cells:
            break
        used += w
        i += 1
    return safe_end(text, i)


# ---------------------------------------------------------------- paths


def home_relative(path: str | os.PathLike[str], home: str | os.PathLike[str] | None = None) -> str:
    """`path` with the home directory written `~` (`/home/ann/notes` -> `~/notes`)."""
    s = str(path)
    h = str(Path.home() if home is None else home).rstrip("/")
    if h and (s == h or s.startswith(h + "/")):
        return "~" + s[len(h) :]
    return s


def short_path(path: str | os.PathLike[str], cells: int, home: str | os.PathLike[str] | None = None) -> str:
    """A path shown in at most `cells` cells: `~` for the home directory, then, when it is still too long,
    an ellipsis in the middle that keeps the start and as many whole trailing folders as fit
    (`/work/…/tldr/kb`); a last folder too long on its own is cut in its middle."""
    s = one_line(home_relative(path, home))
    if cell_len(s) <= cells:
        return s
    if cells <= 1:
        return ELLIPSIS[: max(cells, 0)]
    parts = s.split("/")
    head = (parts[0] or "/" + (parts[1] if len(parts) > 2 else "")) + "/"  # "~/", "/work/", "notes/"
    rest = parts[1:] if parts[0] else parts[2:]
    tail = ""
    for part in reversed(rest[1:] if len(rest) > 1 else rest):
        candidate = part + ("/" + tail if tail else "")
        if cell_len(head + ELLIPSIS + "/" + candidate) > cells:
            break
        tail = candidate
    if tail:
        return head + ELLIPSIS + "/" + tail
    left = advance_cells(s, 0, (cells - 1) // 2)  # keep both ends of the string, cut in the middle
    right = len(s) - len(_cells_from_end(s, cells - 1 - cell_len(s[:left])))
    return s[:left] + ELLIPSIS + s[right:]


def _cells_from_end(text: str, cells: int) -> str:
    return text[_back_cells(text, len(text), max(cells, 0)) :]


# ---------------------------------------------------------------- snippets


def one_cell_each(text: str) -> bool:
    """Printable ASCII: one cell a character and no grapheme to keep whole, so cells are offsets (the
    common case, measured without asking each character's width)."""
    return text.isascii() and text.isprintable()


def snippet_window(
    content: str, spans: Sequence[tuple[int, int]], width: int, *, default_start: int = 0
) -> tuple[int, int]:
    """Choose the window of about `width` cells that contains the most match spans.

    Candidates start a little before each span (a fifth of the width as lead-in); ties go to the earliest
    window. Without spans the window starts at `default_start` (the hit's own text). Cuts never split a
    grapheme (combining marks, ZWJ emoji). Returns character offsets (start, end).
    """
    n = len(content)
    if n == 0 or width <= 0:
        return 0, 0
    lead = max(0, width // 5)
    narrow = one_cell_each(content)
    candidates: list[int] = []
    if spans:
        for s, _e in spans:
            if narrow:
                candidates.append(max(0, s - lead))
                continue
            ws = s
            back = 0
            while ws > 0 and back + get_character_cell_size(content[ws - 1]) <= lead:
                back += get_character_cell_size(content[ws - 1])
                ws -= 1
            candidates.append(safe_start(content, ws))
    else:
        candidates.append(safe_start(content, default_start))
    # Spans as merge_spans gives them (sorted, disjoint) are counted per window by bisection.
    ordered = all(s <= e for s, e in spans) and all(e <= s for (_s, e), (s, _e) in pairwise(spans))
    starts = [s for s, _e in spans]
    ends = [e for _s, e in spans]
    best: tuple[int, int, int] | None = None  # (count, -start, start)
    best_window = (0, 0)
    for ws in candidates:
        we = min(n, ws + width) if narrow else advance_cells(content, ws, width)
        if we >= n and ws > 0:  # at the end: pull the window back so it is full
            ws = max(0, n - width) if narrow else _back_cells(content, n, width)
            we = n
        if ordered:  # starts and ends both increase: each count is a difference of two bisections
            count = max(0, bisect_right(ends, we) - bisect_left(starts, ws))
            partial = max(0, bisect_left(starts, we) - bisect_right(ends, ws))
        else:
            count = sum(1 for s, e in spans if s >= ws and e <= we)
            partial = sum(1 for s, e in spans if s < we and e > ws)
        key = (count, partial, -ws)
        if best is None or key > best:
            best = key
            best_window = (ws, we)
    return best_window


def _back_cells(text: str, end: int, cells: int) -> int:
    used = 0
    i = end
    while i > 0:
        w = get_character_cell_size(text[i - 1])
        if used + w > cells:
            break
        used += w
        i -= 1
    return safe_start(text, i)


def snippet_text(
    hit: Hit, width: int, match_style: Style | str = "bold reverse", expanded_style: Style | str | None = None
) -> Text:
    """One flattened, sanitised snippet of `hit.content` around its best-matching part, spans highlighted."""
    # The window is measured on the text as it is shown: a newline or a control character takes no cell
    # in the raw text but one once flattened, and would push the row onto a stray third line.
    content = one_line(hit.content)  # length-preserving: spans stay valid
    spans = merge_spans(hit.match_spans, len(content))
    hs, _he = hit_range(hit)
    ws, we = snippet_window(content, spans, width, default_start=hs)
    body = content[ws:we]
    prefix = ELLIPSIS if ws > 0 else ""
    suffix = ELLIPSIS if we < len(content) else ""
    text = Text(prefix + body + suffix)
    off = len(prefix) - ws
    if expanded_style is not None:
        for s, e in expanded_ranges(hit):
            s2, e2 = max(s, ws), min(e, we)
            if e2 > s2:
                text.stylize_before(expanded_style, s2 + off, e2 + off)
    for s, e in spans:
        s2, e2 = max(s, ws), min(e, we)
        if e2 > s2:
            text.stylize(match_style, s2 + off, e2 + off)
    return text


def detail_text(
    hit: Hit, match_style: Style | str = "bold reverse", expanded_style: Style | str | None = "on grey23"
) -> Text:
    """The full content, sanitised and reflowed (each paragraph one soft-wrapped line), the merged
    neighbours shaded and every match span highlighted where its characters went."""
    content = sanitize(hit.content)
    shown, where = reflow(content)
    text = Text(shown, tab_size=4)
    if expanded_style is not None:
        for s, e in expanded_ranges(hit):
            text.stylize_before(expanded_style, where[s], where[e])
    for s, e in merge_spans(hit.match_spans, len(content)):
        text.stylize(match_style, where[s], where[e])
    return text


# ---------------------------------------------------------------- reflow

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_BLOCK_START = re.compile(
    r" {0,3}(?:#{1,6}(?:[ \t]|$)"  # ATX heading
    r"|[-*+][ \t]|\d{1,9}[.)](?:[ \t]|$)"  # list item
    r"|>"  # block quote
    r"|\|"  # table row
    r"|(?:[-*_][ \t]*){3,}$"  # thematic break
    r"|=+[ \t]*$|-+[ \t]*$"  # setext underline
    r"|<)"  # HTML block
)


def _line_kinds(lines: Sequence[str]) -> list[str]:
    """Each line's part in the text: "text" (a paragraph's prose), "blank", or "keep" (code, a heading,
    a list, a quote, a table: lines whose breaks mean something)."""
    kinds: list[str] = []
    fence: str | None = None
    state = "start"  # "start" (after a blank line), "para" (inside prose), "block" (a list, quote or table)
    for line in lines:
        if fence is not None:
            kinds.append("keep")
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            continue
        m = _FENCE.match(line)
        if m:
            fence = m.group(1)
            kinds.append("keep")
            state = "block"
            continue
        if not line.strip():
            kinds.append("blank")
            state = "start"
            continue
        if state == "start" and (line.startswith("    ") or line.startswith("\t")):  # indented code
            kinds.append("keep")
            continue
        if _BLOCK_START.match(line) or " | " in line or state == "block":
            kinds.append("keep")  # a list's or quote's lazy continuation lines stay too
            state = "start" if line.lstrip().startswith("#") else "block"  # a heading is one line
            continue
        kinds.append("text")
        state = "para"
    return kinds


def reflow(text: str) -> tuple[str, list[int]]:
    """Join the hard line breaks inside each paragraph into spaces, so the paragraph soft-wraps as one;
    code (fenced or indented), headings, lists, block quotes and tables keep their lines, and so does a
    Markdown hard break (two trailing spaces or a backslash).

    Returns the text and `where`, len(text) + 1 entries: `where[i]` is the offset in the result of the
    character at `i` (of the whitespace a join dropped: the place it went), so a span [s, e) of the
    input is [where[s], where[e]) of the result."""
    lines = text.split("\n")
    kinds = _line_kinds(lines)
    joins = [
        kinds[i] == "text" and kinds[i + 1] == "text" and not lines[i].endswith(("  ", "\\"))
        for i in range(len(lines) - 1)
    ]
    if not any(joins):
        return text, list(range(len(text) + 1))
    out: list[str] = []
    where: list[int] = []
    n = 0
    last = len(lines) - 1
    for i, line in enumerate(lines):
        lo = len(line) - len(line.lstrip(" \t")) if i and joins[i - 1] else 0
        hi = max(lo, len(line.rstrip(" \t"))) if i < last and joins[i] else len(line)
        where.extend([n] * lo)
        where.extend(range(n, n + hi - lo))
        out.append(line[lo:hi])
        n += hi - lo
        where.extend([n] * (len(line) - hi))
        if i < last:
            where.append(n)
            out.append(" " if joins[i] else "\n")
            n += 1
    where.append(n)
    return "".join(out), where


# ---------------------------------------------------------------- hit rows


def fmt_score(score: float) -> str:
    if not math.isfinite(score):
        return str(score)
    if abs(score) >= 100:
        return f"{score:.1f}"
    return f"{score:.4f}"


def note_path(path: str, cells: int) -> str:
    """A note's path in at most `cells` cells, cut in the middle so its file name stays whole as long as
    it can: `ranking/…/parent-retriever.md`, then `…/parent-retriever.md`, then the start of the file
    name and its extension (`parent-ret….md`)."""
    s = one_line(path)
    if cell_len(s) <= cells:
        return s
    if cells <= 1:
        return ELLIPSIS[: max(cells, 0)]
    parts = s.split("/")
    name = parts[-1]
    if len(parts) > 2:
        tail = name
        for folder in reversed(parts[1:-1]):  # keep as many whole trailing folders as fit
            if cell_len(f"{parts[0]}/{ELLIPSIS}/{folder}/{tail}") > cells:
                break
            tail = f"{folder}/{tail}"
        if cell_len(f"{parts[0]}/{ELLIPSIS}/{tail}") <= cells:
            return f"{parts[0]}/{ELLIPSIS}/{tail}"
    if len(parts) > 1 and cell_len(ELLIPSIS + "/" + name) <= cells:
        return ELLIPSIS + "/" + name
    stem, dot, ext = name.rpartition(".")
    ext = dot + ext if stem and cell_len(dot + ext) <= cells // 3 else ""
    stem = name[: len(name) - len(ext)]
    room = cells - 1 - cell_len(ext)  # the start of the file name, an ellipsis, its extension
    return stem[: advance_cells(stem, 0, room)] + ELLIPSIS + ext


MIN_PATH_CELLS = 10  # what a cut path keeps before the heading is cut too


def hit_title(hit: Hit, cells: int | None = None) -> Text:
    """`path › heading` as literal text; a chunk before the first heading shows its note's title instead
    (frontmatter, else the H1 it opens with). In `cells` cells when given: the path is cut in its middle
    first and the heading kept, since hits of one note differ only by their heading."""
    path = escape_name(hit.path)
    heading = None
    if hit.heading:
        heading = escape_name(hit.heading) + hit.part_label
    elif (title := display_title(hit)) is not None:
        heading = escape_name(title) + hit.part_label
    heading = one_line(heading) if heading is not None else None
    context = "  [+context]" if hit.expanded_from is not None else ""  # literal text, not markup
    sep = " › "
    full = cell_len(path) + (cell_len(sep) + cell_len(heading) if heading is not None else 0)
    if cells is not None and full + cell_len(context) > cells:
        context = ""  # the shading in the snippet still shows the merged context
        if full > cells:
            if heading is None:
                path = note_path(path, cells)
            else:
                room = cells - cell_len(sep)
                if room - cell_len(heading) >= min(MIN_PATH_CELLS, cell_len(path)):
                    path = note_path(path, room - cell_len(heading))
                else:
                    path = note_path(path, min(cell_len(path), max(MIN_PATH_CELLS, room // 2), room - 1))
                    heading_text = Text(heading)
                    heading_text.truncate(max(1, room - cell_len(path)), overflow="ellipsis")
                    heading = heading_text.plain
    t = Text(path, style="bold")
    if heading is not None:
        t.append(sep, style="dim")
        t.append(heading)
    if context:
        t.append(context, style="italic dim")
    if cells is not None:
        t.truncate(max(cells, 0), overflow="ellipsis")  # a width too small for both parts
    return t


def hit_row(
    rank: int,
    hit: Hit,
    width: int,
    *,
    marker: Text | None = None,
    match_style: Style | str = "bold reverse",
    expanded_style: Style | str | None = None,
    dim: bool = False,
    badge: Text | None = None,
    moved: str = "",
) -> Text:
    """Two lines: rank, score (with `moved`, MMR's ↑/↓ when the hit is out of score order), [judgment
    badge,] [marker,] path › heading; then the snippet (indented)."""
    head = Text()
    head.append(f"{rank:>3} ", style="bold")
    head.append(f"{fmt_score(hit.score):>8}", style="dim")
    head.append(f"{moved or ' '} ", style="bold" if moved else "")
    if badge is not None:
        head.append_text(badge)
        head.append(" ")
    if marker is not None:
        head.append_text(marker)
        head.append(" ")
    head.append_text(hit_title(hit, width - head.cell_len))
    head.truncate(width, overflow="ellipsis")
    snip = snippet_text(hit, max(10, width - 7), match_style, expanded_style)
    row = Text()
    row.append_text(head)
    row.append("\n     ")
    row.append_text(snip)
    if dim:
        row.stylize("dim")
    return row


def mmr_moves(hits: Sequence[Hit]) -> list[str]:
    """Per hit, "↑" or "↓" when MMR showed it above or below where its score would put it, else "": the
    only stage that lists hits out of score order marks each one it moved."""
    if not any(h.trace is not None and h.trace.mmr is not None for h in hits):
        return [""] * len(hits)
    by_score = sorted(range(len(hits)), key=lambda i: -hits[i].score)  # stable: equal scores keep their place
    place = {i: p for p, i in enumerate(by_score)}
    return ["↑" if place[i] > i else "↓" if place[i] < i else "" for i in range(len(hits))]


def gone_row(hit: Hit, other_rank: int, width: int, marker: Text) -> Text:
    row = Text()
    row.append("  - ")
    row.append(f"{'(#' + str(other_rank) + ')':>8} ")
    row.append_text(marker)
    row.append(" ")
    row.append_text(hit_title(hit, width - row.cell_len))
    row.truncate(width, overflow="ellipsis")
    row.stylize("dim")
    return row


# ---------------------------------------------------------------- response summary


def _fmt_value(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v)
    return str(v)


def filters_text(filter_applied: Mapping[str, Any]) -> str:
    parts = []
    for k, v in filter_applied.items():
        if v in (None, False, (), [], ""):
            continue
        parts.append(f"{k}={_fmt_value(v)}" if v is not True else k)
    return "; ".join(parts)


def order_note(resp: SearchResponse) -> Text | None:
    """A line that explains an empty page; None when none is needed."""
    if not resp.results:
        narrowing = [
            k
            for k in (
                "path_globs",
                "tags_any",
                "tags_all",
                "date_from",
                "date_to",
                "category",
                "topic",
                "excluded_terms",
            )
            if resp.filter_applied.get(k)
        ]
        if narrowing:
            return Text(
                "No hits: remove a filter or an exclusion (" + ", ".join(narrowing) + ") to widen it.", style="italic"
            )
        return Text(
            "No hits: try other words (full text matches 3+ characters; the vector leg any wording).", style="italic"
        )
    return None


def _mmr_ordered(resp: SearchResponse) -> bool:
    return any(h.trace is not None and h.trace.mmr is not None for h in resp.results)


def confidence_tooltip(resp: SearchResponse) -> str | None:
    """What the "⚠ low confidence" flag rests on, for the summary line's tooltip: each test's reading
    against its line (the explain panel's "Page" section). None when the page is not flagged."""
    if not resp.low_confidence or resp.confidence is None:
        return None
    tests = [f"{label}: {value}" for label, value in confidence_tests(resp.confidence)[1:]]
    return "\n".join(["Low confidence: the first hit may well be wrong.", *tests, "F6 shows it under Page."])


def response_summary(resp: SearchResponse, *, warn_style: Style | str = "bold yellow") -> Text:
    """A one-line summary: hit count, time, low-confidence flag, filters, pending embeddings, warnings."""
    t = Text()
    n = len(resp.results)
    t.append(f"{n} hit{'s' if n != 1 else ''}")
    total = resp.timings_ms.get("total") if resp.timings_ms else None
    if total is None and resp.timings_ms:
        total = sum(resp.timings_ms.values())
    if total is not None:
        t.append(f" · {total:.0f} ms", style="dim")
    if _mmr_ordered(resp):  # each pick weighs relevance against likeness to the picks above it
        t.append(" · MMR order, not by score (↑↓: moved by MMR)", style="dim italic")
    if resp.reranked:
        t.append(" · reranked", style="dim")
    elif resp.rerank_skipped:
        t.append(" · not reranked", style="dim")
    if resp.low_confidence:
        t.append("  ⚠ low confidence", style=warn_style)
    f = filters_text(resp.filter_applied)
    if f:
        t.append("  filters: ", style="dim")
        t.append(one_line(f))
    if resp.pending_embeddings > 0:
        t.append(
            f"  ⏳ {resp.pending_embeddings:,} chunks awaiting embeddings ({resp.vector_share:.0%} of "
            "full-text hits have vectors)",
            style=warn_style,
        )
    for w in resp.warnings:
        t.append("  ⚠ ", style=warn_style)
        t.append(one_line(w))
    return t
