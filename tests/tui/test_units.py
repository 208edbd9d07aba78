"""Unit tests: themes, history, RunConfig, slider, editor command."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from groove_tui.engine.types import SearchParams
from groove_tui.settings.config import FUSION_METHODS, Config, TuiConfig
from groove_tui.tui.look import themes
from groove_tui.tui.look.explain_render import FUSION_HEADINGS
from groove_tui.tui.search.history import QueryHistory
from groove_tui.tui.search.runconfig import (
    FUSION_LABELS,
    PRESETS,
    RunConfig,
    fusion_label,
    next_fusion,
    split_list,
)
from groove_tui.tui.widgets.slider import Slider

from .fakes import FakeEngine
from .helpers import SIZE, make_app, notifications


def test_shipped_themes_load():
    d = themes.shipped_theme_dir()
    assert d is not None and (d / "groove.toml").is_file()
    loaded = themes.load_themes(d)
    names = {t.name for t in loaded.themes}
    assert {"groove", "groove-light"} <= names and not loaded.errors
    groove = next(t for t in loaded.themes if t.name == "groove")
    assert groove.dark and set(themes.VARIABLE_DEFAULTS) <= set(groove.variables)
    light = next(t for t in loaded.themes if t.name == "groove-light")
    assert not light.dark


@pytest.mark.parametrize(
    "text, msg",
    [
        ("name = 'x'\nprimary = 'not-a-colour'\n", "not a colour"),
        ("primary = '#fff'\n", "'name'"),
        ("name = 'x'\n", "'primary'"),
        ("name = 'x'\nprimary = '#fff'\nbogus = 1\n", "unknown keys"),
        ("name = 'x'\nprimary = '#fff'\n[variables]\nrank-up = 'zz'\n", "not a colour"),
        ("name = = broken", "cannot read theme"),
    ],
)
def test_bad_theme_files(tmp_path, text, msg):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(themes.ThemeFileError, match=msg):
        themes.load_theme_file(p)
    assert themes.load_themes(tmp_path).errors


async def test_invalid_user_theme_notifies_and_falls_back(tmp_path):
    user = tmp_path / "user-themes"
    user.mkdir()
    (user / "broken.toml").write_text("name = 'broken'\nprimary = 'nope'\n")
    (user / "mine.toml").write_text("name = 'mine'\nprimary = '#123456'\n[variables]\nmatch-background = '#ff0000'\n")
    cfg = replace(Config(), tui=TuiConfig(theme="broken"))
    app = make_app(tmp_path, FakeEngine(config=cfg), config=cfg)
    app.user_theme_dir = user
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme == "groove"
        notes = notifications(app)
        assert any("Theme file ignored" in n and "broken.toml" in n for n in notes)
        assert any("Unknown theme 'broken'" in n for n in notes)
        assert "mine" in app.available_themes
        app.theme = "mine"
        await pilot.pause()
        assert app.theme_variables["match-background"] == "#ff0000"
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.theme != "mine" or len(app.available_themes) == 1


def test_history_roundtrip_dedupe_and_corrupt(tmp_path):
    p = tmp_path / "s" / "history.json"
    h = QueryHistory(p, max_entries=3)
    for q in ("a", "b", "a", "c", "d", "  "):
        h.add(q)
    assert h.entries == ["a", "c", "d"]
    assert json.loads(p.read_text())["queries"] == ["a", "c", "d"]
    h2 = QueryHistory(p)
    assert h2.previous("draft") == "d"
    assert h2.previous("") == "c"
    assert h2.previous("") == "a"
    assert h2.previous("") is None
    assert h2.next() == "c" and h2.next() == "d" and h2.next() == "draft"
    p.write_text("{not json")
    assert QueryHistory(p).entries == []


def test_runconfig_params_roundtrip():
    base = SearchParams(limit=7, mmr=True, mmr_lambda=0.4, reranker="m", tags_any=("x",))
    rc = RunConfig.from_params(base)
    assert rc == RunConfig(limit=7, mmr=True, lam=0.4, reranker=True, tags=("x",))
    p = rc.to_params(base, "m")
    assert p.explain and p.reranker == "m" and p.mmr_lambda == 0.4
    assert replace(rc, reranker=True).to_params(base, None).reranker is None
    assert split_list("a, b  c,,") == ("a", "b", "c")
    left, right = PRESETS["lambda"][1](rc)
    assert (left.lam, right.lam) == (0.3, 0.9) and left.mmr and right.mmr
    assert "MMR λ0.40" in rc.describe()
    assert rc.fusion == "dbsf" and rc.to_params(base, None).fusion == "dbsf"  # the config's default
    rrf = RunConfig.from_params(base, "rrf")  # fusion=None in the params: the configured method
    assert rrf.fusion == "rrf" and rrf.to_params(base, None).fusion == "rrf"
    assert RunConfig.from_params(replace(base, fusion="relative"), "rrf").fusion == "relative"
    assert "fusion" not in rrf.describe() and "limit 7 · fusion RRF · MMR" in rrf.describe(fusion=True)
    assert "limit 7 · fusion DBSF · MMR" in rc.describe(fusion=True)
    # compare presets: our default against each other method, named after both
    assert PRESETS["fusion-rrf"][0] == "fusion DBSF / RRF"
    assert PRESETS["fusion-relative"][0] == "fusion DBSF / relative"
    assert not any(key.startswith("fusion") and key not in ("fusion-rrf", "fusion-relative") for key in PRESETS)
    for key, right_method in (("fusion-rrf", "rrf"), ("fusion-relative", "relative")):
        left, right = PRESETS[key][1](rrf)
        assert (left.fusion, right.fusion) == ("dbsf", right_method)
        assert (left.limit, right.limit, left.mmr, right.mmr) == (7, 7, True, True)  # the rest is kept


def test_fusion_methods_have_labels_and_cycle():
    assert FUSION_METHODS == ("dbsf", "relative", "rrf")
    assert [fusion_label(m) for m in FUSION_METHODS] == ["DBSF", "relative", "RRF"]
    assert set(FUSION_LABELS) == set(FUSION_HEADINGS) == set(FUSION_METHODS)
    assert [next_fusion(m) for m in FUSION_METHODS] == ["relative", "rrf", "dbsf"]
    assert fusion_label("future") == "future" and next_fusion("future") == "dbsf"  # unknown: no KeyError


def test_slider_clamps_and_snaps():
    s = Slider(0.333, step=0.01)
    assert s.value == 0.33
    assert s._clamp(7) == 1.0 and s._clamp(-1) == 0.0


def test_quitting_waits_only_briefly_for_a_running_batch():
    """After the window closes, a cancelled indexing that is inside a model call is not waited for (the
    process exits and the next run resumes); a finished one is."""
    import threading
    import time
    from types import SimpleNamespace

    from groove_tui.tui.app import _still_busy

    idle = SimpleNamespace(indexing=False, _interactive=0)
    assert _still_busy(idle, 5.0) is False  # returns at once
    stuck = SimpleNamespace(indexing=True, _interactive=0)
    assert _still_busy(stuck, 0.05) is True
    finishing = SimpleNamespace(indexing=True, _interactive=1)

    def finish():
        time.sleep(0.05)
        finishing.indexing = False
        finishing._interactive = 0

    threading.Thread(target=finish).start()
    assert _still_busy(finishing, 30.0) is False


def test_pane_borders_and_titles_are_readable_in_every_shipped_theme():
    loaded = themes.load_themes(themes.shipped_theme_dir())
    assert {t.name for t in loaded.themes} >= {"groove", "groove-light"}
    for t in loaded.themes:
        for var in ("pane-border", "pane-border-focus"):
            ratio = themes.contrast(t.variables[var], t.background)
            assert ratio >= themes.BORDER_MIN_CONTRAST, (t.name, var, round(ratio, 2))
        assert t.variables["pane-border"] != t.variables["pane-border-focus"]


def test_a_user_theme_without_border_colours_gets_readable_ones():
    for bg, fg in (("#000000", "#FFFFFF"), ("#FFFFFF", "#000000"), ("#202830", "#C0C8D0"), ("#F0E8D8", "#403020")):
        t = themes.theme_from_dict({"name": "u", "primary": "#3366CC", "background": bg, "foreground": fg})
        assert themes.contrast(t.variables["pane-border"], bg) >= themes.BORDER_MIN_CONTRAST
        assert t.variables["pane-border-focus"] == "#3366CC"  # no accent: the primary colour
