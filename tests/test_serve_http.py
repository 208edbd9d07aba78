"""`groove-tui serve --http`: streamable HTTP through the SDK's own client, the bearer token, and many
clients at once sending good and bad requests."""

from __future__ import annotations

import json
import os
import random
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from helpers import SAMPLE_KB, write_kb
from serve_helpers import answer, served


@pytest.fixture
def hostile_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The sample KB with a folder link and a file link out of it, and a secret beside it."""
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "keys.md").write_text("TOPSECRET ssh-rsa AAAA\n", encoding="utf-8")
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    os.symlink(secret, kb / "linked")
    os.symlink(secret / "keys.md", kb / "notes" / "keys.md")
    with served(kb) as (service, server):
        yield service, server


@asynccontextmanager
async def http(server, token: str | None = None, host: str = "127.0.0.1"):
    """The server on a free port of `host` (loopback) for the length of the block; yields its /mcp URL."""
    from groove_tui.server.app import serve_http

    ready = anyio.Event()
    got: dict = {}

    def on_ready(port, stop):
        got.update(port=port, stop=stop)
        ready.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_http, server, host, 0, token, on_ready)
        await ready.wait()
        try:
            yield f"http://{host}:{got['port']}/mcp"
        finally:
            got["stop"]()


def client(url: str, token: str | None = None, mode: str = "auto") -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=httpx.AsyncClient(headers=headers)), mode=mode)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_sdk_client_searches_over_streamable_http(hostile_kb, mode):
    _service, server = hostile_kb
    async with Client(server) as local:
        expected = answer(await local.call_tool("search", {"query": "tokio runtime", "tags_any": ["rust"]}))
    async with http(server) as url, client(url, mode=mode) as remote:
        assert sorted(t.name for t in (await remote.list_tools()).tools)[0] == "get_connection_graph"
        got = answer(await remote.call_tool("search", {"query": "tokio runtime", "tags_any": ["rust"]}))
        assert got == expected
        read = await remote.read_resource(got["results"][0]["uri"])
        assert "tokio" in read.contents[0].text


async def test_with_a_token_every_request_without_it_is_refused_401(hostile_kb):
    _service, server = hostile_kb
    async with http(server, token="s3cret-token") as url:
        base = url.rsplit("/", 1)[0]
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        async with httpx.AsyncClient() as h:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"}):
                r = await h.post(
                    url, json=request, headers={"Accept": "application/json, text/event-stream", **headers}
                )
                assert r.status_code == 401
                assert r.headers["www-authenticate"].startswith("Bearer")
                assert r.json() == {"error": "unauthorized: send Authorization: Bearer <token>"}
            assert (await h.get(base + "/healthz")).status_code == 200  # probes need no secret
        async with client(url, token="s3cret-token") as remote:
            assert answer(await remote.call_tool("list_topics", {}))


async def test_the_authorization_scheme_is_read_in_any_case(hostile_kb):
    """RFC 7235: `bearer`, `BEARER` and `Bearer` name the same scheme; the token itself is exact."""
    _service, server = hostile_kb
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with http(server, token="s3cret-token") as url, httpx.AsyncClient() as h:
        statuses = {}
        for header in ("bearer s3cret-token", "BEARER s3cret-token", "Bearer  s3cret-token", "bearer S3CRET-TOKEN"):
            r = await h.post(url, json=request, headers={**accept, "Authorization": header})
            statuses[header] = r.status_code
    assert statuses == {
        "bearer s3cret-token": 200,
        "BEARER s3cret-token": 200,
        "Bearer  s3cret-token": 200,
        "bearer S3CRET-TOKEN": 401,
    }


async def test_a_foreign_host_header_is_refused_on_a_loopback_bind(hostile_kb):
    """DNS rebinding: a page on another site cannot reach a loopback server through its own name."""
    _service, server = hostile_kb
    async with http(server) as url, httpx.AsyncClient() as h:
        r = await h.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"},
        )
    assert r.status_code in (403, 421)


async def test_any_loopback_address_bound_is_answered_by_that_address(hostile_kb):
    """127.0.0.2 is loopback as much as 127.0.0.1: bound to it, the server answers clients that name it
    (as they must to reach it), and still refuses a foreign Host."""
    _service, server = hostile_kb
    async with http(server, host="127.0.0.2") as url:
        async with client(url) as remote:
            assert answer(await remote.call_tool("list_topics", {}))
        async with httpx.AsyncClient() as h:
            r = await h.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"},
            )
    assert r.status_code in (403, 421)


# ---------------------------------------------------------------- load and bad input


def _requests(n: int, seed: int) -> list[tuple[str, object, str]]:
    """`n` mixed requests: (kind, payload, what the documented answer is)."""
    rng = random.Random(seed)
    menu: list[tuple[str, object, str]] = [
        ("tool", ("search", {"query": "tokio runtime"}), "results"),
        ("tool", ("search", {"query": "sqlite", "tags_any": ["python"], "limit": 3}), "results"),
        ("tool", ("search", {"query": "search", "path_globs": ["notes/**", "!notes/python/**"]}), "results"),
        ("tool", ("search", {"query": "rust", "date_from": "2026-02-01", "date_to": "2026-12-31"}), "results"),
        ("tool", ("search", {"query": "設定", "category": "日本語", "mmr": True, "mmr_lambda": 0.4}), "results"),
        ("tool", ("search", {"query": "async", "limit": 10**12, "include_low_quality": True}), "results"),
        ("tool", ("search", {"query": 42}), "error:query = 42 is invalid: expected a string"),
        ("tool", ("search", {"query": "x", "limit": "ten"}), 'error:limit = "ten" is invalid'),
        ("tool", ("search", {"query": "x", "limt": 2}), "error:unknown argument 'limt'"),
        ("tool", ("search", {"query": "x", "mmr_lambda": 2}), "error:mmr_lambda out of range: 2"),
        ("tool", ("search", {"query": "x" * 5000}), "error:query is too large: 5000 bytes"),
        ("tool", ("search", {"query": "x", "tags_all": ["t"] * 100}), "error:tags_all has too many entries: 100"),
        ("tool", ("search", {"query": "x", "path_globs": ["[z-a]"]}), "error:invalid path_globs"),
        ("tool", ("get_document", {"path": "notes/rust/async.md"}), "document"),
        ("tool", ("get_document", {"path": "../secret/keys.md"}), "error:Access denied: path is outside"),
        ("tool", ("get_document", {"path": "linked/keys.md"}), "error:Access denied: path is outside"),
        ("tool", ("get_document", {"path": "notes/keys.md"}), "error:Access denied: symlinks are not allowed."),
        ("tool", ("get_document", {"path": "/etc/passwd"}), "error:Access denied: path is outside"),
        ("tool", ("list_topics", {}), "topics"),
        ("tool", ("get_connection_graph", {"start": "notes/python/sqlite.md", "depth": 7}), "graph"),
        ("read", "kb://doc/../../etc/passwd", "refused"),
        ("read", "kb://doc/%2e%2e/%2e%2e/etc/passwd", "refused"),
        ("read", "kb://doc/linked/keys.md", "refused"),
        ("read", "kb://doc/notes/rust/async.md", "text"),
        ("read", "kb://topic/notes", "refused"),
        ("read", "kb://topic/notes/rust", "text"),
    ]
    return [rng.choice(menu) for _ in range(n)]


def _check(kind: str, expect: str, outcome: object) -> str | None:
    """None when `outcome` is the documented answer for `expect`, else what is wrong."""
    text = outcome if isinstance(outcome, str) else str(outcome)
    if "Traceback" in text or "TOPSECRET" in text or "ssh-rsa" in text:
        return f"leaked: {text[:200]}"
    if expect == "refused":
        return None if isinstance(outcome, MCPError) and outcome.error.code == -32602 else f"not refused: {text[:200]}"
    if isinstance(outcome, Exception):
        return f"{type(outcome).__name__}: {outcome}"
    if kind == "read":
        return None if isinstance(outcome, str) and outcome else "empty read"
    body = json.loads(outcome)  # type: ignore[arg-type]
    if expect.startswith("error:"):
        ok = isinstance(body, dict) and set(body) == {"error"} and expect[6:] in body["error"]
        return None if ok else f"expected {expect}, got {text[:200]}"
    shapes = {
        "results": lambda b: set(b) >= {"results", "low_confidence", "filter_applied"} and "error" not in b,
        "document": lambda b: set(b) == {"path", "title", "date", "topic", "tags", "content", "truncated"},
        "topics": lambda b: (
            isinstance(b, list) and b and set(b[0]) == {"category", "topic", "file_count", "last_updated", "titles"}
        ),
        "graph": lambda b: set(b) == {"start_path", "truncated", "truncation", "nodes", "stats"},
    }
    return None if shapes[expect](body) else f"expected {expect}, got {text[:200]}"


async def test_eight_clients_sending_a_thousand_mixed_requests_get_only_documented_answers(hostile_kb):
    _service, server = hostile_kb
    plan = _requests(1000, seed=24)
    per_client = [plan[i::8] for i in range(8)]
    problems: list[str] = []
    answered = 0

    async def run(requests, url, mode):
        nonlocal answered
        async with client(url, mode=mode) as c:
            for kind, payload, expect in requests:
                try:
                    if kind == "tool":
                        name, args = payload  # type: ignore[misc]
                        result = await c.call_tool(name, args)
                        outcome: object = result.content[0].text
                    else:
                        outcome = (await c.read_resource(payload)).contents[0].text  # type: ignore[arg-type]
                except MCPError as exc:
                    outcome = exc
                answered += 1
                problem = _check(kind, expect, outcome)
                if problem:
                    problems.append(f"{payload}: {problem}")

    async with http(server) as url, anyio.create_task_group() as tg:
        for i, requests in enumerate(per_client):  # both protocol eras at once
            tg.start_soon(run, requests, url, "legacy" if i % 2 else "auto")
    assert problems == []
    assert answered == 1000


def test_accepted_connections_send_without_waiting_for_acks() -> None:
    """The listening socket says it is TCP, so asyncio (uvicorn's loop) turns Nagle off on every accepted
    connection: otherwise each answer's body waits for the delayed ACK of its headers."""
    import asyncio
    import socket

    from groove_tui.server.app import listening_socket

    async def accepted_nodelay() -> int:
        got: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport):  # type: ignore[no-untyped-def]
                sock = transport.get_extra_info("socket")
                got.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        sock = listening_socket("127.0.0.1", 0)
        server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
        async with server:
            _reader, writer = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
            value = await asyncio.wait_for(got, 10)
            writer.close()
        return value

    assert asyncio.run(accepted_nodelay()) != 0


@pytest.fixture
def wide_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Notes cut into no parts (`max_chunk_bytes` at its ceiling): 40 of 30 KB and one of 200 KB, all matching "alpha",
    so a search with a high limit would answer far more than a client's 1 MiB message."""
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "groove.toml").write_text("[chunking]\nmax_chunk_bytes = 1000000\n", encoding="utf-8")
    line = 'alpha "quoted" text\twith\\backslashes and ünïcödé\n'
    files = {f"notes/n{i:02}.md": f"# Note {i}\n\n" + line * (30_000 // len(line)) for i in range(40)}
    files["notes/huge.md"] = "# Huge\n\n" + line * (200_000 // len(line))
    with served(write_kb(tmp_path / "kb", files)) as (service, server):
        yield service, server


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_search_answer_stays_under_the_clients_message_limit(wide_kb, mode):
    """The SDK's HTTP client refuses a message over 1 MiB: the answer keeps the best hits whole while they
    fit, cuts a hit too large on its own with a marker naming where the rest is, and says both."""
    from groove_tui.server import surface as s

    _service, server = wide_kb
    async with http(server) as url, client(url, mode=mode) as remote:
        body = answer(await remote.call_tool("search", {"query": "alpha", "limit": 1000}))
        hits = body["results"]
        assert 10 <= len(hits) < 41
        assert body["truncated"] is True
        assert {t["reason"] for t in body["truncation"]} == {"hit_content", "answer_size"}
        huge = [h for h in hits if h["path"] == "notes/huge.md"]
        assert huge and huge[0]["content_truncated"] is True
        content = huge[0]["content"].encode()
        assert len(content) < s.HIT_CONTENT_MAX_BYTES + 200
        assert content.endswith(b"get_document or kb://doc/notes/huge.md]")
        assert all(span["end"] <= s.HIT_CONTENT_MAX_BYTES for span in huge[0].get("match_spans", []))
        whole = [h for h in hits if h["path"] != "notes/huge.md"]
        assert all("content_truncated" not in h and len(h["content"]) > 29_000 for h in whole)
        few = answer(await remote.call_tool("search", {"query": "alpha", "limit": 3, "path_globs": ["notes/n*"]}))
        assert "truncated" not in few and len(few["results"]) == 3  # an answer that fits is left as it was


async def test_clients_hanging_up_mid_body_leave_no_traceback(hostile_kb, capfd, caplog):
    """50 clients of both protocol eras send half a body and hang up: stderr stays clean (a hang-up is at
    most one INFO line), a body over the SDK's limit is still refused 413, and the server answers on."""
    import logging

    _service, server = hostile_kb
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_topics"}})
    caplog.set_level(logging.INFO)
    async with http(server) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])

        async def hang_up(era: str | None) -> None:
            head = (
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\n"
                + (f"MCP-Protocol-Version: {era}\r\n" if era else "")
                + f"Content-Length: {len(body) + 100}\r\n\r\n"
            )
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.send(head.encode() + body[:20].encode())
            await anyio.sleep(0.05)
            await stream.aclose()

        async with anyio.create_task_group() as tg:
            for i in range(50):
                tg.start_soon(hang_up, "2026-07-28" if i % 2 else None)
        await anyio.sleep(0.5)
        async with httpx.AsyncClient() as raw:
            big = await raw.post(
                url,
                content=b" " * (4 * 1024 * 1024 + 1),
                headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
            )
        assert big.status_code == 413
        async with client(url) as remote:
            assert answer(await remote.call_tool("list_topics", {}))
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ClientDisconnect" not in err and "Exception in ASGI" not in err
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    hung = [r for r in caplog.records if "hung up" in r.getMessage()]
    assert len(hung) == 50 and all(r.levelno == logging.INFO for r in hung)
