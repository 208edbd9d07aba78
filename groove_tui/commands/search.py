"""`groove-tui search KB QUERY`: one search, printed as groove's JSON response or as readable text (titles
from the opening H1 where a note has no title, highlights on a terminal)."""

from __future__ import annotations

import argparse
import sys

from groove_tui.commands.common import UsageError, config_for, load_engine, params_for, require_index


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    check_query(args.query)
    config = config_for(args)
    # One search: the vector leg's in-memory scan would read every vector in the background for a second
    # search that never comes, on the cores the first one needs. sqlite-vec gives the same rows.
    config = replace(config, search=replace(config.search, vector_scan=False))
    with load_engine(args, readonly=True, config=config) as engine:
        require_index(engine, args)
        params = params_for(engine, args)
        params = replace(params, explain=args.explain)
        if getattr(args, "why", None):
            return _why(engine, args, params)
        warm = None
        _docs, chunks, unembedded = engine.store.counts()
        if params.legs != "fts" and chunks > unembedded:  # there are vectors: the query will be embedded
            import threading

            # the model loads while this thread reads the query's full-text lists
            warm = threading.Thread(target=engine.warm_up, name="groove-tui-warm-up")
            warm.start()
        try:
            resp = engine.search(args.query, params)
        finally:
            if warm is not None:
                warm.join()  # never left inside ONNX Runtime when the process exits
        documents = _document_openings(engine, resp.results) if args.format == "text" else {}
    if args.format == "json":
        print(resp.to_json())
    else:
        from groove_tui.output.textout import format_response, use_color

        sys.stdout.write(format_response(resp, color=use_color(sys.stdout), explain=args.explain, documents=documents))
    return 0


def _why(engine, args: argparse.Namespace, params) -> int:
    """`--why PATH[#HEADING]`: the note's walk through the pipeline for the query, as text or JSON."""
    from groove_tui.engine.errors import UnknownNote
    from groove_tui.engine.types import json_text

    try:
        report = engine.why(args.query, args.why, params)
    except UnknownNote as exc:
        raise UsageError(str(exc)) from None
    if args.format == "json":
        print(json_text(report.to_dict()))
    else:
        from groove_tui.output.textout import format_why, use_color

        sys.stdout.write(format_why(report, color=use_color(sys.stdout)))
    return 0


def check_query(query: str) -> None:
    """Refuse a query with nothing to search for (UsageError), before any index is opened: a blank one,
    which would print "no results" as if the KB held nothing, and one made only of exclusions."""
    from groove_tui.engine.analysis.query import QueryError, has_nothing_to_search, literal_exclusion, parse_query

    if has_nothing_to_search(query):
        raise UsageError('the query is empty: give a word or phrase to search for (e.g. "tar -gzip")')
    try:
        parse_query(query)
    except QueryError as exc:
        if query.strip().startswith("-") and "exclusion" in str(exc):
            q = query.strip()
            raise UsageError(
                f"the query {q!r} only excludes words: there is nothing positive to search for; "
                f"add a word to find ({'word ' + q!r}), or put a leading hyphen inside quotes "
                f"('{literal_exclusion(q)}') to search for it literally"
            ) from None
        raise


def _document_openings(engine, hits) -> dict[int, str]:
    """The first chunk's text of each hit's document that has no title and does not itself open with an
    H1: where text output finds the H1 a note opens with, as its title."""
    from groove_tui.output.textout import display_title

    out: dict[int, str] = {}
    for hit in hits:
        if hit.document_id in out or display_title(hit) is not None:
            continue
        rows = engine.store.document_chunks(hit.document_id, limit=1)
        out[hit.document_id] = rows[0][4] if rows else ""
    return out
