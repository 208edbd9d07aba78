"""`groove-tui sweep`: a golden set scored at every value of one or two settings, as a table, JSON or a
terminal chart. The loop is `engine.sweep.run_sweep`; eval semantics (no filters, limit = max k, the
reranker only when named) are `groove-tui eval`'s, so each row equals an eval run at that value."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from groove_tui.commands.common import load_engine, params_for, require_index
from groove_tui.commands.golden_args import EvalError, parse_k_values, resolve_golden
from groove_tui.engine.evaluate.golden import load_golden, validate_query
from groove_tui.engine.evaluate.metrics import eval_params
from groove_tui.engine.evaluate.sweep import SweepResult, parse_axis, run_sweep
from groove_tui.engine.types import json_text

if TYPE_CHECKING:
    import argparse

    from groove_tui.engine import Engine
    from groove_tui.engine.types import SearchParams

BAR_WIDTH = 40


def sweep_kb(engine: Engine, args: argparse.Namespace, params: SearchParams, *, progress=None) -> SweepResult:
    if not args.param:
        raise EvalError("no --param: name a setting to sweep, e.g. --param mmr_lambda=0:1:0.1")
    if len(args.param) > 2:
        raise EvalError(f"{len(args.param)} --param options: a sweep takes one, or two for a grid")
    axes = tuple(parse_axis(spec) for spec in args.param)
    golden_path = resolve_golden(engine, getattr(args, "golden", None))
    golden = load_golden(golden_path, validate_query=validate_query)
    if not golden.queries:
        raise EvalError(f"{golden_path}: the golden file has no queries")
    ks = parse_k_values(getattr(args, "k", None), engine.config.eval.k_values)
    reranker_given = getattr(args, "reranker", None) not in (None, "", "none")
    p = eval_params(params, limit=max(ks), legs=getattr(args, "legs", None) or "hybrid", reranker_given=reranker_given)
    return run_sweep(engine, golden, p, axes, ks, progress=progress)


def format_table(result: SweepResult, metric: str = "ndcg") -> str:
    k = max(result.k_values)
    best = result.best(metric)
    names = [a.name for a in result.axes]
    widths = [max(len(n), *(len(_v(p.settings[i][1])) for p in result.points)) for i, n in enumerate(names)]
    head = "  ".join(f"{n:<{w}}" for n, w in zip(names, widths, strict=True))
    lines = [
        f"  {head}  {'recall@' + str(k):>9}  {'MRR':>7}  {'nDCG@' + str(k):>8}  "
        f"{'docs@' + str(k):>7}  {'search ms':>9}  {'s':>6}"
    ]
    for p in result.points:
        cells = "  ".join(f"{_v(v):<{w}}" for (_n, v), w in zip(p.settings, widths, strict=True))
        mark = "*" if p is best else " "
        a = p.aggregate
        lines.append(
            f"{mark} {cells}  {a.recall_at_k.get(k, 0.0):>9.4f}  {a.mrr:>7.4f}  {a.ndcg_at_k.get(k, 0.0):>8.4f}"
            f"  {p.diversity:>7.2f}  {p.search_ms:>9.2f}  {p.seconds:>6.2f}"
        )
    lines.append("")
    label = {"ndcg": f"nDCG@{k}", "recall": f"recall@{k}", "mrr": "MRR"}[metric]
    lines.append(
        f"* best {label}: {best.label()} ({best.metric(metric, k):.4f}); docs@{k} = distinct documents "
        f"in the top {k}, mean over judged queries; search ms = median per query"
    )
    for note in result.notes:
        lines.append(f"note: {note}")
    queries = len(result.points[0].results) if result.points else 0
    lines.append(f"{len(result.points)} points × {queries} queries in {result.seconds:.2f} s")
    return "\n".join(lines) + "\n"


def format_plot(result: SweepResult, metric: str = "ndcg", width: int = BAR_WIDTH) -> str:
    """A terminal chart: one bar per value (one axis), or a shaded grid of the metric (two axes)."""
    k = max(result.k_values)
    label = {"ndcg": f"nDCG@{k}", "recall": f"recall@{k}", "mrr": "MRR"}[metric]
    values = [p.metric(metric, k) for p in result.points]
    lo, hi = min(values), max(values)
    if len(result.axes) == 2:
        return _heatmap(result, metric, k, label, lo, hi)
    best = result.best(metric)
    name = result.axes[0].name
    w = max(len(name), *(len(_v(p.settings[0][1])) for p in result.points))
    lines = [f"{name:<{w}}  {label} (bar from {lo:.4f} to {hi:.4f})  and distinct docs@{k}"]
    for p, v in zip(result.points, values, strict=True):
        frac = 1.0 if hi == lo else (v - lo) / (hi - lo)
        cells = frac * width
        bar = "█" * int(cells) + (_EIGHTHS[int((cells - int(cells)) * 8)] if cells < width else "")
        mark = " ← best" if p is best else ""
        lines.append(f"{_v(p.settings[0][1]):<{w}}  ▏{bar:<{width}} {v:.4f}  {p.diversity:5.2f}{mark}")
    return "\n".join(lines) + "\n"


_EIGHTHS = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]
_SHADES = " ░▒▓█"


def _heatmap(result: SweepResult, metric: str, k: int, label: str, lo: float, hi: float) -> str:
    a, b = result.axes
    by = {(p.settings[0][1], p.settings[1][1]): p.metric(metric, k) for p in result.points}
    w = max(len(a.name), *(len(_v(v)) for v in a.values))
    cols = [_v(v) for v in b.values]
    cw = max(7, *(len(c) for c in cols))
    lines = [
        f"{label} by {a.name} (rows) × {b.name} (columns); shade from {lo:.4f} to {hi:.4f}",
        f"{'':<{w}}  " + " ".join(f"{c:>{cw}}" for c in cols),
    ]
    for va in a.values:
        cells = []
        for vb in b.values:
            v = by[(va, vb)]
            shade = _SHADES[0 if hi == lo else min(4, int((v - lo) / (hi - lo) * 4.999))]
            cells.append(f"{shade}{v:>{cw - 1}.4f}")
        lines.append(f"{_v(va):<{w}}  " + " ".join(cells))
    best = result.best(metric)
    lines.append(f"best: {best.label()} ({best.metric(metric, k):.4f})")
    return "\n".join(lines) + "\n"


def _v(value: Any) -> str:
    from groove_tui.engine.evaluate.knobs import format_value

    return format_value(value)


def run_sweep_command(engine: Engine, args: argparse.Namespace, params: SearchParams) -> int:
    from groove_tui.output.progress import with_progress

    result = with_progress("sweep", lambda progress: sweep_kb(engine, args, params, progress=progress))
    metric = getattr(args, "metric", "ndcg")
    if getattr(args, "format", "text") == "json":
        print(json_text(result.to_json(), allow_nan=False))
        return 0
    if getattr(args, "plot", False):
        sys.stdout.write(format_plot(result, metric))
        sys.stdout.write("\n")
    sys.stdout.write(format_table(result, metric))
    return 0


def run(args: argparse.Namespace) -> int:
    with load_engine(args, readonly=True) as engine:
        require_index(engine, args)
        return run_sweep_command(engine, args, params_for(engine, args))
