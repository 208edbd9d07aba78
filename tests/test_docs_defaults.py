"""The documented defaults are the code's: docs/configuration.md's groove.toml (every uncommented value
a default) and each "`[section] key` … default X" in docs/*.md are compared with the config dataclasses."""

from __future__ import annotations

import re
import tomllib
from dataclasses import fields, is_dataclass
from pathlib import Path

import pytest

from groove_tui.settings.config import Config, parse_config

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _differences(a, b, path: str = "") -> list[str]:
    out = []
    for f in fields(a):
        if f.name == "source":
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if is_dataclass(x):
            out += _differences(x, y, path + f.name + ".")
        elif x != y:
            out.append(f"{path}{f.name}: docs {x!r}, code {y!r}")
    return out


def test_the_configuration_pages_groove_toml_holds_the_defaults():
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    block = re.search(r"```toml\n(.*?)```", text, re.S)
    assert block, "docs/configuration.md has no groove.toml block"
    documented = parse_config(tomllib.loads(block.group(1)))  # also: the block is a valid groove.toml
    assert _differences(documented, Config()) == []


# `[reranker] pool`, default 20 / `[eval] history_size` runs kept (default 10) / … (`dbsf` (default …
_STATED = re.compile(r"`\[([a-z_.]+)\] ([a-z_]+)`[^.;`]{0,40}?\(?default,? `?(\d{1,3}(?:,\d{3})+|[\w.]+(?:, [\d.]+)*)")
_FIELD = {"lambda": "lambda_", "contextual.enabled": "contextual"}


def _default(section: str, key: str):
    dotted = _FIELD.get(f"{section}.{key}", f"{section}.{_FIELD.get(key, key)}")
    obj = Config()
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _parse(value: str, default):
    value = value.rstrip(".,")
    if isinstance(default, tuple):
        return tuple(int(v) for v in re.findall(r"\d+", value))
    if isinstance(default, bool):
        return value == "true"
    if isinstance(default, (int, float)):
        return type(default)(float(value.replace(",", "")))
    return value


def _statements():
    for page in sorted(DOCS.glob("*.md")):
        text = " ".join(page.read_text(encoding="utf-8").split())
        for m in _STATED.finditer(text):
            yield pytest.param(page.name, *m.groups(), id=f"{page.name}:[{m.group(1)}] {m.group(2)}")


def test_the_docs_state_defaults_this_test_reads():
    assert len(list(_statements())) >= 6  # the pattern still finds them (a rewording would hide them)


@pytest.mark.parametrize(("page", "section", "key", "value"), list(_statements()))
def test_a_default_stated_in_the_docs_is_the_codes(page, section, key, value):
    default = _default(section, key)
    assert _parse(value, default) == default, f"{page}: [{section}] {key} default {value!r}, code {default!r}"
