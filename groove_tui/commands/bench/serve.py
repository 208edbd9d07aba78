"""Serve mode (`--mode serve`): what MCP adds to a search.

The same queries run two ways on the same index: `Engine.search` in this process, and the `search` tool
of a `groove-tui serve` subprocess (stdio, the settings of this command line, no watcher) called through
the official SDK's client, timed from the call to the parsed answer. The server is asked with both
protocol eras: the initialize handshake most clients speak, and the 2026 per-request one. Each era has
a fresh server process and a fresh engine here (an engine keeps what it learnt of the queries it ran:
phrase statistics, highlight terms), and both first search other queries (`warm_up_queries`: the next
ones of the file, or the measured ones with their words reversed — the same lengths, never the same
text), so the cold pass compares two engines that have both run the model and read the legs before.
Then each query runs in this process first and then over MCP, so both see it cold on the first pass (the
query embedded, the legs read) and cached on the `--repeat` passes after it.
Reported: p50 / p95 of each and of the paired difference (round trip minus in-process, query by query).
The target is on the difference of the p50s of the cached passes: there the engine's work is the same
few milliseconds on both sides, so the difference is what MCP adds (validation, the JSON answer, stdio,
the client); the cold pass adds the noise of two processes' model runs to it. The server also says how
long the tool itself took (the result's `_meta`), so each round trip splits into the server's own time
and what carrying it costs.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_tui.commands.bench.search import clear_caches, ms_since, percentiles

if TYPE_CHECKING:
    import argparse

    from groove_tui.engine import Engine

SERVE_QUERIES = 200  # the first queries of --queries (or the built-in mix), × --repeat
SERVE_LIMIT = 5  # groove's default `limit` over MCP


def serve_command(args: argparse.Namespace) -> list[str]:
    """`groove-tui serve` with this bench's KB, index, model and configuration, no watcher."""
    exe = Path(sys.executable).parent / "groove-tui"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "groove_tui.cli"]
    cmd += ["serve", str(Path(args.kb).expanduser().resolve()), "--no-watch"]
    for flag, attr in (("--config", "config"), ("--index-dir", "index_dir"), ("--model", "model")):
        value = getattr(args, attr, None)
        if value:
            cmd += [flag, str(Path(value).expanduser().resolve()) if attr != "model" else value]
    return cmd


def warm_up_queries(queries: Sequence[str], measured: int) -> list[str]:
    """Queries that warm both processes up without warming the measured ones' caches: the next
    `measured` of the list, or else each measured query of several words with its words reversed."""
    rest = list(queries[measured : 2 * measured])
    if rest:
        return rest
    shown = set(queries[:measured])
    flipped = (" ".join(reversed(q.split())) for q in queries[:measured])
    return [f for f in dict.fromkeys(flipped) if f not in shown]


def bench_serve(
    engine: Engine,
    args: argparse.Namespace,
    queries: Sequence[str],
    repeat: int,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    import anyio
    from mcp import Client, StdioServerParameters

    from groove_tui.server.app import SERVER_MS

    notify = progress or (lambda _label, _done, _total: None)
    warm_up = warm_up_queries(list(queries), SERVE_QUERIES)
    queries = list(queries)[:SERVE_QUERIES]
    params = engine.default_params(limit=SERVE_LIMIT)
    cmd = serve_command(args)
    server = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
    docs, chunks, _pending = engine.store.counts()
    out: dict[str, Any] = {
        "queries": len(queries),
        "repeat": repeat,
        "limit": SERVE_LIMIT,
        "warm_up_queries": len(warm_up),
        "documents": docs,
        "chunks": chunks,
        "eras": {},
    }

    async def era(mode: str) -> dict[str, Any]:
        samples: dict[str, dict[str, list[float]]] = {
            p: {"local": [], "remote": [], "diff": [], "server": [], "added": []} for p in ("first", "again")
        }
        t0 = time.perf_counter()
        with open(os.devnull, "w") as errlog:
            from mcp.client.stdio import stdio_client

            async with (
                Client(stdio_client(server, errlog=errlog), mode=mode) as client,
                _fresh(engine, args) as local,
            ):
                connect_ms = ms_since(t0)
                warm = await client.call_tool("search", {"query": "warm up the model"})
                if warm.is_error:
                    raise ValueError(f"the served search failed: {_text(warm)}")
                local.search("warm up the model", params)
                for i, q in enumerate(warm_up):
                    notify(f"serve ({mode}) warm-up", i, len(warm_up))
                    local.search(q, params)
                    await client.call_tool("search", {"query": q})
                await anyio.sleep(2.0)  # both processes' vector matrices loaded (a background read)
                clear_caches(local)  # this process starts as cold as the fresh server
                total = (repeat + 1) * len(queries)
                for r in range(repeat + 1):
                    got = samples["first" if r == 0 else "again"]
                    for i, q in enumerate(queries):
                        notify(f"serve ({mode})", r * len(queries) + i, total)
                        t = time.perf_counter()
                        local.search(q, params)
                        a = ms_since(t)
                        t = time.perf_counter()
                        result = await client.call_tool("search", {"query": q})
                        json.loads(_text(result))  # the answer, as a client reads it
                        b = ms_since(t)
                        if result.is_error:
                            raise ValueError(f"the served search of {q!r} failed: {_text(result)}")
                        server_ms = float((result.meta or {}).get(SERVER_MS, math.nan))
                        got["local"].append(a)
                        got["remote"].append(b)
                        got["diff"].append(b - a)
                        got["server"].append(server_ms)
                        got["added"].append(b - server_ms)
        out: dict[str, Any] = {"connect_ms": round(connect_ms, 1)}
        for phase, got in samples.items():
            lp, rp = percentiles(got["local"]), percentiles(got["remote"])
            out[phase] = {
                "in_process_ms": lp,
                "round_trip_ms": rp,
                "paired_difference_ms": percentiles(got["diff"]),
                "server_tool_ms": percentiles(got["server"]),
                "round_trip_minus_server_ms": percentiles(got["added"]),
                "overhead_p50_ms": round(rp["p50"] - lp["p50"], 3),
            }
        return out

    for mode, name in (("legacy", "handshake"), ("2026-07-28", "per_request")):
        out["eras"][name] = anyio.run(era, mode)
    out["overhead_p50_ms"] = out["eras"]["handshake"]["again"]["overhead_p50_ms"]
    out["command"] = " ".join(cmd[1:] if cmd[0].endswith("groove-tui") else cmd)
    return out


@contextlib.asynccontextmanager
async def _fresh(engine: Engine, args: argparse.Namespace) -> AsyncIterator[Engine]:
    """`engine`'s index and settings in an engine of its own, read-only, as the fresh server has them."""
    from groove_tui.engine import Engine

    local = Engine.open(engine.kb_path, config=engine.config, index_dir=getattr(args, "index_dir", None), readonly=True)
    try:
        yield local
    finally:
        local.close()


def _text(result: Any) -> str:
    return str(result.content[0].text)


def format_serve(sv: dict[str, Any]) -> list[str]:
    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:.2f}"

    lines = [
        "",
        f"serve: {sv['queries']} queries, limit {sv['limit']}: Engine.search here vs the search tool of a groove-tui "
        "serve subprocess over stdio (SDK client, answer parsed); after "
        f"{sv.get('warm_up_queries', 0)} other queries on both sides, a first pass cold on both, then "
        f"{sv['repeat']} cached",
        f"  {'protocol, pass':<30} {'in-process p50':>15} {'round trip p50':>15} {'p95':>8} {'difference p50':>15}"
        f" {'server p50':>11} {'transport p50':>14}",
    ]
    for name, label in (("handshake", "initialize handshake"), ("per_request", "2026-07-28 per request")):
        for phase in ("first", "again"):
            e = sv["eras"][name][phase]
            lines.append(
                f"  {label + ', ' + phase:<30} {f(e['in_process_ms']['p50']):>15} {f(e['round_trip_ms']['p50']):>15} "
                f"{f(e['round_trip_ms']['p95']):>8} {f(e['overhead_p50_ms']):>15} "
                f"{f(e['server_tool_ms']['p50']):>11} {f(e['round_trip_minus_server_ms']['p50']):>14}"
            )
    return lines
