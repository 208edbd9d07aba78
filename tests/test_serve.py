"""`groove-tui serve`: groove's MCP surface over the engine, through the SDK's own in-process client (both
protocol eras: the legacy initialize handshake and the 2026 per-request one)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from helpers import SAMPLE_KB, write_kb
from serve_helpers import answer, served


@pytest.fixture
def served_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    with served(kb) as (service, server):
        yield kb, service, server


@pytest.fixture(params=["legacy", "auto"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


# ---------------------------------------------------------------- the surface


async def test_the_surface_is_grooves_five_tools_four_prompts_and_the_kb_resources(served_kb, mode):
    _kb, _service, server = served_kb
    async with Client(server, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == ["get_connection_graph", "get_document", "list_topics", "rebuild_index", "search"]
        props = tools["search"].input_schema["properties"]
        assert set(props) == {
            "query",
            "limit",
            "category",
            "topic",
            "rerank",
            "min_quality",
            "include_low_quality",
            "path_globs",
            "tags_any",
            "tags_all",
            "date_from",
            "date_to",
            "min_confidence_ratio",
            "mmr",
            "mmr_lambda",
            "mmr_same_doc_penalty",
            "parent_retriever",
        }
        assert tools["search"].input_schema["required"] == ["query"]
        assert "default 5" in props["limit"]["description"]
        assert set(tools["get_connection_graph"].input_schema["properties"]) == {
            "start",
            "depth",
            "fan_out",
            "min_similarity",
            "seed_strategy",
            "category",
            "topic",
            "exclude_paths",
            "dedup_by_path",
            "max_nodes",
            "max_seed_chunks",
        }
        assert tools["rebuild_index"].annotations.read_only_hint is False
        assert tools["search"].annotations.read_only_hint is True
        prompts = sorted(p.name for p in (await client.list_prompts()).prompts)
        assert prompts == ["deep_dive", "find_gaps", "summarize_topic", "whats_new"]
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["kb://doc/{path}"]
        assert templates[0].mime_type is None  # documents could be of several types: each read says its own
        uris = sorted(r.uri for r in (await client.list_resources()).resources)
        assert uris == sorted(
            [
                "kb://topic/",
                "kb://topic/notes/python",
                "kb://topic/notes/rust",
                "kb://topic/%E6%97%A5%E6%9C%AC%E8%AA%9E",
            ]
        )
        assert client.server_info.name == "groove-tui"


# ---------------------------------------------------------------- search = `search --format json` + uri

CASES = [
    ("tokio runtime", [], {}),
    ("sqlite vector search", ["--tag-any", "python"], {"tags_any": ["python"]}),
    (
        "search",
        ["--path-glob", "notes/**", "--path-glob", "!notes/python/**"],
        {"path_globs": ["notes/**", "!notes/python/**"]},
    ),
    ("再ランキング 設定", [], {}),
    ("rust -pinning", ["--date-from", "2026-02-01"], {"date_from": "2026-02-01"}),
    ("async", ["--limit", "2", "--min-confidence-ratio", "1.2"], {"limit": 2, "min_confidence_ratio": 1.2}),
    ("futures", ["--mmr", "--lambda", "0.3", "--parent"], {"mmr": True, "mmr_lambda": 0.3, "parent_retriever": True}),
]


@pytest.mark.parametrize(("query", "flags", "arguments"), CASES)
def test_a_search_answer_is_the_search_commands_json_plus_each_hits_uri(
    tmp_path, monkeypatch, cli, query, flags, arguments
):
    """The same query and settings (a groove.toml the explorer saved MMR into, the call's own filters)
    give `groove-tui search --format json`'s answer, each hit with its kb://doc/ uri added."""
    import anyio

    (tmp_path / "groove.toml").write_text(
        "[search]\nmin_confidence_ratio = 1.4\n\n[search.mmr]\nenabled = true\nlambda = 0.6\n", encoding="utf-8"
    )
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    assert cli("index", str(kb), "--model", "hashing", "--quiet")[0] == 0
    limit = [] if "--limit" in flags else ["--limit", "5"]  # groove's default over MCP is 5
    code, out, err = cli("search", str(kb), query, "--model", "hashing", "--format", "json", *limit, *flags)
    assert code == 0, err
    expected = json.loads(out)
    assert expected["results"], "the case must find something"

    async def call():
        with served(kb) as (_service, server):
            async with Client(server) as client:
                return answer(await client.call_tool("search", {"query": query, **arguments}))

    got = anyio.run(call)
    for hit in got["results"]:
        uri = hit.pop("uri")
        assert uri.startswith("kb://doc/") and uri.isascii()
    assert got == expected


async def test_search_uses_grooves_default_limit_and_clamps_the_maximum(served_kb):
    _kb, _service, server = served_kb
    async with Client(server) as client:
        default = answer(await client.call_tool("search", {"query": "the", "include_low_quality": True}))
        assert len(default["results"]) == 5
        many = answer(await client.call_tool("search", {"query": "the", "limit": 10**9, "include_low_quality": True}))
        assert "error" not in many and len(many["results"]) == 8  # clamped to 1000, the KB holds 8 chunks
        none = answer(await client.call_tool("search", {"query": "the", "limit": 0}))
        assert none["results"] == []


async def test_hit_uris_percent_encode_the_path_and_resolve_to_the_document(served_kb):
    _kb, _service, server = served_kb
    async with Client(server) as client:
        hits = answer(await client.call_tool("search", {"query": "再ランキング", "limit": 1}))["results"]
        assert hits[0]["uri"] == "kb://doc/%E6%97%A5%E6%9C%AC%E8%AA%9E/%E6%A4%9C%E7%B4%A2.md"
        read = await client.read_resource(hits[0]["uri"])
        assert read.contents[0].mime_type == "text/markdown"
        assert "再ランキング" in read.contents[0].text


# ---------------------------------------------------------------- bad input: groove's checks, in groove's order

BAD_SEARCHES = [
    # the MMR values come before the query's size, the query's size before the lists, the lists before the globs
    (
        {"query": "x" * 2000, "mmr_lambda": 1.5, "tags_any": ["a"] * 65},
        "mmr_lambda out of range: 1.5 (must be 0.0..=1.0)",
    ),
    ({"query": "x", "mmr_same_doc_penalty": -0.1}, "mmr_same_doc_penalty out of range: -0.1 (must be 0.0..=1.0)"),
    ({"query": "é" * 513, "tags_any": ["a"] * 65}, "query is too large: 1026 bytes (max 1024 bytes)."),
    ({"query": "x", "tags_any": ["a"] * 65, "path_globs": []}, "tags_any has too many entries: 65 (max 64)."),
    ({"query": "x", "tags_all": ["t" * 1025]}, "tags_all has an entry that is too large: 1025 bytes (max 1024 bytes)."),
    ({"query": "x", "path_globs": ["a" * 1025]}, "path_globs has an entry that is too large: 1025 bytes"),
    ({"query": "x", "path_globs": []}, "invalid path_globs: path_globs cannot be empty."),
    ({"query": "x", "path_globs": ["notes/{a"]}, "invalid path_globs: invalid path_glob pattern 'notes/{a'"),
    ({"query": "x", "date_from": "last week"}, "date_from = 'last week' is invalid"),
    ({"query": "-only -exclusions"}, "exclu"),
]


@pytest.mark.parametrize(("arguments", "message"), BAD_SEARCHES)
async def test_bad_search_values_get_grooves_error_envelope_in_grooves_order(served_kb, arguments, message):
    _kb, _service, server = served_kb
    async with Client(server) as client:
        result = await client.call_tool("search", arguments)
    body = answer(result)
    assert set(body) == {"error"} and result.is_error
    assert message in body["error"]


BAD_SHAPES = [
    ("search", {"query": "x", "limt": 3}, "search: unknown argument 'limt' — did you mean 'limit'?"),
    ("search", {"query": 5}, "search: query = 5 is invalid: expected a string"),
    ("search", {}, "search: query is required (a string)"),
    ("search", {"query": "x", "limit": "5"}, 'search: limit = "5" is invalid: expected an integer >= 0'),
    ("search", {"query": "x", "limit": -1}, "search: limit = -1 is invalid: expected an integer >= 0"),
    ("search", {"query": "x", "limit": 2.5}, "expected an integer >= 0"),
    ("search", {"query": "x", "mmr": "false"}, 'search: mmr = "false" is invalid: expected true or false'),
    (
        "search",
        {"query": "x", "tags_any": "rust"},
        'search: tags_any = "rust" is invalid: expected an array of strings',
    ),
    ("search", {"query": "x", "tags_any": [1]}, "expected an array of strings"),
    ("get_document", {"path": ["a"]}, 'get_document: path = ["a"] is invalid: expected a string'),
    ("list_topics", {"x": 1}, "list_topics: unknown argument 'x' (it takes: none)"),
    ("rebuild_index", {"force": "yes"}, 'rebuild_index: force = "yes" is invalid: expected true or false'),
    ("get_connection_graph", {"start": "a.md", "depth": True}, "expected an integer >= 0"),
    ("nonexistent", {}, "unknown tool 'nonexistent'"),
]


@pytest.mark.parametrize(("tool", "arguments", "message"), BAD_SHAPES)
async def test_wrong_names_and_types_are_refused_naming_the_argument(served_kb, tool, arguments, message):
    _kb, _service, server = served_kb
    async with Client(server) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert message in answer(result)["error"]


async def test_null_means_not_given_as_in_groove(served_kb):
    _kb, _service, server = served_kb
    async with Client(server) as client:
        body = answer(await client.call_tool("search", {"query": "tokio", "limit": None, "tags_any": None}))
    assert len(body["results"]) <= 5 and body["filter_applied"] == {}


async def test_out_of_range_quality_and_ratio_are_clamped_as_groove_clamps_them(served_kb):
    _kb, _service, server = served_kb
    async with Client(server) as client:
        low = answer(
            await client.call_tool("search", {"query": "tokio", "min_quality": -3, "min_confidence_ratio": -1})
        )
        assert "error" not in low and low["filter_applied"] == {"min_confidence_ratio": -1}
        assert low["low_confidence"] is False
        high = answer(await client.call_tool("search", {"query": "tokio", "min_quality": 7}))
        one = answer(await client.call_tool("search", {"query": "tokio", "min_quality": 1}))
        assert "error" not in high and high == one


# ---------------------------------------------------------------- documents


@pytest.fixture
def hostile_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The sample KB plus what must never be served: links out of the KB, a hard link, a big note,
    a file that is not Markdown; and a secret beside the KB."""
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "keys.md").write_text("TOPSECRET ssh-rsa AAAA\n", encoding="utf-8")
    (secret / "other.md").write_text("TOPSECRET token\n", encoding="utf-8")
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    os.symlink(secret, kb / "linked")  # a folder link out of the KB
    os.symlink(secret / "keys.md", kb / "notes" / "keys.md")  # a file link out of the KB
    os.link(secret / "other.md", kb / "notes" / "hard.md")  # the same file under a second name
    (kb / "notes" / "big.md").write_text("# Big\n\n" + "enormous words " * 80_000, encoding="utf-8")
    (kb / "notes" / "plain.txt").write_text("not markdown\n", encoding="utf-8")
    with served(kb) as (service, server):
        yield kb, service, server


DOCUMENT_REFUSALS = [
    ("notes/keys.md", "Access denied: symlinks are not allowed."),
    ("linked/keys.md", "Access denied: path is outside the knowledge base."),
    ("notes/hard.md", "Access denied: files with more than one name (hard links) are not allowed."),
    ("../secret/keys.md", "Access denied: path is outside the knowledge base."),
    ("notes/../../secret/keys.md", "Access denied: path is outside the knowledge base."),
    ("/etc/passwd", "Access denied: path is outside the knowledge base."),
    ("notes/big.md", "File too large: 1200007 bytes (max 1048576 bytes)."),
    ("notes/plain.txt", 'Access denied: extension "txt" is not in the indexed parser registry. Allowed: ["md"]'),
    ("notes/missing.md", "File not found: notes/missing.md."),
    ("../secret/missing.md", "Access denied: path is outside the knowledge base."),
    ("linked/missing.md", "Access denied: path is outside the knowledge base."),
    ("../no-such-folder/note.md", "Access denied: path is outside the knowledge base."),
    ("/etc/no-such-file", "Access denied: path is outside the knowledge base."),
    ("nul\x00.md", "File not found"),
]


@pytest.mark.parametrize(("path", "message"), DOCUMENT_REFUSALS)
async def test_get_document_refuses_what_groove_refuses(hostile_kb, path, message):
    _kb, _service, server = hostile_kb
    async with Client(server) as client:
        result = await client.call_tool("get_document", {"path": path})
    body = answer(result)
    assert result.is_error and message in body["error"]
    assert "TOPSECRET" not in result.content[0].text


async def test_a_path_out_of_the_kb_gets_one_answer_whether_or_not_it_exists(hostile_kb):
    """Nothing about what lies outside the KB can be learnt from get_document's answers."""
    _kb, _service, server = hostile_kb
    pairs = [
        ("../secret/keys.md", "../secret/none.md"),
        ("linked/keys.md", "linked/none.md"),
        ("notes/../../secret/keys.md", "notes/../../secret/none.md"),
        ("/etc/passwd", "/etc/no-such-file"),
        ("..", "../no-such-folder/.."),
    ]
    async with Client(server) as client:
        for existing, missing in pairs:
            there = await client.call_tool("get_document", {"path": existing})
            absent = await client.call_tool("get_document", {"path": missing})
            assert answer(there) == answer(absent) == {"error": "Access denied: path is outside the knowledge base."}


async def test_get_document_answers_grooves_shape(served_kb):
    _kb, _service, server = served_kb
    async with Client(server) as client:
        body = answer(await client.call_tool("get_document", {"path": "notes/rust/async.md"}))
    assert body == {
        "path": "notes/rust/async.md",
        "title": "Async Rust",
        "date": "2026-03-01",
        "topic": None,
        "tags": ["rust", "async"],
        "content": SAMPLE_KB["notes/rust/async.md"],
        "truncated": False,
    }


async def test_a_hard_link_and_a_symlink_out_of_the_kb_are_neither_searched_nor_read(hostile_kb):
    """One policy for every tool and the indexer: what get_document refuses is not indexed either, so no
    search, topic list or resource hands out its text."""
    _kb, service, server = hostile_kb
    async with Client(server) as client:
        found = answer(await client.call_tool("search", {"query": "TOPSECRET token", "include_low_quality": True}))
        assert "error" in found or all(h["path"] not in ("notes/hard.md", "notes/keys.md") for h in found["results"])
        for path, refusal in (("notes/hard.md", "hard links"), ("notes/keys.md", "symlinks")):
            got = await client.call_tool("get_document", {"path": path})
            assert got.is_error and refusal in answer(got)["error"]
        rebuilt = answer(await client.call_tool("rebuild_index", {"force": True}))
        assert rebuilt["skipped"] >= 2
        topics = (await client.call_tool("list_topics", {})).content[0].text
        listed = [r.uri for r in (await client.list_resources()).resources]
        groups = "".join([(await client.read_resource(uri)).contents[0].text for uri in listed])
    paths = {p for (p,) in service.engine.store.conn().execute("SELECT path FROM documents")}
    assert "notes/hard.md" not in paths and "notes/keys.md" not in paths
    assert "TOPSECRET" not in topics and "notes/hard.md" not in groups


async def test_what_is_named_like_a_note_but_is_no_regular_file_is_refused(hostile_kb, monkeypatch):
    """A folder, a FIFO and a socket named *.md get groove's refusal, never an error about a handle (and
    the FIFO never blocks the call)."""
    import socket

    kb, _service, server = hostile_kb
    (kb / "notes" / "tar.md").mkdir()
    (kb / "notes" / "tar.md" / "inner.md").write_text("# Inner\n", encoding="utf-8")
    os.mkfifo(kb / "notes" / "pipe.md")
    monkeypatch.chdir(kb / "notes")  # a socket's path must be short
    sock = socket.socket(socket.AF_UNIX)
    sock.bind("sock.md")
    try:
        async with Client(server) as client:
            for path in ("notes/tar.md", "notes/pipe.md", "notes/sock.md"):
                got = await client.call_tool("get_document", {"path": path})
                assert got.is_error and answer(got) == {"error": "Access denied: only regular files can be read."}
    finally:
        sock.close()


@pytest.fixture
def swapped_after_the_checks(hostile_kb, monkeypatch):
    """`swap(fn)`: run `fn` once, after get_document's checks on a path and before the file is opened."""
    from groove_tui.server import kb as kb_module

    original = kb_module._read_checked
    pending: list = []

    def between(*args, **kwargs):
        while pending:
            pending.pop()()
        return original(*args, **kwargs)

    monkeypatch.setattr(kb_module, "_read_checked", between)
    return hostile_kb, pending.append


async def test_a_note_swapped_for_a_link_after_the_checks_is_not_followed(swapped_after_the_checks, tmp_path):
    (kb, _service, server), swap = swapped_after_the_checks
    note = kb / "notes" / "rust" / "async.md"
    secret = tmp_path / "secret" / "keys.md"

    def to_file_link():
        note.unlink()
        os.symlink(secret, note)

    def to_folder_link():
        os.rename(kb / "notes" / "rust", kb / "notes" / "rust-moved")
        os.mkdir(tmp_path / "secret" / "rust")
        (tmp_path / "secret" / "rust" / "async.md").write_text("TOPSECRET folder\n", encoding="utf-8")
        os.symlink(tmp_path / "secret" / "rust", kb / "notes" / "rust")

    async with Client(server) as client:
        swap(to_file_link)
        first = await client.call_tool("get_document", {"path": "notes/rust/async.md"})
        assert answer(first) == {"error": "Access denied: only regular files can be read."}
        note.unlink()
        note.write_text("# Async Rust\n\nBack.\n", encoding="utf-8")
        swap(to_folder_link)
        second = await client.call_tool("get_document", {"path": "notes/rust/async.md"})
        assert answer(second) == {"error": "Access denied: symlinks are not allowed."}
    assert "TOPSECRET" not in first.content[0].text + second.content[0].text


async def test_a_note_swapped_for_a_folder_after_the_checks_is_judged_on_the_handle(swapped_after_the_checks):
    (kb, _service, server), swap = swapped_after_the_checks
    note = kb / "notes" / "rust" / "async.md"

    def to_folder():
        note.unlink()
        note.mkdir()

    swap(to_folder)
    async with Client(server) as client:
        got = await client.call_tool("get_document", {"path": "notes/rust/async.md"})
    assert answer(got) == {"error": "Access denied: only regular files can be read."}


async def test_the_1_mib_limit_is_exact_for_reads_and_resources(tmp_path, monkeypatch):
    """A note of exactly 1 MiB is served, read and offered; one byte more is none of them."""
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    head = "# Edge\n\nboundary words\n\n"
    filler = ("edge of the limit\n\n" * 60_000)[: 1024 * 1024 - len(head)]
    kb = write_kb(tmp_path / "kb", {"at/limit.md": head + filler, "over/limit.md": head + filler + "x"})
    assert (kb / "at" / "limit.md").stat().st_size == 1024 * 1024
    with served(kb) as (_service, server):
        async with Client(server) as client:
            at = answer(await client.call_tool("get_document", {"path": "at/limit.md"}))
            assert at["content"] == head + filler
            over = await client.call_tool("get_document", {"path": "over/limit.md"})
            assert answer(over) == {"error": "File too large: 1048577 bytes (max 1048576 bytes)."}
            hits = answer(await client.call_tool("search", {"query": "boundary words", "limit": 50}))["results"]
            uris = {h["path"]: h.get("uri") for h in hits}
            assert uris == {"at/limit.md": "kb://doc/at/limit.md", "over/limit.md": None}
            assert (await client.read_resource("kb://doc/at/limit.md")).contents[0].text == head + filler
            with pytest.raises(MCPError):
                await client.read_resource("kb://doc/over/limit.md")


async def test_an_upper_case_md_extension_is_markdown_as_the_indexer_takes_it(tmp_path, monkeypatch):
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    text = "# Loud\n\nA note whose extension shouts.\n"
    kb = write_kb(tmp_path / "kb", {"notes/LOUD.MD": text, "notes/mixed.Md": text.replace("Loud", "Mixed")})
    with served(kb) as (_service, server):
        async with Client(server) as client:
            hits = answer(await client.call_tool("search", {"query": "extension shouts"}))["results"]
            assert {h["path"]: h.get("uri") for h in hits} == {
                "notes/LOUD.MD": "kb://doc/notes/LOUD.MD",
                "notes/mixed.Md": "kb://doc/notes/mixed.Md",
            }
            assert answer(await client.call_tool("get_document", {"path": "notes/LOUD.MD"}))["content"] == text
            assert (await client.read_resource("kb://doc/notes/LOUD.MD")).contents[0].text == text
            topics = [r.uri for r in (await client.list_resources()).resources]
            assert "kb://doc/notes/LOUD.MD" in (await client.read_resource(topics[0])).contents[0].text


# ---------------------------------------------------------------- resources

REFUSED_URIS = [
    "kb://doc/../../etc/passwd",
    "kb://doc/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "kb://doc/notes/../../secret/keys.md",
    "kb://doc//etc/passwd",
    "kb://doc/notes%5C..%5Csecret.md",
    "kb://doc/a%zz.md",
    "kb://doc/",
    "kb://doc/linked/keys.md",  # on disk through a link, never indexed
    "kb://doc/notes/keys.md",
    "kb://doc/notes/hard.md",
    "kb://doc/notes/big.md",  # indexed, but over 1 MiB: not offered
    "kb://doc/notes/unindexed.md",
    "kb://topic/../..",
    "kb://topic/nothing-here",
    "file:///etc/passwd",
    "kb://other/x",
]


@pytest.mark.parametrize("uri", REFUSED_URIS)
async def test_a_resource_read_is_bounded_by_the_index(hostile_kb, uri):
    kb, _service, server = hostile_kb
    (kb / "notes" / "unindexed.md").write_text("# Late\n\nWritten after the index.\n", encoding="utf-8")
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    assert caught.value.error.code == -32602
    assert "TOPSECRET" not in str(caught.value)


async def test_the_listing_offers_topic_groups_and_no_oversized_document(hostile_kb):
    _kb, _service, server = hostile_kb
    async with Client(server) as client:
        groups = {r.uri: r for r in (await client.list_resources()).resources}
        assert set(groups) == {  # (notes/ itself holds only what is not offered: big.md, hard.md, keys.md)
            "kb://topic/",
            "kb://topic/notes/python",
            "kb://topic/notes/rust",
            "kb://topic/%E6%97%A5%E6%9C%AC%E8%AA%9E",
        }
        listing = (await client.read_resource("kb://topic/notes/rust")).contents[0].text
        assert "`notes/rust/async.md` — kb://doc/notes/rust/async.md" in listing
        big = answer(await client.call_tool("search", {"query": "enormous words", "limit": 20}))["results"]
        assert any(h["path"] == "notes/big.md" for h in big)
        assert all("uri" not in h for h in big if h["path"] == "notes/big.md")  # found, but not offered


async def test_a_large_topic_group_is_read_a_page_at_a_time(tmp_path, monkeypatch):
    """A group of many notes is listed a page at a time, each page saying which it is and where the next
    one is; together the pages list every document once; a page that does not exist is an MCP error."""
    import re

    from groove_tui.server import surface as s

    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(s, "TOPIC_PAGE_SIZE", 10, raising=False)
    notes = {f"many/n{i:02d}.md": f"# Note {i}\n\nWords of note {i} about many things.\n" for i in range(25)}
    kb = write_kb(tmp_path / "kb", notes)
    with served(kb) as (_service, server):
        async with Client(server) as client:
            listed = [r.uri for r in (await client.list_resources()).resources]
            assert listed == ["kb://topic/many"]
            seen, uri, texts = [], "kb://topic/many", []
            while uri:
                text = (await client.read_resource(uri)).contents[0].text
                texts.append(text)
                seen += re.findall(r"^- `([^`]+)`", text, re.M)
                found = re.search(r"^Next page: (\S+)$", text, re.M)
                uri = found.group(1) if found else None
            for bad in ("kb://topic/many?page=4", "kb://topic/many?page=0", "kb://topic/many?page=x"):
                with pytest.raises(MCPError) as caught:
                    await client.read_resource(bad)
                assert caught.value.error.code == -32602
    assert seen == sorted(notes) and len(texts) == 3
    assert "25 indexed documents under many; page 1 of 3 (documents 1–10, by path)" in texts[0]
    assert "Next page: kb://topic/many?page=2" in texts[0]
    assert "page 3 of 3 (documents 21–25, by path)" in texts[2] and "Next page" not in texts[2]


# ---------------------------------------------------------------- rebuild_index


async def test_a_second_rebuild_is_refused_while_the_first_runs(served_kb, monkeypatch):
    import anyio

    _kb, service, server = served_kb
    started, release = threading.Event(), threading.Event()
    real_index = service.engine.index

    def slow_index(**kw):
        started.set()
        release.wait(30)
        return real_index(**kw)

    monkeypatch.setattr(service.engine, "index", slow_index)
    async with Client(server) as client, anyio.create_task_group() as tg:
        first: dict = {}

        async def run_first():
            first["body"] = answer(await client.call_tool("rebuild_index", {"force": False}))

        tg.start_soon(run_first)
        await anyio.to_thread.run_sync(started.wait, 30)
        second = await client.call_tool("rebuild_index", {})
        assert second.is_error
        assert answer(second)["error"].startswith("A rebuild is already running (started 0s ago).")
        searched = answer(await client.call_tool("search", {"query": "tokio"}))  # reads keep answering
        assert searched["results"]
        release.set()
    assert set(first["body"]) == {
        "total_documents",
        "updated",
        "renamed",
        "deleted",
        "skipped",
        "total_chunks",
        "duration_ms",
    }
    assert first["body"]["total_documents"] == 4
    async with Client(server) as client:  # the slot is free again
        assert not (await client.call_tool("rebuild_index", {})).is_error


async def test_every_tool_result_carries_its_server_time_rebuild_index_too(served_kb, monkeypatch):
    """`_meta`'s groove-tui/server_ms on every answer: a search, an error, and rebuild_index's success,
    its refusal while another runs and its refusal of a bad argument."""
    import anyio

    from groove_tui.server.app import SERVER_MS

    _kb, service, server = served_kb
    started, release = threading.Event(), threading.Event()
    real_index = service.engine.index

    def slow_index(**kw):
        started.set()
        release.wait(30)
        return real_index(**kw)

    results = {}
    async with Client(server) as client:
        results["search"] = await client.call_tool("search", {"query": "tokio"})
        results["bad search"] = await client.call_tool("search", {"query": 5})
        results["rebuild"] = await client.call_tool("rebuild_index", {})
        results["bad rebuild"] = await client.call_tool("rebuild_index", {"force": "yes"})
        monkeypatch.setattr(service.engine, "index", slow_index)
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "rebuild_index", {})
            await anyio.to_thread.run_sync(started.wait, 30)
            results["busy rebuild"] = await client.call_tool("rebuild_index", {})
            release.set()
    assert results["busy rebuild"].is_error and results["bad rebuild"].is_error
    assert "total_documents" in answer(results["rebuild"])
    for what, result in results.items():
        assert isinstance((result.meta or {}).get(SERVER_MS), float), what


async def test_rebuild_index_picks_up_edits_made_without_a_watcher(served_kb):
    kb, _service, server = served_kb
    (kb / "notes" / "new.md").write_text("# Zebras\n\nStriped zebras graze on the savanna grass.\n", encoding="utf-8")
    async with Client(server) as client:
        body = answer(await client.call_tool("rebuild_index", {}))
        assert body["updated"] == 1 and body["total_documents"] == 5
        hits = answer(await client.call_tool("search", {"query": "zebras savanna"}))["results"]
        assert hits[0]["path"] == "notes/new.md"


# ---------------------------------------------------------------- get_connection_graph


async def test_the_connection_graph_walks_from_a_document_within_grooves_bounds(served_kb):
    _kb, _service, server = served_kb
    async with Client(server) as client:
        graph = answer(
            await client.call_tool(
                "get_connection_graph",
                {"start": "notes/rust/async.md", "depth": 99, "fan_out": 99, "min_similarity": 0.0, "max_nodes": 4},
            )
        )
        assert graph["start_path"] == "notes/rust/async.md"
        assert len(graph["nodes"]) == 4 and graph["truncated"] is True
        assert graph["truncation"][0]["reason"] == "node_budget"
        assert {n["depth"] for n in graph["nodes"]} <= {0, 1, 2, 3}
        assert all(n["path"] != "notes/rust/async.md" for n in graph["nodes"] if n["depth"] > 0)
        centroid = answer(
            await client.call_tool(
                "get_connection_graph",
                {"start": "notes/rust/async.md", "seed_strategy": "centroid", "min_similarity": 0},
            )
        )
        assert [n["depth"] for n in centroid["nodes"]][:1] == [0] and centroid["stats"]["seeds_used"] == 3
        bad = await client.call_tool("get_connection_graph", {"start": "notes/rust/async.md", "seed_strategy": "x"})
        assert bad.is_error and "unknown seed_strategy 'x'" in answer(bad)["error"]
        missing = answer(await client.call_tool("get_connection_graph", {"start": "nope.md"}))
        assert "document not found (no chunks for path): nope.md" in missing["error"]


async def test_a_walk_from_a_huge_note_reads_whole_rows_only_for_its_nodes(tmp_path, monkeypatch):
    """From a note of hundreds of chunks, each seed's nearest chunks are mostly the note's own: a walk
    reads each chunk's place at most once and whole rows only for what becomes a node, however many of
    the note's chunks the nearest-neighbour queries return."""
    import random

    from groove_tui.server import kb as kb_module

    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(400)]
    huge = "# Huge\n\n" + "".join(" ".join(rng.choices(vocab, k=80)) + ".\n\n" for _ in range(3000))
    assert len(huge.encode()) > 1_000_000
    files = {"notes/huge.md": huge, **{f"notes/small{i}.md": " ".join(rng.choices(vocab, k=200)) for i in range(20)}}
    walks: list = []
    run = kb_module._Walk.run

    def spied(self, start):
        walks.append(self)
        return run(self, start)

    monkeypatch.setattr(kb_module._Walk, "run", spied)
    with served(write_kb(tmp_path / "kb", files)) as (service, server):
        store = service.engine.store
        chunks = store.conn().execute("SELECT count(*) FROM chunks").fetchone()[0]
        loaded: list[int] = []
        rows_by_ids = store.rows_by_ids

        def counted(ids):
            loaded.append(len(ids))
            return rows_by_ids(ids)

        monkeypatch.setattr(store, "rows_by_ids", counted)
        args = {"start": "notes/huge.md", "max_seed_chunks": 1000, "fan_out": 20, "max_nodes": 2000}
        async with Client(server) as client:
            graph = answer(await client.call_tool("get_connection_graph", args))
    stats = graph["stats"]
    assert stats["seeds_used"] > 400 and stats["knn_queries"] >= stats["seeds_used"]
    assert sum(loaded) <= 2 * stats["total_nodes"]  # the seeds' rows and each new node's, no more
    assert walks[0].places_read <= chunks  # each chunk's place read at most once


async def test_the_ceilings_docs_serve_names_are_clamped_to_the_values_it_names(served_kb):
    """docs/serve.md lists each clamped ceiling ("`depth` above 3 as 3"); each is the surface's, and a value
    above it answers exactly as the ceiling itself does (groove's clamping, not a refusal)."""
    import re

    from groove_tui.server import surface as s

    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "serve.md").read_text("utf-8").split())
    found = re.findall(r"`(\w+)` above (\d+(?:,\d{3})*) (?:is read )?as (\d+(?:,\d{3})*)", text)
    assert all(above == read for _name, above, read in found)
    stated = {name: int(above.replace(",", "")) for name, above, _read in found}
    assert stated == {
        "limit": s.SEARCH_LIMIT_MAX,
        "depth": s.GRAPH_MAX_DEPTH,
        "fan_out": s.GRAPH_MAX_FAN_OUT,
        "max_nodes": s.GRAPH_MAX_NODES,
        "max_seed_chunks": s.GRAPH_MAX_SEED_CHUNKS,
    }
    described = {a.name: a.description for a in s.GET_CONNECTION_GRAPH.args}
    for name in ("depth", "fan_out", "max_nodes", "max_seed_chunks"):  # and the agent is told so
        assert f"more than {stated[name]} is read as {stated[name]}" in described[name]
    _kb, _service, server = served_kb
    async with Client(server) as client:
        for name, ceiling in stated.items():
            tool, base = (
                ("search", {"query": "the", "include_low_quality": True})
                if name == "limit"
                else ("get_connection_graph", {"start": "notes/rust/async.md", "min_similarity": 0.0})
            )
            at = answer(await client.call_tool(tool, {**base, name: ceiling}))
            above = answer(await client.call_tool(tool, {**base, name: ceiling + 6}))
            for body in (at, above):
                body.get("stats", {}).pop("duration_ms", None)
            assert "error" not in above and above == at, name


# ---------------------------------------------------------------- prompts


async def test_a_prompt_is_one_user_message_carrying_its_argument(served_kb):
    _kb, _service, server = served_kb
    async with Client(server) as client:
        got = await client.get_prompt("summarize_topic", {"topic": "zqxw-topic"})
        assert len(got.messages) == 1 and got.messages[0].role == "user"
        assert "zqxw-topic" in got.messages[0].content.text and "list_topics" in got.messages[0].content.text
        new = await client.get_prompt("whats_new", {})
        assert "date_from" in new.messages[0].content.text
        gaps = await client.get_prompt("find_gaps", {"topic": "rust"})
        assert 'topic: "rust"' in gaps.messages[0].content.text
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("no_such_prompt", {})
        assert "summarize_topic" in str(unknown.value)
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("deep_dive", {})
        assert "question" in str(missing.value)


# ---------------------------------------------------------------- the watcher and concurrent reads


async def test_the_watcher_keeps_the_served_index_current(served_kb):
    import anyio

    from groove_tui.server.app import Watching

    kb, service, server = served_kb
    events = []
    with Watching(service, events.append, debounce_ms=50):
        async with Client(server) as client:
            await anyio.to_thread.run_sync(lambda: _wait(lambda: any(e.kind == "watching" for e in events)))
            (kb / "notes" / "otters.md").write_text(
                "# Otters\n\nSea otters hold hands while sleeping.\n", encoding="utf-8"
            )
            await anyio.to_thread.run_sync(lambda: _wait(lambda: any(e.kind == "batch" for e in events)))
            hits = answer(await client.call_tool("search", {"query": "sea otters sleeping"}))["results"]
    assert hits[0]["path"] == "notes/otters.md"


def _wait(done, timeout: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "the watcher did not report in time"
        time.sleep(0.05)


async def test_a_search_does_not_wait_for_an_index_write_in_progress(served_kb):
    """A writer holding the index's write lock and an open write transaction (as the watcher does
    mid-batch) neither blocks a search nor shows it the uncommitted rows."""
    import anyio

    _kb, service, server = served_kb
    writing, done = threading.Event(), threading.Event()

    def writer():
        conn = service.engine.store.open_connection()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM chunks")
        writing.set()
        done.wait(30)
        conn.execute("ROLLBACK")
        conn.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        await anyio.to_thread.run_sync(writing.wait, 30)
        async with Client(server) as client:
            hits = answer(await client.call_tool("search", {"query": "tokio runtime"}))["results"]
        assert hits and hits[0]["path"] == "notes/rust/async.md"
    finally:
        done.set()
        thread.join()


def test_on_the_demo_handbook_too_a_search_answer_is_the_search_commands_json_plus_uri(cli, tmp_path):
    """The handbook shipped in the package (33 notes, four in Japanese), queried as its golden file does."""
    import anyio

    import groove_tui.demo

    kb = Path(groove_tui.demo.__file__).parent / "kb"
    assert cli("index", str(kb), "--model", "hashing", "--quiet")[0] == 0
    queries = ["parent retriever", "λ slider", "設定", "-reranker MMR", "watch the notes while editing"]
    expected = []
    for q in queries:
        code, out, err = cli("search", str(kb), "--model", "hashing", "--format", "json", "--limit", "5", "--", q)
        assert code == 0, err
        expected.append(json.loads(out))

    async def call():
        with served(kb) as (_service, server):
            async with Client(server) as client:
                return [answer(await client.call_tool("search", {"query": q})) for q in queries]

    got = anyio.run(call)
    for body in got:
        for hit in body["results"]:
            assert hit.pop("uri").startswith("kb://doc/")
    assert got == expected
    assert all(body["results"] for body in got)


async def test_an_index_gone_bad_is_one_error_line_not_a_traceback(served_kb, monkeypatch, capsys):
    import sqlite3

    _kb, service, server = served_kb

    def broken(*_a, **_k):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(service.engine, "search", broken)
    monkeypatch.setattr(service, "topic_groups", broken)
    async with Client(server) as client:
        result = await client.call_tool("search", {"query": "tokio"})
        assert result.is_error
        assert answer(result) == {"error": "search failed: database disk image is malformed"}
        with pytest.raises(MCPError) as caught:
            await client.list_resources()
        assert "database disk image is malformed" in str(caught.value)
    assert "Traceback" not in capsys.readouterr().err


async def test_every_read_runs_on_one_long_lived_thread(served_kb):
    """Concurrent calls are read on one thread, so the engine's per-thread state (a SQLite connection held
    until it closes, highlighting's scratch table) exists once, not once per worker thread ever started."""
    import anyio

    _kb, service, server = served_kb
    threads: set[int] = set()
    call = service.call

    def traced(name, arguments):
        threads.add(threading.get_ident())
        return call(name, arguments)

    service.call = traced
    async with Client(server) as client:
        for i in range(3):  # the read thread's connection, and those of the legs' own threads
            await client.call_tool("search", {"query": f"tokio runtime warm {i}"})
            await client.read_resource("kb://topic/notes/rust")
        connections = len(service.engine.store._all)
        async with anyio.create_task_group() as tg:
            for i in range(16):
                tg.start_soon(client.call_tool, "search", {"query": f"tokio runtime {i}"})
                tg.start_soon(client.read_resource, "kb://topic/notes/rust")
    assert len(threads) == 1 and threading.get_ident() not in threads
    assert len(service.engine.store._all) <= connections + 2  # (the legs' own pool may still add one)


def test_the_servers_retrieval_cache_is_held_by_what_it_weighs(served_kb, monkeypatch):
    """Each cached retrieval holds its candidates' text: the server's cache is bounded in bytes, not only
    by its 1,024 entries."""
    from groove_tui.server import kb as kb_module

    _kb, _service, _server = served_kb
    engine = _service.engine
    monkeypatch.setattr(kb_module, "RETRIEVAL_CACHE_BYTES", 6_000)
    kb_module.KbService(engine)
    cache = engine._searcher.legs_cache
    for i in range(40):
        engine.search(f"the rust python tokio {i}", engine.default_params(limit=5))
    assert 1 < len(cache._data) < 40 and cache.weight <= 6_000 + max(cache._weights.values())
