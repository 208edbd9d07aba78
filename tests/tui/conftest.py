from __future__ import annotations

import pytest
from textual.widgets import Input


@pytest.fixture(autouse=True)
def _isolate(monkeypatch, tmp_path):
    """No real user dirs, no cursor blink (deterministic snapshots)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    original = Input.__init__

    def no_blink(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.cursor_blink = False

    monkeypatch.setattr(Input, "__init__", no_blink)
