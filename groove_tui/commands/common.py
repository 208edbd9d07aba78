"""What several commands share: settings with the command's flags applied, the engine opened for them, the
search flags as `SearchParams`, and user errors (`CLIError`, exit 1; `UsageError`, exit 2) with the advice
that fixes them."""

from __future__ import annotations

import argparse
import math
from pathlib import Path


class CLIError(Exception):
    """A user error: printed to stderr, exit status 1."""

    code = 1


class UsageError(CLIError):
    """A command line that cannot mean anything (a typo, an empty query): exit status 2, like argparse's."""

    code = 2


def config_for(args: argparse.Namespace):
    """groove.toml as found, with --model applied."""
    from dataclasses import replace

    from groove_tui.settings.config import check_range, load_config

    config = load_config(args.config)
    if getattr(args, "model", None) is not None:
        if not args.model.strip():
            raise CLIError(
                f"--model {args.model!r} is invalid: expected a model name (e.g. multilingual-e5-small, "
                f"bge-small-en) or a local ONNX directory; leave the flag out for the default"
            )
        config = replace(config, embedding=replace(config.embedding, model=args.model, explicit=True))
    rr = config.reranker
    for flag, key, lo, hi in (
        ("rerank_pool", "pool", 1, 1000),
        ("rerank_max_tokens", "max_tokens", 16, 8192),
        ("rerank_threads", "threads", 0, 256),
    ):
        value = getattr(args, flag, None)
        if value is not None:
            check_range("--" + flag.replace("_", "-"), value, lo, hi, integer=True)
            rr = replace(rr, **{key: value})
    return replace(config, reranker=rr)


def load_engine(args: argparse.Namespace, *, allow_model_change: bool = False, readonly: bool = False, config=None):
    """The engine for a command. Readers (search, status, eval, sweep) open the index read-only: they
    answer from the last commit while an index runs and never wait for its write lock. `config`: the
    settings already read (`config_for`) and completed by the command; read from `args` when None."""
    from groove_tui.engine import Engine, IndexNotReady, ModelMismatch

    config = config_for(args) if config is None else config
    try:
        return Engine.open(
            args.kb, config=config, index_dir=args.index_dir, allow_model_change=allow_model_change, readonly=readonly
        )
    except ModelMismatch as exc:
        raise CLIError(mismatch_advice(args, config, exc)) from None
    except IndexNotReady as exc:
        raise CLIError(not_ready_advice(args, exc)) from None


def not_ready_advice(args: argparse.Namespace, exc) -> str:
    """A reader's answer when there is no index it can read: what is wrong, and the command that fixes it."""
    from groove_tui.output.textout import index_command

    kb = Path(args.kb).expanduser().resolve()
    if exc.reason == "missing":
        return f"{kb} has not been indexed yet (index: {exc.db_path}). Run: {index_command(args, kb)}"
    return (
        f"the index of {kb} was made by another version of groove-tui and must be updated before it can be "
        f"searched (index: {exc.db_path}). Run: {index_command(args, kb)}"
    )


def mismatch_advice(args: argparse.Namespace, config, exc) -> str:
    """Both ways out of a model mismatch, as commands with the user's own flags."""
    import shlex

    from groove_tui.output.textout import index_command

    named = f"--model {shlex.quote(args.model)}" if getattr(args, "model", None) else None
    keep = (
        "drop " + named
        if named
        else f"set [embedding] model = {exc.recorded!r}" + (f" in {config.source}" if config.source else "")
    )
    rebuild = index_command(args, args.kb, "--force", model=getattr(args, "model", None) or exc.configured)
    return (
        f"the index of {args.kb} was built with the embedding model {exc.recorded!r}, not {exc.configured!r}. "
        f"Keep the index's model: {keep}; or rebuild the index for {exc.configured!r}: {rebuild}"
    )


def params_for(engine, args: argparse.Namespace):
    from dataclasses import replace

    params = engine.default_params()
    changes: dict = {}
    if getattr(args, "limit", None) is not None:
        if args.limit < 0:
            raise CLIError(f"--limit {args.limit} is invalid: expected an integer >= 0")
        changes["limit"] = args.limit
    if args.mmr is not None:
        changes["mmr"] = args.mmr
    for flag, attr, key in (
        ("--lambda", "mmr_lambda", "mmr_lambda"),
        ("--same-doc-penalty", "same_doc_penalty", "mmr_same_doc_penalty"),
    ):
        v = getattr(args, attr)
        if v is not None:
            if not (math.isfinite(v) and 0.0 <= v <= 1.0):  # named as typed, like --min-quality
                raise CLIError(f"{flag} {flag_value(v)} is invalid: expected a number in [0, 1]")
            changes[key] = v
    if args.parent is not None:
        changes["parent_retriever"] = args.parent
    if args.reranker is not None:
        changes["reranker"] = None if args.reranker in ("none", "") else args.reranker
    if getattr(args, "fusion", None) is not None:
        changes["fusion"] = args.fusion
    if hasattr(args, "path_glob"):
        changes.update(
            path_globs=tuple(args.path_glob),
            tags_any=tuple(args.tag_any),
            tags_all=tuple(args.tag_all),
            date_from=args.date_from,
            date_to=args.date_to,
            category=args.category,
            topic=args.topic,
            min_quality=args.min_quality,
        )
        q = args.min_quality
        if q is not None and not (math.isfinite(q) and 0.0 <= q <= 1.0):
            raise CLIError(f"--min-quality {flag_value(q)} is invalid: expected a number in [0, 1]")
        if args.min_confidence_ratio is not None:
            r = args.min_confidence_ratio
            if not math.isfinite(r) or r < 0:
                raise CLIError(f"--min-confidence-ratio {flag_value(r)} is invalid: expected a finite number >= 0")
            changes["min_confidence_ratio"] = r
    return replace(params, **changes)


def flag_value(value: float) -> str:
    """A float flag as the user typed it, near enough: -1.0 → -1."""
    return str(int(value)) if math.isfinite(value) and value == int(value) else str(value)


def require_index(engine, args: argparse.Namespace) -> None:
    from groove_tui.output.textout import index_command

    docs, _chunks, _pending = engine.store.counts()
    if docs == 0:
        raise CLIError(
            f"{engine.kb_path} has not been indexed yet (index: {engine.store.db_path}). "
            f"Run: {index_command(args, engine.kb_path)}"
        )
