"""The version a user can cite: one number, in pyproject.toml, read back from the installed package's
metadata by `groove-tui --version`, and the newest release in CHANGELOG.md."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import groove_tui

ROOT = Path(__file__).resolve().parent.parent


def test_the_version_is_read_from_the_package_metadata(monkeypatch: pytest.MonkeyPatch):
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "version", lambda name: "9.8.7" if name == "groove-tui" else "0")
    try:
        assert importlib.reload(groove_tui).__version__ == "9.8.7"
    finally:
        monkeypatch.undo()
        importlib.reload(groove_tui)


def test_a_source_tree_never_installed_says_so(monkeypatch: pytest.MonkeyPatch):
    import importlib.metadata

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    try:
        assert importlib.reload(groove_tui).__version__ == "0+unknown"
    finally:
        monkeypatch.undo()
        importlib.reload(groove_tui)


def test_pyproject_the_installed_metadata_and_the_changelog_agree():
    from importlib.metadata import version

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert version("groove-tui") == declared == groove_tui.__version__
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", changelog, re.M)
    assert releases and releases[0][0] == declared  # the newest release section is this version
    assert "## [Unreleased]" in changelog
    assert [r[0] for r in releases] == sorted(
        (r[0] for r in releases), key=lambda v: tuple(map(int, v.split("."))), reverse=True
    )
