"""Results and hits out of the app: the JSON export (ctrl+s), the focused hit into $EDITOR (o / ctrl+o)
or the clipboard (y, Y), and SVG screenshots (palette).

A mixin, like the app's other parts: Textual runs `action_*` on the App, and tests read `last_export`
and swap `run_editor` there.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_tui.engine.types import SearchParams
from groove_tui.tui.search.runconfig import SIDES

if TYPE_CHECKING:
    from groove_tui.tui.shell import AppShell as _AppPart
else:
    _AppPart = object


class ExportActions(_AppPart):
    """App mixin. Owns `last_export` (the newest JSON written) and `run_editor` (how $EDITOR runs)."""

    def _init_export_actions(self) -> None:
        self.last_export: Path | None = None
        self.run_editor: Callable[[list[str]], int] = subprocess.call

    def export_data(self) -> dict[str, Any]:
        sides = []
        for side in self.active_sides:
            resp = self.responses[side]
            rc = self.run_configs[side]
            sides.append(
                {
                    "side": side,
                    "run_config": rc.to_dict(),
                    "params": _params_dict(rc.to_params(self.base_params, self.reranker_model)),
                    "response": resp.to_dict() if resp is not None else None,
                    "error": self.errors[side],
                }
            )
        out: dict[str, Any] = {
            "query": self.query_text,
            "kb": str(self.kb_path),
            "exported_at": datetime.now().isoformat(timespec="seconds"),
            "compare": self.compare_active,
            "sides": sides,
        }
        if self.compare_active and all(self.responses[s] is not None for s in SIDES):
            from groove_tui.tui.search.compare import compare

            left, right = self.responses["left"], self.responses["right"]
            assert left is not None and right is not None  # checked just above
            cmp = compare(
                [h.chunk_id for h in left.results],
                [h.chunk_id for h in right.results],
                k=max(self.run_configs["left"].limit, self.run_configs["right"].limit),
            )
            s = cmp.summary
            out["comparison"] = {
                "in_both": s.in_both,
                "only_left": s.only_left,
                "only_right": s.only_right,
                "moved_up": s.moved_up,
                "moved_down": s.moved_down,
                "k": s.k,
                "overlap_at_k": s.overlap,
            }
        return out

    def export_results(self, path: str | os.PathLike[str]) -> Path:
        target = Path(path).expanduser()
        if not target.is_absolute():
            target = Path.cwd() / target
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self.export_data(), ensure_ascii=False, indent=2), encoding="utf-8")
        self.last_export = target
        return target

    def default_export_name(self) -> str:
        return f"groove-results-{datetime.now():%Y%m%d-%H%M%S}.json"

    def action_export(self) -> None:
        from groove_tui.tui.screens.export import ExportScreen

        def done(path: str | None) -> None:
            if not path:
                return
            try:
                target = self.export_results(path)
            except OSError as exc:
                self.notify(f"Export failed: {exc}", severity="error", markup=False)
                return
            self.notify(f"Exported to {target}", markup=False)

        self.push_screen(ExportScreen(self.default_export_name()), callback=done)

    def action_save_settings(self) -> None:
        from groove_tui.tui.screens.save_settings import open_save_settings

        open_save_settings(self)

    def action_open_editor(self) -> None:
        row = self.focused_row
        if row is None or row.gone:
            self.notify("No hit selected", severity="warning", markup=False)
            return
        self.history.add(self.query_text)
        cmd = editor_command(self.kb_path, row.hit.path, row.hit.line)
        try:
            with self.suspend():
                self.run_editor(cmd)
        except Exception as exc:
            self.notify(f"Could not run {cmd[0]}: {exc}", severity="error", markup=False)
        self.refresh()

    def action_copy_path(self) -> None:
        row = self.focused_row
        if row is None or row.gone:
            return
        path = str(self.kb_path / row.hit.path)
        self.copy_to_clipboard(path)
        self.notify(f"Copied {path}", markup=False, timeout=2)

    def action_copy_content(self) -> None:
        row = self.focused_row
        if row is None or row.gone:
            return
        self.copy_to_clipboard(row.hit.content)
        self.notify(f"Copied {len(row.hit.content)} characters of {row.hit.path}", markup=False, timeout=2)

    def action_save_screenshot(self) -> None:
        """An SVG of the screen into the user data directory (created if missing), and where it went."""
        from groove_tui.settings.paths import user_data_dir

        folder = user_data_dir() / "screenshots"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = self.save_screenshot(path=str(folder))
        except OSError as exc:
            self.notify(f"Screenshot not saved: {exc}", severity="error", markup=False)
            return
        self.notify(f"Screenshot saved: {path}", markup=False, timeout=8)


def _params_dict(p: SearchParams) -> dict[str, Any]:
    from dataclasses import asdict

    d = asdict(p)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def editor_command(kb: Path, rel_path: str, line: int, editor: str | None = None) -> list[str]:
    """`$VISUAL`/`$EDITOR` (split like a shell would) + `+LINE` + the file's absolute path; `vi` if unset."""
    editor = editor or os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        argv = shlex.split(editor)
    except ValueError:
        argv = [editor]
    return [*(argv or ["vi"]), f"+{max(1, int(line))}", str(Path(kb) / rel_path)]
