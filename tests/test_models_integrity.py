"""Pulled models are checked against the manifest written at pull time before they are used: a flipped byte,
a truncated or missing file is refused in one line with the command that repairs it, and `models list`
says DAMAGED. Also: a folder counts as installed only with its manifest, names match in any letter case,
and no name or manifest entry reaches outside the model directory."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from groove_tui.cli import main
from groove_tui.engine.models import catalog
from groove_tui.engine.models.catalog import MANIFEST, Manifest, ManifestError, find_spec, installed_dir, read_manifest
from groove_tui.engine.models.embedders import clear_embedder_cache, load_embedder
from groove_tui.engine.models.offline import ModelUnavailable
from groove_tui.engine.stages.rerank import clear_reranker_cache, load_reranker

from helpers import SAMPLE_KB, write_kb
from tinymodels import build_tiny_cross_encoder, build_tiny_embedder


@pytest.fixture(scope="module")
def tiny_ce(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("ce") / "ce")


@pytest.fixture(scope="module")
def tiny_emb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_embedder(tmp_path_factory.mktemp("emb") / "emb", dim=32)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The model directory, as `groove-tui models pull` fills it."""
    root = tmp_path / "models"
    root.mkdir()
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(root))
    clear_reranker_cache()
    clear_embedder_cache()
    yield root
    clear_reranker_cache()
    clear_embedder_cache()


def install(root: Path, name: str, src: Path, *, kind: str, folder: str | None = None, **fields) -> Path:
    """A folder exactly as a pull leaves it: the files, then the manifest with their SHA-256 and sizes."""
    dest = root / (folder or catalog.safe_folder_name(name))
    shutil.copytree(src, dest)
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(dest.iterdir())}
    sizes = {p.name: p.stat().st_size for p in sorted(dest.iterdir())}
    manifest = Manifest(name=name, kind=kind, source="test", files=files, sizes=sizes, **fields)
    (dest / MANIFEST).write_text(manifest.to_json() + "\n", encoding="utf-8")
    return dest


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # same size: only the hash can tell
    path.write_bytes(bytes(data))


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


# ---------------------------------------------------------------- a damaged pulled model


def test_a_flipped_byte_in_a_pulled_reranker_is_refused_with_the_repair_command(root, tiny_ce, capsys) -> None:
    folder = install(root, "ms-marco-l12", tiny_ce, kind="reranker")
    scores = load_reranker("ms-marco-l12").score("database", ["a database index", "the cat"])
    assert np.isfinite(scores).all()  # intact: it loads and runs
    clear_reranker_cache()
    flip_a_byte(folder / "model.onnx")
    with pytest.raises(ModelUnavailable) as e:
        load_reranker("ms-marco-l12")
    msg = one_line(str(e.value))
    assert "damaged" in msg and "model.onnx: SHA-256 differs" in msg and str(folder) in msg
    assert msg.endswith("run `groove-tui models pull ms-marco-l12 --force`")
    # `models list` says so too, with the same command; it is not "installed"
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("ms-marco-l12 "))
    assert "DAMAGED" in row
    assert "ms-marco-l12: damaged (model.onnx: SHA-256 differs" in out
    assert "groove-tui models pull ms-marco-l12 --force" in out
    assert main(["models", "list", "--format", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["models"]}
    assert rows["ms-marco-l12"]["installed"] is False and "SHA-256" in rows["ms-marco-l12"]["damaged"]


def test_a_damaged_pulled_embedder_stops_index_in_one_line(root, tiny_emb, tmp_path, monkeypatch, capsys) -> None:
    folder = install(root, "bge-small-en", tiny_emb, kind="embedder", pooling="cls")
    emb = load_embedder("bge-small-en")
    assert emb.embed_query("a database index").shape == (32,)
    clear_embedder_cache()
    flip_a_byte(folder / "model.onnx")
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    assert main(["index", str(kb), "--model", "bge-small-en", "--index-dir", str(tmp_path / "idx"), "--quiet"]) == 1
    err = one_line(capsys.readouterr().err)
    assert "[embedding] model: the embedder 'bge-small-en'" in err and "is damaged (model.onnx: SHA-256" in err
    assert err.endswith("run `groove-tui models pull bge-small-en --force`")


def test_a_truncated_file_is_caught_by_its_size_without_hashing(root, tiny_ce, monkeypatch) -> None:
    folder = install(root, "ms-marco-l12", tiny_ce, kind="reranker")
    (folder / "model.onnx").write_bytes((folder / "model.onnx").read_bytes()[:100])
    real = catalog.sha256_of
    hashed: list[str] = []
    monkeypatch.setattr(catalog, "sha256_of", lambda p: hashed.append(p.name) or real(p))
    problems = catalog.verify_folder(folder)
    assert problems == [f"model.onnx: 100 bytes, the manifest says {(tiny_ce / 'model.onnx').stat().st_size:,}"]
    assert "model.onnx" not in hashed


@pytest.mark.parametrize("lost", ["tokenizer.json", "tokenizer_config.json"])
def test_a_missing_tokenizer_file_says_the_same_command(root, tiny_ce, lost) -> None:
    folder = install(root, "ms-marco-l12", tiny_ce, kind="reranker")
    (folder / lost).unlink()
    with pytest.raises(ModelUnavailable) as e:
        load_reranker("ms-marco-l12")
    msg = one_line(str(e.value))
    assert f"{lost}: missing" in msg and msg.endswith("run `groove-tui models pull ms-marco-l12 --force`")


def test_a_missing_tokenizer_not_listed_in_the_manifest_still_names_the_pull(root, tiny_ce) -> None:
    folder = install(root, "ms-marco-l12", tiny_ce, kind="reranker")
    manifest = read_manifest(folder)
    listed = {k: v for k, v in manifest.files.items() if k != "tokenizer.json"}
    (folder / MANIFEST).write_text(Manifest(name="ms-marco-l12", kind="reranker", files=listed).to_json())
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelUnavailable) as e:
        load_reranker("ms-marco-l12")
    msg = one_line(str(e.value))
    assert "lacks tokenizer.json" in msg and "groove-tui models pull ms-marco-l12 --force" in msg


def test_verification_is_hashed_once_and_again_only_when_a_file_changes(root, tiny_ce, monkeypatch) -> None:
    folder = install(root, "ms-marco-l12", tiny_ce, kind="reranker")
    real = catalog.sha256_of
    hashed: list[str] = []

    def counting(path: Path) -> str:
        hashed.append(path.name)
        return real(path)

    monkeypatch.setattr(catalog, "sha256_of", counting)
    assert catalog.verify_folder(folder) == []
    assert sorted(hashed) == sorted(read_manifest(folder).files)  # the first start hashes every file
    hashed.clear()
    assert catalog.verify_folder(folder) == [] and hashed == []  # the next start: nothing (size, mtime known)
    load_reranker("ms-marco-l12")
    assert hashed == []
    st = (folder / "model.onnx").stat()
    flip_a_byte(folder / "model.onnx")
    os.utime(folder / "model.onnx", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert catalog.verify_folder(folder) == ["model.onnx: SHA-256 differs from the one recorded when it was pulled"]
    assert hashed == ["model.onnx"]  # only the file whose mtime moved


def test_a_model_directory_that_cannot_be_written_still_verifies(root, tiny_ce, monkeypatch) -> None:
    folder = install(root, "ms-marco-l12", tiny_ce, kind="reranker")

    def refuse(*_a, **_k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(catalog.os, "replace", refuse)  # a shared, read-only model directory
    assert catalog.verify_folder(folder) == []  # verified, only not remembered
    assert not (folder / catalog.VERIFIED).exists()
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []  # nothing half-written left
    assert load_reranker("ms-marco-l12").model_id == "ms-marco-l12"


# ---------------------------------------------------------------- what counts as installed


def test_a_folder_without_its_manifest_is_not_installed(root, tiny_ce, capsys) -> None:
    folder = root / "ms-marco-l12"
    shutil.copytree(tiny_ce, folder)  # every file, but no manifest: a pull that never finished
    assert installed_dir("ms-marco-l12") is None
    with pytest.raises(ModelUnavailable, match=r"is not installed .*groove-tui models pull ms-marco-l12"):
        load_reranker("ms-marco-l12")
    assert main(["models", "list", "--format", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["models"]}
    assert rows["ms-marco-l12"]["installed"] is False and rows["ms-marco-l12"]["where"] == ""
    assert main(["models", "path", "ms-marco-l12"]) == 1
    assert "groove-tui models pull ms-marco-l12" in capsys.readouterr().err
    assert main(["models", "remove", "ms-marco-l12"]) == 1  # not an install: not ours to delete
    assert folder.is_dir()


# ---------------------------------------------------------------- names in any letter case


def test_model_names_match_in_any_letter_case(root, tiny_ce, capsys) -> None:
    folder = install(root, "ms-marco-l12", tiny_ce, kind="reranker")
    assert find_spec("MS-MARCO-L12").name == "ms-marco-l12"
    assert find_spec("Cross-Encoder/MS-MARCO-MiniLM-L-12-v2").name == "ms-marco-l12"
    assert installed_dir("MS-Marco-L12") == folder
    assert main(["models", "path", "MS-MARCO-L12"]) == 0
    assert capsys.readouterr().out.strip() == str(folder)
    assert load_reranker("MS-MARCO-L12").model_id == "ms-marco-l12"
    # a catalog model pulled under its catalog spelling is found in any case, and removed by it
    other = install(root, "Xenova/ms-marco-MiniLM-L-6-v2", tiny_ce, kind="reranker")
    assert other.name == "Xenova--ms-marco-MiniLM-L-6-v2"
    assert installed_dir("xenova/ms-marco-minilm-l-6-v2") == other
    assert main(["models", "remove", "XENOVA/MS-MARCO-MINILM-L-6-V2"]) == 0
    assert not other.exists() and folder.exists()


# ---------------------------------------------------------------- nothing outside the model directory


@pytest.mark.parametrize("name", ["..", ".", "../", "./..", ".partial-ms-marco-l12"])
def test_a_model_name_that_leaves_the_model_directory_is_refused(root, tmp_path, capsys, name) -> None:
    (root.parent / MANIFEST).write_text("{}")  # the model directory's parent looks like a model folder
    (root / MANIFEST).write_text("{}")
    (root / ".partial-ms-marco-l12").mkdir()
    (root / ".partial-ms-marco-l12" / MANIFEST).write_text("{}")
    with pytest.raises(catalog.ModelNameError):
        catalog.safe_folder_name(name)
    assert main(["models", "remove", name]) == 1
    err = one_line(capsys.readouterr().err)
    assert "is invalid" in err
    assert (root.parent / MANIFEST).is_file() and (root / MANIFEST).is_file() and root.is_dir()
    assert (root / ".partial-ms-marco-l12").is_dir()
    assert main(["models", "path", name]) == 1
    capsys.readouterr()


@pytest.mark.parametrize("entry", ["../secret.txt", "/etc/hostname", "a/../../secret.txt", "..", "a\\..\\b"])
def test_a_manifest_entry_outside_its_folder_is_refused(root, tiny_ce, tmp_path, monkeypatch, capsys, entry) -> None:
    folder = install(root, "ms-marco-l12", tiny_ce, kind="reranker")
    secret = root / "secret.txt"
    secret.write_text("not the model's")
    data = json.loads((folder / MANIFEST).read_text())
    data["files"][entry] = hashlib.sha256(b"not the model's").hexdigest()
    (folder / MANIFEST).write_text(json.dumps(data))
    opened: list[str] = []
    real = catalog.sha256_of
    monkeypatch.setattr(catalog, "sha256_of", lambda p: opened.append(str(p)) or real(p))
    with pytest.raises(ManifestError, match=r"files entry .* is invalid: expected a path inside the model folder"):
        read_manifest(folder)
    with pytest.raises(ModelUnavailable) as e:
        load_reranker("ms-marco-l12")
    msg = one_line(str(e.value))
    assert "files entry" in msg and "groove-tui models pull ms-marco-l12 --force" in msg
    assert main(["models", "list", "--format", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["models"]}
    assert rows["ms-marco-l12"]["installed"] is False and "files entry" in rows["ms-marco-l12"]["damaged"]
    assert not [p for p in opened if "secret" in p or p.startswith("/etc")]  # never read
