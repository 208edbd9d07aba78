"""Rerankers: a tiny ONNX cross-encoder through fastembed's real loader; offline failures; names; cache."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from groove_tui.engine.models.offline import ModelUnavailable
from groove_tui.engine.stages.rerank import (
    FastEmbedReranker,
    Reranker,
    describe_reranker,
    get_reranker,
    load_reranker,
    reranker_enabled,
)

sys.path.insert(0, str(Path(__file__).parent))
from helpers import assert_quiet_session
from tinymodels import build_tiny_cross_encoder

DOCS = [
    "The cat sat on the mat and looked at the garden.",
    "Rust async runtimes such as tokio spawn tasks on a thread pool.",
    "東京は日本の首都です。",
    "A database index makes queries fast on large tables.",
]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny") / "cross")


@pytest.fixture(scope="module")
def tiny(tiny_dir: Path) -> Reranker:
    return load_reranker(str(tiny_dir))


def test_tiny_cross_encoder_loads_through_fastembed(tiny: Reranker, tiny_dir: Path) -> None:
    assert isinstance(tiny, FastEmbedReranker) and isinstance(tiny, Reranker)
    assert tiny.model_id == "onnx-dir:" + str(tiny_dir.resolve()) == describe_reranker(str(tiny_dir))
    scores = tiny.score("cat on the mat", DOCS)
    assert scores.shape == (len(DOCS),) and scores.dtype == np.float32
    assert len(set(scores.tolist())) == len(DOCS)  # scores differ by document
    assert tiny.score("x", []).shape == (0,)


def test_the_cross_encoders_session_is_built_quiet(tiny: Reranker) -> None:
    assert_quiet_session(tiny._model.model.model)  # type: ignore[attr-defined]


def test_relevant_document_scores_higher(tiny: Reranker) -> None:
    scores = tiny.score("tokio tasks thread pool", DOCS)
    assert int(np.argmax(scores)) == 1
    assert tiny.score("東京", DOCS).argmax() == 2


def test_scores_are_deterministic_and_in_input_order(tiny: Reranker, tiny_dir: Path) -> None:
    q = "database queries"
    first = tiny.score(q, DOCS)
    np.testing.assert_array_equal(load_reranker(str(tiny_dir)).score(q, DOCS), first)  # reload: no double registration
    order = [3, 0, 2, 1]
    np.testing.assert_allclose(tiny.score(q, [DOCS[i] for i in order]), first[order], rtol=1e-6, atol=1e-5)
    # batching does not change scores (rerank splits the pool in batches of 8)
    many = DOCS * 5
    np.testing.assert_allclose(tiny.score(q, many), np.tile(first, 5), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("name", ["bge-v2-m3", "BAAI/bge-reranker-base", "Xenova/ms-marco-MiniLM-L-6-v2"])
def test_uncached_catalog_reranker_fails_fast(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_waiting: dict
) -> None:
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # worst case: fastembed alone would retry ~40 s
    with pytest.raises(ModelUnavailable) as info:
        load_reranker(name)
    assert no_waiting == {"sleep": [], "connect": []}  # no retry, no hub: it gave up at once
    msg = str(info.value)
    assert describe_reranker(name) in msg and "FASTEMBED_CACHE_PATH" in msg and "[reranker] model" in msg
    assert "HF_HUB_OFFLINE" not in os.environ


def test_unknown_reranker_says_how_to_find_names() -> None:
    with pytest.raises(ModelUnavailable, match="groove-tui models list"):
        load_reranker("no-such/reranker")


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="does not exist"):
        load_reranker(str(tmp_path / "nothing"))


def test_off_names() -> None:
    for off in (None, "", "none", "None", " off "):
        assert not reranker_enabled(off)
    assert reranker_enabled("bge-v2-m3")
    with pytest.raises(ValueError):
        load_reranker("none")


def test_groove_aliases() -> None:
    assert describe_reranker("bge-v2-m3") == "BAAI/bge-reranker-v2-m3"
    assert describe_reranker("jina-v2-ml") == "jinaai/jina-reranker-v2-base-multilingual"
    assert describe_reranker("bge-base") == "BAAI/bge-reranker-base"


def test_get_reranker_shares_one_instance(tiny_dir: Path) -> None:
    a = get_reranker(str(tiny_dir))
    assert get_reranker("onnx-dir:" + str(tiny_dir)) is a
