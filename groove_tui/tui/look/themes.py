"""Theme files (TOML) -> Textual `Theme`s.

Shipped themes live in the package's `themes/` directory (the repo's top-level `themes/`, force-included
as `groove_tui/themes` in wheels; an editable install falls back to the repo directory). User themes are
`paths.user_config_dir()/"themes"/*.toml`. A bad file is reported, never fatal.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

# the app's own variables (CSS fails to parse if a referenced variable has no default)
VARIABLE_DEFAULTS = {
    "match-background": "#F2A65A",
    "match-foreground": "#14171C",
    "expanded-background": "#2B3A4A",
    "rank-up": "#6CC08B",
    "rank-down": "#E76F51",
    "pane-border": "#7C8796",
    "pane-border-focus": "#F2A65A",
}
BORDER_MIN_CONTRAST = 3.0  # WCAG's minimum for user-interface components


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""

    def luminance(c: str) -> float:
        def channel(v: int) -> float:
            x = v / 255
            return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4

        rgb = Color.parse(c).rgb
        return 0.2126 * channel(rgb[0]) + 0.7152 * channel(rgb[1]) + 0.0722 * channel(rgb[2])

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def readable_border(foreground: str, background: str) -> str:
    """The colour nearest the background, on the line to the foreground, that keeps 3:1 against it: a
    user theme that names no pane-border still gets borders one can see."""
    fg, bg = Color.parse(foreground), Color.parse(background)
    for step in range(20, 101, 5):
        c = bg.blend(fg, step / 100).hex
        if contrast(c, background) >= BORDER_MIN_CONTRAST:
            return c
    return fg.hex


_COLOR_KEYS = (
    "primary",
    "secondary",
    "warning",
    "error",
    "success",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
)
_ALLOWED = {*_COLOR_KEYS, "name", "dark", "luminosity_spread", "text_alpha", "variables"}


class ThemeFileError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class ThemeLoad:
    themes: tuple[Theme, ...]
    errors: tuple[str, ...]


def shipped_theme_dir() -> Path | None:
    try:
        from importlib.resources import files

        d = files("groove_tui") / "themes"
        if d.is_dir():
            return Path(str(d))
    except (ModuleNotFoundError, TypeError, OSError):
        pass
    repo = Path(__file__).resolve().parents[3] / "themes"
    return repo if repo.is_dir() else None


def user_theme_dir() -> Path:
    from groove_tui.settings.paths import user_config_dir

    return user_config_dir() / "themes"


def _check_color(key: str, value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ThemeFileError(f"{where}: {key} = {value!r} is invalid: expected a colour string")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeFileError(f"{where}: {key} = {value!r} is not a colour") from None
    return value


def theme_from_dict(data: dict, where: str = "theme") -> Theme:
    unknown = set(data) - _ALLOWED
    if unknown:
        raise ThemeFileError(
            f"{where}: unknown keys {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(_ALLOWED))}"
        )
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ThemeFileError(f"{where}: 'name' must be a non-empty string")
    if "primary" not in data:
        raise ThemeFileError(f"{where}: 'primary' colour is required")
    colors = {k: _check_color(k, data[k], where) for k in _COLOR_KEYS if k in data}
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeFileError(f"{where}: dark = {dark!r} is invalid: expected true or false")
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in variables.items()
    ):
        raise ThemeFileError(f"{where}: [variables] must map names to strings")
    for k in VARIABLE_DEFAULTS:
        if k in variables:
            _check_color(f"variables.{k}", variables[k], where)
    extra = {}
    for k in ("luminosity_spread", "text_alpha"):
        if k in data:
            v = data[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise ThemeFileError(f"{where}: {k} = {v!r} is invalid: expected a number in [0, 1]")
            extra[k] = float(v)
    variables = dict(variables)
    background = colors.get("background", "#000000" if dark else "#FFFFFF")
    variables.setdefault(
        "pane-border", readable_border(colors.get("foreground", "#E0E0E0" if dark else "#202020"), background)
    )
    variables.setdefault("pane-border-focus", colors.get("accent", colors["primary"]))
    options: dict[str, Any] = {**colors, **extra}  # Theme's colour fields and its numeric ones, as the file named them
    return Theme(name=name.strip(), dark=dark, variables=variables, **options)


def load_theme_file(path: Path) -> Theme:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ThemeFileError(f"{path}: cannot read theme: {exc}") from None
    return theme_from_dict(data, str(path))


def load_themes(*dirs: Path | None) -> ThemeLoad:
    """Every *.toml in `dirs`, in order (later files override earlier ones of the same name)."""
    themes: dict[str, Theme] = {}
    errors: list[str] = []
    for d in dirs:
        if d is None or not d.is_dir():
            continue
        for path in sorted(d.glob("*.toml")):
            try:
                t = load_theme_file(path)
            except ThemeFileError as exc:
                errors.append(str(exc))
                continue
            themes[t.name] = t
    return ThemeLoad(tuple(themes.values()), tuple(errors))


FALLBACK_THEME = Theme(
    name="groove",
    primary="#5FA8D3",
    secondary="#8E7DBE",
    accent="#F2A65A",
    warning="#E9C46A",
    error="#E76F51",
    success="#6CC08B",
    foreground="#E3E6EA",
    background="#14171C",
    surface="#1B1F26",
    panel="#232A33",
    dark=True,
    variables=dict(VARIABLE_DEFAULTS),
)


def register_themes(app) -> None:
    """On mount: the shipped themes and the user's files on `app` (the fallback if `groove` is missing),
    files that failed reported, and the configured theme chosen; sets `app.own_themes` (what ctrl+t and
    the palette offer) and `app.theme_errors`."""
    loaded = load_themes(shipped_theme_dir(), app.user_theme_dir or user_theme_dir())
    if not any(t.name == "groove" for t in loaded.themes):
        app.register_theme(FALLBACK_THEME)
    for t in loaded.themes:
        app.register_theme(t)
    # ctrl+t and the palette offer these: the shipped themes and the user's files, not Textual's own
    names = [t.name for t in loaded.themes]
    app.own_themes = tuple(
        dict.fromkeys(
            [
                "groove",
                *sorted(n for n in names if n.startswith("groove")),
                *sorted(n for n in names if not n.startswith("groove")),
            ]
        )
    )
    app.theme_errors = loaded.errors
    for err in loaded.errors:
        app.notify(f"Theme file ignored: {err}", severity="warning", markup=False, timeout=8)
    wanted = app.config.tui.theme
    if wanted in app.available_themes:
        app.theme = wanted
    else:
        app.notify(f"Unknown theme {wanted!r}; using 'groove'", severity="warning", markup=False)
        app.theme = "groove"
