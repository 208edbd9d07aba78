"""Where groove-tui keeps things (platformdirs). Never inside the user's KB."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import platformdirs

APP = "groove-tui"
INDEX_DIR_ENV = "GROOVE_TUI_INDEX_DIR"
MODEL_DIR_ENV = "GROOVE_TUI_MODEL_DIR"


def user_config_dir() -> Path:
    return platformdirs.user_config_path(APP)


def user_data_dir() -> Path:
    return platformdirs.user_data_path(APP)


def model_root(override: str | os.PathLike[str] | None = None) -> Path:
    """Where `groove-tui models pull` installs models: one folder per model, never inside a KB."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get(MODEL_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return user_data_dir() / "models"


def index_root(override: str | os.PathLike[str] | None = None) -> Path:
    if override:
        return Path(override).expanduser()
    env = os.environ.get(INDEX_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return platformdirs.user_cache_path(APP) / "indexes"


def index_dir_for(kb: Path, override: str | os.PathLike[str] | None = None) -> Path:
    """`<root>/<kb name>-<hash of the absolute kb path>/`: one index per KB, stable across runs."""
    absolute = str(kb.expanduser().resolve())
    digest = hashlib.sha256(absolute.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(absolute).name)[:40] or "root"
    return index_root(override) / f"{name}-{digest}"


def kb_state_dir(kb: Path) -> Path:
    """Per-KB user state (query history, judgments): in the data directory, keyed like the index."""
    return user_data_dir() / "kbs" / index_dir_for(kb, "/").name
