"""The stdio transport: the loop's own pipes when the client spawned the server with pipes, the SDK's
threaded files otherwise; fd 0 and 1 kept off the wire while serving and given back after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from helpers import SAMPLE_KB, write_kb
from serve_helpers import answer

ECHO = textwrap.dedent(
    """
    import anyio, os, sys
    from groove_tui.server.stdio import loop_stdio

    async def main():
        with loop_stdio() as (lines, out):
            if lines is None:
                print("threaded")
                return
            print("a stray print")
            sys.stdout.flush()
            os.write(1, b"a stray write\\n")
            assert os.read(0, 10) == b""  # fd 0 reads the null device
            async for line in lines:
                await out.write(line.upper())
                await out.flush()
        os.write(1, b"fd 1 given back\\n")

    anyio.run(main)
    """
)


def _echo(stdin: int | None, data: bytes) -> subprocess.CompletedProcess[bytes]:
    fed = {"input": data} if stdin is None else {"stdin": stdin}
    return subprocess.run([sys.executable, "-c", ECHO], capture_output=True, timeout=60, **fed)


def test_pipes_carry_only_the_lines_and_stray_output_goes_to_stderr():
    long = b"x" * 300_000  # read in several pieces
    done = _echo(None, b"one\ntwo \xc3\xa9\n" + long + b"\nbad \xff byte\nno newline at the end")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode("utf-8") == (
        f"ONE\nTWO \u00c9\n{'X' * 300_000}\nBAD \ufffd BYTE\nNO NEWLINE AT THE ENDfd 1 given back\n"
    )
    assert b"a stray print\na stray write\n" in done.stderr


def test_a_regular_file_as_stdin_is_left_to_the_sdks_threads(tmp_path):
    requests = tmp_path / "requests.jsonl"
    requests.write_text("x\n", encoding="utf-8")
    with requests.open("rb") as stdin:
        done = _echo(stdin.fileno(), b"")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"threaded\n"


def test_the_served_process_answers_a_request_read_from_a_file(tmp_path, cli):
    """`groove-tui serve KB < request.json`: stdin a file the loop cannot poll, read by the SDK's threads."""
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    assert cli("index", str(kb), "--model", "hashing", "--quiet")[0] == 0
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "file", "version": "1"}},
    }
    request = tmp_path / "request.json"
    request.write_text(json.dumps(initialize) + "\n", encoding="utf-8")
    env = {**os.environ, "GROOVE_TUI_INDEX_DIR": str(tmp_path / "indexes"), "HF_HUB_OFFLINE": "1"}
    with request.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "groove_tui.cli", "serve", str(kb), "--model", "hashing", "--no-watch"],
            stdin=stdin,
            capture_output=True,
            env=env,
            timeout=120,
        )
    (reply,) = map(json.loads, done.stdout.decode().splitlines())
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "groove-tui", done.stderr.decode()
    assert "Traceback" not in done.stderr.decode()


def test_an_answer_larger_than_the_pipe_reaches_the_client_whole(tmp_path, cli):
    """A 600 KB document through a 64 KB pipe: the writer waits on the loop for the client to read."""
    body = "".join(f"Line {i} of the long note about pipes and their buffers.\n" for i in range(10_000))
    kb = write_kb(tmp_path / "kb", {**SAMPLE_KB, "long.md": "# Long\n\n" + body})
    assert cli("index", str(kb), "--model", "hashing", "--quiet")[0] == 0
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "groove_tui.cli", "serve", str(kb), "--model", "hashing", "--no-watch"],
        env={**os.environ, "GROOVE_TUI_INDEX_DIR": str(tmp_path / "indexes"), "HF_HUB_OFFLINE": "1"},
        cwd=str(tmp_path),
    )

    async def session():
        with anyio.fail_after(60), (tmp_path / "stderr.txt").open("w", encoding="utf-8") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                return [answer(await client.call_tool("get_document", {"path": "long.md"})) for _ in range(3)]

    got = anyio.run(session)
    assert len(body) > 500_000
    for document in got:
        assert document["content"].endswith(body), {k: v for k, v in document.items() if k != "content"}
    assert "Traceback" not in Path(tmp_path / "stderr.txt").read_text(encoding="utf-8")


def test_an_answer_escapes_del_and_the_c1_controls_and_keeps_every_other_character():
    from groove_tui.server.app import _json

    value = {"text": "a\x7fb\x85c\x9bd °±µ é 日本語 \U0001f600", "score": 0.30000000000000004, "none": None}
    text = _json(value)
    assert json.loads(text) == value
    assert "\\u007f" in text and "\\u0085" in text and "\\u009b" in text
    assert not any("\x7f" <= ch <= "\x9f" for ch in text) and "°±µ é 日本語 \U0001f600" in text
    lone = {"query": "\ud800 and \x9b"}  # JSON-RPC may carry a lone surrogate; the encoder refuses it
    assert json.loads(_json(lone)) == lone and "\\u009b" in _json(lone)


@pytest.mark.parametrize("stdin", ["pipe", "file"])
def test_a_line_that_is_not_one_json_rpc_message_is_answered_with_json_rpcs_error(tmp_path, cli, stdin):
    """Garbage, a batch, `[]`, an object of the wrong shape: each gets -32700 or -32600 (its id when one can
    be read, else null), as over HTTP; a blank line is no message; the session goes on."""
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    assert cli("index", str(kb), "--model", "hashing", "--quiet")[0] == 0
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    lines = [
        "garbage",
        "[]",
        json.dumps([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": 5}),
        "",
        json.dumps(initialize),
    ]
    data = ("\n".join(lines) + "\n").encode()
    env = {**os.environ, "GROOVE_TUI_INDEX_DIR": str(tmp_path / "indexes"), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "groove_tui.cli", "serve", str(kb), "--model", "hashing", "--no-watch"]
    if stdin == "pipe":
        done = subprocess.run(command, input=data, capture_output=True, env=env, timeout=120)
    else:
        (tmp_path / "requests.jsonl").write_bytes(data)
        with (tmp_path / "requests.jsonl").open("rb") as fh:
            done = subprocess.run(command, stdin=fh, capture_output=True, env=env, timeout=120)
    replies = [json.loads(line) for line in done.stdout.decode().splitlines()]
    errors = sorted((r["error"]["code"], r["id"]) for r in replies if "error" in r if r["id"] is None)
    assert errors == [(-32700, None), (-32600, None), (-32600, None)], done.stderr.decode()  # garbage, [], batch
    assert [(r["error"]["code"], r["id"]) for r in replies if "error" in r and r["id"] is not None] == [(-32600, 3)]
    assert [r["id"] for r in replies if "result" in r] == [1]
    assert "Traceback" not in done.stderr.decode()
