"""`--record DIR` on `groove-tui eval` and `groove-tui bench`: one JSON record per run with the date, the
commit, the machine, the exact command and the figures; refused before the run where it cannot go."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groove_tui import __version__, cli
from groove_tui.commands.bench import command as bench_command
from groove_tui.output import records

from helpers import SAMPLE_KB, write_kb

GOLDEN = """\
queries:
  - query: "tokio runtime spawn"
    expected:
      - path: notes/rust/async.md
  - query: "設定ファイル groove.toml"
    expected:
      - path: 日本語/検索.md
"""


@pytest.fixture
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    kb = write_kb(tmp_path / "notes-kb", SAMPLE_KB)
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "idx"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "userdata"))
    monkeypatch.setattr("groove_tui.settings.paths.user_data_dir", lambda: tmp_path / "userdata" / "groove-tui")
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.setattr("groove_tui.settings.paths.user_config_dir", lambda: tmp_path / "userconfig")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(bench_command, "bench_cli_help", lambda runs=5: {"seconds": 0.1, "runs": [0.1]})
    (tmp_path / "golden.yml").write_text(GOLDEN, encoding="utf-8")
    assert cli.main(["index", str(kb), "--model", "hashing-64", "--quiet"]) == 0
    return kb


def _one_record(folder: Path) -> dict:
    files = sorted(folder.glob("*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text(encoding="utf-8"))


def _provenance(rec: dict, argv: list[str]) -> None:
    assert rec["schema"] == records.SCHEMA and rec["version"] == __version__
    assert rec["date"].endswith("Z") and rec["date"] <= rec["finished"]
    assert rec["command"] == "groove-tui " + " ".join(argv)
    machine = rec["machine"]
    assert machine["cores"] >= 1 and machine["python"].count(".") == 2
    assert machine["load_before"] is None or len(machine["load_before"]) == 3
    assert "commit" in rec  # None outside a git checkout, else a short hash


def test_eval_record_holds_the_figures_it_printed_and_its_provenance(kb, tmp_path, capsys):
    argv = [
        "eval",
        str(kb),
        "--model",
        "hashing-64",
        "--golden",
        "golden.yml",
        "--no-history",
        "--format",
        "json",
        "--record",
        str(tmp_path / "results"),
    ]
    capsys.readouterr()
    assert cli.main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    rec = _one_record(tmp_path / "results")
    _provenance(rec, argv)
    assert rec["kind"] == "eval"
    assert rec["figures"]["aggregate"] == printed["aggregate"]
    assert rec["figures"]["fingerprint"] == printed["fingerprint"]
    assert rec["figures"]["misses_by_stage"] == printed["misses_by_stage"]  # where the misses were lost
    assert "per_query" not in rec["figures"]  # the history's business, not a record's
    assert rec["subject"] == {
        "kb": str(kb.resolve()),
        "kb_name": "notes-kb",
        "golden": "golden.yml",
        "model": "hashing-64",
        "legs": "hybrid",
        "embedded_share": None,
        "variant": "hybrid",
    }


def test_records_of_the_same_run_do_not_overwrite_each_other(kb, tmp_path):
    argv = [
        "eval",
        str(kb),
        "--model",
        "hashing-64",
        "--golden",
        "golden.yml",
        "--no-history",
        "--legs",
        "fts",
        "--record",
        str(tmp_path / "results"),
    ]
    assert cli.main(argv) == 0 and cli.main(argv) == 0
    names = {p.name[len("YYYY-MM-DD") :] for p in (tmp_path / "results").glob("*.json")}
    assert names == {"-eval-notes-kb-hashing-64-fts.json", "-eval-notes-kb-hashing-64-fts-2.json"}


def test_record_to_a_named_json_file(kb, tmp_path):
    target = tmp_path / "scifact-hybrid.json"
    assert (
        cli.main(
            [
                "eval",
                str(kb),
                "--model",
                "hashing-64",
                "--golden",
                "golden.yml",
                "--no-history",
                "--record",
                str(target),
            ]
        )
        == 0
    )
    assert json.loads(target.read_text(encoding="utf-8"))["kind"] == "eval"


def test_bench_record_holds_the_whole_result(kb, tmp_path, capsys):
    argv = [
        "bench",
        str(kb),
        "--model",
        "hashing-64",
        "--repeat",
        "1",
        "--format",
        "json",
        "--record",
        str(tmp_path / "results"),
    ]
    capsys.readouterr()
    assert cli.main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    rec = _one_record(tmp_path / "results")
    _provenance(rec, argv)
    assert rec["kind"] == "bench" and rec["subject"]["mode"] == "search"
    assert rec["figures"]["search"]["stages_ms"].keys() == printed["search"]["stages_ms"].keys()
    assert rec["figures"]["targets"].keys() == printed["targets"].keys()


@pytest.mark.parametrize("where", ["inside", "file", "missing-parent"])
def test_a_record_that_cannot_be_written_is_refused_before_the_run(kb, tmp_path, capsys, where):
    target = {
        "inside": str(kb / "results"),
        "file": str(tmp_path / "golden.yml"),
        "missing-parent": str(tmp_path / "no" / "such" / "r.json"),
    }[where]
    capsys.readouterr()
    assert (
        cli.main(
            ["eval", str(kb), "--model", "hashing-64", "--golden", "golden.yml", "--no-history", "--record", target]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--record {target!r} is invalid" in err and "Traceback" not in err
    assert not (kb / "results").exists()


def test_record_with_compare_is_refused(kb, tmp_path, capsys):
    capsys.readouterr()
    assert (
        cli.main(
            [
                "eval",
                str(kb),
                "--model",
                "hashing-64",
                "--golden",
                "golden.yml",
                "--no-history",
                "--compare",
                "mmr=false",
                "mmr=true",
                "--record",
                str(tmp_path / "r"),
            ]
        )
        == 1
    )
    assert "--record is invalid with --compare" in capsys.readouterr().err


def test_version_comes_from_the_package_metadata(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"groove-tui {version('groove-tui')}" == f"groove-tui {__version__}"


def test_an_eval_at_an_embedded_share_records_the_share(kb, tmp_path):
    argv = [
        "eval",
        str(kb),
        "--model",
        "hashing-64",
        "--golden",
        "golden.yml",
        "--embedded-share",
        "0.5",
        "--record",
        str(tmp_path / "results"),
    ]
    assert cli.main(argv) == 0
    rec = _one_record(tmp_path / "results")
    assert rec["command"] == "groove-tui " + " ".join(argv)  # as typed, not the copy it evaluated
    assert rec["subject"]["embedded_share"] == 0.5 and rec["subject"]["variant"] == "hybrid-share0.5"
    assert rec["figures"]["pending_embeddings"] > 0


def test_a_run_from_a_git_checkout_records_its_commit():
    checkout = Path(records.__file__).resolve().parents[2]
    if not (checkout / ".git").exists():
        pytest.skip("installed from a wheel: the version says what ran")
    commit = records.git_commit()
    assert commit is not None and len(commit.removesuffix("-dirty")) == 7


def test_a_records_variant_names_its_settings_file_and_fusion(kb, tmp_path):
    """A measured variation keeps its settings in a file of its own: the record's variant (and file
    name) says which, and an explicit --fusion, so the tables can tell the runs apart."""
    settings = tmp_path / "no-word-leg.toml"
    settings.write_text("[search]\nword_leg = false\n", encoding="utf-8")
    argv = ["eval", str(kb), "--model", "hashing-64", "--golden", "golden.yml", "--legs", "fts"]
    argv += ["--config", str(settings), "--fusion", "rrf", "--record", str(tmp_path / "results")]
    assert cli.main(argv) == 0
    rec = _one_record(tmp_path / "results")
    assert rec["subject"]["variant"] == "fts-fusion-rrf-no-word-leg"
    assert next((tmp_path / "results").glob("*.json")).name.endswith("-fts-fusion-rrf-no-word-leg.json")


def test_a_record_says_when_the_index_cut_its_japanese_into_words(japanese_dictionary, tmp_path, monkeypatch):
    """Whether the Japanese dictionary was pulled when the index was built changes how Japanese ranks,
    and nothing on the eval's command line says so: the record reads it from the index, and only where
    the KB holds Japanese (an English KB's word table is the same with or without the dictionary)."""
    monkeypatch.chdir(tmp_path)
    golden = tmp_path / "golden.yml"
    golden.write_text('queries:\n  - query: "引越し"\n    expected:\n      - path: move.md\n', encoding="utf-8")
    japanese = write_kb(tmp_path / "ja", {"move.md": "# 引越し\n\nユーザの引越しは手続きが要ります。\n"})
    english = write_kb(tmp_path / "en", {"setup.md": "# Setup\n\nThe setup guide.\n"})
    for kb, variant in ((japanese, "fts-japanese-words"), (english, "fts")):
        idx, out = tmp_path / f"idx-{kb.name}", tmp_path / f"results-{kb.name}"
        common = [str(kb), "--model", "hashing-64", "--index-dir", str(idx)]
        assert cli.main(["index", *common, "--quiet"]) == 0
        argv = ["eval", *common, "--golden", str(golden), "--legs", "fts", "--no-history", "--record", str(out)]
        assert cli.main(argv) == 0
        rec = _one_record(out)
        assert rec["subject"]["variant"] == variant, kb.name
        identity = rec["figures"]["fingerprint"].get("japanese_words")
        assert (identity is not None and "C-normalized" in identity) == (kb is japanese)
        assert rec["figures"]["fingerprint"]["word_leg"] is True


def test_a_record_says_when_the_index_reads_another_share_of_a_passage(tmp_path, monkeypatch):
    """What the vectors read of a passage is the index's, set when it was built: the fingerprint holds it,
    and the record's variant names it where it is not the model's own choice."""
    import shutil

    from tinymodels import build_tiny_embedder

    monkeypatch.chdir(tmp_path)
    models = tmp_path / "models"
    shutil.copytree(build_tiny_embedder(tmp_path / "tiny", dim=32), models / "bge-small-en")
    (models / "bge-small-en" / "groove-model.json").write_text('{"name": "bge-small-en", "pooling": "cls"}')
    monkeypatch.setenv("GROOVE_TUI_MODEL_DIR", str(models))
    kb = write_kb(tmp_path / "kb", {"setup.md": "# Setup\n\nThe setup guide for the tokio runtime.\n"})
    golden = tmp_path / "golden.yml"
    golden.write_text('queries:\n  - query: "setup"\n    expected:\n      - path: setup.md\n', encoding="utf-8")
    whole = tmp_path / "whole.toml"
    whole.write_text("[embedding]\nmax_tokens = 0\n", encoding="utf-8")
    runs = (("own", [], "vector", 256), ("whole", ["--config", str(whole)], "vector-tokens-all", None))
    for name, settings, variant, tokens in runs:
        idx, out = tmp_path / f"idx-{name}", tmp_path / f"results-{name}"
        common = [str(kb), "--model", "bge-small-en", "--index-dir", str(idx)]
        assert cli.main(["index", *common, *settings, "--quiet"]) == 0
        argv = ["eval", *common, "--golden", str(golden), "--legs", "vector", "--no-history", "--record", str(out)]
        assert cli.main(argv) == 0
        rec = _one_record(out)
        assert rec["subject"]["variant"] == variant
        assert rec["figures"]["fingerprint"].get("passage_tokens") == tokens
