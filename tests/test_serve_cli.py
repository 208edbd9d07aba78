"""`groove-tui serve` on the command line: the flags, their refusals, and the real process end to end over
stdio with the SDK's client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from helpers import SAMPLE_KB, write_kb
from serve_helpers import answer


def test_a_mistyped_serve_is_suggested(cli, tmp_path):
    code, _out, err = cli("serev", "x")
    assert code == 2 and "did you mean 'serve'?" in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--http", "0.0.0.0:3100"], "listens beyond this machine"),
        (["--http", "192.168.1.10:3100"], "GROOVE_TUI_MCP_TOKEN"),
        (["--http", "127.0.0.1:99999"], "--http '127.0.0.1:99999': the port must be a number from 0"),
        (["--http", "[::1"], "unclosed '['"),
        (["--http", "127.0.0.1:3100", "--token", " "], "the bearer token is empty"),
        (["--http", "0.0.0.0:3100", "--token", "a"], "the bearer token is too short (1 character)"),
        (["--http", "10.0.0.1:3100", "--token", "x" * 15], "at least 16 characters"),
        (["--debounce-ms", "1"], "--debounce-ms 1 is invalid: expected an integer in [10, 60000]"),
        (["--lambda", "3"], "--lambda"),
    ],
)
def test_bad_serve_flags_are_refused_in_one_line_before_anything_is_served(cli, tmp_path, monkeypatch, flags, message):
    from groove_tui.commands import serve

    monkeypatch.setattr(serve, "_serve", lambda *_a: 0)  # a flag let through is served at once, not waited on
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    code, out, err = cli("serve", str(kb), "--model", "hashing", *flags)
    assert code == 1 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_bind_parser_reads_grooves_spellings():
    from groove_tui.server.app import is_loopback, parse_bind

    assert parse_bind("127.0.0.1:3100") == ("127.0.0.1", 3100)
    assert parse_bind(":8080") == ("127.0.0.1", 8080)
    assert parse_bind("8080") == ("127.0.0.1", 8080)
    assert parse_bind("[::1]:3100") == ("::1", 3100)
    assert parse_bind("0.0.0.0") == ("0.0.0.0", 3100)
    assert [is_loopback(h) for h in ("127.0.0.2", "localhost", "::1", "::ffff:127.0.0.1", "0.0.0.0", "10.0.0.1")] == [
        True,
        True,
        True,
        True,
        False,
        False,
    ]


def test_serve_runs_as_its_own_process_over_stdio(tmp_path, cli, monkeypatch):
    """The installed command, spawned the way an MCP client spawns it: the settings it serves are said on
    stderr, its search answers what `groove-tui search --format json` prints (plus the uri), and stdout
    carries nothing but the protocol."""
    (tmp_path / "groove.toml").write_text("[search.mmr]\nenabled = true\nlambda = 0.6\n", encoding="utf-8")
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    assert cli("index", str(kb), "--model", "hashing", "--quiet")[0] == 0
    code, out, _err = cli(
        "search", str(kb), "pinning futures", "--model", "hashing", "--format", "json", "--limit", "5"
    )
    assert code == 0
    expected = json.loads(out)
    exe = Path(sys.executable).parent / "groove-tui"
    params = StdioServerParameters(
        command=str(exe) if exe.exists() else sys.executable,
        args=[
            *([] if exe.exists() else ["-m", "groove_tui.cli"]),
            "serve",
            str(kb),
            "--model",
            "hashing",
            "--no-watch",
        ],
        env={**os.environ, "GROOVE_TUI_INDEX_DIR": str(tmp_path / "indexes"), "HF_HUB_OFFLINE": "1"},
        cwd=str(tmp_path),
    )
    errlog = tmp_path / "stderr.txt"

    async def session():
        with errlog.open("w", encoding="utf-8") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                got = answer(await client.call_tool("search", {"query": "pinning futures"}))
                bad = await client.call_tool("get_document", {"path": "../groove.toml"})
                return got, bad

    got, bad = anyio.run(session)
    for hit in got["results"]:
        assert hit.pop("uri").startswith("kb://doc/")
    assert got == expected
    assert bad.is_error and answer(bad) == {"error": "Access denied: path is outside the knowledge base."}
    said = errlog.read_text(encoding="utf-8")
    assert f"groove-tui serve: {kb.resolve()} — 4 documents" in said
    assert "MMR on (λ 0.6, same-doc penalty 0)" in said
    assert f"search.mmr.lambda = 0.6 ({tmp_path / 'groove.toml'})" in said
    assert "not following edits" in said and "MCP over stdio" in said
    assert "Traceback" not in said


def test_the_serve_bench_times_the_stdio_round_trip_against_engine_search(tmp_path, cli, monkeypatch):
    """`groove-tui bench --mode serve` spawns the server, asks it with both protocol eras, pairs every
    query with the same search in-process, and judges the cached passes' p50 difference."""
    from groove_tui.commands.bench import command, search

    monkeypatch.setattr(command, "bench_cli_help", lambda runs=5: None)
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    assert cli("index", str(kb), "--model", "hashing-64", "--quiet")[0] == 0
    code, out, err = cli(
        "bench", str(kb), "--model", "hashing-64", "--mode", "serve", "--repeat", "1", "--format", "json"
    )
    assert code == 0, err
    sv = json.loads(out)["serve"]
    assert sv["queries"] == len(search.BUILTIN_QUERIES) and sv["limit"] == 5
    assert sv["warm_up_queries"] > 0  # both processes warmed up on queries the measured ones are not
    for era in ("handshake", "per_request"):
        for phase in ("first", "again"):
            figures = sv["eras"][era][phase]
            assert figures["in_process_ms"]["n"] == figures["round_trip_ms"]["n"] == sv["queries"]
    assert sv["overhead_p50_ms"] == sv["eras"]["handshake"]["again"]["overhead_p50_ms"]
    assert "serve_overhead_p50_ms" in json.loads(out)["targets"]


def test_serve_over_http_as_its_own_process_with_a_token_then_ctrl_c(tmp_path, cli):
    """`groove-tui serve --http 127.0.0.1:0` with the token in the environment: it says where it listens,
    refuses a request without the token, answers the SDK's client with it, and stops cleanly on ctrl+c."""
    import re
    import signal
    import subprocess
    import time

    import httpx
    from mcp.client.streamable_http import streamable_http_client

    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    assert cli("index", str(kb), "--model", "hashing", "--quiet")[0] == 0
    env = {
        **os.environ,
        "GROOVE_TUI_INDEX_DIR": str(tmp_path / "indexes"),
        "HF_HUB_OFFLINE": "1",
        "GROOVE_TUI_MCP_TOKEN": "t0ken",
    }
    exe = Path(sys.executable).parent / "groove-tui"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "groove_tui.cli"]
    err_path = tmp_path / "stderr.txt"
    with err_path.open("w", encoding="utf-8") as err:
        proc = subprocess.Popen(
            [*cmd, "serve", str(kb), "--model", "hashing", "--http", "127.0.0.1:0"],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            deadline = time.monotonic() + 60
            url = None
            while url is None:
                assert proc.poll() is None, err_path.read_text(encoding="utf-8")
                assert time.monotonic() < deadline, "the server never said where it listens"
                found = re.search(
                    r"at (http://127\.0\.0\.1:\d+/mcp) \(bearer token required\)", err_path.read_text("utf-8")
                )
                url = found.group(1) if found else None
                time.sleep(0.05)
            refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
            assert refused.status_code == 401

            async def session():
                headers = {"Authorization": "Bearer t0ken"}
                async with Client(streamable_http_client(url, http_client=httpx.AsyncClient(headers=headers))) as c:
                    return answer(await c.call_tool("search", {"query": "tokio runtime", "limit": 1}))

            assert anyio.run(session)["results"][0]["path"] == "notes/rust/async.md"
        finally:
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=30)
    said = err_path.read_text(encoding="utf-8")
    assert code == 0, said
    assert "following edits to the notes (debounce 500 ms)" in said
    assert said.rstrip().endswith("groove-tui serve: stopped") and "Traceback" not in said


def test_the_serve_benchs_warm_up_never_caches_a_measured_query():
    """The warm-up takes the queries after the measured ones, or else the measured ones' words reversed
    (the same lengths), never a measured query itself."""
    from groove_tui.commands.bench.serve import warm_up_queries

    many = [f"query number {i}" for i in range(10)]
    assert warm_up_queries(many, 4) == many[4:8]
    few = ["tokio runtime", "rust", "runtime tokio", "a b c"]
    got = warm_up_queries(few, 4)
    assert got == ["c b a"] and not set(got) & set(few)


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_sigterm_stops_the_server_as_ctrl_c_does(tmp_path, cli, transport, signame):
    """A service manager's SIGTERM and a terminal's ctrl+c: the same clean stop, its "stopped" line, exit 0,
    at once (a second is the aim; the bound here leaves room for a busy machine), with a watcher running
    and, over HTTP, a client's session open."""
    import re
    import signal
    import subprocess
    import time

    import httpx

    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    assert cli("index", str(kb), "--model", "hashing", "--quiet")[0] == 0
    env = {**os.environ, "GROOVE_TUI_INDEX_DIR": str(tmp_path / "indexes"), "HF_HUB_OFFLINE": "1"}
    flags = ["--http", "127.0.0.1:0"] if transport == "http" else []
    err_path = tmp_path / "stderr.txt"
    with err_path.open("w", encoding="utf-8") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "groove_tui.cli", "serve", str(kb), "--model", "hashing", *flags],
            env=env,
            cwd=tmp_path,
            stdin=subprocess.PIPE,  # pipes, held open, as an MCP client spawns a stdio server
            stdout=subprocess.PIPE,
            stderr=err,
            # as from a terminal: a suite run in the background (`cmd &`) hands its children SIGINT ignored
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            ready = r"at (http://127\.0\.0\.1:\d+/mcp)" if transport == "http" else r"watching "
            deadline = time.monotonic() + 60
            while not (found := re.search(ready, err_path.read_text("utf-8"))):
                assert proc.poll() is None and time.monotonic() < deadline, err_path.read_text("utf-8")
                time.sleep(0.05)
            if transport == "http":
                initialize = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                }
                accept = {"Accept": "application/json, text/event-stream"}
                assert httpx.post(found.group(1), json=initialize, headers=accept).status_code == 200
            sent = time.monotonic()
            proc.send_signal(getattr(signal, signame))
            code = proc.wait(timeout=30)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.stdin.close()
            proc.stdout.close()
    said = err_path.read_text(encoding="utf-8")
    assert code == 0, said
    assert said.rstrip().endswith("groove-tui serve: stopped") and "Traceback" not in said
    assert took < 5, took


def test_the_soak_bench_reports_the_servers_memory_growth(tmp_path, cli, monkeypatch):
    """`groove-tui bench --mode soak` runs `serve --http` under several clients' mixed requests and reports
    its resident memory: after the baseline's requests, at the end, the growth between, and a series."""
    from groove_tui.commands.bench import command, soak

    monkeypatch.setattr(command, "bench_cli_help", lambda runs=5: None)
    monkeypatch.setattr(soak, "SOAK_BASELINE", 10)
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    assert cli("index", str(kb), "--model", "hashing-64", "--quiet")[0] == 0
    code, out, err = cli(
        "bench", str(kb), "--model", "hashing-64", "--mode", "soak", "--soak-clients", "2", "--soak-requests", "15",
        "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    sk = result["soak"]
    assert (sk["clients"], sk["requests_per_client"], sk["requests"]) == (2, 15, 30)
    assert sk["documents"] == 4 and sk["baseline_after_requests"] == 10
    assert sk["rss_end_mb"] > 0 and sk["rss_peak_mb"] >= sk["rss_end_mb"]
    if sk["rss_baseline_mb"] is not None:  # sampled twice a second: a fast run may end before one
        assert sk["growth"] == round(sk["rss_end_mb"] / sk["rss_baseline_mb"], 3)
        assert "serve_soak_growth" in result["targets"]
    assert sk["rss_mb_by_requests"][-1] == [30, sk["rss_end_mb"]]
    assert "--http 127.0.0.1:0" in sk["command"] and "--no-watch" in sk["command"]


def test_the_soak_benchs_requests_mix_every_kind_of_call():
    from groove_tui.commands.bench.soak import request_plan

    plan = request_plan(["a/b/c.md", "d.md"], ["alpha", "beta", "gamma"], 400, seed=1)
    assert plan == request_plan(["a/b/c.md", "d.md"], ["alpha", "beta", "gamma"], 400, seed=1)
    names = {name for _kind, name, _payload in plan}
    assert names == {"search", "get_document", "get_connection_graph", "list_topics", "read"}
    uris = {p for kind, _n, p in plan if kind == "resource"}
    assert {"kb://doc/a/b/c.md", "kb://topic/a/b"} <= uris
