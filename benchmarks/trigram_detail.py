"""What the trigram table would weigh without its positions, and why it keeps them: the chunks of a fresh
index of a KB written into trigram tables at FTS5's three `detail` levels (full, column, none), each
merged into one b-tree, and the golden file's queries, compiled as search compiles them (every word a
phrase), run against each.

FTS5 answers a phrase of several tokens only from positions (`detail=full`); a word of four or more
characters is such a phrase of trigrams. The record gives each table's size against the text it indexes
and how many queries each level answers, with the error of the first it refuses.

    .venv/bin/python benchmarks/trigram_detail.py --kb KB --queries golden.yml [--record benchmarks/results]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import sqlean

from groove_tui.commands.bench.indexing import copy_subset, index_sizes
from groove_tui.output import records

MODEL = "hashing-384"
DETAILS = ("full", "column", "none")


def table_bytes(conn: sqlean.Connection) -> int:
    """The database's pages in use, after a VACUUM (only the table is in it)."""
    conn.execute("VACUUM")
    pages, size = conn.execute("PRAGMA page_count").fetchone()[0], conn.execute("PRAGMA page_size").fetchone()[0]
    return int(pages * size)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", required=True, type=Path)
    ap.add_argument("--queries", required=True, type=Path, help="a golden file: its queries are run")
    ap.add_argument("--record", default=None, metavar="DIR", help="write a measurement record into DIR")
    args = ap.parse_args()
    recording = records.begin(args.record, "bench", sys.argv[1:], program="python benchmarks/trigram_detail.py")

    from groove_tui.engine import Engine
    from groove_tui.engine.analysis.query import QueryError, parse_query
    from groove_tui.engine.evaluate.golden import load_golden
    from groove_tui.engine.index.store import FTS_DDL
    from groove_tui.settings.config import Config, EmbeddingConfig

    config = replace(Config(), embedding=EmbeddingConfig(model=MODEL))
    expressions = []
    for q in load_golden(args.queries).queries:
        try:
            expr = parse_query(q.query).match_expr
        except QueryError:
            continue
        if expr:
            expressions.append(expr)
    result: dict = {"model": MODEL, "queries": len(expressions), "levels": {}}
    with tempfile.TemporaryDirectory(prefix="groove-tui-detail-") as tmp:
        root = Path(tmp)
        copy_subset(args.kb.expanduser(), root / "kb", None, config.exclude_dirs)
        with Engine.open(root / "kb", config=config, index_dir=root / "idx") as eng:
            eng.index(embed=False)
            sizes = index_sizes(eng)
            rows = eng.store.conn().execute("SELECT id, heading, context_text, content FROM chunks").fetchall()
        text = sizes["text_bytes"]
        result.update(chunks=len(rows), text_bytes=text, index=sizes)
        for detail in DETAILS:
            conn = sqlean.connect(str(root / f"{detail}.db"), isolation_level=None)
            conn.execute(FTS_DDL.replace("content='',", f"content='', detail={detail},"))
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO fts_chunks(rowid, heading, context, content) VALUES (?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
            conn.execute("INSERT INTO fts_chunks(fts_chunks) VALUES ('optimize')")
            answered, refused, first_error = 0, 0, None
            for expr in expressions:
                try:
                    conn.execute("SELECT count(*) FROM fts_chunks WHERE fts_chunks MATCH ?", (expr,)).fetchone()
                    answered += 1
                except sqlean.Error as exc:
                    refused += 1
                    first_error = first_error or str(exc)
            size = table_bytes(conn)
            conn.close()
            index_bytes = sizes["without_vectors"] - sizes["bytes"]["trigram"] + size  # with this table in it
            result["levels"][detail] = {
                "bytes": size,
                "ratio_to_text": round(size / text, 2),
                "index_bytes_without_vectors": index_bytes,
                "index_ratio_to_text": round(index_bytes / text, 2),
                "answered": answered,
                "refused": refused,
                "first_error": first_error,
            }
            print(
                f"detail={detail}: {size / 1e6:.1f} MB ({size / text:.2f}× text), the index {index_bytes / text:.2f}× "
                f"text; {answered} queries answered, {refused} refused",
                file=sys.stderr,
            )
    if recording is not None:
        kb = args.kb.expanduser().resolve()
        recording.write(
            result,
            what="bench: the trigram table at each FTS5 detail level",
            subject={
                "kb": str(kb),
                "kb_name": kb.parent.name if kb.name == "kb" else kb.name,
                "golden": args.queries.name,
                "model": MODEL,
                "mode": "trigram-detail",
                "variant": "trigram-detail",
            },
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
