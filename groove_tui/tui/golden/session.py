"""Golden files in the explorer: the judgment session and the evaluation loop (no Textual here).

The loop follows `groove-tui eval`'s semantics (reference §I.3, `groove_tui.engine.evaluate.golden.eval_params`): no
filters (`min_quality = 0`, no path/tag/date filters), `limit = max(k)`, MMR / parent retriever / reranker
as the side's live settings. Metrics are `groove_tui.engine.evaluate.golden`'s. Judgments go through
`GoldenSet.with_judgment`; saving edits the user's file in place (yaml_file.py, ruamel.yaml), or writes a
new one with `save_golden`, so the file stays groove-compatible (grades and grade-0 judgments live in
comments).

Ranked hits are cached per side for one set of search parameters: a judgment re-scores without
searching again, and only queries new to the golden set are searched.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groove_tui.engine.evaluate.golden import (
    GOLDEN_MAX_BYTES,
    Expected,
    GoldenError,
    GoldenSet,
    atomic_write,
    load_golden,
    parse_golden,
    save_golden,
)
from groove_tui.engine.evaluate.metrics import (
    Aggregate,
    QueryMetrics,
    RankedHit,
    aggregate,
    evaluate_query,
    is_hit,
    normalise_k_values,
    ranked_hits,
)
from groove_tui.engine.types import SearchParams

DEFAULT_JUDGMENTS_FILE = "groove-tui-judgments.yml"
GRADES = (0, 1, 2, 3)


def eval_params(params: SearchParams, k_values: tuple[int, ...]) -> SearchParams:
    """The side's live params under eval semantics (the reranker stays as the side has it)."""
    from groove_tui.engine.evaluate.metrics import eval_limit
    from groove_tui.engine.evaluate.metrics import eval_params as cli_eval_params

    return cli_eval_params(
        params, limit=eval_limit(k_values), legs=params.legs, reranker_given=params.reranker is not None
    )


@dataclass(frozen=True, slots=True)
class EvalOutcome:
    """One side's scores for one golden set under one set of params."""

    params: SearchParams
    aggregate: Aggregate
    per_query: Mapping[str, QueryMetrics]  # by query text
    hits: Mapping[str, tuple[RankedHit, ...]]  # the cache the next run may reuse
    errors: int = 0  # queries the engine refused (counted as misses)


def run_golden(
    search: Callable[..., Any],
    golden: GoldenSet,
    params: SearchParams,
    k_values: tuple[int, ...],
    *,
    cache: Mapping[str, tuple[RankedHit, ...]] | None = None,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
    pace: Callable[[], None] | None = None,
) -> EvalOutcome | None:
    """Score every golden query. `search(query, params, cancel=)` is `Engine.search`; `cache` holds ranked
    hits already computed under these same `params`. Returns None when cancelled (checked between
    queries, and inside the engine through `cancel`). `pace()` runs before each search (the explorer
    uses it to let interactive searches go first)."""
    hits: dict[str, tuple[RankedHit, ...]] = {}
    per_query: dict[str, QueryMetrics] = {}
    errors = 0
    total = len(golden.queries)
    for i, q in enumerate(golden.queries, 1):
        if cancel is not None and cancel.is_set():
            return None
        top = (cache or {}).get(q.query)
        if top is None:
            if pace is not None:
                pace()
            try:
                top = ranked_hits(search(q.query, params, cancel=cancel).results)
            except ValueError:  # QueryError: groove refuses this query too; it scores as a miss
                errors += 1
                top = ()
        if cancel is not None and cancel.is_set():
            return None
        hits[q.query] = top
        per_query[q.query] = evaluate_query(q, top, k_values)
        if progress is not None:
            progress(i, total)
    agg = aggregate([per_query[q.query] for q in golden.queries], k_values)
    return EvalOutcome(params, agg, per_query, hits, errors)


def rescore(outcome: EvalOutcome, golden: GoldenSet, k_values: tuple[int, ...]) -> EvalOutcome | None:
    """Re-score cached hits after a judgment; None if some query has no cached hits (search needed)."""
    if any(q.query not in outcome.hits for q in golden.queries):
        return None
    per_query = {q.query: evaluate_query(q, outcome.hits[q.query], k_values) for q in golden.queries}
    agg = aggregate([per_query[q.query] for q in golden.queries], k_values)
    return EvalOutcome(outcome.params, agg, per_query, outcome.hits, outcome.errors)


@dataclass
class GoldenSession:
    """The golden set being used and judged, where it saves, and whether it has unsaved judgments."""

    golden: GoldenSet
    path: Path  # where `save` writes
    k_values: tuple[int, ...]
    loaded_from: Path | None = None  # None: a new set started by judging
    dirty: bool = False
    judged: int = field(default=0)  # judgments made in this session
    # judgments not saved yet, in order: a save writes them into the file as the user left it
    pending: list[tuple[str, str, str | None, int]] = field(default_factory=list)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        k_values,
        *,
        kb_path: Path | None = None,
        validate_query: Callable[[str], None] | None = None,
    ) -> GoldenSession:
        """Read a golden file (GoldenError on a bad one). A file inside the KB is never written back:
        its judgments save to a file of the same name in the KB's state folder of the user data directory
        (nothing is ever written into the KB, nor into whatever directory the explorer was started from)."""
        from groove_tui.settings.paths import kb_state_dir

        p = Path(path).expanduser()
        golden = load_golden(p, validate_query=validate_query)
        target = p
        if kb_path is not None and _inside(p, kb_path):
            target = kb_state_dir(kb_path) / p.name
        return cls(golden, target, normalise_k_values(k_values), loaded_from=p)

    @classmethod
    def new(cls, k_values, directory: Path | None = None) -> GoldenSession:
        """A fresh set saving to ./groove-tui-judgments.yml; an existing file of that name is extended
        (loaded first), never overwritten blindly."""
        target = (directory or Path.cwd()) / DEFAULT_JUDGMENTS_FILE
        if target.is_file():
            return cls.load(target, k_values)
        header = ("# groove golden file written by groove-tui (judgments: 0-3 keys in the explorer)",)
        return cls(GoldenSet(header=header), target, normalise_k_values(k_values))

    @property
    def name(self) -> str:
        return (self.loaded_from or self.path).name

    def grade_of(self, query: str, path: str, heading: str | None) -> int | None:
        """The judgment of (path, heading) for `query`: 1-3 graded, 1 for groove's ungraded expected
        entries, 0 judged irrelevant, None unjudged. An expected entry without a heading covers the
        whole document (groove's rule)."""
        q = self.golden.find(query)
        if q is None:
            return None
        best: int | None = None
        for e in q.expected:
            if is_hit(e, path, heading):
                g = e.grade if e.grade is not None else 1
                best = g if best is None else max(best, g)
        if best is not None:
            return best
        if any(_same(jp, jh, path, heading) for jp, jh in q.judged_irrelevant):
            return 0
        return None

    def label_of(self, query: str, path: str, heading: str | None) -> str | None:
        """Result-list badge: `✓` expected (groove's ungraded entry), `✓2` graded 2, `✗` judged 0."""
        q = self.golden.find(query)
        if q is None:
            return None
        grades = [e.grade for e in q.expected if is_hit(e, path, heading)]
        if grades:
            graded = [g for g in grades if g is not None]
            return f"✓{max(graded)}" if graded else "✓"
        if any(_same(jp, jh, path, heading) for jp, jh in q.judged_irrelevant):
            return "✗"
        return None

    def expected_of(self, query: str) -> tuple[Expected, ...]:
        q = self.golden.find(query)
        return q.expected if q is not None else ()

    def judge(self, query: str, path: str, heading: str | None, grade: int) -> None:
        self.golden = self.golden.with_judgment(query, path, heading, grade)
        self.pending.append((query, path, heading, grade))
        self.dirty = True
        self.judged += 1

    def save(self) -> Path:
        """Write the judgments. An existing golden file (the target, else the file it was loaded from) is
        edited in place: its comments, order and quoting stay and only judged entries change. Without
        one, a new file in groove's golden format."""
        base = self.path if self.path.is_file() else self.loaded_from
        self.path.parent.mkdir(parents=True, exist_ok=True)  # a KB's state folder, on its first save
        if base is None or not base.is_file():
            save_golden(self.path, self.golden)
        else:
            from groove_tui.tui.golden.yaml_file import apply_judgments

            text = apply_judgments(base.read_text(encoding="utf-8"), self.pending, source=str(base))
            parse_golden(text, source=str(self.path))  # what is written must load again
            data = text.encode("utf-8")
            if len(data) > GOLDEN_MAX_BYTES:
                raise GoldenError(
                    str(self.path), None, f"refusing to write {len(data)} bytes: groove rejects golden files over 1 MiB"
                )
            atomic_write(self.path, data)
        self.pending.clear()
        self.dirty = False
        return self.path


def _same(a_path: str, a_heading: str | None, b_path: str, b_heading: str | None) -> bool:
    if a_path != b_path:
        return False
    if a_heading is None or b_heading is None:
        return a_heading is b_heading
    return a_heading.strip().lower() == b_heading.strip().lower()


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(Path(root).resolve())
        return True
    except (ValueError, OSError):
        return False
