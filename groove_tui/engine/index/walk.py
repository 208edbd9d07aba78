"""The KB on disk, read safely: which files are Markdown notes (ignore files and excluded folders honoured,
symlinks not followed), each read without blocking on a FIFO or a device, with names made printable and
bytes decoded as the indexer needs them."""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from groove_tui.engine.types import FileIssue

if TYPE_CHECKING:
    import pathspec

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 50 * 1024 * 1024
MARKDOWN_SUFFIXES = (".md",)
ALWAYS_EXCLUDED = (".git", ".svn", "node_modules")


def _load_ignore(kb: Path) -> pathspec.GitIgnoreSpec | None:
    path = kb / ".grooveignore"
    if not path.is_file():
        return None
    import pathspec

    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def walk_kb(kb: Path, exclude_dirs: tuple[str, ...], issues: list[FileIssue] | None = None) -> list[str]:
    """KB-relative paths of the Markdown files to index, sorted; symlinks are never followed.

    `issues` receives what the walk passed over: unreadable directories and symbolic links (Markdown
    files and directories), each with a reason; directory paths end in '/'."""
    excluded = {d.lower() for d in (*exclude_dirs, *ALWAYS_EXCLUDED)}
    ignore = _load_ignore(kb)
    found: list[str] = []
    note = issues.append if issues is not None else (lambda _issue: None)

    def onerror(exc: OSError) -> None:  # an unreadable directory is skipped, the walk goes on
        rel = os.path.relpath(exc.filename, kb) if exc.filename else "."
        rel = "" if rel == "." else rel.replace(os.sep, "/")
        note(FileIssue(printable_name(rel) + "/" if rel else "./", f"unreadable directory: {exc.strerror or exc}"))

    for root, dirs, files in os.walk(kb, followlinks=False, onerror=onerror):
        rel_root = os.path.relpath(root, kb)
        rel_root = "" if rel_root == "." else rel_root.replace(os.sep, "/") + "/"
        keep = []
        for d in dirs:
            if d.lower() in excluded or (ignore is not None and ignore.match_file(rel_root + d + "/")):
                continue
            if os.path.islink(os.path.join(root, d)):
                note(FileIssue(printable_name(rel_root + d) + "/", "symbolic link to a directory (not followed)"))
                continue
            keep.append(d)
        dirs[:] = keep
        for name in files:
            if not name.lower().endswith(MARKDOWN_SUFFIXES):
                continue
            rel = rel_root + name
            if ignore is not None and ignore.match_file(rel):
                continue
            if os.path.islink(os.path.join(root, name)):
                note(FileIssue(printable_name(rel), "symbolic link (not followed)"))
                continue
            found.append(rel)
    found.sort()
    return found


@dataclass(slots=True)
class DiskFile:
    rel: str
    content_hash: str
    size: int
    mtime_ns: int
    raw: bytes | None  # kept only until the file is written


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
)


def _is_regular(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode)


def _not_regular(rel: str, st: os.stat_result) -> FileIssue:
    kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a file")
    return FileIssue(rel, f"not a regular file ({kind})")


def _open_nonblocking(path: str, flags: int) -> int:
    # O_NONBLOCK: opening a FIFO (swapped in after the type check) returns at once instead of waiting
    # for a writer; it changes nothing for a regular file.
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))


def read_file(kb: Path, rel: str) -> DiskFile | FileIssue:
    """Bytes and hash of a KB file; only regular files are ever opened (a FIFO would block forever)."""
    full = kb / rel
    try:
        st = os.lstat(full)
        if not _is_regular(st):
            return _not_regular(rel, st)
        if st.st_size > MAX_FILE_BYTES:
            return FileIssue(rel, f"larger than 50 MiB ({st.st_size:,} bytes)")
        with open(full, "rb", opener=_open_nonblocking) as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):  # swapped after the check: judge what was opened
                return _not_regular(rel, st)
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return FileIssue(rel, f"unreadable: {exc.strerror or exc}")
    if len(raw) > MAX_FILE_BYTES:
        return FileIssue(rel, "larger than 50 MiB")
    return DiskFile(rel, hashlib.sha256(raw).hexdigest(), len(raw), st.st_mtime_ns, raw)


def printable_name(rel: str) -> str:
    """A path as text that can be printed and stored: undecodable bytes of the name become \\xNN."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def name_is_utf8(rel: str) -> bool:
    """os.walk hands a name that is not valid UTF-8 over with lone surrogates (surrogateescape); SQLite
    cannot store such a string, so the file is skipped rather than stopping the whole run."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def decode_markdown(raw: bytes) -> str:
    """Text of a Markdown file, or raise ValueError with a reason (binary, invalid UTF-8)."""
    if b"\x00" in raw:  # anywhere, not only near the start: a NUL must not reach the index
        raise ValueError("binary content (NUL bytes)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"invalid UTF-8 at byte {exc.start}") from None
