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
ALWAYS_EXCLUDED = (".git", ".svn", "node_modules", ".obsidian")


def is_editor_artifact(name: str) -> bool:
    """An editor's lock, swap, backup or temporary file (Emacs `.#note.md` and `#note.md#`, Vim's
    `.note.md.swp` and `note.md~`, Office's `~$note.md`, atomic saves' `note.md.tmp`): never a note, even
    when its name ends in `.md`, so neither the walk nor the watcher ever reads one."""
    return (
        name.startswith((".#", "~$", ".~lock."))
        or (name.startswith("#") and name.endswith("#"))
        or name.endswith(("~", ".swp", ".swo", ".swx", ".tmp", ".bak"))
    )


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


class Exclusions:
    """What the walk leaves out, as a test on one KB-relative path: the always-excluded folders,
    `exclude_dirs` (any depth, case-insensitive), `.grooveignore`, editors' artifacts and files that are
    not Markdown. The watcher asks it about every event, so excluded paths cost no index work."""

    def __init__(self, kb: Path, exclude_dirs: tuple[str, ...]) -> None:
        self.dirs = frozenset(d.lower() for d in (*exclude_dirs, *ALWAYS_EXCLUDED))
        self.ignore = _load_ignore(kb)

    def dir_excluded(self, rel_dir: str) -> bool:
        """Whether a folder (KB-relative, no trailing '/') or one of its parents is left out."""
        parts = [p for p in rel_dir.split("/") if p]
        for n, part in enumerate(parts):
            if part.lower() in self.dirs:
                return True
            if self.ignore is not None and self.ignore.match_file("/".join(parts[: n + 1]) + "/"):
                return True
        return False

    def file_excluded(self, rel: str) -> bool:
        """Whether a file path is not a note to index (its folders are judged too)."""
        head, _sep, name = rel.rpartition("/")
        if not name.lower().endswith(MARKDOWN_SUFFIXES) or is_editor_artifact(name):
            return True
        if head and self.dir_excluded(head):
            return True
        return self.ignore is not None and self.ignore.match_file(rel)


def walk_kb(
    kb: Path, exclude_dirs: tuple[str, ...], issues: list[FileIssue] | None = None, under: str = ""
) -> list[str]:
    """KB-relative paths of the Markdown files to index, sorted; symlinks are never followed.

    `issues` receives what the walk passed over: unreadable directories and symbolic links (Markdown
    files and directories), each with a reason; directory paths end in '/'. `under` walks one folder of
    the KB only (the caller has checked that the folder itself is not excluded)."""
    excluded = {d.lower() for d in (*exclude_dirs, *ALWAYS_EXCLUDED)}
    ignore = _load_ignore(kb)
    found: list[str] = []
    note = issues.append if issues is not None else (lambda _issue: None)

    def onerror(exc: OSError) -> None:  # an unreadable directory is skipped, the walk goes on
        rel = os.path.relpath(exc.filename, kb) if exc.filename else "."
        rel = "" if rel == "." else rel.replace(os.sep, "/")
        note(FileIssue(printable_name(rel) + "/" if rel else "./", f"unreadable directory: {exc.strerror or exc}"))

    for root, dirs, files in os.walk(kb / under if under else kb, followlinks=False, onerror=onerror):
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
            if not name.lower().endswith(MARKDOWN_SUFFIXES) or is_editor_artifact(name):
                continue
            rel = rel_root + name
            if ignore is not None and ignore.match_file(rel):
                continue
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:  # gone since the folder was listed: reading it says so
                found.append(rel)
                continue
            if stat.S_ISLNK(st.st_mode):
                note(FileIssue(printable_name(rel), "symbolic link (not followed)"))
                continue
            if _is_hard_linked(st):
                note(FileIssue(printable_name(rel), HARD_LINK_SKIPPED))
                continue
            found.append(rel)
    found.sort()
    return found


def walk_paths(
    kb: Path, exclude_dirs: tuple[str, ...], scope: frozenset[str], issues: list[FileIssue] | None = None
) -> list[str]:
    """The Markdown files to index at or under the KB-relative paths in `scope` (files or folders, which
    may no longer exist), by the same rules as `walk_kb`: what a full walk would find there, sorted."""
    rules = Exclusions(kb, exclude_dirs)
    found: set[str] = set()
    note = issues.append if issues is not None else (lambda _issue: None)
    for rel in sorted(scope):
        rel = rel.strip("/")
        full = kb / rel if rel else kb
        try:
            st = os.lstat(full)
        except OSError:
            continue  # gone (or never there): only what the index holds under it is affected
        if stat.S_ISDIR(st.st_mode):
            if rel and rules.dir_excluded(rel):
                continue
            found.update(walk_kb(kb, exclude_dirs, issues, under=rel))
        elif not rules.file_excluded(rel):
            if stat.S_ISLNK(st.st_mode):
                note(FileIssue(printable_name(rel), "symbolic link (not followed)"))
                continue
            if _is_hard_linked(st):
                note(FileIssue(printable_name(rel), HARD_LINK_SKIPPED))
                continue
            found.add(rel)
    return sorted(found)


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


# A file with a second name may be one outside the KB (a hard link made into it): the server never reads
# one (get_document, resources), so it is never indexed either, and a search cannot hand out its text.
HARD_LINK_SKIPPED = "a file with more than one name (a hard link): not indexed"


def _is_hard_linked(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1


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
    """Bytes and hash of a KB file; only regular files are ever opened (a FIFO would block forever).

    Plain descriptors, not Python's file objects: building a buffered reader per note was most of what
    reading a KB of small notes cost."""
    full = os.path.join(kb, rel)
    try:
        st = os.lstat(full)
        if not _is_regular(st):
            return _not_regular(rel, st)
        if st.st_size > MAX_FILE_BYTES:
            return FileIssue(rel, f"larger than 50 MiB ({st.st_size:,} bytes)")
        fd = _open_nonblocking(full, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):  # swapped after the check: judge what was opened
                return _not_regular(rel, st)
            if _is_hard_linked(st):
                return FileIssue(rel, HARD_LINK_SKIPPED)
            raw = _read_to_end(fd, st.st_size)
        finally:
            os.close(fd)
    except OSError as exc:
        return FileIssue(rel, f"unreadable: {exc.strerror or exc}")
    if len(raw) > MAX_FILE_BYTES:
        return FileIssue(rel, "larger than 50 MiB")
    return DiskFile(rel, hashlib.sha256(raw).hexdigest(), len(raw), st.st_mtime_ns, raw)


def _read_to_end(fd: int, size: int) -> bytes:
    """The file's bytes up to one past MAX_FILE_BYTES; `size` (from fstat) sizes the first read, and the
    loop goes on to the end, so a file that grew since is read whole."""
    parts: list[bytes] = []
    got = 0
    want = min(size, MAX_FILE_BYTES) + 1
    while got <= MAX_FILE_BYTES:
        block = os.read(fd, max(want - got, 1 << 16))
        if not block:
            break
        parts.append(block)
        got += len(block)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def printable_name(rel: str) -> str:
    """A path as text that can be printed and stored: undecodable bytes of the name become \\xNN."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


NOT_UTF8_NAME = "file name is not valid UTF-8; rename it to index it"


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
