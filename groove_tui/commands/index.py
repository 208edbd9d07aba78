"""`groove-tui index KB`: (re)index headlessly, with a progress bar on a terminal, then the report as text
or JSON."""

from __future__ import annotations

import argparse
import sys

from groove_tui.commands.common import load_engine


def run(args: argparse.Namespace) -> int:
    from groove_tui.engine.types import json_text
    from groove_tui.output.progress import ProgressLine

    engine = load_engine(args, allow_model_change=args.force)
    with engine:
        bar = ProgressLine(sys.stderr, enabled=not args.quiet and sys.stderr.isatty(), notices=not args.quiet)
        try:
            report = engine.index(progress=bar.update, force=args.force, embed=not args.no_embed)
        finally:
            bar.close()
    if args.format == "json":
        print(json_text(report.to_dict()))
    else:
        from groove_tui.output.textout import format_index_report

        print(format_index_report(report))
    return 0
