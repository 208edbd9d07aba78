"""The word table's Japanese analyzer: the pulled Sudachi dictionary, found and checked without loading it.

`japanese_analyzer()` is called when an index is opened: a stat of the dictionary's folder and its
verification record (the pull hashed it; a file whose size and mtime changed since is hashed again, once),
never a download and never a load: the dictionary is opened on the first Japanese text
(engine/analysis/japanese.py). A folder that is missing gives no analyzer (a Japanese KB then searches
as it always did, and `index` says what to pull); a damaged one gives none either, and says how to repair it.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path

from groove_tui.engine.analysis.japanese import RECIPE, JapaneseAnalyzer
from groove_tui.engine.models.catalog import (
    SUDACHI_DICT,
    ManifestError,
    WheelSource,
    damaged_message,
    find_spec,
    installed_dir,
    pull_command,
    read_manifest,
    repair_advice,
    verify_folder,
)

__all__ = ["JapaneseSetup", "japanese_analyzer", "japanese_hint"]

DICTIONARY_FILE = "system.dic"
SETTINGS_FILE = "sudachi.json"  # a dictionary built with other connection ids brings its own settings
_SETTING = "Japanese words"


@dataclass(frozen=True, slots=True)
class JapaneseSetup:
    analyzer: JapaneseAnalyzer | None
    problem: str = ""  # one line when the dictionary is pulled but cannot be used ("" = none)


def _sudachipy_version() -> str | None:
    """The installed sudachipy's version: from the name of its dist-info folder on the import path (a
    glob of each entry), else from importlib.metadata, which reads the same record but costs an index
    opened with the dictionary pulled ~25 ms to import and search."""
    prefix, suffix = "sudachipy-", ".dist-info"
    for entry in sys.path:
        with contextlib.suppress(OSError):
            for found in Path(entry or ".").glob(f"{prefix}*{suffix}"):
                return found.name[len(prefix) : -len(suffix)]
    import importlib.metadata

    try:
        return importlib.metadata.version("sudachipy")
    except importlib.metadata.PackageNotFoundError:
        return None


def japanese_analyzer(root: Path | None = None) -> JapaneseSetup:
    """The analyzer of the pulled dictionary, or none with the reason it cannot be used."""
    folder = installed_dir(SUDACHI_DICT, root)
    if folder is None:
        return JapaneseSetup(None)
    try:
        manifest = read_manifest(folder)
        problems = verify_folder(folder, manifest)
    except ManifestError as e:
        return JapaneseSetup(None, f"{_SETTING}: {e}: {repair_advice(folder)}")
    digest = manifest.files.get(DICTIONARY_FILE) if manifest is not None else None
    if not problems and digest is None:
        problems = [f"{DICTIONARY_FILE}: not listed in its manifest"]
    if problems:
        return JapaneseSetup(None, damaged_message(folder, problems, _SETTING, f"the dictionary {SUDACHI_DICT}"))
    assert digest is not None  # a dictionary not listed is a problem above
    version = _sudachipy_version()
    if version is None:
        return JapaneseSetup(
            None,
            f"{_SETTING}: the dictionary {SUDACHI_DICT} is pulled but the sudachipy package is missing: "
            "pip install sudachipy==0.7.0",
        )
    settings = folder / SETTINGS_FILE
    identity = f"sudachipy {version}; {manifest.source if manifest else ''}; {DICTIONARY_FILE} {digest[:16]}; {RECIPE}"
    return JapaneseSetup(
        JapaneseAnalyzer(
            folder / DICTIONARY_FILE,
            identity,
            settings=settings if settings.is_file() else None,
            repair=repair_advice(folder),
        )
    )


def japanese_hint() -> str:
    """One line for a KB with Japanese text and no dictionary: what pulling it adds, and the command."""
    spec = find_spec(SUDACHI_DICT)
    size = f", {spec.source.wheel_size / 1e6:.0f} MB" if spec and isinstance(spec.source, WheelSource) else ""
    return (
        f"hint: the KB has Japanese text: `{pull_command(SUDACHI_DICT)}` (a dictionary{size}) lets full-text "
        f"search match whole Japanese words; the next index adds them"
    )
