"""Soak mode (`--mode soak`): the resident memory of `groove-tui serve --http` under many clients.

A `groove-tui serve KB --http 127.0.0.1:0` subprocess (the settings of this command line, no watcher)
is called by `--soak-clients` SDK clients at once over streamable HTTP, each sending `--soak-requests`
mixed requests: searches of varied queries and limits, get_document, document and topic resources,
get_connection_graph, list_topics (a fixed seed, so two runs send the same requests). The server's
resident set size is sampled as the requests are answered. What is judged is its growth: the RSS at the
end over the RSS once the first `SOAK_BASELINE` requests were answered (models loaded, the index read, a
first round of caches filled). A leak keeps growing; a bounded server levels off.
"""

from __future__ import annotations

import random
import re
import subprocess
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from groove_tui.commands.bench.serve import serve_command

if TYPE_CHECKING:
    import argparse

    from groove_tui.engine import Engine

SOAK_BASELINE = 200  # requests answered (all clients together) before the baseline is taken
SOAK_SAMPLE_S = 0.5
_URL = re.compile(r"MCP over streamable HTTP at (http://\S+/mcp)")


def rss_parts(pid: int) -> dict[str, int]:
    """RssAnon and RssFile of process `pid` in bytes (Linux; empty elsewhere): the heap, and the pages of
    mapped files (the index SQLite maps, the libraries) that the kernel can drop."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            return {
                line.split(":")[0]: int(line.split()[1]) * 1024
                for line in fh
                if line.startswith(("RssAnon", "RssFile"))
            }
    except OSError:
        return {}


def rss_bytes(pid: int) -> int | None:
    """The resident set size of process `pid` (Linux /proc; `ps` elsewhere), None when unreadable."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True, text=True, check=False)
        return int(out.stdout.strip()) * 1024
    except (OSError, ValueError):
        return None


def request_plan(paths: list[str], words: list[str], n: int, seed: int) -> list[tuple[str, str, dict[str, Any] | str]]:
    """`n` mixed requests: (kind, name, arguments or URI)."""
    from groove_tui.server import surface as s

    rng = random.Random(seed)
    plan: list[tuple[str, str, dict[str, Any] | str]] = []
    for _ in range(n):
        roll = rng.random()
        path = rng.choice(paths)
        if roll < 0.5:
            query = " ".join(rng.sample(words, k=min(len(words), rng.choice((1, 2, 3)))))
            limit = rng.choice((5, 5, 10, 20, 50))
            plan.append(("tool", "search", {"query": query, "limit": limit}))
        elif roll < 0.65:
            plan.append(("tool", "get_document", {"path": path}))
        elif roll < 0.75:
            plan.append(("resource", "read", s.doc_uri(path)))
        elif roll < 0.85:
            plan.append(("tool", "get_connection_graph", {"start": path, "depth": rng.choice((1, 2))}))
        elif roll < 0.95:
            plan.append(("tool", "list_topics", {}))
        else:
            plan.append(("resource", "read", s.topic_uri(s.group_prefix(path))))
    return plan


def _vocabulary(engine: Engine, limit: int = 2000) -> list[str]:
    """Words of the KB's titles and headings: queries that find something."""
    rows = engine.store.conn().execute("SELECT DISTINCT heading FROM chunks LIMIT ?", (limit,)).fetchall()
    words = {w.lower() for (h,) in rows for w in re.findall(r"\w{4,}", h or "")}
    return sorted(words) or ["note"]


def bench_soak(
    engine: Engine,
    args: argparse.Namespace,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    notify = progress or (lambda _label, _done, _total: None)
    clients = max(1, int(getattr(args, "soak_clients", 8) or 8))
    per_client = max(1, int(getattr(args, "soak_requests", 2000) or 2000))
    paths = [p for (p,) in engine.store.conn().execute("SELECT path FROM documents ORDER BY path")]
    if not paths:
        raise ValueError("soak mode needs an indexed KB: run groove-tui index first")
    words = _vocabulary(engine)
    cmd = [c for c in serve_command(args) if c != "--no-watch"] + ["--no-watch", "--http", "127.0.0.1:0"]
    total = clients * per_client
    done = 0
    errors = 0
    samples: list[tuple[int, float, int]] = []  # (requests answered, seconds, rss bytes)
    parts: dict[str, dict[str, int]] = {}
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = _wait_for_url(proc)
        started = time.perf_counter()
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(SOAK_SAMPLE_S):
                rss = rss_bytes(proc.pid)
                if rss is not None:
                    samples.append((done, time.perf_counter() - started, rss))
                    if done >= SOAK_BASELINE and "baseline" not in parts:
                        parts["baseline"] = rss_parts(proc.pid)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()

        async def client(index: int) -> None:
            nonlocal done, errors
            plan = request_plan(paths, words, per_client, seed=index)
            async with Client(streamable_http_client(url, http_client=httpx2.AsyncClient(timeout=120))) as c:
                for kind, name, payload in plan:
                    try:
                        if kind == "tool":
                            result = await c.call_tool(name, payload)  # type: ignore[arg-type]
                            errors += bool(result.is_error)
                        else:
                            await c.read_resource(payload)  # type: ignore[arg-type]
                    except MCPError:  # a refusal (a document over 1 MiB is not offered): counted, not fatal
                        errors += 1
                    done += 1
                    notify("soak", done, total)

        async def run_all() -> None:
            async with anyio.create_task_group() as tg:
                for i in range(clients):
                    tg.start_soon(client, i)

        anyio.run(run_all)
        seconds = time.perf_counter() - started
        stop.set()
        sampler.join()
        end = rss_bytes(proc.pid)
        parts["end"] = rss_parts(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if end is not None:
        samples.append((done, seconds, end))
    baseline = next((rss for n, _t, rss in samples if n >= SOAK_BASELINE), None)
    mb = 1024 * 1024
    return {
        "clients": clients,
        "requests_per_client": per_client,
        "requests": done,
        "errors": errors,
        "seconds": round(seconds, 1),
        "documents": len(paths),
        "baseline_after_requests": SOAK_BASELINE,
        "rss_baseline_mb": round(baseline / mb, 1) if baseline else None,
        "rss_end_mb": round(end / mb, 1) if end else None,
        "rss_peak_mb": round(max(r for _n, _t, r in samples) / mb, 1) if samples else None,
        "growth": round(end / baseline, 3) if end and baseline else None,
        "rss_parts_mb": {at: {k: round(v / mb, 1) for k, v in p.items()} for at, p in parts.items()},
        "rss_mb_by_requests": _thin([(n, round(r / mb, 1)) for n, _t, r in samples], 40),
        "command": " ".join(cmd[1:] if cmd[0].endswith("groove-tui") else cmd),
    }


def _wait_for_url(proc: subprocess.Popen[str], timeout: float = 300.0) -> str:
    """The /mcp URL the server says it listens at (it says so once it accepts connections)."""
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            raise ValueError("the server exited before listening: " + " / ".join(seen[-5:]))
        seen.append(line.strip())
        found = _URL.search(line)
        if found:
            threading.Thread(target=_drain, args=(proc,), daemon=True).start()
            return found.group(1)
    raise ValueError(f"the server did not listen within {timeout:.0f} s")


def _drain(proc: subprocess.Popen[str]) -> None:
    """Read the server's stderr to its end, so a full pipe never blocks it."""
    assert proc.stderr is not None
    for _line in proc.stderr:
        pass


def _thin(points: list[tuple[int, float]], keep: int) -> list[list[float]]:
    """At most `keep` of `points`, evenly spaced, the first and last kept."""
    if len(points) <= keep:
        return [list(p) for p in points]
    step = (len(points) - 1) / (keep - 1)
    return [list(points[round(i * step)]) for i in range(keep)]


def format_soak(sk: dict[str, Any]) -> list[str]:
    return [
        "",
        f"soak: {sk['clients']} clients × {sk['requests_per_client']:,} mixed requests over streamable HTTP to "
        f"groove-tui serve ({sk['documents']:,} documents): {sk['requests']:,} answered in {sk['seconds']:.0f} s, "
        f"{sk['errors']} error answers (refusals included)",
        f"  resident memory: {sk['rss_baseline_mb']} MB after the first {sk['baseline_after_requests']} requests, "
        f"{sk['rss_end_mb']} MB at the end (peak {sk['rss_peak_mb']} MB): growth ×{sk['growth']}",
        "  "
        + "; ".join(
            f"{at}: " + ", ".join(f"{k} {v:.0f} MB" for k, v in p.items()) for at, p in sk["rss_parts_mb"].items()
        ),
        "  by requests answered: "
        + ", ".join(
            f"{int(n):,}: {mb:.0f}" for n, mb in sk["rss_mb_by_requests"][:: max(1, len(sk["rss_mb_by_requests"]) // 8)]
        ),
    ]
