"""`groove-tui config show`: the effective configuration, each value with where it came from (the default,
the config file, or a flag), as text, JSON or a groove.toml fragment of the ranking settings."""

from __future__ import annotations

import sys
import tomllib
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from groove_tui.commands.common import config_for
from groove_tui.engine.types import json_text
from groove_tui.settings.config import Config, check_unit
from groove_tui.settings.fragment import fragment, provenance, toml_value

if TYPE_CHECKING:
    import argparse

# flag attribute -> (dotted key, the flag as typed)
FLAG_KEYS = {
    "model": ("embedding.model", "--model"),
    "mmr": ("search.mmr.enabled", "--mmr"),
    "mmr_lambda": ("search.mmr.lambda", "--lambda"),
    "same_doc_penalty": ("search.mmr.same_doc_penalty", "--same-doc-penalty"),
    "parent": ("search.parent_retriever.enabled", "--parent"),
    "fusion": ("search.fusion.method", "--fusion"),
    "reranker": ("reranker.model", "--reranker"),
    "rerank_pool": ("reranker.pool", "--rerank-pool"),
    "rerank_max_tokens": ("reranker.max_tokens", "--rerank-max-tokens"),
    "rerank_threads": ("reranker.threads", "--rerank-threads"),
}


def with_flags(config: Config, args: argparse.Namespace) -> tuple[Config, dict[str, str]]:
    """The per-call flags written into the config (the model and reranker limits are already in it,
    applied by the CLI), and which key each flag set."""
    s = config.search
    rr = config.reranker
    if getattr(args, "mmr", None) is not None:
        s = replace(s, mmr=replace(s.mmr, enabled=args.mmr))
    if getattr(args, "mmr_lambda", None) is not None:
        s = replace(s, mmr=replace(s.mmr, lambda_=check_unit("--lambda", args.mmr_lambda)))
    if getattr(args, "same_doc_penalty", None) is not None:
        s = replace(s, mmr=replace(s.mmr, same_doc_penalty=check_unit("--same-doc-penalty", args.same_doc_penalty)))
    if getattr(args, "parent", None) is not None:
        s = replace(s, parent_retriever=replace(s.parent_retriever, enabled=args.parent))
    if getattr(args, "fusion", None) is not None:
        s = replace(s, fusion=replace(s.fusion, method=args.fusion))
    flags = {key: flag for attr, (key, flag) in FLAG_KEYS.items() if getattr(args, attr, None) is not None}
    if getattr(args, "reranker", None) is not None:
        off = args.reranker in ("none", "")
        rr = replace(rr, model=None if off else args.reranker, rerank_by_default=not off)
        flags["reranker.rerank_by_default"] = "--reranker"
    return replace(config, search=s, reranker=rr), flags


def show(config: Config, args: argparse.Namespace) -> str:
    effective, flags = with_flags(config, args)
    fmt = getattr(args, "format", "text")
    if fmt == "toml":
        return fragment(effective)
    if effective.embedding.is_default:
        # No model named: the one a new index is built with, named as the header, `status` and `serve`
        # name it (the int8 build, or USE where it cannot be built), not the setting's placeholder
        from groove_tui.engine import describe_default

        effective = replace(effective, embedding=replace(effective.embedding, model=describe_default()))
    if effective.embedding.max_tokens is None:  # the model's own choice, as a number
        from groove_tui.engine.models.embedders import describe_model, wanted_passage_tokens

        tokens = wanted_passage_tokens(None, describe_model(effective.embedding.model))
        effective = replace(effective, embedding=replace(effective.embedding, max_tokens=tokens))
    data = _file_data(config)
    rows = provenance(effective, data, flags)
    if fmt == "json":
        return (
            json_text(
                {
                    "config_file": config.source,
                    "settings": [{"key": k, "value": _jsonable(v), "source": src} for k, v, src in rows],
                }
            )
            + "\n"
        )
    width = max(len(k) for k, _v, _s in rows)
    lines = [f"config file: {config.source or 'none found (defaults)'}", ""]
    for key, value, source in rows:
        shown = "none" if value is None else _shown(value)
        lines.append(f"{key:<{width}}  {shown:<28} {source}")
    return "\n".join(lines) + "\n"


def _shown(value: Any) -> str:
    try:
        return toml_value(value)
    except (TypeError, ValueError):
        return repr(value)


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _file_data(config: Config) -> dict[str, Any] | None:
    if not config.source:
        return None
    with open(config.source, "rb") as fh:  # already parsed once by load_config: it reads
        return tomllib.load(fh)


def run_config_command(config: Config, args: argparse.Namespace) -> int:
    sys.stdout.write(show(config, args))
    return 0


def run(args: argparse.Namespace) -> int:
    return run_config_command(config_for(args), args)
