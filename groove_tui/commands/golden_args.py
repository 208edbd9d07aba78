"""What `eval`, `eval --compare` and `sweep` share: the golden file a run reads, its k values, the error
they answer bad input with, and how a query is shortened for a line of text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from groove_tui.engine.evaluate.metrics import K_MAX, normalise_k_values

if TYPE_CHECKING:
    from groove_tui.engine import Engine

GROOVE_DEFAULT_GOLDEN = ".groove-eval.yml"


class EvalError(ValueError):
    """A user-facing eval problem (no golden file, bad --k, unusable history): exit status 1."""


def parse_k_values(raw: str | None, default: Sequence[int]) -> tuple[int, ...]:
    if raw is None or not raw.strip():
        ks = list(default)
    else:
        ks = []
        for part in raw.split(","):
            part = part.strip()
            try:
                k = int(part)
            except ValueError:
                raise EvalError(f"--k {raw!r} is invalid: expected comma-separated integers in [1, {K_MAX}]") from None
            if k < 1:
                raise EvalError(f"--k {raw!r} is invalid: every k must be >= 1")
            ks.append(k)
    if not ks:
        raise EvalError("no k values: pass --k 1,5,10 or set [eval] k_values")
    return normalise_k_values(ks)


def resolve_golden(engine: Engine, explicit: str | None) -> Path:
    """--golden, else [eval] golden (relative to the config file), else groove's `<kb>/.groove-eval.yml`
    when it exists (read only), else an error that says what to do."""
    if explicit:
        return Path(explicit).expanduser()
    configured = engine.config.eval.golden
    if configured:
        p = Path(configured).expanduser()
        if not p.is_absolute() and engine.config.source:
            p = Path(engine.config.source).expanduser().resolve().parent / p
        return p
    fallback = engine.kb_path / GROOVE_DEFAULT_GOLDEN
    if fallback.is_file():
        return fallback
    raise EvalError(
        'no golden file: pass --golden FILE, or set [eval] golden = "FILE" in groove.toml '
        f"(groove's default {fallback} does not exist)"
    )


def shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
