"""Query history, persisted per KB as JSON under `paths.kb_state_dir(kb)`."""

from __future__ import annotations

import json
import os
from pathlib import Path


class QueryHistory:
    def __init__(self, path: Path | None, max_entries: int = 200) -> None:
        self.path = path
        self.max_entries = max_entries
        self.entries: list[str] = []
        self._pos: int | None = None  # index into entries while browsing; None = editing a new line
        self._draft = ""
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(data, dict):
                    data = data.get("queries", [])
                self.entries = [q for q in data if isinstance(q, str) and q.strip()][-max_entries:]
            except (OSError, ValueError):
                self.entries = []

    def add(self, query: str) -> None:
        query = query.strip()
        self._pos = None
        if not query:
            return
        if query in self.entries:
            self.entries.remove(query)
        self.entries.append(query)
        del self.entries[: -self.max_entries]
        self.save()

    def save(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"queries": self.entries}, ensure_ascii=False, indent=1), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            pass  # history is a convenience; never fail a search over it

    def previous(self, current: str) -> str | None:
        if not self.entries:
            return None
        if self._pos is None:
            self._draft = current
            self._pos = len(self.entries) - 1
        elif self._pos > 0:
            self._pos -= 1
        else:
            return None
        return self.entries[self._pos]

    def next(self) -> str | None:
        if self._pos is None:
            return None
        if self._pos < len(self.entries) - 1:
            self._pos += 1
            return self.entries[self._pos]
        self._pos = None
        return self._draft

    def reset(self) -> None:
        self._pos = None
