"""The headless commands through `groove_tui.cli.main` and, for start-up cost, a real subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest


@pytest.fixture
def cli(kb, cli):
    """The shared runner, with the sample KB written under the scratch directory."""
    return cli


def test_index_json_report_then_status(cli, kb):
    code, out, err = cli("index", str(kb), "--model", "hashing", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    for key in ("added", "updated", "unchanged", "renamed", "deleted", "skipped", "chunks", "seconds"):
        assert key in report
    assert report["added"] == 4
    assert report["embedded"] == report["chunks"] and report["embed_rate"] > 0  # chunks/s of this run
    code, out, _ = cli("status", str(kb), "--model", "hashing", "--format", "json")
    status = json.loads(out)
    assert status["documents"] == 4 and status["model"] == "hashing-64"
    for key in ("chunks", "dim", "index_path", "index_bytes", "last_indexed"):
        assert key in status
    code, out, _ = cli("status", str(kb), "--model", "hashing")
    assert "documents" in out and code == 0


def test_index_text_report_states_the_embedding_rate(cli, kb):
    code, out, err = cli("index", str(kb), "--model", "hashing")
    assert code == 0, err
    assert re.search(r"embedded \d+ this run at [\d,.]+ chunks/s", out)


def test_a_search_loads_the_model_beside_the_full_text_only_when_it_will_embed(cli, kb, tmp_path, monkeypatch):
    import threading

    from groove_tui.engine import Engine

    warmed: list[str] = []
    real = Engine.warm_up

    def warm_up(engine):
        warmed.append(threading.current_thread().name)
        real(engine)

    monkeypatch.setattr(Engine, "warm_up", warm_up)
    cli("index", str(kb), "--model", "hashing", "--quiet", "--no-embed")
    assert cli("search", str(kb), "tokio", "--model", "hashing")[0] == 0
    assert warmed == []  # no vector yet: nothing to embed the query for
    cli("index", str(kb), "--model", "hashing", "--quiet")
    assert cli("search", str(kb), "tokio", "--model", "hashing")[0] == 0
    assert warmed == ["groove-tui-warm-up"]  # on its own thread, joined before the answer is printed
    assert not any(t.name == "groove-tui-warm-up" for t in threading.enumerate())


def test_a_one_shot_search_never_reads_every_vector_into_memory(cli, kb, monkeypatch):
    from groove_tui.engine.retrieve.vector_scan import VectorScan

    asked: list[int] = []
    real = VectorScan.knn
    monkeypatch.setattr(VectorScan, "knn", lambda self, *a, **k: asked.append(1) or real(self, *a, **k))
    cli("index", str(kb), "--model", "hashing", "--quiet")
    code, out, err = cli("search", str(kb), "tokio", "--model", "hashing", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["results"]
    assert asked == []  # sqlite-vec answers: the matrix would only serve a second search


def test_search_json_is_groove_shaped(cli, kb):
    cli("index", str(kb), "--model", "hashing", "--quiet")
    code, out, err = cli("search", str(kb), "tokio runtime", "--model", "hashing", "--format", "json", "--limit", "2")
    assert code == 0, err
    data = json.loads(out)
    assert list(data) == ["results", "low_confidence", "filter_applied"] and len(data["results"]) == 2
    code, out, _ = cli(
        "search",
        str(kb),
        "tokio",
        "--model",
        "hashing",
        "--format",
        "json",
        "--explain",
        "--tag-any",
        "rust",
        "--mmr",
        "--lambda",
        "0.5",
        "--parent",
    )
    data = json.loads(out)
    assert data["filter_applied"] == {"tags_any": ["rust"]}
    assert data["explain"]["query"]["match_expr"] == '"tokio"'
    assert all("expanded_from" in r for r in data["results"])


def test_search_text_is_plain_when_piped_and_sanitised(cli, kb):
    (kb / "evil.md").write_text("## Evil\n\nDanger \x1b[31mred\x1b[0m and a bell \x07 inside evil terminal text.\n")
    cli("index", str(kb), "--model", "hashing", "--quiet")
    code, out, _ = cli("search", str(kb), "evil terminal", "--model", "hashing", "--explain")
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out and "\ufffd[31mred" in out
    assert "compiled:" in out and "rank: 1" in out


def test_search_explain_text_names_the_fusion_and_each_legs_scale(cli, kb):
    cli("index", str(kb), "--model", "hashing", "--quiet")
    _, out, _ = cli("search", str(kb), "tokio runtime", "--model", "hashing", "--explain", "--min-quality", "0")
    line = next(ln for ln in out.splitlines() if ln.startswith("fusion:"))
    assert re.fullmatch(
        r"fusion:   dbsf — vector cosine \S+ → 0, \S+ → 1; fts bm25 \S+ → 0, \S+ → 1; word bm25 \S+ → 0, \S+ → 1", line
    ), line
    lines = out.splitlines()
    verdict = lines.index(next(ln for ln in lines if ln.startswith("low confidence: ")))
    assert re.fullmatch(
        r"low confidence: (yes \(all three tests hold\)|no \(it takes all three tests\))", lines[verdict]
    )
    assert [ln.split(":")[0] for ln in lines[verdict + 1 : verdict + 4]] == ["  flat", "  under the top", "  near tie"]
    said = "[low_confidence: the first two hits are nearly tied and neither stands out — the first hit may"
    assert (said in out) is lines[verdict].startswith("low confidence: yes")
    _, out, _ = cli("search", str(kb), "tokio runtime", "--model", "hashing", "--explain", "--fusion", "rrf")
    assert "fusion:   rrf\n" in out and "scale" not in out
    assert re.search(r"^low confidence: (yes|no)\n  flat: max/mean \S+ [<≥] 1\.5\n---", out, re.M)
    _, out, _ = cli("search", str(kb), "tokio runtime", "--model", "hashing", "--explain", "--format", "json")
    confidence = json.loads(out)["explain"]["confidence"]
    assert confidence["rule"] == "dbsf" and confidence["low"] is json.loads(out)["low_confidence"]


def test_errors_go_to_stderr_with_nonzero_exit(cli, kb, tmp_path):
    code, out, err = cli("search", str(kb), "tokio", "--model", "hashing")
    assert code == 1 and "has not been indexed" in err and out == ""
    assert f"Run: groove-tui index {kb} " in err and "--model hashing" in err  # the user's own flags
    idx = tmp_path / "an index"
    code, _, err = cli("search", str(kb), "tokio", "--model", "hashing", "--index-dir", str(idx))
    assert code == 1 and f"--index-dir '{idx}'" in err  # not a command that builds an index elsewhere
    cli("index", str(kb), "--model", "hashing", "--quiet")
    code, _, err = cli("search", str(kb), "--model", "hashing", "--", "-tokio")
    assert code == 2 and "only excludes words" in err
    code, _, err = cli("search", str(kb), "tokio", "--model", "hashing", "--lambda", "2")
    assert code == 1 and "--lambda 2 is invalid" in err and "[0, 1]" in err
    code, _, err = cli("search", str(kb), "tokio", "--model", "hashing", "--min-confidence-ratio", "-1")
    assert code == 1 and "--min-confidence-ratio" in err
    code, _, err = cli("search", str(kb), "tokio", "--model", "hashing", "--path-glob", "[")
    assert code == 1 and "[" in err
    code, _, err = cli("status", str(tmp_path / "missing"))
    assert code == 1 and "does not exist" in err
    code, _, err = cli("index", str(kb), "--model", "hashing-32")
    assert code == 1 and "--force" in err and "hashing-64" in err


def test_unavailable_model_fails_fast_with_advice(cli, kb, no_waiting):
    code, _, err = cli("index", str(kb), "--model", "BAAI/bge-small-en-v1.5")
    assert code == 1 and "bge-small-en-v1.5" in err
    assert no_waiting == {"sleep": [], "connect": []}  # no retry, no hub: it gave up at once


def test_help_imports_nothing_heavy():
    """What keeps `--help` fast; the 0.3 s target itself is measured by `groove-tui bench` (cli_help_s)."""
    code = (
        "import sys; from groove_tui.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('numpy', 'textual', 'fastembed', 'sqlean', 'rich') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_reranker_flags_names_and_language_guard(cli, kb, tmp_path):
    from tinymodels import build_tiny_cross_encoder

    ce = build_tiny_cross_encoder(tmp_path / "ce")
    (ce / "groove-model.json").write_text(json.dumps({"languages": ["en"]}))
    assert cli("index", str(kb), "--model", "hashing")[0] == 0
    code, out, err = cli(
        "search",
        str(kb),
        "tokio runtime",
        "--model",
        "hashing",
        "--reranker",
        str(ce),
        "--rerank-pool",
        "5",
        "--format",
        "json",
        "--explain",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["explain"]["reranked"] and "rerank_skipped" not in data
    assert [h["rerank"]["rank"] for h in data["explain"]["hits"]] == list(range(1, len(data["results"]) + 1))
    # a Japanese query is not reranked by an English-only model, and says why
    code, out, err = cli(
        "search", str(kb), "東京の設定", "--model", "hashing", "--reranker", str(ce), "--format", "json"
    )
    assert code == 0 and json.loads(out)["rerank_skipped"].startswith("not reranked: the query uses")
    # a known reranker that is not pulled: the fused results, and the pull command
    code, out, err = cli(
        "search", str(kb), "tokio", "--model", "hashing", "--reranker", "ms-marco-l12", "--format", "json"
    )
    assert code == 0 and json.loads(out)["results"]
    assert "groove-tui models pull ms-marco-l12" in json.loads(out)["rerank_skipped"]
    code, out, err = cli("search", str(kb), "tokio", "--model", "hashing", "--reranker", "ms-marco-l12")
    assert code == 0 and "groove-tui models pull ms-marco-l12" in out
    # the knobs are validated like config values
    code, _, err = cli("search", str(kb), "tokio", "--model", "hashing", "--rerank-pool", "0")
    assert code == 1 and "--rerank-pool = 0 is invalid: expected an integer in [1, 1000]" in err
    code, _, err = cli("eval", str(kb), "--model", "hashing", "--rerank-max-tokens", "9999", "--golden", "x.yml")
    assert code == 1 and "--rerank-max-tokens" in err


def test_a_model_mismatch_offers_both_ways_with_the_users_own_flags(cli, kb, tmp_path):
    idx = tmp_path / "my index"
    assert cli("index", str(kb), "--model", "hashing-64", "--index-dir", str(idx))[0] == 0
    code, _, err = cli("search", str(kb), "tokio", "--model", "hashing-32", "--index-dir", str(idx))
    assert code == 1 and err.count("\n") == 1
    assert "built with the embedding model 'hashing-64', not 'hashing-32'" in err
    assert "Keep the index's model: drop --model hashing-32" in err
    assert f"groove-tui index {kb} --index-dir '{idx}' --force --model hashing-32" in err
    # without --model the index decides: no mismatch at all
    assert cli("search", str(kb), "tokio", "--index-dir", str(idx))[0] == 0


# ---------------------------------------------------------------- typos and queries with nothing to find


@pytest.fixture
def run_cli(cli):
    """The shared runner, with no KB written: a directory named like a command must not exist here."""
    return cli


def test_a_mistyped_command_is_named_with_a_suggestion(run_cli):
    code, out, err = run_cli("serach", "docs", "foo")
    assert code == 2 and out == ""
    assert err.strip() == "groove-tui: unknown command 'serach' — did you mean 'search'?"
    code, _, err = run_cli("stauts", "kb")
    assert code == 2 and "did you mean 'status'?" in err


def test_an_existing_directory_named_like_a_typo_is_still_a_kb(run_cli, tmp_path):
    (tmp_path / "serach").mkdir()
    code, _, err = run_cli("serach", "--limt")  # opens the KB; the flag is what is wrong
    assert code == 2 and "unknown command" not in err and "did you mean '--limit'" not in err
    code, _, err = run_cli("notes")  # no directory and close to no command: the KB error as before
    assert code == 1 and "knowledge base 'notes' is not a directory" in err


def test_a_mistyped_flag_gets_a_suggestion(run_cli, tmp_path):
    code, _, err = run_cli("search", str(tmp_path), "tar", "--limt", "2")
    assert code == 2 and err.strip() == "groove-tui search: unknown option '--limt' — did you mean '--limit'?"
    code, _, err = run_cli("search", str(tmp_path), "--limt=2", "tar")
    assert code == 2 and "did you mean '--limit'?" in err
    code, _, err = run_cli("eval", str(tmp_path), "--goldn", "g.yml")
    assert code == 2 and "did you mean '--golden'?" in err
    code, _, err = run_cli("models", "pul", "x")
    assert code == 2 and "did you mean 'pull'?" in err


def test_a_query_starting_with_a_hyphen_is_told_how_to_pass_it(run_cli, tmp_path):
    code, _, err = run_cli("search", str(tmp_path), "-foo")
    assert code == 2 and "groove-tui search KB -- '-word'" in err and "did you mean" not in err


@pytest.mark.parametrize("query", ["", "   ", "\t", "-", '"', '""', ' - "" '])
def test_an_empty_query_is_refused(run_cli, tmp_path, query):
    """Nothing but the syntax's marks is as empty: it would leave the vector leg alone with arbitrary
    neighbours."""
    code, out, err = run_cli("search", str(tmp_path), query)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "the query is empty" in err and "no results" not in err


@pytest.mark.parametrize("query", ["-foo", "-foo -bar", ' -"two words"'])
def test_a_query_of_exclusions_only_is_refused(run_cli, tmp_path, query):
    code, out, err = run_cli("search", str(tmp_path), "--", query)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "only excludes" in err and "nothing positive to search for" in err


def test_a_phrase_that_only_excludes_is_shown_how_to_search_for_it_literally(run_cli, tmp_path):
    code, _, err = run_cli("search", str(tmp_path), "--", '-"a phrase"')
    assert code == 2 and "only excludes" in err
    assert "add a word to find ('word -\"a phrase\"')" in err
    assert "('\"-a phrase\"') to search for it literally" in err
    code, _, err = run_cli("search", str(tmp_path), "--", "-foo -bar")
    assert "('word -foo -bar')" in err and "('\"-foo\"') to search for it literally" in err


def test_the_dropped_phrases_warning_is_said_once(tmp_path):
    """Checked, then searched: the query is parsed twice, its warning logged once, then shown in the
    response (stdout) as well."""
    import os
    import subprocess
    import sys

    from helpers import write_kb

    kb = write_kb(tmp_path / "kb", {"a.md": "# A\n\nword1 word2\n"})
    index = [sys.executable, "-m", "groove_tui.cli", "index", str(kb), "--model", "hashing", "--quiet"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GROOVE_TUI_INDEX_DIR": str(tmp_path / "idx")}
    subprocess.run(index, check=True, env=env, capture_output=True)
    query = " ".join(f"word{i}" for i in range(40))
    search = [sys.executable, "-m", "groove_tui.cli", "search", str(kb), query, "--model", "hashing"]
    done = subprocess.run(search, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("more than 32 distinct phrases") == 1, done.stderr
    assert done.stdout.count("more than 32 distinct phrases") == 1


# ---------------------------------------------------------------- the title a person reads


def test_text_output_titles_a_note_by_the_h1_it_opens_with(run_cli, tmp_path):
    from helpers import write_kb

    kb = write_kb(
        tmp_path / "notes",
        {
            "tar.md": "# tar\n\nArchiving utility, often with gzip compression for quokka files.\n\n"
            "## Extract\n\nExtract a quokka archive into the current directory with xf flags.\n",
            "titled.md": (
                "---\ntitle: From frontmatter\n---\n# Not this\n\nQuokka facts, one title from the frontmatter.\n"
            ),
            "plain.md": "Quokka without any heading at all, a plain paragraph of text here.\n",
        },
    )
    assert run_cli("index", str(kb), "--model", "hashing", "--quiet")[0] == 0
    code, out, err = run_cli("search", str(kb), "quokka", "--model", "hashing", "--limit", "10")
    assert code == 0, err
    titles = {}
    for block in out.split("\n---\n"):
        lines = block.splitlines()
        if len(lines) > 2 and lines[2].startswith("rank: "):  # a hit, not the banner block
            titles.setdefault(lines[1], lines[0])  # path#heading -> the title line
    assert titles["tar.md"] == "# tar"
    assert titles["tar.md#Extract"] == "# tar"  # a later section: its note's H1
    assert titles["titled.md"] == "# From frontmatter"
    assert titles["plain.md"] == "# (no title)"
    code, out, _ = run_cli("search", str(kb), "quokka", "--model", "hashing", "--format", "json")
    by_path = {r["path"]: r["title"] for r in json.loads(out)["results"]}
    assert by_path["tar.md"] is None and by_path["titled.md"] == "From frontmatter"  # groove's title


def test_h1_title_reads_atx_level_one_only():
    from groove_tui.output.textout import h1_title

    assert h1_title("\n\n# Tokio notes #\nbody") == "Tokio notes"
    assert h1_title("   #  spaced  ") == "spaced"
    for text in ("## Section\n", "#hashtag line", "body first\n# later", "#", "", None):
        assert h1_title(text) is None, text
