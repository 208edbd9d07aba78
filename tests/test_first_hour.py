"""Small mistakes a new user makes in the first hour, each a clear one-line error: an empty model name, a
bench count out of range, a KB path with a newline or a bidi control in it, an embedder named as the
reranker."""

from __future__ import annotations

import json
import tomllib

import pytest

from groove_tui.settings.config import ConfigError, parse_config

from helpers import SAMPLE_KB, write_kb
from tinymodels import build_tiny_embedder


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("groove-tui: ") and "Traceback" not in err, err
    return lines[0]


# ---------------------------------------------------------------- model = ""


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[embedding]\nmodel = ""', "embedding.model"),
        ('[embedding]\nmodel = "   "', "embedding.model"),
        ('model = ""', "model"),  # groove's top-level key
    ],
)
def test_an_empty_model_name_is_an_error_naming_the_key(toml, key):
    with pytest.raises(ConfigError) as err:
        parse_config(tomllib.loads(toml))
    msg = str(err.value)
    assert msg.startswith(f"{key} = ") and "is invalid: expected a model name" in msg
    assert "leave the key out for the default" in msg


def test_an_empty_model_in_groove_toml_stops_index_instead_of_using_the_current_directory(cli, tmp_path):
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    (tmp_path / "groove.toml").write_text('[embedding]\nmodel = ""\n')
    build_tiny_embedder(tmp_path / "onnx")  # the current directory could even pass for a model
    code, _out, err = cli("index", str(kb), "--quiet")
    line = one_line(err)
    assert code == 1 and "embedding.model = ''" in line and "expected a model name" in line
    assert not (tmp_path / "indexes").exists()  # nothing was built with the wrong model


def test_an_empty_model_flag_is_an_error(cli, tmp_path):
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    code, _out, err = cli("index", str(kb), "--model", "", "--quiet")
    assert code == 1 and "--model '' is invalid: expected a model name" in one_line(err)


# ---------------------------------------------------------------- bench counts


@pytest.mark.parametrize(
    ("flag", "value", "allowed"),
    [
        ("--repeat", "0", "[1, 1,000]"),
        ("--repeat", "-3", "[1, 1,000]"),
        ("--docs", "-5", "[0, 10,000,000] (0 = all)"),
        ("--rerank-queries", "0", "[1, 100,000]"),
        ("--scale", "0", "[1, 100,000,000] chunks"),
    ],
)
def test_bench_refuses_a_count_out_of_range_naming_flag_value_and_range(cli, tmp_path, flag, value, allowed):
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    code, out, err = cli("bench", str(kb), "--model", "hashing", flag, value)
    line = one_line(err)
    assert code == 1 and out == ""
    assert line == f"groove-tui: {flag} {value} is invalid: expected an integer in {allowed}"
    assert not (tmp_path / "indexes").exists()  # refused before anything was opened or built


# ---------------------------------------------------------------- paths in errors


@pytest.mark.parametrize("odd", ["new\nline", "rtl\u202eoverride", "bell\x07"])
def test_an_error_that_echoes_a_kb_path_escapes_its_controls(cli, tmp_path, odd):
    kb = write_kb(tmp_path / f"kb-{odd}", SAMPLE_KB)
    for argv in (
        ["search", str(kb), "tokio", "--model", "hashing"],  # not indexed yet: names the KB twice
        ["status", str(kb), "--model", "hashing"],
        ["search", str(tmp_path / f"gone-{odd}"), "tokio"],
    ):  # does not exist
        code, _out, err = cli(*argv)
        assert code == 1
        line = one_line(err)  # the newline did not split the message
        assert "\u202e" not in err and "\x07" not in err
        shown = odd.replace("\n", "\\n").replace("\u202e", "\\u202e").replace("\x07", "\\x07")
        assert shown in line, line


def test_a_golden_file_path_with_a_newline_is_escaped_too(cli, tmp_path):
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    assert cli("index", str(kb), "--model", "hashing", "--quiet")[0] == 0
    code, _out, err = cli("eval", str(kb), "--model", "hashing", "--golden", str(tmp_path / "a\nb.yml"))
    assert code == 1 and "a\\nb.yml" in one_line(err)


# ---------------------------------------------------------------- an embedder as the reranker


@pytest.mark.parametrize(
    "name",
    [
        "multilingual-e5-small",
        "e5",
        "use-multilingual",
        "bge-small-en",
        "hashing-64",
        "BAAI/bge-small-en-v1.5",
        "sentence-transformers/all-MiniLM-L6-v2",
    ],
)
def test_an_embedder_named_as_the_reranker_says_so_and_lists_the_rerankers(name):
    from groove_tui.engine.models.offline import ModelUnavailable
    from groove_tui.engine.stages.rerank import load_reranker

    with pytest.raises(ModelUnavailable) as e:
        load_reranker(name)
    msg = str(e.value)
    assert "is an embedder, not a reranker" in msg and "\n" not in msg
    assert "the rerankers are: ms-marco-l12, bge-v2-m3, jina-v2-ml, bge-base" in msg


def test_an_embedder_folder_as_the_reranker_is_refused_at_load_not_mid_search(cli, tmp_path, monkeypatch):
    """A pulled embedder (its manifest says so), and a local ONNX folder holding an embedder (found by
    running one pair through it): refused by name, never a numpy error from inside the scoring."""
    import hashlib

    from groove_tui.engine.models.catalog import MANIFEST, Manifest
    from groove_tui.engine.models.offline import ModelUnavailable
    from groove_tui.engine.stages.rerank import clear_reranker_cache, load_reranker

    local = build_tiny_embedder(tmp_path / "local-embedder")
    with pytest.raises(ModelUnavailable, match=r"is not a cross-encoder .*the rerankers are: ms-marco-l12"):
        load_reranker(str(local))
    root = tmp_path / "models"
    pulled = build_tiny_embedder(root / "my-embedder")
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in pulled.iterdir()}
    (pulled / MANIFEST).write_text(Manifest(name="my-embedder", kind="embedder", files=files).to_json())
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(root))
    with pytest.raises(ModelUnavailable, match=r"'my-embedder' .* is an embedder, not a reranker"):
        load_reranker("my-embedder")
    clear_reranker_cache()
    # through search: the fused results stand, and the one-line warning says what was wrong
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    assert cli("index", str(kb), "--model", "hashing", "--quiet")[0] == 0
    code, out, err = cli(
        "search", str(kb), "tokio", "--model", "hashing", "--reranker", "multilingual-e5-small", "--format", "json"
    )
    assert code == 0
    data = json.loads(out)
    assert data["results"]
    assert "numpy" not in (out + err) and "0-dimensional" not in (out + err)
    code, out, _err = cli("search", str(kb), "tokio", "--model", "hashing", "--reranker", "multilingual-e5-small")
    assert code == 0 and "is an embedder, not a reranker" in out
