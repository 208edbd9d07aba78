"""Measurement records: `groove-tui eval` and `groove-tui bench` with `--record DIR` write one JSON file.

A figure quoted without its machine, commit and command cannot be checked or reproduced, so a record
holds all of them beside the figures: what was measured, when (UTC), the groove-tui version and git
commit, the machine (cores, CPU, load average before and after the run), the exact command line, and the
figures the command printed (an eval's aggregate metrics, fingerprint and corpus; a bench's whole result).
The docs' reference tables are rendered from such records (`benchmarks/render_tables.py`).

`begin` checks the destination before the run (a long measurement must not be lost to a typo at the
end); `Recording.write` adds the figures afterwards. Nothing is ever written inside the KB.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SCHEMA = 1
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


class RecordError(ValueError):
    """--record names a place a record cannot go; the message names the option and the path."""


@dataclass(frozen=True)
class Recording:
    """A run being recorded: where the record goes and what was known before the run started."""

    target: Path  # a directory (a file name is chosen) or a path ending in .json
    kind: str  # "eval" or "bench"
    command: str
    started: str
    commit: str | None  # taken when the run starts: the code that ran, whatever changes during it
    load_before: tuple[float, float, float] | None

    def write(self, figures: dict[str, Any], *, what: str, subject: dict[str, Any]) -> Path:
        """Write the record and return its path; `subject` names the KB, model and settings measured."""
        record = {
            "schema": SCHEMA,
            "kind": self.kind,
            "what": what,
            "date": self.started,
            "finished": _now(),
            "version": _version(),
            "commit": self.commit,
            "machine": machine(self.load_before),
            "command": self.command,
            "subject": subject,
            "figures": figures,
        }
        path = self.target
        if path.suffix != ".json":
            path = _free_name(path, self.started, self.kind, subject)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(record, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        print(f"groove-tui: record written to {path}", file=sys.stderr)
        return path


def begin(
    target: str | None, kind: str, argv: Sequence[str] | None, kb: Path | None = None, program: str = "groove-tui"
) -> Recording | None:
    """The recording for `--record TARGET` (None without it), refused before the run when TARGET cannot
    take a record: an existing file that is not .json, a directory path that is a file, or a place inside
    the KB (groove-tui never writes into a KB)."""
    if not target:
        return None
    path = Path(target).expanduser().absolute()
    if path.suffix == ".json":
        if path.is_dir():
            raise RecordError(
                f"--record {target!r} is invalid: it is a directory named like a file; "
                "expected a directory or a path ending in .json"
            )
        if not path.parent.is_dir():
            raise RecordError(f"--record {target!r} is invalid: its folder {str(path.parent)!r} does not exist")
    elif path.exists() and not path.is_dir():
        raise RecordError(f"--record {target!r} is invalid: expected a directory or a path ending in .json")
    if kb is not None:
        kb_root = kb.expanduser().resolve()
        resolved = path.resolve()
        if resolved == kb_root or kb_root in resolved.parents:
            raise RecordError(
                f"--record {target!r} is invalid: it is inside the knowledge base {str(kb_root)!r}; "
                "groove-tui never writes into a KB"
            )
    words = list(argv) if argv is not None else sys.argv[1:]
    return Recording(path, kind, shlex.join([*program.split(), *words]), _now(), git_commit(), _load())


def _settings_variant(args: Any) -> list[str]:
    """What the command line set beside the defaults, for the record's variant: the `--config` file's
    name (a measured variation keeps its settings in a file of its own) and an explicit `--fusion`."""
    out = []
    if getattr(args, "fusion", None):
        out.append(f"fusion-{args.fusion}")
    if getattr(args, "config", None):
        out.append(_SLUG.sub("_", Path(args.config).stem).strip("_"))
    return out


def _tokens_variant(fingerprint: dict[str, Any]) -> list[str]:
    """An index whose vectors read another share of a passage than its model's own choice, named by it."""
    from groove_tui.engine.models.embedders import wanted_passage_tokens

    model = fingerprint.get("model")
    tokens = int(fingerprint.get("passage_tokens") or 0)
    if not model or tokens == wanted_passage_tokens(None, model):
        return []
    return [f"tokens{tokens}" if tokens else "tokens-all"]


def record_eval(recording: Recording | None, run: dict[str, Any], args: Any) -> Path | None:
    """Write an eval's record: its figures without the per-query lists (those belong in the history)."""
    if recording is None:
        return None
    keep = (
        "aggregate",
        "fingerprint",
        "corpus",
        "golden",
        "elapsed_seconds",
        "latency_ms",
        "pending_embeddings",
        "misses_by_stage",
    )
    fingerprint = run.get("fingerprint") or {}
    legs = getattr(args, "legs", "hybrid") or "hybrid"
    share = getattr(args, "embedded_share", None)
    variant = [legs] + ([f"rerank-{fingerprint['reranker']}"] if fingerprint.get("reranker") else [])
    variant += [f"share{share:g}"] if share is not None else []
    variant += _settings_variant(args)
    variant += ["japanese-words"] if fingerprint.get("japanese_words") else []  # the index's, not a flag's
    variant += _tokens_variant(fingerprint)
    kb = Path(args.kb).expanduser().resolve()
    subject = {
        "kb": str(kb),
        "kb_name": _kb_name(kb),
        "golden": Path(str(run.get("golden") or "")).name or None,
        "model": fingerprint.get("model"),
        "legs": legs,
        "embedded_share": share,
        "variant": "-".join(variant),
    }
    return recording.write({key: run.get(key) for key in keep}, what=f"eval: {legs}", subject=subject)


def record_bench(recording: Recording | None, result: dict[str, Any], args: Any) -> Path | None:
    """Write a bench's record: its whole result (percentiles per stage, throughput, targets)."""
    if recording is None:
        return None
    mode = result.get("mode") or "search"
    scale = getattr(args, "scale", None)
    variant = "-".join([f"{mode}{scale}" if mode in ("scale", "watch") and scale else mode, *_settings_variant(args)])
    kb = Path(args.kb).expanduser().resolve()
    subject = {
        "kb": str(kb),
        "kb_name": _kb_name(kb),
        "golden": Path(args.queries).name if getattr(args, "queries", None) else None,
        "model": result.get("model"),
        "mode": mode,
        "variant": variant,
    }
    return recording.write(result, what=f"bench: {variant}", subject=subject)


def machine(load_before: tuple[float, float, float] | None = None) -> dict[str, Any]:
    """Cores, CPU model, load averages (1, 5, 15 min) before and after, Python and platform."""
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "load_before": list(load_before) if load_before else None,
        "load_after": list(_load() or ()) or None,
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
    }


def git_commit() -> str | None:
    """The short commit of the checkout groove-tui runs from, with "-dirty" when its files were changed;
    None when it runs from an installed wheel (the version then says what ran)."""
    root = Path(__file__).resolve().parents[2]  # groove_tui/output/records.py -> the checkout
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=7", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                "groove_tui",
                "pyproject.toml",
            ],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if dirty else head


def _kb_name(kb: Path) -> str:
    """The KB's folder name; a folder called `kb` is named by its parent (`scifact/kb` is scifact)."""
    return kb.parent.name if kb.name == "kb" else kb.name


def _free_name(folder: Path, started: str, kind: str, subject: dict[str, Any]) -> Path:
    """`DATE-KIND-KB-MODEL[-VARIANT].json`, numbered when a record of that name exists already."""
    parts = [started[:10], kind, subject.get("kb_name"), subject.get("model"), subject.get("variant")]
    stem = "-".join(_SLUG.sub("_", str(p)).strip("_") for p in parts if p)
    path = folder / f"{stem}.json"
    n = 2
    while path.exists():
        path = folder / f"{stem}-{n}.json"
        n += 1
    return path


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _load() -> tuple[float, float, float] | None:
    try:
        return tuple(round(x, 2) for x in os.getloadavg())  # type: ignore[return-value]  # always 3 values
    except OSError:  # not available on this platform
        return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _version() -> str:
    from groove_tui import __version__

    return __version__
