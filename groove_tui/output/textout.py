"""Plain-text renderings for the headless commands: readable, highlighted on a TTY, safe always.

Document text is never allowed to reach the terminal as control codes: every C0/C1 control character
except newline and tab is replaced before printing.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from groove_tui.engine.index.throughput import format_rate
from groove_tui.engine.types import (
    ConfidenceReading,
    FileIssue,
    Hit,
    HitTrace,
    IndexReport,
    SearchResponse,
    Span,
    WhyReport,
)

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
BOLD_MATCH = "\x1b[1;33m"
DIM = "\x1b[2m"
RESET = "\x1b[0m"


def use_color(stream: TextIO) -> bool:
    """Colour only on a terminal, and never with NO_COLOR or TERM=dumb."""
    import os

    return stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def sanitize(text: str) -> str:
    """Replace terminal control characters (ESC, BEL, CSI, …) with U+FFFD; keep \\n and \\t."""
    return _CONTROL.sub("\ufffd", text)


# A name (path, title, heading) is one line of output: every control, line separator and bidi control in
# it is shown as an escape, so a file name cannot forge a line ("…\nrank: 1") or reverse what follows.
_NAME_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    return _NAMED.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


def escape_name(text: str) -> str:
    """A path, title or heading for display on one line, its controls visible as escapes (\\n, \\u202e)."""
    return _NAME_UNSAFE.sub(_escape, text)


# An ATX level-1 heading (`# Title`, `# Title #`), up to three spaces in, as CommonMark reads one.
_H1 = re.compile(r" {0,3}#(?:[ \t]+(.*?))??(?:[ \t]+#+)?[ \t]*")


def h1_title(text: str | None) -> str | None:
    """The H1 on the first non-blank line of `text`, else None."""
    for line in (text or "").splitlines():
        if line.strip():
            m = _H1.fullmatch(line)
            title = (m.group(1) or "").strip() if m else ""
            return title or None
    return None


def display_title(hit: Hit, document_text: str | None = None) -> str | None:
    """The title a person reads: groove's `title` (frontmatter) when it has one, else the H1 a note opens
    with (in the hit's own text, or `document_text`: the start of its document). JSON keeps groove's
    `title`, which has no such fallback for Markdown."""
    if hit.title and hit.title.strip():
        return hit.title
    return h1_title(hit.content) or h1_title(document_text)


# A hit's text as printed: an expansion is at most 8192 tokens (~32 KB), so this only cuts a huge chunk
# of an uncapped index; --format json still carries the whole text.
BODY_MAX_CHARS = 32_768


def bounded(text: str, spans: Sequence[Span] | None) -> tuple[str, Sequence[Span] | None]:
    """The text cut at BODY_MAX_CHARS (with a note saying how much was left out) and the spans inside it."""
    if len(text) <= BODY_MAX_CHARS:
        return text, spans
    note = f"\n… [{len(text) - BODY_MAX_CHARS:,} more characters; --format json has the whole text]"
    kept = tuple(s for s in spans or () if s.end <= BODY_MAX_CHARS)
    return text[:BODY_MAX_CHARS] + note, kept


def highlight(text: str, spans: Sequence[Span] | None, color: bool) -> str:
    if not color or not spans:
        return sanitize(text)
    out, pos = [], 0
    for s in spans:
        out.append(sanitize(text[pos : s.start]))
        out.append(BOLD_MATCH + sanitize(text[s.start : s.end]) + RESET)
        pos = s.end
    out.append(sanitize(text[pos:]))
    return "".join(out)


def snippets(hit: Hit, max_snippets: int = 3, radius: int = 40) -> list[str]:
    """Up to three short quotes around match spans, each from a different part of the text."""
    out: list[str] = []
    covered = -1
    for s in hit.match_spans or ():
        if s.start < covered:
            continue  # already inside the previous quote
        start, end = max(0, s.start - radius), min(len(hit.content), s.end + radius)
        piece = " ".join(hit.content[start:end].split())
        out.append(("…" if start else "") + piece + ("…" if end < len(hit.content) else ""))
        covered = end
        if len(out) == max_snippets:
            break
    return out


def format_response(
    resp: SearchResponse, *, color: bool, explain: bool = False, documents: Mapping[int, str] | None = None
) -> str:
    """groove's text output. `documents`: the opening text of a hit's document (by document id), where
    the title fallback finds the H1 when the hit's own text does not start with it."""
    lines: list[str] = []
    if resp.low_confidence:
        why = (
            "the first two hits are nearly tied and neither stands out"
            if resp.confidence is not None and resp.confidence.rule == "dbsf"
            else "no result stands out"
        )
        lines.append(f"[low_confidence: {why} — the first hit may well be wrong]")
    if resp.filter_applied:
        lines.append("filters: " + ", ".join(f"{k}={v}" for k, v in resp.filter_applied.items()))
    if resp.pending_embeddings:
        lines.append(f"[{resp.pending_embeddings} chunks not embedded yet: vector results are partial]")
    for w in resp.warnings:
        lines.append(f"[warning: {sanitize(w)}]")
    if resp.rerank_skipped and resp.rerank_skipped not in " ".join(resp.warnings):
        lines.append(f"[{sanitize(resp.rerank_skipped)}]")  # the language guard: not a failure
    if explain:
        q = resp.query
        none = "(no trigram expression)" if q.bigram_expr else "(no full-text expression: vector only)"
        lines.append(f"compiled: {q.match_expr or none}")
        if q.bigram_expr:
            lines.append(f"bigram:   {q.bigram_expr}")
        if q.word_expr:
            lines.append(f"words:    {q.word_expr}")
        if q.exclude:
            lines.append(f"excluded: {', '.join(q.exclude)}")
        lines.append("timings:  " + "  ".join(f"{k} {v:.1f}ms" for k, v in resp.timings_ms.items()))
        trace = resp.results[0].trace if resp.results else None
        if trace is not None:
            legs = [f"{leg} {scale_text(reads, scale)}" for leg, reads, scale in trace.scales() if scale]
            if trace.vector_share is not None:
                legs.append(
                    f"vector weight × {trace.vector_share:.2f} ({trace.vector_share:.0%} of full-text hits "
                    "embedded, the others' vector terms are their full-text readings)"
                )
            lines.append(f"fusion:   {trace.fusion}" + (" — " + "; ".join(legs) if legs else ""))
        if resp.confidence is not None:
            (_, verdict), *tests = confidence_tests(resp.confidence)
            lines.append(f"low confidence: {verdict}")
            lines += [f"  {label}: {value}" for label, value in tests]
    if not resp.results:
        lines.append("no results")
    blocks = ["\n".join(lines)] if lines else []
    for rank, hit in enumerate(resp.results, 1):
        title = display_title(hit, (documents or {}).get(hit.document_id))
        head = [
            f"# {escape_name(title) if title else '(no title)'}",
            escape_name(hit.path) + (f"#{escape_name(hit.heading)}" if hit.heading else "") + hit.part_label,
            f"rank: {rank}  score: {hit.score:.4f}",
        ]
        if hit.tags:
            head.append("tags: " + ", ".join(escape_name(t) for t in hit.tags))
        if hit.expanded_from is not None:
            ef = hit.expanded_from
            head.append(
                f"expanded: whole document ({ef.total_chunks} chunks)"
                if ef.kind == "whole_document"
                else f"expanded: chunks {ef.from_index}–{ef.to_index}"
            )
        for snip in snippets(hit):
            head.append(f'  "{sanitize(snip)}"')
        if explain and hit.trace is not None:
            head.append(_trace_line(hit.trace))
        body = highlight(*bounded(hit.content, hit.match_spans), color)
        if color:
            head = [DIM + h + RESET if i else h for i, h in enumerate(head)]
        blocks.append("\n".join(head) + "\n\n" + body)
    return "\n---\n".join(blocks) + "\n"


def confidence_tests(c: ConfidenceReading) -> list[tuple[str, str]]:
    """The low-confidence verdict and each test behind it, as (label, reading) pairs: what the explain
    views show under "Page"."""
    if c.ratio == 0.0:
        return [("low confidence", "off (min_confidence_ratio 0)")]
    verdict = "yes" if c.low else "no"
    if c.rule == "dbsf":
        verdict += " (all three tests hold)" if c.low else " (it takes all three tests)"
    rows = [("low confidence", verdict)]
    if c.flat is None:
        rows.append(("flat", "no reading (under two hits, or no score above 0)"))
    else:
        rows.append(("flat", f"max/mean {c.flat:.4f} {'<' if c.is_flat else '≥'} {c.ratio:g}"))
    if c.rule != "dbsf":
        return rows
    if c.best is None or c.full is None or not c.full > 0:
        rows.append(("under the top", "no leg answered"))
    else:
        sign = "<" if c.under_full else "≥"
        rows.append(("under the top", f"best {c.best:.4f} {sign} {c.full:.4f} (the top of every family's window)"))
    if c.lead is None:
        rows.append(("near tie", "no reading (under two hits)"))
    elif c.tie_line is None:
        rows.append(("near tie", "no leg answered"))
    else:
        sign = "<" if c.near_tie else "≥"
        rows.append(
            ("near tie", f"the first leads the second by {c.lead:.4f} {sign} {c.tie_line:.4f} (one sd of a family)")
        )
    return rows


def scale_text(reads: str, scale: tuple[float, float]) -> str:
    """A score fusion's scale for one leg: the scores it maps to term 0 and to term 1."""
    digits = 3 if reads == "bm25" else 4
    return f"{reads} {scale[0]:.{digits}f} → 0, {scale[1]:.{digits}f} → 1"


def _trace_line(t: HitTrace) -> str:
    legs = [
        ("vector", True, t.vector_rank, f"d={t.vector_distance:.4f}" if t.vector_distance is not None else ""),
        ("fts", True, t.fts_rank, f"bm25={t.fts_bm25:.3f}" if t.fts_bm25 is not None else ""),
        # Extra full-text legs: a CJK query's bigram leg (docs/groove-compatibility.md, 6), the word leg.
        ("bigram", t.bigram_leg, t.bigram_rank, f"bm25={t.bigram_bm25:.3f}" if t.bigram_bm25 is not None else ""),
        ("word", t.word_leg, t.word_rank, f"bm25={t.word_bm25:.3f}" if t.word_bm25 is not None else ""),
    ]
    parts = []
    for name, ran, rank, raw in legs:
        if not ran:
            continue
        if rank:
            parts.append(f"{name} #{rank} {raw}")
        elif name == "vector" and t.vector_imputed:
            parts.append("vector pending (full-text reading)")
        else:
            parts.append(f"{name} —")
    if t.named:
        parts.append(f"name: the query is its {t.name_kind or 'heading'}")
    # The terms in the order fusion adds them, so the line reads as the sum that makes the score.
    terms = "+".join(f"{leg} {value:.5f}" for leg, value in t.fusion_terms())
    parts.append(f"{t.fusion} {terms or '0'}={t.rrf_score or 0:.5f}")
    if t.merged_parts:
        parts.append("parts " + ",".join(str(p) for p in t.merged_parts) + " merged")
    if t.rerank_score is not None:
        if t.rerank_z is not None and t.rerank_blend is not None:
            b = t.rerank_blend
            parts.append(
                f"rerank {t.rerank_score:.3f} (#{t.rerank_rank}): {b:g}×z {t.rerank_z:.3f} + {1 - b:g}×fused z "
                f"{t.fused_z:.3f}"
            )
        else:
            parts.append(f"rerank {t.rerank_score:.3f} (#{t.rerank_rank})")
    if t.mmr is not None:
        m = t.mmr
        parts.append(f"mmr pick {m.pick}: rel {m.relevance:.3f} sim {m.max_similarity:.3f} pen {m.penalty:.2f}")
    if t.parent:
        parts.append(f"parent: {t.parent}")
    return "explain: " + " | ".join(parts)


# What each verdict says first, in the walk's headline.
WHY_HEADLINES = {
    "shown": "on the page",
    "merged": "on the page, inside another hit",
    "not_indexed": "not in the index",
    "filtered": "excluded by a filter",
    "quality": "dropped by the quality filter",
    "excluded": "excluded by an exclusion term",
    "not_matched": "not matched by any leg",
    "below_pool": "below every leg's candidate pool",
    "below_page": "fused below the page",
    "reranker": "moved off the page by the reranker",
    "mmr": "moved off the page by MMR",
}


def format_why(report: WhyReport, *, color: bool) -> str:
    """`search --why`: the headline, the walk stage by stage (✓ passed, ✗ where it fell out), each leg's
    standing, and the setting changes that would bring the note in."""
    bold, dim, reset = ("\x1b[1m", DIM, RESET) if color else ("", "", "")
    target = escape_name(report.path) + (f" # {escape_name(report.heading)}" if report.heading else "")
    lines = [f"{bold}{target}: {WHY_HEADLINES.get(report.verdict, report.verdict)}{reset}"]
    lines.append(f"  {sanitize(report.summary)}")
    if report.section and not report.heading:
        lines.append(f"{dim}  section examined: {escape_name(report.section)} (line {report.line}){reset}")
    lines.append("")
    for step in report.steps:
        mark = "✓" if step.passed else "✗"
        lines.append(f"  {mark} {step.stage:<11} {sanitize(step.summary)}")
    if report.fused_rank is not None and report.verdict not in ("shown", "merged"):
        terms = " + ".join(f"{leg} {v:.4f}" for leg, v in report.fused_terms)
        lines.append(f"{dim}  fused       rank {report.fused_rank}: {report.fused_score or 0:.4f} = {terms}{reset}")
        if report.last_shown is not None:
            rank, score, last_terms = report.last_shown
            shown = " + ".join(f"{leg} {v:.4f}" for leg, v in last_terms)
            lines.append(f"{dim}  last shown  rank {rank}: {score:.4f} = {shown}{reset}")
    if report.fixes:
        lines.append("")
        lines.append("  what would bring it in: " + "; ".join(f.text() for f in report.fixes))
    elif report.verdict in ("below_pool", "below_page", "reranker", "mmr"):
        lines.append("")
        lines.append("  what would bring it in: no single setting change tried (limit, λ, a weight, the pool) does")
    return "\n".join(lines) + "\n"


def format_index_report(r: IndexReport) -> str:
    r = _names_escaped(r)
    lines = [
        f"added {r.added}, updated {r.updated} ({r.metadata_only} metadata only), unchanged {r.unchanged}, "
        f"renamed {r.renamed}, deleted {r.deleted}, skipped {len(r.skipped)}",
        f"{r.chunks:,} chunks; embedded {r.embedded:,} this run"
        + (f" at {format_rate(r.embed_rate)}" if r.embed_rate is not None else "")
        + (f"; {r.pending_embeddings:,} still without a vector" if r.pending_embeddings else ""),
        f"{r.seconds:.2f} s (full text {r.fulltext_seconds:.2f} s, embeddings {r.embed_seconds:.2f} s)",
    ]
    for issue in r.skipped:
        lines.append(f"skipped  {sanitize(issue.path)}: {sanitize(issue.reason)}")
    for issue in r.degraded:
        lines.append(f"warning  {sanitize(issue.path)}: {sanitize(issue.reason)}")
    lines += [sanitize(note) for note in r.notes]
    return "\n".join(lines)


def _names_escaped(r: IndexReport) -> IndexReport:
    """The report with each skipped or degraded file's name (and reason) escaped onto one line."""
    from dataclasses import replace

    def esc(issues: tuple[FileIssue, ...]) -> tuple[FileIssue, ...]:
        return tuple(type(i)(escape_name(i.path), escape_name(i.reason)) for i in issues)

    return replace(r, skipped=esc(r.skipped), degraded=esc(r.degraded))


def index_command(args: Any, kb: object, *extra: str, model: str | None = None) -> str:
    """`groove-tui index KB` with the user's own --config / --index-dir / --model-dir / --model (or
    `model` instead), so the command an error suggests is the one that fixes it (without them it would
    build another index)."""
    words = ["groove-tui index", shlex.quote(str(kb))]
    words += [
        f"--{name.replace('_', '-')} {shlex.quote(str(getattr(args, name)))}"
        for name in ("config", "index_dir", "model_dir")
        if getattr(args, name, None)
    ]
    words += extra
    model = model or getattr(args, "model", None)
    return " ".join(words + ([f"--model {shlex.quote(model)}"] if model else []))
