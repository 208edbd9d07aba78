"""`groove-tui models list | pull NAME | remove NAME | path NAME`."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from groove_tui.commands.common import CLIError
from groove_tui.engine.models.catalog import (
    KNOWN_MODELS,
    MANIFEST,
    BuiltSource,
    ManifestError,
    ModelSpec,
    PackageSource,
    find_spec,
    installed_dir,
    pull_command,
    read_manifest,
    repair_command,
    verify_folder,
)
from groove_tui.settings.paths import model_root


class ModelsError(CLIError):
    """A user error of the models command (printed, exit 1)."""


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    kind: str
    languages: str
    size: str
    licence: str
    source: str
    installed: bool  # present and intact: usable
    where: str
    note: str
    unsupported: str = ""  # why groove-tui cannot run it (groove's bge-m3)
    damaged: str = ""  # what is wrong with the installed files ("" = nothing)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def run(args: argparse.Namespace) -> int:
    root = model_root(args.model_dir)
    action = args.models_command or "list"
    if action == "list":
        rows = list_rows(root)
        if getattr(args, "format", "text") == "json":
            print(
                json.dumps(
                    {"model_dir": str(root), "models": [r.to_dict() for r in rows]}, ensure_ascii=False, indent=2
                )
            )
        else:
            sys.stdout.write(format_rows(rows, root))
        return 0
    if action == "pull":
        return _pull(args.name, root, force=args.force, quiet=args.quiet)
    if action == "remove":
        from groove_tui.engine.models.pull import remove

        removed = remove(args.name, root)
        if removed is None:
            raise ModelsError(f"{args.name!r} is not installed in {root}")
        print(f"removed {removed}")
        return 0
    if action == "path":
        where = model_location(args.name, root)
        if where is None:
            spec = find_spec(args.name)
            hint = f": run `{pull_command(spec.name)}`" if spec and not isinstance(spec.source, PackageSource) else ""
            raise ModelsError(f"{args.name!r} is not installed in {root}{hint}")
        print(where)
        return 0
    raise ModelsError(f"unknown action {action!r}")  # pragma: no cover - argparse restricts it


def _pull(name: str, root: Path, *, force: bool, quiet: bool) -> int:
    from groove_tui.engine.models.pull import PullError, clean_partials, pull, resolve_spec
    from groove_tui.output.progress import ProgressLine

    try:
        spec = resolve_spec(name)
    except PullError as e:
        raise ModelsError(str(e)) from None
    clean_partials(root)  # what a killed pull left behind
    source = spec.source
    if isinstance(source, BuiltSource) and not quiet and (force or installed_dir(spec.name, root) is None):
        print(
            f"building {spec.name} from the {source.package} package's weights (no download; about half a minute)",
            file=sys.stderr,
            flush=True,
        )
    bar = ProgressLine(sys.stderr, enabled=not quiet and sys.stderr.isatty())
    try:
        result = pull(spec, root, progress=bar.step, force=force, show_tool_output=False)
    except PullError as e:
        raise ModelsError(f"{spec.name}: {e}") from None
    finally:
        bar.close()
    size = f"{result.bytes / 1e6:.1f} MB"
    if isinstance(source, BuiltSource) and not result.already:
        print(f"built {spec.name} in {result.path} ({result.files} files, {size}, SHA-256 recorded)")
    elif result.already:
        print(f"{spec.name} is already installed in {result.path} ({result.files} files, {size}, SHA-256 verified)")
    else:
        print(f"installed {spec.name} in {result.path} ({result.files} files, {size}, SHA-256 verified)")
    return 0


def model_location(name: str, root: Path) -> Path | None:
    spec = find_spec(name)
    if spec is not None and isinstance(spec.source, PackageSource):
        return _package_dir(spec.source.module)
    return installed_dir(name, root)


def _package_dir(module: str) -> Path | None:
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if found is None or not found.origin:
        return None
    return Path(found.origin).parent


def list_rows(root: Path) -> list[Row]:
    rows = [_row(spec, model_location(spec.name, root)) for spec in KNOWN_MODELS]
    known = {spec.folder_name.lower() for spec in KNOWN_MODELS}
    if root.is_dir():  # catalog models pulled through the hub that are not in our list
        for folder in sorted(root.iterdir()):
            if folder.name.lower() in known or not (folder / MANIFEST).is_file():
                continue
            try:
                m = read_manifest(folder)
            except ValueError:
                continue
            if m is None:
                continue
            damaged = _damage(folder)
            rows.append(
                Row(
                    m.name or folder.name,
                    m.kind or "?",
                    ", ".join(m.languages) or "?",
                    _size(sum(p.stat().st_size for p in folder.iterdir() if p.is_file())),
                    "see the model card",
                    m.source,
                    not damaged,
                    str(folder),
                    "",
                    damaged=damaged,
                )
            )
    return rows


def _damage(folder: Path) -> str:
    """What is wrong with a pulled folder's files ("" = intact); cached by size and mtime like a load."""
    try:
        problems = verify_folder(folder)
    except ManifestError as e:
        return str(e)
    return problems[0] + (f" and {len(problems) - 1} more" if len(problems) > 1 else "") if problems else ""


def _row(spec: ModelSpec, where: Path | None) -> Row:
    pulled = where is not None and not isinstance(spec.source, PackageSource)
    damaged = _damage(where) if pulled and where is not None else ""
    return Row(
        name=spec.name,
        kind=spec.kind,
        languages=", ".join(spec.languages),
        size=_size(spec.size_bytes),
        licence=spec.licence,
        source=spec.source.describe(),
        installed=where is not None and not damaged,
        where=str(where) if where else "",
        note=spec.note,
        unsupported=spec.unsupported,
        damaged=damaged,
    )


def _size(n: int) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.1f} GB"
    return f"{n / 1e6:.0f} MB" if n else "?"


def format_rows(rows: list[Row], root: Path) -> str:
    head = ("name", "kind", "languages", "size", "installed", "licence", "source")
    table = [head] + [
        (
            r.name,
            r.kind,
            r.languages,
            r.size,
            "yes" if r.installed else "DAMAGED" if r.damaged else "n/a" if r.unsupported else "no",
            r.licence,
            r.source,
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(head) - 1)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1] for row in table
    ]
    lines.append("")
    lines += [f"{r.name}: {r.where}" for r in rows if r.installed]
    lines += [f"{r.name}: damaged ({r.damaged}): run `{repair_command(r.name)}`" for r in rows if r.damaged]
    lines += [f"{r.name}: cannot run here: {r.unsupported}" for r in rows if r.unsupported]
    lines.append(f"model directory: {root}")
    pullable = [r.name for r in rows if not r.installed and not r.damaged and r.source.startswith("PyPI wheel")]
    if pullable:
        lines.append("pull one with: " + "; ".join(pull_command(n) for n in pullable))
    return "\n".join(lines) + "\n"
