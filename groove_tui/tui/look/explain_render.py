"""The explain panel's text: one hit's path through the pipeline (leg ranks and scores, the fusion terms, each
stage's trace) and the compiled query, as Rich `Text` built without markup."""

from __future__ import annotations

import math
from collections.abc import Mapping

from rich.console import Console
from rich.style import Style
from rich.text import Text

from groove_tui.engine.types import ConfidenceReading, Hit, HitTrace, QueryInfo
from groove_tui.output.textout import confidence_tests, escape_name, scale_text
from groove_tui.tui.look.render import fmt_score, one_line

LABEL_CELLS = 18  # "  " and a 16-cell label
MIN_VALUE_CELLS = 12  # under this, a value column would hold a word or two a line: plain wrapping reads better
_MEASURE = Console(width=1000, color_system=None, legacy_windows=False)  # only measures (Text.wrap needs one)

FUSION_HEADINGS = {  # the explain panel's fusion stage: the label and what the method reads
    "dbsf": "DBSF (scores by spread)",
    "relative": "relative scores (min-max)",
    "rrf": "RRF",
}


def _num(v: float | None, digits: int = 4) -> str:
    if v is None:
        return "—"
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return f"{v:.{digits}f}"


def _rank(v: int | None) -> str:
    return "—" if v is None else f"#{v}"


def explain_text(
    hit: Hit | None,
    query: QueryInfo | None,
    timings: Mapping[str, float] | None = None,
    *,
    rank: int | None = None,
    head_style: Style | str = "bold underline",
    width: int | None = None,
    confidence: ConfidenceReading | None = None,
) -> Text:
    """The compiled query and the focused hit's trace, stage by stage. With `width` (the pane's cells), a
    value too long for the line wraps under itself, clear of the labels' column."""
    t = Text()

    def head(label: str) -> None:
        if t:
            t.append("\n")
        t.append(label, style=head_style)
        t.append("\n")

    def row(label: str, value: str | Text) -> None:
        t.append(f"  {label:<16}", style="dim")
        text = value if isinstance(value, Text) else Text(one_line(value))
        room = (width or 0) - LABEL_CELLS
        if width is None or room < MIN_VALUE_CELLS or text.cell_len <= room:
            t.append_text(text)  # (a pane too narrow for a column of values just wraps)
        else:
            for i, line in enumerate(text.wrap(_MEASURE, room)):
                if i:
                    t.append("\n" + " " * LABEL_CELLS)
                line.rstrip()
                t.append_text(line)
        t.append("\n")

    if query is not None:
        head("Query")
        row("include", " | ".join(query.include) or "—")
        row("exclude", " | ".join(query.exclude) or "—")
        row("positive text", query.positive_text or "—")
        row("match_expr", query.match_expr or "—")
        row("bigram_expr", query.bigram_expr or "—")
        row("word_expr", query.word_expr or "—")
    if confidence is not None:  # the page's low-confidence verdict and the tests behind it
        head("Page")
        for test, reading in confidence_tests(confidence):
            row(test, reading)
    if hit is None:
        head("Hit")
        t.append("  no hit focused\n", style="dim")
    else:
        head(f"Hit {'#' + str(rank) if rank else ''}".strip())
        row("path", escape_name(hit.path))
        row("heading", escape_name(hit.heading) if hit.heading else "—")
        row("chunk", f"index {hit.chunk_index} · id {hit.chunk_id} · line {hit.line}")
        row("final score", fmt_score(hit.score))
        tr: HitTrace | None = hit.trace
        if tr is None:
            t.append("  no trace (search without explain)\n", style="dim")
        else:
            head("1 · Vector leg")
            row("rank", _rank(tr.vector_rank))
            row("distance", _num(tr.vector_distance))
            if tr.fusion == "dbsf" and tr.vector_distance is not None:  # what dbsf reads: 1 - d²/2
                row("cosine", _num(1.0 - tr.vector_distance**2 / 2.0))
            head("2 · Full-text leg")
            row("rank", _rank(tr.fts_rank))
            row("bm25", _num(tr.fts_bm25))
            if tr.bigram_leg:  # a CJK query's bigram full-text leg (docs/groove-compatibility.md, 6)
                row("bigram rank", _rank(tr.bigram_rank))
                row("bigram bm25", _num(tr.bigram_bm25))
            if tr.word_leg:  # whole words, stemmed ([search] word_leg)
                row("word rank", _rank(tr.word_rank))
                row("word bm25", _num(tr.word_bm25))
            if tr.named:  # the name lookup: a leg of its own
                row("name", f"the query is this section's {tr.name_kind or 'heading'}")
            head("3 · Fusion: " + FUSION_HEADINGS.get(tr.fusion, tr.fusion))
            shares = dict(tr.lexical_shares)
            weights = {"vector": tr.vector_weight, **shares}
            for leg, value in tr.fusion_terms():  # the terms in the order they are added: they sum to the score
                weight = weights.get(leg)
                note = f"  (weight {weight:.3g})" if weight is not None else ""
                if leg == "vector" and tr.vector_imputed:
                    note += "  (no vector yet: its full-text reading stands in)"
                if leg == "name":
                    note = "  (what topping every family earns × name_weight)"
                row(f"{leg} term", _num(value, 6) + note)
            if len(shares) > 1:  # the full-text legs vote once, as a family
                row("full-text legs", " + ".join(f"{leg} {w:.3g}" for leg, w in shares.items()) + " of fts_weight")
            if tr.vector_share is not None:  # vectors pending: unembedded hits take their full-text reading
                row(
                    "vector share",
                    f"{tr.vector_share:.0%} of full-text hits embedded: vector weight × {tr.vector_share:.2f}; "
                    "the others' vector terms are their full-text readings",
                )
            row("score", _num(tr.rrf_score, 6))
            row("fused rank", _rank(tr.rrf_rank))
            for leg, reads, scale in tr.scales():  # score fusions: where each leg's 0 and 1 lie
                if scale is not None:
                    row(f"{leg} scale", scale_text(reads, scale))
            if tr.merged_parts:  # parts of a split section fused as this one hit ([search] merge_parts)
                row("merged parts", ", ".join(str(p) for p in tr.merged_parts))
            head("4 · Reranker")
            if tr.rerank_score is None:
                row("", "off (not run)")
            else:
                row("score", _num(tr.rerank_score))
                row("rank", _rank(tr.rerank_rank))
                if tr.rerank_blend is not None and tr.rerank_z is not None and tr.fused_z is not None:
                    b = tr.rerank_blend
                    row(
                        "blend",
                        f"{b:g} × z {tr.rerank_z:.4f} (cross-encoder) + {1 - b:g} × z {tr.fused_z:.4f} (fused) "
                        f"= {b * tr.rerank_z + (1 - b) * tr.fused_z:.4f}",
                    )
            head("5 · MMR")
            if tr.mmr is None:
                row("", "off (not run)")
            else:
                m = tr.mmr
                row("pick", f"#{m.pick}")
                row("relevance", _num(m.relevance))
                row("max similarity", _num(m.max_similarity))
                row("penalty", _num(m.penalty))
                row("value", _num(m.value))
            head("6 · Parent retriever")
            if tr.parent is None and hit.expanded_from is None:
                row("", "no merge")
            else:
                row("merge", tr.parent or "")
                ef = hit.expanded_from
                if ef is not None:
                    if ef.kind == "adjacent":
                        row("chunks", f"{ef.from_index}–{ef.to_index}")
                    else:
                        row("whole document", f"{ef.total_chunks} chunks")
                    row("hit range", f"chars {ef.hit_start}–{ef.hit_end} of {len(hit.content)}")
    if timings:
        head("Timings (ms)")
        for k, v in timings.items():
            row(str(k), f"{v:.2f}")
    t.rstrip()
    return t
