"""`groove-tui eval`: run a golden file through the search pipeline and score it (reference §I).

groove's eval semantics (§I.3): `limit = max(max(k), --limit)`; no filters at all (the quality filter is
off: `min_quality = 0`); the reranker only when `--reranker` is given; MMR and the parent retriever per
config and flags; one DB snapshot for the whole run. Metrics, fingerprint, history and comparison are
`groove_tui.engine.evaluate.golden`'s; this module is the loop around `Engine.search` plus the text/JSON output.

The history lives in the user data directory (`engine.eval.history_path_for`), never in the KB.
Ours beyond groove: `--legs vector|fts` scores one retrieval leg alone (recorded in the fingerprint, so
runs of different legs are never compared), and the text output lists the queries that missed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_tui.commands.common import CLIError, load_engine, params_for, require_index
from groove_tui.commands.golden_args import EvalError, parse_k_values, resolve_golden, shorten
from groove_tui.engine.evaluate.golden import GoldenSet, load_golden, validate_query
from groove_tui.engine.evaluate.history import (
    Comparison,
    ConfigFingerprint,
    CorpusInfo,
    HistoryError,
    HistoryStore,
    compare,
    corpus_digest,
    format_delta,
    history_path_for,
    make_run,
)
from groove_tui.engine.evaluate.metrics import (
    K_MAX,
    Aggregate,
    MissReason,
    QueryResult,
    aggregate,
    eval_limit,
    eval_params,
    evaluate_query,
    is_hit,
    ranked_hits,
)
from groove_tui.engine.types import json_text
from groove_tui.settings.config import FusionConfig

if TYPE_CHECKING:
    import argparse
    import threading

    from groove_tui.engine import Engine
    from groove_tui.engine.types import SearchParams

TEXT_MISSES = 20  # queries listed in the text output; JSON lists every query


# ================================================================ fingerprint with the legs


@dataclass(frozen=True, slots=True)
class EvalFingerprint(ConfigFingerprint):
    """groove's fingerprint plus `legs` (ours) when one leg runs alone: a vector-only run must never be
    compared with a hybrid one. Hybrid runs serialise exactly like groove's."""

    legs: str = "hybrid"

    def to_json(self) -> dict[str, Any]:
        out = ConfigFingerprint.to_json(self)
        if self.legs != "hybrid":
            out["legs"] = self.legs
        return out


# ================================================================ the run


@dataclass(frozen=True, slots=True)
class EvalOutcome:
    golden: GoldenSet
    golden_path: Path
    fingerprint: EvalFingerprint
    corpus: CorpusInfo
    results: tuple[QueryResult, ...]
    aggregate: Aggregate
    comparison: Comparison | None
    elapsed_s: float
    history_path: Path | None  # None with --no-history
    history_warning: str | None = None
    pending_embeddings: int = 0
    latency_ms: dict[str, float] = field(default_factory=dict)  # per-query search time

    @property
    def is_regression(self) -> bool:
        return self.comparison is not None and self.comparison.is_regression


def corpus_info(engine: Engine) -> CorpusInfo:
    conn = engine.store.conn()
    docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    rows = conn.execute(
        "SELECT d.path, c.chunk_index, c.heading, c.content, c.context_text FROM chunks c "
        "JOIN documents d ON d.id = c.document_id ORDER BY d.path, c.chunk_index"
    )
    chunks = 0

    def counted():
        nonlocal chunks
        for row in rows:
            chunks += 1
            yield row

    digest = corpus_digest(counted())
    return CorpusInfo(documents=docs, chunks=chunks, digest=digest)


def run_eval(
    engine: Engine,
    golden: GoldenSet,
    params: SearchParams,
    k_values: Sequence[int],
    *,
    progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
    latencies: list[float] | None = None,
    explain_misses: bool = True,
) -> tuple[tuple[QueryResult, ...], Aggregate, CorpusInfo]:
    """Search every golden query with `params` inside one read snapshot; per-query results (with the stage
    that lost each expected entry missing from the first max(k), `explain_misses`), the means and the
    corpus the run saw. `latencies` collects each search's total milliseconds."""
    conn = engine.store.conn()
    conn.execute("BEGIN")  # a deferred read transaction: the first read pins the WAL snapshot
    try:
        corpus = corpus_info(engine)
        results: list[QueryResult] = []
        total = len(golden.queries)
        for i, q in enumerate(golden.queries):
            if progress is not None:
                progress(i, total)
            resp = engine.search(q.query, params, cancel)
            if latencies is not None:
                latencies.append(resp.timings_ms.get("total", 0.0))
            top = ranked_hits(resp.results)
            result = QueryResult(q, top, evaluate_query(q, top, k_values))
            if explain_misses:
                result = replace(result, misses=miss_reasons(engine, result, params, resp, max(k_values)))
            results.append(result)
        if progress is not None:
            progress(total, total)
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")
    return tuple(results), aggregate([r.metrics for r in results], k_values), corpus


def evaluate_kb(engine: Engine, args: argparse.Namespace, params: SearchParams, *, progress=None) -> EvalOutcome:
    """Everything `groove-tui eval` does except printing: load, run, compare, record."""
    config = engine.config
    golden_path = resolve_golden(engine, getattr(args, "golden", None))
    golden = load_golden(golden_path, validate_query=validate_query)
    if not golden.queries:
        raise EvalError(f"{golden_path}: the golden file has no queries")
    ks = parse_k_values(getattr(args, "k", None), config.eval.k_values)
    limit_arg = getattr(args, "limit", None)
    if limit_arg is not None and limit_arg < 0:
        raise EvalError(f"--limit {limit_arg} is invalid: expected an integer in [0, {K_MAX}]")
    limit = eval_limit(ks, limit_arg)
    legs = getattr(args, "legs", None) or "hybrid"
    reranker_given = getattr(args, "reranker", None) not in (None, "", "none")
    params = eval_params(params, limit=limit, legs=legs, reranker_given=reranker_given)
    base = ConfigFingerprint.from_settings(
        config,
        params,
        model=engine.model_id,
        limit=limit,
        k_values=ks,
        golden_hash=golden.sha256 or "",
        context_static=engine.store.get_meta("context_mode") == "static",
        # Read from the index, not the command line: whether the dictionary was pulled when it was built.
        japanese_words=engine.store.words_analyzer_recorded() if engine.store.has_kanji_or_kana() else None,
        passage_tokens=engine.passage_tokens(),
    )
    fingerprint = EvalFingerprint(**{f.name: getattr(base, f.name) for f in fields(ConfigFingerprint)}, legs=legs)

    started = time.perf_counter()
    latencies: list[float] = []
    results, agg, corpus = run_eval(engine, golden, params, ks, progress=progress, latencies=latencies)
    elapsed = time.perf_counter() - started

    store = HistoryStore(history_path_for(engine.kb_path), config.eval.history_size)
    try:
        previous = latest_comparable(store.load(), fingerprint)
        comparison = compare(previous, fingerprint, agg, config.eval.regression_threshold)
        if not getattr(args, "no_history", False):
            store.append(make_run(fingerprint, corpus, results, agg))
    except (HistoryError, OSError) as exc:
        raise EvalError(f"{exc} (use --no-history to skip recording)") from exc
    return EvalOutcome(
        golden=golden,
        golden_path=golden_path,
        fingerprint=fingerprint,
        corpus=corpus,
        results=results,
        aggregate=agg,
        comparison=comparison,
        elapsed_s=elapsed,
        history_path=None if getattr(args, "no_history", False) else store.path,
        history_warning=store.warning,
        pending_embeddings=engine.store.pending_count(),
        latency_ms=_latency(latencies),
    )


def _latency(samples: list[float]) -> dict[str, float]:
    """p50 / p95 / mean of the per-query search time (ms, query embedding included)."""
    if not samples:
        return {}
    ordered = sorted(samples)

    def pct(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))], 2)

    return {"p50": pct(50), "p95": pct(95), "mean": round(sum(ordered) / len(ordered), 2)}


def latest_comparable(runs: Sequence[dict[str, Any]], fingerprint: ConfigFingerprint) -> dict[str, Any] | None:
    """The newest recorded run with exactly this fingerprint. groove compares with the newest run only;
    we skip over runs of other configurations (another --legs, another λ) so alternating between
    settings still diffs each against its own last run."""
    want = fingerprint.to_json()
    return next((r for r in runs if r.get("fingerprint") == want), None)


# ================================================================ misses


@dataclass(frozen=True, slots=True)
class Miss:
    """An expected entry that was not among a query's first k results."""

    path: str
    heading: str | None
    rank: int | None  # where it was found in the (longer) result list, if at all


def miss_reasons(
    engine: Engine, result: QueryResult, params: SearchParams, resp: Any, k: int
) -> tuple[MissReason, ...]:
    """Why each expected entry missing from the first k is missing: the walk of `Engine.why` over the page
    the query got (no fixes, no ranks below a pool: the stage is what an evaluation counts)."""
    from groove_tui.engine.errors import UnknownNote

    out = []
    for m in misses(result, k):
        target = m.path + (f"#{m.heading}" if m.heading else "")
        try:
            report = engine.why(result.query.query, target, params, fixes=False, ranks=False, response=resp)
        except UnknownNote as exc:
            out.append(MissReason(m.path, m.heading, "not_indexed", str(exc)))
            continue
        verdict = report.verdict
        if verdict in ("shown", "merged"):  # on the page, below k
            verdict = "below_k"
        out.append(MissReason(m.path, m.heading, verdict, report.summary, report.fused_rank))
    return tuple(out)


def misses(result: QueryResult, k: int) -> list[Miss]:
    out = []
    for e in result.query.expected:
        rank = next((h.rank for h in result.top_k if is_hit(e, h.path, h.heading)), None)
        if rank is None or rank > k:
            out.append(Miss(e.path, e.heading, rank))
    return out


# ================================================================ output


def config_summary(fp: ConfigFingerprint) -> str:
    parts = [f"legs {getattr(fp, 'legs', 'hybrid')}", f"limit {fp.limit}"]
    parts.append(f"reranker {fp.reranker}" if fp.reranker else "no reranker")
    if fp.mmr is not None:
        parts.append(f"MMR λ {fp.mmr[0]:g} penalty {fp.mmr[1]:g}")
    if fp.parent_retriever is not None:
        parts.append("parent retriever {}/{}".format(*fp.parent_retriever))
    if fp.fusion is None:
        parts.append("fusion rrf")
    else:
        knobs = dict(fp.fusion)
        defaults = {f.name: getattr(FusionConfig(), f.name) for f in fields(FusionConfig)}
        changed = [f"{k}={v:g}" for k, v in knobs.items() if k != "method" and v != defaults.get(k)]
        parts.append(" ".join([f"fusion {knobs.get('method', 'rrf')}", *changed]))
    if fp.context_static:
        parts.append("contextual")
    parts.append("cjk bigram" if fp.cjk_bigram else "no cjk bigram")
    if not fp.merge_parts:
        parts.append("parts unmerged")
    return ", ".join(parts)


def format_text(out: EvalOutcome, *, color: bool = False, max_misses: int = TEXT_MISSES) -> str:
    from groove_tui.output.textout import sanitize

    fp, agg, cmp = out.fingerprint, out.aggregate, out.comparison
    red, green, reset = ("\x1b[31m", "\x1b[32m", "\x1b[0m") if color else ("", "", "")

    def delta(d: float | None) -> str:
        if cmp is None or d is None:
            return ""
        t = format_delta(d, cmp.threshold)
        shade = (green if d > 0 else red) if t.beyond_threshold else ""
        return f"  {shade}{t.text}{reset if shade else ''}"

    lines = [
        f"golden   {sanitize(str(out.golden_path))} ({agg.query_count} judged queries of {len(out.results)})",
        f"model    {sanitize(fp.model)}",
        f"config   {config_summary(fp)}",
        f"corpus   {out.corpus.documents:,} documents, {out.corpus.chunks:,} chunks",
    ]
    if out.pending_embeddings:
        lines.append(f"warning  {out.pending_embeddings:,} chunks have no vector yet: the vector leg is partial")
    lines.append("")
    lines.append(f"{'k':>5}  {'recall@k':>9}{'':9}  {'nDCG@k':>9}")
    for k in fp.k_values:
        r = agg.recall_at_k.get(k, 0.0)
        n = agg.ndcg_at_k.get(k, 0.0)
        rd = delta(cmp.recall_delta.get(k)) if cmp else ""
        nd = delta(cmp.ndcg_delta.get(k)) if cmp else ""
        lines.append(f"{k:>5}  {r:>9.4f}{rd:<9}  {n:>9.4f}{nd}")
    lines.append(f"{'MRR':>5}  {agg.mrr:>9.4f}{delta(cmp.mrr_delta) if cmp else ''}")
    lines.append("")
    if cmp is not None:
        since = f" ({cmp.previous_timestamp})" if cmp.previous_timestamp else ""
        verdict = (
            f"{red}REGRESSION{reset}: a metric dropped by more than {cmp.threshold:g}"
            if cmp.is_regression
            else f"no regression (threshold {cmp.threshold:g})"
        )
        lines.append(f"vs previous run{since}: {verdict}")
    else:
        lines.append("no comparable previous run (first run with this configuration, golden file and model)")

    k = max(fp.k_values)
    missed = [(r, m) for r in out.results if r.query.expected for m in [misses(r, k)] if m]
    if missed:
        lines.append("")
        lines.append(f"missed at k={k}: {len(missed)} of {agg.query_count} queries")
        for missed_result, ms in missed[:max_misses]:
            q = missed_result.query
            label = shorten(q.query, 70)
            if q.id != q.query[: len(q.id)]:
                label = f"{q.id}: {label}"
            lines.append(f"  {sanitize(label)}")
            reasons = {(r.path, r.heading): r for r in missed_result.misses}
            for m in ms:
                target = m.path + (f"#{m.heading}" if m.heading else "")
                found = f"rank {m.rank}" if m.rank is not None else f"not in the top {fp.limit}"
                reason = reasons.get((m.path, m.heading))
                why = f"; {reason.verdict}: {shorten(reason.summary, 90)}" if reason is not None else ""
                lines.append(f"      {sanitize(target)}  ({found}{sanitize(why)})")
        if len(missed) > max_misses:
            lines.append(f"  … {len(missed) - max_misses} more (--format json lists every query)")
        table = miss_table(out.results)
        if table:
            total = sum(n for _, n, _ in table)
            lines.append("")
            lines.append(f"where the {total} missing entries were lost (the stage each fell out at):")
            for stage, n, what in table:
                lines.append(f"  {stage:<12} {n:>5}  {n / total:>4.0%}  {what}")
    lines.append("")
    saved = f"; history {out.history_path}" if out.history_path else "; not recorded (--no-history)"
    lat = out.latency_ms
    per_query = f" (search p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms)" if lat else ""
    lines.append(f"{len(out.results)} queries in {out.elapsed_s:.2f} s{per_query}{saved}")
    if out.history_warning:
        lines.append(f"warning  {out.history_warning}")
    return "\n".join(lines) + "\n"


# What each stage a miss can be lost at means, in the order of the pipeline (the eval's table).
MISS_STAGES = {
    "not_indexed": "not in the index",
    "filtered": "a filter dropped it",
    "quality": "the quality filter dropped it",
    "excluded": "an exclusion term matches it",
    "not_matched": "no leg found it",
    "below_pool": "matched, below every leg's pool",
    "below_page": "fused below the page",
    "reranker": "the reranker moved it off",
    "mmr": "MMR moved it off",
    "below_k": "on the page, below k",
}


def miss_table(results: Sequence[QueryResult]) -> list[tuple[str, int, str]]:
    """(stage, count, what it means) for every stage that lost a missing entry, in pipeline order."""
    counts: dict[str, int] = {}
    for r in results:
        for m in r.misses:
            counts[m.verdict] = counts.get(m.verdict, 0) + 1
    return [(stage, counts[stage], what) for stage, what in MISS_STAGES.items() if counts.get(stage)]


def to_json(out: EvalOutcome) -> dict[str, Any]:
    """The history record (groove's run shape: timestamp, fingerprint, corpus, per_query, aggregate) plus
    the comparison, the elapsed time and where the history went."""
    run = make_run(out.fingerprint, out.corpus, out.results, out.aggregate)
    cmp = out.comparison
    run["comparison"] = None
    if cmp is not None:
        run["comparison"] = {
            "previous_timestamp": cmp.previous_timestamp,
            "previous": cmp.previous.to_json(),
            "delta": {
                "recall_at_k": {str(k): v for k, v in sorted(cmp.recall_delta.items())},
                "mrr": cmp.mrr_delta,
                "ndcg_at_k": {str(k): v for k, v in sorted(cmp.ndcg_delta.items())},
            },
            "threshold": cmp.threshold,
            "is_regression": cmp.is_regression,
        }
    for entry, result in zip(run["per_query"], out.results, strict=True):
        entry["misses"] = [m.to_json() for m in result.misses]
    run["misses_by_stage"] = {stage: n for stage, n, _ in miss_table(out.results)}
    run["golden"] = str(out.golden_path)
    run["elapsed_seconds"] = round(out.elapsed_s, 3)
    run["latency_ms"] = out.latency_ms
    run["history"] = str(out.history_path) if out.history_path else None
    run["pending_embeddings"] = out.pending_embeddings
    return run


# ================================================================ the command


def run_eval_command(engine: Engine, args: argparse.Namespace, params: SearchParams) -> int:
    from groove_tui.output import records
    from groove_tui.output.progress import with_progress
    from groove_tui.output.textout import use_color

    recording = records.begin(getattr(args, "record", None), "eval", getattr(args, "argv", None), engine.kb_path)
    outcome = with_progress("eval", lambda progress: evaluate_kb(engine, args, params, progress=progress))
    records.record_eval(recording, to_json(outcome), args)
    if getattr(args, "format", "text") == "json":
        print(json_text(to_json(outcome), allow_nan=False))
    else:
        sys.stdout.write(format_text(outcome, color=use_color(sys.stdout)))
    if outcome.is_regression:
        print("groove-tui: eval regression beyond the threshold", file=sys.stderr)
        if getattr(args, "fail_on_regression", False):
            return 1
    return 0


def run(args: argparse.Namespace) -> int:
    if args.embedded_share is not None:
        return _eval_at_share(args)
    return _eval(args)


def _eval(args: argparse.Namespace) -> int:
    with load_engine(args, readonly=True) as engine:
        require_index(engine, args)
        if args.compare:
            if getattr(args, "record", None):
                raise CLIError(
                    "--record is invalid with --compare: it records one setting's figures; run eval once per setting"
                )
            from groove_tui.commands.eval_compare import run_compare_command

            return run_compare_command(engine, args, params_for(engine, args))
        return run_eval_command(engine, args, params_for(engine, args))


def _eval_at_share(args: argparse.Namespace) -> int:
    """eval on a temporary copy of the index with a seeded share of its chunks embedded (engine/index/coverage.py)."""
    import tempfile

    from groove_tui.engine import DB_NAME
    from groove_tui.engine.index.coverage import copy_with_share
    from groove_tui.settings.paths import index_dir_for

    share = args.embedded_share
    with load_engine(args, readonly=True) as engine:
        require_index(engine, args)
        source, kb = engine.store.db_path, engine.kb_path
    with tempfile.TemporaryDirectory(prefix="groove-tui-share-") as root:
        kept, pending = copy_with_share(source, index_dir_for(kb, root) / DB_NAME, share, args.share_seed)
        print(
            f"groove-tui: evaluating a copy of the index with {kept:,} chunks embedded and {pending:,} pending "
            f"(share {share:g}, seed {args.share_seed}); not recorded in the history",
            file=sys.stderr,
        )
        copied = argparse.Namespace(**{**vars(args), "index_dir": root, "no_history": True})
        return _eval(copied)
