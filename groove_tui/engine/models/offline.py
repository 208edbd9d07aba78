"""fastembed run offline, shared by the embedders and the rerankers: the hub guard (`offline_hub`), the cache
check, local ONNX directories checked and registered once, and `ModelUnavailable`, the error every model
that cannot load here raises with what to install or configure."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_tui.engine.errors import EngineError

if TYPE_CHECKING:
    from groove_tui.engine.models.catalog import Manifest

ONNX_DIR_PREFIX = "onnx-dir:"


class ModelUnavailable(EngineError, RuntimeError):
    """A model cannot be loaded here; the message says what to install or configure."""


_ENV_LOCK = threading.RLock()
_REGISTER_LOCK = threading.Lock()


@contextlib.contextmanager
def offline_hub() -> Iterator[None]:
    """Force HF_HUB_OFFLINE=1 for the duration: fastembed then never retries a hub or downloads."""
    from loguru import logger  # fastembed's logger

    with _ENV_LOCK:
        previous = os.environ.get("HF_HUB_OFFLINE")
        os.environ["HF_HUB_OFFLINE"] = "1"
        # fastembed logs cache misses to stderr, which would scribble over the TUI; failures become
        # a ModelUnavailable with its own message instead
        logger.disable("fastembed")
        try:
            yield
        finally:
            logger.enable("fastembed")
            if previous is None:
                os.environ.pop("HF_HUB_OFFLINE", None)
            else:
                os.environ["HF_HUB_OFFLINE"] = previous


def fastembed_cache_dir() -> Path:
    """Where fastembed looks for downloaded models (same rule as fastembed.common.utils.define_cache_dir)."""
    import tempfile

    return Path(os.getenv("FASTEMBED_CACHE_PATH", os.path.join(tempfile.gettempdir(), "fastembed_cache")))


def is_cached(description: Any, cache_dir: Path) -> bool:
    """Whether a catalog model has files in fastembed's cache. Generous on purpose: a false "yes" only
    costs fastembed's own 0.5 s offline failure; a false "no" would refuse a usable model."""
    if not cache_dir.is_dir():
        return False
    short = description.model.split("/")[-1]
    candidates = [cache_dir / short, cache_dir / f"fast-{short}"]
    if description.sources.hf:
        folder = "models--" + description.sources.hf.replace("/", "--")
        # fastembed also accepts a differently cased copy cached by older versions
        candidates += [p for p in cache_dir.iterdir() if p.name.lower() == folder.lower()]
    for path in candidates:
        snapshots = path / "snapshots"
        if snapshots.is_dir():
            if any((snap / description.model_file).exists() for snap in snapshots.iterdir()):
                return True
        elif path.is_dir() and any(path.iterdir()):
            return True
    return False


def not_cached_message(name: str, setting: str, pull: str) -> str:
    return (
        f"{setting}: {name!r} is not installed (nothing is downloaded while searching). With a model hub "
        f"run `{pull}`; without one, point {setting} at a local ONNX directory, or copy a fastembed cache "
        f"here and set FASTEMBED_CACHE_PATH (now {fastembed_cache_dir()})."
    )


def looks_like_path(name: str) -> bool:
    return (
        name.startswith(ONNX_DIR_PREFIX)
        or name.startswith(("/", "./", "../", "~", ".\\"))
        or (os.sep != "/" and os.sep in name)
    )


def resolve_dir(name: str) -> Path:
    raw = name[len(ONNX_DIR_PREFIX) :] if name.startswith(ONNX_DIR_PREFIX) else name
    return Path(raw).expanduser().resolve()


def check_intact(folder: Path, setting: str, what: str, manifest: Manifest | None = None) -> None:
    """Refuse a model folder whose files differ from what its manifest recorded at pull time (a flipped
    byte, a truncated or missing file), in one line with the command that repairs it. Hashing is cached
    by each file's size and mtime, so this costs nothing after the first start (catalog.verify_folder)."""
    from groove_tui.engine.models.catalog import ManifestError, damaged_message, repair_advice, verify_folder

    try:
        problems = verify_folder(folder, manifest)
    except ManifestError as e:
        raise ModelUnavailable(f"{setting}: {e}: {repair_advice(folder)}") from None
    if problems:
        raise ModelUnavailable(damaged_message(folder, problems, setting, what))


def onnx_dir_files(path: Path, setting: str) -> tuple[str, list[str]]:
    """The ONNX file (relative) in a local model directory and its external-data files."""
    from groove_tui.engine.models.catalog import MANIFEST, repair_advice

    if not path.is_dir():
        raise ModelUnavailable(f"{setting}: local model directory {path} does not exist")
    # a pulled folder says how to pull it again; a folder of the user's own, what it lacks
    hint = f"; {repair_advice(path)}" if (path / MANIFEST).is_file() else ""
    onnx_files = [p for p in (path / "model.onnx", path / "onnx" / "model.onnx") if p.is_file()]
    onnx_files = onnx_files or sorted(path.glob("*.onnx")) or sorted(path.glob("onnx/*.onnx"))
    if not onnx_files:
        raise ModelUnavailable(f"{setting}: no model.onnx in {path}{hint}")
    missing = [f for f in ("tokenizer.json", "tokenizer_config.json") if not (path / f).is_file()]
    if missing:
        raise ModelUnavailable(f"{setting}: {path} lacks {', '.join(missing)} (fastembed needs them){hint}")
    model_file = onnx_files[0].relative_to(path).as_posix()
    extra = [p.relative_to(path).as_posix() for p in onnx_files[0].parent.glob(onnx_files[0].name + "_data")]
    extra += [p.relative_to(path).as_posix() for p in onnx_files[0].parent.glob(onnx_files[0].stem + ".onnx.data")]
    return model_file, extra


def local_registration_name(path: Path, variant: str = "") -> str:
    # fastembed's registry is keyed by name (case-insensitively): one name per directory (and variant)
    key = f"{path}\0{variant}" if variant else str(path)
    return "groove-tui-local/" + hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def register_once(list_models: Callable[[], list[Any]], add: Callable[[], None], name: str) -> None:
    """fastembed raises when a name is registered twice: register under a lock, only if absent."""
    with _REGISTER_LOCK:
        if not any(m.model.lower() == name.lower() for m in list_models()):
            add()


def _config_hidden_size(path: Path) -> int | None:
    try:
        value = json.loads((path / "config.json").read_text(encoding="utf-8")).get("hidden_size")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and value > 0 else None
