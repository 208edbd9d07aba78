"""groove.toml parsing: groove's keys work unchanged; every bad value names key, value and range."""

from __future__ import annotations

import tomllib

import pytest

from groove_tui.settings.config import Config, ConfigError, load_config, parse_config

GROOVE_TOML = """
kb_path = "/notes"
model = "bge-small-en-v1.5"
reranker = "bge-v2-m3"
rerank_by_default = false
exclude_headings = ["Changelog"]
exclude_dirs = [".git", "archive"]
fastembed_cache_dir = "/tmp/fe"

[quality_filter]
enabled = true
threshold = 0.5

[parsers]
enabled = ["md"]

[search]
min_confidence_ratio = 2.0

[search.mmr]
enabled = true
lambda = 0.6
same_doc_penalty = 0.2

[search.parent_retriever]
enabled = true
whole_doc_threshold_tokens = 50
max_expanded_tokens = 1000

[search.fusion]
rrf_k = 30.0
bm25_heading_weight = 3.0

[contextual]
enabled = true

[eval]
k_values = [10, 1, 5, 5]
regression_threshold = 0.02

[watch]
debounce_ms = 500
"""


def test_a_groove_toml_works_unchanged():
    cfg = parse_config(tomllib.loads(GROOVE_TOML))
    assert cfg.embedding.model == "BAAI/bge-small-en-v1.5"
    assert cfg.reranker.model == "BAAI/bge-reranker-v2-m3" and cfg.reranker.rerank_by_default is False
    assert cfg.exclude_headings == ("Changelog",) and cfg.exclude_dirs == (".git", "archive")
    assert cfg.quality_filter.effective == 0.5
    assert cfg.search.min_confidence_ratio == 2.0
    assert (cfg.search.mmr.enabled, cfg.search.mmr.lambda_, cfg.search.mmr.same_doc_penalty) == (True, 0.6, 0.2)
    assert cfg.search.parent_retriever.max_expanded_tokens == 1000
    assert cfg.search.fusion.rrf_k == 30.0 and cfg.search.fusion.bm25_heading_weight == 3.0
    assert not cfg.search.fusion.is_groove()
    assert cfg.contextual is True
    assert cfg.eval.k_values == (1, 5, 10)


def test_our_sections():
    cfg = parse_config(
        tomllib.loads(
            '[embedding]\nmodel = "use-multilingual"\nbatch_size = 16\nmax_tokens = 300\n'
            '[reranker]\nmodel = "/models/ce"\n'
            "[chunking]\nmax_chunk_bytes = 3000\n[search]\ncjk_bigram = false\n"
            '[search.fusion]\nvector_weight = 0.5\n[tui]\ntheme = "groove-light"\n[tui.keymap]\ntoggle_mmr = "ctrl+m"\n'
        )
    )
    assert cfg.embedding.model == "use-multilingual" and cfg.embedding.batch_size == 16
    assert cfg.embedding.max_tokens == 300 and Config().embedding.max_tokens is None  # None: the model's choice
    assert cfg.reranker.model == "/models/ce"
    assert cfg.chunking.max_chunk_bytes == 3000 and cfg.search.cjk_bigram is False
    assert cfg.search.fusion.vector_weight == 0.5
    assert cfg.tui.theme == "groove-light" and cfg.tui.keymap == (("toggle_mmr", "ctrl+m"),)


def test_defaults():
    cfg = parse_config({})
    assert cfg == Config()
    assert cfg.quality_filter.effective == 0.3 and cfg.reranker.model is None
    assert cfg.search.fusion.method == "dbsf" and not cfg.search.fusion.is_groove()
    assert parse_config({"search": {"fusion": {"method": "rrf"}}}).search.fusion.is_groove()
    with pytest.raises(
        ConfigError, match=r"search\.fusion\.method = 'borda' is invalid: expected one of dbsf, relative, rrf"
    ):
        parse_config({"search": {"fusion": {"method": "borda"}}})


@pytest.mark.parametrize(
    ("toml", "key", "allowed"),
    [
        ("[search.mmr]\nlambda = 1.5", "search.mmr.lambda", "[0, 1]"),
        ("[search.mmr]\nlambda = nan", "search.mmr.lambda", "[0, 1]"),
        ("[search.mmr]\nsame_doc_penalty = -0.1", "search.mmr.same_doc_penalty", "[0, 1]"),
        ("[search.fusion]\nrrf_k = 0.5", "search.fusion.rrf_k", "[1, 1e+06]"),
        ("[search.fusion]\nbm25_content_weight = inf", "search.fusion.bm25_content_weight", "[0, 1e+06]"),
        ("[search]\nmin_confidence_ratio = -1", "search.min_confidence_ratio", "[0, inf]"),
        (
            "[search.parent_retriever]\nmax_expanded_tokens = 9000",
            "search.parent_retriever.max_expanded_tokens",
            "8192",
        ),
        (
            "[search.parent_retriever]\nwhole_doc_threshold_tokens = 500\nmax_expanded_tokens = 400",
            "search.parent_retriever.max_expanded_tokens",
            "greater than whole_doc_threshold_tokens",
        ),
        ("[search.mmr]\nenabled = 'yes'", "search.mmr.enabled", "true or false"),
        ("[embedding]\nbatch_size = 0", "embedding.batch_size", "[1, 1024]"),
        ("[embedding]\nmax_tokens = -1", "embedding.max_tokens", "[0, 100000]"),
        ("[embedding]\nmax_tokens = 25.5", "embedding.max_tokens", "an integer"),
        ("[chunking]\nmax_chunk_bytes = 10", "chunking.max_chunk_bytes", "[200, 1e+06]"),
        ("[eval]\nk_values = [0]", "eval.k_values", "[1, 1000]"),
        ("[parsers]\nenabled = []", "parsers.enabled", "non-empty"),
        ("exclude_headings = 'x'", "exclude_headings", "list of strings"),
    ],
)
def test_bad_values_name_key_value_and_range(toml, key, allowed):
    with pytest.raises(ConfigError) as err:
        parse_config(tomllib.loads(toml))
    msg = str(err.value)
    assert key in msg and allowed in msg


def test_unknown_keys_are_errors():
    with pytest.raises(ConfigError, match=r"unknown key 'search.mmr.lamda'"):
        parse_config(tomllib.loads("[search.mmr]\nlamda = 0.5"))
    with pytest.raises(ConfigError, match="unknown key 'colour'"):
        parse_config({"colour": "red"})


def test_all_zero_weights_are_refused():
    toml = "[search.fusion]\nbm25_heading_weight = 0\nbm25_context_weight = 0\nbm25_content_weight = 0"
    with pytest.raises(ConfigError, match="at least one"):
        parse_config(tomllib.loads(toml))


def test_load_config_discovery(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert load_config() == Config()
    (tmp_path / "groove.toml").write_text("[search.mmr]\nenabled = true\n")
    assert load_config().search.mmr.enabled
    other = tmp_path / "other.toml"
    other.write_text("[search]\nmin_confidence_ratio = 3.0\n")
    monkeypatch.setenv("GROOVE_TUI_CONFIG", str(other))
    assert load_config().search.min_confidence_ratio == 3.0
    assert load_config(tmp_path / "groove.toml").search.mmr.enabled
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[search\n")
    with pytest.raises(ConfigError, match=r"bad.toml"):
        load_config(bad)


def test_a_config_path_that_is_a_directory_is_said_to_be_one(cli, kb, tmp_path, monkeypatch):
    folder = tmp_path / "settings"
    folder.mkdir()
    code, out, err = cli("status", str(kb), "--config", str(folder))
    assert code == 1 and out == ""
    assert err.strip() == f"groove-tui: config file {str(folder)!r} is a directory, not a file"
    (folder / "groove.toml").write_text("[search.mmr]\nenabled = true\n")
    code, _, err = cli("status", str(kb), "--config", str(folder))
    assert f"is a directory, not a file (did you mean {str(folder / 'groove.toml')!r}?)" in err
    monkeypatch.setenv("GROOVE_TUI_CONFIG", str(folder))
    with pytest.raises(ConfigError, match="is a directory, not a file"):
        load_config()
