"""stdin and stdout as the event loop's own pipes, for the SDK's stdio transport.

The SDK reads each request line and writes each answer through `anyio.wrap_file`: a worker thread per
read, write and flush, three thread hand-offs per call that an agent waits on. When both ends are pipes
or sockets (how an MCP client spawns a server), the loop polls them directly instead and the SDK's own
reader and writer tasks run over them unchanged: the same framing, validation and errors.

While served, fd 0 reads the null device and fd 1 writes to stderr, as the SDK arranges it, so a stray
print or a child process cannot corrupt the wire; both are restored on the way out. Anything else (a
terminal, a regular file) is left to the SDK, whose threads can read what the loop cannot poll.

A line that is not one JSON-RPC message (not JSON, a batch, `[]`, an object of the wrong shape) is
answered with JSON-RPC's error (over HTTP such a body is refused too): -32700 when it is not JSON,
-32600 otherwise, with the message's `id` when one can be read, else `null`. A blank line is no message
and gets no answer.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

READ_BYTES = 1 << 16


def _is_pollable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class PipeLines:
    """Lines of a non-blocking descriptor as text (UTF-8, bad bytes replaced), read as the loop sees
    them arrive."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()
        self.searched = 0  # bytes of the buffer known to hold no newline (a long line is scanned once)
        self.ended = False

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self.buffer.find(b"\n", self.searched)
            if end >= 0:
                line = bytes(self.buffer[: end + 1])
                del self.buffer[: end + 1]
                self.searched = 0
                return line.decode("utf-8", errors="replace")
            self.searched = len(self.buffer)
            if self.ended:
                if not self.buffer:
                    raise StopAsyncIteration
                rest = bytes(self.buffer)
                self.buffer.clear()
                self.searched = 0
                return rest.decode("utf-8", errors="replace")
            try:
                data = os.read(self.fd, READ_BYTES)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            if data:
                self.buffer += data
            else:
                self.ended = True


class PipeWriter:
    """Text written to a non-blocking descriptor on flush, waiting on the loop when the pipe is full."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pending = bytearray()

    async def write(self, text: str) -> int:
        self.pending += text.encode("utf-8")
        return len(text)

    async def flush(self) -> None:
        while self.pending:
            try:
                sent = os.write(self.fd, self.pending)
            except BlockingIOError:
                await anyio.wait_writable(self.fd)
                continue
            del self.pending[:sent]


@contextlib.contextmanager
def _nonblocking(fd: int) -> Iterator[None]:
    was = os.get_blocking(fd)
    os.set_blocking(fd, False)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.set_blocking(fd, was)


@contextlib.contextmanager
def _claimed(fd: int, diversion: int) -> Iterator[int]:
    """A private duplicate of `fd` for the wire, `fd` itself pointed at `diversion` until the end."""
    private = os.dup(fd)
    os.set_inheritable(private, False)
    try:
        os.dup2(diversion, fd)
        try:
            yield private
        finally:
            os.dup2(private, fd)
    finally:
        os.close(private)


@contextlib.contextmanager
def loop_stdio() -> Iterator[tuple[Any, Any]]:
    """(stdin, stdout) for `mcp.server.stdio.stdio_server`: the loop's own pipes when both are pollable,
    else (None, None), the SDK's threaded files (and always on Windows, whose loop polls sockets only)."""
    if sys.platform == "win32" or not (_is_pollable(0) and _is_pollable(1)):
        yield None, None
        return
    sys.stdout.flush()
    with contextlib.ExitStack() as stack:
        devnull = os.open(os.devnull, os.O_RDONLY)
        stack.callback(os.close, devnull)
        wire_in = stack.enter_context(_claimed(0, devnull))
        wire_out = stack.enter_context(_claimed(1, 2))
        stack.enter_context(_nonblocking(wire_in))
        stack.enter_context(_nonblocking(wire_out))
        yield PipeLines(wire_in), PipeWriter(wire_out)


def invalid_reply(exc: ValidationError) -> types.JSONRPCError | None:
    """JSON-RPC's answer to a line the transport could not read as a message (`exc`, the SDK's validation
    error), or None for a blank line."""
    errors = exc.errors()
    for e in errors:
        if e["type"] == "json_invalid":
            if isinstance(e.get("input"), str) and not e["input"].strip():
                return None
            return _error(None, types.PARSE_ERROR, f"Parse error: {e['msg']}")
    message: Any = next((e["input"] for e in errors if e["type"] == "missing" and len(e["loc"]) == 2), None)
    given = message.get("id") if isinstance(message, dict) else None
    msg_id = given if isinstance(given, (str, int)) and not isinstance(given, bool) else None
    top = errors[0].get("input") if errors and len(errors[0]["loc"]) <= 1 else None
    if isinstance(top, list):
        why = "a batch (a JSON array) is not accepted: send one message per line"
    else:
        why = "not a JSON-RPC 2.0 request, notification or response"
        if message is not None:
            first = next((e for e in errors if len(e["loc"]) >= 2), None)
            if first is not None:
                why += f" ({'.'.join(str(p) for p in first['loc'][1:])}: {first['msg']})"
    return _error(msg_id, types.INVALID_REQUEST, f"Invalid Request: {why}")


def _error(msg_id: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=msg_id, error=types.ErrorData(code=code, message=message))


class AnsweringInvalid:
    """The transport's read stream for the server, each line it could not read as a message answered on
    `write` (see the module docstring) instead of being passed on, which the SDK only logs."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not await self._answered(item):
                return item

    async def _answered(self, item: Any) -> bool:
        if not isinstance(item, ValidationError):  # a message, or a transport failure the SDK handles
            return False
        reply = invalid_reply(item)
        if reply is not None:
            await self._write.send(SessionMessage(reply))
        return True

    def __aiter__(self) -> AnsweringInvalid:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnsweringInvalid:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None
