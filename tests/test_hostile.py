"""Hostile knowledge bases: odd files never hang, abort or bloat an indexing run."""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from groove_tui.engine import Engine

from helpers import hashing_config, write_kb

BODY = "## Fine\n\nThis file is perfectly fine and has enough text to be a chunk of its own.\n"


def open_engine(kb: Path, tmp_path: Path, **kw) -> Engine:
    return Engine.open(kb, config=hashing_config(**kw), index_dir=tmp_path / "idx")


def _index_in_thread(eng: Engine):
    """Run eng.index() on a daemon thread; a FIFO that blocks it is released by the caller."""
    out: dict = {}

    def work() -> None:
        try:
            out["report"] = eng.index()
        except BaseException as exc:
            out["error"] = exc

    t = threading.Thread(target=work, daemon=True)
    t.start()
    return t, out


def _release(fifo: Path) -> None:
    """Unblock a reader stuck in open() on the FIFO (a writer opens and closes it)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return  # no reader waiting
    os.close(fd)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_md_is_skipped_not_opened(tmp_path):
    kb = write_kb(tmp_path / "kb", {"good.md": BODY})
    fifo = kb / "pipe.md"
    os.mkfifo(fifo)
    with open_engine(kb, tmp_path) as eng:
        t, out = _index_in_thread(eng)
        t.join(30)  # a hang guard, not a speed claim: a blocked open() never returns on its own
        blocked = t.is_alive()
        _release(fifo)
        t.join(30)
    assert not blocked, "index() blocked on a FIFO"
    report = out["report"]
    assert report.added == 1
    assert [(s.path, s.reason) for s in report.skipped] == [("pipe.md", "not a regular file (a FIFO)")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_file_swapped_for_a_fifo_after_the_check_does_not_block(tmp_path, monkeypatch):
    """The type check and the open are two steps: the open itself must not wait for a writer."""
    from groove_tui.engine.index import walk

    kb = tmp_path / "kb"
    kb.mkdir()
    fifo = kb / "pipe.md"
    os.mkfifo(fifo)
    monkeypatch.setattr(walk, "_is_regular", lambda st: True)  # the pre-check saw a regular file
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("r", walk.read_file(kb, "pipe.md")), daemon=True)
    t.start()
    t.join(30)
    blocked = t.is_alive()
    _release(fifo)
    t.join(30)
    assert not blocked, "open() blocked on a FIFO"
    assert out["r"].reason == "not a regular file (a FIFO)"


@pytest.mark.skipif(os.name == "nt", reason="POSIX byte names")
def test_a_file_name_that_is_not_utf8_is_skipped_and_the_run_goes_on(tmp_path):
    kb = write_kb(tmp_path / "kb", {"a.md": BODY, "z.md": BODY.replace("Fine", "Zed")})
    try:
        (kb / os.fsdecode(b"caf\xe9.md")).write_text(BODY)
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses non-UTF-8 names")
    with open_engine(kb, tmp_path) as eng:
        report = eng.index()  # raised a codec error and stopped the run
        assert report.added == 2 and report.pending_embeddings == 0  # every later file and phase two ran
        assert [s.path for s in report.skipped] == ["caf\\xe9.md"]  # named, escaped visibly
        assert "not valid UTF-8" in report.skipped[0].reason
        assert not eng.needs_index()  # the skipped name does not make every open re-index
        from groove_tui.output.textout import format_index_report

        text = format_index_report(report)
        text.encode("utf-8")  # printable: no lone surrogate reaches the terminal
        assert "caf\\xe9.md" in text


def test_a_five_megabyte_line_is_indexed_in_bounded_chunks_and_printed_bounded(tmp_path):
    from groove_tui.engine.models.embedders import HashingEmbedder
    from groove_tui.output.textout import BODY_MAX_CHARS, format_response

    kb = write_kb(tmp_path / "kb", {"min.md": "## Minified\n\nneedle " + "QUJD" * 1_250_000 + "\n", "good.md": BODY})
    with open_engine(kb, tmp_path) as eng:
        seen: list[int] = []
        embedder = HashingEmbedder(64)
        real = embedder.embed_passages
        embedder.embed_passages = lambda texts: seen.extend(map(len, texts)) or real(texts)
        eng._embedder = embedder
        report = eng.index()
        longest = eng.store.conn().execute("SELECT max(length(CAST(content AS BLOB))) FROM chunks").fetchone()[0]
        assert longest <= eng.config.chunking.max_chunk_bytes  # was one 5 MB chunk
        assert report.pending_embeddings == 0 and max(seen) <= eng.config.chunking.max_chunk_bytes
        resp = eng.search("needle")
        assert resp.results and len(format_response(resp, color=False)) < 10 * BODY_MAX_CHARS


def test_what_models_and_text_output_see_is_bounded_even_without_a_cap(tmp_path):
    """An uncapped index (max_chunk_bytes 0, groove's behaviour) still hands models bounded text."""
    from dataclasses import replace

    from groove_tui.engine.index.indexer import MODEL_INPUT_MAX_CHARS
    from groove_tui.engine.models.embedders import HashingEmbedder
    from groove_tui.output.textout import BODY_MAX_CHARS, format_response
    from groove_tui.settings.config import ChunkingConfig

    kb = write_kb(tmp_path / "kb", {"min.md": "## Minified\n\nneedle " + "QUJD" * 250_000 + "\n"})
    config = replace(hashing_config(), chunking=ChunkingConfig(0))
    with Engine.open(kb, config=config, index_dir=tmp_path / "idx") as eng:
        seen: list[int] = []
        embedder = HashingEmbedder(64)
        real = embedder.embed_passages
        embedder.embed_passages = lambda texts: seen.extend(map(len, texts)) or real(texts)
        eng._embedder = embedder
        eng.index()
        assert seen == [MODEL_INPUT_MAX_CHARS]

        scored: list[int] = []

        class Reranker:
            model_id = "fake"
            languages = ("any",)

            def score(self, query, docs, **_progress_and_cancel):
                scored.extend(map(len, docs))
                return [0.5] * len(docs)

        eng._searcher._get_reranker = lambda name: Reranker()
        resp = eng.search("needle", eng.default_params(reranker="fake"))
        assert scored == [MODEL_INPUT_MAX_CHARS]
        text = format_response(resp, color=False)
        assert len(text) < BODY_MAX_CHARS + 1000 and "more characters; --format json has the whole text" in text
        assert len(resp.results[0].content) > 1_000_000  # the API and JSON keep the whole text


# ---------------------------------------------------------------- options are checked before any write


def test_a_model_typo_with_force_destroys_nothing(tmp_path):
    from dataclasses import replace

    from groove_tui.engine import EngineError
    from groove_tui.settings.config import EmbeddingConfig

    kb = write_kb(tmp_path / "kb", {"a.md": BODY, "b.md": BODY.replace("Fine", "Other")})
    with open_engine(kb, tmp_path) as eng:
        eng.index()
        vectors = eng.store.conn().execute("SELECT count(*) FROM vec_chunks").fetchone()[0]
    typo = replace(hashing_config(), embedding=EmbeddingConfig(model="multilingual-e5-smal"))
    with (
        Engine.open(kb, config=typo, index_dir=tmp_path / "idx", allow_model_change=True) as eng,
        pytest.raises(EngineError, match="unknown embedding model"),
    ):
        eng.index(force=True)
    with open_engine(kb, tmp_path) as eng:  # opens: the recorded model is still the real one
        assert eng.status().model == "hashing-64"
        assert eng.store.conn().execute("SELECT count(*) FROM vec_chunks").fetchone()[0] == vectors > 0
        assert eng.store.counts() == (2, vectors, 0)
        assert eng.search("perfectly fine").results


def test_a_model_typo_on_a_new_index_records_nothing(tmp_path):
    from dataclasses import replace

    from groove_tui.engine import EngineError
    from groove_tui.settings.config import EmbeddingConfig

    kb = write_kb(tmp_path / "kb", {"a.md": BODY})
    typo = replace(hashing_config(), embedding=EmbeddingConfig(model="no-such-model"))
    with Engine.open(kb, config=typo, index_dir=tmp_path / "idx") as eng:
        with pytest.raises(EngineError, match="unknown embedding model"):
            eng.index()
        assert eng.store.get_meta("embedding_model") is None and eng.store.counts()[0] == 0
    with open_engine(kb, tmp_path) as eng:  # the right model then just works
        assert eng.index().added == 1


@pytest.mark.parametrize(
    ("typo", "said"),
    [
        ("hashng", "unknown embedding model 'hashng'"),
        ("hashing-6x", "unknown embedding model 'hashing-6x'"),  # was int()'s "invalid literal for int()"
        ("hashing-99999", "dimension must be in [1, 8192]"),  # dropped every vector, then a traceback
    ],
)
def test_cli_index_force_with_a_model_typo_keeps_the_index(tmp_path, monkeypatch, capsys, typo, said):
    from groove_tui.cli import main

    kb = write_kb(tmp_path / "kb", {"a.md": BODY})
    monkeypatch.setenv("GROOVE_TUI_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.delenv("GROOVE_TUI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["index", str(kb), "--model", "hashing", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["index", str(kb), "--model", typo, "--force", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1
    assert main(["status", str(kb), "--model", "hashing", "--format", "json"]) == 0
    import json

    status = json.loads(capsys.readouterr().out)
    assert status["model"] == "hashing-64" and status["pending_embeddings"] == 0 and status["chunks"] == 1


# ---------------------------------------------------------------- clean errors on the command line


def _commands(kb: Path, index_dir: str) -> list[list[str]]:
    common = ["--index-dir", index_dir, "--model", "hashing"]
    return [
        ["index", str(kb), *common, "--quiet"],
        ["status", str(kb), *common],
        ["search", str(kb), "fine", *common],
        ["eval", str(kb), *common, "--golden", str(kb / "g.yml")],
        ["bench", str(kb), *common, "--repeat", "1"],
        ["sweep", str(kb), *common, "--golden", str(kb / "g.yml"), "--param", "mmr_lambda=0:1:0.5"],
    ]


@pytest.mark.parametrize("bad", ["a-file", "/dev/null", "read-only"])
def test_a_bad_index_dir_is_a_one_line_error_on_every_command(cli, tmp_path, monkeypatch, bad):
    kb = write_kb(tmp_path / "kb", {"a.md": BODY})
    (kb / "g.yml").write_text("queries:\n  - query: fine\n    expected: [a.md]\n")
    if bad == "a-file":
        target = tmp_path / "a-file"
        target.write_text("not a directory")
    elif bad == "read-only":
        target = tmp_path / "ro"
        target.mkdir()
        target.chmod(0o555)
        if os.access(target, os.W_OK):  # root writes anywhere: make the directory refuse as it would
            real_mkdir = Path.mkdir

            def refuse(self, *a, **kw):
                if str(self).startswith(str(target)):
                    raise PermissionError(13, "Permission denied", str(self))
                return real_mkdir(self, *a, **kw)

            monkeypatch.setattr(Path, "mkdir", refuse)
    else:
        target = Path(bad)
    for argv in _commands(kb, str(target)):
        code, _out, err = cli(*argv)  # raised NotADirectoryError / PermissionError with a traceback
        assert code == 1, (argv, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("groove-tui: ") and str(target) in lines[0], (argv, err)
        assert "Traceback" not in err


def test_a_closed_stdout_exits_quietly(tmp_path):
    import subprocess
    import sys

    kb = write_kb(tmp_path / "kb", {f"n{i}.md": BODY.replace("Fine", f"Fine {i}") for i in range(30)})
    env = {**os.environ, "GROOVE_TUI_INDEX_DIR": str(tmp_path / "idx"), "HF_HUB_OFFLINE": "1"}
    run = [sys.executable, "-m", "groove_tui.cli"]
    subprocess.run([*run, "index", str(kb), "--model", "hashing", "--quiet"], env=env, check=True, capture_output=True)
    for fmt in ("text", "json"):
        # `search … | head -0`: the reader is gone before anything is written
        proc = subprocess.Popen(
            [*run, "search", str(kb), "fine", "--model", "hashing", "--limit", "30", "--format", fmt],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        proc.stdout.close()
        err = proc.stderr.read().decode()
        proc.wait()
        assert err == "", err  # no BrokenPipeError traceback, no "Exception ignored"
        assert proc.returncode in (0, 141)


# ---------------------------------------------------------------- odd line endings, NULs, unreadable dirs


def test_lone_cr_line_endings_are_line_endings():
    from groove_tui.engine.index.markdown import parse_markdown

    text = (
        "---\rtitle: Old Mac\rtags: [cr]\r---\r\rIntro text long enough to be a chunk of its own here.\r"
        "## First\rBody of the first section, long enough to stand alone.\r"
        "### Second\rBody of the second section, long enough to stand alone.\r"
    )
    doc = parse_markdown("mac.md", text)
    assert doc.title == "Old Mac" and doc.tags == ("cr",)
    assert [(c.heading, c.level) for c in doc.chunks] == [(None, None), ("First", 2), ("Second", 3)]
    assert all("\r" not in c.content for c in doc.chunks)
    assert [c.line for c in doc.chunks] == [6, 7, 9]
    crlf = parse_markdown("mac.md", text.replace("\r", "\r\n"))  # the same document as CRLF
    assert [(c.heading, c.content, c.line) for c in crlf.chunks] == [(c.heading, c.content, c.line) for c in doc.chunks]


def test_a_nul_anywhere_makes_a_file_binary(tmp_path):
    late_nul = ("## Text\n\n" + "plain words " * 1000).encode() + b"\x00 tail"  # past the first 8 KiB
    kb = write_kb(tmp_path / "kb", {"a.md": BODY, "late.md": late_nul})
    with open_engine(kb, tmp_path) as eng:
        report = eng.index()
        assert [(s.path, s.reason) for s in report.skipped] == [("late.md", "binary content (NUL bytes)")]
        assert eng.store.conn().execute("SELECT count(*) FROM chunks WHERE instr(content, char(0))").fetchone()[0] == 0


def test_unreadable_directories_and_skipped_symlinks_are_reported(tmp_path, monkeypatch):
    kb = write_kb(tmp_path / "kb", {"a.md": BODY, "locked/secret.md": BODY, "open/b.md": BODY})
    outside = write_kb(tmp_path / "outside", {"o.md": BODY})
    os.symlink(outside / "o.md", kb / "link.md")
    os.symlink(outside, kb / "linkdir")
    with open_engine(kb, tmp_path) as eng:
        first = eng.index()
        assert first.added == 3
        assert sorted((s.path, s.reason) for s in first.skipped) == [
            ("link.md", "symbolic link (not followed)"),
            ("linkdir/", "symbolic link to a directory (not followed)"),
        ]
        real_scandir = os.scandir

        def scandir(path="."):  # root reads any directory: simulate EACCES on one
            if os.fspath(path).endswith("locked"):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real_scandir(path)

        monkeypatch.setattr(os, "scandir", scandir)
        (kb / "copy.md").write_text(BODY)  # same bytes as locked/secret.md: must not look like a move
        second = eng.index()
        assert ("locked/", "unreadable directory: Permission denied") in {(s.path, s.reason) for s in second.skipped}
        assert (second.deleted, second.renamed, second.added) == (0, 0, 1)  # kept, as an unreadable file's
        paths = {p for (p,) in eng.store.conn().execute("SELECT path FROM documents")}
        assert "locked/secret.md" in paths


def test_a_note_with_a_second_name_is_not_indexed_as_the_server_does_not_read_it(tmp_path):
    """A hard link (perhaps to a file outside the KB) is skipped with its reason, as a symbolic link is, by a
    whole run and by an update of its path alone; a note indexed before it got a second name is dropped."""
    kb = write_kb(tmp_path / "kb", {"a.md": BODY, "b.md": BODY.replace("Fine", "Other")})
    outside = write_kb(tmp_path / "outside", {"o.md": "# Private\n\nsecret zanzibar words\n"})
    os.link(outside / "o.md", kb / "linked.md")
    os.symlink(outside / "o.md", kb / "symlinked.md")
    with open_engine(kb, tmp_path) as eng:
        first = eng.index()
        assert sorted((s.path, s.reason) for s in first.skipped) == [
            ("linked.md", "a file with more than one name (a hard link): not indexed"),
            ("symlinked.md", "symbolic link (not followed)"),
        ]
        assert first.added == 2 and {h.path for h in eng.search("secret zanzibar").results} <= {"a.md", "b.md"}
        assert not eng.needs_index()  # a skipped link is no change waiting
        os.link(kb / "b.md", outside / "b-elsewhere.md")  # b.md now has a second name
        update = eng.update(["b.md"])
        assert update.deleted == 1
        assert {p for (p,) in eng.store.conn().execute("SELECT path FROM documents")} == {"a.md"}


# ---------------------------------------------------------------- hostile queries


@pytest.fixture(scope="module")
def ja_engine(tmp_path_factory):
    from helpers import SAMPLE_KB

    root = tmp_path_factory.mktemp("ja")
    eng = Engine.open(write_kb(root / "kb", SAMPLE_KB), config=hashing_config(), index_dir=root / "idx")
    eng.index()
    yield eng
    eng.close()


@pytest.mark.parametrize(
    "query", ['"設定\x00ファイル"', '"東京\x00"', '"tokio\x00 runtime"', '設定\x00 -"東京\x00"', "設定 ab\x00cd"]
)
def test_a_nul_in_a_query_never_reaches_sqlite(ja_engine, query):
    resp = ja_engine.search(query)  # "unterminated string" from SQLite before
    assert resp.results  # the phrase with the NUL is dropped (as the trigram side always did), the rest runs
    assert "\x00" not in (resp.query.match_expr or "") + (resp.query.bigram_expr or "")


def test_no_sqlite_text_reaches_a_user(ja_engine):
    """Whatever the query, the engine either answers or raises its own QueryError in its own words."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from groove_tui.engine.analysis.query import QueryError

    alphabet = st.sampled_from(
        [*list("\"-* ()^:\x00\t\n東京設定のはrusttokioAND OR NOT NEAR{}[]+.\\'"), "\u3000", "ー"]
    )

    @settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(alphabet, max_size=24).map("".join))
    def check(query):
        try:
            ja_engine.search(query)
        except QueryError as exc:
            assert "could not run" not in str(exc), (query, str(exc))

    check()


# ---------------------------------------------------------------- parameters, the same on every surface


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"limit": float("inf")}, "limit"),
        ({"limit": float("nan")}, "limit"),
        ({"limit": None}, "limit"),
        ({"limit": -1}, "limit"),
        ({"limit": "10"}, "limit"),
        ({"limit": 2.5}, "limit"),
        ({"limit": True}, "limit"),
        ({"min_quality": float("nan")}, "min_quality"),
        ({"min_quality": float("inf")}, "min_quality"),
        ({"min_quality": -1}, "min_quality"),
        ({"min_quality": 1.5}, "min_quality"),
        ({"min_quality": "0.3"}, "min_quality"),
        ({"min_confidence_ratio": float("nan")}, "min_confidence_ratio"),
        ({"min_confidence_ratio": -0.5}, "min_confidence_ratio"),
        ({"min_confidence_ratio": "1.5"}, "min_confidence_ratio"),
        # were ConfigError / QueryError / FilterError (ValueErrors only), or accepted: mmr="false" read as on
        ({"mmr_lambda": float("nan")}, "mmr_lambda"),
        ({"mmr_lambda": None}, "mmr_lambda"),
        ({"mmr_same_doc_penalty": float("inf")}, "mmr_same_doc_penalty"),
        ({"fusion": "RRF"}, "fusion"),
        ({"legs": "both"}, "legs"),
        ({"path_globs": "*.md"}, "path_globs"),
        ({"date_from": 5}, "date_from"),
        ({"mmr": "false"}, "mmr"),
        ({"parent_retriever": 1}, "parent_retriever"),
        ({"explain": None}, "explain"),
        ({"reranker": 5}, "reranker"),
    ],
)
def test_the_api_refuses_bad_parameters_with_the_engines_own_error(ja_engine, change, named):
    from groove_tui.engine import EngineError, SearchParams

    with pytest.raises(EngineError, match=rf"^{named} = .* is invalid: expected") as err:
        ja_engine.search("tokio", SearchParams(**change))
    assert isinstance(err.value, ValueError)  # callers catching ValueError keep working


def test_the_api_keeps_groove_s_limit_clamp_and_the_none_defaults(ja_engine):
    from groove_tui.engine import SearchParams

    assert len(ja_engine.search("tokio", SearchParams(limit=5000)).results) > 0  # clamped to 1000, like groove
    assert ja_engine.search("tokio", SearchParams(limit=0)).results == ()
    assert ja_engine.search("tokio", SearchParams(min_quality=None, min_confidence_ratio=None)).results
    for off in ("none", "off", ""):  # groove's "none": off, not "reranker unavailable: … check reranker_enabled()"
        resp = ja_engine.search("tokio", SearchParams(reranker=off))
        assert resp.results and not resp.reranked and resp.warnings == () and resp.rerank_skipped is None


@pytest.mark.parametrize(
    ("flag", "value", "allowed"),
    [
        ("--min-quality", "nan", "expected a number in [0, 1]"),
        ("--min-quality", "inf", "expected a number in [0, 1]"),
        ("--min-quality", "-1", "expected a number in [0, 1]"),
        ("--limit", "-1", "expected an integer >= 0"),
        ("--min-confidence-ratio", "nan", "expected a finite number >= 0"),
        ("--lambda", "nan", "expected a number in [0, 1]"),  # was named mmr_lambda, the engine's key
        ("--same-doc-penalty", "2", "expected a number in [0, 1]"),
    ],
)
def test_the_cli_refuses_bad_parameters_with_the_allowed_range(cli, tmp_path, flag, value, allowed):
    kb = write_kb(tmp_path / "kb", {"a.md": BODY})
    common = ["--index-dir", str(tmp_path / "idx"), "--model", "hashing"]
    assert cli("index", str(kb), *common, "--quiet")[0] == 0
    code, out, err = cli("search", str(kb), "fine", *common, flag, value)
    assert code == 1 and out == ""
    assert err.strip() == f"groove-tui: {flag} {value} is invalid: {allowed}"


# ---------------------------------------------------------------- file names cannot spoof output

SPOOF_NAMES = {
    "newline": "evil\nrank: 1  score: 9.9999.md",
    "rlo": "invoice\u202edm.exe.md",
    "c1": "csi\x9b31m.md",
}


@pytest.fixture(scope="module")
def spoof_engine(tmp_path_factory):
    root = tmp_path_factory.mktemp("spoof")
    kb = write_kb(
        root / "kb",
        {name: "## Spoof\n\nspoofing words in a file with a hostile name here.\n" for name in SPOOF_NAMES.values()},
    )
    (kb / "bad-heading.md").write_text("## Head\u202eing\x85x\n\nspoofing words under a hostile heading here.\n")
    eng = Engine.open(kb, config=hashing_config(), index_dir=root / "idx")
    eng.index()
    yield eng
    eng.close()


def test_text_output_shows_hostile_names_escaped(spoof_engine):
    from groove_tui.output.textout import format_response

    resp = spoof_engine.search("spoofing", spoof_engine.default_params(limit=10))
    assert len(resp.results) == 4
    # the page-level banners (low_confidence, filters) are not what this test reads: only the hits
    text = format_response(replace(resp, low_confidence=False, filter_applied={}), color=False)
    heads = [block.split("\n")[1] for block in text.split("\n---\n")]
    assert "evil\\nrank: 1  score: 9.9999.md#Spoof" in heads  # one line, the newline visible
    assert "invoice\\u202edm.exe.md#Spoof" in heads
    assert "csi\\x9b31m.md#Spoof" in heads
    assert "bad-heading.md#Head\\u202eing\\x85x" in heads
    assert not any(ch in text for ch in "\u202e\x9b\x85")
    assert sum(line.startswith("rank: ") for line in text.splitlines()) == 4  # no line forged by a name


def test_json_output_escapes_c1_controls(spoof_engine):
    import json

    resp = spoof_engine.search("spoofing", spoof_engine.default_params(limit=10))
    out = resp.to_json()
    assert "\x9b" not in out and "\x85" not in out and "\\u009b" in out
    assert {r["path"] for r in json.loads(out)["results"]} >= set(SPOOF_NAMES.values())  # still the real names


def test_the_index_report_and_status_show_hostile_names_escaped(tmp_path):
    from groove_tui.output.textout import format_index_report

    kb = write_kb(tmp_path / "kb", {"ok.md": BODY, "bin\n\u202eary\x9b.md": b"\x00binary"})
    with open_engine(kb, tmp_path) as eng:
        text = format_index_report(eng.index())
    assert "skipped  bin\\n\\u202eary\\x9b.md: binary content (NUL bytes)" in text.splitlines()


def test_the_explorer_shows_hostile_names_escaped(spoof_engine):
    from groove_tui.tui.look.explain_render import explain_text
    from groove_tui.tui.look.render import hit_title

    resp = spoof_engine.search("spoofing", spoof_engine.default_params(limit=10, explain=True))
    titles = {hit_title(h).plain for h in resp.results}
    assert "evil\\nrank: 1  score: 9.9999.md › Spoof" in titles
    assert "invoice\\u202edm.exe.md › Spoof" in titles
    assert "csi\\x9b31m.md › Spoof" in titles
    hit = next(h for h in resp.results if h.path == SPOOF_NAMES["rlo"])
    assert "invoice\\u202edm.exe.md" in explain_text(hit, resp.query).plain


def test_the_explorer_palette_shows_hostile_names_escaped(spoof_engine, tmp_path):
    """The command palette names the focused hit's file: escaped too."""
    import asyncio

    from tui.fakes import FakeEngine
    from tui.helpers import SIZE, make_app, search

    from groove_tui.tui.keys.commands import groove_commands

    class Spoofed(FakeEngine):
        def _search(self, query, params, cancel):
            from dataclasses import replace

            resp = spoof_engine.search("spoofing", spoof_engine.default_params(limit=10))
            return replace(resp, results=tuple(h for h in resp.results if h.path == SPOOF_NAMES["newline"]))

    async def run():
        app = make_app(tmp_path, Spoofed())
        async with app.run_test(size=SIZE) as pilot:
            await search(app, pilot, "spoofing")
            return [c.help for c in groove_commands(app, app.screen) if c.title.startswith("hit: ")]

    helps = asyncio.run(run())
    assert helps and not any("\n" in h for h in helps)
    assert any("evil\\nrank: 1  score: 9.9999.md" in h for h in helps)
