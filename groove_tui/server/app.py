"""The MCP server: `KbService` behind the official SDK's low-level `Server`, over stdio or streamable HTTP.

Handlers only move work off the event loop — reads onto one long-lived thread (`ReadThread`), a rebuild
onto a worker thread of its own: a search embeds a query and reads SQLite, and a blocked loop would
stall every other client and the transport's own keep-alives. The
rebuild slot is claimed in the handler itself, when the request arrives, so a queued second rebuild is
refused rather than run after the first.

Over HTTP the endpoint is `/mcp` (and `/healthz` for probes), as groove's. A loopback bind keeps the SDK's
DNS-rebinding guard (Host and Origin checked); any other bind must be given a bearer token, and every
request without `Authorization: Bearer <token>` is answered 401 before it reaches MCP.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import mcp_types as types
import pydantic_core
from mcp.server.caching import CacheHint
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from groove_tui import __version__
from groove_tui.engine.types import escape_controls
from groove_tui.server import surface as s
from groove_tui.server.kb import KbService, NotServed

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from groove_tui.engine.index.watch import WatchEvent

log = logging.getLogger(__name__)

TOKEN_ENV = "GROOVE_TUI_MCP_TOKEN"
TOKEN_MIN_CHARS = 16  # beyond loopback the token is the only access control: long enough not to be guessed
SERVER_MS = "groove-tui/server_ms"  # a result's `_meta` key: the tool's own time on the server, in ms
DEFAULT_PORT = 3100
_NO_CACHE = CacheHint(ttl_ms=0, scope="public")  # the index changes under a watcher: stale at once


def _json(value: Any) -> str:
    """The answer as one line of JSON: the same value `search --format json` prints, without its
    indentation, which an agent pays for in tokens. Encoded by pydantic-core (the SDK's own encoder, a
    fifth of json.dumps' time on a search answer). DEL and the C1 controls are escaped as everywhere else
    (a terminal showing a log would obey them); their UTF-8 is found with byte searches first, since
    nearly every answer has none. Text the encoder refuses (a lone surrogate) goes through json.dumps."""
    try:
        data = pydantic_core.to_json(value)
    except pydantic_core.PydanticSerializationError:
        return escape_controls(json.dumps(value, ensure_ascii=False))
    text = data.decode("utf-8")
    return escape_controls(text) if b"\x7f" in data or _has_c1(data) else text


def _has_c1(data: bytes) -> bool:
    """Whether UTF-8 `data` holds a C1 control: U+0080..U+009F is 0xC2 then 0x80..0x9F."""
    at = data.find(b"\xc2")
    while at >= 0:
        if 0x80 <= data[at + 1] <= 0x9F:
            return True
        at = data.find(b"\xc2", at + 2)
    return False


class ReadThread:
    """Every engine read of the server on one long-lived thread. Reads run one at a time anyway
    (`KbService.read_lock`), and the engine keeps state per thread — a SQLite connection held until the
    engine closes, highlighting's scratch table, a malloc arena — so each of the worker threads anyio
    starts and retires (idle for 10 s) would leave its own behind, and the server's memory would grow
    with its uptime."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="groove-tui-reads")

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.wrap_future(self._pool.submit(fn, *args))


def build_server(service: KbService) -> Server[Any]:
    """The low-level MCP server for `service`: five tools, the topic resources and the document
    template, four prompts."""
    reads = ReadThread()

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    description=t.description,
                    input_schema=t.input_schema(),
                    annotations=types.ToolAnnotations(
                        read_only_hint=t.read_only, destructive_hint=False, open_world_hint=False
                    ),
                )
                for t in s.TOOLS.values()
            ]
        )

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, arguments = params.name, params.arguments
        started = time.perf_counter()
        if name == "rebuild_index":
            answer, is_error = await rebuild(arguments)
        else:
            answer, is_error = await reads.run(service.call, name, arguments)
        result = _result(answer, is_error)
        # How long the tool itself took, on the server: what a client's round trip adds is the rest.
        result.meta = {SERVER_MS: round((time.perf_counter() - started) * 1000, 3)}
        return result

    async def rebuild(arguments: Any) -> tuple[Any, bool]:
        try:
            args = s.TOOLS["rebuild_index"].check(arguments)
        except s.ArgumentError as exc:
            return {"error": str(exc)}, True
        slot = service.claim_rebuild()  # decided now, not when a worker thread is free
        if isinstance(slot, dict):
            return slot, True
        answer = await anyio.to_thread.run_sync(service.rebuild_index, args, slot)
        return answer, "error" in answer

    async def list_resources(_ctx: Any, _params: Any) -> types.ListResourcesResult:
        try:
            groups = await reads.run(_locked(service, service.topic_groups))
        except Exception as exc:  # the index unreadable: one line, never a traceback
            raise MCPError(code=types.INTERNAL_ERROR, message=f"listing the topic groups failed: {exc}") from None
        resources = []
        for prefix, paths in groups.items():
            name = prefix or "(root)"
            n = len(paths)
            resources.append(
                types.Resource(
                    uri=s.topic_uri(prefix),
                    name=name,
                    description=f"{n} indexed document{'s' if n != 1 else ''} under {name}",
                    mime_type="text/markdown",
                )
            )
        return types.ListResourcesResult(resources=resources)

    async def list_templates(_ctx: Any, _params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=s.DOC_TEMPLATE,
                    name="Indexed document",
                    description="One indexed Markdown document, by its path relative to the knowledge base "
                    "(percent-encoded, '/' kept). Every search hit carries its uri.",
                )
            ]
        )

    async def read_resource(_ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text, mime = await reads.run(_locked(service, lambda: service.read_resource(uri)))
        except NotServed as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        except Exception as exc:  # the index unreadable: one line, never a traceback
            raise MCPError(code=types.INTERNAL_ERROR, message=f"reading {uri} failed: {exc}") from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)])

    async def list_prompts(_ctx: Any, _params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=p.name,
                    description=p.description,
                    arguments=[types.PromptArgument(name=n, description=d, required=r) for n, d, r in p.arguments],
                )
                for p in s.PROMPTS.values()
            ]
        )

    async def get_prompt(_ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        spec = s.PROMPTS.get(params.name)
        if spec is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown prompt {params.name!r} (prompts: {', '.join(s.PROMPTS)})",
            )
        args = dict(params.arguments or {})
        for name, _desc, required in spec.arguments:
            if required and not str(args.get(name) or "").strip():
                raise MCPError(code=types.INVALID_PARAMS, message=f"prompt {spec.name!r} needs the argument {name!r}")
        unknown = sorted(set(args) - {n for n, _d, _r in spec.arguments})
        if unknown:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"prompt {spec.name!r} takes no argument {unknown[0]!r} "
                f"(it takes: {', '.join(n for n, _d, _r in spec.arguments)})",
            )
        return types.GetPromptResult(
            description=spec.description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(text=s.prompt_text(spec.name, args)))],
        )

    server: Server[Any] = Server(
        "groove-tui",
        version=__version__,
        title="groove-tui",
        instructions="Search a Markdown knowledge base (groove's tools, groove-tui's tuned ranking). Start with "
        "`search`; read whole documents with `get_document`; cite their paths.",
        cache_hints={
            m: _NO_CACHE
            for m in ("tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read")
        },
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    return server


def _result(answer: Any, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=_json(answer))], is_error=is_error)


def _locked(service: KbService, fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with service.read_lock:
            return fn()

    return run


# ---------------------------------------------------------------- the watcher


class Watching:
    """The engine's watcher on a thread of its own, stopped with the server."""

    def __init__(self, service: KbService, on_event: Callable[[WatchEvent], None], debounce_ms: int | None) -> None:
        self.stop = threading.Event()
        self.thread = threading.Thread(
            target=service.engine.watch,
            args=(on_event, self.stop),
            kwargs={"debounce_ms": debounce_ms},
            name="groove-tui-watch",
            daemon=True,
        )

    def __enter__(self) -> Watching:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


# ---------------------------------------------------------------- transports


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    from groove_tui.server.stdio import AnsweringInvalid, loop_stdio

    with loop_stdio() as (stdin, stdout):
        async with stdio_server(stdin, stdout) as (read_stream, write_stream):
            reads = AnsweringInvalid(read_stream, write_stream)
            await server.run(reads, write_stream, server.create_initialization_options())


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def parse_bind(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `:PORT`, `PORT` or `HOST` (port 3100); `[::1]:PORT` for IPv6; port 0 lets the OS
    choose. ValueError if invalid."""
    text = text.strip()
    host, port_text = "127.0.0.1", str(DEFAULT_PORT)
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"{text!r}: unclosed '[' in an IPv6 address")
        host, rest = text[1:end], text[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"{text!r}: expected HOST:PORT")
            port_text = rest[1:]
    elif text.isdigit():
        port_text = text
    elif text.count(":") == 1:
        h, port_text = text.split(":")
        host = h or host
    elif ":" in text:
        host = text  # a bare IPv6 address
    elif text:
        host = text
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"{text!r}: the port must be a number from 0 (any free port) to 65535")
    if not host:
        raise ValueError(f"{text!r}: no host")
    return host, int(port_text)


class BearerAuth:
    """ASGI middleware: 401 unless `Authorization: Bearer <token>`, the scheme in any case (RFC 7235), the
    token compared in constant time."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    def _authorized(self, header: bytes) -> bool:
        scheme, _sep, credentials = header.strip().partition(b" ")
        return hmac.compare_digest(credentials.strip(), self.expected) and scheme.lower() == b"bearer"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") != "/healthz":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not self._authorized(given):
                body = json.dumps({"error": "unauthorized: send Authorization: Bearer <token>"}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="groove-tui"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(server: Server[Any], host: str, token: str | None) -> ASGIApp:
    """The Starlette app serving `/mcp` and `/healthz`, behind the bearer check when a token is set."""
    from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__})

    if is_loopback(host):
        names = ["127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host]  # and the address bound
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[*names, *(f"{n}:*" for n in names)],
            allowed_origins=[f"http://{n}:*" for n in names],
        )
    else:  # the bearer token is the access control; the Host is whatever name the clients use
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app: ASGIApp = server.streamable_http_app(
        host=host, transport_security=security, custom_starlette_routes=[Route("/healthz", healthz)]
    )
    app = WholeBodies(app, DEFAULT_MAX_REQUEST_BODY_SIZE)
    return BearerAuth(app, token) if token else app


class WholeBodies:
    """ASGI middleware: a POST's body is read before the MCP app sees the request, so a client that hangs
    up mid-body costs one INFO line instead of the SDK's traceback (it reads the body inside its handlers,
    where a hang-up is logged as an error or escapes as one). A body past `cap` is handed on as it
    arrives, for the SDK's own size limit to refuse."""

    def __init__(self, app: ASGIApp, cap: int) -> None:
        self.app = app
        self.cap = cap

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        parts: list[bytes] = []
        size = 0
        more = True
        while more and size <= self.cap:
            message = await receive()
            if message["type"] == "http.disconnect":
                log.info("a client hung up before its request was read (%s %s)", scope["method"], scope.get("path"))
                return
            part = message.get("body", b"")
            parts.append(part)
            size += len(part)
            more = message.get("more_body", False)
        first: dict[str, Any] | None = {"type": "http.request", "body": b"".join(parts), "more_body": more}

        async def replay() -> Any:
            nonlocal first
            if first is not None:
                message, first = first, None
                return message
            return await receive()

        await self.app(scope, replay, send)


def listening_socket(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket for uvicorn. IPPROTO_TCP is named, not left 0: asyncio sets
    TCP_NODELAY only on accepted sockets that say they are TCP, and without it an answer's body waits
    for the ACK of its headers (a delayed ACK: ~40 ms on every JSON answer)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


async def serve_http(
    server: Server[Any],
    host: str,
    port: int,
    token: str | None,
    on_ready: Callable[[int, Callable[[], None]], None] | None = None,
) -> None:
    """Serve until ctrl+c (or the stop function handed to `on_ready` is called). `on_ready(port, stop)`
    hears the bound port (0 asks the OS for a free one) once connections are accepted."""
    import uvicorn

    app = http_app(server, host, token)
    sock = listening_socket(host, port)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False, timeout_graceful_shutdown=2)
    userver = uvicorn.Server(config)
    if on_ready is not None:

        def stop() -> None:
            userver.should_exit = True

        on_ready(sock.getsockname()[1], stop)
    try:
        await userver.serve(sockets=[sock])
    finally:
        sock.close()
