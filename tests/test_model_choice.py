"""The model an index gets when none is named: the English embedder for a KB with no CJK text once it is
pulled (said, recorded, and kept by later runs), a hint when it is not, and a warning when CJK text later
reaches an English-only index. A named model always wins; an index built with one keeps it."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from groove_tui.engine import Engine, SearchParams
from groove_tui.engine.models import embedders
from groove_tui.engine.models.choice import ENGLISH_MODEL
from groove_tui.engine.models.embedders import HashingEmbedder, clear_embedder_cache
from groove_tui.settings.config import Config, EmbeddingConfig, parse_config

from helpers import SAMPLE_KB, write_kb
from tinymodels import build_tiny_embedder

E5 = "multilingual-e5-small-int8"  # the default embedder
# SAMPLE_KB without its Japanese note
ENGLISH_KB = {path: text for path, text in SAMPLE_KB.items() if "検索" not in text}


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A model directory; the default e5 is stood in for by a hashing embedder (its real weights take
    seconds per document and are tested elsewhere)."""
    root = tmp_path / "models"
    root.mkdir()
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(root))
    real = embedders.get_embedder

    def fake(name: str, passage_tokens: int = 0):
        return HashingEmbedder(384) if embedders.describe_model(name) == E5 else real(name, passage_tokens)

    monkeypatch.setattr(embedders, "get_embedder", fake)
    monkeypatch.setattr(embedders, "default_model_name", lambda: E5)
    yield root
    clear_embedder_cache()


def pull_fake_english(root: Path, tmp_path: Path) -> None:
    """A folder laid out as `groove-tui models pull bge-small-en` leaves it (a tiny model inside)."""
    folder = build_tiny_embedder(tmp_path / "tiny", dim=32)
    shutil.copytree(folder, root / ENGLISH_MODEL)
    (root / ENGLISH_MODEL / "groove-model.json").write_text(json.dumps({"name": ENGLISH_MODEL, "pooling": "cls"}))


def open_engine(kb: Path, tmp_path: Path, config: Config | None = None) -> Engine:
    return Engine.open(kb, config=config or Config(), index_dir=tmp_path / "idx")


def test_english_kb_gets_the_pulled_english_model(models, tmp_path: Path) -> None:
    pull_fake_english(models, tmp_path)
    kb = write_kb(tmp_path / "kb", ENGLISH_KB)
    with open_engine(kb, tmp_path) as eng:
        report = eng.index()
        assert eng.model_id == ENGLISH_MODEL and report.pending_embeddings == 0 and report.added == len(ENGLISH_KB)
        assert len(report.notes) == 1 and report.notes[0].startswith(
            f"embedding model {ENGLISH_MODEL}: the KB has no CJK"
        )
        assert eng.status().model == ENGLISH_MODEL and eng.status().dim == 32
        assert eng.search("tokio runtime", SearchParams(limit=3)).results
    # later runs keep it (the index decides), and say nothing more
    with open_engine(kb, tmp_path) as eng:
        assert eng.model_id == ENGLISH_MODEL
        assert eng.index().notes == ()
        # a Japanese document is indexed, and the English-only model is a warning, not a silent loss
        (kb / "ja.md").write_text("# 東京\n\n## 天気\n\n東京の天気は夏に暑く冬に寒いです。\n", encoding="utf-8")
        report = eng.index()
        assert report.added == 1 and len(report.notes) == 2
        assert report.notes[0].startswith("warning: 1 document with CJK text (ja.md) embedded by the English-only")
        assert f"--model {E5} --force" in report.notes[0]
        assert "groove-tui models pull sudachi-core" in report.notes[1]  # the full text's Japanese words


def test_english_kb_without_the_model_gets_a_hint_and_e5(models, tmp_path: Path) -> None:
    kb = write_kb(tmp_path / "kb", ENGLISH_KB)
    with open_engine(kb, tmp_path) as eng:
        report = eng.index()
        assert eng.model_id == E5 and eng.status().model == E5
        assert report.notes == (report.notes[0],) and report.notes[0].startswith("hint: the KB has no CJK text")
        assert f"groove-tui models pull {ENGLISH_MODEL}" in report.notes[0]
        assert eng.index().notes == ()  # said once, at the fresh build


def test_a_kb_with_cjk_text_keeps_e5(models, tmp_path: Path) -> None:
    pull_fake_english(models, tmp_path)
    kb = write_kb(tmp_path / "kb", SAMPLE_KB)
    with open_engine(kb, tmp_path) as eng:
        report = eng.index()
        assert eng.model_id == E5 and [n for n in report.notes if "sudachi-core" not in n] == []


def test_a_named_model_always_wins(models, tmp_path: Path) -> None:
    pull_fake_english(models, tmp_path)
    kb = write_kb(tmp_path / "kb", ENGLISH_KB)
    named = parse_config({"embedding": {"model": E5}})  # named in groove.toml, even as the default
    assert named.embedding.explicit and not named.embedding.is_default
    with open_engine(kb, tmp_path, named) as eng:
        assert eng.index().notes == () and eng.model_id == E5
    # and an index built with one model is opened with it when none is named
    with open_engine(kb, tmp_path) as eng:
        assert eng.model_id == E5


def test_the_index_decides_the_model_when_none_is_named(models, tmp_path: Path) -> None:
    kb = write_kb(tmp_path / "kb", ENGLISH_KB)
    with open_engine(kb, tmp_path, replace(Config(), embedding=EmbeddingConfig(model="hashing-48"))) as eng:
        eng.index()
    with open_engine(kb, tmp_path) as eng:  # no model named: the one the index was built with
        assert eng.model_id == "hashing-48" and eng.search("tokio", SearchParams(limit=2)).results
    from groove_tui.engine import ModelMismatch

    with pytest.raises(ModelMismatch):  # a named model that differs is still an error, not a silent switch
        open_engine(kb, tmp_path, replace(Config(), embedding=EmbeddingConfig(model="hashing-32")))


def test_the_english_model_reads_its_own_share_of_a_passage_and_the_index_keeps_what_it_read(
    models, tmp_path: Path
) -> None:
    pull_fake_english(models, tmp_path)
    kb = write_kb(tmp_path / "kb", ENGLISH_KB)
    with open_engine(kb, tmp_path) as eng:
        eng.index()
        assert eng.status().passage_tokens == 256  # the catalog's choice for bge-small-en
        assert eng.embedder()._load()[0].truncation["max_length"] == 128  # the tiny model's own limit is lower
    # a changed setting does not mix vectors: the index keeps what it read, and says how to change it
    eight = parse_config({"embedding": {"model": ENGLISH_MODEL, "max_tokens": 8}})
    with open_engine(kb, tmp_path, eight) as eng:
        (kb / "new.md").write_text("# New\n\nA note written later.\n", encoding="utf-8")
        report = eng.index()
        assert eng.status().passage_tokens == 256 and eng.embedder()._load()[0].truncation["max_length"] == 128
        assert report.notes == (
            "[embedding] max_tokens = 8 applies when the index is rebuilt (index --force): its vectors read the "
            "first 256 tokens of each passage",
        )
        eng.index(force=True)
        assert eng.status().passage_tokens == 8 and eng.embedder()._load()[0].truncation["max_length"] == 8
    with open_engine(kb, tmp_path) as eng:  # no setting: the index's number
        assert eng.status().passage_tokens == 8


def test_an_index_embedded_before_the_limit_was_recorded_read_whole_passages(models, tmp_path: Path) -> None:
    pull_fake_english(models, tmp_path)
    kb = write_kb(tmp_path / "kb", ENGLISH_KB)
    eight = parse_config({"embedding": {"model": ENGLISH_MODEL, "max_tokens": 8}})
    with open_engine(kb, tmp_path, eight) as eng:
        eng.index()
        with eng.store.transaction() as conn:
            conn.execute("DELETE FROM index_meta WHERE key = 'passage_tokens'")
    with open_engine(kb, tmp_path) as eng:
        assert eng.status().passage_tokens == 0
        assert eng.embedder()._load()[0].truncation["max_length"] == 128  # the tiny model's own limit
        (kb / "new.md").write_text("# New\n\nA note written later.\n", encoding="utf-8")
        eng.index()
        assert eng.store.get_meta("passage_tokens") == "0"


def test_a_limit_on_a_model_that_counts_no_tokens_is_said_not_to_apply(tmp_path: Path) -> None:
    kb = write_kb(tmp_path / "kb", ENGLISH_KB)
    config = parse_config({"embedding": {"model": "hashing-64", "max_tokens": 100}})
    with open_engine(kb, tmp_path, config) as eng:
        assert eng.index().notes == ("[embedding] max_tokens does not apply to hashing-64: it reads whole passages",)
        assert eng.status().passage_tokens == 0
