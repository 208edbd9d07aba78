"""`groove-tui bench`: search latency per stage and indexing throughput, measured in one process.

One module per mode: `search`, `indexing`, `readers`, `scale`, `watch`; this one runs the mode asked for, judges
the figures against their targets and prints them as text or JSON. Machines are noisy: compare ratios within one
run; medians over repeats.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_tui.commands.bench.indexing import bench_index
from groove_tui.commands.bench.readers import bench_readers
from groove_tui.commands.bench.scale import SCALE_MODEL, run_scale
from groove_tui.commands.bench.search import (
    STAGES,
    bench_rerank,
    bench_search,
    load_queries,
)
from groove_tui.commands.bench.serve import bench_serve, format_serve
from groove_tui.commands.bench.soak import bench_soak, format_soak
from groove_tui.commands.bench.targets import verdicts
from groove_tui.commands.bench.watch import run_watch
from groove_tui.commands.common import CLIError, config_for, load_engine
from groove_tui.output import textout

if TYPE_CHECKING:
    import argparse

    from groove_tui.engine import Engine


# ================================================================ CLI start-up


def _cli(*args: str) -> list[str]:
    exe = Path(sys.executable).parent / "groove-tui"
    return [str(exe), *args] if exe.exists() else [sys.executable, "-m", "groove_tui.cli", *args]


def _wall(cmd: list[str]) -> float:
    """Seconds the command took; a command that fails is an error, never a quick sample."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if done.returncode != 0:
        raise ValueError(f"{' '.join(cmd)} failed: {done.stderr.decode(errors='replace').strip()}")
    return time.perf_counter() - t0


def bench_cli_help(runs: int = 5) -> dict[str, Any] | None:
    """Wall time of `groove-tui --help` in a fresh process (median)."""
    samples = [_wall(_cli("--help")) for _ in range(runs)]
    return {"seconds": round(statistics.median(samples), 3), "runs": [round(x, 3) for x in samples]}


def bench_cli_search(engine: Engine, queries: list[str], config: str | None, runs: int = 2) -> dict[str, Any]:
    """Wall time of a whole `groove-tui search` process (hybrid, the bench's index, model and config; warm
    disk: one search first, untimed), for the first 5 queries `runs` times each (median)."""
    base = ["search", "--index-dir", str(engine.index_dir.parent), "--model", engine.model_id, "--limit", "10"]
    base += ["--config", config] if config else []
    picked = queries[:5]
    _wall(_cli(*base, "--", str(engine.kb_path), picked[0]))  # the disk cache and any one-off preparation
    samples = [_wall(_cli(*base, "--", str(engine.kb_path), q)) for _ in range(runs) for q in picked]
    return {"seconds": round(statistics.median(samples), 3), "runs": [round(x, 3) for x in samples]}


# ================================================================ output


def _format_scale(result: dict[str, Any], sc: dict[str, Any]) -> list[str]:
    syn, ix, s = sc["synthesised"], sc["index"], sc["search"]
    model = result["model"]
    note = (
        " (hashing: no semantics, but e5's dimension, so the KNN scan costs what it would with e5)"
        if model == SCALE_MODEL
        else ""
    )
    lines = [
        "",
        f"scale: {syn['source_documents']:,} docs / {syn['source_chunks']:,} chunks replicated "
        f"{syn['copies']}× under rep{{i}}/ → {ix['documents']:,} docs, {ix['chunks']:,} chunks "
        f"(target {sc['target_chunks']:,}), "
        + (
            f"kept in {sc['kept_in']}"
            if sc.get("kept_in") and "groove-tui-scale-" not in sc["kept_in"]
            else "temporary KB and index (removed)"
        ),
        f"  embedder {model}{note}",
        f"  index: phase one {ix['phase_one_s']:.1f} s, embedding {ix['embed_s']:.1f} s, "
        f"total {ix['seconds']:.1f} s; size {ix['bytes'] / 1e6:,.1f} MB",
        f"  search: {s['queries']} queries × {s['repeat']}, default params, no reranker, "
        "retrieval caches cleared before each; passes alternate pruned (phrase stats kept, as in a session) / "
        "plain / pruned cold",
        f"  {'stage':<18} {'p50 ms':>9} {'p95 ms':>9} {'n':>6}",
    ]
    for name in STAGES:
        st = s["stages_ms"][name]
        if st["n"]:
            lines.append(f"  {name:<18} {_fmt(st['p50']):>9} {_fmt(st['p95']):>9} {st['n']:>6}")
    tm = s["total_minus_embed_ms"]
    lines.append(
        f"  {'total − embed':<18} {_fmt(tm['p50']):>9} {_fmt(tm['p95']):>9} {tm['n']:>6}   "
        "wall clock, query vector cached"
    )
    for v, label in (("plain", "plain FTS5 statement"), ("pruned_cold", "pruned, phrase stats cold")):
        vs = s.get("variants", {}).get(v)
        if vs:
            lines.append(
                f"  {'total − embed':<18} {_fmt(vs['total_minus_embed_ms']['p50']):>9} "
                f"{_fmt(vs['total_minus_embed_ms']['p95']):>9} {vs['total_minus_embed_ms']['n']:>6}   {label} "
                f"(fts {_fmt(vs['fts_ms']['p50'])} / {_fmt(vs['fts_ms']['p95'])})"
            )
    if s.get("identical_results"):
        same = s["identical_results"]
        lines.append(f"  results identical in all three: {same['same']} of {same['queries']} queries")
    per = ", ".join(_fmt(x) for x in s["total_minus_embed_p50_per_repeat"])
    lines.append(
        f"  p50 of each pass: total − embed {per}; total " + ", ".join(_fmt(x) for x in s["total_p50_per_repeat"])
    )
    load = result.get("load_before"), result.get("load_after")
    if load[0] and load[1]:
        lines.append(f"  load average before {load[0][0]:.2f}, after {load[1][0]:.2f} (1 min); {result['cpus']} CPUs")
    return lines


def _format_watch(result: dict[str, Any], w: dict[str, Any]) -> list[str]:
    syn, ix, idle, sv, b = w["synthesised"], w["index"], w["idle"], w["saves"], w["burst"]
    where = f"kept in {w['kept_in']}" if w.get("kept_in") else "a temporary copy (removed)"
    lines = [
        "",
        f"watch: {ix['documents']:,} docs, {ix['chunks']:,} chunks ({syn['copies']} "
        f"cop{'y' if syn['copies'] == 1 else 'ies'} of the KB), {where}; embedder {result['model']}",
        f"  real watcher (OS events, debounce {w['debounce_ms']} ms), up {w['watch_start_s']:.2f} s after it was "
        f"started; searches from a second engine, read-only, open throughout",
        f"  idle: {idle['cpu_percent']:.2f} % CPU ({idle['cpu_seconds']:.3f} s over {idle['seconds']:.1f} s, "
        f"{idle['events']} events)",
        f"  {'save → found':<22} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9} {'n':>5}",
    ]
    for label, key in (
        ("full text", "fts_found_ms"),
        ("vector", "vector_found_ms"),
        ("  embedder alone", "embed_ms"),
        ("  vector − embedder", "vector_minus_embed_ms"),
        ("  vector − full text", "vector_after_fts_ms"),
    ):
        st = sv[key]
        lines.append(f"  {label:<22} {_fmt(st['p50']):>9} {_fmt(st['p95']):>9} {_fmt(st['max']):>9} {st['n']:>5}")
    missed = sv["missed"]
    if missed["fts"] or missed["vector"]:
        lines.append(f"  not found: {missed['fts']} by full text, {missed['vector']} by vector")
    if b.get("files"):
        took = (
            "not indexed in full"
            if b["seconds"] is None
            else f"all found by full text after {b['fulltext_s']:.2f} s, the last batch done after {b['seconds']:.2f} s"
        )
        e = w.get("edit")
        if e and e["files"]:
            lines.append(
                f"  {e['files']} notes saved at once ({e['rewritten']} changed, {e['created']} new): "
                f"{e['batches']} batch{'es' if e['batches'] != 1 else ''}, index work "
                f"{' + '.join(f'{ms:,.0f}' for ms in e['batch_ms']) or '—'} ms"
            )
        lines.append(
            f"  burst: {b['files']:,} files ({b['rewritten']:,} rewritten, {b['created']:,} new) written in "
            f"{b['written_s']:.2f} s, {took}, {b['batches']} batch{'es' if b['batches'] != 1 else ''} "
            f"(files per batch {', '.join(str(n) for n in b['batch_files']) or '—'})"
        )
    for message in w.get("watcher_errors") or ():
        lines.append(f"  watcher error: {message}")
    return lines


def _fmt(x: float | None, unit: str = "") -> str:
    return "—" if x is None else f"{x:.2f}{unit}"


def format_text(result: dict[str, Any]) -> str:
    lines = [f"kb       {result['kb']}", f"model    {result['model']}"]
    if result.get("index_path"):
        lines.append(f"index    {result['index_path']}")
    sc = result.get("scale")
    if sc:
        lines += _format_scale(result, sc)
    if result.get("watch"):
        lines += _format_watch(result, result["watch"])
    if result.get("peers"):
        from groove_tui.commands.bench.peers import format_peers

        lines += format_peers(result["peers"])
    s = result.get("search")
    if s:
        lines += [
            "",
            f"search: {s['queries']} queries × {s['repeat']}, default params, no reranker, caches cleared "
            f"before each search (first search incl. model load: {s['warmup_ms']:.0f} ms)",
            f"  {'stage':<18} {'p50 ms':>9} {'p95 ms':>9} {'n':>6}",
        ]
        for name in STAGES:
            st = s["stages_ms"][name]
            lines.append(f"  {name:<18} {_fmt(st['p50']):>9} {_fmt(st['p95']):>9} {st['n']:>6}")
        tm = s["total_minus_embed_ms"]
        lines.append(
            f"  {'total − embed':<18} {_fmt(tm['p50']):>9} {_fmt(tm['p95']):>9} {tm['n']:>6}   "
            "wall clock, query vector cached"
        )
        w = s["warm_rerun_ms"]
        lines.append(f"  {'λ re-run (warm)':<18} {_fmt(w['p50']):>9} {_fmt(w['p95']):>9} {w['n']:>6}   end to end")
        m = s["mmr_on"]["mmr_stage_ms"]
        lines.append(f"  {'mmr stage (on)':<18} {_fmt(m['p50']):>9} {_fmt(m['p95']):>9} {m['n']:>6}")
        p = s["parent_on"]["parent_stage_ms"]
        lines.append(f"  {'parent stage (on)':<18} {_fmt(p['p50']):>9} {_fmt(p['p95']):>9} {p['n']:>6}   10 hits")
        mp = s["mmr_250_to_10_ms"]
        label = f"MMR {mp['pool']}→{mp['limit']}"
        lines.append(f"  {label:<18} {_fmt(mp['p50']):>9} {_fmt(mp['p95']):>9} {mp['n']:>6}   selection only")
        c = s["cancellation"]
        lines.append(
            f"  {'cancellation':<18} {_fmt(c['p50']):>9} {_fmt(c['max']):>9} {c['n']:>6}   p50 / max after "
            f"cancel at {c['cancel_after_ms']:g} ms ({c['finished_before_cancel']} finished first)"
        )
    rr = result.get("rerank")
    if rr:
        lines += [
            "",
            f"rerank: {rr['model']}, pool {rr['pool']}, max_tokens {rr['max_tokens']}, {rr['queries']} queries × "
            f"{rr['repeat']}, pair scores not cached ({rr['skipped']} skipped by the language guard)",
            f"  {'measure':<18} {'p50':>9} {'p95':>9} {'n':>6}",
        ]
        for label, key, unit in (
            ("pairs scored", "pairs", ""),
            ("per query", "per_query_ms", "ms"),
            ("per pair", "per_pair_ms", "ms"),
            ("cached re-rank", "cached_rerank_ms", "ms"),
            ("cached total", "cached_total_ms", "ms"),
        ):
            st = rr[key]
            lines.append(f"  {label:<18} {_fmt(st['p50']):>9} {_fmt(st['p95']):>9} {st['n']:>6}   {unit}")
    sv = result.get("serve")
    if sv:
        lines += format_serve(sv)
    sk = result.get("soak")
    if sk:
        lines += format_soak(sk)
    rd = result.get("readers")
    if rd:
        lines += [
            "",
            f"readers: open read-only + search + close, {rd['queries']} queries × {rd['repeat']}, on a copy of "
            f"{rd['documents']} docs / {rd['chunks']} chunks",
            f"  {'phase':<18} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9} {'n':>6} {'failed':>7}",
        ]
        for label, key in (("idle", "idle"), ("other index busy", "other_index_busy"), ("while indexing", "indexing")):
            ph = rd[key]
            lines.append(
                f"  {label:<18} {_fmt(ph['ms']['p50']):>9} {_fmt(ph['ms']['p95']):>9} "
                f"{_fmt(ph['ms']['max']):>9} {ph['ms']['n']:>6} {ph['failed']:>7}"
            )
        w = rd["writer"]
        lines.append(
            f"  p50 while indexing / idle: {_fmt(rd['p50_ratio'])}; / other index busy (the same "
            f"CPU and disk load, not this index): {_fmt(rd['p50_ratio_to_control'])}"
        )
        lines.append(
            f"  the indexer committed {w['commits_while_reading']} transactions while the readers ran "
            f"({w['index_runs']} index runs)"
        )
        for key in ("idle", "other_index_busy", "indexing"):
            if rd[key]["first_error"]:
                lines.append(f"  first failure ({key}): {rd[key]['first_error']}")
    i = result.get("index")
    if i:
        p1, p2, nc = i["phase_one"], i["phase_two"], i.get("no_change_reindex")
        lines += [
            "",
            f"index: phase one (full text, whole KB, fresh index): {p1['seconds']:.2f} s, "
            f"{p1['documents']:,} docs ({_fmt(p1['docs_per_s'])} docs/s), {p1['chunks']:,} chunks",
            f"  phase two on {p2['documents']} docs / {p2['chunks']} chunks (batch {i['batch_size']}): "
            f"index {_fmt(p2['index_chunks_per_s'])} chunks/s, embedder alone "
            f"{_fmt(p2['embedder_passages_per_s'])} passages/s, ratio {_fmt(p2['ratio'])}",
        ]
        sizes = i.get("sizes")
        if sizes:
            big = sorted(((n, b) for n, b in sizes["bytes"].items() if b), key=lambda nb: -nb[1])
            lines.append(
                f"  index size (vectors aside): {sizes['without_vectors'] / 1e6:.1f} MB, "
                f"{_fmt(sizes['ratio_to_text'])}× the {sizes['text_bytes'] / 1e6:.1f} MB of text it holds — "
                + ", ".join(f"{n} {b / 1e6:.1f}" for n, b in big)
            )
        wt = i.get("word_table")
        if wt:
            lines.append(
                f"  word table: {wt['bytes'] / 1e6:.1f} MB of the index's {wt['index_bytes'] / 1e6:.1f} MB "
                f"({100 * (wt['share'] or 0):.1f} %), built again in {wt['build_s']:.2f} s"
            )
            if wt.get("stored_terms"):
                lines.append(
                    f"  its common terms' stored lists: {wt['stored_terms']:,} terms, "
                    f"{wt['stored_bytes'] / 1e6:.1f} MB, stored in {wt['stored_s']:.1f} s"
                )
        if nc:
            lines.append(f"  no-change re-index of {nc['documents']:,} docs: {nc['seconds']:.3f} s")
        else:
            lines.append("  no-change re-index: the KB has no index yet (run groove-tui index first)")
    if result.get("cli_help"):
        lines.append(f"\ngroove-tui --help: {result['cli_help']['seconds']:.3f} s (median of 5)")
    if result.get("cli_search"):
        runs = len(result["cli_search"]["runs"])
        lines.append(f"a groove-tui search process: {result['cli_search']['seconds']:.3f} s (median of {runs})")
    v = result.get("targets") or {}
    if v:
        lines += ["", "targets:"]
        width = max(26, *(len(name) for name in v))
        for name, t in v.items():
            mark = "ok  " if t["met"] else "MISS"
            op = "≥" if name == "throughput_ratio" else "≤"
            lines.append(f"  {mark} {name:<{width}} {t['value']:.3f} {op} {t['target']:g}")
    return "\n".join(lines) + "\n"


# ================================================================ the command


def run_bench(engine: Engine, args: argparse.Namespace, *, progress=None) -> dict[str, Any]:
    mode = getattr(args, "mode", "search") or "search"
    repeat = max(1, int(getattr(args, "repeat", 3) or 1))
    result: dict[str, Any] = {
        "kb": str(engine.kb_path),
        "model": engine.model_id,
        "index_path": str(engine.store.db_path),
        "mode": mode,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    if mode in ("search", "all"):
        docs, chunks, pending = engine.store.counts()
        if docs == 0:
            raise ValueError(
                f"{engine.kb_path} has not been indexed yet (index: {engine.store.db_path}). "
                f"Run: {textout.index_command(args, engine.kb_path)}"
            )
        result["corpus"] = {"documents": docs, "chunks": chunks, "pending_embeddings": pending}
        result["search"] = bench_search(engine, load_queries(getattr(args, "queries", None)), repeat, progress=progress)
    if mode == "rerank":
        name = getattr(args, "reranker", None) or engine.config.reranker.model or "ms-marco-l12"
        queries = load_queries(getattr(args, "queries", None))[: max(1, getattr(args, "rerank_queries", 30) or 30)]
        result["rerank"] = bench_rerank(engine, queries, repeat, name, progress=progress)
    if mode == "readers":
        docs_arg = getattr(args, "docs", None)
        result["readers"] = bench_readers(
            engine,
            docs_arg if docs_arg and docs_arg > 0 else None,
            repeat,
            load_queries(getattr(args, "queries", None)),
            progress=progress,
        )
    if mode == "serve":
        result["serve"] = bench_serve(
            engine, args, load_queries(getattr(args, "queries", None)), repeat, progress=progress
        )
    if mode == "soak":
        result["soak"] = bench_soak(engine, args, progress=progress)
    if mode in ("index", "all"):
        docs_arg = getattr(args, "docs", None)
        result["index"] = bench_index(
            engine, docs_arg if docs_arg and docs_arg > 0 else None, repeat, progress=progress
        )
    if not getattr(args, "no_cli", False):
        result["cli_help"] = bench_cli_help()
        if mode in ("search", "all"):
            queries = load_queries(getattr(args, "queries", None))
            result["cli_search"] = bench_cli_search(engine, queries, getattr(args, "config", None))
    result["targets"] = verdicts(result)
    return result


def run_bench_command(engine: Engine, args: argparse.Namespace) -> int:
    return _run_and_print(lambda progress: run_bench(engine, args, progress=progress), args)


def run_scale_command(kb: Path, config, args: argparse.Namespace) -> int:
    return _run_and_print(lambda progress: run_scale(kb, config, args, progress=progress), args)


def _run_and_print(run: Callable[[Any], dict[str, Any]], args: argparse.Namespace) -> int:
    from groove_tui.output import records
    from groove_tui.output.progress import ProgressLine

    recording = records.begin(getattr(args, "record", None), "bench", getattr(args, "argv", None), Path(args.kb))
    bar = ProgressLine(sys.stderr, enabled=sys.stderr.isatty())
    try:
        result = run(bar.step)
    finally:
        bar.close()
    records.record_bench(recording, result, args)
    if getattr(args, "format", "text") == "json":
        from groove_tui.engine.types import json_text

        print(json_text(result))
    else:
        sys.stdout.write(format_text(result))
    return 0


BENCH_LIMITS = (
    ("repeat", 1, 1000, ""),
    ("docs", 0, 10_000_000, " (0 = all)"),
    ("rerank_queries", 1, 100_000, ""),
    ("scale", 1, 100_000_000, " chunks"),
    ("saves", 1, 10_000, ""),
    ("burst", 0, 1_000_000, " files (0 = no burst)"),
)
IDLE_SECONDS = (0.1, 3600.0)


def run(args: argparse.Namespace) -> int:
    for name, lo, hi, note in BENCH_LIMITS:
        value = getattr(args, name)
        if value is not None and not lo <= value <= hi:
            raise CLIError(
                f"--{name.replace('_', '-')} {value} is invalid: expected an integer in [{lo}, {hi:,}]{note}"
            )
    idle = getattr(args, "idle_seconds", None)
    if idle is not None and not IDLE_SECONDS[0] <= idle <= IDLE_SECONDS[1]:
        raise CLIError(
            f"--idle-seconds {idle:g} is invalid: expected seconds in [{IDLE_SECONDS[0]:g}, {IDLE_SECONDS[1]:g}]"
        )
    if getattr(args, "mode", None) == "watch":
        return _bench_watch(args)
    if getattr(args, "mode", None) == "peers":
        return _bench_peers(args)
    if args.scale is not None:
        return _bench_scale(args)
    with load_engine(args) as engine:
        return run_bench_command(engine, args)


def _copy_config(args: argparse.Namespace) -> tuple[Path, Any]:
    """The KB and the configuration of a bench that works on a copy of it (scale, watch): the KB's own
    engine is never opened, as opening would create an index for it in the cache."""
    from dataclasses import replace

    kb = Path(args.kb).expanduser()
    if not kb.is_dir():
        raise CLIError(f"knowledge base {str(kb)!r} is not a directory")
    config = config_for(args)
    if not args.model:
        config = replace(config, embedding=replace(config.embedding, model=SCALE_MODEL))
    return kb.resolve(), config


def _bench_scale(args: argparse.Namespace) -> int:
    kb, config = _copy_config(args)
    return run_scale_command(kb, config, args)


def _bench_peers(args: argparse.Namespace) -> int:
    from groove_tui.commands.bench.peers import missing_peers, run_peers

    kb, config = _copy_config(args)
    if missing_peers():  # said before anything is built
        run_peers(kb, config, args)

    def run(progress: Any) -> dict[str, Any]:
        return {
            "kb": str(kb),
            "model": "none (full text only)",
            "mode": "peers",
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "peers": run_peers(kb, config, args, progress=progress),
        }

    return _run_and_print(run, args)


def _bench_watch(args: argparse.Namespace) -> int:
    kb, config = _copy_config(args)
    return _run_and_print(lambda progress: run_watch(kb, config, args, progress=progress), args)
