"""Explorer benchmarks (not collected by pytest: no test_ functions): keystroke → results painted, and
cold start → first paint, on the scifact KB with the USE index.

    HF_HUB_OFFLINE=1 .venv/bin/python -m tests.tui.bench_keystroke --kb KB --golden GOLDEN.yml
        --index-dir INDEX [--model use-multilingual] [--queries 50] [--cold 5] [--profile out.prof]
        [--no-pruning]

The built index (--index-dir) is copied to a temporary directory first and only the copy is opened.

Keystroke: GrooveApp runs under Pilot (headless, 120×36: widgets are rendered, only the terminal write is
skipped) with the debounce set to 0. For each golden query, the text minus its last character is put in the
query box and allowed to settle (its search done and painted); then the last character is pressed as a
real key. The time runs from just before that key press to the first refresh of the results pane after it
showed the response to the completed query (`call_after_refresh` from the results signal). The index is
opened, never rebuilt; the embedding model is loaded before measuring (the explorer warms it up after
first paint).

Cold start: `groove-tui open KB` in a pseudo-terminal, from just before the process is spawned to the
App's `on_ready` (first paint), reported through the GROOVE_TUI_READY_FILE hook (the app writes the
wall-clock time there and exits). Median of N runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import groove_tui.tui  # noqa: F401  (before Textual, as the explorer is started: it sets the frame rate)


def percentile(values: list[float], p: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    i = min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))
    return s[i]


PRUNING = True  # --no-pruning: the full-text leg's plain statement, for comparison
VECTOR_SCAN = True  # --no-vector-scan: sqlite-vec's own KNN, for comparison
CHUNK_CAP: int | None = None  # --max-chunk-bytes: the cap the index was cut with, so it is not cut again


def _config(model: str):
    from groove_tui.settings.config import Config, EmbeddingConfig

    cfg = replace(Config(), embedding=EmbeddingConfig(model=model))
    if CHUNK_CAP is not None:
        cfg = replace(cfg, chunking=replace(cfg.chunking, max_chunk_bytes=CHUNK_CAP))
    return replace(cfg, search=replace(cfg.search, fulltext_pruning=PRUNING, vector_scan=VECTOR_SCAN))


def prepare_index(kb: Path, source: str, model: str, into: Path) -> str:
    """Copy the built index to `into` (the source is never written) and bring the copy's full-text side
    tables up to date (e.g. the CJK bigram table added after it was built: ~1.5 s, no embedding).
    Refuses an index that would need embeddings."""
    import shutil

    from groove_tui.engine import Engine

    src = Path(source)
    subdirs = [d for d in src.iterdir() if d.is_dir() and (d / "index.db").exists()] if src.is_dir() else []
    if not subdirs:
        raise SystemExit(
            f"no index in {source}: build it with groove-tui index {kb} --index-dir {source} --model {model}"
        )
    for d in subdirs:
        shutil.copytree(d, into / d.name, ignore=shutil.ignore_patterns("index.lock", "*-shm", "*-wal"))
    engine = Engine.open(kb, config=_config(model), index_dir=into)
    try:
        st = engine.status()
        if st.documents == 0 or st.pending_embeddings:
            raise SystemExit(
                f"the index in {source} is incomplete ({st.documents} documents, "
                f"{st.pending_embeddings} chunks without vectors): build it first"
            )
        if engine.needs_index():
            report = engine.index()
            if report.embedded:
                raise SystemExit("the copied index needed embeddings: it is not the index of this KB")
    finally:
        engine.close()
    return str(into)


def open_engine(kb: Path, index_dir: str, model: str):
    from groove_tui.engine import Engine

    cfg = _config(model)
    engine = Engine.open(kb, config=cfg, index_dir=index_dir)
    if engine.needs_index():
        raise SystemExit(f"the index in {index_dir} is stale for {kb}")
    return engine, cfg


async def keystrokes(kb: Path, golden: Path, index_dir: str, model: str, n: int) -> dict:
    from textual.widgets import Input

    from groove_tui.engine.evaluate.golden import load_golden
    from groove_tui.tui.app import GrooveApp
    from groove_tui.tui.widgets.results import ResultsPane

    engine, cfg = open_engine(kb, index_dir, model)
    chunks = engine.status().chunks
    queries = [q.query for q in load_golden(golden).queries if len(q.query) > 2][:n]
    configured_debounce = cfg.tui.debounce_ms
    with tempfile.TemporaryDirectory() as tmp:
        app = GrooveApp(
            engine,
            config=cfg,
            kb_path=kb,
            history_path=Path(tmp) / "h.json",
            debounce_ms=0,
            warmup=True,
            user_theme_dir=Path(tmp) / "none",
            watch=False,  # keystroke latency alone; wait_for_complete would wait for the watcher forever
        )
        painted: dict[str, float] = {}
        waiting: dict[str, str | None] = {"query": None}

        async with app.run_test(size=(120, 36)) as pilot:
            await app.workers.wait_for_complete()  # engine open + model warm-up, in the background
            pane = app.screen.query_one("#pane-left", ResultsPane)
            qi = app.screen.query_one("#query", Input)

            def on_results(side: str) -> None:
                q = waiting["query"]
                if side == "left" and q is not None and app.response_queries.get("left") == q:
                    pane.call_after_refresh(lambda: painted.setdefault(q, time.perf_counter()))

            app.results_signal.subscribe(app.screen, on_results)
            qi.focus()
            times: list[float] = []
            engine_ms: list[float] = []
            ui_ms: list[float] = []
            stages: dict[str, list[float]] = {}
            for q in queries:
                prefix, last = q[:-1], q[-1]
                qi.value = prefix  # one Input.Changed: one search for the prefix
                await _settle(app, pilot)
                qi.cursor_position = len(prefix)
                waiting["query"] = q
                n_before = app.search_count
                t0 = time.perf_counter()
                await pilot.press(_key(last))
                while q not in painted:
                    await asyncio.sleep(0.001)
                times.append((painted[q] - t0) * 1000)
                waiting["query"] = None
                resp = app.responses["left"]
                if resp is not None and app.search_count > n_before:
                    engine_ms.append(float(resp.timings_ms.get("total", 0.0)))
                    ui_ms.append(times[-1] - engine_ms[-1])
                    for stage, ms in resp.timings_ms.items():
                        stages.setdefault(stage, []).append(float(ms))
        engine.close()
    return {
        "chunks": chunks,
        "n": len(times),
        "p50": statistics.median(times),
        "p95": percentile(times, 95),
        "max": max(times),
        "engine_p50": statistics.median(engine_ms) if engine_ms else float("nan"),
        "engine_p95": percentile(engine_ms, 95),
        "ui_p50": statistics.median(ui_ms) if ui_ms else float("nan"),
        "ui_p95": percentile(ui_ms, 95),
        "stages_p50": {k: statistics.median(v) for k, v in stages.items()},
        "debounce_configured_ms": configured_debounce,
    }


def _key(ch: str) -> str:
    from textual.keys import _character_to_key

    return _character_to_key(ch) if not ch.isalnum() else ch


async def _settle(app, pilot) -> None:
    from textual.worker import WorkerCancelled, WorkerFailed

    for _ in range(3):
        with contextlib.suppress(WorkerCancelled, WorkerFailed):
            await app.workers.wait_for_complete()
        await pilot.pause()


def cold_start(kb: Path, index_dir: str, model: str, runs: int) -> dict:
    """Median wall time from spawning `groove-tui open KB` (in a pty) to the App's on_ready."""
    import pty

    exe = Path(sys.executable).with_name("groove-tui")
    cmd = [str(exe), "open", str(kb), "--index-dir", index_dir, "--model", model]
    secs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs):
            ready = Path(tmp) / f"ready-{i}"
            env = dict(os.environ, GROOVE_TUI_READY_FILE=str(ready), HF_HUB_OFFLINE="1", COLUMNS="120", LINES="36")
            master, slave = pty.openpty()
            t0 = time.time()
            proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
            os.close(slave)
            _drain(master, proc)
            proc.wait(timeout=60)
            os.close(master)
            if not ready.exists():
                raise SystemExit(f"run {i}: the app did not report ready (exit {proc.returncode})")
            secs.append(float(ready.read_text()) - t0)
    return {"runs": runs, "median": statistics.median(secs), "all": secs}


def _drain(fd: int, proc: subprocess.Popen) -> None:
    """Read the child's terminal output until it exits (a full pty would block it)."""
    import select

    deadline = time.time() + 60
    while proc.poll() is None and time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                os.read(fd, 65536)
            except OSError:
                break


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", type=Path, required=True, help="the KB (e.g. the scifact evaluation set's kb/)")
    ap.add_argument("--golden", type=Path, required=True, help="the golden YAML whose queries are typed")
    ap.add_argument("--index-dir", required=True, help="a built index of the KB (only a copy is opened)")
    ap.add_argument("--model", default="use-multilingual")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--cold", type=int, default=5, help="cold-start runs (0 skips)")
    ap.add_argument("--profile", help="write a cProfile of the keystroke run here")
    ap.add_argument("--no-pruning", action="store_true", help="rank the full-text leg with the plain statement")
    ap.add_argument("--no-vector-scan", action="store_true", help="the vector leg from sqlite-vec's own KNN")
    ap.add_argument("--max-chunk-bytes", type=int, help="the chunk cap the index was built with (else 3000)")
    ap.add_argument("--record", metavar="DIR", help="write a measurement record into DIR")
    args = ap.parse_args()
    from groove_tui.output import records

    recording = records.begin(
        args.record, "bench", sys.argv[1:], kb=args.kb, program="python -m tests.tui.bench_keystroke"
    )
    global PRUNING, VECTOR_SCAN, CHUNK_CAP
    PRUNING, VECTOR_SCAN, CHUNK_CAP = not args.no_pruning, not args.no_vector_scan, args.max_chunk_bytes
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    tmp = tempfile.TemporaryDirectory(prefix="groove-bench-")
    index_dir = prepare_index(args.kb, args.index_dir, args.model, Path(tmp.name))
    run = lambda: asyncio.run(keystrokes(args.kb, args.golden, index_dir, args.model, args.queries))  # noqa: E731
    if args.profile:
        import cProfile

        prof = cProfile.Profile()
        ks = prof.runcall(run)
        prof.dump_stats(args.profile)
    else:
        ks = run()
    print(
        f"keystroke → results painted: n={ks['n']} p50={ks['p50']:.1f} ms p95={ks['p95']:.1f} ms "
        f"max={ks['max']:.1f} ms; engine search p50 {ks['engine_p50']:.1f} / p95 {ks['engine_p95']:.1f} ms; "
        f"the rest (key handling, worker, message, render) p50 {ks['ui_p50']:.1f} / p95 {ks['ui_p95']:.1f} ms; "
        f"debounce 0 here, configured {ks['debounce_configured_ms']} ms"
    )
    print("  engine stages p50: " + ", ".join(f"{k} {v:.1f} ms" for k, v in ks["stages_p50"].items()))
    cs = None
    if args.cold:
        cs = cold_start(args.kb, index_dir, args.model, args.cold)
        print(
            f"cold start → first paint: median {cs['median']:.2f} s over {cs['runs']} runs "
            f"({', '.join(f'{s:.2f}' for s in cs['all'])})"
        )
    tmp.cleanup()
    result = {"mode": "keystroke", "model": args.model, "kb": str(args.kb), "keystroke": ks, "cold_start": cs}
    records.record_bench(recording, result, argparse.Namespace(kb=args.kb, queries=args.golden))


if __name__ == "__main__":
    main()
