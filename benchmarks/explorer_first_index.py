"""The full-text phase of a KB's first index as the explorer runs it (headless, 100×30, the real widgets
showing its progress) with this checkout's code against another revision's, on the same copy of the KB.

The explorer indexes a KB it opens without a current index, in a worker thread, while it shows how far the
phase is. Each run is a process of its own: a fresh index of the copy (`hashing-384`), the explorer started
under Pilot, and the seconds of `Indexer._fulltext_phase` timed from inside. The two codes alternate and take
turns going first; the ratio is taken per round (the other revision's seconds over this one's); medians over
rounds.

    .venv/bin/python benchmarks/explorer_first_index.py --against REV --kb KB [--rounds 3]
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

from fulltext_phase import HERE, MODEL, checkout  # (beside this script)

from groove_tui.commands.bench.indexing import copy_subset
from groove_tui.output import records

# Run in a process of its own, with the code under test first on sys.path.
CHILD = """
import asyncio, dataclasses, json, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import groove_tui.tui  # (before Textual, as the explorer is started)
from groove_tui.engine import Engine
from groove_tui.engine.index import indexer
from groove_tui.settings.config import Config
from groove_tui.tui.app import GrooveApp

seconds = []
real = indexer.Indexer._fulltext_phase

def timed(self, *args, **kwargs):
    start = time.perf_counter()
    try:
        return real(self, *args, **kwargs)
    finally:
        seconds.append(time.perf_counter() - start)

indexer.Indexer._fulltext_phase = timed
config = Config()
config = dataclasses.replace(config, embedding=dataclasses.replace(config.embedding, model=sys.argv[4]))

async def main():
    kb, state = Path(sys.argv[2]), Path(sys.argv[3])
    eng = Engine.open(kb, config=config, index_dir=state / "idx")
    app = GrooveApp(eng, config=config, kb_path=kb, history_path=state / "history.json", debounce_ms=0,
                    warmup=False, user_theme_dir=state / "no-themes", watch=False)
    async with app.run_test(size=(100, 30)) as pilot:
        while not seconds:
            await pilot.pause(0.02)
    eng.close()

asyncio.run(main())
print(json.dumps({"seconds": seconds[0]}))
"""


def explorer_phase_one(code: Path, kb: Path, state: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(code), str(kb), str(state), MODEL], check=True, capture_output=True, text=True
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--against", required=True, metavar="REV", help="the git revision to compare with")
    ap.add_argument("--kb", required=True, type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--record", default=None, metavar="DIR", help="write a measurement record into DIR")
    args = ap.parse_args()
    recording = records.begin(args.record, "bench", sys.argv[1:], program="python benchmarks/explorer_first_index.py")

    kb = args.kb.expanduser().resolve()
    name = kb.parent.name if kb.name == "kb" else kb.name  # scifact/kb is scifact
    result: dict = {"model": MODEL, "rounds": args.rounds, "kb": name}
    with tempfile.TemporaryDirectory(prefix="groove-tui-explorer-index-") as tmp:
        root = Path(tmp)
        (root / "against").mkdir()
        result["against"] = checkout(args.against, root / "against")
        codes = {"against": root / "against", "now": HERE}
        copy = root / "kb"
        result["documents"] = copy_subset(kb, copy, None, ())
        seconds: dict[str, list[float]] = {"against": [], "now": []}
        ratios: list[float] = []
        for r in range(args.rounds):
            order = ("against", "now") if r % 2 == 0 else ("now", "against")
            this_round = {}
            for which in order:
                state = root / f"state-{which}-{r}"
                state.mkdir()
                this_round[which] = explorer_phase_one(codes[which], copy, state)
                seconds[which].append(round(this_round[which], 3))
            ratios.append(this_round["against"] / this_round["now"])
            print(
                f"{name} round {r + 1}: {result['against']} {this_round['against']:.2f} s, "
                f"now {this_round['now']:.2f} s (×{ratios[-1]:.2f})",
                file=sys.stderr,
            )
    result.update(
        against_s=seconds["against"],
        now_s=seconds["now"],
        against_median_s=round(statistics.median(seconds["against"]), 3),
        now_median_s=round(statistics.median(seconds["now"]), 3),
        ratios=[round(x, 3) for x in ratios],
        ratio_median=round(statistics.median(ratios), 3),
    )
    print(json.dumps(result, indent=2))
    if recording is not None:
        recording.write(
            result,
            what="bench: the full-text phase of a first index in the explorer, against another revision",
            subject={"kb": str(kb), "kb_name": name, "model": MODEL, "mode": "explorer-first-index"}
            | {"variant": "explorer-first-index"},
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
