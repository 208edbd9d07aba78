"""The real model paths, end to end: the bundled default embedder and fastembed's local-ONNX loader."""

from __future__ import annotations

from dataclasses import replace

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.models.embedders import default_model_name
from groove_tui.settings.config import Config, EmbeddingConfig

from tinymodels import build_tiny_embedder


def test_default_config_indexes_and_searches_with_the_bundled_model(kb, tmp_path):
    with Engine.open(kb, config=Config(), index_dir=tmp_path / "idx") as eng:
        assert eng.model_id == default_model_name()
        report = eng.index()
        assert report.pending_embeddings == 0 and report.embedded == report.chunks
        resp = eng.search("クロスエンコーダで並べ替える", SearchParams(limit=3, legs="vector"))
        assert resp.results[0].path == "日本語/検索.md"
        resp = eng.search("how does the async runtime schedule work", SearchParams(limit=3, legs="vector"))
        assert resp.results[0].path == "notes/rust/async.md"


def test_fastembed_local_onnx_directory_as_the_embedder(kb, tmp_path):
    model_dir = build_tiny_embedder(tmp_path / "tiny")
    cfg = replace(Config(), embedding=EmbeddingConfig(model=str(model_dir)))
    with Engine.open(kb, config=cfg, index_dir=tmp_path / "idx") as eng:
        assert eng.model_id.startswith("onnx-dir:")
        eng.index()
        assert eng.status().dim == 32
        assert eng.search("tokio runtime", SearchParams(limit=3)).results
