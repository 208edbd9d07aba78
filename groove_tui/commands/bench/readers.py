"""Readers while another process indexes.

Readers mode (`--mode readers`) copies the first `--docs` documents into a temporary KB, indexes them into a
temporary index, and times readers as `groove-tui search` runs them — open the index read-only, search
(default parameters, no reranker), close — first with nothing else running (idle), then while another
process indexes another copy of the documents into another index (the control: the same CPU and disk
load), then while that process indexes the readers' own KB over and over (adding a second copy of the
documents, then deleting it: one write transaction per document, back to back, the write lock re-taken
the moment it is released). It reports p50/p95/max of each, the writer's commits during the last phase,
and any reader that failed (a reader never waits for the write lock, so there should be none). The KB
and its index are untouched.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_tui.commands.bench.indexing import copy_subset, round_or_none
from groove_tui.commands.bench.search import ms_since, percentiles

if TYPE_CHECKING:
    from groove_tui.engine import Engine


# ================================================================ readers mode

READERS_QUERIES = 24  # the first queries of --queries (or the built-in mix), × --repeat, per phase


def bench_readers(
    engine: Engine,
    docs: int | None,
    repeat: int,
    queries: Sequence[str],
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Reader latency (open read-only + search + close): idle, while another process indexes another
    index (the control), and while it indexes the readers' own."""
    from groove_tui.engine import Engine as EngineCls

    notify = progress or (lambda _label, _done, _total: None)
    config = engine.config
    queries = list(queries)[:READERS_QUERIES]
    with tempfile.TemporaryDirectory(prefix="groove-tui-bench-") as tmp:
        tmpdir = Path(tmp)
        kb, spare, idx, stop = tmpdir / "kb", tmpdir / "spare", tmpdir / "idx", tmpdir / "stop"
        n_docs = copy_subset(engine.kb_path, kb, docs, config.exclude_dirs)
        copy_subset(engine.kb_path, spare, docs, config.exclude_dirs)
        notify("index", 0, 1)
        with EngineCls.open(kb, config=config, index_dir=idx) as eng:
            report = eng.index()
            model_id = eng.model_id
            db_path = eng.store.db_path
        params = engine.default_params(reranker=None, mmr=False, parent_retriever=False, explain=False)

        def generation() -> int:
            with EngineCls.open(kb, config=config, index_dir=idx, readonly=True) as eng:
                return eng.store.generation()

        def readers(label: str) -> dict[str, Any]:
            samples: list[float] = []
            errors: list[str] = []
            total = repeat * len(queries)
            for r in range(repeat):
                for i, q in enumerate(queries):
                    notify(label, r * len(queries) + i, total)
                    t0 = time.perf_counter()
                    try:
                        with EngineCls.open(kb, config=config, index_dir=idx, readonly=True) as eng:
                            eng.search(q, params)
                    except Exception as exc:  # counted and reported: a reader must never fail here
                        errors.append(str(exc))
                        continue
                    samples.append(ms_since(t0))
            return {"ms": percentiles(samples), "failed": len(errors), "first_error": errors[0] if errors else None}

        def while_indexing(label: str, target_kb: Path, target_idx: Path) -> tuple[dict[str, Any], dict[str, Any]]:
            stop.unlink(missing_ok=True)
            writer = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "from groove_tui.commands.bench.readers import _writer_main; _writer_main()",
                    str(target_kb),
                    str(target_idx),
                    str(spare),
                    str(stop),
                    model_id,
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            try:
                assert writer.stdout is not None
                started = writer.stdout.readline().strip()  # "ready": its engine is open, the first run begins
                gen0 = generation()
                measured = readers(label)
                gen1 = generation()
            finally:
                stop.touch()
                out, err = writer.communicate(timeout=600)
            if started != "ready" or writer.returncode != 0:
                raise RuntimeError(f"the benchmark's indexing process failed: {(err or out).strip()[-500:]}")
            try:
                runs: int | None = int(out.strip().splitlines()[-1])
            except (ValueError, IndexError):
                runs = None
            return measured, {"index_runs": runs, "commits_while_reading": gen1 - gen0}

        EngineCls.open(kb, config=config, index_dir=idx, readonly=True).close()  # load the model, warm the pages
        idle = readers("readers, idle")
        # The control: the same indexing work on another KB and index, so the same CPU and disk load
        # without sharing this index; what "indexing" costs beyond it is what sharing the index costs.
        other_kb = tmpdir / "other"
        copy_subset(engine.kb_path, other_kb, docs, config.exclude_dirs)
        control, control_writer = while_indexing("readers, other index busy", other_kb, tmpdir / "other-idx")
        busy, writer = while_indexing("readers, indexing", kb, idx)

    def ratio(a: dict[str, Any], b: dict[str, Any]) -> float | None:
        return round_or_none(a["ms"]["p50"] / b["ms"]["p50"], 3) if a["ms"]["p50"] and b["ms"]["p50"] else None

    return {
        "documents": n_docs,
        "chunks": report.chunks,
        "queries": len(queries),
        "repeat": repeat,
        "index": str(db_path),
        "idle": idle,
        "other_index_busy": control,
        "indexing": busy,
        "writer": writer,
        "control_writer": control_writer,
        "p50_ratio": ratio(busy, idle),
        "p50_ratio_to_control": ratio(busy, control),
    }


def _writer_main() -> None:
    """The benchmark's indexing process (argv: kb, index dir, spare documents, stop file, model): indexes
    the KB again and again, alternately with a copy of the spare documents added and deleted, until the
    stop file exists (at least once); prints "ready" first and the number of runs last."""
    from groove_tui.engine import Engine as EngineCls
    from groove_tui.settings.config import Config, EmbeddingConfig

    kb, idx, spare, stop = (Path(a) for a in sys.argv[1:5])
    config = Config(embedding=EmbeddingConfig(model=sys.argv[5], explicit=True))
    runs = 0
    with EngineCls.open(kb, config=config, index_dir=idx) as eng:
        print("ready", flush=True)
        while runs == 0 or not stop.exists():  # at least one run, however fast the readers were
            extra = kb / "zz-bench-writer"
            if extra.exists():
                shutil.rmtree(extra)
            else:
                shutil.copytree(spare, extra)
            eng.index(embed=False)  # phase one: one write transaction per document, back to back
            runs += 1
    print(runs, flush=True)
