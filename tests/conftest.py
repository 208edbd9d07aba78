"""Shared fixtures: every KB a test needs is built here, in tmp dirs (nothing from ../shared)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Models pulled on this machine (groove-tui models pull) must not change what a test sees: each test
# gets an empty model directory unless it makes one.


@pytest.fixture(autouse=True)
def _empty_model_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(tmp_path_factory.getbasetemp() / "no-models"))


from helpers import SAMPLE_KB, hashing_config, write_kb  # noqa: E402


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return write_kb(tmp_path / "kb", SAMPLE_KB)


@pytest.fixture
def engine(kb: Path, tmp_path: Path):
    from groove_tui.engine import Engine

    eng = Engine.open(kb, config=hashing_config(), index_dir=tmp_path / "idx")
    eng.index()
    yield eng
    eng.close()


@pytest.fixture
def no_waiting(monkeypatch):
    """Records every sleep (a retry's back-off) and network connection attempt, making both no-ops.

    "Fails fast offline" is behaviour, not a wall-clock bound: the code must give up without taking a
    retry or sleep path and without reaching for a network (speed itself is `groove-tui bench`'s)."""
    import socket
    import time

    seen: dict[str, list] = {"sleep": [], "connect": []}
    monkeypatch.setattr(time, "sleep", lambda seconds: seen["sleep"].append(seconds))

    def connect(self, address):
        seen["connect"].append(address)
        raise OSError("network disabled in tests")

    monkeypatch.setattr(socket.socket, "connect", connect)
    return seen


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Run `groove-tui ARGS` in-process from a scratch directory with its indexes under it and no user
    config: returns (exit code, stdout, stderr)."""
    from groove_tui.cli import main

    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture
def japanese_dictionary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A model directory holding the tiny Japanese dictionary as `sudachi-core` (its folder returned)."""
    from helpers import install_tiny_dictionary

    root = tmp_path / "models"
    folder = install_tiny_dictionary(root)
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(root))
    return folder
