"""`groove-tui eval --compare A B`: one golden set under two settings, query by query.

Each side is either settings (`'mmr=true mmr_lambda=0.5'`, names as in `engine.knobs`) applied on top of
the command's config and flags, or a groove.toml whose `[search]` tables and reranker are used. Both
sides search the same index in one read snapshot; the output is `engine.winloss`'s table (sorted by
delta, with counts and a sign test and bootstrap p-value) as text or JSON. Nothing is recorded in the
eval history: a comparison is not a run of one configuration.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_tui.commands.golden_args import EvalError, parse_k_values, resolve_golden, shorten
from groove_tui.engine.evaluate.golden import load_golden, validate_query
from groove_tui.engine.evaluate.knobs import KnobError, apply_settings, describe, parse_settings
from groove_tui.engine.evaluate.metrics import Aggregate, aggregate, eval_params
from groove_tui.engine.evaluate.sweep import score_golden
from groove_tui.engine.evaluate.winloss import WinLoss, metric_label, wins_losses
from groove_tui.engine.types import json_text
from groove_tui.settings.config import Config, load_config

if TYPE_CHECKING:
    import argparse

    from groove_tui.engine import Engine
    from groove_tui.engine.types import SearchParams


@dataclass(frozen=True, slots=True)
class Side:
    label: str  # what the user passed, for the output
    config: Config
    params: SearchParams


def resolve_side(spec: str, config: Config, params: SearchParams) -> Side:
    """A settings string, or a path to a groove.toml (anything ending in .toml, or an existing file)."""
    path = Path(spec).expanduser()
    if spec.endswith(".toml") or path.is_file():
        other = load_config(path)
        merged = replace(
            config,
            search=other.search,
            reranker=replace(
                config.reranker,
                model=other.reranker.model,
                pool=other.reranker.pool,
                blend=other.reranker.blend,
                rerank_by_default=other.reranker.rerank_by_default,
            ),
        )
        s = other.search
        rr = other.reranker
        p = replace(
            params,
            mmr=s.mmr.enabled,
            mmr_lambda=s.mmr.lambda_,
            mmr_same_doc_penalty=s.mmr.same_doc_penalty,
            parent_retriever=s.parent_retriever.enabled,
            fusion=s.fusion.method,
            reranker=rr.model if (rr.model and rr.rerank_by_default) else None,
        )
        return Side(str(path), merged, p)
    try:
        settings = parse_settings(spec)
        cfg, p = apply_settings(config, params, settings)
    except KnobError as exc:
        raise KnobError(f"--compare {spec!r}: {exc}") from None
    return Side(describe(settings), cfg, p)


@dataclass(frozen=True, slots=True)
class CompareOutcome:
    left: Side
    right: Side
    left_aggregate: Aggregate
    right_aggregate: Aggregate
    table: WinLoss
    golden_path: Path
    k_values: tuple[int, ...]


def compare_kb(engine: Engine, args: argparse.Namespace, params: SearchParams, *, progress=None) -> CompareOutcome:
    golden_path = resolve_golden(engine, getattr(args, "golden", None))
    golden = load_golden(golden_path, validate_query=validate_query)
    if not golden.queries:
        raise EvalError(f"{golden_path}: the golden file has no queries")
    ks = parse_k_values(getattr(args, "k", None), engine.config.eval.k_values)
    metric = getattr(args, "metric", None) or "ndcg"
    k = max(ks)
    sides = []
    for spec in args.compare:
        side = resolve_side(spec, engine.config, params)
        # Each side's own reranker choice counts as named: a side is an explicit configuration.
        p = eval_params(
            side.params,
            limit=max(ks),
            legs=getattr(args, "legs", None) or "hybrid",
            reranker_given=side.params.reranker is not None,
        )
        sides.append(replace(side, params=p))
    conn = engine.store.conn()
    conn.execute("BEGIN")  # one snapshot for both sides
    runs = []
    try:
        n = len(golden.queries)
        for i, side in enumerate(sides):
            step = None if progress is None else (lambda done, _t, o=i * n: progress(o + done, 2 * n))
            results, _times = score_golden(
                engine.ranking_variant(side.config).search, golden, side.params, ks, progress=step
            )
            runs.append(results)
        if progress is not None:
            progress(2 * n, 2 * n)
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")
    table = wins_losses(runs[0], runs[1], metric=metric, k=k)
    return CompareOutcome(
        left=sides[0],
        right=sides[1],
        left_aggregate=aggregate([r.metrics for r in runs[0]], ks),
        right_aggregate=aggregate([r.metrics for r in runs[1]], ks),
        table=table,
        golden_path=golden_path,
        k_values=ks,
    )


def format_text(out: CompareOutcome, *, max_rows: int | None = None) -> str:
    from groove_tui.output.textout import sanitize

    t = out.table
    k = max(out.k_values)
    la, ra = out.left_aggregate, out.right_aggregate
    lines = [
        f"golden  {sanitize(str(out.golden_path))} ({len(t.rows)} judged queries)",
        f"left    {sanitize(out.left.label)}",
        f"right   {sanitize(out.right.label)}",
        "",
        f"{'':>9}  {'recall@' + str(k):>9}  {'MRR':>7}  {'nDCG@' + str(k):>8}",
        f"{'left':>9}  {la.recall_at_k.get(k, 0.0):>9.4f}  {la.mrr:>7.4f}  {la.ndcg_at_k.get(k, 0.0):>8.4f}",
        f"{'right':>9}  {ra.recall_at_k.get(k, 0.0):>9.4f}  {ra.mrr:>7.4f}  {ra.ndcg_at_k.get(k, 0.0):>8.4f}",
        "",
        f"{t.label}: improved {t.improved} · worsened {t.worsened} · unchanged {t.unchanged} · "
        f"mean Δ {t.mean_delta:+.4f} · sign test p = {t.sign_p:.3g} · bootstrap p = {t.bootstrap_p:.3g}",
    ]
    changed = [r for r in t.rows if r.outcome != "unchanged"]
    if changed:
        shown = changed if max_rows is None else changed[:max_rows]
        lines += ["", f"{'Δ':>8}  {'left':>6}  {'right':>6}  query (sorted by Δ; unchanged queries not listed)"]
        for r in shown:
            label = r.query if r.id == r.query[: len(r.id)] else f"{r.id}: {r.query}"
            lines.append(f"{r.delta:>+8.4f}  {r.left:>6.4f}  {r.right:>6.4f}  {sanitize(shorten(label, 80))}")
        if len(shown) < len(changed):
            lines.append(f"… {len(changed) - len(shown)} more (--format json lists every query)")
    return "\n".join(lines) + "\n"


def to_json(out: CompareOutcome) -> dict[str, Any]:
    return {
        "golden": str(out.golden_path),
        "left": {"settings": out.left.label, "aggregate": out.left_aggregate.to_json()},
        "right": {"settings": out.right.label, "aggregate": out.right_aggregate.to_json()},
        "metric": metric_label(out.table.metric, out.table.k),
        "wins_losses": out.table.to_json(),
    }


def run_compare_command(engine: Engine, args: argparse.Namespace, params: SearchParams) -> int:
    from groove_tui.output.progress import with_progress

    out = with_progress("compare", lambda progress: compare_kb(engine, args, params, progress=progress))
    if getattr(args, "format", "text") == "json":
        print(json_text(to_json(out), allow_nan=False))
    else:
        sys.stdout.write(format_text(out))
    return 0
