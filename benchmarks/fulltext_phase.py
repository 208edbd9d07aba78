"""The full-text phase of a fresh index (phase one: reading, cutting and writing every note, no embedding)
with this checkout's code against another revision's, on the same copies of the same KBs.

Each KB is copied once into a temporary folder (outside the KB); the other revision's `groove_tui` is
taken out of git (`git archive`) beside it. Every run is a process of its own that indexes the copy into a
fresh temporary index with the `hashing-384` embedder and `embed=False`, and reports the phase's seconds
(`IndexReport.fulltext_seconds`). The two codes alternate within each round, and take turns going first;
the ratio is taken per round (the other revision's seconds over this one's), so machine noise hits both
alike; medians over rounds.

    .venv/bin/python benchmarks/fulltext_phase.py --against REV --kb KB [--kb KB ...] [--rounds 5]
        [--record benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from groove_tui.commands.bench.indexing import copy_subset
from groove_tui.output import records

MODEL = "hashing-384"
HERE = Path(__file__).resolve().parent.parent  # this checkout: the code measured as "now"

# Run in a process of its own, with the code under test first on sys.path.
CHILD = """
import dataclasses, json, sys
sys.path.insert(0, sys.argv[1])
from groove_tui.engine import Engine
from groove_tui.settings.config import Config
config = Config()
config = dataclasses.replace(config, embedding=dataclasses.replace(config.embedding, model=sys.argv[4]))
with Engine.open(sys.argv[2], config=config, index_dir=sys.argv[3]) as eng:
    report = eng.index(embed=False)
print(json.dumps({"seconds": report.fulltext_seconds, "chunks": report.chunks, "documents": report.added}))
"""


def phase_one(code: Path, kb: Path, index_dir: Path) -> dict[str, float]:
    """One fresh full-text phase of `kb` with the groove_tui found in `code`."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(code), str(kb), str(index_dir), MODEL],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def checkout(revision: str, dest: Path) -> str:
    """`revision`'s groove_tui package extracted into `dest`; its short commit id."""
    commit = subprocess.run(
        ["git", "-C", str(HERE), "rev-parse", "--short", revision], check=True, capture_output=True, text=True
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "-C", str(HERE), "archive", "--format=tar", revision, "groove_tui"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return commit


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--against", required=True, metavar="REV", help="the git revision to compare with")
    ap.add_argument("--kb", required=True, type=Path, action="append")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--record", default=None, metavar="DIR", help="write a measurement record into DIR")
    args = ap.parse_args()
    recording = records.begin(args.record, "bench", sys.argv[1:], program="python benchmarks/fulltext_phase.py")

    result: dict = {"model": MODEL, "rounds": args.rounds, "kbs": {}}
    with tempfile.TemporaryDirectory(prefix="groove-tui-phase-one-") as tmp:
        root = Path(tmp)
        before = root / "against"
        before.mkdir()
        result["against"] = checkout(args.against, before)
        codes = {"against": before, "now": HERE}
        for kb in args.kb:
            resolved = kb.expanduser().resolve()
            name = resolved.parent.name if resolved.name == "kb" else resolved.name  # scifact/kb is scifact
            copy = root / name / "kb"
            copy_subset(kb.expanduser(), copy, None, ())
            seconds: dict[str, list[float]] = {"against": [], "now": []}
            ratios: list[float] = []
            chunks = documents = 0
            for r in range(args.rounds):
                order = ("against", "now") if r % 2 == 0 else ("now", "against")
                this_round = {}
                for which in order:
                    run = phase_one(codes[which], copy, root / name / f"idx-{which}-{r}")
                    this_round[which] = run["seconds"]
                    seconds[which].append(round(run["seconds"], 3))
                    chunks, documents = int(run["chunks"]), int(run["documents"])
                ratios.append(this_round["against"] / this_round["now"])
                print(
                    f"{name} round {r + 1}: {result['against']} {this_round['against']:.2f} s, "
                    f"now {this_round['now']:.2f} s (×{ratios[-1]:.2f})",
                    file=sys.stderr,
                )
            result["kbs"][name] = {
                "documents": documents,
                "chunks": chunks,
                "against_s": seconds["against"],
                "now_s": seconds["now"],
                "against_median_s": round(statistics.median(seconds["against"]), 3),
                "now_median_s": round(statistics.median(seconds["now"]), 3),
                "ratios": [round(x, 3) for x in ratios],
                "ratio_median": round(statistics.median(ratios), 3),
            }
    print(json.dumps(result, indent=2))
    if recording is not None:
        names = "_".join(result["kbs"])
        recording.write(
            result,
            what="bench: full-text phase against another revision",
            subject={"kb_name": names, "model": MODEL, "mode": "fulltext-phase", "variant": "fulltext-phase"},
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
