"""Settings as groove.toml text, and where each effective value came from.

`fragment(effective_config(config, params))` writes the ranking settings a person tuned (in the explorer
or with flags) as a groove.toml fragment under groove's key names; keys groove does not know are marked
`# groove-tui only` (groove rejects unknown keys, so they are the lines to delete for groove itself).
The fragment reads back through `config.parse_config` to the same settings.

`provenance(...)` lists every effective key with its source: the default, the config file, or a flag.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import fields, is_dataclass, replace
from typing import Any, Protocol

from groove_tui.settings.config import Config, FusionMethod

OURS = "# groove-tui only"
COMMENT_COLUMN = 36


class RankingParams(Protocol):
    """The per-call ranking settings of the engine's `SearchParams`, as far as a groove.toml can say them
    (settings sit below the engine, so they name the fields they read rather than import the type)."""

    @property
    def fusion(self) -> FusionMethod | None: ...

    @property
    def mmr(self) -> bool: ...

    @property
    def mmr_lambda(self) -> float: ...

    @property
    def mmr_same_doc_penalty(self) -> float: ...

    @property
    def word_leg(self) -> bool | None: ...

    @property
    def parent_retriever(self) -> bool: ...

    @property
    def reranker(self) -> str | None: ...


def effective_config(config: Config, params: RankingParams) -> Config:
    """`config` with the per-call settings of `params` written into it: what a groove.toml would need to
    say so that the default search is this one."""
    s = config.search
    search = replace(
        s,
        fusion=replace(s.fusion, method=params.fusion or s.fusion.method),
        mmr=replace(
            s.mmr,
            enabled=params.mmr,
            lambda_=float(params.mmr_lambda),
            same_doc_penalty=float(params.mmr_same_doc_penalty),
        ),
        parent_retriever=replace(s.parent_retriever, enabled=params.parent_retriever),
        word_leg=s.word_leg if params.word_leg is None else params.word_leg,
    )
    rr = config.reranker
    reranker = replace(rr, model=params.reranker or rr.model, rerank_by_default=params.reranker is not None)
    return replace(config, search=search, reranker=reranker)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} has no TOML form here")
        return repr(value)  # shortest round-tripping form; always has a '.' or an exponent
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON's escapes are TOML basic-string escapes
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _line(key: str, value: Any, ours: bool = False) -> str:
    text = f"{key} = {toml_value(value)}"
    return f"{text:<{COMMENT_COLUMN - 1}} {OURS}" if ours else text


def fragment(config: Config, *, title: str = "ranking settings written by groove-tui") -> str:
    """The `[search]` tables and the reranker of `config` as groove.toml text."""
    s = config.search
    f, m, p, rr = s.fusion, s.mmr, s.parent_retriever, config.reranker
    out = [
        f"# {title}",
        "# Paste over the same tables of your groove.toml. Lines marked groove-tui only are",
        "# keys groove itself rejects: delete them there.",
        "",
    ]
    if rr.model is None:
        out.append(_line("reranker", "none"))
        out.append(_line("rerank_by_default", rr.rerank_by_default))
    else:
        out.append(_line("rerank_by_default", rr.rerank_by_default))
    out += [
        "",
        "[search]",
        _line("min_confidence_ratio", s.min_confidence_ratio),
        _line("cjk_bigram", s.cjk_bigram, True),
        _line("merge_parts", s.merge_parts, True),
        _line("heading_first", s.heading_first, True),
        _line("word_leg", s.word_leg, True),
    ]
    out += [
        "",
        "[search.fusion]",
        _line("method", f.method, True),
        _line("rrf_k", f.rrf_k),
        _line("bm25_heading_weight", f.bm25_heading_weight),
        _line("bm25_context_weight", f.bm25_context_weight),
        _line("bm25_content_weight", f.bm25_content_weight),
        _line("vector_weight", f.vector_weight, True),
        _line("fts_weight", f.fts_weight, True),
        _line("trigram_weight", f.trigram_weight, True),
        _line("word_weight", f.word_weight, True),
        _line("name_weight", f.name_weight, True),
    ]
    out += [
        "",
        "[search.mmr]",
        _line("enabled", m.enabled),
        _line("lambda", m.lambda_),
        _line("same_doc_penalty", m.same_doc_penalty),
    ]
    out += [
        "",
        "[search.parent_retriever]",
        _line("enabled", p.enabled),
        _line("whole_doc_threshold_tokens", p.whole_doc_threshold_tokens),
        _line("max_expanded_tokens", p.max_expanded_tokens),
    ]
    if rr.model is not None:
        out += [
            "",
            f'{OURS}: groove names its reranker with a top-level reranker = "bge-v2-m3" (or jina-v2-ml,',
            "# bge-base) instead of this table",
            "[reranker]",
            _line("model", rr.model, True),
            _line("pool", rr.pool, True),
            _line("blend", rr.blend, True),
        ]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- provenance

_TOML_NAMES = {"lambda_": "lambda"}
_SKIP = {"source", "explicit"}


def flatten(config: Config) -> Iterator[tuple[str, Any]]:
    """(dotted groove.toml key, value) for every setting of `config`, in declaration order."""
    yield from _walk(config, "")


def _walk(obj: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    for fl in fields(obj):
        if fl.name in _SKIP:
            continue
        value = getattr(obj, fl.name)
        key = prefix + _TOML_NAMES.get(fl.name, fl.name)
        if is_dataclass(value):
            yield from _walk(value, key + ".")
        elif fl.name == "contextual" and not prefix:
            yield "contextual.enabled", value
        elif fl.name == "keymap":
            for k, v in value:
                yield f"{key}.{k}", v
        else:
            yield key, value


# groove's top-level spellings of keys we keep in tables
_ALIASES = {"model": "embedding.model", "reranker": "reranker.model", "rerank_by_default": "reranker.rerank_by_default"}


def file_keys(data: Mapping[str, Any]) -> set[str]:
    """The dotted keys a parsed groove.toml sets, under the names `flatten` uses."""
    out: set[str] = set()

    def walk(table: Mapping[str, Any], prefix: str) -> None:
        for k, v in table.items():
            key = prefix + k
            if isinstance(v, dict) and key not in ("tui.keymap",):
                walk(v, key + ".")
            elif isinstance(v, dict):
                out.update(f"{key}.{name}" for name in v)
            else:
                out.add(_ALIASES.get(key, key) if not prefix else key)

    walk(data, "")
    return out


def provenance(config: Config, data: Mapping[str, Any] | None, flags: Mapping[str, str]) -> list[tuple[str, Any, str]]:
    """(key, value, source) for every effective setting; source is "default", the config file's path or
    "flag --x". `flags` maps a dotted key to the flag that set it."""
    in_file = file_keys(data or {})
    rows = []
    for key, value in flatten(config):
        if key in flags:
            source = f"flag {flags[key]}"
        elif key in in_file:
            source = config.source or "groove.toml"
        else:
            source = "default"
        rows.append((key, value, source))
    return rows


# ---------------------------------------------------------------- saving into a groove.toml


def merge_fragment(existing: str, fragment_text: str) -> str:
    """`existing` groove.toml text with the values of `fragment_text` written into it (tomlkit: its
    comments, order and other keys stay). The reranker may be a top-level `reranker = "…"` in one and a
    `[reranker]` table in the other; the result keeps the file's form."""
    import tomlkit
    from tomlkit.items import Table

    doc = tomlkit.parse(existing)
    frag = tomlkit.parse(fragment_text)
    rr = frag.get("reranker")
    has_table = isinstance(doc.get("reranker"), Table)
    if isinstance(rr, str):  # "none"
        if has_table:
            doc["reranker"]["model"] = rr
        else:
            doc["reranker"] = rr
    elif rr is not None:
        if isinstance(doc.get("reranker"), str):
            del doc["reranker"]
        _merge_table(doc, {"reranker": rr})
    if "rerank_by_default" in frag:
        doc["rerank_by_default"] = frag["rerank_by_default"]
        if has_table and "rerank_by_default" in doc["reranker"]:  # the table's wins when both are set
            doc["reranker"]["rerank_by_default"] = frag["rerank_by_default"]
    _merge_table(doc, {k: v for k, v in frag.items() if k not in ("reranker", "rerank_by_default")})
    return tomlkit.dumps(doc)


def _merge_table(dst: Any, src: Mapping[str, Any]) -> None:
    import tomlkit
    from tomlkit.items import Table

    for key, value in src.items():
        if isinstance(value, Mapping) and isinstance(dst.get(key), Mapping):
            _merge_table(dst[key], value)
        elif key in dst:
            # a plain value keeps the line's own comment; an unchanged one is not touched (its quoting stays)
            plain = value.unwrap() if hasattr(value, "unwrap") else value
            if dst[key] != plain:
                dst[key] = plain
        else:
            if isinstance(value, Table):
                value.add(tomlkit.nl())  # a blank line before whatever table follows it
            dst[key] = value


def save_fragment(path: Any, fragment_text: str) -> str:
    """Write the fragment to `path`: merged into it when it is an existing groove.toml, else as a new
    file (its folder made). The result must read back as a valid config (ConfigError otherwise, and
    nothing is written). Returns "merged" or "created"."""
    import os
    import tempfile
    import tomllib
    from pathlib import Path

    from groove_tui.settings.config import ConfigError, parse_config

    path = Path(path)
    existed = path.is_file()
    text = merge_fragment(path.read_text(encoding="utf-8"), fragment_text) if existed else fragment_text
    try:
        parse_config(tomllib.loads(text), source=str(path))
    except (ConfigError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: the settings would not read back: {exc}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        if existed:
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return "merged" if existed else "created"
