"""Phase one (full text, no embeddings) into a fresh index: wall and CPU time, and table sizes.

    PYTHONPATH=<checkout> python benchmarks/phase1.py KB OUTDIR

Run it alternately with two checkouts on PYTHONPATH to compare them (docs/performance.md, "Bigram side
index"). OUTDIR is deleted first; the KB is only read.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import groove_tui  # noqa: E402
from groove_tui.settings.config import Config, EmbeddingConfig  # noqa: E402
from groove_tui.engine import Engine  # noqa: E402


def main(kb: str, out: str) -> None:
    shutil.rmtree(out, ignore_errors=True)
    engine = Engine.open(kb, config=replace(Config(), embedding=EmbeddingConfig(model="hashing-384")), index_dir=out)
    cpu = time.process_time()
    report = engine.index(embed=False)
    cpu = time.process_time() - cpu
    conn = engine.store.conn()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    sizes = dict(
        conn.execute(
            "SELECT CASE WHEN name LIKE 'fts_bigram%' THEN 'bigram' WHEN name LIKE 'fts_chunks%' THEN 'trigram' "
            "ELSE 'other' END, sum(pgsize) FROM dbstat GROUP BY 1"
        )
    )
    code = groove_tui.__file__.split("/groove_tui")[0]
    print(
        f"{code} {os.path.basename(os.path.dirname(os.path.abspath(kb)))} chunks={report.chunks} "
        f"wall={report.fulltext_seconds:.2f} cpu={cpu:.2f} db_bytes={engine.store.index_bytes()} tables={sizes}"
    )
    engine.close()


if __name__ == "__main__":
    main(*sys.argv[1:3])
