"""`groove-tui KB` (`groove-tui open KB`): the explorer on a KB, indexing or updating it first."""

from __future__ import annotations

import argparse
from pathlib import Path

from groove_tui.commands.common import CLIError, config_for, mismatch_advice


def run(args: argparse.Namespace) -> int:
    from groove_tui.tui.app import run

    config = config_for(args)
    kb = Path(args.kb).expanduser()
    if not kb.is_dir():
        raise CLIError(f"knowledge base {str(kb)!r} is not a directory")
    return run(
        kb,
        config=config,
        index_dir=args.index_dir,
        golden=args.golden,
        explain_mismatch=lambda exc: mismatch_advice(args, config, exc),
        watch=False if getattr(args, "no_watch", False) else None,
    )
