"""KB builders and configs for tests: every KB a test needs is built in a tmp dir (nothing from ../shared)."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from groove_tui.settings.config import Config, EmbeddingConfig


def hashing_config(**changes) -> Config:
    """A Config whose embedder is the deterministic hashing one (unit tests only)."""
    return replace(Config(), embedding=EmbeddingConfig(model="hashing-64"), **changes)


def write_kb(root: Path, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text, encoding="utf-8")
    return root


SAMPLE_KB = {
    "notes/rust/async.md": (
        "---\ntitle: Async Rust\ntags: [rust, async]\ndate: 2026-03-01\n---\n\n"
        "Intro to async programming in Rust with tokio and futures, covering the basics.\n\n"
        "## Tokio runtime\n\nThe tokio runtime schedules tasks; "
        "use tokio::spawn for async work that runs concurrently.\n\n"
        "## Pinning\n\nPin guarantees an object will not move in memory, which self-referential futures require.\n"
    ),
    "notes/python/sqlite.md": (
        "---\ntitle: SQLite from Python\ntags: [python, sqlite]\ndate: 2026-01-15\n---\n\n"
        "## FTS5\n\nFTS5 is SQLite's full-text search extension; the trigram tokenizer matches substrings.\n\n"
        "## sqlite-vec\n\nsqlite-vec adds vector search with vec0 virtual tables and KNN queries by distance.\n"
    ),
    "日本語/検索.md": (
        "---\ntitle: 検索の設計\ntags: [japanese]\n---\n\n"
        "## 再ランキング\n\n再ランキングの評価について説明します。"
        "クロスエンコーダで候補を並べ替えるとランキングの品質が上がります。\n\n"
        "## 設定\n\n東京の設定ファイルは groove.toml です。設定を変えると検索結果が変わります。\n"
    ),
    "index.md": "# Home\n\nThis knowledge base holds notes about Rust, Python and search engines in general.\n",
}


# Common words (match most rows), rarer ones, words that contain each other (trigram substrings), text
# the fold must get right (case, diacritics, ß, İ, Greek final sigma, combining marks), self-overlapping
# phrases, and Japanese for the bigram table.
def pruning_kb(root: Path, text: Callable[[random.Random, int], str]) -> Path:
    """150 notes of 1–4 sections of `text`'s words, some tagged and dated (for filters), every tenth also
    copied whole under copy/ (exact ties): the KB the pruning tests compare pruned and plain searches on."""
    rng = random.Random(11)
    files: dict[str, str | bytes] = {}
    for i in range(150):
        tags = rng.sample(["a", "b", "c"], rng.randint(0, 2))
        front = f"---\ntags: [{', '.join(tags)}]\ndate: 2026-0{1 + i % 9}-01\n---\n" if tags else ""
        sections = "\n\n".join(
            f"## {text(rng, 2)}\n\n{text(rng, rng.randint(5, 60))}" for _ in range(rng.randint(1, 4))
        )
        body = front + f"# {text(rng, 2)}\n\n{sections}\n"
        files[f"{'sub/' if i % 3 else ''}n{i:03}.md"] = body
        if i % 10 == 0:
            files[f"copy/n{i:03}.md"] = body
    return write_kb(root, files)


def with_and_without_pruning(
    kb: Path, config: Config, index_dir: Path, queries: Sequence[str], params: Sequence, hit: Callable
) -> tuple[dict[bool, list], dict[str, int]]:
    """Every query × params answered (each hit as `hit(h)`) with the full-text pruning off and on, on the
    same index, and the pruning's counters from the run with it on."""
    from groove_tui.engine import Engine

    answers: dict[bool, list] = {}
    stats: dict[str, int] = {}
    for pruning in (False, True):
        cfg = replace(config, search=replace(config.search, fulltext_pruning=pruning))
        with Engine.open(kb, config=cfg, index_dir=index_dir) as eng:
            answers[pruning] = [[hit(h) for h in eng.search(q, p).results] for q in queries for p in params]
            if pruning:
                stats = dict(eng._searcher.pruned.stats)
    return answers, stats


FOLD_VOCAB = [
    "the",
    "the",
    "the",
    "and",
    "and",
    "of",
    "with",
    "for",
    "cells",
    "cell",
    "cellular",
    "protein",
    "proteins",
    "expression",
    "express",
    "tokio",
    "runtime",
    "spawn",
    "sqlite",
    "vector",
    "search",
    "trigram",
    "banana",
    "bananas",
    "aaaa",
    "aaa",
    "abab",
    "ababab",
    "Éclair",
    "éclair",
    "ECLAIR",
    "straße",
    "STRASSE",
    "İstanbul",
    "istanbul",
    "σοφός",
    "ΣΟΦΟΣ",
    "café",
    "café",
    "naïve",
    "東京",
    "東京都",
    "設定",
    "設定ファイル",
    "検索",
    "ランキング",
    "評価",
    "の",
    "は",
    "を",
]


# ---------------------------------------------------------------- a tiny Japanese dictionary

FIXTURES = Path(__file__).parent / "fixtures"
TINY_SUDACHI = FIXTURES / "sudachi-tiny"  # lexicon, connection matrix, unknown-word definitions, settings


def install_tiny_dictionary(model_dir: Path) -> Path:
    """Install a Sudachi dictionary of a few dozen words as the pulled `sudachi-core` under `model_dir`:
    built here by SudachiPy's own builder from tests/fixtures/sudachi-tiny, with a manifest listing every
    file's SHA-256, as a pull writes it. Its settings (sudachi.json, unk.def) fit its small connection
    matrix; char.def and rewrite.def are SudachiPy's own."""
    import shutil

    import sudachipy
    from sudachipy import sudachipy as native

    from groove_tui.engine.models.catalog import MANIFEST, SUDACHI_DICT, Manifest, sha256_of

    folder = model_dir / SUDACHI_DICT
    folder.mkdir(parents=True)
    native.build_system_dic(
        matrix=TINY_SUDACHI / "matrix.def", lex=[TINY_SUDACHI / "lex.csv"], output=folder / "system.dic"
    )
    resources = Path(sudachipy.__file__).parent / "resources"
    for name in ("char.def", "rewrite.def"):
        shutil.copyfile(resources / name, folder / name)
    for name in ("unk.def", "sudachi.json"):
        shutil.copyfile(TINY_SUDACHI / name, folder / name)
    files = sorted(p.name for p in folder.iterdir())
    manifest = Manifest(
        name=SUDACHI_DICT,
        kind="analyzer",
        source="tiny test dictionary",
        languages=("ja",),
        files={n: sha256_of(folder / n) for n in files},
        sizes={n: (folder / n).stat().st_size for n in files},
    )
    (folder / MANIFEST).write_text(manifest.to_json() + "\n", encoding="utf-8")
    return folder


def assert_quiet_session(session) -> None:
    """An ONNX Runtime session built with idle workers that sleep: spinning ones would take the cores the
    full-text legs run on while a query is embedded beside them (engine/models/runtime.py)."""
    options = session.get_session_options()
    for key in ("session.intra_op.allow_spinning", "session.inter_op.allow_spinning"):
        assert options.get_session_config_entry(key) == "0", key
