"""Settings saved back: the groove.toml fragment reads back to the same settings; `config show` says
where every value came from."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groove_tui import cli
from groove_tui.engine.types import SearchParams
from groove_tui.settings.config import Config, parse_config
from groove_tui.settings.fragment import OURS, effective_config, file_keys, flatten, fragment, provenance


def _read_back(text: str) -> Config:
    return parse_config(tomllib.loads(text))


def _ranking(c: Config) -> tuple:
    rr = c.reranker
    return c.search, rr.model, rr.rerank_by_default, (rr.pool, rr.blend) if rr.model else None


unit = st.floats(0, 1, allow_nan=False)
weight = st.floats(0, 1e6, allow_nan=False).filter(lambda w: w > 0)


@settings(max_examples=60, deadline=None)
@given(
    mmr=st.booleans(),
    lam=unit,
    pen=unit,
    parent=st.booleans(),
    fusion=st.sampled_from(["dbsf", "relative", "rrf"]),
    vw=weight,
    fw=weight,
    rrf_k=st.floats(1, 1e6),
    reranker=st.sampled_from([None, "ms-marco-l12", "/models/ce 日本"]),
    pool=st.integers(1, 1000),
    blend=unit,
    ratio=st.floats(0, 100),
)
def test_a_fragment_reads_back_to_the_same_settings(
    mmr, lam, pen, parent, fusion, vw, fw, rrf_k, reranker, pool, blend, ratio
):
    base = Config()
    s = base.search
    config = replace(
        base,
        search=replace(
            s, min_confidence_ratio=ratio, fusion=replace(s.fusion, vector_weight=vw, fts_weight=fw, rrf_k=rrf_k)
        ),
        reranker=replace(base.reranker, model="ms-marco-l12", pool=pool, blend=blend),
    )
    params = SearchParams(
        mmr=mmr, mmr_lambda=lam, mmr_same_doc_penalty=pen, parent_retriever=parent, fusion=fusion, reranker=reranker
    )
    want = effective_config(config, params)
    got = _read_back(fragment(want))
    assert _ranking(got) == _ranking(want)
    # and the default search of the read-back config is the one that was saved
    assert (got.search.mmr.enabled, got.search.mmr.lambda_, got.search.fusion.method) == (mmr, lam, fusion)
    assert (got.reranker.model if got.reranker.rerank_by_default else None) == reranker


def test_groove_tui_only_keys_are_marked_and_groove_keys_are_not():
    text = fragment(effective_config(Config(), SearchParams(reranker="ms-marco-l12")))
    marked = {line.split("=")[0].strip() for line in text.splitlines() if line.endswith(OURS)}
    assert marked == {
        "cjk_bigram",
        "merge_parts",
        "heading_first",
        "word_leg",
        "method",
        "vector_weight",
        "fts_weight",
        "trigram_weight",
        "word_weight",
        "name_weight",
        "model",
        "pool",
        "blend",
    }
    for groove_key in (
        "lambda",
        "same_doc_penalty",
        "rrf_k",
        "bm25_heading_weight",
        "whole_doc_threshold_tokens",
        "rerank_by_default",
        "min_confidence_ratio",
    ):
        line = next(x for x in text.splitlines() if x.startswith(groove_key + " "))
        assert OURS not in line
    # without a reranker the fragment uses groove's own top-level key
    plain = fragment(effective_config(Config(), SearchParams()))
    assert 'reranker = "none"' in plain and "[reranker]" not in plain


def test_provenance_names_default_file_and_flag(tmp_path: Path, capsys, monkeypatch):
    toml = tmp_path / "groove.toml"
    toml.write_text(
        'model = "bge-small-en-v1.5"\n[search.mmr]\nlambda = 0.4\nenabled = true\n'
        '[tui.keymap]\n"app.quit" = "ctrl+x"\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    assert cli.main(["config", "show", "--format", "json", "--same-doc-penalty", "0.25", "--fusion", "rrf"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["key"]: (r["value"], r["source"]) for r in data["settings"]}
    assert data["config_file"] == str(toml)
    assert rows["embedding.model"] == ("BAAI/bge-small-en-v1.5", str(toml))  # groove's top-level spelling
    assert rows["search.mmr.lambda"] == (0.4, str(toml))
    assert rows["search.mmr.enabled"] == (True, str(toml))
    assert rows["search.mmr.same_doc_penalty"] == (0.25, "flag --same-doc-penalty")
    assert rows["search.fusion.method"] == ("rrf", "flag --fusion")
    assert rows["search.fusion.rrf_k"] == (60.0, "default")
    assert rows["tui.keymap.app.quit"] == ("ctrl+x", str(toml))
    assert set(rows) == {k for k, _v in flatten(_read_back(toml.read_text()))}

    assert cli.main(["config", "show"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"config file: {toml}\n")
    assert any(line.startswith("search.mmr.lambda ") and line.endswith(str(toml)) for line in text.splitlines())

    assert cli.main(["config", "show", "--format", "toml", "--lambda", "0.9"]) == 0
    back = _read_back(capsys.readouterr().out)
    assert back.search.mmr.lambda_ == 0.9 and back.search.mmr.enabled


def test_config_show_refuses_a_bad_flag_in_one_line(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.setattr("groove_tui.settings.paths.user_config_dir", lambda: tmp_path / "none")
    assert cli.main(["config", "show", "--lambda", "2"]) == 1
    assert capsys.readouterr().err == "groove-tui: --lambda = 2.0 is invalid: expected a number in [0, 1]\n"
    assert cli.main(["config", "show"]) == 0
    assert capsys.readouterr().out.startswith("config file: none found (defaults)\n")


def test_file_keys_use_the_names_flatten_uses():
    keys = file_keys(
        {
            "reranker": "bge-v2-m3",
            "rerank_by_default": False,
            "search": {"fusion": {"rrf_k": 5.0}},
            "contextual": {"enabled": True},
        }
    )
    assert keys == {"reranker.model", "reranker.rerank_by_default", "search.fusion.rrf_k", "contextual.enabled"}
    rows = provenance(Config(source="g.toml"), {"search": {"mmr": {"lambda": 0.5}}}, {"embedding.model": "--model"})
    by_key = {k: s for k, _v, s in rows}
    assert by_key["search.mmr.lambda"] == "g.toml" and by_key["embedding.model"] == "flag --model"


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_numbers_have_no_toml_form(value):
    from groove_tui.settings.fragment import toml_value

    with pytest.raises(ValueError):
        toml_value(value)


def test_a_fragment_merges_into_a_groove_toml_keeping_its_comments_and_other_keys(tmp_path):
    import tomllib

    from groove_tui.engine.types import SearchParams
    from groove_tui.settings.config import Config, parse_config
    from groove_tui.settings.fragment import effective_config, fragment, save_fragment

    path = tmp_path / "groove.toml"
    original = (
        "# team settings\nexclude_dirs = ['.git']  # single quotes stay\n\n[reranker]\n"
        "model = 'ms-marco-l12'\npool = 30  # measured\n\n[search.mmr]\nenabled = false\nlambda = 0.5\n"
    )
    path.write_text(original, encoding="utf-8")
    cfg = parse_config(tomllib.loads(original))
    text = fragment(effective_config(cfg, SearchParams(mmr=True, mmr_lambda=0.4, reranker="ms-marco-l12")))
    assert save_fragment(path, text) == "merged"
    merged = path.read_text(encoding="utf-8")
    assert merged.startswith("# team settings\nexclude_dirs = ['.git']  # single quotes stay\n")
    assert "pool = 30  # measured" in merged
    back = parse_config(tomllib.loads(merged))
    assert back.search.mmr.enabled and back.search.mmr.lambda_ == 0.4 and back.reranker.pool == 30
    assert back.exclude_dirs == (".git",) and back.reranker.model == cfg.reranker.model
    fresh = tmp_path / "new" / "groove.toml"
    assert save_fragment(fresh, fragment(effective_config(Config(), SearchParams()))) == "created"
    assert parse_config(tomllib.loads(fresh.read_text(encoding="utf-8"))).search.mmr.enabled is False


def test_config_show_names_the_default_model_as_the_engine_names_it(tmp_path, monkeypatch, capsys):
    """No model named: `config show` says the model a new index is built with, as the engine (the header,
    `status`, `serve`) calls it, not the setting's name for the family."""
    from groove_tui import cli
    from groove_tui.engine import Engine

    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kb").mkdir()
    with Engine.open(tmp_path / "kb") as engine:
        used = engine.model_id
    assert cli.main(["config", "show", "--format", "json"]) == 0
    settings = {s["key"]: s for s in json.loads(capsys.readouterr().out)["settings"]}
    assert settings["embedding.model"] == {"key": "embedding.model", "value": used, "source": "default"}
    assert cli.main(["config", "show"]) == 0
    assert f'"{used}"' in next(
        line for line in capsys.readouterr().out.splitlines() if line.startswith("embedding.model")
    )
    assert cli.main(["config", "show", "--format", "json", "--model", "multilingual-e5-small"]) == 0
    named = {s["key"]: s for s in json.loads(capsys.readouterr().out)["settings"]}["embedding.model"]
    assert named["value"] == "multilingual-e5-small" and named["source"] == "flag --model"  # as named
