"""A pulled model folder runs without importing fastembed: its tokenizer as fastembed configures it and its
graph as ONNX Runtime optimises it, both saved by the first load, give fastembed's vectors exactly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from groove_tui.engine.models.embedders import FastEmbedEmbedder, load_embedder
from groove_tui.engine.models.prepared import (
    GRAPH_DATA_FILE,
    GRAPH_FILE,
    INFO_FILE,
    PREPARED_DIR,
    PreparedOnnxEmbedder,
)

sys.path.insert(0, str(Path(__file__).parent))
from helpers import assert_quiet_session
from tinymodels import build_tiny_embedder

TEXTS = ["the cat sat on the mat", "rust tokio spawn tasks " * 40, "東京は日本の首都です。", "", "search"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_embedder(tmp_path_factory.mktemp("tiny") / "embedder", dim=32)


def _pulled(tiny_dir: Path, root: Path, **manifest: object) -> Path:
    """A folder laid out as `models pull bge-small-en` leaves it, the tiny model standing in."""
    folder = root / "bge-small-en"
    shutil.copytree(tiny_dir, folder)
    (folder / "groove-model.json").write_text(json.dumps({"name": "bge-small-en", "kind": "embedder", **manifest}))
    return folder


@pytest.mark.parametrize(
    "manifest",
    [{"pooling": "cls"}, {"pooling": "mean"}, {"pooling": "mean", "query_prefix": "q: ", "passage_prefix": "p: "}],
)
def test_a_pulled_folder_gives_fastembeds_vectors_without_fastembed(tiny_dir, tmp_path, monkeypatch, manifest):
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path / "models"))
    folder = _pulled(tiny_dir, tmp_path / "models", **manifest)
    ours = load_embedder("bge-small-en")
    assert isinstance(ours, PreparedOnnxEmbedder) and (ours.model_id, ours.dim) == ("bge-small-en", 32)
    theirs = FastEmbedEmbedder(str(folder), model_id="bge-small-en")
    np.testing.assert_array_equal(ours.embed_passages(TEXTS), theirs.embed_passages(TEXTS))
    np.testing.assert_array_equal(ours.embed_query("the cat"), theirs.embed_query("the cat"))
    alone = np.stack([ours.embed_passages([t])[0] for t in TEXTS])  # one run per passage, as a query runs
    np.testing.assert_array_equal(ours.embed_passages(TEXTS), alone)
    assert ours.embed_passages([]).shape == (0, 32)
    assert_quiet_session(ours._load()[1])
    prepared = list((tmp_path / "models" / PREPARED_DIR / "bge-small-en").iterdir())
    assert len(prepared) == 1 and (prepared[0] / GRAPH_FILE).is_file() and (prepared[0] / INFO_FILE).is_file()
    assert (prepared[0] / GRAPH_DATA_FILE).stat().st_size > 0  # the weights beside the graph, not inside it


_CHILD = """
import json, sys
from groove_tui.engine.models.embedders import load_embedder
emb = load_embedder("bge-small-en")
vectors = emb.embed_passages(json.loads(sys.argv[1]))
print(json.dumps({"fastembed": "fastembed" in sys.modules, "vectors": vectors.tolist()}))
"""


def _child(texts: list[str], env: dict[str, str]) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(texts)], env=env, capture_output=True, text=True, check=True
    )
    assert out.stderr == ""  # nothing said about the graph it saved or read
    return json.loads(out.stdout)


def test_a_later_process_reads_the_prepared_files_back_and_never_imports_fastembed(tiny_dir, tmp_path):
    folder = _pulled(tiny_dir, tmp_path / "models", pooling="cls")
    env = {**os.environ, "GROOVE_TUI_MODEL_DIR": str(tmp_path / "models"), "HF_HUB_OFFLINE": "1"}
    first = _child(TEXTS, env)  # prepares: configures the tokenizer through fastembed, saves the graph
    assert first["fastembed"] is True
    [prepared] = (tmp_path / "models" / PREPARED_DIR / folder.name).iterdir()
    saved = (prepared / GRAPH_FILE).stat().st_mtime_ns
    second = _child(TEXTS, env)
    assert second["fastembed"] is False and second["vectors"] == first["vectors"]
    assert (prepared / GRAPH_FILE).stat().st_mtime_ns == saved  # read back, not written again
    expected = FastEmbedEmbedder(str(folder), model_id="bge-small-en").embed_passages(TEXTS)
    np.testing.assert_array_equal(np.asarray(second["vectors"], dtype=np.float32), expected)


def test_a_damaged_prepared_graph_is_prepared_again(tiny_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path / "models"))
    folder = _pulled(tiny_dir, tmp_path / "models", pooling="mean")
    expected = load_embedder("bge-small-en").embed_passages(TEXTS)
    [prepared] = (tmp_path / "models" / PREPARED_DIR / folder.name).iterdir()
    (prepared / GRAPH_FILE).write_bytes(b"not an onnx graph")
    again = load_embedder("bge-small-en")
    np.testing.assert_array_equal(again.embed_passages(TEXTS), expected)
    assert (prepared / GRAPH_FILE).read_bytes() != b"not an onnx graph"


def test_what_an_older_format_prepared_is_removed_once_the_current_one_is_made(tiny_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path / "models"))
    folder = _pulled(tiny_dir, tmp_path / "models", pooling="mean")
    old = tmp_path / "models" / PREPARED_DIR / folder.name / "older"
    old.mkdir(parents=True)
    (old / INFO_FILE).write_text(json.dumps({"format": 1}))
    (old / GRAPH_FILE).write_bytes(b"an older graph")
    load_embedder("bge-small-en").embed_query("the cat")
    [current] = (tmp_path / "models" / PREPARED_DIR / folder.name).iterdir()
    assert current.name != "older" and (current / GRAPH_FILE).is_file()


def test_another_model_file_runtime_or_processor_gets_its_own_prepared_folder(tiny_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path / "models"))
    folder = _pulled(tiny_dir, tmp_path / "models", pooling="cls")
    first = load_embedder("bge-small-en")
    first_vectors = first.embed_passages(TEXTS)
    other_model = build_tiny_embedder(tmp_path / "other", dim=32, seed=5)
    shutil.copyfile(other_model / "model.onnx", folder / "model.onnx")
    changed = load_embedder("bge-small-en")
    assert changed.prepared != first.prepared and changed.prepared.parent == first.prepared.parent
    assert not np.array_equal(changed.embed_passages(TEXTS), first_vectors)  # never the old graph
    import onnxruntime

    import groove_tui.engine.models.prepared as prepared_module

    monkeypatch.setattr(prepared_module, "processor_key", lambda: "another processor")
    elsewhere = load_embedder("bge-small-en").prepared
    monkeypatch.setattr(onnxruntime, "__version__", "0.0.1")
    assert len({changed.prepared, elsewhere, load_embedder("bge-small-en").prepared}) == 3


def test_a_model_root_that_cannot_be_written_runs_the_model_unprepared(tiny_dir, tmp_path, monkeypatch):
    import groove_tui.engine.models.prepared as prepared_module

    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path / "models"))
    folder = _pulled(tiny_dir, tmp_path / "models", pooling="cls")
    expected = FastEmbedEmbedder(str(folder), model_id="bge-small-en").embed_passages(TEXTS)

    def refused(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(prepared_module.tempfile, "mkdtemp", refused)  # as a read-only model root answers
    np.testing.assert_array_equal(load_embedder("bge-small-en").embed_passages(TEXTS), expected)
    assert not any((tmp_path / "models" / PREPARED_DIR).rglob("*.onnx"))


def test_removing_a_model_removes_what_loading_it_prepared(tiny_dir, tmp_path, monkeypatch):
    from groove_tui.engine.models.pull import remove

    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path / "models"))
    _pulled(tiny_dir, tmp_path / "models", pooling="cls")
    load_embedder("bge-small-en").embed_query("prepare it")
    assert (tmp_path / "models" / PREPARED_DIR / "bge-small-en").is_dir()
    assert remove("bge-small-en", tmp_path / "models") == tmp_path / "models" / "bge-small-en"
    assert not (tmp_path / "models" / PREPARED_DIR / "bge-small-en").exists()


def test_a_passage_token_limit_reads_the_passages_first_tokens_alone(tiny_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path / "models"))
    folder = _pulled(tiny_dir, tmp_path / "models", pooling="mean")
    head, longer = "the cat sat on the mat", "the cat sat on the mat and then it slept"
    cut = load_embedder("bge-small-en", 8)  # [CLS], six words, [SEP]
    whole = load_embedder("bge-small-en")
    np.testing.assert_array_equal(cut.embed_passages([longer]), cut.embed_passages([head]))
    assert not np.allclose(whole.embed_passages([longer]), whole.embed_passages([head]))
    np.testing.assert_array_equal(cut.embed_passages([head]), whole.embed_passages([head]))  # nothing cut
    through_fastembed = FastEmbedEmbedder(str(folder), model_id="bge-small-en", passage_tokens=8)
    np.testing.assert_array_equal(through_fastembed.embed_passages([longer]), cut.embed_passages([longer]))
    above_its_own = load_embedder("bge-small-en", 100_000)  # never past the model's own limit
    assert above_its_own._load()[0].truncation["max_length"] == whole._load()[0].truncation["max_length"]


def test_a_long_run_embeds_on_lanes_side_by_side_and_moves_no_vector(tiny_dir, tmp_path, monkeypatch):
    from groove_tui.engine.models import prepared

    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path / "models"))
    _pulled(tiny_dir, tmp_path / "models", pooling="mean")
    monkeypatch.setattr(prepared, "bulk_lanes", lambda: 2)
    emb = load_embedder("bge-small-en")
    before = emb.embed_passages(TEXTS)
    emb.prepare_for_bulk()
    assert len(emb.lanes.sessions) == 2
    for session in emb.lanes.sessions:
        assert_quiet_session(session)
    np.testing.assert_array_equal(emb.embed_passages(TEXTS), before)
    emb.end_bulk()
    assert emb.lanes.sessions == []
    np.testing.assert_array_equal(emb.embed_passages(TEXTS), before)


def test_lanes_give_every_result_in_order_and_a_lanes_error_to_the_caller():
    from groove_tui.engine.models.runtime import Lanes

    opened = iter(range(3))
    lanes = Lanes(lambda: next(opened), 3)
    assert lanes.map(lambda session, x: (x * 2, session in (0, 1, 2)), list(range(50))) == [
        (x * 2, True) for x in range(50)
    ]
    assert lanes.map(lambda session, x: x, []) == []

    def fails(session, x):
        if x == 7:
            raise ValueError("bad passage")
        return x

    with pytest.raises(ValueError, match="bad passage"):
        lanes.map(fails, list(range(20)))
    lanes.close()
    assert lanes.sessions == []
