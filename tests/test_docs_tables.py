"""The docs' reference tables are generated from the measurement records in benchmarks/results: a table
that disagrees with its records fails here, and so does a record without its provenance. Only files of
the repository are read (no evaluation sets, nothing downloaded)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOCS = ROOT / "docs"


def _renderer():
    spec = importlib.util.spec_from_file_location("render_tables", ROOT / "benchmarks" / "render_tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


render_tables = _renderer()


@pytest.fixture
def copy(tmp_path: Path) -> tuple[Path, Path]:
    docs, results = tmp_path / "docs", tmp_path / "results"
    shutil.copytree(DOCS, docs)
    shutil.copytree(RESULTS, results)
    return docs, results


def test_every_table_in_the_docs_matches_its_records():
    assert render_tables.check(DOCS, RESULTS) == []


def test_a_figure_changed_in_a_record_fails_the_check(copy):
    docs, results = copy
    # the record the reference table's scifact hybrid row reads (four other tables read it too)
    name, record = render_tables.Records(results).get(render_tables.Want("eval", "scifact", "bge-small-en", "hybrid"))
    record["figures"]["aggregate"]["ndcg_at_k"]["10"] -= 0.01
    (results / name).write_text(json.dumps(record), encoding="utf-8")
    assert render_tables.check(docs, results) == [
        "evaluation.md: table 'eval-reference' differs from its records",
        "evaluation.md: table 'hybrid-against-legs' differs from its records",
        "evaluation.md: table 'word-leg' differs from its records",
        "evaluation.md: table 'legs-alone' differs from its records",
        "performance.md: table 'embedder-reading' differs from its records",
    ]


def test_a_table_edited_by_hand_fails_the_check_and_rendering_restores_it(copy):
    docs, results = copy
    page = docs / "performance.md"
    text = page.read_text(encoding="utf-8")
    start = text.index("<!-- records:readers -->")
    edited = text[:start] + text[start:].replace(" | 0 |", " | 1 |", 1)
    assert edited != text
    page.write_text(edited, encoding="utf-8")
    assert render_tables.check(docs, results) == ["performance.md: table 'readers' differs from its records"]
    assert render_tables.write(docs, results) == [page]
    assert page.read_text(encoding="utf-8") == text and render_tables.check(docs, results) == []


def test_a_newer_record_replaces_the_row_it_measures_again(copy):
    docs, results = copy
    record = next(
        r
        for r in (json.loads(p.read_text(encoding="utf-8")) for p in results.glob("*-eval-jsquad-*-int8-fts*.json"))
        if r["subject"]["variant"] == "fts"  # the default pipeline's, not a labelled variant's
    )
    record["date"] = "2999-01-01T00:00:00Z"
    record["figures"]["aggregate"]["mrr"] = 0.123456
    (results / "2999-01-01-eval-jsquad-multilingual-e5-small-int8-fts.json").write_text(
        json.dumps(record), encoding="utf-8"
    )
    assert sorted(render_tables.check(docs, results)) == [  # the tables that show jsquad's full text alone
        "evaluation.md: table 'eval-reference' differs from its records",
        "evaluation.md: table 'hybrid-against-legs' differs from its records",
        "evaluation.md: table 'japanese-words' differs from its records",
    ]
    render_tables.write(docs, results)
    text = (docs / "evaluation.md").read_text(encoding="utf-8")
    assert "| .1235 |" in text and "2999-01-01-eval-jsquad" in text


def test_a_table_whose_record_is_missing_is_an_error(copy):
    docs, results = copy
    for path in results.glob("*-bench-scifact-use-multilingual-readers*.json"):
        path.unlink()
    with pytest.raises(render_tables.MissingRecord, match="readers"):
        render_tables.check(docs, results)


def test_every_record_says_when_where_and_how_it_was_measured():
    files = sorted(RESULTS.iterdir())
    assert files and all(f.suffix == ".json" for f in files), "benchmarks/results holds only records"
    for path in files:
        record = json.loads(path.read_text(encoding="utf-8"))
        where = path.name
        assert record["schema"] == 1, where
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", record["date"]), where
        assert path.name.startswith(record["date"][:10]), where
        assert record["commit"] or record["version"], where
        assert record["machine"]["cores"] >= 1 and record["machine"]["load_before"], where
        assert record["command"].startswith(("groove-tui ", "python ", "OMP_NUM_THREADS")), where
        assert record["figures"], where


def test_the_docs_link_only_records_that_exist_and_show_no_machine_paths():
    for page in [*DOCS.glob("*.md"), ROOT / "README.md"]:
        text = page.read_text(encoding="utf-8")
        for link in re.findall(r"\(\.\./benchmarks/results/([^)]+)\)", text):
            assert (RESULTS / link).is_file(), f"{page.name} links {link}"
        assert not re.search(r"/work/|/tmp/|shared/data|/root/", text), page.name


def test_the_docs_speak_of_the_product_not_of_its_history():
    pattern = re.compile(
        r"\bissues?\b|\bsessions?\b|\bpreviously\b|\bnow we\b|\bused to\b"
        r"|DESIGN\.md|MODELS\.md|(?<!\w)#\d+\b",
        re.IGNORECASE,
    )
    for page in [*DOCS.glob("*.md"), ROOT / "README.md", ROOT / "CHANGELOG.md"]:
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            assert not pattern.search(line), f"{page.name}:{n}: {line.strip()}"


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens (code fences skipped)."""
    out, fenced = set(), False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#").strip()
            out.add(re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-"))
    return out


def test_links_between_the_docs_resolve():
    pages = {p.name: p for p in DOCS.glob("*.md")}
    for page in [*pages.values(), ROOT / "README.md"]:
        text = page.read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(([\w./-]*\.md)?(?:#([^)]+))?\)", text):
            if not target and not anchor:
                continue
            dest = (page.parent / target).resolve() if target else page
            assert dest.is_file(), f"{page.name} links {target}"
            if anchor:
                assert anchor in _anchors(dest.read_text(encoding="utf-8")), f"{page.name} links {target}#{anchor}"
