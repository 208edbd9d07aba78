"""`groove-tui status KB`: what the index holds, as aligned text or JSON; names are escaped as text output
escapes them."""

from __future__ import annotations

import argparse

from groove_tui.commands.common import load_engine


def run(args: argparse.Namespace) -> int:
    from groove_tui.engine.types import json_text

    with load_engine(args, readonly=True) as engine:
        status = engine.status()
    if args.format == "json":
        print(json_text(status.to_dict()))
    else:
        from groove_tui.output.textout import escape_name

        for key, value in status.to_dict().items():
            print(f"{key:<20} {escape_name(str(value)) if value is not None else '-'}")
    return 0
