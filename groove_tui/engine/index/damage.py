"""A damaged index file: recognising one, and moving it aside so a forced run can build the index again.

The KB is the source of truth, so a damaged index is never repaired in place: `groove-tui index KB --force`
moves the file aside (`index.db.damaged-<time>`, kept for a post-mortem) and builds a new one. SQLite says
a file is damaged with SQLITE_CORRUPT ("database disk image is malformed") or SQLITE_NOTADB ("file is not
a database"), but damage it does not meet on the way (inside a full-text index, say) shows as wrong rows;
`check` (SQLite's quick_check, a read of the whole file) tells that apart from a fault of the program.
"""

from __future__ import annotations

import contextlib
import os
from datetime import datetime
from pathlib import Path

from groove_tui.engine.errors import IndexDamaged

_CORRUPT, _NOTADB = 11, 26  # SQLite's primary result codes
_SAYS_DAMAGED = ("malformed", "not a database", "corrupt")
DAMAGED_SUFFIX = ".damaged-"


def is_damage(exc: BaseException | None) -> bool:
    """Whether `exc`, or an error it was raised from, is SQLite saying the file is damaged."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, IndexDamaged):
            return True
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF in (_CORRUPT, _NOTADB):
            return True
        if type(exc).__name__ in ("DatabaseError", "OperationalError") and any(w in str(exc) for w in _SAYS_DAMAGED):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def damaged(db_path: Path, exc: BaseException) -> IndexDamaged:
    return IndexDamaged(db_path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def check(db_path: Path) -> str | None:
    """SQLite's quick_check of the index file, read-only: None when it holds together (or is absent), else
    the first problem found."""
    import sqlean

    if not db_path.is_file():
        return None
    try:
        with contextlib.closing(sqlean.connect(db_path.absolute().as_uri() + "?mode=ro", uri=True)) as conn:
            rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    except sqlean.Error as exc:
        return str(exc) if is_damage(exc) else None  # busy, unreadable: not a verdict on the file
    lines = [line for row in rows for line in str(row[0]).splitlines() if line and not line.startswith("***")]
    return None if lines == ["ok"] else (lines[0] if lines else "quick_check failed")


def set_aside(db_path: Path) -> Path:
    """Move the damaged index file (with its write-ahead log) to `<name>.damaged-<time>` beside it, so a
    new one can be built in its place; returns the new name. The shared-memory file is only a cache."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    target = db_path.with_name(f"{db_path.name}{DAMAGED_SUFFIX}{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = db_path.with_name(f"{db_path.name}{DAMAGED_SUFFIX}{stamp}-{n}")
    os.replace(db_path, target)
    wal = Path(f"{db_path}-wal")
    if wal.exists():
        os.replace(wal, Path(f"{target}-wal"))  # SQLite finds a database's log by this name
    Path(f"{db_path}-shm").unlink(missing_ok=True)
    return target
